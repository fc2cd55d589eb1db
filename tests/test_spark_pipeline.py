"""The provisioning pipeline on a real local Spark session (local[2]) against two QuotaBrokers."""

from __future__ import annotations

import base64
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from tests.spark_helpers import both_modes_agree, cmdline, descendants, refusing_shim
from tests.support import REPO, BrokerFactory, wait_until
from throttled_admin.provisioning import PlanError, PlanRow, Profile
from throttled_admin.spark import apply_plan, local_session, plan_dataframe
from throttled_admin.spark._session import with_retries
from throttled_admin.testing import QuotaBroker

pytestmark = pytest.mark.slow  # a Spark session, and (some) a JVM of its own

PLAN_DDL = (
    "cluster string, action string, topic string, partitions int, replication_factor int, configs map<string,string>"
)
PASSWORDS = {"alice": "alice-pw-91c2e7", "bob": "bob-pw-44d0aa"}
SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"}


def port_of(broker: QuotaBroker) -> str:
    return broker.bootstrap_servers.rsplit(":", 1)[1]


@pytest.fixture(scope="module")
def walled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[QuotaBroker, Path]]:
    """A broker this process reaches and the session's Python workers do not: their connect() to its port
    is refused by an LD_PRELOAD library, set through spark.executorEnv (as a firewall without egress)."""
    shim = refusing_shim(tmp_path_factory.mktemp("shim"))
    with QuotaBroker(controller_mutation_rate=50) as broker:
        yield broker, shim


@pytest.fixture(scope="module")
def spark(walled: tuple[QuotaBroker, Path]) -> Iterator[Any]:
    broker, shim = walled
    cut_off = {"spark.executorEnv.LD_PRELOAD": str(shim), "spark.executorEnv.REFUSED_PORT": port_of(broker)}
    session = local_session("throttled-admin-tests", "local[2]", **{"spark.sql.shuffle.partitions": "2", **cut_off})
    yield session
    session.stop()


def plan(spark: Any, *rows: tuple[Any, ...]) -> Any:
    full = [(*row, *([None] * (6 - len(row)))) for row in rows]
    return spark.createDataFrame(full, PLAN_DDL)


def by_topic(results: Any) -> dict[str, dict[str, Any]]:
    return {row["topic"]: row.asDict() for row in results.collect()}


def plain(broker: QuotaBroker, name: str, rate: float = 50.0) -> Profile:
    return Profile(name, {"bootstrap.servers": broker.bootstrap_servers}, rate, request_timeout_s=3.0)


def tenant(broker: QuotaBroker, user: str, rate: float = 50.0, password: str | None = None) -> Profile:
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        **SASL,
        "sasl.username": user,
        "sasl.password": password if password is not None else PASSWORDS[user],
    }
    return Profile(user, conf, rate, request_timeout_s=3.0)


def test_every_row_is_accounted_for_and_a_rerun_is_unchanged(spark: Any, quota_broker: BrokerFactory) -> None:
    east = quota_broker(controller_mutation_rate=50)
    west = quota_broker(controller_mutation_rate=50)
    profiles = {"east": plain(east, "east"), "west": plain(west, "west")}
    rows = [("east", "ensure", f"e.{i:02d}", 3) for i in range(20)] + [
        ("west", "ensure", f"w.{i:02d}", 2) for i in range(20)
    ]
    rows += [("west", "create", "bad name!", 1), ("nowhere", "ensure", "lost", 1), ("east", "ensure", "zero", 0)]
    df = plan(spark, *rows)
    results = by_topic(apply_plan(df, profiles))
    assert len(results) == len(rows)
    assert sorted(results) == sorted(r[1 + 1] for r in rows)
    assert {t: r["status"] for t, r in results.items() if r["status"] != "created"} == {
        "bad name!": "failed",
        "lost": "failed",
        "zero": "failed",
    }
    assert "Topic name is invalid: 'bad name!' contains" in results["bad name!"]["error_message"]
    assert "no profile named 'nowhere'" in results["lost"]["error_message"]
    assert "field 'partitions'" in results["zero"]["error_message"]
    assert results["e.00"]["cluster"] == "east"
    assert results["e.00"]["attempts"] == 1
    assert results["e.00"]["started_at"] is not None
    assert east.topics() == {f"e.{i:02d}": 3 for i in range(20)}
    assert west.topics() == {f"w.{i:02d}": 2 for i in range(20)}

    rerun = by_topic(apply_plan(df, profiles))
    assert {r["status"] for t, r in rerun.items() if t not in ("bad name!", "lost", "zero")} == {"unchanged"}


