"""AIOThrottledAdminClient end to end against QuotaBroker: throttling, retries, cancellation, concurrency."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from throttled_admin import ThrottledAdminClient
from throttled_admin.admin import ClusterMetadata, ConfigResource, NewPartitions, NewTopic, ResourceType
from throttled_admin.aio import AIOThrottledAdminClient
from throttled_admin.testing import QuotaBroker

Broker = Callable[..., QuotaBroker]
CREATE_TOPICS = 19


def conf(broker: QuotaBroker) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_servers}


def sent_topics(broker: QuotaBroker) -> set[str]:
    """Every topic a CreateTopics request named, as far as the request log shows it: created, or refused."""
    names = set(broker.topics())
    for record in broker.request_log():
        if record.api_key == CREATE_TOPICS:
            names |= set(record.errors)
    return names


def creates(broker: QuotaBroker) -> list[Any]:
    return [r for r in broker.request_log() if r.api_key == CREATE_TOPICS]


async def throttle_the_broker(admin: AIOThrottledAdminClient, broker: QuotaBroker) -> None:
    """Burst 1 at 1 mutation/s (``throttling_broker``): a 3-partition topic leaves the bucket at -2, so the
    broker's response carries a throttle of about 2 s and the client sends nothing more until it has passed
    (KIP-219). Kafka's permissive quota (librdkafka's CreateTopics v4) reports it; a strict one would answer
    0 for an admitted request, as Kafka 4.4 does."""
    futures = await admin.create_topics([NewTopic("first", 3, 1)])
    await futures["first"]
    assert creates(broker)[-1].throttle_time_ms > 1000


def strict_broker(quota_broker: Broker) -> QuotaBroker:
    return quota_broker(controller_mutation_rate=1, quota_window_num=1, enforcement="strict")


def throttling_broker(quota_broker: Broker) -> QuotaBroker:
    """Apache Kafka's dialect: librdkafka's requests are admitted and answered with their throttle."""
    return quota_broker(controller_mutation_rate=1, quota_window_num=1)


@pytest.mark.asyncio
async def test_create_grow_delete_and_the_other_methods(quota_broker: Broker) -> None:
    broker = quota_broker()
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        # An int config value, as confluent-kafka takes it: sent as the string "1000".
        config: dict[str, Any] = {"retention.ms": 1000}  # confluent-kafka's stub says str values; it takes ints
        created = await admin.create_topics([NewTopic("a", 1, 1, config=config), NewTopic("b", 2, 1)])
        assert set(created) == {"a", "b"}
        assert all(isinstance(f, asyncio.Future) for f in created.values())
        assert await asyncio.gather(*created.values()) == [None, None]

        configs = await admin.describe_configs([ConfigResource(ResourceType.TOPIC, "a")], request_timeout=30)
        (config_future,) = configs.values()
        assert isinstance(config_future, asyncio.Future)
        assert (await config_future)["retention.ms"].value == "1000"
        cluster = await (await admin.describe_cluster(request_timeout=30))
        assert [node.id for node in cluster.nodes] == [0]

        grown = await admin.create_partitions([NewPartitions("a", 3)])
        await grown["a"]
        metadata = await admin.list_topics(timeout=10)
        assert isinstance(metadata, ClusterMetadata)
        assert len(metadata.topics["a"].partitions) == 3

        deleted = await admin.delete_topics(["b"])
        await deleted["b"]
        again = await admin.create_topics([NewTopic("a", 1, 1)])
        with pytest.raises(KafkaException) as info:
            await again["a"]
        assert info.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    assert broker.topics() == {"a": 3}
    assert admin.closed


def test_every_admin_client_method_is_a_coroutine() -> None:
    for name in dir(AdminClient):
        if name.startswith("_"):
            continue
        method = getattr(AIOThrottledAdminClient, name, None)
        assert method is not None, f"AIOThrottledAdminClient has no {name}"
        assert inspect.iscoroutinefunction(method), name


@pytest.mark.asyncio
async def test_throttled_topics_are_retried_without_blocking_the_loop(quota_broker: Broker) -> None:
    broker = strict_broker(quota_broker)
    ticks: list[float] = []

    async def heartbeat() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    beat = asyncio.create_task(heartbeat())
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        started = time.monotonic()
        futures = await admin.create_topics([NewTopic(f"t{i}", 1, 1) for i in range(4)])
        queued_in_s = time.monotonic() - started
        await asyncio.gather(*futures.values())
        took_s = time.monotonic() - started
        metrics = admin.metrics()
    beat.cancel()
    assert broker.topics() == {f"t{i}": 1 for i in range(4)}
    # Burst 1 at 1/s: four topics need throttle waits of about 3 s in all, spent off the loop.
    assert took_s > 2.0
    assert queued_in_s < took_s / 2
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert max(gaps) < 1.0, "the event loop was blocked"
    assert len(creates(broker)) >= 2
    assert metrics["retry-total"] >= 1 or metrics["quota-violation-total"] >= 1


@pytest.mark.asyncio
async def test_cancelling_the_awaiting_task_withdraws_unsent_topics(quota_broker: Broker) -> None:
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)

        futures = await admin.create_topics([NewTopic("w1", 1, 1), NewTopic("w2", 1, 1)])
        waiter = asyncio.ensure_future(asyncio.gather(*futures.values()))
        [first] = creates(broker)
        assert first.responded_at is not None
        waiter.cancel()
        # Mid-throttle (the client waits it out from the answer on): w1 and w2 are queued, not sent.
        assert time.monotonic() < first.responded_at + first.throttle_time_ms / 1000
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert all(f.cancelled() for f in futures.values())

        # A later call goes out after the throttle; the withdrawn topics would have gone before it.
        after = await admin.create_topics([NewTopic("after", 1, 1)])
        await after["after"]
    assert broker.topics() == {"first": 3, "after": 1}
    assert sent_topics(broker) == {"first", "after"}
    assert sum(r.mutations for r in creates(broker)) == 4


@pytest.mark.asyncio
@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout and Task.cancelling are Python 3.11+")
async def test_asyncio_timeout_withdraws_the_whole_call(quota_broker: Broker) -> None:
    timeout = asyncio.timeout  # type: ignore[attr-defined,unused-ignore]
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)

        futures = await admin.create_topics([NewTopic("x1", 1, 1), NewTopic("x2", 1, 1), NewTopic("x3", 1, 1)])
        started = time.monotonic()

        async def await_one_by_one() -> None:
            async with timeout(0.3):
                for future in futures.values():  # awaited one by one: still the whole call is withdrawn
                    await future

        with pytest.raises(TimeoutError):
            await await_one_by_one()
        assert time.monotonic() - started < 1.5, "the call did not stop waiting at once"
        assert all(f.cancelled() for f in futures.values())

        after = await admin.create_topics([NewTopic("after", 1, 1)])
        await after["after"]
    assert sent_topics(broker) == {"first", "after"}


@pytest.mark.asyncio
@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout and Task.cancelling are Python 3.11+")
async def test_a_task_timed_out_in_wait_for_withdraws_the_whole_call(quota_broker: Broker) -> None:
    """Review 136: on Python 3.11, ``wait_for`` cancels the future it waits on from the task itself, as the task's
    cancel unwinds: that is the task's cancel, not its own cancel of one topic (9df16f5 withdrew x1 alone)."""
    timeout = asyncio.timeout  # type: ignore[attr-defined,unused-ignore]
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)
        futures = await admin.create_topics([NewTopic("x1", 1, 1), NewTopic("x2", 1, 1), NewTopic("x3", 1, 1)])

        async def await_one() -> None:
            async with timeout(0.3):
                await asyncio.wait_for(futures["x1"], 30)

        with pytest.raises(TimeoutError):
            await await_one()
        assert all(f.cancelled() for f in futures.values()), {name: f.cancelled() for name, f in futures.items()}
        after = await admin.create_topics([NewTopic("after", 1, 1)])
        await after["after"]
    assert sent_topics(broker) == {"first", "after"}


