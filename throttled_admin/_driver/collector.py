"""Python's cyclic garbage collector held off while a bulk call is checked, queued and sent, until it returns, and
kept off the call's objects until it ends.

A call of many topics makes a few objects a topic that live as long as the call (its checked copy, the engine's
record, its future). Made in one go, they set off collections that trace every one of them again as it is promoted
from generation to generation, and the first often falls in the call's checks: a full collection of 11-15 ms for a
call of 10,000 topics, 17-26 ms for 50,000, paid there for objects the application made just before; for 50,000 a
second of 30-45 ms came before ``create_topics`` returned (issue 40). Held off until the call returns, the first
request goes sooner. As an unpaced one returns, the process's objects are frozen (``Hold``: ``gc.freeze``) until
none of its topics is pending, and the collector goes on without them: turned on plainly, it walked the call's
objects three times while the call ran (50,000 topics on QuotaBroker: 15-20 ms in generation 0, 17-25 in generation
1, then a full collection of 37-50 ms; ``benchmarks/broker_gaps.py`` lists a client's collections run by run), and
one that landed as an answer came held the next write back.

While a hold is on, a turn of the scheduler (``Scheduler._turn``: a step of the engine and what it says carried out,
a deadline's settlements of every topic or an answer's of thousands) runs with the collector off, turned on again as
it ends (``turn_holds``); between turns the collector goes on. An application thread that turns the collector off
during a turn finds it on again when the turn ends, as when a bulk call returns; on Python 3.10, where a signal can
land at any bytecode, a Ctrl-C in a turn on the caller's thread just before it turns the collector on leaves it off.

Mercurial's ``util.nogc`` does the same while it builds large dicts; Instagram's servers freeze what they keep. The
collector's switch and its freeze are the process's, so a call touches them only with ``BULK_CALL_FROM`` topics or
more and only if it is on, and turns it on again when it returns, however it ends (on Python 3.11 and later even
when Ctrl-C lands in it: ``ThrottledAdminClient._call``). Calls that overlap share the switch (the first to return
turns it on); the freeze is one call's at a time. A thread that turns it off while a bulk call runs finds it on
again when the call returns; an application that has frozen objects itself is left alone, and one that freezes
objects while a hold is on has them given back with it. A child forked while a hold is on gives it back at once.
"""

from __future__ import annotations

import gc
import os
import sys
import threading

from throttled_admin._engine.config import SECOND_LANE_FROM

__all__ = ["BULK_CALL_FROM", "TURNS_OFF", "Hold", "turn_holds", "worth_holding"]

#: The fewest topics of a call for which the collector is held off: a bulk call's, as for its second connection.
BULK_CALL_FROM = SECOND_LANE_FROM


def worth_holding(topics: object) -> bool:
    """Whether a call of ``topics`` (its input, not yet checked) holds the collector off: a list of at least
    ``BULK_CALL_FROM`` items, and the collector on. Changes nothing: the caller turns it off inside its ``try`` and
    on in the ``finally``, so that no Ctrl-C between the two leaves it off."""
    return isinstance(topics, list) and len(topics) >= BULK_CALL_FROM and gc.isenabled()


#: One item per turn that has the collector off now (appended after its ``gc.disable()``, popped after its
#: ``gc.enable()``; a list's append and pop are each one step under the GIL): a child forked meanwhile, where that
#: turn's thread does not exist to turn it on, turns it on as it starts.
TURNS_OFF: list[None] = []


def turn_holds() -> bool:
    """Whether a scheduler's turn holds the collector off: a bulk call's hold is on (``Hold``) and the collector is
    on. Changes nothing: the turn turns it off inside its ``try`` and on in the ``finally``. At a bulk call's deadline
    one turn settles every topic: 50,000 errors set off some 280 collections, two of them full, 40-60 ms in all, which
    the objects the call made after it returned (its rest, readied meanwhile, is not frozen) made longer."""
    return _state.held and gc.isenabled()


