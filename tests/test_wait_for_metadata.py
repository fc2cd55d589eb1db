"""Issue 19, ``wait_for_metadata``: a topic's future resolves only once every broker's Metadata shows the change.
QuotaBroker(num_brokers=3, metadata_lag_ms=...) makes each node but the controller see a change that much later,
as a KRaft broker replaying the metadata log; an independent client (kafka-python's protocol classes over a socket
of the test's own) asks each broker what it lists, the moment a future resolves.

Was (confluent-kafka's behaviour, still the default): the future resolves when the controller answers, while the
other brokers do not list the topic yet (producers there get UNKNOWN_TOPIC_OR_PARTITION); users sleep."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest
from confluent_kafka.admin._metadata import ClusterMetadata
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support import BrokerFactory
from tests.wire import WireClient
from throttled_admin import NewPartitions, NewTopic, NotYetVisibleError, ThrottledAdminClient
from throttled_admin._driver.librdkafka_views import answered_by
from throttled_admin.aio import AIOThrottledAdminClient
from throttled_admin.testing import QuotaBroker


def listed(broker: QuotaBroker) -> list[dict[str, int]]:
    """What each broker lists (topic -> partitions with a leader), asked of each broker itself."""
    views = []
    for address in broker.bootstrap_servers.split(","):
        with WireClient(address) as wire:
            response = wire.request(MetadataRequest(version=1, topics=None))
        views.append(
            {
                t.name: sum(1 for p in t.partitions if p.error_code == 0 and p.leader_id >= 0)
                for t in response.topics
                if t.error_code == 0
            }
        )
    return views


def resolved_views(broker: QuotaBroker, futures: dict[str, Future[None]]) -> dict[str, list[dict[str, int]]]:
    """For each topic, what every broker listed right after its future resolved (asked before looking at the next)."""
    seen = {}
    for name, future in futures.items():
        assert future.exception(30) is None, f"{name}: {future.exception()}"
        seen[name] = listed(broker)
    return seen


def three_brokers(quota_broker: BrokerFactory, lag_ms: float = 800) -> QuotaBroker:
    return quota_broker(num_brokers=3, metadata_lag_ms=lag_ms)


def test_without_it_the_future_resolves_before_every_broker_lists_the_topic(quota_broker: BrokerFactory) -> None:
    broker = three_brokers(quota_broker)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        futures = admin.create_topics([NewTopic("early", 2, 1)], timeout_ms=30000)
        [views] = resolved_views(broker, futures).values()
    assert ["early" in view for view in views].count(False) >= 1  # the problem the option solves


def test_created_topics_are_listed_by_every_broker_when_their_futures_resolve(quota_broker: BrokerFactory) -> None:
    broker = three_brokers(quota_broker)
    new = [NewTopic(f"ready-{i}", 3, 1) for i in range(20)]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        futures = admin.create_topics(new, timeout_ms=30000, wait_for_metadata=True)
        seen = resolved_views(broker, futures)
    for name, views in seen.items():
        assert [view.get(name) for view in views] == [3, 3, 3], (name, views)


def test_grown_and_deleted_topics_are_shown_everywhere_when_their_futures_resolve(quota_broker: BrokerFactory) -> None:
    broker = three_brokers(quota_broker)
    for i in range(5):
        broker.create_topic(f"t{i}", 1)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        names = [f"t{i}" for i in range(5)]
        # the brokers' own lag since the topics were made on the controller: wait for them first
        first = admin.create_partitions([NewPartitions(n, 4) for n in names], wait_for_metadata=True)
        assert {name: future.exception(30) for name, future in first.items()} == dict.fromkeys(names)
        grown = admin.create_partitions([NewPartitions(n, 6) for n in names], wait_for_metadata=True)
        for name, views in resolved_views(broker, grown).items():
            assert [view.get(name) for view in views] == [6, 6, 6], (name, views)
        deleted = admin.delete_topics(names, wait_for_metadata=True)
        for name, views in resolved_views(broker, deleted).items():
            assert [name in view for view in views] == [False, False, False], (name, views)


def test_past_the_deadline_the_error_says_applied_but_not_yet_visible(quota_broker: BrokerFactory) -> None:
    broker = three_brokers(quota_broker, lag_ms=5000)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        futures = admin.create_topics([NewTopic("slow", 1, 1)], timeout_ms=1500, wait_for_metadata=True)
        exc = futures["slow"].exception(30)
    assert isinstance(exc, NotYetVisibleError), repr(exc)
    assert exc.brokers == (1, 2)  # the controller (node 0) lists it
    assert "CreateTopics applied, but not yet visible" in str(exc)
    assert broker.topics() == {"slow": 1}


def test_the_option_field_and_asyncio(quota_broker: BrokerFactory) -> None:
    from throttled_admin import CreateTopicsOptions

    broker = three_brokers(quota_broker)

    async def main() -> dict[str, list[dict[str, int]]]:
        async with AIOThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            futures = await admin.create_topics(
                [NewTopic("aio", 1, 1)], options=CreateTopicsOptions(wait_for_metadata=True, timeout_ms=30000)
            )
            await futures["aio"]
            return {"aio": listed(broker)}

    [views] = asyncio.run(main()).values()
    assert ["aio" in view for view in views] == [True, True, True]


def test_validate_only_and_wait_for_metadata_are_refused_together() -> None:
    with ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9"}) as admin:
        with pytest.raises(ValueError, match="mutually exclusive"):
            admin.create_topics([NewTopic("x", 1, 1)], validate_only=True, wait_for_metadata=True)
        with pytest.raises(TypeError, match="wait_for_metadata must be a bool"):
            admin.delete_topics(["x"], wait_for_metadata="yes")


def test_over_sasl_each_broker_is_asked_itself(quota_broker: BrokerFactory) -> None:
    """With SASL each broker is asked on a connection of the reader's own, authenticated as the application's
    client: an answer counts only from the broker asked. The controller lists the topic at once, the others 8 s
    later: by a 3 s deadline they have not, and the error names exactly them (an answer of the controller's taken
    for theirs would have resolved it). The deadline leaves room for three SASL handshakes on a loaded machine."""
    broker = quota_broker(num_brokers=3, metadata_lag_ms=8000, users={"alice": "secret"})
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "secret",
    }
    with ThrottledAdminClient(conf) as admin:
        futures = admin.create_topics([NewTopic("sasl", 2, 1)], timeout_ms=3000, wait_for_metadata=True)
        exc = futures["sasl"].exception(30)
    assert isinstance(exc, NotYetVisibleError), repr(exc)
    assert exc.brokers == (1, 2)
    assert "secret" not in str(exc)
    asked = {r.node_id for r in broker.request_log() if r.api_name == "Metadata" and r.principal == "alice"}
    assert asked == {0, 1, 2}


def test_an_answer_from_a_tls_or_sasl_bootstrap_connection_counts_as_that_brokers() -> None:
    """The fallback reader (librdkafka): librdkafka names a TLS or SASL broker with its protocol
    ("sasl_ssl://host:port/bootstrap"); an answer from the bootstrap connection, which has no node id yet, is that
    address's view."""
    metadata = ClusterMetadata()
    metadata.orig_broker_id = -1
    # confluent-kafka types orig_broker_name by its None in ClusterMetadata.__init__; librdkafka sets a str
    metadata.orig_broker_name = "sasl_plaintext://127.0.0.1:9092/bootstrap"  # type: ignore[assignment]
    assert answered_by(metadata, 0, "127.0.0.1:9092")
    assert not answered_by(metadata, 1, "127.0.0.1:9093")
    metadata.orig_broker_name = "127.0.0.1:9093/1"  # type: ignore[assignment]
    assert answered_by(metadata, 1, "127.0.0.1:9093")


def test_the_views_are_read_beside_a_muted_connection_not_through_it(quota_broker: BrokerFactory) -> None:
    """Found trying `throttled-admin apply` (wait on by default) at a 2/s quota: CreateTopics v4 is admitted over
    the quota and its connection muted (KIP-219); the broker list for the views was read with a Metadata request
    on that connection, which waited out the mute, timed out, and was asked again, throttle after throttle."""
    broker = quota_broker(controller_mutation_rate=2, num_brokers=3, metadata_lag_ms=200)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        futures = admin.create_topics(
            [NewTopic(f"muted-{i}", 2, 1) for i in range(15)], timeout_ms=60000, wait_for_metadata=True
        )
        for future in futures.values():
            assert future.exception(60) is None
    log = broker.request_log()
    assert max(r.throttle_time_ms for r in log) > 0  # the connection was muted
    assert all(r.held_s < 0.5 for r in log), [(r.api_key, round(r.held_s, 2)) for r in log if r.held_s >= 0.5]
