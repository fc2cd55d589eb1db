"""Issue 19, Kafka 4's batch cap on a cluster whose cap is not Kafka's 10,000: QuotaBroker(max_records_per_op=N)
over loopback, the public ThrottledAdminClient. A KRaft controller refuses a whole request making more than N
metadata records (a one-partition topic makes two) with POLICY_VIOLATION "Unable to perform excessively large batch
operation.", a CreateTopics of more than N partitions with "Excessively large number of partitions per request.",
and (Kafka 4.4) a CreatePartitions adding more than N with "Excessively large number of additional partitions per
request.".

Was (the client sized requests for Kafka's 10,000 records): on a cluster with a lower cap every large call failed
whole, each topic with POLICY_VIOLATION."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support import BrokerFactory
from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker

POLICY_VIOLATION = 44
BATCH = "Unable to perform excessively large batch operation."
PARTITIONS = "Excessively large number of partitions per request."


def outcomes(futures: dict[str, Future[None]]) -> dict[str, BaseException | None]:
    return {name: future.exception(120) for name, future in futures.items()}


def one_partition(count: int, prefix: str = "t") -> list[NewTopic]:
    return [NewTopic(f"{prefix}{i:05d}", 1, 1) for i in range(count)]


def create_requests(broker: QuotaBroker) -> list[dict[str, int]]:
    return [record.errors for record in broker.request_log() if record.api_name == "CreateTopics"]


@pytest.mark.slow  # about 5 s: 20,000 topics
def test_bare_confluent_kafka_is_refused_whole_and_the_client_creates_twenty_thousand(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(max_records_per_op=2000)
    confluent = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    bare = outcomes(confluent.create_topics(one_partition(1500, "b")))
    for exc in bare.values():  # 1,500 topics make 3,000 records: refused whole
        assert isinstance(exc, KafkaException)
        assert (exc.args[0].code(), exc.args[0].str()) == (KafkaError.POLICY_VIOLATION, BATCH)
    assert broker.topics() == {}
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        results = outcomes(admin.create_topics(one_partition(20_000), timeout_ms=120_000))
    assert [exc for exc in results.values() if exc is not None] == []
    assert len(broker.topics()) == 20_000


def test_a_request_refused_whole_is_split_and_the_cap_learned(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(max_records_per_op=750)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        results = outcomes(admin.create_topics(one_partition(1500), timeout_ms=60_000))
        # the cap is the client's from now on: a later call is sized by it at once
        later = outcomes(admin.create_topics(one_partition(600, "later"), timeout_ms=60_000))
    assert results == dict.fromkeys(results)
    assert later == dict.fromkeys(later)
    assert len(broker.topics()) == 2100
    requests = create_requests(broker)
    refused = [errors for errors in requests if set(errors.values()) == {POLICY_VIOLATION}]
    assert [len(errors) for errors in refused] == [1500, 750]  # 3,000 and 1,500 records; then halved to 750
    assert all(len(errors) * 2 <= 750 for errors in requests if errors not in refused)
    assert len(requests) == len(refused) + 1500 // 375 + 600 // 375 + 1


def test_a_single_topic_beyond_the_cap_gets_the_brokers_error_and_the_rest_are_created(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(max_records_per_op=100)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        futures = admin.create_topics([*one_partition(60), NewTopic("big", 150, 1)], timeout_ms=30_000)
        results = outcomes(futures)
    big = results.pop("big")
    assert isinstance(big, KafkaException)
    assert (big.args[0].code(), big.args[0].str()) == (KafkaError.POLICY_VIOLATION, PARTITIONS)
    assert results == dict.fromkeys(results)
    assert set(broker.topics()) == set(results)


def test_any_other_policy_violation_no_larger_than_a_request_accepted_fails_at_once_and_is_never_split(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker()
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        accepted = outcomes(admin.create_topics(one_partition(50, "a"), timeout_ms=30_000))
        assert accepted == dict.fromkeys(accepted)
        broker.fail_next("CreateTopics", POLICY_VIOLATION)  # as a CreateTopicPolicy would answer: not the cap's words
        results = outcomes(admin.create_topics(one_partition(50), timeout_ms=30_000))
    for exc in results.values():
        assert isinstance(exc, KafkaException)
        assert exc.args[0].code() == KafkaError.POLICY_VIOLATION
    assert len(create_requests(broker)) == 2
    assert set(broker.topics()) == set(accepted)


# Issue 40: Kafka 4.5 makes the cap a setting (KAFKA-20976) and its words may change. Was: a refusal in other words
# failed every topic of the call; a refusal just above a request accepted halved the limit below it.
NEW_WORDS = "Request makes more records than max.records.per.user.op (750)."


def test_a_cap_refusal_in_new_words_is_split_and_the_cap_learned(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(max_records_per_op=750, cap_message=NEW_WORDS)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        results = outcomes(admin.create_topics(one_partition(1500), timeout_ms=60_000))
        lone = outcomes(admin.create_topics([NewTopic("big", 800, 1)], timeout_ms=30_000))
    assert results == dict.fromkeys(results)
    assert len(broker.topics()) == 1500
    requests = create_requests(broker)
    refused = [errors for errors in requests if set(errors.values()) == {POLICY_VIOLATION}]
    assert [len(errors) for errors in refused] == [1500, 750, 1]  # 3,000 and 1,500 records; then the lone topic
    big = lone["big"]  # a topic alone gets the broker's own error
    assert isinstance(big, KafkaException)
    assert (big.args[0].code(), big.args[0].str()) == (KafkaError.POLICY_VIOLATION, NEW_WORDS)


def test_a_refusal_just_above_a_request_accepted_never_splits_below_it(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(max_records_per_op=1000)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        first = outcomes(admin.create_topics(one_partition(500, "a"), timeout_ms=30_000))  # 1,000 records
        later = outcomes(admin.create_topics(one_partition(501, "b"), timeout_ms=30_000))  # 1,002: refused whole
    assert first == dict.fromkeys(first)
    assert later == dict.fromkeys(later)
    # the limit falls to the 1,000 accepted, not to half of 1,002 (which sent 250, 250 and 1)
    assert [len(errors) for errors in create_requests(broker)] == [500, 501, 500, 1]


def test_a_cap_raised_under_a_long_lived_client_is_followed(quota_broker: BrokerFactory) -> None:
    """The cap learned was kept for the client's life: after the cluster's cap rose (Kafka 4.5's setting changed, a
    newer controller elected) a long-lived client still sent requests of the old limit. Now, after 32 requests of
    the limit, one tries twice it; applied, the next tries twice again; a probe refused is sent again at once."""
    broker = quota_broker(max_records_per_op=40)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        low = outcomes(admin.create_topics(one_partition(600, "a"), timeout_ms=60_000))
        low_requests = create_requests(broker)
        broker.set_max_records_per_op(10_000)
        broker.clear_request_log()
        high = outcomes(admin.create_topics(one_partition(3000, "b"), timeout_ms=60_000))
    assert low == dict.fromkeys(low)
    assert high == dict.fromkeys(high)
    assert len(broker.topics()) == 3600
    refused = [len(errors) for errors in low_requests if set(errors.values()) == {POLICY_VIOLATION}]
    # learned: a limit of 37 records, 18 topics a request; after 32 such, a probe (the 24 topics left) refused
    assert refused == [600, 300, 150, 75, 37, 24]
    assert all(set(errors.values()) == {0} for errors in create_requests(broker))
    sizes = [len(errors) for errors in create_requests(broker)]
    # the next probe after 64 requests of the limit (one of them in the first call), then doubling
    assert sizes == [18] * 63 + [37, 74, 148, 296, 592, 3000 - 63 * 18 - 1147]  # was 167 requests of 18


def test_grows_refused_whole_for_the_partitions_they_add_are_split(quota_broker: BrokerFactory) -> None:
    """Kafka 4.4 refuses a CreatePartitions adding more partitions than the cap with its own message,
    "Excessively large number of additional partitions per request." (checked against Kafka 4.4.0 by the
    differential suite): a batch-cap refusal like the other two, so the grows are split, not failed."""
    broker = quota_broker(max_records_per_op=100)
    broker.create_topic("g1", 1)
    broker.create_topic("g2", 1)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        results = outcomes(admin.create_partitions([NewPartitions("g1", 61), NewPartitions("g2", 61)]))
    assert results == {"g1": None, "g2": None}
    assert broker.topics() == {"g1": 61, "g2": 61}
    grows = [r.errors for r in broker.request_log() if r.api_name == "CreatePartitions"]
    assert grows[0] == {"g1": POLICY_VIOLATION, "g2": POLICY_VIOLATION}  # 120 added: refused whole, then split
