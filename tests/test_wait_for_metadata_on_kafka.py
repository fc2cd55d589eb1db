"""``wait_for_metadata`` on a real multi-node Apache Kafka 4.4 cluster: one controller and two brokers.

A real cluster has almost no metadata lag, so the test makes some: it stops one broker with SIGSTOP for about
2 s while the topics are created. That broker then neither replays the metadata log nor answers. A topic's
future must resolve only once *every* broker's own Metadata lists it with a leader for every partition, which an
independent client (kafka-python's protocol classes on the test's own sockets) checks the moment each resolves.
The cluster is this module's own (its brokers are paused), started and stopped here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.real_kafka.broker import BrokerSpec, KafkaCluster, Node, running_cluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.wire import WireClient
from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PAUSE_S = 2.0  # the induced lag: how long one broker stays stopped


@pytest.fixture(scope="module")
def two_brokers() -> Iterator[KafkaCluster]:
    # A stopped broker must lag, not leave: a controller fences a broker whose heartbeats stop for
    # broker.session.timeout.ms (9 s by default, reached on a loaded machine), and a fenced broker is no longer
    # listed in Metadata, so nothing waits for it. 60 s keeps the stopped broker in the cluster.
    spec = BrokerSpec(brokers=2, extra=(("broker.session.timeout.ms", "60000"),))
    with running_cluster(spec, "kafka-3-nodes-") as cluster:
        yield cluster


def listed(cluster: KafkaCluster) -> dict[int, dict[str, int]]:
    """Node id -> (topic -> partitions with a leader), asked of each broker itself."""
    views = {}
    for node in cluster.brokers:
        with WireClient(f"127.0.0.1:{node.plaintext_port}", client_id="kafka-fixture") as wire:
            response = wire.request(MetadataRequest(version=1, topics=None))
        views[node.node_id] = {
            t.name: sum(1 for p in t.partitions if p.error_code == 0 and p.leader_id >= 0)
            for t in response.topics
            if t.error_code == 0
        }
    return views


@contextmanager
def lag(cluster: KafkaCluster, node: Node) -> Iterator[threading.Event]:
    """``node`` stopped for PAUSE_S (then resumed by a timer): the event says it has been resumed."""
    resumed = threading.Event()

    def resume() -> None:
        resumed.set()
        cluster.resume(node)

    cluster.pause(node)
    timer = threading.Timer(PAUSE_S, resume)
    timer.start()
    try:
        yield resumed
    finally:
        timer.cancel()
        cluster.resume(node)


def test_every_broker_lists_the_topic_when_its_future_resolves(
    two_brokers: KafkaCluster, request: pytest.FixtureRequest
) -> None:
    """Creates, grows and deletes, each while one broker is stopped: no future resolves before that broker is
    back and shows the change itself (each phase fails with wait_for_metadata off)."""
    ns = KafkaNamespace.for_test(request.node.nodeid)
    lagging = two_brokers.brokers[-1]
    names = [ns.topic(f"v{i}") for i in range(6)]
    with ThrottledAdminClient({"bootstrap.servers": two_brokers.bootstrap_servers, "client.id": ns.client_id}) as admin:
        admin.list_topics(timeout=10)  # connected to both brokers before one stops
        seen = {}
        with lag(two_brokers, lagging) as resumed:
            futures = admin.create_topics([NewTopic(n, 4, 1) for n in names], wait_for_metadata=True)
            for name, future in futures.items():
                assert future.exception(60) is None, name
                assert resumed.is_set()  # the stopped broker could not have listed it before
                seen[name] = listed(two_brokers)
        for name, views in seen.items():
            for node_id, topics in views.items():
                assert topics.get(name) == 4, f"{name} resolved while node {node_id} listed {topics.get(name)}"

        with lag(two_brokers, lagging) as resumed:
            grown = admin.create_partitions([NewPartitions(n, 6) for n in names], wait_for_metadata=True)
            for name, future in grown.items():
                assert future.exception(60) is None
                assert resumed.is_set()
                assert all(topics.get(name) == 6 for topics in listed(two_brokers).values())
        with lag(two_brokers, lagging) as resumed:
            deleted = admin.delete_topics(names, wait_for_metadata=True)
            for name, future in deleted.items():
                assert future.exception(60) is None
                assert resumed.is_set()
                assert all(name not in topics for topics in listed(two_brokers).values())
