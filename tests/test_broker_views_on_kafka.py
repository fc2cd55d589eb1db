"""The broker-views reader (``_driver/broker_views.py``: its own Metadata v10+ connections, SASL PLAIN and SCRAM)
against Apache Kafka 4.4 itself, not only against QuotaBroker, whose SCRAM side was written by the same hands.

Each test checks what the reader got against an independent client (confluent-kafka's describe_topics) and that
the reader did not fall back on librdkafka (whose views carry no ids): a reader that only ever worked against
QuotaBroker would leave ``wait_for_metadata`` on Kafka to the partition rule that finding 7 showed is fooled."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka.admin import AdminClient

from tests.real_kafka.broker import USERS, KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.support import Conf
from tests.test_broker_views_reader import topic_id
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin._driver.broker_views import BrokerViewReader
from throttled_admin._engine.visibility import TopicView

pytestmark = pytest.mark.kafka

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.mark.parametrize("mechanism", [None, *MECHANISMS])
def test_the_reader_reads_kafkas_topic_ids_on_every_listener(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace, mechanism: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    name = kafka_ns.topic(f"ids-{mechanism}")
    plain: Conf = {"bootstrap.servers": kafka_broker.bootstrap_servers}
    creator = AdminClient(plain)
    creator.create_topics([NewTopic(name, 3, 1)])[name].result(30)
    assert kafka_broker.topics(name) == {name: 3}  # behind a barrier: the broker lists it from now on
    expected = topic_id(plain, name)
    conf = plain if mechanism is None else kafka_broker.sasl_conf("bob", mechanism)
    caplog.set_level(logging.DEBUG, logger="throttled_admin")
    reader = BrokerViewReader(conf | {"client.id": kafka_ns.client_id})
    try:
        (node,) = kafka_broker.brokers
        views = reader.read_cluster([name], timeout_s=10)
        assert views == {node.node_id: {name: TopicView(3, True, expected)}}
    finally:
        reader.close()
    assert "librdkafka" not in caplog.text  # its own connection read it, no fallback
    assert USERS["bob"] not in caplog.text


@pytest.mark.parametrize("mechanism", [None, "SCRAM-SHA-512"])
def test_the_reader_reads_kafkas_controller_quorum(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace, mechanism: str | None
) -> None:
    """DescribeQuorum (``_driver/quorum_wire``) on the reader's own connection, as ``quorum_watch`` reads it: the
    leader kafka-metadata-quorum.sh's request names (the fixture's, encoded by kafka-python), in a first epoch."""
    plain: Conf = {"bootstrap.servers": kafka_broker.bootstrap_servers}
    conf = plain if mechanism is None else kafka_broker.sasl_conf("bob", mechanism)
    reader = BrokerViewReader(conf | {"client.id": kafka_ns.client_id})
    try:
        answer = reader.read_quorum(timeout_s=10)
    finally:
        reader.close()
    assert answer is not None
    assert (answer.error_code, answer.leader_id) == (0, kafka_broker.active_controller())
    assert answer.leader_epoch >= 1


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_on_kafka_leaves_no_view_and_no_secret(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "Wr0ng-9f1c2e-not-bobs"
    caplog.set_level(logging.DEBUG, logger="throttled_admin")
    reader = BrokerViewReader(kafka_broker.sasl_conf("bob", mechanism) | {"sasl.password": wrong})
    try:
        assert reader.read_cluster([kafka_ns.topic("x")], timeout_s=10) == {}  # no broker answered: none known
        assert wrong not in repr(reader)
    finally:
        reader.close()
    assert "cannot connect" in caplog.text  # it did try, and was refused
    assert wrong not in caplog.text


def test_wait_for_metadata_on_kafka_over_scram_tells_a_recreated_topic_from_the_old_one(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace, caplog: pytest.LogCaptureFixture
) -> None:
    """Create x (8 partitions), delete it, create x (3 partitions) with wait_for_metadata over SCRAM: the future
    resolves with the new incarnation's id shown, read by the reader's own SCRAM connection (no fallback)."""
    name = kafka_ns.topic("again")
    plain = {"bootstrap.servers": kafka_broker.bootstrap_servers}
    caplog.set_level(logging.INFO, logger="throttled_admin")
    conf = kafka_broker.sasl_conf("bob", "SCRAM-SHA-256") | {"client.id": kafka_ns.client_id}
    with ThrottledAdminClient(conf) as admin:
        assert admin.create_topics([NewTopic(name, 8, 1)], wait_for_metadata=True)[name].exception(60) is None
        first = topic_id(plain, name)
        assert admin.delete_topics([name], wait_for_metadata=True)[name].exception(60) is None
        assert admin.create_topics([NewTopic(name, 3, 1)], wait_for_metadata=True)[name].exception(60) is None
    second = topic_id(plain, name)
    assert second != first
    assert "librdkafka" not in caplog.text
    assert USERS["bob"] not in caplog.text