@pytest.mark.asyncio
@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout and Task.cancelling are Python 3.11+")
async def test_a_large_call_is_withdrawn_whole_when_its_task_times_out(quota_broker: Broker) -> None:
    """Each asyncio future's cancel() reports to its call's group, which cancels the others: with thousands of
    topics that must not recurse once per topic."""
    timeout = asyncio.timeout  # type: ignore[attr-defined,unused-ignore]
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)
        futures = await admin.create_topics([NewTopic(f"big.{i}", 1, 1) for i in range(3000)])

        async def await_all() -> None:
            async with timeout(0.3):
                await asyncio.gather(*futures.values())

        with pytest.raises(TimeoutError):
            await await_all()
        assert all(f.cancelled() for f in futures.values())
    assert sent_topics(broker) == {"first"}


@pytest.mark.asyncio
async def test_cancelling_one_future_withdraws_that_topic_only(quota_broker: Broker) -> None:
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)

        futures = await admin.create_topics([NewTopic("keep", 1, 1), NewTopic("drop", 1, 1)])
        assert futures["drop"].cancel()
        await futures["keep"]
    assert futures["drop"].cancelled()
    assert broker.topics() == {"first": 3, "keep": 1}
    assert "drop" not in sent_topics(broker)


@pytest.mark.asyncio
@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling is Python 3.11+")
async def test_a_task_that_caught_a_cancel_still_withdraws_one_topic_alone(quota_broker: Broker) -> None:
    """A cancel the task caught before the call (no ``uncancel()``: ``Task.cancelling()`` stays 1) is not the call's:
    cancelling one of its futures withdraws that topic alone, and a cancel after the call still withdraws it whole
    (as ``asyncio.timeout`` tells its own cancel by the count at its start). Found by an adversarial probe: 'keep' was
    withdrawn with 'drop'."""
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)
        called, calls = asyncio.Event(), []

        async def worker() -> None:
            with contextlib.suppress(asyncio.CancelledError):  # a shutdown the worker chose to finish its work on
                await asyncio.Event().wait()
            futures = await admin.create_topics([NewTopic("keep", 1, 1), NewTopic("drop", 1, 1)])
            assert futures["drop"].cancel()
            await futures["keep"]
            calls.append(await admin.create_topics([NewTopic("late.1", 1, 1), NewTopic("late.2", 1, 1)]))
            called.set()
            await asyncio.gather(*calls[0].values())

        task = asyncio.create_task(worker())
        await asyncio.sleep(0)  # (the task starts waiting)
        task.cancel()
        second = asyncio.ensure_future(called.wait())
        await asyncio.wait([task, second], return_when=asyncio.FIRST_COMPLETED)
        assert called.is_set(), "cancelling 'drop' withdrew 'keep' too" if task.cancelled() else task
        task.cancel()  # cancelled after its second call: that call is withdrawn whole
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all(f.cancelled() for f in calls[0].values())
    assert broker.topics() == {"first": 3, "keep": 1}
    assert sent_topics(broker) == {"first", "keep"}


