"""Issue 37's "throttle that no broker holds any more" on Apache Kafka 4.4 itself: a one-node broker restarted on its
ports and data starts its quota sensors fresh, so a throttle drawn before the restart is owed to no one
(docs/semantics.md, "The gate ends with its connection"). The cluster is this module's own: the test restarts it.

Was: the gate, a local deadline, outlived the connection that carried it: a call whose deadline was shorter than the
rest of the old throttle was refused at once, unsent (``ThrottlingQuotaExceededException (throttle_time_ms=45970)``),
where bare confluent-kafka created the topic in 0.1 s."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from tests.gate_helpers import BIG, Disconnects, outcomes, throttled_client
from tests.real_kafka.broker import BrokerSpec, KafkaCluster, running_cluster
from tests.real_kafka.namespace import KafkaNamespace
from throttled_admin import MutationQuota, NewTopic, ThrottlingQuotaExceededException

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.cluster]  # make test-cluster (restarts, long debts)

LONG = 120  # partitions: a create admitted and throttled about 109 s


@pytest.fixture(scope="module")
def restartable() -> Iterator[KafkaCluster]:
    with running_cluster(BrokerSpec(), "kafka-gate-") as cluster:
        yield cluster


def test_kafka_after_a_restart_the_next_call_goes_as_soon_as_a_fresh_answer_allows(
    restartable: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    restartable.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=1.0)
    watch = Disconnects()
    node = restartable.nodes[0]
    gone = watch.expect(node.node_id)
    # 120 partitions at 1/s: a throttle of about 109 s, which no restart under load uses up before the 10 s call ends
    admin, throttle_ends = throttled_client(
        restartable.bootstrap_servers, kafka_ns.client_id, kafka_ns.topic("big"), watch, partitions=LONG
    )
    with admin:
        restartable.restart_node(node)
        assert gone.wait(60), f"librdkafka reported no disconnect: {watch.lines}"
        names = [kafka_ns.topic("after-1"), kafka_ns.topic("after-2")]
        # shorter than the rest of the old throttle: it was refused at once, unsent
        told = outcomes(admin, names, timeout_s=10.0)
        left_s = throttle_ends - time.monotonic()  # for the message only: never asserted (wall clock)
        assert told == dict.fromkeys(names), f"{told} (the old throttle had {left_s:.1f} s left after the call)"
    assert set(names) <= set(restartable.topics(kafka_ns.prefix))


def test_kafka_after_a_restart_a_paced_client_waits_out_no_debt_its_mirror_held(
    restartable: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    """Paced at the quota (1/s, Kafka's burst of 11), the 60-partition create left the pacer's mirror owing what the
    broker did (about 49 s). After the restart the probe goes past that debt, and its unthrottled answer clears it
    (docs/semantics.md, "The gate ends with its connection"): the next topics go within the call's 15 s, one token
    each. Was: the mirror held the old debt, longer than the call, and refused the call at once, unsent."""
    restartable.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=1.0)
    watch = Disconnects()
    node = restartable.nodes[0]
    gone = watch.expect(node.node_id)
    admin, throttle_ends = throttled_client(
        restartable.bootstrap_servers,
        kafka_ns.client_id,
        kafka_ns.topic("big"),
        watch,
        mutation_quota=MutationQuota(rate=1.0),
    )
    with admin:
        restartable.restart_node(node)
        assert gone.wait(60), f"librdkafka reported no disconnect: {watch.lines}"
        left_s = throttle_ends - time.monotonic()
        names = [kafka_ns.topic(f"after-{i}") for i in range(3)]
        told = outcomes(admin, names, timeout_s=15.0)
        assert left_s > 17, f"the restart took too long: the old debt has only {left_s:.1f} s left"
        assert told == dict.fromkeys(names), f"{told} (the old debt had {left_s:.1f} s left)"
        assert admin.metrics()["throttled-response-total"] == 1, "only the 60-partition create was throttled"
    assert {kafka_ns.topic("big"), *names} <= set(restartable.topics(kafka_ns.prefix))


def test_kafka_a_debt_owed_after_the_restart_is_the_probes_throttle_and_the_gate_keeps_it(
    restartable: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    """As after a restart of a quorum's non-controller node, the debt is still owed: drawn again, after the restart, by
    another client of the entity. The probe's answer carries it, and the gate keeps it."""
    restartable.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=1.0)
    watch = Disconnects()
    node = restartable.nodes[0]
    gone = watch.expect(node.node_id)
    admin, _ = throttled_client(restartable.bootstrap_servers, kafka_ns.client_id, kafka_ns.topic("big"), watch)
    with admin:
        restartable.restart_node(node)
        assert gone.wait(60), f"librdkafka reported no disconnect: {watch.lines}"
        other = AdminClient(
            {"bootstrap.servers": restartable.bootstrap_servers, "client.id": kafka_ns.client_id, "log_level": 0}
        )
        other.create_topics([NewTopic(kafka_ns.topic("other"), BIG, 1)])[kafka_ns.topic("other")].result(60)
        told = outcomes(admin, [kafka_ns.topic("probe"), kafka_ns.topic("next")], timeout_s=10.0)
    assert told[kafka_ns.topic("probe")] is None, "the probe: admitted (librdkafka's request version), throttled"
    refused = told[kafka_ns.topic("next")]
    assert isinstance(refused, ThrottlingQuotaExceededException), refused
    assert refused.throttle_time_ms > 30_000, "the fresh answer's throttle, kept"
