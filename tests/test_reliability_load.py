"""Load: 32 threads x 100 mixed calls on one client under a strict quota.

Each thread owns its topics (disjoint names) and keeps a model of them from what the client reported; at the
end the broker must hold exactly the union of the models, every future must have resolved, and the client's
``request-total`` must equal the mutation requests in the broker's request log. ``faulthandler`` dumps every
thread's stack if the run hangs, so a deadlock shows where it is.
"""

from __future__ import annotations

import faulthandler
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError

from tests.reliability_helpers import error_text, hedged, mutation_requests, outcomes
from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker

BrokerFactory = Callable[..., QuotaBroker]
THREADS = 32
CALLS_PER_THREAD = 100
HANG_GUARD_S = 150.0


class _Worker:
    """One thread's calls on its own topics; ``model`` is what the client said the broker holds."""

    def __init__(self, admin: ThrottledAdminClient, index: int) -> None:
        self.admin = admin
        self.index = index
        self.random = random.Random(index)
        self.model: dict[str, int] = {}
        self.unknown: set[str] = set()  # hedged outcomes: read the broker for these
        self.failures: list[str] = []
        self.calls: Counter[str] = Counter()
        self.serial = 0
        self.requested: dict[str, int] = {}  # topic -> partitions asked for at creation

    def _new_name(self) -> str:
        self.serial += 1
        return f"w{self.index}-t{self.serial}"

    def run(self) -> None:
        for _ in range(CALLS_PER_THREAD):
            live = sorted(self.model)
            choice = self.random.random()
            if len(live) < 2 or choice < 0.4:
                self._create()
            elif choice < 0.7:
                self._grow(self.random.sample(live, min(len(live), self.random.randint(1, 2))))
            else:
                self._delete(self.random.sample(live, min(len(live), self.random.randint(1, 2))))

    def _settle(self, kind: str, results: dict[str, BaseException | None], apply: Callable[[str], None]) -> None:
        self.calls[kind] += 1
        for name, exc in results.items():
            if exc is None:
                apply(name)
            elif hedged(exc):
                self.unknown.add(name)
                self.failures.append(f"{kind} {name}: {error_text(exc)}")
            else:
                self.failures.append(f"{kind} {name}: {error_text(exc)}")

    def _create(self) -> None:
        wanted = {self._new_name(): self.random.randint(1, 3) for _ in range(self.random.randint(1, 2))}
        self.requested.update(wanted)
        futures = self.admin.create_topics([NewTopic(n, p, 1) for n, p in wanted.items()])
        self._settle("create", outcomes(futures, timeout_s=HANG_GUARD_S), lambda n: self.model.update({n: wanted[n]}))

    def _grow(self, names: list[str]) -> None:
        totals = {n: self.model[n] + self.random.randint(1, 2) for n in names}
        futures = self.admin.create_partitions([NewPartitions(n, c) for n, c in totals.items()])
        self._settle("grow", outcomes(futures, timeout_s=HANG_GUARD_S), lambda n: self.model.update({n: totals[n]}))

    def _delete(self, names: list[str]) -> None:
        futures = self.admin.delete_topics(names)
        self._settle("delete", outcomes(futures, timeout_s=HANG_GUARD_S), self.model.pop)


@pytest.mark.slow
def test_32_threads_x_100_mixed_calls_under_a_strict_quota(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=1500, quota_window_num=1, enforcement="strict")
    admin = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}, default_api_timeout_ms=120000)
    workers = [_Worker(admin, i) for i in range(THREADS)]
    crashed: list[BaseException] = []

    def run(worker: _Worker) -> None:
        try:
            worker.run()
        except BaseException as exc:  # a hang shows up as TimeoutError from future.exception(timeout)
            crashed.append(exc)

    threads = [threading.Thread(target=run, args=(w,), name=f"load-{w.index}", daemon=True) for w in workers]
    faulthandler.dump_traceback_later(HANG_GUARD_S, exit=False, file=sys.stderr)
    started = time.monotonic()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(HANG_GUARD_S + 30)
        elapsed_s = time.monotonic() - started
        assert not any(t.is_alive() for t in threads), "a worker hung (see the tracebacks faulthandler dumped)"
        metrics = admin.metrics()
    finally:
        faulthandler.cancel_dump_traceback_later()
        admin.close()
    assert crashed == []
    calls = sum((w.calls for w in workers), Counter())
    assert sum(calls.values()) == THREADS * CALLS_PER_THREAD
    assert min(calls.values()) > 500  # all three kinds ran

    # The broker holds exactly what the client reported.
    held = broker.topics()
    expected: dict[str, int] = {}
    for worker in workers:
        expected.update(worker.model)
    unknown = {name for w in workers for name in w.unknown}
    assert {n: c for n, c in held.items() if n not in unknown} == {
        n: c for n, c in expected.items() if n not in unknown
    }
    # Nothing needed to fail: a two-minute deadline and a queue of at most 64 topics.
    failures = [f for w in workers for f in w.failures]
    assert failures == [], failures[:10]

    # The counters add up to the broker's request log.
    log = mutation_requests(broker)
    assert metrics["request-total"] == len(log)
    # Without mutation_quota the client knows the cost of creates only (docs/metrics.md): their partitions, for
    # every topic sent, throttled ones included.
    requested = {name: count for w in workers for name, count in w.requested.items()}
    sent_creates = sum(requested[name] for r in log if r.api_key == 19 for name in r.errors)
    assert metrics["mutations-sent-total"] == sent_creates
    throttled = sum(1 for r in log for code in r.errors.values() if code == KafkaError.THROTTLING_QUOTA_EXCEEDED)
    assert throttled > 0, "the quota never bit: raise the load or lower the rate"
    assert metrics["quota-violation-total"] == throttled  # each refusal of each topic, nothing refused locally
    retried = sum(1 for r in log if KafkaError.THROTTLING_QUOTA_EXCEEDED in r.errors.values())
    assert metrics["retry-total"] == retried
    assert all(r.held_s < 0.5 for r in log), "a request waited in a muted connection"
    print(f"\n{THREADS * CALLS_PER_THREAD} calls, {len(log)} requests, {throttled} throttled topics, {elapsed_s:.1f} s")
