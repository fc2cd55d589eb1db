"""Issue 37's gate on real brokers: a client throttled on one connection, and librdkafka's word that it failed."""

from __future__ import annotations

import threading
import time
from typing import Any

from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient

BIG = 60  # partitions: at 1/s with Kafka's burst of 11 one-second windows, admitted and throttled about 49 s


class Disconnects:
    """The ``logger`` from conf: librdkafka's lines reach it after the client has read them (``librdkafka_log``), so
    once it has seen a node's connection fail, so has the client's engine. Also the ``throttle_cb``: which node
    carried each throttle."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.throttled_by: list[int] = []
        self.throttled = threading.Event()  # the conf throttle_cb runs on the client's user-code thread, later
        self._seen: dict[int, threading.Event] = {}
        self._lock = threading.Lock()

    def log(self, level: int, fmt: str, *args: Any) -> None:
        line = fmt % args
        with self._lock:
            self.lines.append(line)
            for node, event in self._seen.items():
                if f"/{node}: Disconnected" in line:
                    event.set()

    def throttle_cb(self, event: Any) -> None:
        if event.throttle_time > 0:
            self.throttled_by.append(int(event.broker_id))
            self.throttled.set()

    def expect(self, node: int) -> threading.Event:
        """Set once librdkafka has reported the connection to ``node`` failed (call before it can fail)."""
        with self._lock:
            return self._seen.setdefault(node, threading.Event())


def throttled_client(
    bootstrap: str,
    client_id: str,
    big: str,
    watch: Disconnects,
    partitions: int = BIG,
    mutation_quota: MutationQuota | None = None,
) -> tuple[ThrottledAdminClient, float]:
    """A client (paced by ``mutation_quota`` if given) whose create of ``big`` was admitted and throttled; returns it
    and when its throttle ends."""
    conf = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "logger": watch,
        "log_level": 6,
        "throttle_cb": watch.throttle_cb,
    }
    admin = ThrottledAdminClient(conf, mutation_quota=mutation_quota)
    admin.create_topics([NewTopic(big, partitions, 1)])[big].result(120)
    throttle_s = admin.metrics()["throttle-time-max"] / 1000
    assert throttle_s > 40, f"the create drew a {throttle_s} s throttle"
    assert watch.throttled.wait(30), "the throttle event never reached the conf throttle_cb"
    return admin, time.monotonic() + throttle_s


def outcomes(admin: ThrottledAdminClient, names: list[str], timeout_s: float) -> dict[str, BaseException | None]:
    """Create one-partition topics in one call of ``timeout_s``; each topic's outcome."""
    futures = admin.create_topics([NewTopic(n, 1, 1) for n in names], timeout_ms=int(timeout_s * 1000))
    return {name: future.exception(timeout_s + 30) for name, future in futures.items()}
