"""Rule b's slot: the mutation request in flight on one connection, and what its end leaves there (``connection``).

``Slot`` numbers and holds the request handed over, says when it is done (answered whole, or given up on:
``ABANDON_GRACE_S`` after librdkafka's own timeout, ``PARTIAL_GRACE_S`` after a partial answer), whether the
connection may still carry it (a sentinel is then asked for: ``drain``), and from when nothing this client handed
over can still be applied (``final_at``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterator

from confluent_kafka import KafkaError

from throttled_admin._engine.actions import Drain
from throttled_admin._engine.classify import Outcome, connection_lost, error_of, was_written
from throttled_admin._engine.connection import Connection, Drained
from throttled_admin._engine.request import Forwarded, Request
from throttled_admin._engine.work import RequestKind, Topic

__all__ = ["ABANDON_GRACE_S", "FORWARD_GRACE_S", "PARTIAL_GRACE_S", "Slot"]

# A request librdkafka never completes frees the slot this long after its timeout (librdkafka scans timeouts
# once a second).
ABANDON_GRACE_S = 2.0
# librdkafka completes every topic of one response together; a topic still open this long after the first
# answer was left out of the response (a garbled answer): its outcome is unknown.
PARTIAL_GRACE_S = 0.5
# A request sent this soon after a node went away may still have been forwarded to it as the controller: a combined
# KRaft node closes its broker listener (the loss librdkafka reports) before its controller resigns, 0.09-0.26 s later
# on Kafka 4.4's three-node quorum (SIGTERM, load 0.6-13: ``benchmarks/resign_gap.py``).
FORWARD_GRACE_S = 5.0
_NO_DRAIN: tuple[tuple[Drain, ...], float] = ((), math.inf)  # nothing to send, nothing to look at again


class Slot:
    """The request in flight and its connection. Not thread-safe: the engine's own state."""

    def __init__(self, socket_timeout_s: float, ids: Iterator[int] | None = None, lane: int = 0) -> None:
        """``socket_timeout_s``: librdkafka's ``socket.timeout.ms``, how long an abandoned request may stay on its
        connection (``connection``); ``ids``: where request ids come from (shared by the lanes, ``lanes``);
        ``lane``: the connection's, as its sends and sentinels name it."""
        self.request: Request | None = None
        self.lane = lane
        self._ids = itertools.count(1) if ids is None else ids
        self._connection = Connection(socket_timeout_s)
        self._final_at = -math.inf
        self._lost_at = -math.inf  # when a node last went away (``node_lost``)

    @property
    def busy(self) -> bool:
        """The connection may still carry an abandoned request: nothing is written (rule b)."""
        return self._connection.busy

    @property
    def final_at(self) -> float:
        """From when no request this client handed over can still be applied: every one was answered, or its
        connection is known closed and its controller deadline (counted from the close: the broker may have read
        it just before) has passed. ``math.inf`` while a request is in flight or the connection may be busy."""
        if self.request is not None or self._connection.busy:
            return math.inf
        return self._final_at

    def hand_over(
        self, kind: RequestKind, topics: list[Topic], mutations: int, timeouts: tuple[float, float], now: float
    ) -> Request:
        """The next request takes the slot; ``timeouts``: librdkafka's own and the controller's, in seconds."""
        expires_at = now + timeouts[0] + ABANDON_GRACE_S
        request = Request(kind, topics, mutations, now, expires_at, *timeouts, next(self._ids), lane=self.lane)
        if now - self._lost_at < FORWARD_GRACE_S and not kind.validate_only:
            request.forwarded = Forwarded.NODE_LOST
        self.request = request
        return request

    def settles_at(self) -> float:
        """When the request in flight is done without more results: abandoned, or partly answered."""
        request = self.request
        if request is None:
            return math.inf
        if request.first_result_at is not None:
            return min(request.expires_at, request.first_result_at + PARTIAL_GRACE_S)
        return request.expires_at

    def done(self, now: float) -> Request | None:
        """The request in flight, if every topic has its result or its time is up."""
        request = self.request
        if request is not None and (len(request.results) >= len(request.topics) or now >= self.settles_at()):
            return request
        return None

    def free(self) -> None:
        self.request = None

    def node_lost(self, now: float) -> None:
        """A node went away: the request in flight, and one sent within ``FORWARD_GRACE_S``, may have been forwarded
        to it as the controller."""
        self._lost_at = now
        if self.request is not None and not self.request.kind.validate_only:
            self.request.forwarded = Forwarded.NODE_LOST

    def drain(self, now: float) -> tuple[tuple[Drain, ...], float]:
        """The sentinel to send now, if any (``Drain``, with its librdkafka timeout), and when to look again."""
        if not self._connection.busy:  # (every step: no call into the connection while it is free)
            return _NO_DRAIN
        ask, wake_at = self._connection.step(now)
        return ((Drain(self._connection.sentinel_timeout_s, self.lane),) if ask else ()), wake_at

    def drained(self, outcome: Drained, now: float) -> None:
        """What became of the sentinel."""
        self._final_at = max(self._final_at, now + self._connection.drained(outcome))

    def answered(self, request: Request, outcomes: Collection[Outcome], now: float) -> None:
        """A broker answered the request. Topics refused with NOT_CONTROLLER or REQUEST_TIMED_OUT (``NOT_APPLIED``):
        a controller that resigns fails what it wrote but did not commit, and the next one may commit it once
        elected. Nothing this client handed over is then final before the request's controller deadline from now
        (``final_at``), as for a request whose connection closed; a validate_only request writes nothing."""
        if Outcome.NOT_APPLIED in outcomes and not request.kind.validate_only:
            self._final_at = max(self._final_at, now + request.operation_timeout_s)

    def ended(self, request: Request, results: dict[str, BaseException | None], answered: bool, now: float) -> None:
        """What the request's end says of the connection: it may still hold the request (rule b), or the request
        was written and its connection is gone (``final_at``)."""
        if request.first_result_at is None or (
            not answered and any(_may_still_be_on_the_connection(exc) for exc in request.results.values())
        ):
            self._connection.abandoned(now, request.operation_timeout_s)  # it may still hold the connection
        elif not answered and any(was_written(exc) for exc in results.values()):
            # written and not answered, its connection gone: the broker may have read it just before
            self._final_at = max(self._final_at, now + request.operation_timeout_s)


def _may_still_be_on_the_connection(exc: BaseException | None) -> bool:
    """librdkafka gave up waiting for the answer, or could not read it (its throttle is then unknown): the request,
    or the mute after its answer, may still hold the connection (``connection``). A transport failure closed the
    connection; a request never built ("waiting for controller") was not written."""
    error = error_of(exc)
    if error is None:
        return False
    return error.code() == KafkaError._BAD_MSG or (was_written(exc) and not connection_lost(exc))
