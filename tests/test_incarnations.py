"""Issue 27, finding 7: ``wait_for_metadata`` is not fooled by an earlier topic of the same name.

On 3 brokers with metadata lag, ``x`` (8 partitions) is deleted and ``x`` (3 partitions) created with
``wait_for_metadata=True``. The lagging brokers still list the old ``x`` (8 partitions: "at least the partitions
asked for"), then no ``x``, then the new one. Was: the future resolved at once, while two brokers listed the old
``x``, and producers there would write into a topic that no longer exists. Now the topic is visible when every
broker shows one topic id that none showed before the create was sent.

What each broker lists is read the moment the future resolves by an independent client (kafka-python's protocol
classes over a socket of the test's own, Metadata v12: topic ids)."""

from __future__ import annotations

import uuid

from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support import BrokerFactory
from tests.wire import WireClient
from throttled_admin import NewTopic, NotYetVisibleError, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker


def incarnations(broker: QuotaBroker, name: str) -> list[tuple[uuid.UUID, int] | None]:
    """Each broker's (topic id, partitions with a leader) of ``name``, None where it is not listed."""
    shown: list[tuple[uuid.UUID, int] | None] = []
    for address in broker.bootstrap_servers.split(","):
        with WireClient(address) as wire:
            request = MetadataRequest(
                version=12,
                topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=name)],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
            [topic] = wire.request(request).topics
        led = sum(1 for p in topic.partitions if p.error_code == 0 and p.leader_id >= 0)
        shown.append((topic.topic_id, led) if topic.error_code == 0 else None)
    return shown


def test_a_recreated_topic_resolves_only_once_every_broker_shows_the_new_incarnation(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(num_brokers=3, metadata_lag_ms=2000)
    broker.create_topic("x", 8)  # every broker lists it at once
    [(old_id, _)] = {shown for shown in incarnations(broker, "x") if shown is not None}
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert admin.delete_topics(["x"])["x"].exception(30) is None
        assert incarnations(broker, "x") == [None, (old_id, 8), (old_id, 8)]  # the lag under test
        future = admin.create_topics([NewTopic("x", 3, 1)], timeout_ms=30000, wait_for_metadata=True)["x"]
        assert future.exception(30) is None
        shown = incarnations(broker, "x")
    assert shown[0] is not None
    new_id, partitions = shown[0]
    assert (new_id, partitions) != (old_id, 8)
    assert shown == [(new_id, 3)] * 3


def test_a_recreated_topic_of_the_same_size_is_told_apart_too(quota_broker: BrokerFactory) -> None:
    """The partition count cannot tell these two apart at all: only the id can."""
    broker = quota_broker(num_brokers=3, metadata_lag_ms=2000)
    broker.create_topic("same", 3)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert admin.delete_topics(["same"])["same"].exception(30) is None
        future = admin.create_topics([NewTopic("same", 3, 1)], timeout_ms=30000, wait_for_metadata=True)["same"]
        assert future.exception(30) is None
        shown = incarnations(broker, "same")
    assert len(set(shown)) == 1, shown
    assert shown[0] is not None
    assert broker.topics() == {"same": 3}


def test_past_the_deadline_the_brokers_still_showing_the_old_incarnation_are_named(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(num_brokers=3, metadata_lag_ms=8000)
    broker.create_topic("late", 8)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert admin.delete_topics(["late"])["late"].exception(30) is None
        future = admin.create_topics([NewTopic("late", 3, 1)], timeout_ms=2500, wait_for_metadata=True)["late"]
        exc = future.exception(30)
    assert isinstance(exc, NotYetVisibleError), repr(exc)
    assert exc.brokers == (1, 2)
    assert broker.topics() == {"late": 3}
