"""QuotaBroker's controller and Python's garbage collector (``_server.collections_held``): a broker that owns its
process (``python -m throttled_admin.testing``) handles each mutation with the collector off, so that a request's
decoded topics are never walked as old objects (a topic cost more the larger its request was); one that shares its
process leaves the process-wide switch alone. Observed from inside the controller: the cluster's create, as each
topic of a real CreateTopics request over the wire reaches it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from throttled_admin.testing import QuotaBroker
from throttled_admin.testing.__main__ import build_parser, make_broker
from throttled_admin.testing._cluster import Cluster
from throttled_admin.testing._server import collections_held


@pytest.fixture
def collector_seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Whether the collector was on as the controller created each topic; the collector on again after the test."""
    seen: list[bool] = []
    create = Cluster.create

    def noting(self: Cluster, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return create(self, *args, **kwargs)

    monkeypatch.setattr(Cluster, "create", noting)
    gc.enable()  # (whatever an earlier test left)
    try:
        yield seen
    finally:
        gc.enable()


def _create(broker: QuotaBroker, count: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
    futures = admin.create_topics([NewTopic(f"t{i}", 1, 1) for i in range(count)], request_timeout=30)
    for future in futures.values():
        future.result(timeout=30)


def test_a_broker_that_owns_its_process_creates_with_the_collector_off_and_turns_it_on_after(
    collector_seen: list[bool],
) -> None:
    with QuotaBroker(owns_process=True) as broker:
        _create(broker, 3)
        assert collector_seen == [False, False, False]
        assert gc.isenabled()
        assert broker.topics() == {"t0": 1, "t1": 1, "t2": 1}


def test_a_broker_that_shares_its_process_leaves_the_collector_on(collector_seen: list[bool]) -> None:
    with QuotaBroker() as broker:
        _create(broker, 2)
    assert collector_seen == [True, True]
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off(collector_seen: list[bool]) -> None:
    with QuotaBroker(owns_process=True) as broker:
        gc.disable()
        _create(broker, 2)
        assert not gc.isenabled()  # (not turned on by the broker's controller)
    assert collector_seen == [False, False]


def test_a_mutation_that_raises_turns_the_collector_on_again() -> None:
    def failing(received_at: float) -> None:
        assert not gc.isenabled()
        raise RuntimeError(f"handled at {received_at}")

    gc.enable()
    try:
        with pytest.raises(RuntimeError, match=r"handled at 1\.5"):
            collections_held(failing)(1.5)
        assert gc.isenabled()
    finally:
        gc.enable()


def test_the_standalone_broker_owns_its_process() -> None:
    assert make_broker(build_parser().parse_args(["--port", "0"])).owns_process
    assert not QuotaBroker().owns_process
