"""examples/spark_provision.py under spark-submit: a plan file in, every row's outcome out as Parquet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pq: Any = pytest.importorskip("pyarrow.parquet")

from tests.conftest import REPO  # noqa: E402
from throttled_admin.testing import QuotaBroker  # noqa: E402

pytestmark = pytest.mark.slow  # a Spark session, and (some) a JVM of its own

PASSWORD = "example-pw-5be1d0"


def test_spark_submit_applies_a_csv_plan_and_writes_parquet(tmp_path: Path, quota_broker: Any) -> None:
    broker: QuotaBroker = quota_broker(users={"alice": PASSWORD})
    broker.set_quota(user="alice", controller_mutation_rate=20)
    profiles = {
        "east": {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": PASSWORD,
            "mutation_rate": 20,
        }
    }
    (tmp_path / "profiles.json").write_text(json.dumps(profiles))
    lines = ["cluster,action,topic,partitions,replication_factor,configs"]
    lines += [f"east,ensure,orders.{i:02d},3,1,retention.ms=86400000" for i in range(12)]
    lines += ["east,delete,legacy,,,"]
    (tmp_path / "plan.csv").write_text("\n".join(lines) + "\n")
    broker.create_topic("legacy", 2)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYSPARK_PYTHON": sys.executable}
    command = [str(bin_dir / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    command += ["examples/spark_provision.py", str(tmp_path / "plan.csv"), str(tmp_path / "profiles.json")]
    command += ["--output", str(tmp_path / "results.parquet")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=REPO, env=env)

    assert result.returncode == 1, result.stderr[-3000:]  # the refused delete is a failed row
    assert "13 rows: created 12, failed 1" in result.stdout
    assert "failed: east/legacy: refused: pass allow_delete=True" in result.stdout
    table = pq.read_table(tmp_path / "results.parquet").to_pylist()
    assert sorted(r["topic"] for r in table) == sorted([f"orders.{i:02d}" for i in range(12)] + ["legacy"])
    assert set(broker.topics()) == {f"orders.{i:02d}" for i in range(12)} | {"legacy"}
    assert PASSWORD not in result.stdout + result.stderr + repr(table)


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
