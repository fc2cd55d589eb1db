"""A provisioning plan through a rolling restart of the three-node Kafka 4.4 quorum (issue 37): a node away for a
restart refuses creates of replication factor 3 with INVALID_REPLICATION_FACTOR ("only 2 broker(s) are
registered"), and the plan waits for it instead of ending those rows for good. Every outcome is checked against the
settled cluster, and a rerun of the plan is all ``unchanged``."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from throttled_admin.provisioning import PlanRow, Profile, Progress, RowResult, apply_plan, summarize

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TOPICS, PARTITIONS, RATE = 300, 2, 10.0  # 600 mutations at 10/s from a full burst of 110: about 49 s of pacing


def _delete(cluster: KafkaCluster, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    for future in admin.delete_topics(names, operation_timeout=60).values():
        future.exception(timeout=120)


def test_a_plan_of_replication_factor_3_waits_for_each_node_of_a_rolling_restart(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    kafka_quorum.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=RATE)
    conf = {"bootstrap.servers": kafka_quorum.bootstrap_servers, "client.id": kafka_ns.client_id, "log_level": "0"}
    profiles = {"quorum": Profile("quorum", conf, mutation_rate=RATE, request_timeout_s=30.0)}
    names = [kafka_ns.topic(f"rf3-{i:03d}") for i in range(TOPICS)]
    rows = [PlanRow("quorum", "ensure", name, PARTITIONS, 3) for name in names]
    some_done = threading.Event()

    def progress(update: Progress) -> None:
        if update.rows_done >= 10:
            some_done.set()

    job: Future[list[RowResult]] = Future()

    def run() -> None:
        try:
            job.set_result(apply_plan(rows, profiles, progress=progress))
        except BaseException as exc:  # the assertion below shows it
            job.set_exception(exc)

    threading.Thread(target=run, name="plan-through-a-roll", daemon=True).start()
    try:
        assert some_done.wait(timeout=120), "the plan made no progress"
        assert not job.done(), "the job ended before the roll began: make it longer"
        kafka_quorum.roll()  # each node stopped (controlled), started again and waited for, in turn
        results = job.result(timeout=600)
        failed = [(r.topic, r.error_name, r.error_message) for r in results if r.status != "created"]
        assert summarize(results) == {"created": TOPICS}, failed[:5]
        waited = [r for r in results if "waited" in (r.detail or "")]
        assert waited, "no row says it waited for a node that was away"
        assert kafka_quorum.topics(kafka_ns.prefix) == dict.fromkeys(names, PARTITIONS)

        again = apply_plan(rows, profiles)
        assert summarize(again) == {"unchanged": TOPICS}, [(r.topic, r.status, r.error_message) for r in again][:5]
        assert kafka_quorum.topics(kafka_ns.prefix) == dict.fromkeys(names, PARTITIONS)
    finally:
        job.exception(timeout=600)  # never leave the job running into the next test
        _delete(kafka_quorum, names)
