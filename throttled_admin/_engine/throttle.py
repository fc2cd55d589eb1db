"""KIP-219 client-side back-off: the broker says how long to wait (throttle_time_ms), the client waits.

librdkafka lists KIP-219 as not supported: it keeps sending into a muted connection, so requests stall in
the broker and time out. Java's ``NetworkClient.maybeThrottle`` instead marks the node not ready until the
throttle ends, never moving that end backwards. This tracker keeps that end per node, fed by librdkafka's
throttle events (the only way throttle times reach Python).

librdkafka does not say which node a mutation will go to, and the controller can move, so the gate for a
mutation is the latest throttle end over all nodes: never earlier than Java's per-node gate, and it still
holds when the controller moves (where Java sends at once and is throttled again).

It also keeps how long work has waited for the gate (the local back-off time of KIP-219's metrics).
"""

from __future__ import annotations

__all__ = ["ThrottleTracker"]


class ThrottleTracker:
    """Not thread-safe: the engine's own state. Times are monotonic seconds."""

    def __init__(self) -> None:
        self._until: dict[int, float] = {}  # node id -> when its throttle ends
        self._wait: tuple[str, float] | None = None  # (operation, since when) work waits for the gate

    def record(self, node_id: int, throttle_s: float, now: float) -> None:
        """A response from ``node_id`` carried ``throttle_s``; the end time never moves backwards."""
        if throttle_s <= 0:
            return
        until = now + throttle_s
        if until > self._until.get(node_id, 0.0):
            self._until[node_id] = until

    def remaining_s(self, now: float) -> float:
        """Seconds until every node's throttle has ended (0 when none is throttled)."""
        return max(0.0, max(self._until.values(), default=0.0) - now)

    @property
    def waiting(self) -> bool:
        return self._wait is not None

    def wait_began(self, operation: str, now: float) -> None:
        """Work of ``operation`` (the first waiting) began to wait for the gate."""
        self._wait = (operation, now)

    def wait_ended(self, now: float) -> tuple[str, float] | None:
        """The gate opened: the operation that waited and how long, if work was waiting."""
        wait, self._wait = self._wait, None
        return None if wait is None else (wait[0], now - wait[1])
