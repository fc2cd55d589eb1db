"""examples/spark_provision.py on a Spark standalone cluster, as users deploy it: a master and a worker
(pyspark's bin/spark-class) on 127.0.0.1 with free ports and their own work directory, the job through
``spark-submit --master spark://...`` in client mode, so driver, worker and executor are separate
processes. Two QuotaBrokers, one with SASL: every row truthful, and the password in no output, log or file."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pq: Any = pytest.importorskip("pyarrow.parquet")

from tests.spark_helpers import east_and_west, spark_bin, spark_env, spark_process  # noqa: E402
from tests.support import REPO, BrokerFactory, free_port  # noqa: E402

pytestmark = pytest.mark.slow  # a master, a worker, an executor and a driver: four JVMs

PASSWORD = "standalone-pw-8e27b4"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(master URL, the worker's work directory)."""
    base = tmp_path_factory.mktemp("standalone")
    work = base / "work"
    work.mkdir()
    master_port, master_ui, worker_port, worker_ui = (free_port() for _ in range(4))
    env = spark_env(SPARK_LOG_DIR=str(base), SPARK_WORKER_DIR=str(work), SPARK_LOCAL_DIRS=str(base / "local"))
    spark_class = str(spark_bin("spark-class"))
    master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
    master += ["--port", str(master_port), "--webui-port", str(master_ui)]
    url = f"spark://127.0.0.1:{master_port}"
    worker = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1"]
    worker += ["--port", str(worker_port), "--webui-port", str(worker_ui), "--work-dir", str(work)]
    worker += ["--cores", "2", "--memory", "1g", url]
    with ExitStack() as stack:
        stack.enter_context(spark_process(master, base / "master.log", master_port, env, "the Spark master"))
        stack.enter_context(spark_process(worker, base / "worker.log", worker_port, env, "the Spark worker"))
        yield url, work


def test_the_example_under_spark_submit_on_a_standalone_cluster(
    standalone: tuple[str, Path], quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    url, work = standalone
    east, west, profiles = east_and_west(quota_broker, PASSWORD)
    (tmp_path / "profiles.json").write_text(json.dumps(profiles))
    lines = ["cluster,action,topic,partitions,replication_factor,configs"]
    lines += [f'east,ensure,orders.{i:02d},3,1,"cleanup.policy=compact, delete"' for i in range(30)]
    lines += [f"west,create,audit.{i:02d},2,,retention.ms= 86400000" for i in range(29)]
    lines += ["west,delete,legacy,,,"]
    (tmp_path / "plan.csv").write_text("\n".join(lines) + "\n")
    output = tmp_path / "results.parquet"
    command = [str(spark_bin("spark-submit")), "--master", url, "--deploy-mode", "client"]
    for key, value in {
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.memory": "1g",
        "spark.executor.cores": "2",
        "spark.cores.max": "2",
        "spark.pyspark.python": spark_env()["PYSPARK_PYTHON"],
        "spark.executorEnv.PYTHONPATH": spark_env()["PYTHONPATH"],
        "spark.local.dir": str(tmp_path / "driver-local"),
    }.items():
        command += ["--conf", f"{key}={value}"]
    command += ["examples/spark_provision.py", str(tmp_path / "plan.csv"), str(tmp_path / "profiles.json")]
    command += ["--output", str(output), "--allow-delete"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=REPO, env=spark_env())

    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    assert "60 rows: created 59, deleted 1" in run.stdout
    table = pq.read_table(output).to_pylist()
    statuses = {(r["cluster"], r["topic"]): r["status"] for r in table}
    assert len(statuses) == 60
    assert east.topics() == {f"orders.{i:02d}": 3 for i in range(30)}
    assert west.topics() == {f"audit.{i:02d}": 2 for i in range(29)}
    assert all(s == "created" for (cluster, topic), s in statuses.items() if topic != "legacy")
    assert statuses[("west", "legacy")] == "deleted"
    # The job really ran on the cluster: the worker started an executor for it, which logged to the work dir.
    executor_logs = list(work.glob("app-*/*/stderr"))
    assert executor_logs, sorted(str(p) for p in work.rglob("*"))[:20]
    for text in [run.stdout, run.stderr, repr(table)]:
        assert PASSWORD not in text
    for path in work.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
