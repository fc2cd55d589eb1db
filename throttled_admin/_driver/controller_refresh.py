"""Metadata reads after a node went away, so that librdkafka finds another controller (issue 37).

librdkafka sends every mutation to the broker the latest Metadata response named as controller (``rk_controllerid``,
set in ``rd_kafka_parse_Metadata``), and an admin request waits for that broker to be up
(``rd_kafka_broker_controller_async``): once the node it names has gone away, nothing is sent until a Metadata
response names another, and librdkafka asks for none by itself but its periodic refresh (5 minutes). A KRaft broker
names any live broker (``KRaftMetadataCache.getRandomAliveBrokerId``), a stopped one too until its session times
out and it is fenced (``broker.session.timeout.ms``, 9 s by default). Seen on a three-node Kafka 4.4 quorum: after a
kill -9 of the node librdkafka sent to, the topics queued behind the request in flight ended "not sent" or "outcome
unknown" 20 s later, the cluster never having received them.

So when librdkafka reports a node's connection lost (``failed_node``), the driver reads Metadata (``list_topics``,
whose response sets librdkafka's controller) until one names a node not lost since, or is answered by the node it
names (back up: a restart), every ``INTERVAL_S`` for at most ``LIMIT_S`` after the last loss, on a thread of its
own (one at a time; never the driver's).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["INTERVAL_S", "LIMIT_S", "ControllerRefresh"]

log = logging.getLogger("throttled_admin")

INTERVAL_S = 1.0
LIMIT_S = 30.0  # past Kafka's default broker.session.timeout.ms (9 s): the stopped node is fenced by then
_READ_TIMEOUT_S = 2.0  # a live broker answers Metadata in milliseconds; close() may wait this long for a read


class ControllerRefresh:
    """``read`` reads Metadata (librdkafka learns its controller from the response) and returns the node it names
    as controller and the node that answered; it raises ``stop_on`` when the client is gone."""

    def __init__(
        self,
        read: Callable[[float], tuple[int, int]],
        stop_on: type[BaseException],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._stop_on = stop_on
        self._clock = clock
        self._lock = threading.Lock()
        self._lost: dict[int, float] = {}  # node id -> until when Metadata naming it is read again
        self._running = False
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def lost(self, node_id: int) -> None:
        """librdkafka reported the connection to ``node_id`` lost: read Metadata until it names another node."""
        with self._lock:
            if self._closed.is_set():
                return
            self._lost[node_id] = self._clock() + LIMIT_S
            if self._running:
                return
            self._running = True
        thread = self._thread = threading.Thread(target=self._run, name="throttled-admin-controller", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # interpreter shutdown: no new threads
            with self._lock:
                self._running = False

    def close(self, timeout_s: float = 0.0) -> None:
        """No more reads; waits up to ``timeout_s`` for one in progress (librdkafka's handle must outlive it)."""
        self._closed.set()
        thread = self._thread
        if timeout_s > 0 and thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(timeout_s)

    def _run(self) -> None:
        try:
            while self._due():
                named: tuple[int, int] | None = None
                try:
                    named = self._read(_READ_TIMEOUT_S)
                except self._stop_on:
                    self._closed.set()
                    continue
                except Exception as exc:  # no broker answered: librdkafka is reconnecting; read again
                    log.debug("could not read Metadata after a node went away (%s)", exc)
                with self._lock:
                    if named is not None and (named[0] not in self._lost or named[0] == named[1]):
                        self._lost.clear()  # librdkafka's controller is a node that is up
                        continue
                self._closed.wait(INTERVAL_S)
        except BaseException:  # a bug: the reader is gone all the same
            with self._lock:
                self._running = False
            raise

    def _due(self) -> bool:
        """Whether a lost node may still be named (its limit not passed), pruning the others; the thread ends when
        not (``_running`` cleared under the same lock as the decision, so a later loss starts a new one)."""
        now = self._clock()
        with self._lock:
            self._lost = {node: until for node, until in self._lost.items() if until > now}
            if not self._lost or self._closed.is_set():
                self._running = False
                return False
            return True
