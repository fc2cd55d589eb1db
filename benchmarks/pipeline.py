"""The provisioning pipeline on Spark: 8 quota entities (SASL users) on 2 QuotaBrokers, each with its own
quota and enough work to need ``--target-seconds`` of quota time (T*). Reports:

- Spark's fixed cost, measured on its own: the session, then one trivial mapInArrow job that starts the
  Python workers;
- the pipeline's wall time (``throttled_admin.spark.apply_plan``) against the slowest entity's T*
  (target: <= 1.2 x T*), and from the brokers' request logs the slowest entity's span and an entity's first
  create (its first row, sent alone) to its next;
- the same groups run one after another without Spark (``provisioning.execute``), for comparison;
- peak resident memory while the pipeline runs: the driver, Spark's JVM and the Python workers (where the
  clients live: one thread and one librdkafka client per entity), and the CPU each used, sampled from /proc by a
  process of its own (``_proc_sampler``), with the client's CPU split into librdkafka's threads and the rest.

``--fleet`` is the fleet case: 200 quota entities across 10 QuotaBroker clusters (20 SASL users each) on
``local[2]``, two tasks of ~100 entities each, every entity at once (``--max-entities``, default
``apply_plan``'s ``max_concurrent_entities``), each broker in a process of its own (``--broker-processes``,
implied), so that the CPU figures are the pipeline's. ``--execution driver`` runs the admin calls in this
process instead of the Python workers (``apply_plan(..., execution="driver")``). The client's CPU per topic
is the Python workers' CPU (executors) or this process's (driver) over the plan's topics. ``--bare`` runs the same
plan, split over the same tasks (or in this process), with bare confluent-kafka instead (``bare_apply``): the floor.

T* = max(0, M - B) / R: the earliest moment a KIP-599 bucket of rate R and burst B = 11 R, starting
full, admits the last of M mutations. Every run uses fresh brokers.

    .venv/bin/python benchmarks/pipeline.py                 # the numbers in docs/pipeline.md
    .venv/bin/python benchmarks/pipeline.py --target-seconds 5 --no-sequential
    .venv/bin/python benchmarks/pipeline.py --fleet           # the fleet table in docs/benchmarks.md
    .venv/bin/python benchmarks/pipeline.py --fleet --execution driver
    .venv/bin/python benchmarks/pipeline.py --fleet --bare    # the floor: bare confluent-kafka, same processes
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from _broker_processes import BrokerProcess
from _proc_sampler import Sampler

from throttled_admin.provisioning import PlanRow, Profile, execute, predicted_seconds, summarize
from throttled_admin.testing import QuotaBroker

RATES = (10.0, 15.0, 20.0, 25.0)  # mutations/s, cycled over the entities
SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"}


def entity_plan(entities: int, target_s: float, partitions: int) -> tuple[dict[str, float], list[PlanRow]]:
    """Each entity gets the topics whose creates need ``target_s`` of its quota after its burst."""
    rates = {f"tenant{i}": RATES[i % len(RATES)] for i in range(entities)}
    rows = []
    for user, rate in rates.items():
        topics = math.ceil((11 + target_s) * rate / partitions)
        rows += [PlanRow(user, "ensure", f"{user}.t{j:04d}", partitions) for j in range(topics)]
    return rates, rows


#: Where the brokers run: in this process (False) or each in a process of its own (True; ``--broker-processes``).
BROKER_PROCESSES = {"on": False}


@contextmanager
def brokers_for(rates: dict[str, float], count: int) -> Iterator[tuple[list[Any], dict[str, Profile]]]:
    users = {user: f"{user}-password" for user in rates}
    kind: Any = BrokerProcess if BROKER_PROCESSES["on"] else QuotaBroker
    with ExitStack() as stack:
        brokers = [stack.enter_context(kind(users=users)) for _ in range(count)]
        profiles = {}
        for i, (user, rate) in enumerate(rates.items()):
            broker = brokers[i % count]
            broker.set_quota(user=user, controller_mutation_rate=rate)
            conf = {
                "bootstrap.servers": broker.bootstrap_servers,
                **SASL,
                "sasl.username": user,
                "sasl.password": users[user],
            }
            profiles[user] = Profile(user, conf, rate)
        yield brokers, profiles


def t_star(rows: list[PlanRow], rates: dict[str, float]) -> dict[str, float]:
    mutations: dict[str, int] = {}
    for row in rows:
        mutations[row.cluster] = mutations.get(row.cluster, 0) + (row.partitions or 1)
    return {user: predicted_seconds(m, rates[user]) or 0.0 for user, m in mutations.items()}


def _bare_entity(conf: dict[str, Any], rate: float, topics: list[tuple[str, int]]) -> list[tuple[str, str]]:
    """One quota entity with a bare confluent-kafka AdminClient: one metadata read (as ``execute`` reads what
    exists), then ``create_topics`` calls paced by a bucket of the entity's rate and burst (B = 11 R, full at the
    start), each call's futures waited for before the next: (topic, status) for each."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(conf)
    admin.list_topics(timeout=30)
    return bare_paced_creates(admin, rate, topics)


