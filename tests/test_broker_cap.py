"""KRaft's cap on one operation as a setting, QuotaBroker(max_records_per_op=...): ReplicationControlManager's
validateTotalNumberOfPartitions ("Excessively large number of partitions per request.") and QuorumController's
bounded record list ("Unable to perform excessively large batch operation."), both POLICY_VIOLATION (44) for
every topic of the request, nothing applied; over loopback with confluent-kafka and kafka-python's protocol
classes."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.admin.topics import CreatePartitionsRequest, CreateTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support import BrokerFactory
from tests.wire import WireClient, standalone_broker
from throttled_admin.testing import QuotaBroker

POLICY_VIOLATION, INVALID_REQUEST = 44, 42
TOO_LARGE = "Unable to perform excessively large batch operation."
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


def create(*topics: tuple[str, int], configs: int = 0) -> Any:
    T = CreateTopicsRequest.CreatableTopic
    C = T.CreatableTopicConfig
    return CreateTopicsRequest(
        version=7,
        topics=[
            T(
                name=n,
                num_partitions=p,
                replication_factor=1,
                assignments=[],
                configs=[C(name="retention.ms", value="1000")] * configs,
            )
            for n, p in topics
        ],
        timeout_ms=30000,
        validate_only=False,
    )


def outcomes(response: Any) -> dict[str, tuple[int, str | None]]:
    entries = getattr(response, "topics", None) or response.results
    return {t.name: (t.error_code, t.error_message) for t in entries}


def test_bare_confluent_kafka_request_of_1500_topics_is_refused_whole_under_a_cap_of_2000(
    quota_broker: BrokerFactory,
) -> None:
    """1,500 one-partition topics are 1,500 partitions (under the cap) but 3,000 records (a TopicRecord and a
    PartitionRecord each): librdkafka sends them in one CreateTopics, and every topic fails, none created."""
    broker = quota_broker(max_records_per_op=2000)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures = admin.create_topics([NewTopic(f"t.{i:04d}", 1, 1) for i in range(1500)], operation_timeout=60)
    errors = []
    for future in futures.values():
        with pytest.raises(KafkaException) as refused:
            future.result(60)
        errors.append((refused.value.args[0].code(), refused.value.args[0].str()))
    assert set(errors) == {(KafkaError.POLICY_VIOLATION, TOO_LARGE)}
    assert len(errors) == 1500
    assert broker.topics() == {}
    [request] = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert len(request.errors) == 1500  # one request
    assert request.mutations == 0  # nothing charged


def test_partitions_per_request_are_checked_first_and_count_every_topic(quota_broker: BrokerFactory) -> None:
    """validateTotalNumberOfPartitions runs before the names are checked: an existing topic's partitions count;
    a repeated name is answered by ControllerApis (INVALID_REQUEST) and never reaches the controller."""
    broker = quota_broker(max_records_per_op=100)
    broker.create_topic("old", 1)
    with WireClient(broker.bootstrap_servers) as wire:
        refused = wire.request(create(("a", 60), ("old", 41), ("dup", 1), ("dup", 1)))
        at_partitions_cap = wire.request(create(("a", 60), ("b", 40)))  # 100 partitions but 102 records
        admitted = wire.request(create(("a", 60), ("b", 38)))  # 98 partitions, 100 records
    assert outcomes(refused) == {
        "a": (POLICY_VIOLATION, TOO_MANY_PARTITIONS),
        "old": (POLICY_VIOLATION, TOO_MANY_PARTITIONS),
        "dup": (INVALID_REQUEST, "Duplicate topic name."),
    }
    assert set(outcomes(at_partitions_cap).values()) == {(POLICY_VIOLATION, TOO_LARGE)}
    assert outcomes(admitted) == {"a": (0, None), "b": (0, None)}
    assert broker.topics() == {"old": 1, "a": 60, "b": 38}


def test_records_count_topic_partition_and_config_records_of_created_topics(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(max_records_per_op=100)
    for i in range(10):
        broker.create_topic(f"old.{i}")
    with WireClient(broker.bootstrap_servers) as wire:
        # 25 topics x (TopicRecord + PartitionRecord + 2 ConfigRecords) = 100 records, plus 10 existing topics
        # that make none: admitted.
        fits = wire.request(
            create(*((f"new.{i}", 1) for i in range(25)), *((f"old.{i}", 1) for i in range(10)), configs=2)
        )
        # 26 x 4 = 104 records (26 partitions): refused whole.
        refused = wire.request(create(*((f"more.{i}", 1) for i in range(26)), configs=2))
    assert all(code == 0 for code, _ in (outcomes(fits)[f"new.{i}"] for i in range(25)))
    assert set(outcomes(refused).values()) == {(POLICY_VIOLATION, TOO_LARGE)}
    assert not any(name.startswith("more.") for name in broker.topics())


def test_create_partitions_is_capped_by_the_partitions_it_adds(quota_broker: BrokerFactory) -> None:
    """Kafka 4.4's ReplicationControlManager checks a CreatePartitions' added partitions first, with its own
    message (a grow's records are its added partitions, so the record cap never gets to it)."""
    broker = quota_broker(max_records_per_op=100)
    broker.create_topic("t", 1)
    T = CreatePartitionsRequest.CreatePartitionsTopic
    with WireClient(broker.bootstrap_servers) as wire:
        over = wire.request(
            CreatePartitionsRequest(
                version=3, topics=[T(name="t", count=102, assignments=None)], timeout_ms=30000, validate_only=False
            )
        )
        fits = wire.request(
            CreatePartitionsRequest(
                version=3, topics=[T(name="t", count=101, assignments=None)], timeout_ms=30000, validate_only=False
            )
        )
    assert outcomes(over) == {"t": (POLICY_VIOLATION, "Excessively large number of additional partitions per request.")}
    assert outcomes(fits) == {"t": (0, None)}
    assert broker.topics() == {"t": 101}


def test_cap_message_replaces_all_three_refusals_words(quota_broker: BrokerFactory) -> None:
    """QuotaBroker(cap_message=...): a cluster whose cap refusal has other words (Kafka 4.5 makes the cap a
    setting, KAFKA-20976); every check still refuses whole, in those words."""
    words = "Request exceeds max.records.per.user.op (100)."
    broker = quota_broker(max_records_per_op=100, cap_message=words)
    broker.create_topic("t", 1)
    T = CreatePartitionsRequest.CreatePartitionsTopic
    with WireClient(broker.bootstrap_servers) as wire:
        partitions = wire.request(create(("a", 60), ("b", 41)))
        records = wire.request(create(("a", 60), ("b", 40)))
        grow = wire.request(
            CreatePartitionsRequest(
                version=3, topics=[T(name="t", count=102, assignments=None)], timeout_ms=30000, validate_only=False
            )
        )
    assert outcomes(partitions) == outcomes(records) == dict.fromkeys(("a", "b"), (POLICY_VIOLATION, words))
    assert outcomes(grow) == {"t": (POLICY_VIOLATION, words)}
    assert broker.topics() == {"t": 1}


@pytest.mark.parametrize("bad", ["", 1])
def test_cap_message_is_validated(bad: Any) -> None:
    with pytest.raises(ValueError, match="cap_message must be a non-empty str or None"):
        QuotaBroker(cap_message=bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_max_records_per_op_is_validated(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_records_per_op must be an int >= 1"):
        QuotaBroker(max_records_per_op=bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_a_changed_cap_is_validated_and_a_bad_one_changes_nothing(bad: Any, quota_broker: BrokerFactory) -> None:
    broker = quota_broker(max_records_per_op=2)
    with pytest.raises(ValueError, match="max_records_per_op must be an int >= 1"):
        broker.set_max_records_per_op(bad)
    with WireClient(broker.bootstrap_servers) as wire:
        refused = wire.request(create(("a", 1), ("b", 1)))  # 4 records
    assert set(outcomes(refused).values()) == {(POLICY_VIOLATION, TOO_LARGE)}


def test_a_cap_changed_holds_from_the_next_mutation(quota_broker: BrokerFactory) -> None:
    """As an operator changes Kafka 4.5's setting (KAFKA-20976), or a controller of another version is elected."""
    broker = quota_broker(max_records_per_op=2)
    with WireClient(broker.bootstrap_servers) as wire:
        refused = wire.request(create(("a", 1), ("b", 1)))  # 4 records
        broker.set_max_records_per_op(4)
        fits = wire.request(create(("a", 1), ("b", 1)))
    assert set(outcomes(refused).values()) == {(POLICY_VIOLATION, TOO_LARGE)}
    assert outcomes(fits) == {"a": (0, None), "b": (0, None)}


def test_standalone_broker_takes_the_cap_and_the_metadata_lag() -> None:
    args = ["--port", "0", "--num-brokers", "2", "--max-records-per-op", "5", "--metadata-lag-ms", "60000"]
    with standalone_broker(*args) as ports:
        with WireClient(f"127.0.0.1:{ports[0]}") as wire:
            refused = wire.request(create(("a", 3), ("b", 3)))  # 6 partitions > 5
            created = wire.request(create(("c", 1)))
        with WireClient(f"127.0.0.1:{ports[1]}") as wire:  # node 1 lags a minute behind
            meta = wire.request(MetadataRequest(version=1, topics=[MetadataRequest.MetadataRequestTopic(name="c")]))
    assert set(outcomes(refused).values()) == {(POLICY_VIOLATION, TOO_MANY_PARTITIONS)}
    assert outcomes(created) == {"c": (0, None)}
    assert [t.error_code for t in meta.topics] == [3]  # v1 allows auto-creation, but the controller has it
