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
from typing import Any

import pytest
from confluent_kafka import KafkaError

from tests.reliability_helpers import assert_truthful, error_code, error_text, hedged, mutation_requests, outcomes
from tests.support import BrokerFactory, wait_until
from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient
from throttled_admin._engine.config import MAX_TOPICS_PER_REQUEST

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

    def _settle(self, kind: str, results: dict[str, BaseException | None], apply: Callable[[str], object]) -> None:
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


@pytest.mark.slow
def test_cancel_under_load_withdraws_only_what_was_not_sent(quota_broker: BrokerFactory) -> None:
    """8 threads fire creates without waiting and cancel about half of them at once, under a strict quota that
    keeps a queue: a cancel that returned True means the topic was never sent, so the broker must not hold it;
    every other topic resolves, truthfully, and every topic nobody cancelled is created. A topic cancelled in flight
    (cancel() returned False) is never sent again (rule j): a refusal settles it, with the refusal."""
    broker = quota_broker(controller_mutation_rate=200, quota_window_num=1, enforcement="strict")
    cancelled: dict[str, bool] = {}
    futures: dict[str, Any] = {}
    lock = threading.Lock()

    def fire(index: int) -> None:
        rng = random.Random(index)
        for call in range(25):
            names = [f"c{index}-{call}-{k}" for k in range(2)]
            submitted = admin.create_topics([NewTopic(n, 2, 1) for n in names])
            victim = rng.choice(names) if rng.random() < 0.5 else None
            with lock:
                futures.update(submitted)
                if victim is not None:
                    cancelled[victim] = submitted[victim].cancel()

    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        threads = [threading.Thread(target=fire, args=(i,), daemon=True) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(t.is_alive() for t in threads)
        results = {
            name: None if future.cancelled() else future.exception(HANG_GUARD_S) for name, future in futures.items()
        }
    held = broker.topics()
    withdrawn = {name for name, ok in cancelled.items() if ok}
    assert withdrawn, "nothing was still queued to withdraw: raise the load"
    assert all(futures[name].cancelled() for name in withdrawn)
    assert not withdrawn & set(held), "a withdrawn topic was sent"
    sent_topics = {t for r in mutation_requests(broker) for t in r.errors}
    assert not withdrawn & sent_topics
    others = {name: exc for name, exc in results.items() if name not in withdrawn}
    assert_truthful("create", others, held, wanted=dict.fromkeys(others, 2))
    kept = {name: exc for name, exc in others.items() if name not in cancelled}
    assert all(exc is None for exc in kept.values()), [error_text(e) for e in kept.values() if e][:5]
    cut_short = {name: exc for name, exc in others.items() if name in cancelled and exc is not None}
    assert all(error_code(exc) == KafkaError.THROTTLING_QUOTA_EXCEEDED for exc in cut_short.values()), [
        error_text(e) for e in cut_short.values()
    ][:5]


@pytest.mark.slow
def test_close_under_load(quota_broker: BrokerFactory) -> None:
    """8 threads keep submitting while another closes the client: every future resolves at once, submissions after
    close raise RuntimeError, and only the one request in flight can hold topics that failed with _DESTROY (whose
    message then says the outcome is unknown)."""
    broker = quota_broker(controller_mutation_rate=200, quota_window_num=1, enforcement="strict")
    broker.set_latency(0.05)
    admin = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures: dict[str, Any] = {}
    refused: list[str] = []
    lock = threading.Lock()

    def fire(index: int) -> None:
        for call in range(10_000):
            name = f"x{index}-{call}"
            try:
                submitted = admin.create_topics([NewTopic(name, 1, 1)])
            except RuntimeError as exc:
                refused.append(str(exc))
                return
            with lock:
                futures.update(submitted)
            time.sleep(0.002)

    threads = [threading.Thread(target=fire, args=(i,), daemon=True) for i in range(8)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    while len(broker.topics()) < 100 and time.monotonic() < deadline:
        time.sleep(0.02)
    admin.close()
    for thread in threads:
        thread.join(20)
    assert not any(t.is_alive() for t in threads)
    assert len(refused) == 8
    assert all("closed" in text for text in refused)
    results = outcomes(futures, timeout_s=5)
    # A request written just before close may reach the broker a moment later: read the broker once it is done
    # with the closed client's connections.
    assert wait_until(lambda: broker.open_connections() == 0, timeout_s=10)
    held = broker.topics()
    assert all(name in held for name, exc in results.items() if exc is None)
    destroyed = {name for name, exc in results.items() if exc is not None and error_code(exc) == KafkaError._DESTROY}
    assert destroyed, "nothing was pending at close: raise the load"
    assert all(exc is None or name in destroyed or hedged(exc) for name, exc in results.items())
    # _DESTROY topics the broker holds can only come from the one request in flight at close, and say so
    last = mutation_requests(broker)[-1]
    assert destroyed & set(held) <= set(last.errors)
    assert_truthful("create", results, held)


@pytest.mark.slow
def test_clients_sharing_one_quota(quota_broker: BrokerFactory) -> None:
    """Four clients of one principal (one token bucket) create 150 topics each at once: each is throttled by the
    others' mutations too, and every topic still succeeds by its deadline; no request waits in a muted
    connection."""
    broker = quota_broker(controller_mutation_rate=300, quota_window_num=1, enforcement="strict")
    clients = [
        ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "client.id": f"tenant-{i}"})
        for i in range(4)
    ]
    try:
        futures: dict[str, Any] = {}
        for i, admin in enumerate(clients):
            futures.update(admin.create_topics([NewTopic(f"shared-{i}-{k}", 2, 1) for k in range(150)]))
        results = outcomes(futures)
        metrics = [admin.metrics() for admin in clients]
    finally:
        for admin in clients:
            admin.close()
    assert results == dict.fromkeys(futures)
    assert broker.topics() == dict.fromkeys(futures, 2)
    log = mutation_requests(broker)
    assert sum(m["request-total"] for m in metrics) == len(log)
    assert sum(m["quota-violation-total"] > 0 for m in metrics) >= 2, "the clients did not contend for the quota"
    assert all(r.held_s < 0.5 for r in log)


@pytest.mark.slow
def test_one_call_of_more_topics_than_two_requests_carry(quota_broker: BrokerFactory) -> None:
    """More topics than one request carries (MAX_TOPICS_PER_REQUEST, 4000): split into requests in call order, all
    created."""
    broker = quota_broker()
    broker.hold_controller_next(2.0)  # the first request is with the controller long enough for the second to come
    names = [f"big-{i:04d}" for i in range(2 * MAX_TOPICS_PER_REQUEST + 1000)]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names])) == dict.fromkeys(names)
        assert outcomes(admin.delete_topics(names)) == dict.fromkeys(names)
    log = mutation_requests(broker)
    assert all(len(r.errors) <= MAX_TOPICS_PER_REQUEST for r in log)
    # two full requests and the rest, the second beside the first (it came before the first was answered) on the
    # second connection, once that connection answered its probe (``_engine/lanes``); in call order within each
    creates = [r for r in log if r.api_key == 19]
    full = MAX_TOPICS_PER_REQUEST
    assert [len(r.errors) for r in creates] == [full, full, 1000]
    assert creates[1].arrived_at < (creates[0].responded_at or 0)
    assert sorted(t for r in creates for t in r.errors) == names
    assert all(list(r.errors) == sorted(r.errors) for r in creates)
    assert broker.topics() == {}
