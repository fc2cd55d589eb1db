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

from tests.support import REPO
from throttled_admin import demo
from throttled_admin.demo._fleet import steady_rate
from throttled_admin.testing import QuotaBroker

pytestmark = pytest.mark.slow  # a Spark session, and (some) a JVM of its own


def test_demo_provisions_every_topic_through_spark_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In-process (``python -m throttled_admin.demo`` only adds ``raise SystemExit(main())``): the test
    # session's Spark JVM is then started once, not once more per subprocess.
    png = tmp_path / "admitted.png"
    code = demo.main(["--topics", "60", "--plot", str(png), "--progress-interval", "1"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, out + captured.err[-3000:]
    assert "plan: 60 topics, 162 mutations, 6 quota entities" in out
    assert "result: 60 of 60 rows reported: created 60" in out
    # the last progress lines, as the pipeline ends, say every topic came (helper 118: the last tick said 242/250)
    last = out[: out.index("pipeline finished in")].splitlines()[-2:]
    assert [re.sub(r"^ +[\d.]+ s ", "", line).split("mutations")[0].split() for line in last] == [
        ["east:", "topics", "30/30"],
        ["west:", "topics", "30/30"],
    ], last
    assert "rerun of the same plan: unchanged 60" in out
    for entity in ("east-payments", "east-search", "east-analytics", "west-payments", "west-search", "west-analytics"):
        assert re.search(rf"^  {entity} +\d+/s +\d+ ", out, re.MULTILINE), entity
    # Beside the paced run, the baseline (issue 38: the demo showed what happened, not why it matters): payments'
    # 9 topics of 2 partitions on east at once, 18 mutations within the burst of 55, so nothing is throttled at this
    # size; the table says which rate it shows, and what each column means.
    assert re.search(r"^  east-payments unpaced +5/s +18 +0\.0s +0\.0s +at once +0/1 +0 ms +none$", out, re.M), out
    rows = re.findall(r"^  ((?:east|west)-\w+(?: unpaced)?) ", out, re.M)
    assert rows[-1] == "east-payments unpaced", rows  # last, as the README says (a new user found it fourth)
    assert "steady rate" in out
    assert "steady rate: the mutations past the burst of 11 R (admitted at once) per second of took" in out
    assert "why pace: the payments rows of east (9 topics created, 0 failed)" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "sasl.password" not in out + captured.err
    # Spark's start-up log, named as it starts, is removed once the run succeeds (a new user found one left in the
    # temporary directory by every run)
    log = re.search(r"its start-up log: (\S+), removed unless the run fails", out)
    assert log is not None, out
    assert not Path(log.group(1)).parent.exists()


def test_demo_module_runs_as_a_script() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "throttled_admin.demo", "--help"], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    assert "--profiles" in result.stdout


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


def test_the_steady_rate_is_the_rate_after_the_burst() -> None:
    """Issue 38: `east-analytics 20/s ... rate 74.1/s` counted the burst, which the pacer sends in a few requests
    at once: here 6, then 114, then 100 mutations, then 20 every second, on the 20/s quota's envelope."""
    steps = [(10.0, 6), (10.02, 120), (10.04, 220), *((10.0 + s, 220 + 20 * s) for s in range(1, 5))]
    assert steady_rate(steps, 20.0) == pytest.approx(20.0)
    assert steady_rate([(0.0, 150)], 5.0) is None  # the unpaced baseline: all at once
    assert steady_rate([(0.0, 10), (1.0, 18)], 5.0) is None  # all within the burst of 55
