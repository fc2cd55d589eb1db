"""ThrottledAdminClient against Tansu, a real third-party Kafka-compatible broker with no quotas:
the unthrottled paths and how broker errors reach each topic's future."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException

from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient


@pytest.fixture
def client(tansu: str) -> Iterator[ThrottledAdminClient]:
    with ThrottledAdminClient({"bootstrap.servers": tansu, "client.id": "tansu-test"}) as c:
        yield c


def error_code(future: object) -> int | None:
    exc = future.exception(30)  # type: ignore[attr-defined]
    if exc is None:
        return None
    assert isinstance(exc, KafkaException)
    return int(exc.args[0].code())


def test_create_list_and_delete(client: ThrottledAdminClient) -> None:
    created = client.create_topics([NewTopic("tansu-a", 3, 1), NewTopic("tansu-b", 1, 1)])
    assert {n: error_code(f) for n, f in created.items()} == {"tansu-a": None, "tansu-b": None}
    metadata = client.list_topics(timeout=30)  # delegated unchanged
    assert len(metadata.topics["tansu-a"].partitions) == 3
    deleted = client.delete_topics(["tansu-a", "tansu-b"])
    assert {n: error_code(f) for n, f in deleted.items()} == {"tansu-a": None, "tansu-b": None}
    metrics = client.metrics()
    assert metrics["throttle-time-max"] == 0  # every response recorded, zeros included
    assert metrics["quota-violation-total"] == 0


def test_already_exists_and_unknown_topic_fail_their_futures(client: ThrottledAdminClient) -> None:
    assert error_code(client.create_topics([NewTopic("tansu-dup", 1, 1)])["tansu-dup"]) is None
    again = client.create_topics([NewTopic("tansu-dup", 1, 1), NewTopic("tansu-fresh", 1, 1)])
    assert error_code(again["tansu-dup"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert error_code(again["tansu-fresh"]) is None
    missing = client.delete_topics(["tansu-never-created"])
    assert error_code(missing["tansu-never-created"]) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_create_partitions_unsupported_by_the_broker(client: ThrottledAdminClient) -> None:
    assert error_code(client.create_topics([NewTopic("tansu-grow", 1, 1)])["tansu-grow"]) is None
    [future] = client.create_partitions([NewPartitions("tansu-grow", 4)]).values()
    assert error_code(future) == KafkaError._UNSUPPORTED_FEATURE
    assert client.metrics()["retry-total"] == 0  # not a quota error: never retried
