"""QuotaBroker(enforcement="redpanda") against Redpanda's source (redpanda-data/redpanda 1c6cff34:
handlers/create_topics.cc, create_partitions.cc, server.cc's DeleteTopics, quota_manager.cc,
atomic_token_bucket.h, connection_context.cc), over loopback with kafka-python's protocol classes (they choose
the version) and confluent-kafka (librdkafka sends CreateTopics v4, DeleteTopics v3, CreatePartitions v0/v1)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.protocol.admin.topics import CreatePartitionsRequest, DeleteTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support import BrokerFactory
from tests.wire import WireClient, create_topics_request, standalone_broker

MESSAGE = "Too many partition mutations requested"
UNKNOWN_SERVER_ERROR, THROTTLING_QUOTA_EXCEEDED = -1, 89


def delete_request(version: int, *names: str) -> Any:
    if version >= 6:
        S = DeleteTopicsRequest.DeleteTopicState
        return DeleteTopicsRequest(
            version=version, topics=[S(name=n, topic_id=uuid.UUID(int=0)) for n in names], timeout_ms=30000
        )
    return DeleteTopicsRequest(version=version, topic_names=list(names), timeout_ms=30000)


def grow_request(version: int, *topics: tuple[str, int], validate_only: bool = False) -> Any:
    T = CreatePartitionsRequest.CreatePartitionsTopic
    return CreatePartitionsRequest(
        version=version,
        topics=[T(name=n, count=c, assignments=None) for n, c in topics],
        timeout_ms=30000,
        validate_only=validate_only,
    )


def results(response: Any) -> dict[str, tuple[int, str | None]]:
    entries = getattr(response, "topics", None) or getattr(response, "responses", None) or response.results
    return {r.name: (r.error_code, r.error_message if hasattr(r, "error_message") else None) for r in entries}


# One request of two topics at R = 1/s (Redpanda's bucket: one second, 1 token): the first, worth 5, is admitted
# (no deficit before it) and leaves a deficit of 4; the second is refused and charged its 2 all the same.
CASES = [
    ("CreateTopics", 5, UNKNOWN_SERVER_ERROR),
    ("CreateTopics", 6, THROTTLING_QUOTA_EXCEEDED),
    ("CreateTopics", 7, THROTTLING_QUOTA_EXCEEDED),
    ("DeleteTopics", 4, UNKNOWN_SERVER_ERROR),
    ("DeleteTopics", 5, THROTTLING_QUOTA_EXCEEDED),
    ("DeleteTopics", 6, THROTTLING_QUOTA_EXCEEDED),
    ("CreatePartitions", 2, UNKNOWN_SERVER_ERROR),
    ("CreatePartitions", 3, THROTTLING_QUOTA_EXCEEDED),
]


@pytest.mark.parametrize(("api", "version", "code"), CASES)
def test_a_topic_past_the_quota_gets_redpandas_error_by_version_and_nothing_is_applied(
    quota_broker: BrokerFactory, api: str, version: int, code: int
) -> None:
    broker = quota_broker(controller_mutation_rate=1, enforcement="redpanda")
    if api == "CreateTopics":
        before: dict[str, int] | None = {}
        request = create_topics_request(version, ("first", 5), ("second", 2))
        after = {"first": 5}
    elif api == "DeleteTopics":
        broker.create_topic("first", 5)
        broker.create_topic("second", 2)
        request, before, after = delete_request(version, "first", "second"), None, {"second": 2}
    else:
        broker.create_topic("first", 1)
        broker.create_topic("second", 1)
        request, before, after = grow_request(version, ("first", 6), ("second", 3)), None, {"first": 6, "second": 1}
    assert before is None or broker.topics() == before
    with WireClient(broker.bootstrap_servers) as wire:
        response = wire.request(request)
    message = None if api == "DeleteTopics" and version < 5 else MESSAGE  # no error_message field before v5
    assert results(response) == {"first": (0, None), "second": (code, message)}
    assert broker.topics() == after  # nothing applied for the refused topic
    # The delay before the refused topic: the deficit of 4 at 1/s, truncated to ms.
    assert 3900 <= response.throttle_time_ms <= 4000
    tokens = broker.tokens()
    assert tokens is not None
    assert -6.1 < tokens < -5.8  # 1 - 5 - 2: the refused topic was charged too
    [record] = [r for r in broker.request_log() if r.api_name == api]
    assert record.mutations == 7  # the log counts both


def test_the_connection_is_not_muted_and_the_throttle_is_reported_per_request(quota_broker: BrokerFactory) -> None:
    """connection_context.cc delays a connection only for the produce, fetch and shard-wide quotas: after a
    throttled CreateTopics the next request on the same connection is read at once and answered, and a refused
    retry is charged again (the deficit grows)."""
    broker = quota_broker(controller_mutation_rate=1, enforcement="redpanda")
    with WireClient(broker.bootstrap_servers) as wire:
        first = wire.request(create_topics_request(7, ("a", 5)))
        meta = wire.request(MetadataRequest(version=1, topics=[MetadataRequest.MetadataRequestTopic(name="a")]))
        again = wire.request(create_topics_request(7, ("b", 2)))
    assert first.throttle_time_ms == 0  # admitted with no deficit before it: Redpanda reports no delay
    assert [t.error_code for t in meta.topics] == [0]
    assert results(again) == {"b": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}
    # The deficit of 4 left by the first, less the refill until the retry was charged (between its request's reading
    # and answering, and the first's: bounds that hold however loaded the machine).
    one, two = (r for r in broker.request_log() if r.api_name == "CreateTopics")
    assert one.responded_at is not None
    assert two.responded_at is not None
    fastest, slowest = two.received_at - one.responded_at, two.responded_at - one.received_at
    assert 4000 - slowest * 1000 - 1 <= again.throttle_time_ms <= 4000 - fastest * 1000 + 1
    held = [r.held_s for r in broker.request_log()]
    assert all(h < 0.5 for h in held), held  # nothing waited in a muted connection
    tokens = broker.tokens()
    assert tokens is not None
    assert tokens < -5.8


def test_validate_only_is_answered_before_the_quota(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=1, enforcement="redpanda")
    broker.create_topic("grown", 1)
    with WireClient(broker.bootstrap_servers) as wire:
        created = wire.request(create_topics_request(7, ("x", 50), validate_only=True))
        grown = wire.request(grow_request(3, ("grown", 50), validate_only=True))
    assert results(created) == {"x": (0, None)}
    assert results(grown) == {"grown": (0, None)}
    assert broker.tokens() == pytest.approx(1.0)
    assert broker.topics() == {"grown": 1}


def test_an_unknown_topic_is_refused_by_the_quota_while_there_is_a_deficit(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=1, enforcement="redpanda")
    broker.create_topic("big", 5)
    with WireClient(broker.bootstrap_servers) as wire:
        response = wire.request(delete_request(4, "big", "ghost"))
    assert results(response) == {"big": (0, None), "ghost": (UNKNOWN_SERVER_ERROR, None)}  # v4: no message field


def test_the_burst_is_one_second_of_the_rate(quota_broker: BrokerFactory) -> None:
    """atomic_token_bucket(rate, limit=rate): Kafka's controller.quota.window.* do not apply."""
    broker = quota_broker(controller_mutation_rate=10, enforcement="redpanda", quota_window_num=11)
    assert broker.tokens() == pytest.approx(10)


