"""KIP-219 client-side back-off: the broker says how long to wait (throttle_time_ms), the client waits.

librdkafka lists KIP-219 as not supported: it keeps sending into a muted connection, so requests stall in
the broker and time out. Java's ``NetworkClient.maybeThrottle`` instead marks the node not ready until the
throttle ends, never moving that end backwards. This tracker keeps that end per node, fed by librdkafka's
throttle events (the only way throttle times reach Python).

librdkafka does not say which node a mutation will go to, and the controller can move, so the gate for a
mutation is the latest throttle end over all nodes: never earlier than Java's per-node gate, and it still
holds when the controller moves (where Java sends at once and is throttled again).

A throttle that no broker holds any more (docs/semantics.md, "The gate ends with its connection"): Kafka mutes a
connection (``KafkaChannel``), and a restarted broker's quota sensors start fresh. So once the connection that
carried a node's throttle is gone (``connection_gone``: librdkafka reported the broker's side lost it, not that a
request timed out in the mute), that throttle no longer
closes the gate; it asks for a probe instead (``probe_due``): the next request is kept to one topic, and only its
answer, on a fresh connection, ends the old throttle: one that spoke for the quota (a topic charged or refused by
it) with no throttle ends it; a throttle in the answer is the gate from then on (``record``); an answer that
charged nothing proves nothing, and the next request is a probe again. Java keeps ``throttleUntilTimeMs`` across
a reconnect (``ClusterConnectionStates``), so it waits out a throttle the restarted broker forgot.

It also keeps how long work has waited for the gate (the local back-off time of KIP-219's metrics).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ThrottleTracker", "failed_node"]

# librdkafka's broker name ends in "/NODEID" once the node is known ("127.0.0.1:9092/1", "[::1]:9092/1",
# "sasl_ssl://host:9093/2"), in "/bootstrap" before; a FAIL line or an error names it first, after the thread's name.
_THREAD = re.compile(r"^\[thrd:\S*\]: ")
# The broker's side lost the connection (closed, reset, refused), never librdkafka's own request or connect timing
# out: "1 request(s) timed out: disconnect" tears down a connection the broker muted, and the debt stands.
_LOST = re.compile(r"Disconnected|closed by peer|reset by peer|Connection refused|Broken pipe|Connect to \S+ failed")


def failed_node(line: str) -> int | None:
    """The node whose connection a librdkafka failure report (a ``FAIL`` log line, an ``error_cb`` error) says the
    broker's side lost: librdkafka holds one connection per broker and tears it down before it reports
    (``rd_kafka_broker_fail``). None: no node named, or not such a loss."""
    name, sep, text = _THREAD.sub("", line, count=1).partition(": ")
    _, slash, node = name.rpartition("/")
    if not (sep and slash and node.isdigit()) or "timed out" in text or not _LOST.search(text):
        return None
    return int(node)


@dataclass(slots=True)
class _Throttle:
    until: float
    gone: bool = False  # the connection that carried it is gone: it asks for a probe, it closes nothing


class ThrottleTracker:
    """Not thread-safe: the engine's own state. Times are monotonic seconds."""

    def __init__(self) -> None:
        self._until: dict[int, _Throttle] = {}  # node id -> its throttle
        self.probe_id: int | None = None  # the id of the latest request sent as a probe, until it completes
        self._wait: tuple[str, float] | None = None  # (operation, since when) work waits for the gate

    def record(self, node_id: int, throttle_s: float, now: float) -> None:
        """A response from ``node_id`` carried ``throttle_s``; the end time never moves backwards, but on a fresh
        connection, whose answer is the truth from then on."""
        if throttle_s <= 0:
            return
        until = now + throttle_s
        throttle = self._until.get(node_id)
        if throttle is None or throttle.gone or until > throttle.until:
            self._until[node_id] = _Throttle(until)

    def connection_gone(self, node_id: int | None) -> None:
        """librdkafka reported the connection to ``node_id`` failed (None: it named no node)."""
        throttle = self._until.get(node_id) if node_id is not None and node_id >= 0 else None
        if throttle is not None:
            throttle.gone = True

    def every_connection_gone(self) -> None:
        """librdkafka reported every broker down (``_ALL_BROKERS_DOWN``)."""
        for node, throttle in self._until.items():
            if node >= 0:  # -1: Redpanda's charge, which no connection carries
                throttle.gone = True

    def remaining_s(self, now: float) -> float:
        """Seconds until every throttle a live connection carries has ended (0 when none)."""
        if not self._until:  # no throttle seen (asked before every request)
            return 0.0
        live = [throttle.until for throttle in self._until.values() if not throttle.gone]
        return max(0.0, max(live, default=0.0) - now)

    def probe_due(self, now: float) -> bool:
        """A throttle whose connection is gone has not ended: the next request is a probe of one topic."""
        return bool(self._until) and any(t.gone and t.until > now for t in self._until.values())

    def sent(self, request_id: int, probe: bool) -> None:
        """A request was sent; ``probe``: as the probe (``probe_due`` when it was composed)."""
        if probe:
            self.probe_id = request_id

    def completed(self, request_id: int, *, spoke_for_quota: bool) -> bool:
        """A request completed; ``spoke_for_quota``: a broker answered it, charging a topic or refusing one for the
        quota (its throttle, if any, was recorded first). The probe's such answer ends every throttle whose
        connection is gone; returns whether it did (the pacer's mirror then follows: ``Pacer.connection_renewed``)."""
        if request_id != self.probe_id:
            return False
        self.probe_id = None
        if spoke_for_quota:
            self._until = {node: t for node, t in self._until.items() if not t.gone}
        return spoke_for_quota

    def note_wait(self, waiting: bool, operation: str, now: float) -> tuple[str, float] | None:
        """Local back-off time (KIP-219): queued work of ``operation`` waits for the gate (``waiting``) or not; when
        the gate opens after a wait, the operation that waited first and how long."""
        if waiting and self._wait is None:
            self._wait = (operation, now)
        elif not waiting and self._wait is not None:
            wait, self._wait = self._wait, None
            return wait[0], now - wait[1]
        return None
