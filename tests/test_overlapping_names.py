"""Finding 1 of the scheduler issue: calls whose topic names overlap, end to end against QuotaBroker.

Kafka 4 answers a request that names a topic twice with one result for that name (INVALID_REQUEST "Duplicate
topic name."), and confluent-kafka's response parser then crashes on the missing slot (SIGSEGV). So each run
is a child process: a crash fails the test instead of taking pytest down with it. Rule (a): a name is in at
most one request and held by one call at a time; a later call touching it waits, then gets its own answer."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaException

from tests.support import REPO
from throttled_admin import NewTopic
from throttled_admin.aio import AIOThrottledAdminClient
from throttled_admin.testing import QuotaBroker

pytestmark = pytest.mark.slow

_SCRIPT = textwrap.dedent(
    """
    import json, random, sys, threading
    from confluent_kafka.admin import NewPartitions
    from throttled_admin import NewTopic, ThrottledAdminClient
    from throttled_admin.testing import QuotaBroker

    operations = sys.argv[1].split(",")
    threads, calls = int(sys.argv[2]), int(sys.argv[3])
    names = [f"t{i}" for i in range(8)]
    results = []
    with QuotaBroker() as broker:
        with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            def work(seed):
                rng = random.Random(seed)
                for _ in range(calls):
                    chosen = rng.sample(names, rng.randint(1, 3))
                    operation = rng.choice(operations)
                    if operation == "create":
                        futures = admin.create_topics([NewTopic(n, 1, 1) for n in chosen], timeout_ms=30000)
                    elif operation == "delete":
                        futures = admin.delete_topics(chosen, timeout_ms=30000)
                    else:
                        futures = admin.create_partitions(
                            [NewPartitions(n, rng.randint(2, 4)) for n in chosen], timeout_ms=30000
                        )
                    for name, future in futures.items():
                        exc = future.exception(60)
                        results.append([operation, name, None if exc is None else exc.args[0].name()])
            workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
        print(json.dumps({"results": results, "held": sorted(broker.topics())}))
    """
)

# Each operation's answers when the name's state allows or refuses it: never INVALID_REQUEST, which the
# broker gives only to a request naming a topic twice.
_TRUTHFUL = {
    "create": {None, "TOPIC_ALREADY_EXISTS"},
    "delete": {None, "UNKNOWN_TOPIC_OR_PART"},
    "grow": {None, "UNKNOWN_TOPIC_OR_PART", "INVALID_PARTITIONS"},
}


@pytest.mark.parametrize("operations", ["create", "delete", "grow", "create,delete,grow"])
def test_concurrent_calls_with_overlapping_names_never_crash_and_each_gets_its_own_answer(operations: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _SCRIPT, operations, "16", "40"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-2000:]}"
    report = json.loads(run.stdout.strip().splitlines()[-1])
    results = report["results"]
    assert len(results) >= 16 * 40
    for operation, name, error in results:
        assert error in _TRUTHFUL[operation], f"{operation} {name}: {error}"
    if operations == "create":
        # every name was asked for again and again: it exists, and it was created exactly once
        assert report["held"] == [f"t{i}" for i in range(8)]
        created = [name for operation, name, error in results if error is None]
        assert sorted(created) == report["held"]


@pytest.mark.asyncio
async def test_asyncio_tasks_over_shared_names_each_create_once_and_the_rest_are_told_it_exists(
    quota_broker: Callable[..., QuotaBroker],
) -> None:
    broker = quota_broker()
    names = [f"n{i}" for i in range(4)]
    async with AIOThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:

        async def create(task: int) -> dict[str, str | None]:
            futures = await admin.create_topics([NewTopic(n, 1, 1) for n in names[task % 2 :]], timeout_ms=30000)
            out: dict[str, str | None] = {}
            for name, future in futures.items():
                try:
                    await future
                    out[name] = None
                except KafkaException as exc:
                    out[name] = exc.args[0].name()
            return out

        answers = await asyncio.gather(*(create(task) for task in range(8)))
    assert sorted(broker.topics()) == names
    for name in names:
        told = [answer[name] for answer in answers if name in answer]
        assert told.count(None) == 1, f"{name}: {told}"  # created by exactly one task
        assert set(told) == {None, "TOPIC_ALREADY_EXISTS"}