def test_confluent_kafka_gets_unknown_server_error_with_the_message(quota_broker: BrokerFactory) -> None:
    """librdkafka sends CreateTopics v4, DeleteTopics v3 and CreatePartitions v0/v1: a refused topic fails with a
    plain KafkaError UNKNOWN (-1), 'Too many partition mutations requested'; the rest are applied."""
    broker = quota_broker(controller_mutation_rate=1, enforcement="redpanda")
    broker.create_topic("old", 3)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures = admin.create_topics([NewTopic("big", 5, 1), NewTopic("small", 1, 1)], operation_timeout=30)
    futures["big"].result(30)
    with pytest.raises(KafkaException) as refused:
        futures["small"].result(30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.UNKNOWN
    assert error.str() == MESSAGE
    [grow] = admin.create_partitions([NewPartitions("old", 4)], operation_timeout=30).values()
    with pytest.raises(KafkaException) as grow_refused:
        grow.result(30)
    assert (grow_refused.value.args[0].code(), grow_refused.value.args[0].str()) == (KafkaError.UNKNOWN, MESSAGE)
    [delete] = admin.delete_topics(["old"], operation_timeout=30).values()
    with pytest.raises(KafkaException) as delete_refused:
        delete.result(30)
    assert delete_refused.value.args[0].code() == KafkaError.UNKNOWN  # DeleteTopics < v5 carries no message
    assert broker.topics() == {"old": 3, "big": 5}
    versions = {(r.api_name, r.api_version) for r in broker.request_log() if r.mutations or r.errors}
    assert ("CreateTopics", 4) in versions


def test_standalone_broker_takes_enforcement_redpanda() -> None:
    with standalone_broker("--port", "0", "--controller-mutation-rate", "1", "--enforcement", "redpanda") as ports:
        wire = WireClient(f"127.0.0.1:{ports[0]}")
        with wire:
            response = wire.request(create_topics_request(5, ("a", 3), ("b", 1)))
    assert results(response) == {"a": (0, None), "b": (UNKNOWN_SERVER_ERROR, MESSAGE)}


class _Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def test_redpanda_quota_on_a_fake_clock_charges_refusals_and_reports_the_delay_before_each_topic() -> None:
    """quota_manager.cc: per topic, the delay to clear the deficit *before* it (0: admitted), then its mutations
    recorded whatever the decision; the response's throttle is the largest delay. So after a refusal the deficit
    is the reported throttle plus the refused topics' own charge: a re-send when the throttle ends is refused
    (and charged) again; waiting for the refused partitions too clears it."""
    from throttled_admin.testing._quotas import QuotaEntity, QuotaManager
    from throttled_admin.testing._redpanda import RedpandaQuota

    clock = _Clock()
    quotas = QuotaManager(window_num=1, window_size_s=1.0, clock=clock)  # Redpanda: burst = one second
    quotas.set_quota(QuotaEntity(user=QuotaEntity.DEFAULT), 200)

    def request(*partitions: int) -> tuple[list[bool], int]:
        quota = RedpandaQuota(quotas, quotas.bucket_for("ANONYMOUS", "c"))
        return [quota.record(p) for p in partitions], quota.throttle_time_ms()

    admitted, throttle = request(*[4] * 100)  # 100 topics x 4 at R = 200, burst 200
    assert admitted == [True] * 51 + [False] * 49  # 50 topics empty the bucket; the 51st finds no deficit
    assert throttle == 980  # the deficit before the last topic: 4 + 48 x 4 = 196
    assert quotas.tokens("ANONYMOUS", "c") == pytest.approx(-200)  # the 49 refused topics were charged
    clock.now += 0.98
    admitted, throttle = request(*[4] * 49)
    assert admitted == [False] * 49  # 4 tokens of deficit are left: refused again, and charged again
    assert throttle == 980
    clock.now += 0.98 + 49 * 4 / 200  # the throttle plus the refused topics' own mutations
    admitted, throttle = request(*[4] * 49)
    assert admitted == [True] * 49
    assert throttle == 0