def test_grow_delete_and_dry_run(spark: Any, quota_broker: BrokerFactory) -> None:
    east = quota_broker(controller_mutation_rate=10)
    west = quota_broker(controller_mutation_rate=10)
    east.create_topic("grow.me", 2)
    west.create_topic("drop.me", 3)
    profiles = {"east": plain(east, "east", 10.0), "west": plain(west, "west", 10.0)}
    df = plan(spark, ("east", "ensure", "grow.me", 4), ("west", "delete", "drop.me"), ("east", "create", "fresh", 5))

    dry = by_topic(apply_plan(df, profiles, dry_run=True))
    assert {t: r["status"] for t, r in dry.items()} == {"grow.me": "planned", "drop.me": "failed", "fresh": "planned"}
    assert dry["fresh"]["predicted_s"] == 0.0
    assert east.topics() == {"grow.me": 2}

    refused = by_topic(apply_plan(df, profiles))
    assert {t: r["status"] for t, r in refused.items()} == {"grow.me": "grown", "drop.me": "failed", "fresh": "created"}
    assert refused["drop.me"]["error_message"] == "refused: pass allow_delete=True to delete topics"
    assert "drop.me" in west.topics()

    deleted = by_topic(apply_plan(df, profiles, allow_delete=True))
    assert {t: r["status"] for t, r in deleted.items()} == {
        "grow.me": "unchanged",
        "drop.me": "deleted",
        "fresh": "unchanged",
    }
    assert east.topics() == {"grow.me": 4, "fresh": 5}
    assert west.topics() == {}


def test_reconfigure(spark: Any, quota_broker: BrokerFactory) -> None:
    east = quota_broker(controller_mutation_rate=50)
    east.create_topic("cfg", 1)
    df = plan(spark, ("east", "ensure", "cfg", 1, None, {"retention.ms": "60000"}))
    assert by_topic(apply_plan(df, {"east": plain(east, "east")}))["cfg"]["status"] == "reconfigured"
    assert by_topic(apply_plan(df, {"east": plain(east, "east")}))["cfg"]["status"] == "unchanged"


def test_a_blackholed_create_ends_created(spark: Any, quota_broker: BrokerFactory) -> None:
    east = quota_broker(controller_mutation_rate=50)
    east.blackhole_next("CreateTopics")
    df = plan(spark, *[("east", "ensure", f"lost.{i}", 2) for i in range(4)])
    results = by_topic(apply_plan(df, {"east": plain(east, "east")}))
    assert {r["status"] for r in results.values()} == {"created"}
    assert any(r.responded_at is None for r in east.request_log() if r.api_name == "CreateTopics")
    assert east.topics() == {f"lost.{i}": 2 for i in range(4)}