def bare_paced_creates(admin: Any, rate: float, topics: list[tuple[str, int]]) -> list[tuple[str, str]]:
    """``create_topics`` calls of a bare AdminClient paced by a bucket of ``rate`` and burst 11 R (full at the start),
    each call's futures waited for before the next: (topic, status) for each."""
    from confluent_kafka.admin import NewTopic

    started, spent, out = time.monotonic(), 0.0, []
    queue = list(topics)
    while queue:
        level = 11 * rate + rate * (time.monotonic() - started) - spent  # mutations the bucket admits now
        batch = []
        while queue and queue[0][1] <= level:
            level -= queue[0][1]
            spent += queue[0][1]
            batch.append(queue.pop(0))
        if not batch:
            time.sleep((queue[0][1] - level) / rate)
            continue
        futures = admin.create_topics([NewTopic(name, partitions, 1) for name, partitions in batch], request_timeout=30)
        for name, future in futures.items():
            exc = future.exception()
            out.append((name, "created" if exc is None else type(exc).__name__))
    return out


def _bare_rows(profiles: dict[str, Profile], records: list[dict[str, Any]], max_entities: int) -> Any:
    """The rows of a task (or of the driver), grouped by entity, one thread per entity (at most ``max_entities``)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    groups: dict[str, list[tuple[str, int]]] = {}
    for record in records:
        groups.setdefault(record["cluster"], []).append((record["topic"], record["partitions"] or 1))
    with ThreadPoolExecutor(max(1, min(max_entities, len(groups)))) as pool:
        done = pool.map(
            lambda item: [
                (item[0], *result)
                for result in _bare_entity(profiles[item[0]].conf, profiles[item[0]].mutation_rate or 1.0, item[1])
            ],
            groups.items(),
        )
        rows = [row for results in done for row in results]
    schema = pa.schema([("cluster", pa.string()), ("topic", pa.string()), ("status", pa.string())])
    return pa.RecordBatch.from_pylist([{"cluster": c, "topic": t, "status": s} for c, t, s in rows], schema=schema)


def bare_apply(plan_df: Any, profiles: dict[str, Profile], execution: str, max_entities: int | None) -> Any:
    """The plan with bare confluent-kafka (``_bare_entity``): on ``execution="executors"`` in as many tasks as
    ``apply_plan`` makes, each entity's rows in one task (the same partitioning by entity); with ``"driver"``
    in this process. A DataFrame of (cluster, topic, status)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from throttled_admin.provisioning._apply import MAX_CONCURRENT_ENTITIES

    bound = max_entities or MAX_CONCURRENT_ENTITIES
    spark = plan_df.sparkSession
    selected = plan_df.select("cluster", "topic", "partitions")
    if execution == "driver":
        batch = _bare_rows(profiles, selected.toArrow().to_pylist(), bound)
        return spark.createDataFrame(pa.Table.from_batches([batch]))
    numbers = {name: n for n, name in enumerate(sorted(profiles))}
    slots = spark.sparkContext.defaultParallelism
    group = F.create_map(*[F.lit(x) for name, n in numbers.items() for x in (name, n)])[F.col("cluster")]
    tagged = selected.withColumn("_g", group).repartition(max(1, min(len(numbers), slots)), "_g").drop("_g")

    def task(batches: Any) -> Any:
        records = [record for batch in batches for record in batch.to_pylist()]
        if records:
            yield _bare_rows(profiles, records, bound)

    return tagged.mapInArrow(task, "cluster string, topic string, status string").localCheckpoint(eager=True)