@pytest.mark.asyncio
@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling is Python 3.11+")
async def test_a_task_that_catches_a_cancel_after_its_call_still_withdraws_one_topic_alone(
    quota_broker: Broker,
) -> None:
    """Review 135: the same with the cancel caught after the call: the task's own cancel of one future is that
    topic's alone, whatever its count of cancel requests says."""
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)
        waiting = asyncio.Event()

        async def worker() -> dict[str, asyncio.Future[None]]:
            futures = await admin.create_topics([NewTopic("keep", 1, 1), NewTopic("drop", 1, 1)])
            with contextlib.suppress(asyncio.CancelledError):  # an unrelated wait, cancelled and caught
                waiting.set()
                await asyncio.Event().wait()
            assert futures["drop"].cancel()
            await futures["keep"]
            return futures

        task = asyncio.create_task(worker())
        await waiting.wait()
        task.cancel()
        futures = await task
        assert futures["drop"].cancelled()
    assert broker.topics() == {"first": 3, "keep": 1}
    assert sent_topics(broker) == {"first", "keep"}


@pytest.mark.asyncio
@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling is Python 3.11+")
async def test_a_clean_up_call_made_where_a_task_caught_its_cancel_is_not_withdrawn(quota_broker: Broker) -> None:
    """Review 135: a call made in the task's ``except CancelledError:`` before it re-raises is not withdrawn when the
    task ends cancelled by that same cancel (one requested after the call would withdraw it)."""
    broker = throttling_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        await throttle_the_broker(admin, broker)
        made: list[dict[str, asyncio.Future[None]]] = []
        waiting = asyncio.Event()

        async def worker() -> None:
            try:
                waiting.set()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                made.append(await admin.create_topics([NewTopic("cleanup", 1, 1)]))
                raise

        task = asyncio.create_task(worker())
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await made[0]["cleanup"]
    assert broker.topics() == {"first": 3, "cleanup": 1}


