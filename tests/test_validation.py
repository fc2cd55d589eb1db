"""Input checks: snapshots taken at call time, conversions as confluent-kafka makes them, clear messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError

from throttled_admin import ThrottledAdminClient
from throttled_admin._validation import Checked, check_delete_topics, check_new_partitions, check_new_topics
from throttled_admin.admin import NewPartitions, NewTopic
from throttled_admin.testing import QuotaBroker


def only(checked: Checked[Any]) -> Any:
    """The one topic's snapshot (or refusal) of a checked call."""
    ((_, item),) = checked
    return item


def test_new_topic_snapshot_is_independent_of_the_callers_objects() -> None:
    config: dict[str, Any] = {"retention.ms": 1000, "cleanup.policy": "compact"}
    assignment = [[0, 1], [1, 0]]
    original = NewTopic("orders", 2, replica_assignment=assignment, config=config)
    snapshot = only(check_new_topics([original]))

    assert snapshot is not original
    config["retention.ms"] = 1
    config["new.key"] = "x"
    assignment[0].append(2)
    assignment.append([2, 0])
    original.num_partitions = 7

    assert snapshot.topic == "orders"
    assert snapshot.num_partitions == 2
    assert snapshot.replication_factor == -1
    assert snapshot.config == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert snapshot.replica_assignment == [[0, 1], [1, 0]]


def test_new_partitions_snapshot_is_independent_of_the_callers_objects() -> None:
    assignment = [[0], [1]]
    original = NewPartitions("orders", 3, assignment)
    snapshot = only(check_new_partitions([original]))
    assignment[0][0] = 5
    original.new_total_count = 9
    assert (snapshot.topic, snapshot.new_total_count, snapshot.replica_assignment) == ("orders", 3, [[0], [1]])


def test_delete_topics_gives_plain_strings() -> None:
    class Name(str):
        pass

    names = [Name("a"), "b"]
    checked = [name for _, name in check_delete_topics(names)]
    names.append("c")
    assert checked == ["a", "b"]
    assert all(type(n) is str for n in checked)


@pytest.mark.parametrize(
    ("value", "sent"),
    [(1000, "1000"), (0.5, "0.5"), (True, "true"), (False, "false"), ("compact", "compact"), (-1, "-1")],
)
def test_config_values_are_sent_as_strings(value: Any, sent: str) -> None:
    snapshot = only(check_new_topics([NewTopic("t", 1, 1, config={"some.config": value})]))
    assert snapshot.config == {"some.config": sent}


def test_an_absent_assignment_and_config_stay_absent() -> None:
    # confluent-kafka refuses an explicit config=None or replica_assignment=None next to a replication factor,
    # so the snapshot must leave them out rather than pass None.
    snapshot = only(check_new_topics([NewTopic("t", 3, 2)]))
    assert snapshot.config is None
    assert snapshot.replica_assignment is None
    empty = only(check_new_topics([NewTopic("t", replica_assignment=[])]))
    assert empty.replica_assignment is None


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: check_new_topics([NewTopic("orders", 100001, 1)]), ["'orders'", "num_partitions", "100000"]),
        (
            lambda: check_new_topics([NewTopic("orders", replica_assignment=[[0]])]),
            ["'orders'", "replica_assignment", "num_partitions"],
        ),
        (
            lambda: check_new_topics([NewTopic("orders", 1, 3, replica_assignment=[[0]])]),
            ["'orders'", "not both"],
        ),
        (lambda: check_new_topics((NewTopic("orders", 1, 1),)), ["list", "tuple"]),
        (lambda: check_delete_topics("orders"), ["list", "['orders']"]),
        (lambda: check_new_partitions([NewPartitions("orders", 2, [[0], [1], [2]])]), ["'orders'", "more than"]),
    ],
)
def test_messages_say_what_and_where(make: Callable[[], Any], words: list[str]) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        make()
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    ("checked", "code", "words"),
    [
        (check_new_topics([NewTopic("orders", 1, 0)]), KafkaError.INVALID_REPLICATION_FACTOR, ["replication_factor"]),
        (
            check_new_topics([NewTopic("orders", 1, 1, config={"retention.ms": None})]),  # type: ignore[dict-item]
            KafkaError.INVALID_CONFIG,
            ["'retention.ms'", "NoneType"],
        ),
        (
            check_new_partitions([NewPartitions("orders", 2, [[0], [1]])]),
            KafkaError.INVALID_REPLICA_ASSIGNMENT,
            ["at most 1"],
        ),
    ],
)
def test_refusals_say_what_and_where(checked: Checked[Any], code: int, words: list[str]) -> None:
    refusal = only(checked)
    assert isinstance(refusal, KafkaError)
    assert refusal.code() == code
    for word in ["'orders' not sent", *words]:
        assert word in refusal.str()


def test_a_topic_changed_after_the_call_is_retried_as_it_was_given(quota_broker: Callable[..., QuotaBroker]) -> None:
    # Burst 2 with a strict quota: "first" (3 partitions) drives the bucket negative, so "second" is throttled
    # and re-sent about a second later, after the caller has changed its NewTopic.
    broker = quota_broker(controller_mutation_rate=2, quota_window_num=1, enforcement="strict")
    config: dict[str, Any] = {"retention.ms": 1000}
    second = NewTopic("second", 1, 1, config=config)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        futures = admin.create_topics([NewTopic("first", 3, 1), second])
        second.num_partitions = 4
        assert second.config is not None
        second.config["retention.ms"] = "not a number"
        for future in futures.values():
            future.result(timeout=60)
    assert broker.topics() == {"first": 3, "second": 1}
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert len(creates) >= 2, "the second topic was not throttled and retried"
    assert sum(r.mutations for r in creates) == 4  # 3 + 1: the retry sent the snapshot, not 4 partitions
