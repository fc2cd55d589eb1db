"""One provisioning job through the executor (``apply_plan``) and one through ``throttled-admin apply``, each on
Apache Kafka 4.4 under a real controller mutation quota; every row's outcome checked against what the broker
holds. The two tenants are SASL users with quotas of their own (user entities); the plaintext run has a client-id
entity of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import run_cli
from tests.real_kafka.broker import USERS, KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from throttled_admin.provisioning import PlanRow, apply_plan, summarize

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_apply_plan_on_kafka_two_tenants_each_paced_to_its_quota(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    # Quota entities: (user, this test's client id), 20/s and 40/s.
    rates = {"alice": 20.0, "bob": 40.0}
    for user, rate in rates.items():
        kafka_broker.set_quota(user=user, client_id=kafka_ns.client_id, controller_mutation_rate=rate)
    profiles = {
        user: kafka_broker.sasl_conf(user) | {"client.id": kafka_ns.client_id, "mutation_rate": rate}
        for user, rate in rates.items()
    }
    existing = {kafka_ns.topic(f"old-{i}"): 2 for i in range(3)}
    for topic, partitions in existing.items():
        kafka_broker_create(kafka_broker, topic, partitions)
    # Created is not yet listed: wait until Metadata shows them, as a job started later would find them.
    assert kafka_broker.topics(kafka_ns.prefix) == existing
    old = list(existing)
    rows = [PlanRow(user, "ensure", kafka_ns.topic(f"{user}-{i}"), 10, 1) for user in rates for i in range(30)]
    rows += [
        PlanRow("alice", "ensure", old[0], 2, 1),  # as planned already
        PlanRow("alice", "grow", old[1], 5),
        PlanRow("bob", "create", old[2], 10, 1),  # a create of a topic that exists fails, and changes nothing
    ]
    results = apply_plan(rows, profiles)
    status = {r.topic: r.status for r in results}
    failed = [(r.topic, r.error_code, r.error_message) for r in results if r.status == "failed"]
    assert summarize(results) == {"created": 60, "unchanged": 1, "grown": 1, "failed": 1}, failed
    assert (status[old[0]], status[old[1]], status[old[2]]) == ("unchanged", "grown", "failed")
    held = kafka_broker.topics(kafka_ns.prefix)
    assert held == {**{r.topic: 10 for r in rows[:60]}, old[0]: 2, old[1]: 5, old[2]: 2}
    for result in results:
        assert not any(secret in repr(result) for secret in USERS.values())


def kafka_broker_create(cluster: KafkaCluster, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "kafka-fixture"})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def test_throttled_admin_apply_on_kafka_then_a_rerun_is_unchanged(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace, tmp_path: Path
) -> None:
    kafka_broker.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=25)
    plan = tmp_path / "plan.csv"
    names = [kafka_ns.topic(f"a{i:02d}") for i in range(40)]
    plan.write_text(
        "cluster,action,topic,partitions,replication_factor,configs\n"
        + "".join(f"main,ensure,{n},8,1,retention.ms=60000\n" for n in names)
    )
    profiles = tmp_path / "profiles.yaml"
    conf = {"bootstrap.servers": kafka_broker.bootstrap_servers, "client.id": kafka_ns.client_id, "mutation_rate": 25}
    profiles.write_text(yaml.safe_dump({"main": conf}))
    base = ("apply", str(plan), "--profiles", str(profiles), "--output", "json")

    real = run_cli(*base, timeout_s=120)
    assert real.returncode == 0, real.output
    records = [json.loads(line) for line in real.stdout.splitlines()]
    rows, summary = records[:-1], records[-1]
    assert [(r["topic"], r["status"]) for r in rows] == [(n, "created") for n in names]
    assert summary["summary"] == {"created": 40}
    assert kafka_broker.topics(kafka_ns.prefix) == dict.fromkeys(names, 8)

    again = run_cli(*base, timeout_s=120)
    assert again.returncode == 0, again.output
    assert json.loads(again.stdout.splitlines()[-1])["summary"] == {"unchanged": 40}
