"""``wait_for_metadata`` on the three-node Kafka 4.4 quorum with a node away: what a grow waits for.

Found by a new user's run (helper 111): ``topics --alter`` of a topic whose partitions had lost their only replica (a
node stopped) waited out its whole ``--timeout-ms``, then warned that the healthy brokers did not show the new
partitions yet, while every broker listed them, each with a leader. A grow is shown where a broker lists the new
count and the partitions it added have a leader; partitions that were offline before it are not its to wait for."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.support import wait_until
from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _leaders(admin: AdminClient, name: str) -> dict[int, int]:
    """Partition -> its leader (-1: none) as a broker's Metadata lists them now."""
    topic = admin.list_topics(name, timeout=10).topics[name]
    return {p.id: p.leader for p in topic.partitions.values()}


def test_a_grow_of_a_topic_with_offline_partitions_is_shown_once_the_partitions_it_added_are_led(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    away = kafka_quorum.nodes[-1]
    live = [node for node in kafka_quorum.nodes if node is not away]
    name = kafka_ns.topic("offline-grow")
    bootstrap = ",".join(f"127.0.0.1:{node.plaintext_port}" for node in live)
    conf = {"bootstrap.servers": bootstrap, "client.id": kafka_ns.client_id, "log_level": 0}
    with ThrottledAdminClient(conf) as admin:
        created = admin.create_topics([NewTopic(name, 2, replica_assignment=[[away.node_id], [away.node_id]])])
        created[name].result(timeout=60)
    kafka_quorum.stop_node(away)  # a controlled shutdown: partitions 0 and 1 have no replica left to lead them
    try:
        with ThrottledAdminClient(conf) as admin:
            assert wait_until(lambda: _leaders(admin, name) == {0: -1, 1: -1}, timeout_s=60), _leaders(admin, name)
            # Partition 2 on a live node (the replica assignment names the added partitions only), then one that Kafka
            # places; each call's deadline is 20 s, and it was reached before (NotYetVisibleError naming the live
            # brokers, which listed every new partition with its leader).
            for grow in (NewPartitions(name, 3, replica_assignment=[[live[0].node_id]]), NewPartitions(name, 4)):
                admin.create_partitions([grow], wait_for_metadata=True, timeout_ms=20_000)[name].result(timeout=60)
            leaders = _leaders(admin, name)
            assert leaders[0] == leaders[1] == -1, leaders
            assert leaders[2] == live[0].node_id, leaders
            assert leaders[3] in {node.node_id for node in live}, leaders
            # Kafka refuses an added partition whose replicas are all away: what a grow adds is led once applied
            refused = admin.create_partitions(
                [NewPartitions(name, 5, replica_assignment=[[away.node_id]])], wait_for_metadata=True, timeout_ms=5_000
            )[name].exception(timeout=60)
            assert isinstance(refused, KafkaException), refused
            assert refused.args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT, refused
            assert "are fenced or in controlled shutdown" in refused.args[0].str(), refused  # Kafka's words
    finally:
        kafka_quorum.start_node(away)
        AdminClient({"bootstrap.servers": kafka_quorum.bootstrap_servers, "log_level": 0}).delete_topics([name])[
            name
        ].exception(timeout=60)