@pytest.mark.asyncio
async def test_a_throttled_topic_waiting_to_be_resent_is_withdrawn(quota_broker: Broker) -> None:
    broker = strict_broker(quota_broker)
    async with AIOThrottledAdminClient(conf(broker)) as admin:
        futures = await admin.create_topics([NewTopic("big", 3, 1), NewTopic("again", 1, 1)])
        await futures["big"]  # admitted; "again" was refused with error 89 in the same response
        assert creates(broker)[0].errors == {"big": 0, "again": 89}
        assert futures["again"].cancel()
        after = await admin.create_topics([NewTopic("after", 1, 1)])
        await after["after"]
    assert broker.topics() == {"big": 3, "after": 1}
    assert [r.errors for r in creates(broker)][1:] == [{"after": 0}]


@pytest.mark.asyncio
async def test_two_hundred_concurrent_tasks(quota_broker: Broker) -> None:
    broker = quota_broker(controller_mutation_rate=100, quota_window_num=1, enforcement="strict")

    async def provision(admin: AIOThrottledAdminClient, i: int) -> None:
        futures = await admin.create_topics([NewTopic(f"task-{i}", 1, 1)])
        await futures[f"task-{i}"]

    async with AIOThrottledAdminClient(conf(broker), default_api_timeout_ms=120000) as admin:
        results = await asyncio.gather(*(provision(admin, i) for i in range(200)), return_exceptions=True)
        metrics = admin.metrics()
    assert [r for r in results if r is not None] == []
    assert broker.topics() == {f"task-{i}": 1 for i in range(200)}
    assert sum(r.mutations for r in creates(broker)) == 200
    assert metrics["quota-violation-total"] >= 1  # 200 mutations against a burst of 100: throttled, then retried


