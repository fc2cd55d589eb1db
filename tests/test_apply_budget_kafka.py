"""The debt scenario of tests/test_apply_budget.py on Apache Kafka 4.4 (issue 38, item 1): a principal (this test's
client id, 2 mutations/s) that owes just over a minute of quota, then a 10-row ``throttled-admin apply`` of the same
principal: the dry run reports the debt; with ``--timeout`` shorter than the debt one row is sent and the others are
``not_sent``; without ``--timeout`` the debt is waited out and every row created. Kafka admits librdkafka's v4
CreateTopics over the quota and throttles it (never error 89)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli
from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.test_apply_budget import RATE, ROWS, owe_just_over_a_minute, records, write_plan

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.cluster]  # make test-cluster (restarts, long debts)


def test_apply_of_a_principal_that_owes_a_minute_on_kafka(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace, tmp_path: Path
) -> None:
    kafka_broker.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=RATE)
    owed_ms = owe_just_over_a_minute(kafka_broker.bootstrap_servers, kafka_ns.client_id, kafka_ns.topic("debt"))
    assert owed_ms > 60_000
    plan = tmp_path / "plan.csv"
    names = write_plan(plan, kafka_ns.prefix)
    (tmp_path / "client.properties").write_text(f"client.id={kafka_ns.client_id}\n")
    base = (
        "apply", str(plan), "--bootstrap-server", kafka_broker.bootstrap_servers,
        "--command-config", str(tmp_path / "client.properties"), "--mutation-rate", str(RATE),
    )  # fmt: skip

    dry = run_cli(*base, "--dry-run", "--output", "json")
    assert dry.returncode == 0, dry.output
    _, summary = records(dry.stdout)
    assert summary["quota_debt_ms"]["main"] > 10_000, summary

    short = run_cli(*base, "--timeout", "10", "--output", "json", timeout_s=120)
    assert short.returncode == 1, short.output
    rows, summary = records(short.stdout)
    assert summary["summary"] == {"created": 1, "not_sent": ROWS - 1}, rows
    for row in rows:
        if row["status"] == "not_sent":
            assert (row["attempts"], row["error_code"]) == (0, None), row
            assert row["quota_debt_ms"] > 10_000, row  # held past the 10 s budget
    assert set(kafka_broker.topics(kafka_ns.prefix)) == {
        kafka_ns.topic("debt"),
        *(r["topic"] for r in rows if r["status"] == "created"),
    }

    full = run_cli(*base, timeout_s=300)
    assert full.returncode == 0, full.output
    assert "waiting out throttle:" in full.stdout, full.stdout  # the plain progress line when the throttle began
    assert set(kafka_broker.topics(kafka_ns.prefix)) == {kafka_ns.topic("debt"), *names}
    again = run_cli(*base, "--output", "json", timeout_s=300)
    assert json.loads(again.stdout.splitlines()[-1])["summary"] == {"unchanged": ROWS}, again.output
