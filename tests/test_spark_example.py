"""examples/spark_provision.py's own checks, before Spark starts. The example under spark-submit, a plan in and
every row's outcome out as Parquet, runs on a standalone cluster in tests/test_spark_standalone.py and as a Spark
Connect client in tests/test_spark_connect.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from tests.support import REPO

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
