"""``make demo``'s job, run as a user runs it: the Spark pipeline against two embedded QuotaBroker clusters
(a small topic count), and ``--profiles`` against a cluster given from outside."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")

from tests.conftest import REPO
from throttled_admin import demo
from throttled_admin.testing import QuotaBroker

pytestmark = pytest.mark.slow  # a Spark session, and (some) a JVM of its own


def test_demo_provisions_every_topic_through_spark_and_plots(tmp_path: Path) -> None:
    png = tmp_path / "admitted.png"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "throttled_admin.demo",
            "--topics",
            "60",
            "--plot",
            str(png),
            "--progress-interval",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "plan: 60 topics, 162 mutations, 6 quota entities" in out
    assert "result: 60 of 60 rows reported: created 60" in out
    assert "rerun of the same plan: unchanged 60" in out
    for entity in ("east-payments", "east-search", "east-analytics", "west-payments", "west-search", "west-analytics"):
        assert re.search(rf"^  {entity} +\d+/s +\d+ ", out, re.MULTILINE), entity
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "sasl.password" not in out + result.stderr


def test_demo_against_clusters_from_a_profiles_file(
    tmp_path: Path, quota_broker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    broker: QuotaBroker = quota_broker(controller_mutation_rate=50)
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps({"prod": {"bootstrap.servers": broker.bootstrap_servers, "mutation_rate": 50}}))
    code = demo.main(["--profiles", str(profiles), "--topics", "8", "--no-rerun", "--plot", "", "--prefix", "app"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "result: 8 of 8 rows reported: created 8" in out
    assert broker.topics() == {f"app.prod.{i:04d}": 3 for i in range(8)}


def test_demo_rejects_a_bad_profiles_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("prod: {mutation_rate: 5}\n")
    assert demo.main(["--profiles", str(profiles)]) == 2
    assert "profile 'prod': field 'bootstrap.servers': missing" in capsys.readouterr().err