class _State:
    """The process's one hold (``Hold``) and what it knows of the application's own freezes."""

    def __init__(self, baseline: int, application_freezes: bool = False) -> None:
        self.lock = threading.RLock()  # (reentrant: a hold dropped while another starts or ends gives its end in place)
        self.held = False  # a hold's freeze is on: one at a time (no reference to it: its __del__ must run)
        # Frozen before any hold and not the application's: CPython 3.12 starts with 375 tuples frozen (none on 3.10,
        # 3.11, 3.13); the first hold's end gives them back with its own (harmless: they are collected as any). 3.12
        # freezes more of its own as some modules are imported: taken for the application's, no hold from then on.
        self.baseline = baseline
        # The application froze objects of its own: no hold from then on (``gc.get_freeze_count`` walks every frozen
        # object on CPython 3.10-3.13, 27 ms for 2 million, and those objects are the application's to give back).
        self.application_freezes = application_freezes


_state = _State(gc.get_freeze_count())  # (as this module is imported: the interpreter's, or the application's)
# Free-threaded CPython stops every thread to freeze and unfreeze: no hold there.
_CAN_HOLD = bool(getattr(sys, "_is_gil_enabled", lambda: True)())


def _forget_in_child() -> None:
    """In a forked child: a hold that was on in the parent is given back now (the parent's call never ends here), and
    the child starts with no hold and a lock no thread holds, knowing what the parent knew of its application. A
    turn's collector switched off in the parent (``TURNS_OFF``) is switched on."""
    global _state
    if TURNS_OFF:
        TURNS_OFF.clear()
        gc.enable()
    if _state.held:
        gc.unfreeze()
        _state = _State(0, _state.application_freezes)
    else:
        _state = _State(_state.baseline, _state.application_freezes)


if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_forget_in_child)


class Hold:
    """One bulk call's objects kept out of the collections while the call is pending: every object of the process is
    frozen (``gc.freeze``) as the call returns (``start``) and given back (``gc.unfreeze``, into the oldest
    generation) when its last topic is no longer pending (``end``, from ``OpenCalls``; it may come first, and
    ``start`` then does nothing). One hold at a time: a bulk call that returns while another's freeze is on adds
    nothing to it, so that calls that overlap never keep the process frozen past the first one's end. Not for a
    paced call (its caller does not ask for a hold: its pacing keeps it pending for as long as it needs), not once
    the application has frozen objects of its own, and not on free-threaded CPython. What is frozen is still freed
    when nothing refers to it; only garbage in reference cycles among it waits for the end, and a freeze the
    application makes meanwhile is given back with the hold's."""

    __slots__ = ("_ended", "_epoch", "_started")

    def __init__(self) -> None:
        self._started = self._ended = False
        self._epoch = _state  # (a hold made before a fork is not the child's to end)

    def start(self) -> None:
        """The call returned, its objects made: they are frozen, before the collector is turned on again."""
        state = _state
        if not _CAN_HOLD or state.application_freezes or state is not self._epoch:
            return
        with state.lock:
            if self._ended or state.held:
                return
            if gc.get_freeze_count() > state.baseline:  # (no hold's now: the application's)
                state.application_freezes = True
                return
            state.held = self._started = True  # (before the freeze: a Ctrl-C between leaves nothing frozen unowned)
            gc.freeze()

    def end(self) -> None:
        """None of the call's topics is pending any more: its freeze, if on, is given back."""
        state = self._epoch
        if state is not _state:  # (made before a fork: the child gave its freeze back as it started; the lock may
            self._started, self._ended = False, True  # have been held by a thread the child does not have)
            return
        with state.lock:
            self._ended = True
            if not self._started:
                return
            self._started = state.held = False
            state.baseline = 0  # (what was frozen before is given back too)
            gc.unfreeze()

    def __del__(self) -> None:
        # An end lost to a Ctrl-C on the thread that was giving it (``OpenCalls``, as a close() settles the call):
        # given once nothing refers to the call's hold, so that the process is never left frozen.
        if self._started:
            self.end()