def run_spark(
    spark: Any,
    rows: list[PlanRow],
    rates: dict[str, float],
    brokers: int,
    max_entities: int | None = None,
    execution: str = "executors",
    bare: bool = False,
) -> tuple[float, dict[str, int], float, float, float]:
    """Wall time, status counts, when the first request reached a broker, and ``entity_times`` (from the brokers'
    request logs)."""
    from throttled_admin.spark import apply_plan, plan_dataframe

    with brokers_for(rates, brokers) as (servers, profiles):
        plan_df = plan_dataframe(spark, rows).cache()
        plan_df.count()  # the plan is in Spark before the clock starts
        started = time.monotonic()
        bound = {} if max_entities is None else {"max_concurrent_entities": max_entities}
        if bare:
            results = bare_apply(plan_df, profiles, execution, max_entities)
        else:
            results = apply_plan(plan_df, profiles, execution=execution, **bound)  # type: ignore[arg-type]
        wall = time.monotonic() - started
        counts = {r["status"]: r["count"] for r in results.groupBy("status").count().collect()}
        log = [r for broker in servers for r in broker.request_log()]
    first_request = min(r.received_at for r in log) - started
    return wall, counts, first_request, *entity_times(log, rates)


def entity_times(log: list[Any], rates: dict[str, float]) -> tuple[float, float]:
    """From the brokers' request logs: the longest time from an entity's first request to its last create, and the
    median time from an entity's first CreateTopics to its next (in a plan of creates, its first row, sent alone,
    issue 38, to the rest)."""
    span, gaps = 0.0, []
    for user in rates:
        mine = [r for r in log if r.principal == user]
        creates = sorted(r.received_at for r in mine if r.api_name == "CreateTopics")
        span = max(span, max(creates) - min(r.received_at for r in mine))
        if len(creates) > 1:
            gaps.append(creates[1] - creates[0])
    return span, statistics.median(gaps) if gaps else math.nan


def run_plain(rows: list[PlanRow], rates: dict[str, float], brokers: int) -> tuple[float, dict[str, int], float]:
    """The same plan through ``provisioning.apply_plan`` in this process (every entity at once, no Spark),
    against the same kind of in-process brokers: wall time, status counts, the slowest entity's span."""
    from throttled_admin.provisioning import apply_plan

    with brokers_for(rates, brokers) as (servers, profiles):
        started = time.monotonic()
        results = apply_plan(rows, profiles)
        wall = time.monotonic() - started
        log = [r for broker in servers for r in broker.request_log()]
    return wall, summarize(results), entity_times(log, rates)[0]


def run_sequential(rows: list[PlanRow], rates: dict[str, float], brokers: int) -> tuple[float, dict[str, int]]:
    with brokers_for(rates, brokers) as (_, profiles):
        started = time.monotonic()
        results = []
        for user, profile in profiles.items():
            results += execute([r for r in rows if r.cluster == user], profile)
        return time.monotonic() - started, summarize(results)