def test_sasl_profiles_work_and_no_credential_leaks(
    spark: Any, quota_broker: BrokerFactory, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    secure = quota_broker(users=dict(PASSWORDS))
    secure.set_quota(user="alice", controller_mutation_rate=20)
    secure.set_quota(user="bob", controller_mutation_rate=10)
    profiles = {"alice": tenant(secure, "alice", 20.0), "bob": tenant(secure, "bob", 10.0)}
    caplog.set_level(logging.DEBUG)
    df = plan(spark, *[(user, "ensure", f"{user}.{i}", 2) for user in ("alice", "bob") for i in range(5)])
    results = apply_plan(df, profiles)
    rows = results.collect()
    assert {r["status"] for r in rows} == {"created"}
    principals = {r.principal for r in secure.request_log() if r.api_name == "CreateTopics"}
    assert principals == {"alice", "bob"}
    plan_text = results._jdf.queryExecution().toString() + df._jdf.queryExecution().toString()
    out, err = capfd.readouterr()
    for text in (plan_text, out, err, caplog.text, repr(rows), repr(profiles)):
        for password in PASSWORDS.values():
            assert password not in text
    # py4j's DEBUG log carries the task's function, pickled, in base64 (helper 129 found every password in it)
    blobs = [base64.b64decode(blob) for blob in re.findall(r"^j([A-Za-z0-9+/=]{100,})$", caplog.text, re.MULTILINE)]
    assert blobs, "py4j logged no pickled function at DEBUG"
    for blob in blobs:
        for password in PASSWORDS.values():
            assert password.encode() not in blob


def test_eight_quota_entities_on_two_cores_run_in_one_wave(spark: Any, quota_broker: BrokerFactory) -> None:
    users = [f"tenant{i}" for i in range(8)]
    passwords = {user: f"{user}-pw" for user in users}
    brokers = [quota_broker(users=passwords) for _ in range(2)]
    profiles = {}
    for i, user in enumerate(users):
        broker = brokers[i % 2]
        broker.set_quota(user=user, controller_mutation_rate=10)
        profiles[user] = tenant(broker, user, 10.0, passwords[user])
    # 180 mutations per entity at 10/s, burst 110: each entity needs >= 7 s of quota time, more than a cold
    # Python worker takes to start on a loaded machine, so only waves (not a slow start) can fail this.
    df = plan(spark, *[(user, "ensure", f"{user}.{i:02d}", 10) for user in users for i in range(18)])
    results = apply_plan(df, profiles)
    assert results.filter("status != 'created'").count() == 0
    spans: dict[str, tuple[float, float]] = {}
    for broker in brokers:
        for record in broker.request_log():
            if record.api_name == "CreateTopics":
                first, last = spans.get(record.principal, (record.received_at, record.received_at))
                spans[record.principal] = (min(first, record.received_at), max(last, record.received_at))
    assert set(spans) == set(users)
    # In waves, a later wave's entities would start only after an earlier wave's ended: here every entity
    # had started before any entity sent its last create.
    assert max(first for first, _ in spans.values()) < min(last for _, last in spans.values())


def test_plan_columns_are_checked_before_any_job(spark: Any) -> None:
    with pytest.raises(PlanError, match="missing column 'topic'"):
        apply_plan(spark.createDataFrame([("e", "ensure")], "cluster string, action string"), {})
    with pytest.raises(PlanError, match="column 'partitions' must be an integer, got string"):
        apply_plan(
            spark.createDataFrame(
                [("e", "ensure", "t", "6")], "cluster string, action string, topic string, partitions string"
            ),
            {},
        )


def test_profiles_as_conf_mappings_as_the_readme_shows_them(spark: Any, quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    df = plan(spark, *[("dev", "ensure", f"dev.{i}", 2) for i in range(6)])
    profiles = {"dev": {"bootstrap.servers": broker.bootstrap_servers, "mutation_rate": 50, "request_timeout_s": 3}}
    assert {r["status"] for r in apply_plan(df, profiles).collect()} == {"created"}
    assert broker.topics() == {f"dev.{i}": 2 for i in range(6)}
    with pytest.raises(TypeError, match=r"profile 'dev': expected a Profile or a mapping .* got str"):
        apply_plan(df, {"dev": broker.bootstrap_servers})  # type: ignore[dict-item]  # a str on purpose
    with pytest.raises(PlanError, match="profile 'dev': the Profile given is named 'prod'"):
        apply_plan(df, {"dev": plain(broker, "prod")})


@pytest.mark.parametrize(
    ("given", "used"),
    [("local[2]", "local[2,4]"), ("local[*]", "local[*,4]"), ("local", "local[1,4]"), ("local[2,1]", "local[2,1]")],
)
def test_local_sessions_retry_tasks_as_clusters_do(given: str, used: str) -> None:
    assert with_retries(given) == used
    assert with_retries("spark://127.0.0.1:7077") == "spark://127.0.0.1:7077"


def test_the_module_session_retries_tasks(spark: Any) -> None:
    assert spark.sparkContext.master == "local[2,4]"


def python_workers() -> list[int]:
    """This session's Python workers: the processes pyspark.daemon (below this test process's JVM) forked;
    they share the daemon's command line."""
    mine = [pid for pid in descendants(os.getpid()) if "pyspark.daemon" in cmdline(pid)]
    return [pid for pid in mine if any(pid in descendants(other) for other in mine if other != pid)]


# what a second attempt of a task adds to the detail of a row it finds as planned (``spark/_task.py``)
RETRIED = "task attempt 2: an earlier attempt of this task may have applied it"


def test_a_python_worker_killed_mid_task_leaves_every_row_truthful(spark: Any, quota_broker: BrokerFactory) -> None:
    # One entity, 300 mutations at 20/s with a burst of 220: its task runs >= 4 s. Once some topics exist
    # its Python worker is killed (SIGKILL); Spark retries the task, which reads the cluster and finishes.
    # create rows in Kafka's other spellings: the retry must see the first attempt's topics as planned.
    broker = quota_broker(controller_mutation_rate=20)
    configs = {"cleanup.policy": "compact, delete", "retention.ms": " 86400000"}
    rows = [PlanRow("east", "create", f"kill.{i:02d}", 5, configs=configs) for i in range(60)]
    killed: list[int] = []

    def kill_when_started() -> None:
        if not wait_until(lambda: len(broker.topics()) >= 10, timeout_s=120):
            return
        for pid in python_workers():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    try:
        results = apply_plan(plan_dataframe(spark, rows), {"east": plain(broker, "east", 20.0)}).collect()
    finally:
        killer.join()
    assert killed
    statuses = {r["topic"]: r["status"] for r in results}
    assert len(results) == 60
    assert set(statuses.values()) <= {"created", "unchanged"}
    assert "unchanged" in statuses.values()  # what the killed attempt created, the retry found as planned
    # ... and says it may be the killed attempt's work (the job created every topic: "unchanged" alone understated it)
    details = {r["detail"] for r in results if r["status"] == "unchanged"}
    assert details == {f"already as planned; {RETRIED}"}, details
    assert not any(r["detail"].endswith(RETRIED) for r in results if r["status"] == "created")
    assert broker.topics() == {f"kill.{i:02d}": 5 for i in range(60)}
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    created_ok = sorted(t for r in creates for t, code in r.errors.items() if code == 0)
    assert created_ok == sorted(statuses)  # each topic created exactly once, across both attempts


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_retried_task_says_its_unchanged_rows_may_be_an_earlier_attempts_but_not_in_a_dry_run(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch, dry_run: bool
) -> None:
    """The task's own function, as a second attempt runs it (review 138: a dry run applies nothing, so no earlier
    attempt of it applied anything)."""
    import pyarrow as pa

    from throttled_admin.spark import _task

    monkeypatch.setattr(_task, "_attempt", lambda: 1)
    broker = quota_broker()
    broker.create_topic("before", 3)
    batch = pa.RecordBatch.from_pylist(
        [{"cluster": "c", "action": "create", "topic": name, "partitions": 3} for name in ("before", "new")]
    )
    run = _task.make_task({"c": Profile("c", {"bootstrap.servers": broker.bootstrap_servers})}, False, dry_run, 1)
    [out] = run(iter([batch]))
    details = {r["topic"]: (r["status"], r["detail"]) for r in out.to_pylist()}
    assert details["before"] == ("unchanged", "already as planned" + ("" if dry_run else f"; {RETRIED}"))
    status, detail = details["new"]
    assert status == ("planned" if dry_run else "created")
    assert "task attempt" not in detail  # (this attempt's own change)


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one moment (one that ends as another starts: not at once)."""
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])  # an end first at a tie
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


@pytest.mark.parametrize(("execution", "bound"), [("executors", 1), ("driver", 2)])
def test_a_bound_on_entities_per_task(spark: Any, quota_broker: BrokerFactory, execution: str, bound: int) -> None:
    # Four entities, at most ``bound`` at a time in each task (with executors: apply_plan spreads the entities
    # over as many tasks as the session runs at once, whatever the plan's partitions) or in the driver. Each
    # entity's span is from its first request to its last (its client is closed before its slot is freed).
    brokers = [quota_broker(controller_mutation_rate=100) for _ in range(4)]
    profiles = {f"c{i}": plain(broker, f"c{i}", 100.0) for i, broker in enumerate(brokers)}
    df = plan(spark, *[(f"c{i}", "ensure", f"b.{j}", 1) for i in range(4) for j in range(5)]).coalesce(1)
    results = apply_plan(df, profiles, max_concurrent_entities=bound, execution=execution)  # type: ignore[arg-type]
    assert results.filter("status != 'created'").count() == 0
    spans = []
    for broker in brokers:
        times = [r.received_at for r in broker.request_log()]
        spans.append((min(times), max(times)))
        assert spans[-1][0] < spans[-1][1]
    # How many entities each task had: with executors, apply_plan numbers them by profile name (c0..c3: 0..3) and
    # repartitions by that number over the session's task slots (local[2]: 3 and 1); in the driver, one "task".
    per_task = [len(brokers)]
    if execution == "executors":
        from pyspark.sql import functions as F

        tasks = min(len(brokers), spark.sparkContext.defaultParallelism)
        numbers = spark.createDataFrame([(n,) for n in range(len(brokers))], "n int")
        slots = numbers.repartition(tasks, "n").select(F.spark_partition_id())
        per_task = list(Counter(row[0] for row in slots.collect()).values())
    limit = sum(min(count, bound) for count in per_task)
    assert limit < len(brokers)  # so a bound not kept would show
    assert most_at_once(spans) <= limit
    with pytest.raises(ValueError, match="max_concurrent_entities"):
        apply_plan(df, profiles, max_concurrent_entities=0)


PASSWORD = "modes-pw-5e1b07"


def test_executors_and_driver_give_the_same_rows(spark: Any, quota_broker: BrokerFactory) -> None:
    rows = both_modes_agree(spark, quota_broker, PASSWORD)
    assert len(rows) == 19


def test_a_cluster_the_executors_cannot_reach_fails_its_rows_at_once(
    spark: Any, walled: tuple[QuotaBroker, Path], quota_broker: BrokerFactory
) -> None:
    broker, _ = walled
    reachable = quota_broker(controller_mutation_rate=50)
    profiles = {
        "walled": Profile("walled", {"bootstrap.servers": broker.bootstrap_servers}, 50.0, request_timeout_s=120.0),
        "open": plain(reachable, "open"),
    }
    rows = [("walled", "ensure", f"w.{i:02d}", 2) for i in range(40)] + [("open", "ensure", "o.1", 2)]
    df = plan(spark, *rows).repartition(4)
    called = time.time()
    results = by_topic(apply_plan(df, profiles))
    expected = (
        f"not sent: executors cannot reach 127.0.0.1:{port_of(broker)}; run with execution='driver' or open egress"
    )
    walled_rows = [r for t, r in results.items() if t.startswith("w.")]
    assert len(walled_rows) == 40
    assert {(r["status"], r["error_code"], r["error_message"], r["attempts"]) for r in walled_rows} == {
        ("failed", -195, expected, 0)
    }
    # Every affected row said so well before a client would have stopped retrying (120 s). The Spark job itself
    # took 14 s at load 5 and 19 s at load 10 (this once allowed 10 s of 30).
    assert max(r["finished_at"].timestamp() for r in walled_rows) - called < 60.0
    assert results["o.1"]["status"] == "created"
    assert broker.request_log() == []
    assert broker.topics() == {}

    driver = by_topic(apply_plan(df, profiles, execution="driver"))
    assert {r["status"] for t, r in driver.items() if t.startswith("w.")} == {"created"}
    assert driver["o.1"]["status"] == "unchanged"
    assert broker.topics() == {f"w.{i:02d}": 2 for i in range(40)}


def test_execution_is_checked(spark: Any) -> None:
    df = plan(spark, ("east", "ensure", "t", 1))
    with pytest.raises(ValueError, match="execution: expected 'executors' or 'driver', got 'cluster'"):
        apply_plan(df, {}, execution="cluster")  # type: ignore[arg-type]
    with pytest.raises(PlanError, match="missing column 'topic'"):
        apply_plan(spark.createDataFrame([("e", "ensure")], "cluster string, action string"), {}, execution="driver")


def test_result_timestamps_read_as_the_datetimes_of_their_epoch_seconds() -> None:
    """The result batch is built a column at a time, timestamps as whole microseconds: each reads back as
    ``datetime.fromtimestamp`` of the epoch seconds (its rounding, half to even, included), and None as null."""
    from datetime import datetime, timezone

    from throttled_admin.provisioning import RowResult
    from throttled_admin.spark._schema import arrow_schema, result_batch

    seconds = [1764226800.0000005, 1764226800.1234565, 1.0000015, 1764226800.9999996, time.time()]
    results = [RowResult("c", f"t{i}", "ensure", "created", started_at=s, finished_at=s) for i, s in enumerate(seconds)]
    results.append(RowResult("c", "never", "ensure", "failed", 36, "m", error_name="X"))
    batch = result_batch(results)
    assert batch.schema == arrow_schema()
    expected = [datetime.fromtimestamp(s, tz=timezone.utc) for s in seconds] + [None]
    assert batch.column("started_at").to_pylist() == expected
    assert batch.column("finished_at").to_pylist() == expected
    assert batch.column("error_code").to_pylist() == [None] * 5 + [36]
    assert batch.column("topic").to_pylist() == [r.topic for r in results]


LISTENERS = r"""
import os, sys
from throttled_admin.spark import local_session

spark = local_session("bind-check", "local[1]")
jvm = spark.sparkContext._gateway.proc.pid

def link(fd):
    try:
        return os.readlink(f"/proc/{jvm}/fd/{fd}")
    except FileNotFoundError:  # closed since the listing (a listener stays open)
        return ""

inodes = {target[8:-1] for target in map(link, os.listdir(f"/proc/{jvm}/fd")) if target.startswith("socket:[")}
for table in ("tcp", "tcp6"):
    for line in open(f"/proc/{jvm}/net/{table}").read().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # LISTEN, one of the JVM's own sockets
            print("listening", fields[1].rsplit(":", 1)[0])
print("driver", spark.conf.get("spark.driver.host"))
spark.stop()
"""
# /proc/net/tcp{,6}'s addresses in hex: 127.0.0.1 as IPv4, and as IPv4-mapped IPv6 (::ffff:127.0.0.1).
LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads the JVM's sockets from Linux's /proc")
def test_a_local_session_listens_on_loopback_only_and_says_nothing_about_the_host_name() -> None:
    """Found by a new user: Spark warned "Your hostname ... resolves to a loopback address ...; using 192.0.2.2
    instead" under `make demo`. The session's JVM binds 127.0.0.1 (spark.driver.host, spark.driver.bindAddress,
    SPARK_LOCAL_IP) and has no reason to say so."""
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"}
    run = subprocess.run(
        [sys.executable, "-c", LISTENERS], capture_output=True, text=True, timeout=600, env=env, cwd=REPO
    )
    assert run.returncode == 0, run.stderr[-3000:]
    listening = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("listening ")]
    assert listening
    assert set(listening) <= LOOPBACK, listening
    assert "driver 127.0.0.1" in run.stdout
    assert "resolves to a loopback address" not in run.stderr


@pytest.mark.parametrize("execution", ["executors", "driver"])
def test_a_time_budget_reaches_the_groups_where_they_run(
    spark: Any, quota_broker: BrokerFactory, execution: str
) -> None:
    """Found by a new user's run (helper 107): the Spark apply_plan had no timeout_s, so a Spark job could not bound
    a group as `apply --timeout` and provisioning.apply_plan do. 12 topics of 3 partitions at 2 mutations/s from a
    full burst of 22 need 7 s; a budget of 2 s sends what the burst admits and ends the rest not_sent."""
    broker = quota_broker(controller_mutation_rate=2)
    df = plan(spark, *[("east", "ensure", f"budget.{i}", 3) for i in range(12)])
    results = by_topic(apply_plan(df, {"east": plain(broker, "east", 2.0)}, execution=execution, timeout_s=2.0))  # type: ignore[arg-type]
    statuses = Counter(row["status"] for row in results.values())
    assert set(statuses) == {"created", "not_sent"}, statuses
    assert statuses["created"] == len(broker.topics())
    for row in results.values():
        if row["status"] == "not_sent":
            assert "timeout_s=2" in row["error_message"], row
    with pytest.raises(ValueError, match="timeout_s"):
        apply_plan(df, {"east": plain(broker, "east", 2.0)}, timeout_s=0)


def test_two_profiles_of_one_entity_that_differ_fail_before_any_task_sends(
    spark: Any, quota_broker: BrokerFactory
) -> None:
    """Review 108: on executors, the check ran in each task, so tasks of other entities applied their rows before the
    job failed (a PythonException, no results)."""
    shared, other = quota_broker(), quota_broker()
    profiles = {"x": plain(shared, "x", 50.0), "y": plain(shared, "y", 10.0), "z": plain(other, "z")}
    df = plan(
        spark, ("x", "ensure", "x.0", 1), ("y", "ensure", "y.0", 1), *[("z", "ensure", f"z.{i}", 1) for i in range(3)]
    )
    with pytest.raises(PlanError, match=r"^profiles 'x' and 'y' name one quota entity .* differ in mutation_rate"):
        apply_plan(df, profiles)
    assert other.topics() == {}
    assert shared.topics() == {}
