"""Taking turns: the one way the driver steps the engine and does what it says.

A turn takes what librdkafka has completed, serves librdkafka's callbacks, steps the engine, and carries out the
step's ``Outbox``, a sequence of frozen actions (``_engine/actions.py``) in the engine's order: metric events (after
the send in a step that sends), a views read, the send (or the sentinel), the metric exports (the driver's own:
waited for, within a bound, when settlements follow), the settlements (as one batch), a metadata read, the contact
probe; the turn dispatches on each action's type. The scheduler's thread takes turns in its loop; a caller's thread
takes one when its call finds the turn free (``Scheduler.submit``) or when the answer its ``result()`` waits for
arrives (``Scheduler.assist``). ``Turns`` is the lock and the bookkeeping around them; the driver's one call of
``Engine.step`` is in the turn it runs (``Scheduler._step``).

Invariants (tests/test_turns.py checks each):

1. One turn at a time: at most one thread holds the turn, and ``held_here()`` tells that thread from the others.
2. Every step of the engine and every send happen inside a turn: ``keep`` and the driver's step assert
   ``held_here()``.
3. Each action of a step is done once, in order. A step's actions are kept (``keep``, ``leftover``) in the
   step's own critical section, before anything of them is done; a turn cut short (an exception out of an action
   or out of the planning: Ctrl-C or a raising signal handler on the main thread, a bug) keeps what it had not
   done yet, and the next turn does it first, before stepping again: nothing a step decided is lost, no mutation
   request is sent twice (``Sending.handed``, even cut short just after the send returned; the sentinel, a
   DeleteTopics of a name no topic has, may be), and a close() from a frame that
   cannot wait finds what is not done yet (``unsettled``, ``unsent``). Cut short just after another action
   returned, before it is marked done, that action is done again: a settled future keeps what it was told, and
   a metric event may be recorded twice. (tests/test_scheduler_clock.py cuts the caller's paths at every
   bytecode.) A turn on the driver's thread stops on purpose at its metric export while that is pending
   (``scheduler.ExportPending``, before its settlements, after its send): the next turn goes on from there.
4. A send cut short is reported as it happened: cut before confluent-kafka's call began, the request was not
   handed over, and the next turn sends it (``Sending.began`` False; unless the cut also cut short the ``submit``
   of a call it carries, which takes it back: ``drop_unsent``); once the call may have begun, it counts as
   handed over, and the next turn tells the engine (``Cut.maybe_sent``), which treats it as a request whose
   answer is lost (the slot follows the connection).
5. Nothing is sent once the client is closed: the send marks itself begun, then looks at ``closed``; so close()
   from inside the turn (a signal handler) finds the send either begun (outcome unknown) or not (not sent), and
   a send not yet begun is dropped.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from throttled_admin._engine import (
    METRIC_KINDS,
    Action,
    Drain,
    MetricEvent,
    Outbox,
    Probe,
    Reached,
    ReadMetadata,
    ReadViews,
    Send,
    Settle,
    WakeAt,
)
from throttled_admin._engine.metric_events import RequestSent, ResponseThrottle

__all__ = ["Actions", "Cut", "Sending", "Turns"]


def _never() -> bool:
    return False


@dataclass
class Sending:
    """A send under way (``request`` None: the sentinel). ``begin()`` is called just before confluent-kafka's call;
    the transport clears ``began`` again when it knows the call did not run. ``handed``: set once the driver's send
    has returned (whether it handed the request over), so that a turn cut short right after it does not send it
    again (invariant 3)."""

    request: Send | None
    began: bool = False
    closed: Callable[[], bool] = _never
    handed: bool | None = None

    def begin(self) -> bool:
        """Mark the send begun, then look at ``closed`` (invariant 5): False, and not begun, once closed."""
        self.began = True
        if self.closed():
            self.began = False
            return False
        return True


@dataclass
class Cut:
    """A send cut short after its call may have begun: the engine is told before the next step."""

    request: Send


class Actions(Protocol):
    """What the driver does for each kind of action of a step (outside the engine's lock)."""

    def metric(self, event: MetricEvent) -> None: ...

    def throttle(self, event: ResponseThrottle) -> None:
        """A ``ResponseThrottle``: ``metric``, and what the driver does of a throttle besides."""

    def read_views(self, names: list[str]) -> None: ...

    def send(self, sending: Sending) -> bool:
        """False: not handed over (and the engine told so): the request is not counted as sent."""

    def drain(self, drain: Drain) -> None: ...

    def settle(self, settlements: list[Settle]) -> None: ...

    def flush(self, wait: bool) -> None: ...

    def read_metadata(self) -> None: ...

    def probe(self, lane: int) -> None: ...

    def reached(self) -> None: ...


class _SettleAll(list[Settle]):
    """The step's settlements, carried out together (one pass over the futures, one wake of waiting callers): a list
    of its own kind (made in C, handed over as itself: issue 39)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class _Flush:
    """The metric exports (the driver's own action). ``wait``: settlements follow, and a reader who looks right after
    ``result()`` must find the points of the call (within the exporter's bound, ``ClientMetrics.flush``)."""

    wait: bool


_Planned = Action | _SettleAll | _Flush


@dataclass
class _Carry:
    """One step's actions, done front to back; ``done`` counts those completed. Kept (``Turns.keep``) before it is
    planned: ``actions`` None until then (a turn cut short while planning: the next turn plans it)."""

    out: Outbox
    flush: bool
    actions: list[_Planned] | None = None
    done: int = 0
    sending: Sending | None = None

    def planned(self) -> list[_Planned]:
        if self.actions is None:
            self.actions = _plan(self.out, self.flush)
        return self.actions

    def undone(self) -> list[Any]:
        """What is left to do: the planned actions not done, or every action of the step if not planned yet."""
        return list(self.out.actions) if self.actions is None else self.actions[self.done :]


_FLUSH, _FLUSH_FIRST = _Flush(wait=False), _Flush(wait=True)
# Where the plan puts each kind of the engine's actions: before the settlements, with them, after them (the reads),
# or nowhere (the wake: the scheduler reads it).
_BEFORE, _WITH, _AFTER, _NOWHERE, _METRIC = range(5)
_PLACE: dict[type, int] = dict.fromkeys(METRIC_KINDS, _METRIC)
_PLACE |= {Reached: _BEFORE, ReadViews: _BEFORE, Send: _BEFORE, Drain: _BEFORE}
_PLACE |= {Settle: _WITH, ReadMetadata: _AFTER, Probe: _AFTER, WakeAt: _NOWHERE}


def _plan(out: Outbox, flush: bool) -> list[_Planned]:
    """The step's actions in the engine's order, its settlements as one batch after the metric exports (every turn
    that settles, on any thread: the points come before the results), or the exports alone (``flush``: the
    scheduler's thread's turns); a turn that sends leaves the reads to the next (the send's answer comes first).
    The metric events of a step that sends are recorded right after the send, the rest first: still before any
    settlement, but off the way of the request to the broker (a 1-topic call's ``RequestSent``, issue 39)."""
    plan: list[_Planned] = []
    metrics: list[_Planned] = []
    settlements = _SettleAll()
    reads: list[_Planned] = []
    metrics_at = 0  # where the metric events go: first, or right after the send
    for action in out.actions:
        place = _PLACE[type(action)]
        if place == _METRIC:
            metrics.append(action)
        elif place == _BEFORE:
            plan.append(action)
            if isinstance(action, Send):
                metrics_at = len(plan)
        elif isinstance(action, Settle):
            settlements.append(action)
        elif place == _AFTER:
            # (the second lane's probe goes in the turn of the send it is to go beside, not after it: ``lanes``)
            (plan if type(action) is Probe and action.lane else reads).append(action)
    plan[metrics_at:metrics_at] = metrics
    if settlements:
        plan += [_FLUSH_FIRST, settlements]
    elif flush:
        plan.append(_FLUSH)
    if reads and out.send is None:
        plan += reads
    return plan


class Turns:
    """The turn: a lock with a known owner, and what a turn cut short left undone."""

    def __init__(self) -> None:
        # An RLock (C) records its owner inside acquire() and clears it inside release(), with no bytecode between
        # in which a signal handler could run: a handler that interrupted this thread's take() or release() sees
        # ``held_here()`` true exactly when this thread holds the lock. (A Lock plus an owner attribute set after
        # acquire() left one bytecode where it held the turn and held_here() said not: close() from a handler
        # there waited for the scheduler's thread, which waited for the turn.) It is never taken re-entrantly.
        self._lock = threading.RLock()
        # Whether this thread holds the turn: the RLock's own C method (asked several times a turn, by the asserts of
        # invariant 2 too; a Python method around it was ten calls more per 1-topic call, issue 39)
        self.held_here: Callable[[], bool] = self._lock._is_owned  # type: ignore[attr-defined]
        # Read by the turn's owner before it calls finish_leftover() and take_cuts() (most turns have neither: two calls
        # fewer a turn, issue 39)
        self.leftover: list[_Carry] = []  # steps kept and not done yet (this turn's, or cut short), oldest first
        self.cuts: list[Cut] = []  # sends cut short after they may have begun, for the engine
        self._dropped: set[int] = set()  # kept requests taken back before they began (``drop_unsent``), by id

    # -- the lock --------------------------------------------------------------------------------

    def take(self, timeout: float | None = None) -> bool:
        """Wait for the turn (``timeout`` None: as long as it takes; 0: only if free); False at once if this thread
        holds it already (a turn is whole: one is never taken inside another)."""
        if self.held_here():
            return False
        if timeout is None:
            taken = self._lock.acquire()
        elif timeout <= 0:
            taken = self._lock.acquire(blocking=False)
        else:
            taken = self._lock.acquire(timeout=timeout)
        return taken

    def release(self) -> None:
        self._lock.release()

    def wait_free(self, timeout: float | None) -> bool:
        """Wait until another thread's turn ends (without taking it); False if ``timeout`` passed first."""
        if not self.take(timeout):
            return False
        self.release()
        return True

    # -- what a turn carries out -----------------------------------------------------------------

    def take_cuts(self) -> list[Cut]:
        """Sends cut short after they may have begun, for the engine (the turn's owner calls this before its step)."""
        assert self.held_here()
        cuts, self.cuts = self.cuts, []
        return cuts

    def unsettled(self) -> list[Settle]:
        """The settlements a turn (on another thread, or this one cut short) has not carried out yet: outcomes the
        engine has decided, which a close() from a frame that cannot wait tells as they are, not hedged."""
        unsettled: list[Settle] = []
        for carry in list(self.leftover):
            for action in carry.undone():
                if type(action) is _SettleAll:
                    unsettled += action
                elif type(action) is Settle:  # (a step kept and not planned yet)
                    unsettled.append(action)
        return unsettled

    def unsent(self) -> list[Send]:
        """The requests a turn (this one, cut short) was about to send and certainly did not hand over yet (a step
        may carry two: the first connection's and the second's, ``_engine/lanes``)."""
        unsent: list[Send] = []
        for carry in list(self.leftover):
            sending = carry.sending
            for action in carry.undone():
                if (
                    isinstance(action, Send)
                    and not (sending is not None and sending.request is action and sending.began)
                    and action.request_id not in self._dropped
                ):
                    unsent.append(action)
        return unsent

    def drop_unsent(self, call_id: int) -> list[Send]:
        """The kept requests not handed over yet that carry a topic of call ``call_id`` (its ``submit`` cut short):
        never sent now (the engine is told they were not handed over, and takes their topics back)."""
        assert self.held_here()
        dropped = [send for send in self.unsent() if any(ref.call_id == call_id for ref in send.topics)]
        self._dropped.update(send.request_id for send in dropped)
        return dropped

    def finish_leftover(self, actions: Actions) -> None:
        """Do what turns cut short left undone, oldest first (invariant 3)."""
        assert self.held_here()
        while self.leftover:
            self._run(self.leftover[0], actions)
            self.leftover.pop(0)

    def keep(self, out: Outbox, *, flush: bool) -> None:
        """What a step says, kept as this turn's to do (``finish_leftover`` does it), from the step's own critical
        section (the engine's lock): a close() from a frame that cannot wait finds what the step decided
        (``unsettled``, ``unsent``) from the moment the engine no longer holds it, and a turn cut short before doing
        it leaves it to the next."""
        assert self.held_here()
        self.leftover.append(_Carry(out, flush))

    def _run(self, carry: _Carry, actions: Actions) -> None:
        planned = carry.planned()
        while carry.done < len(planned):
            action = planned[carry.done]
            if type(action) is Send:
                self._send(carry, action, actions)
            else:
                method, argument = _HANDLERS[type(action)]
                if argument is None:
                    getattr(actions, method)()
                elif argument is _ITSELF:
                    getattr(actions, method)(action)
                else:
                    getattr(actions, method)(argument(action))
            carry.done += 1

    def _send(self, carry: _Carry, request: Send, actions: Actions) -> None:
        if request.request_id in self._dropped:  # taken back before it began (``drop_unsent``; kept: ids are unique)
            _uncount(carry, request)
            return
        sending = carry.sending
        if sending is None or sending.request is not request:
            sending = carry.sending = Sending(request)
        elif sending.handed is not None:  # sent by a turn cut short just after: not again
            if not sending.handed:
                _uncount(carry, request)
            return
        try:
            # sets sending.began just before confluent-kafka's call, checks closed after it
            sending.handed = actions.send(sending)
        except BaseException:
            if sending.began:  # it may have begun: handed over, the answer lost; skipped by the next turn
                self.cuts.append(Cut(request))
                carry.done += 1
            raise
        if not sending.handed:
            _uncount(carry, request)


def _uncount(carry: _Carry, request: Send) -> None:
    """The request was not handed over (taken back, closed first, refused): its ``RequestSent``, planned after the
    step's sends, is not recorded."""
    planned = carry.planned()
    planned[carry.done + 1 :] = [
        action
        for action in planned[carry.done + 1 :]
        if not (type(action) is RequestSent and action.request_id == request.request_id)
    ]


def _itself(action: Any) -> Any:
    return action  # (never called: ``Turns._run`` hands the action itself over)


_ITSELF = _itself
# What the driver does for each kind of action but the send (``Turns._send``): the ``Actions`` method for the action's
# type, and what of the action it is given (read in C: a Python function between was a frame more for each action, seven
# a 1-topic call, issue 39; ``_ITSELF``: the action itself, a metric event); the wake is not in the plan: the scheduler
# reads it.
_HANDLERS: dict[type[_Planned], tuple[str, Callable[[Any], Any] | None]] = dict.fromkeys(
    METRIC_KINDS, ("metric", _ITSELF)
)
_HANDLERS |= {
    ResponseThrottle: ("throttle", _ITSELF),
    Reached: ("reached", None),
    ReadViews: ("read_views", lambda read: list(read.names)),
    Drain: ("drain", _ITSELF),
    _SettleAll: ("settle", _ITSELF),
    _Flush: ("flush", operator.attrgetter("wait")),
    ReadMetadata: ("read_metadata", None),
    Probe: ("probe", operator.attrgetter("lane")),
}