def _import_in_worker(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    import throttled_admin.provisioning  # noqa: F401  (what the pipeline's tasks import first)

    pa.array([0])  # pyarrow's first conversion of Python objects in a process imports pandas (when installed)
    yield from batches


def warm_up(spark: Any) -> None:
    """One trivial mapInArrow job on every slot: starts the Python workers the pipeline's tasks run in, imports
    the package there and converts a Python list to Arrow (pyarrow imports pandas on the first: py-spy put a
    quarter of a worker's samples there when the pipeline's task was the first), a fixed cost of any PySpark job
    that returns Arrow made in Python, rather than of provisioning."""
    from throttled_admin.spark._quiet import pandas3_warning_ignored

    slots = spark.sparkContext.defaultParallelism
    with pandas3_warning_ignored():
        spark.range(2 * slots).repartition(slots).mapInArrow(_import_in_worker, "id long").count()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=8)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--target-seconds", type=float, default=10.0, help="T* of every entity")
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-sequential", action="store_true")
    parser.add_argument("--max-entities", type=int, help="apply_plan's max_concurrent_entities (per task)")
    parser.add_argument("--fleet", action="store_true", help="200 entities on 10 brokers, no sequential run")
    parser.add_argument("--plain", action="store_true", help="also run the plan without Spark, all entities at once")
    parser.add_argument("--execution", choices=("executors", "driver"), default="executors")
    parser.add_argument("--broker-processes", action="store_true", help="each broker in a process of its own")
    parser.add_argument("--bare", action="store_true", help="bare confluent-kafka clients instead (the floor)")
    args = parser.parse_args()
    if args.fleet:
        args.entities, args.brokers, args.no_sequential, args.broker_processes = 200, 10, True, True
    BROKER_PROCESSES["on"] = args.broker_processes
    rates, rows = entity_plan(args.entities, args.target_seconds, args.partitions)
    stars = t_star(rows, rates)
    slowest = max(stars.values())
    print(
        f"{args.entities} entities on {args.brokers} brokers, {len(rows)} topics, "
        f"{sum(r.partitions or 1 for r in rows)} mutations; rates {sorted(set(rates.values()))}/s; "
        f"slowest entity's T* = {slowest:.1f} s"
    )

    from throttled_admin.spark import local_session

    started = time.monotonic()
    spark = local_session("throttled-admin-benchmark", args.master)
    session_s = time.monotonic() - started
    warm_up(spark)
    startup_s = time.monotonic() - started
    try:
        with Sampler() as sampler:
            wall, counts, first_request, span, first_gap = run_spark(
                spark, rows, rates, args.brokers, args.max_entities, args.execution, args.bare
            )
    finally:
        spark.stop()
    print("\n| run | wall time | / slowest T* | rows |\n|---|---|---|---|")
    print(f"| Spark fixed cost (session {session_s:.1f} s + Python workers) | {startup_s:.1f} s | - | - |")
    mode = f"{args.master}, execution={args.execution}{', bare confluent-kafka' if args.bare else ''}"
    print(f"| Spark pipeline, {mode} | {wall:.1f} s | {wall / slowest:.2f} | {counts} |")
    print(f"| of which: the first request reached a broker after | {first_request:.1f} s | - | - |")
    print(
        f"| of which: the slowest entity's first request to its last create | {span:.1f} s | {span / slowest:.2f} | - |"
    )
    print(f"| of which: an entity's first create to its next (median) | {first_gap:.2f} s | - | - |")
    print(f"| target: Spark fixed cost + 1.2 x slowest T* | {startup_s + 1.2 * slowest:.1f} s | - | - |")
    report = sampler.report
    driver = "driver" if args.broker_processes else "driver + brokers"
    labels = {"driver": driver}
    peaks = ", ".join(f"{labels.get(kind, kind)} {mib:.0f} MiB" for kind, mib in report["peak_mib"].items())
    print(f"\nPeak RSS while the pipeline ran: {peaks}")
    cpu = ", ".join(f"{labels.get(kind, kind)} {seconds:.1f} s" for kind, seconds in report["cpu_s"].items())
    print(
        f"CPU used meanwhile ({os.cpu_count()} cores): {cpu} (the /proc sampler, a process of its own: "
        f"{report['sampler_cpu_s']:.1f} s)"
    )
    client_kind = "Python workers" if args.execution == "executors" else "driver"
    client = report["cpu_s"][client_kind]
    print(f"Client CPU per topic ({args.execution}): {1000 * client / len(rows):.2f} ms over {len(rows)} topics")
    threads = report["thread_cpu_s"].get(client_kind, {})
    if threads:
        print(
            f"of which in threads (sampled every second): librdkafka's (rdk:*) {threads['librdkafka']:.1f} s, "
            f"the others (Python's) {threads['other']:.1f} s"
        )
    if args.plain:
        plain_wall, plain_counts, plain_span = run_plain(rows, rates, args.brokers)
        print(
            f"| the same plan without Spark (provisioning.apply_plan, one process) | {plain_wall:.1f} s | "
            f"{plain_wall / slowest:.2f} | {plain_counts} |"
        )
        print(f"| of which: the slowest entity's span | {plain_span:.1f} s | {plain_span / slowest:.2f} | - |")
    if not args.no_sequential:
        seq, seq_counts = run_sequential(rows, rates, args.brokers)
        print(f"| the same groups one after another, no Spark | {seq:.1f} s | {seq / slowest:.2f} | {seq_counts} |")
    print(f"\nSum of the entities' T*: {sum(stars.values()):.1f} s (what running them one after another costs at best)")


if __name__ == "__main__":
    main()
