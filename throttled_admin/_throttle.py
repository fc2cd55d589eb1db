"""KIP-219 client-side back-off: the broker says how long to wait (throttle_time_ms), the client waits.

librdkafka lists KIP-219 as not supported: it keeps sending into a muted connection, so requests stall in
the broker and time out. Java's ``NetworkClient.maybeThrottle`` instead marks the node not ready until the
throttle ends, never moving that end backwards. This tracker keeps that end per node, fed by librdkafka's
throttle events (the only way throttle times reach Python).

librdkafka does not say which node a mutation will go to, and the controller can move, so the gate for a
mutation is the latest throttle end over all nodes: never earlier than Java's per-node gate, and it still
holds when the controller moves (where Java sends at once and is throttled again).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["ThrottleTracker"]


class ThrottleTracker:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._until: dict[int, float] = {}  # node id -> monotonic time its throttle ends

    def record(self, node_id: int, throttle_s: float) -> None:
        """A response from ``node_id`` carried ``throttle_s``; the end time never moves backwards."""
        if throttle_s <= 0:
            return
        until = self._clock() + throttle_s
        with self._lock:
            if until > self._until.get(node_id, 0.0):
                self._until[node_id] = until

    def remaining_s(self) -> float:
        """Seconds until every node's throttle has ended (0 when none is throttled)."""
        now = self._clock()
        with self._lock:
            latest = max(self._until.values(), default=0.0)
        return max(0.0, latest - now)
