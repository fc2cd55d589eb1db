"""QuotaBroker(metadata_lag_ms=...): every node but the controller shows a topic change (create, grow, delete)
that much later in its Metadata answers, as a KRaft broker replaying the metadata log; the controller's
decisions are immediate. On a fake clock (the cluster) and over loopback, asking each broker directly with
kafka-python's protocol classes."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kafka.protocol.admin.topics import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support import BrokerFactory
from tests.wire import WireClient
from throttled_admin.testing import QuotaBroker
from throttled_admin.testing._cluster import ApiError, Cluster, CreateSpec
from throttled_admin.testing._quotas import QuotaManager

UNKNOWN_TOPIC, TOPIC_ALREADY_EXISTS = 3, 36
MISSING = ApiError(UNKNOWN_TOPIC)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def shown(cluster: Cluster, node: int) -> dict[str, int]:
    with cluster.lock:
        view = cluster.metadata_view(node)
        return {name: len(topic.replicas) for name in view.names() if (topic := view.get(name)) is not None}


def test_each_change_reaches_the_other_nodes_after_the_lag() -> None:
    clock = Clock()
    cluster = Cluster([0, 1, 2], metadata_lag_s=0.8, clock=clock)
    quota = QuotaManager(window_num=11, window_size_s=1.0, clock=clock).request_quota("u", "", strict=False)
    cluster.create(CreateSpec("a", 2, 1), quota, validate_only=False)
    assert shown(cluster, 0) == {"a": 2}
    assert shown(cluster, 1) == shown(cluster, 2) == {}
    clock.now += 0.5
    cluster.create_partitions("a", 5, None, quota, validate_only=False)
    clock.now += 0.3  # the create is 0.8 s old, the grow 0.3 s
    assert shown(cluster, 1) == {"a": 2}
    clock.now += 0.5
    assert shown(cluster, 1) == {"a": 5}
    topic = cluster.topics["a"]
    cluster.delete_topic(topic, quota, missing=MISSING)
    assert shown(cluster, 0) == {}
    with cluster.lock:
        by_id = cluster.metadata_view(2).by_id(topic.topic_id)
    assert by_id is not None
    assert by_id.name == "a"  # still known by id until the delete arrives
    assert shown(cluster, 2) == {"a": 5}
    clock.now += 0.8
    assert shown(cluster, 1) == shown(cluster, 2) == {}


def test_delete_then_recreate_shows_the_old_topic_then_the_new_one() -> None:
    clock = Clock()
    cluster = Cluster([0, 1], metadata_lag_s=1.0, clock=clock)
    quota = QuotaManager(window_num=11, window_size_s=1.0, clock=clock).request_quota("u", "", strict=False)
    cluster.create_topic(CreateSpec("t", 1, 1), quota, validate_only=False)  # set-up: seen at once
    old_id = cluster.topics["t"].topic_id
    assert shown(cluster, 1) == {"t": 1}
    cluster.delete_topic(cluster.topics["t"], quota, missing=MISSING)
    clock.now += 0.5
    cluster.create(CreateSpec("t", 3, 1), quota, validate_only=False)
    with cluster.lock:
        view = cluster.metadata_view(1)
        shown_t = view.get("t")
        assert shown_t is not None
        assert shown_t.topic_id == old_id
        assert view.by_id(cluster.topics["t"].topic_id) is None
    clock.now += 0.6
    assert shown(cluster, 1) == {}  # the delete arrived, the create not yet
    clock.now += 0.5
    assert shown(cluster, 1) == {"t": 3}


def metadata(*names: str) -> Any:
    T = MetadataRequest.MetadataRequestTopic
    return MetadataRequest(
        version=12,
        topics=[T(name=n, topic_id=uuid.UUID(int=0)) for n in names],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def listed(broker: QuotaBroker, node: int, *names: str) -> dict[str, int]:
    """Ask node ``node`` directly: topic -> partitions it lists with a leader for each (absent when unknown)."""
    with WireClient(f"127.0.0.1:{broker.ports[node]}") as wire:
        response = wire.request(metadata(*names))
    return {
        t.name: len(t.partitions)
        for t in response.topics
        if t.error_code == 0 and all(p.leader_id >= 0 for p in t.partitions)
    }


def test_brokers_asked_directly_list_a_change_only_after_the_lag(quota_broker: BrokerFactory) -> None:
    lag_s = 1.5
    broker = quota_broker(num_brokers=3, metadata_lag_ms=lag_s * 1000)
    T = CreateTopicsRequest.CreatableTopic
    with WireClient(f"127.0.0.1:{broker.ports[2]}") as wire:  # sent to a follower: forwarded, decided at once
        created = wire.request(
            CreateTopicsRequest(
                version=7,
                topics=[T(name="t", num_partitions=2, replication_factor=3, assignments=[], configs=[])],
                timeout_ms=30000,
                validate_only=False,
            )
        )
        again = wire.request(
            CreateTopicsRequest(
                version=7,
                topics=[T(name="t", num_partitions=2, replication_factor=3, assignments=[], configs=[])],
                timeout_ms=30000,
                validate_only=False,
            )
        )
    answered = time.monotonic()
    assert created.topics[0].error_code == 0
    assert again.topics[0].error_code == TOPIC_ALREADY_EXISTS  # the controller knows at once
    assert listed(broker, 0, "t") == {"t": 2}
    assert listed(broker, 1, "t") == listed(broker, 2, "t") == {}
    first_seen: dict[int, float] = {}
    deadline = answered + 10
    while len(first_seen) < 2 and time.monotonic() < deadline:
        for node in (1, 2):
            if node not in first_seen and listed(broker, node, "t") == {"t": 2}:
                first_seen[node] = time.monotonic()
        time.sleep(0.05)  # polling, as a client does: no event tells a client a broker has caught up
    assert set(first_seen) == {1, 2}
    assert all(seen >= answered + lag_s - 0.05 for seen in first_seen.values())  # never earlier than the lag

    # A grow and a delete take the same path.
    P = CreatePartitionsRequest.CreatePartitionsTopic
    with WireClient(broker.bootstrap_servers) as wire:
        grown = wire.request(
            CreatePartitionsRequest(
                version=3, topics=[P(name="t", count=4, assignments=None)], timeout_ms=30000, validate_only=False
            )
        )
    assert grown.results[0].error_code == 0
    assert listed(broker, 0, "t") == {"t": 4}
    assert listed(broker, 1, "t") == {"t": 2}
    with WireClient(broker.bootstrap_servers) as wire:
        deleted = wire.request(DeleteTopicsRequest(version=4, topic_names=["t"], timeout_ms=30000))
    assert deleted.responses[0].error_code == 0
    assert listed(broker, 0, "t") == {}
    assert listed(broker, 2, "t") == {"t": 2}


def test_without_a_lag_every_node_is_current(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(num_brokers=3)
    broker.create_topic("set.up", 2)
    with WireClient(broker.bootstrap_servers) as wire:
        T = CreateTopicsRequest.CreatableTopic
        wire.request(
            CreateTopicsRequest(
                version=7,
                topics=[T(name="t", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
                timeout_ms=30000,
                validate_only=False,
            )
        )
    assert all(listed(broker, node, "t", "set.up") == {"t": 1, "set.up": 2} for node in range(3))


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "800"])
def test_metadata_lag_is_validated(bad: Any) -> None:
    with pytest.raises(ValueError, match="metadata_lag_ms must be a finite number of milliseconds >= 0"):
        QuotaBroker(metadata_lag_ms=bad)
