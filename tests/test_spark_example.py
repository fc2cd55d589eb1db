"""examples/spark_provision.py's own checks, before Spark starts. The example under spark-submit, a plan in and
every row's outcome out as Parquet, runs on a standalone cluster in tests/test_spark_standalone.py and as a Spark
Connect client in tests/test_spark_connect.py."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from tests.support import REPO
from throttled_admin.testing import QuotaBroker

pytestmark = pytest.mark.slow  # a Spark session, and (some) a JVM of its own


def test_a_malformed_plan_stops_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(
        "- {cluster: east, action: ensure, topic: ok}\n- {cluster: east, action: grow}\n"
    )
    (tmp_path / "profiles.yaml").write_text("east: {bootstrap.servers: '127.0.0.1:1'}\n")
    result = subprocess.run(
        [
            sys.executable,
            "examples/spark_provision.py",
            str(tmp_path / "plan.yaml"),
            str(tmp_path / "profiles.yaml"),
            "--output",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 2
    assert "plan.yaml: row 2: field 'topic': missing" in result.stderr


def test_a_dry_run_prints_the_predicted_time_and_driver_execution_is_an_option(
    tmp_path: Path, quota_broker: Callable[..., QuotaBroker]
) -> None:
    """The dry run's prediction per cluster and in total, as `throttled-admin apply --dry-run` shows it: 10 topics
    of 3 partitions at 2 mutations/s from a full burst of 22 take (30 - 22) / 2 = 4 s; a cluster without
    mutation_rate cannot be predicted, nor then the total. With --execution driver the calls come from this
    process (Spark Connect, serverless). A delete without --allow-delete is refused in the script's terms (the
    pipeline's words name its Python parameter), and nothing is deleted. (One run of the script: each starts Spark.)"""
    broker, other = quota_broker(controller_mutation_rate=2), quota_broker(controller_mutation_rate=2)
    broker.create_topic("old", 1)
    plan = "cluster,action,topic,partitions\n" + "".join(
        f"{cluster},ensure,{cluster}.t{i},3\n" for cluster in ("paced", "learned") for i in range(10)
    )
    (tmp_path / "plan.csv").write_text(plan + "paced,delete,old,\n")
    (tmp_path / "profiles.yaml").write_text(
        f"paced: {{bootstrap.servers: '{broker.bootstrap_servers}', mutation_rate: 2}}\n"
        f"learned: {{bootstrap.servers: '{other.bootstrap_servers}'}}\n"
    )
    result = subprocess.run(
        [sys.executable, "examples/spark_provision.py", str(tmp_path / "plan.csv"), str(tmp_path / "profiles.yaml"),
         "--output", str(tmp_path / "out"), "--dry-run", "--execution", "driver"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    assert "failed: paced/old: refused: pass --allow-delete to delete topics\n" in result.stdout
    assert "allow_delete" not in result.stdout
    assert "21 rows: failed 1, planned 20\n" in result.stdout
    assert (
        "predicted duration (at each cluster's quota, from a full burst; ? = no mutation_rate in its profile):\n"
        "  learned: 30 mutations, ?\n"
        "  paced: 30 mutations, 4.0 s\n"
        "  total (clusters in parallel): ?\n"
    ) in result.stdout
    assert list(broker.topics()) == ["old"]
    assert other.topics() == {}
    for each in (broker, other):
        assert not [r for r in each.request_log() if r.api_name == "DeleteTopics"]
        creates = [r for r in each.request_log() if r.api_name == "CreateTopics"]
        assert all(r.validate_only for r in creates), creates  # a dry run applies nothing: at most its debt read


def test_execution_takes_only_executors_or_driver(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "examples/spark_provision.py", "plan.csv", "profiles.yaml", "--output", str(tmp_path),
         "--execution", "serverless"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 2
    assert "argument --execution: invalid choice: 'serverless' (choose from" in result.stderr
