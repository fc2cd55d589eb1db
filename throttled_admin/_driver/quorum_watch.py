"""Whether the KRaft controller changed while a change was in flight, when no lost connection says so.

A KRaft broker forwards a mutation to the active controller. If that controller applies it and loses the leadership
before it answers, the broker re-sends the request to the next controller (``NodeToControllerRequestThread``), which
answers "already done": TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PART or INVALID_PARTITIONS, for a change this very
request made. The engine hedges such an answer (``PossiblyAppliedError``, the code kept) when it knows why it may be
a re-send (``_engine.request.Forwarded``): a node reported gone while the request was in flight, or just before it
was sent (``slot.FORWARD_GRACE_S``). A controller that moves with no connection of the client lost is not reported
at all: dedicated controllers (clients never connect to them), a stopping node the client holds no connection to,
a leadership change.

This watch tells it from the controller quorum's leader epoch, which grows by one at every election
(DescribeQuorum, read on the broker-views reader's connections: ``quorum_wire``). The epoch is read once at first
contact (the baseline), and again when an answer with an "already done" result comes, before the engine is given the
answer: an epoch grown since the last read says the controller changed, perhaps while the request was in flight, and
the engine is told so (``Engine.on_results(controller_moved=True)``). What it cannot tell, it leaves to the
broker's word, as before:

- a controller that changed between the last read and the request's send is taken for one that may have changed in
  flight (the answer is hedged, its code kept, in words that say "before or while"). The baseline is read again when
  ``REFRESH_S`` old, as an answer comes, so that window is a minute at most for a client in use (an election in
  the millisecond such a read takes, while another request is in flight, is taken into the baseline unseen);
- no read before the first request's send (the baseline read is under way), a principal without DESCRIBE on the
  cluster (CLUSTER_AUTHORIZATION_FAILED), a broker without DescribeQuorum (Kafka before 3.3, Redpanda, Tansu), a
  set-up the reader's own connections do not speak (``broker_views``: librdkafka's fallback) and a read that fails
  or takes more than ``READ_TIMEOUT_S``: no watch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from throttled_admin._driver.quorum_wire import QuorumAnswer
from throttled_admin._engine import ALREADY_DONE, Send, error_of

__all__ = ["READ_TIMEOUT_S", "REFRESH_S", "QuorumWatch", "asks_for_a_check"]

log = logging.getLogger("throttled_admin")

# The longest an answer is held for the read (the engine's deadlines go on meanwhile): a quorum that answers "already
# done" after a failover has its next leader, and a broker that forwards the read answers within a round trip or two.
READ_TIMEOUT_S = 2.0
# A baseline this old is read again when an answer comes (off the answer's way): one request a minute, at most, for a
# client in use; none for one that is not.
REFRESH_S = 60.0
_CLUSTER_AUTHORIZATION_FAILED = 31


class QuorumWatch:
    """The leader epoch last read. Thread-safe: read by librdkafka's thread (``watching``), written by the
    reader's."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._epoch: int | None = None
        self._read_at = -float("inf")  # when the baseline was last read
        self._reading = False  # a refresh is under way (``due``)
        self._refused = False  # the cluster refused the read: not asked again (an authorizer logs each denial)
        self._told_why = False

    @property
    def watching(self) -> bool:
        """A baseline was read: answers can be checked."""
        return self._epoch is not None

    @property
    def wanted(self) -> bool:
        """No baseline yet, and the cluster has not refused the read: worth asking (again)."""
        return self._epoch is None and not self._refused

    def due(self) -> bool:
        """Whether the baseline is old enough to be read again (``REFRESH_S``); True once, until that read's answer
        (``read``)."""
        if self._epoch is None or self._reading or self._clock() - self._read_at < REFRESH_S:
            return False
        with self._lock:
            due, self._reading = not self._reading, True
        return due

    def read(self, answer: QuorumAnswer | None) -> bool:
        """A read's answer (None: nothing could be read). True when it shows a leader epoch later than the last one
        read: the controller changed since. The epoch read becomes the baseline either way."""
        if answer is None or answer.error_code != 0 or answer.leader_epoch < 0:
            self._reading = False
            self._unread(answer)
            return False
        with self._lock:
            moved = self._epoch is not None and answer.leader_epoch > self._epoch
            if self._epoch is None or answer.leader_epoch > self._epoch:
                self._epoch = answer.leader_epoch
            self._read_at, self._reading = self._clock(), False
        return moved

    def _unread(self, answer: QuorumAnswer | None) -> None:
        """Why nothing was read, logged once while no baseline is read: at INFO when the cluster refuses the read
        (it will go on refusing), at DEBUG when nothing answered (the broker may not serve it, or not be up yet)."""
        if self._told_why or self._epoch is not None:
            return
        if answer is None:
            log.debug("no broker answered DescribeQuorum (not served, or not reachable yet)")
            return
        self._told_why = self._refused = True
        why = f"DescribeQuorum was answered with error {answer.error_code}"
        if answer.error_code == _CLUSTER_AUTHORIZATION_FAILED:
            why = "the principal may not describe the cluster (DescribeQuorum needs DESCRIBE on CLUSTER)"
        log.info(
            "an 'already done' answer is told as the broker's word when the controller changes with no connection "
            "lost: %s",
            why,
        )


def asks_for_a_check(request: Send, answer: dict[str, BaseException | None]) -> bool:
    """Whether an answer has a result that a re-send to the next controller would give: "already done" for a
    change (validate-only excepted)."""
    if request.kind.validate_only:
        return False
    code = ALREADY_DONE.get(request.kind.operation.name)
    for exc in answer.values():
        if exc is not None and (error := error_of(exc)) is not None and error.code() == code:
            return True
    return False