# Run in a fresh interpreter: threads other tests leave winding down would move the baseline.
LEAK_CHECK = """
import asyncio, gc, os, sys, threading, time
from throttled_admin.admin import NewTopic
from throttled_admin.aio import AIOThrottledAdminClient

def resources():
    return len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))

async def cycle(i):
    async with AIOThrottledAdminClient({"bootstrap.servers": sys.argv[1]}) as admin:
        futures = await admin.create_topics([NewTopic(f"leak-{i}", 1, 1)])
        await futures[f"leak-{i}"]
        await admin.list_topics(timeout=10)

async def main():
    for i in range(3):  # warm up: librdkafka's globals
        await cycle(i)
    # The loop's default executor (used by close()) grows its threads lazily, up to min(32, cpus + 4); grow it
    # to its size first, so a thread counted afterwards is one a client left behind. The jobs wait for each
    # other: on a loaded machine a job that finished early would be reused and the pool would stay smaller.
    loop = asyncio.get_running_loop()
    size = min(32, os.cpu_count() + 4)
    barrier = threading.Barrier(size)
    await asyncio.gather(*(loop.run_in_executor(None, barrier.wait, 60) for _ in range(size)))
    # The warm-up's threads, joined, may still be listed (below): counted in ``before``, they made it one more than
    # after (CI, Python 3.10). Every thread left is then Python's (the pool's, this one).
    settled = time.monotonic() + 10
    while resources()[0] != threading.active_count() and time.monotonic() < settled:
        await asyncio.sleep(0.05)
    before = resources()
    for i in range(3, 33):
        await cycle(i)
    # A joined thread is gone for Python before the OS has reaped it; on a loaded machine /proc still lists it
    # for a moment. A thread left behind stays: 10 s is ample either way.
    settled = time.monotonic() + 10
    while resources() != before and time.monotonic() < settled:
        await asyncio.sleep(0.05)
    print(*before, *resources())

gc.disable()  # no reference cycle may be needed to release a client
asyncio.run(main())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts OS threads through /proc")
def test_thirty_clients_leave_no_threads_or_sockets_behind(quota_broker: Broker) -> None:
    broker = quota_broker()
    done = subprocess.run(
        [sys.executable, "-c", LEAK_CHECK, broker.bootstrap_servers], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    threads_before, fds_before, threads_after, fds_after = map(int, done.stdout.split())
    assert threads_after == threads_before, "OS threads left behind"
    assert fds_after == fds_before, "file descriptors (sockets) left behind"
    assert len(broker.topics()) == 33


@pytest.mark.asyncio
async def test_shares_the_sync_clients_scheduler_and_metrics(quota_broker: Broker) -> None:
    broker = quota_broker()
    with ThrottledAdminClient(conf(broker)) as sync:
        admin = AIOThrottledAdminClient.wrap(sync)
        futures = await admin.create_topics([NewTopic("shared", 1, 1)])
        await futures["shared"]
        sync.create_topics([NewTopic("sync", 1, 1)])["sync"].result(timeout=30)
        assert admin.metrics()["request-total"] == sync.metrics()["request-total"] >= 2
        await admin.close()
        assert not sync.closed  # wrap() leaves the client to whoever created it
        with pytest.raises(RuntimeError, match="closed"):
            await admin.create_topics([NewTopic("late", 1, 1)])
    assert broker.topics() == {"shared": 1, "sync": 1}


@pytest.mark.asyncio
async def test_a_close_while_another_is_under_way_returns_once_that_one_has_ended(quota_broker: Broker) -> None:
    """An adversarial run (helper 109): a second `await admin.close()` returned at once, the first still closing, the
    call's futures pending; the sync client's close() waits for another thread's."""
    broker = throttling_broker(quota_broker)
    admin = AIOThrottledAdminClient(conf(broker))
    await throttle_the_broker(admin, broker)
    futures = await admin.create_topics([NewTopic(f"pending.{i}", 1, 1) for i in range(3)])
    first = asyncio.create_task(admin.close())
    await asyncio.sleep(0)  # (the first close under way: it has marked the client closed)
    assert admin.closed
    await admin.close()
    assert admin.sync_client.closed
    assert all(future.done() for future in futures.values()), futures
    assert all(isinstance(future.exception(), KafkaException) for future in futures.values())
    await first


@pytest.mark.asyncio
async def test_close_fails_pending_topics_and_coroutine_callbacks_run_on_the_loop(quota_broker: Broker) -> None:
    broker = throttling_broker(quota_broker)
    loop = asyncio.get_running_loop()
    throttles: list[tuple[Any, bool]] = []

    async def throttle_cb(event: Any) -> None:
        throttles.append((event, asyncio.get_running_loop() is loop))

    admin = AIOThrottledAdminClient({**conf(broker), "throttle_cb": throttle_cb})
    await throttle_the_broker(admin, broker)
    futures = await admin.create_topics([NewTopic("pending", 1, 1)])
    await admin.close()
    with pytest.raises(KafkaException) as info:
        await futures["pending"]
    assert info.value.args[0].name() == "_DESTROY"
    await asyncio.sleep(0.1)
    assert throttles, "the throttle_cb coroutine never ran"
    assert all(on_loop for _, on_loop in throttles)
    assert "pending" not in sent_topics(broker)
