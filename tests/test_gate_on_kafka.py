"""Issue 37's "throttle that no broker holds any more" on Apache Kafka 4.4 itself: a one-node broker restarted on its
ports and data starts its quota sensors fresh, so a throttle drawn before the restart is owed to no one
(docs/semantics.md, "The gate ends with its connection"). The cluster is this module's own: the test restarts it.

Was: the gate, a local deadline, outlived the connection that carried it: a call whose deadline was shorter than the
rest of the old throttle was refused at once, unsent (``ThrottlingQuotaExceededException (throttle_time_ms=45970)``),
where bare confluent-kafka created the topic in 0.1 s."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.real_kafka.broker import BrokerSpec, KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from throttled_admin import NewTopic, ThrottledAdminClient

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

BIG = 60  # partitions: at 1/s with Kafka's burst of 11, admitted and throttled about 49 s


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster.start(BrokerSpec(), Path(tmp_path_factory.mktemp("kafka-gate")))
    try:
        yield cluster
    finally:
        cluster.stop()


class Disconnects:
    """The ``logger`` from conf: librdkafka's lines reach it after the client has read them (``librdkafka_log``), so
    once it has seen a node's connection fail, so has the client's engine."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.seen: dict[int, threading.Event] = {}

    def log(self, level: int, fmt: str, *args: Any) -> None:
        line = fmt % args
        self.lines.append(line)
        for node, event in self.seen.items():
            if f"/{node}: Disconnected" in line:
                event.set()

    def expect(self, node: int) -> threading.Event:
        return self.seen.setdefault(node, threading.Event())


def throttled_client(
    cluster: KafkaCluster, ns: KafkaNamespace, logger: Disconnects
) -> tuple[ThrottledAdminClient, float]:
    """A client whose 60-partition create was admitted and throttled; returns it and when the throttle ends."""
    cluster.set_quota(client_id=ns.client_id, controller_mutation_rate=1.0)
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "client.id": ns.client_id, "logger": logger, "log_level": 6}
    admin = ThrottledAdminClient(conf)
    admin.create_topics([NewTopic(ns.topic("big"), BIG, 1)])[ns.topic("big")].result(120)
    throttle_s = admin.metrics()["throttle-time-max"] / 1000
    assert throttle_s > 40, f"the create drew a {throttle_s} s throttle"
    return admin, time.monotonic() + throttle_s


def test_kafka_after_a_restart_the_next_call_goes_as_soon_as_a_fresh_answer_allows(
    restartable: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    logger = Disconnects()
    admin, throttle_ends = throttled_client(restartable, kafka_ns, logger)
    with admin:
        gone = logger.expect(restartable.nodes[0].node_id)
        restartable.restart_node(restartable.nodes[0])
        assert gone.wait(60), f"librdkafka reported no disconnect: {logger.lines}"
        left_s = throttle_ends - time.monotonic()
        assert left_s > 3, f"the restart took too long: the old throttle has only {left_s:.1f} s left"
        timeout_s = min(10.0, left_s - 2)  # shorter than the rest of the old throttle: it was refused at once
        names = [kafka_ns.topic("after-1"), kafka_ns.topic("after-2")]
        futures = admin.create_topics([NewTopic(n, 1, 1) for n in names], timeout_ms=int(timeout_s * 1000))
        outcomes = {name: future.exception(60) for name, future in futures.items()}
        assert outcomes == dict.fromkeys(names), f"{outcomes} (the old throttle had {left_s:.1f} s left)"
    assert set(names) <= set(restartable.topics(kafka_ns.prefix))
