"""Python's cyclic garbage collector held off while a bulk call is checked, queued and sent, until it returns, and
kept off the call's objects until it ends.

A call of many topics makes a few objects a topic that live as long as the call (its checked copy, the engine's
record, its future). Made in one go, they set off collections that trace every one of them again as it is promoted
from generation to generation, and the first often falls in the call's checks: a full collection of 11-15 ms for a
call of 10,000 topics, 17-26 ms for 50,000, paid there for objects the application made just before; for 50,000 a
second of 30-45 ms came before ``create_topics`` returned (issue 40). Held off until the call returns, the first
request goes sooner. As it returns, its objects are frozen (``Hold``: ``gc.freeze``) until none of its topics is
pending, and the collector goes on without them: turned on plainly, it walked them three times while the call ran
(50,000 topics on QuotaBroker: 15-20 ms in generation 0, 17-25 in generation 1, then a full collection of 37-50 ms;
``benchmarks/broker_gaps.py`` lists a client's collections run by run), and one that landed as an answer came held
the next write back (QuotaBroker's controller idle 16-21 ms more in a call, medians of 8 interleaved runs).

Mercurial's ``util.nogc`` does the same while it builds large dicts; Instagram's servers freeze what they keep. The
collector's switch and its freeze are the process's, so a call touches them only with ``BULK_CALL_FROM`` topics or
more and only if it is on, and turns it on again when it returns, however it ends (on Python 3.11 and later even
when Ctrl-C lands in it: ``ThrottledAdminClient._call``). Calls that overlap share the switch (the first to return
turns it on) and the freeze (the last to end gives it back). A thread that turns it off while a bulk call runs
finds it on again when the call returns; an application that froze objects itself is left alone, and one that
freezes objects while a bulk call is pending has them given back with the call's. A process forked while a bulk
call is pending keeps what was frozen (the call never ends in the child: ``gc.unfreeze`` there gives it back).
"""

from __future__ import annotations

import gc
import threading

from throttled_admin._engine.config import SECOND_LANE_FROM

__all__ = ["BULK_CALL_FROM", "Hold", "worth_holding"]

#: The fewest topics of a call for which the collector is held off: a bulk call's, as for its second connection.
BULK_CALL_FROM = SECOND_LANE_FROM


def worth_holding(topics: object) -> bool:
    """Whether a call of ``topics`` (its input, not yet checked) holds the collector off: a list of at least
    ``BULK_CALL_FROM`` items, and the collector on. Changes nothing: the caller turns it off inside its ``try`` and
    on in the ``finally``, so that no Ctrl-C between the two leaves it off."""
    return isinstance(topics, list) and len(topics) >= BULK_CALL_FROM and gc.isenabled()


_lock = threading.RLock()  # (reentrant: a hold dropped while another starts or ends gives its end in place)
_holds = 0  # bulk calls whose objects are frozen now: started, not ended


class Hold:
    """One bulk call's objects kept out of the collections while the call is pending: frozen (``gc.freeze``) as the
    call returns (``start``), given back (``gc.unfreeze``, into the oldest generation) when its last topic is no
    longer pending (``end``, from ``OpenCalls``; it may come first, and ``start`` then does nothing). Calls that
    overlap share the freeze: the last to end gives it back. An application that froze objects of its own is left
    alone (no call freezes while any are), and a freeze it makes during a bulk call is given back with the call's.
    What is frozen is still freed when nothing refers to it; only garbage in reference cycles among it waits for
    the end."""

    __slots__ = ("_ended", "_started")

    def __init__(self) -> None:
        self._started = self._ended = False

    def start(self) -> None:
        """The call returned, its objects made: they are frozen, before the collector is turned on again."""
        global _holds
        with _lock:
            if self._ended or self._started or (_holds == 0 and gc.get_freeze_count()):
                return
            self._started = True
            _holds += 1  # (counted before the freeze: a Ctrl-C between the two leaves nothing frozen uncounted)
            gc.freeze()

    def end(self) -> None:
        """None of the call's topics is pending any more: the last call frozen gives the frozen objects back."""
        global _holds
        with _lock:
            self._ended = True
            if not self._started:
                return
            self._started = False
            _holds -= 1
            if _holds == 0:
                gc.unfreeze()

    def __del__(self) -> None:
        # An end lost to a Ctrl-C on the thread that was giving it (``OpenCalls``, as a close() settles the call):
        # given once nothing refers to the call's hold, so that the process is never left frozen.
        if self._started:
            self.end()
