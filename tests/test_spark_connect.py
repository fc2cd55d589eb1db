"""``throttled_admin.spark.apply_plan`` on a Spark Connect session: pyspark's own Spark Connect server
(``SparkConnectServer`` under spark-submit), started on 127.0.0.1 and a free port by this module and
stopped by it, against two QuotaBrokers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("grpc")  # pyspark's connect extra, which the project's spark extra pulls in

from tests.spark_helpers import CONNECT_ENV, both_modes_agree, east_and_west, spark_bin, spark_env, spark_process
from tests.support import REPO, BrokerFactory, free_port
from throttled_admin.provisioning import PlanRow
from throttled_admin.spark import apply_plan, plan_dataframe

pytestmark = pytest.mark.slow  # a Spark Connect server: a JVM of its own

PASSWORD = "connect-pw-0c41d9"


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """pyspark's Spark Connect server on 127.0.0.1 and a free port: its sc:// URL."""
    work = tmp_path_factory.mktemp("spark-connect")
    port = free_port()
    command = [str(spark_bin("spark-submit")), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    command += ["--master", "local[2,4]", "--name", "throttled-admin-connect-tests"]
    for key, value in {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.local.dir": str(work),
        "spark.sql.shuffle.partitions": "2",
    }.items():
        command += ["--conf", f"{key}={value}"]
    with spark_process(command, work / "server.log", port, spark_env(), "the Spark Connect server"):
        yield f"sc://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def connect_session(connect_server: str) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    # A remote session leaves SPARK_CONNECT_MODE_ENABLED set in os.environ after stop(), which would turn
    # every later session of this process (and the Spark processes it starts) into a Connect one.
    saved = {key: os.environ.get(key) for key in CONNECT_ENV}
    session = SparkSession.builder.remote(connect_server).getOrCreate()
    try:
        yield session
    finally:
        session.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_apply_plan_on_a_spark_connect_session(connect_session: Any, quota_broker: BrokerFactory) -> None:
    spark = connect_session
    assert type(spark).__module__.startswith("pyspark.sql.connect")  # no sparkContext, no RDDs
    with pytest.raises(Exception, match="JVM_ATTRIBUTE_NOT_SUPPORTED"):
        spark.sparkContext  # noqa: B018  (what apply_plan used to read)
    east, west, profiles = east_and_west(quota_broker, PASSWORD)
    profiles["east"]["request_timeout_s"] = 5
    rows = [
        PlanRow("east", "ensure", f"e.{i:02d}", 3, configs={"cleanup.policy": "compact, delete"}) for i in range(10)
    ]
    rows += [PlanRow("west", "create", f"w.{i:02d}", 2) for i in range(10)]
    rows += [PlanRow("west", "delete", "legacy"), PlanRow("nowhere", "ensure", "x", 1)]
    df = plan_dataframe(spark, rows, num_partitions=2)
    results = {(r["cluster"], r["topic"]): r.asDict() for r in apply_plan(df, profiles, allow_delete=True).collect()}
    assert len(results) == len(rows)
    assert {k: v["status"] for k, v in results.items() if v["status"] != "created"} == {
        ("west", "legacy"): "deleted",
        ("nowhere", "x"): "failed",
    }
    assert east.topics() == {f"e.{i:02d}": 3 for i in range(10)}
    assert west.topics() == {f"w.{i:02d}": 2 for i in range(10)}
    assert PASSWORD not in repr(results)
    rerun = apply_plan(df, profiles, allow_delete=True)
    counts = {r["status"]: r["count"] for r in rerun.groupBy("status").count().collect()}
    assert counts == {"unchanged": 21, "failed": 1}


def test_executors_and_driver_give_the_same_rows_on_spark_connect(
    connect_session: Any, quota_broker: BrokerFactory
) -> None:
    # With the driver, the admin calls are made here, in the Spark Connect client; the server only reads
    # the plan and holds the result rows.
    assert len(both_modes_agree(connect_session, quota_broker, PASSWORD)) == 19


def test_the_example_as_a_spark_connect_client(
    connect_server: str, quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    broker = quota_broker(users={"alice": PASSWORD})
    broker.set_quota(user="alice", controller_mutation_rate=50)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT"}
    conf |= {"sasl.mechanisms": "PLAIN", "sasl.username": "alice", "sasl.password": PASSWORD}
    (tmp_path / "profiles.json").write_text(json.dumps({"west": conf}))
    (tmp_path / "plan.csv").write_text(
        "cluster,action,topic,partitions\n" + "".join(f"west,ensure,x.{i},2\n" for i in range(8))
    )
    command = [
        sys.executable,
        "examples/spark_provision.py",
        str(tmp_path / "plan.csv"),
        str(tmp_path / "profiles.json"),
    ]
    command += ["--output", str(tmp_path / "out.parquet")]
    run = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        # PySpark's own switch for troubleshooting: the client logs each request, the task's pickled function in it
        # (every profile's password showed there, helper 129)
        env={**spark_env(), "SPARK_REMOTE": connect_server, "SPARK_CONNECT_LOG_LEVEL": "debug"},
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "8 rows: created 8" in run.stdout
    assert broker.topics() == {f"x.{i}": 2 for i in range(8)}
    assert "ExecuteAndFetchAsIterator. Request" in run.stderr  # (the requests were logged)
    assert PASSWORD not in run.stdout + run.stderr


def test_the_server_log_holds_no_secret(connect_server: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    # Runs after the tests above in this module: nothing the server or its tasks wrote (its log, its
    # local dirs) carries the SASL password. (The tests' own profiles files do, and are not looked at.)
    work = list(tmp_path_factory.getbasetemp().glob("spark-connect*"))
    assert work
    files = [path for base in work for path in base.rglob("*") if _small_file(path)]
    assert any(path.name == "server.log" for path in files)
    for path in files:
        assert PASSWORD.encode() not in path.read_bytes(), path


def _small_file(path: Path) -> bool:
    return path.is_file() and path.stat().st_size < 5_000_000
