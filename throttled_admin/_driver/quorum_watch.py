"""Whether the KRaft controller changed while a change was in flight, when no lost connection says so.

A KRaft broker forwards a mutation to the active controller. If that controller applies it and loses the leadership
before it answers, the broker re-sends the request to the next controller (``NodeToControllerRequestThread``), which
answers "already done": TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PART or INVALID_PARTITIONS, for a change this very
request made. The engine hedges such an answer (``PossiblyAppliedError``, the code kept) when it knows why it may be
a re-send (``_engine.request.Forwarded``): a node reported gone while the request was in flight, or just before it
was sent (``slot.FORWARD_GRACE_S``). A controller that moves with no connection of the client lost is not reported
at all: dedicated controllers (clients never connect to them), a stopping node the client holds no connection to,
a leadership change.

This watch tells it from the controller quorum's leader epoch, which grows by one at every election (DescribeQuorum,
read on the broker-views reader's connections: ``quorum_wire``). It is read as the client is made (the baseline,
before its first call: a broker forwards its requests to the controller one at a time, and a read beside a call's
first request delays it; a ``ReadingClient``, made to read, leaves it to its first change), again when
``REFRESH_S`` old as calls and answers come (not validate-only ones), and when an answer with an "already done"
result comes, before the engine is given it. Each request carries the epoch known as it was sent
(``Scheduler.send``); an epoch read at its answer later than that says the controller changed since, perhaps while
the request was in flight, and the engine is told so (``Engine.on_results(controller_moved=True)``). What it cannot
tell:

- a controller that changed between the last read and the request's send is taken for one that may have changed in
  flight: the answer is hedged, its code kept, in words that say "before or while" (a minute at most for a client
  making changes, more for one idle, or only validating, since its last read);
- a request sent before the first read ended (a call within the read's few milliseconds of the client's making, one
  made before its cluster answered: that read is asked again as the first change comes, or a ``ReadingClient``'s
  first change, whose read is asked only then) is compared with the
  baseline as its check starts, read after its send: a move between its send and that read is not seen, and one
  answered before any read ended is not checked; after a first call's read that got nothing, the next is asked
  ``RETRY_S`` later;
- a principal without DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED: asked once, since an authorizer logs
  each denial), brokers without DescribeQuorum (Kafka before 3.3, Redpanda, Tansu), a set-up the reader's own
  connections do not speak (``broker_views``: librdkafka's fallback), a check that cannot read the quorum within
  ``READ_TIMEOUT_S``, and a broker that re-sends to the same controller after their connection dropped (no
  election): the broker's word, as before.

The read runs on the views reader's thread (its connections are not thread-safe), after the views read under way
there, if any: an answer is held behind that read (``broker_views``: up to 5 s a broker that does not answer) and
for its own ``READ_TIMEOUT_S``, and the answers held meanwhile share one read. The engine's deadlines go on
meanwhile; an answer held past its request's expiry is not taken, and its topics go on as an unanswered request's do
(outcome unknown, sent again within their deadline).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from throttled_admin._driver.quorum_wire import UNSUPPORTED_VERSION, QuorumAnswer
from throttled_admin._engine import ALREADY_DONE, Send, error_of

__all__ = ["READ_TIMEOUT_S", "REFRESH_S", "RETRY_S", "STUCK_S", "QuorumWatch", "asks_for_a_check"]

log = logging.getLogger("throttled_admin")

# The longest a read may take (an answer held for it meanwhile: the engine's deadlines go on; one address gets half,
# ``broker_views.read_quorum``): a quorum that answers "already done" after a failover has its next leader, and a
# broker that forwards the read answers within a round trip or two.
READ_TIMEOUT_S = 2.0
# A baseline this old is read again as a call or an answer comes (off their way): one request a minute at most, for
# a client in use; none for one that is not. A first read that got nothing is asked again this much later.
REFRESH_S = 60.0
RETRY_S = 5.0
# A read asked for and not ended this long after (behind views reads, or never handed to the reader) is asked again.
STUCK_S = 60.0
# The cluster's refusals that hold for the client's life: it is not asked again (an authorizer logs each denial).
_REFUSALS = {
    31: "the principal may not describe the cluster (DescribeQuorum needs DESCRIBE on CLUSTER)",
    UNSUPPORTED_VERSION: "the brokers do not serve DescribeQuorum (Kafka before 3.3, Redpanda, Tansu)",
}


class QuorumWatch:
    """The leader epoch last read (the baseline), and when to read it. Thread-safe: read on librdkafka's thread and
    the callers' (``epoch``, ``due``), written on the views reader's (``read``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._epoch: int | None = None
        self._tried_at = -float("inf")  # when the last read ended
        self._asked_at = -float("inf")  # when ``due`` last asked for one: under way while later than ``_tried_at``
        self._refused = False  # the cluster refused the read for good (``_REFUSALS``)
        self._making = False  # the read asked for as the client was made is under way (``due(making=True)``)

    @property
    def epoch(self) -> int | None:
        """The baseline: the latest leader epoch read (None: none yet). A request's send takes it as its own."""
        return self._epoch

    @property
    def under_way(self) -> bool:
        """A read asked for (``due``) has not ended yet (``read``)."""
        return self._asked_at > self._tried_at

    def due(self, *, making: bool = False) -> bool:
        """Whether a read is to be asked for now (``making``: the client is made; else a call or an answer comes):
        the first, one ``RETRY_S`` after a first that got nothing, or one ``REFRESH_S`` after the last; True once,
        until that read ends (``read``). The making's read that got nothing (a client made before its cluster
        answers) is asked again as the first change or its answer comes, as if never asked: a first change knows
        the epoch as soon as before (a validate-only call asks for none)."""
        if self._refused:
            return False
        now = self._clock()
        if now - self._tried_at < (RETRY_S if self._epoch is None else REFRESH_S):
            return False
        with self._lock:
            # (a read asked for that never ended, its hand-over to the reader cut short, is asked for again)
            due = not self.under_way or now - self._asked_at >= STUCK_S
            if due:
                self._asked_at = now
                self._making = making
        return due

    def read(self, answer: QuorumAnswer | None) -> int | None:
        """A read's answer (None: nothing could be read): the leader epoch it shows, which becomes the baseline when
        later than it, or None."""
        epoch = None
        if answer is not None and answer.error_code == 0 and answer.leader_epoch >= 0:
            epoch = answer.leader_epoch
        with self._lock:
            refused = self._ended(epoch, answer)
        if refused:
            assert answer is not None
            log.info(
                "an 'already done' answer is told as the broker's word when the controller changes with no "
                "connection lost: %s",
                _REFUSALS[answer.error_code],
            )
        elif epoch is None:
            log.debug("DescribeQuorum was not answered (%s)", "no broker" if answer is None else answer.error_code)
        return epoch

    def _ended(self, epoch: int | None, answer: QuorumAnswer | None) -> bool:
        """A read ended (under the lock), showing ``epoch``: the baseline, and when to read next; whether the cluster
        refused the read for good."""
        if epoch is not None and (self._epoch is None or epoch > self._epoch):
            self._epoch = epoch
        self._tried_at = self._clock()
        if self._making and self._epoch is None:  # (the making's read: the first change asks again)
            self._tried_at = self._asked_at = -float("inf")
        self._making = False
        refused = not self._refused and self._epoch is None and answer is not None and answer.error_code in _REFUSALS
        if refused:
            self._refused = True
        return refused


def asks_for_a_check(request: Send, answer: dict[str, BaseException | None]) -> bool:
    """Whether an answer has a result that a re-send to the next controller would give: "already done" for a
    change (validate-only excepted)."""
    if request.kind.validate_only or not any(answer.values()):  # (every topic applied: most answers, read in C)
        return False
    code = ALREADY_DONE.get(request.kind.operation.name)
    for exc in answer.values():
        if exc is not None and (error := error_of(exc)) is not None and error.code() == code:
            return True
    return False
