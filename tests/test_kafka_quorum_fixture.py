"""The three-node Kafka 4.4 quorum the cluster tests run on (tests/real_kafka/broker.py, ``kafka_quorum``)."""

from __future__ import annotations

import pytest

from tests.real_kafka.broker import KafkaCluster

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_the_quorum_elects_another_controller_when_the_active_one_is_killed_and_takes_it_back(
    kafka_quorum: KafkaCluster,
) -> None:
    assert [n.roles for n in kafka_quorum.nodes] == ["broker,controller"] * 3
    active = kafka_quorum.active_controller()
    kafka_quorum.stop_node(kafka_quorum.node(active), kill=True)
    successor = kafka_quorum.active_controller()
    assert successor != active
    kafka_quorum.start_node(kafka_quorum.node(active))
    assert kafka_quorum.alive()


def test_a_stopped_node_is_started_again_after_the_test_that_left_it_down(kafka_quorum: KafkaCluster) -> None:
    kafka_quorum.stop_node(kafka_quorum.nodes[2])
    assert not kafka_quorum.alive()


def test_the_next_test_finds_all_three_nodes_up_and_registered(kafka_quorum: KafkaCluster) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    assert kafka_quorum.alive()
    admin = AdminClient({"bootstrap.servers": kafka_quorum.bootstrap_servers, "log_level": 0})
    admin.create_topics([NewTopic("quorum-fixture.rf3", 2, 3)])["quorum-fixture.rf3"].result(timeout=60)
    assert kafka_quorum.topics("quorum-fixture.") == {"quorum-fixture.rf3": 2}
    admin.delete_topics(["quorum-fixture.rf3"])["quorum-fixture.rf3"].result(timeout=60)
