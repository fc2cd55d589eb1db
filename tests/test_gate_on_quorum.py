"""Issue 37's "throttle that no broker holds any more" on the three-node Kafka 4.4 quorum (``kafka_quorum``). The
principal's bucket lives at the active controller (a failover forgives the debt); the throttle mutes the connection
to the broker librdkafka sent the mutation to (docs/semantics.md, "The gate ends with its connection"). Restarting
that broker, and the active controller if it is another node, leaves no throttle anywhere: the next call goes as soon
as the probe's answer says so.

Was: refused at once, unsent, for the rest of the old throttle."""

from __future__ import annotations

import time

import pytest

from tests.gate_helpers import Disconnects, outcomes, throttled_client
from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

# 100 partitions at 1/s: about 89 s of throttle, so that two restarts on a loaded machine leave some of it
PARTITIONS = 100


def test_quorum_after_the_restarts_that_forgave_the_debt_the_next_call_goes_as_soon_as_a_fresh_answer_allows(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    kafka_quorum.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=1.0)
    watch = Disconnects()
    gone = {node.node_id: watch.expect(node.node_id) for node in kafka_quorum.nodes}
    admin, throttle_ends = throttled_client(
        kafka_quorum.bootstrap_servers, kafka_ns.client_id, kafka_ns.topic("big"), watch, PARTITIONS
    )
    carrier, active = watch.throttled_by[-1], kafka_quorum.active_controller()
    with admin:
        # The carrier first: librdkafka reports the close of a connection idle for over 60 s at debug level only.
        kafka_quorum.restart_node(kafka_quorum.node(carrier))
        assert gone[carrier].wait(60), f"librdkafka reported no disconnect of node {carrier}: {watch.lines}"
        if active != carrier:
            kafka_quorum.restart_node(kafka_quorum.node(active))  # the failover forgives the debt
        left_s = throttle_ends - time.monotonic()
        assert left_s > 3, f"the restarts took too long: the old throttle has only {left_s:.1f} s left"
        names = [kafka_ns.topic("after-1"), kafka_ns.topic("after-2")]
        told = outcomes(admin, names, timeout_s=min(10.0, left_s - 2))
        assert told == dict.fromkeys(names), (
            f"{told} (throttled through node {carrier}, active controller {active}; {left_s:.1f} s of it left)"
        )
    assert set(names) <= set(kafka_quorum.topics(kafka_ns.prefix))
