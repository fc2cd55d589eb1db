"""The main job of ``make demo``: provision a fleet's topics through the Spark pipeline, paced to each
tenant's controller mutation quota.

    python -m throttled_admin.demo                          # ~500 topics, 2 embedded clusters, 3 tenants
    python -m throttled_admin.demo --profiles profiles.yaml # real clusters: one profile per cluster/tenant

Embedded: two QuotaBroker clusters enforcing Apache Kafka's KIP-599 rules, three SASL tenants with small,
different quotas (payments 5/s, search 10/s, analytics 20/s), each given to the client in its profile
(a profile without ``mutation_rate`` would have the client learn it from the broker's throttles). The plan
runs on a local Spark session (Java 17), each tenant-on-cluster in its own task thread. Shows progress,
every row's outcome, the throttles, a rerun that changes nothing, and a PNG of admitted mutations against
each tenant's quota envelope. Beside it, the baseline: payments' rows on east sent at once by bare confluent-kafka
(a user of their own with the same quota). Needs the ``demo`` extra.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from throttled_admin._extras import install_hint
from throttled_admin.demo._baseline import UnpacedRun, run_unpaced
from throttled_admin.demo._fleet import (
    BASELINE,
    TENANTS,
    Admitted,
    admitted_series,
    embedded_fleet,
    fleet_plan,
    steady_rate,
)
from throttled_admin.provisioning import PlanError, PlanRow, Profile, predicted_seconds, read_profiles

if TYPE_CHECKING:
    from throttled_admin.testing import QuotaBroker


log = logging.getLogger("throttled_admin.demo")


def _every(seconds: float, report: Callable[[], None]) -> Callable[[], None]:
    """Call ``report`` every ``seconds`` on a daemon thread; returns the function that stops it and reports once more
    (the last tick of a run said 242/250 topics, and nothing said the rest came: a new user's run)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(seconds):
            report()

    thread = threading.Thread(target=loop, name="demo-progress", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join()
        try:
            report()
        except Exception:  # (halt runs in a finally: a failing last look must not hide why the pipeline ended)
            log.exception("the last progress report failed")

    return halt


def _progress_from_brokers(brokers: dict[str, QuotaBroker], rows: list[PlanRow], origin: float) -> Callable[[], None]:
    """One line per cluster, as the plot has one panel per cluster: the planned topics it holds (not the unpaced
    baseline's), and each tenant's mutations the cluster admitted against those planned there."""
    planned: Counter[tuple[str, str]] = Counter()
    planned_topics: dict[str, set[str]] = {}
    for row in rows:
        cluster, tenant = row.cluster.split("-", 1)
        planned[cluster, tenant] += row.partitions or 1
        planned_topics.setdefault(cluster, set()).add(row.topic)

    def report() -> None:
        admitted = {(e.cluster, e.tenant): e.steps[-1][1] if e.steps else 0 for e in admitted_series(brokers, origin)}
        elapsed = f"{time.monotonic() - origin:5.1f} s"
        for cluster, broker in brokers.items():
            tenants = "  ".join(
                f"{tenant}: {admitted.get((c, tenant), 0):>4}/{count}"
                for (c, tenant), count in planned.items()
                if c == cluster
            )
            mine = planned_topics.get(cluster, set())
            held = len(mine & broker.topics().keys())
            print(f"  {elapsed}  {cluster}: topics {held:>4}/{len(mine)}  mutations admitted  {tenants}", flush=True)
            elapsed = " " * len(elapsed)

    return report


def _progress_from_spark(spark: Any, origin: float) -> Callable[[], None]:
    tracker = spark.sparkContext.statusTracker()

    def report() -> None:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        tasks = ", ".join(f"{s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s is not None)
        print(f"  {time.monotonic() - origin:5.1f} s  {tasks or 'waiting'}", flush=True)

    return report


def _print_summary(results: list[dict[str, Any]], rows: list[PlanRow]) -> int:
    counts = Counter(r["status"] for r in results)
    print(f"\nresult: {len(results)} of {len(rows)} rows reported: " + ", ".join(f"{s} {n}" for s, n in counts.items()))
    for failed in [r for r in results if r["status"] == "failed"][:10]:
        print(f"  failed: {failed['cluster']}/{failed['topic']}: {failed['error_message']}")
    return counts["failed"]


_COLUMNS = """\
  quota: the user's controller mutation quota R (given to the client in its profile; unpaced: the same quota,
    not given); mutations: partitions created, what KIP-599 counts; T*: the least time the quota allows,
    (mutations - 11 R) / R after a full burst of 11 R; took: the broker's first to last admitted create;
  steady rate: the mutations past the burst of 11 R (admitted at once) per second of took ("at once": no time
    passed, or all fit in the burst); throttled: the broker's CreateTopics answers with a throttle time, of all
    its answers; max throttle: the longest; client back-off: the longest a row waited out throttles"""


def _print_throttles(
    results: list[dict[str, Any]], profiles: dict[str, Profile], series: list[Admitted], unpaced: UnpacedRun | None
) -> None:
    backoff: Counter[str] = Counter()
    mutations: Counter[str] = Counter()
    for r in results:
        backoff[r["cluster"]] = max(backoff[r["cluster"]], r["throttle_time_ms"] or 0)
        mutations[r["cluster"]] += r["mutations"] or 0
    print(
        "\nper quota entity (broker side from the request logs; client back-off from the results):\n"
        f"  {'entity':<23} {'quota':>7} {'mutations':>9} {'T*':>6} {'took':>6} {'steady rate':>11} "
        f"{'throttled':>9} {'max throttle':>12} {'client back-off':>15}"
    )
    for entity in sorted(series, key=lambda entity: not entity.paced):  # the baseline last
        admitted = entity.steps[-1][1] if entity.steps else 0
        took = entity.steps[-1][0] - entity.steps[0][0] if entity.steps else 0.0
        star = predicted_seconds(admitted, entity.rate) or 0.0
        if entity.paced:
            name = f"{entity.cluster}-{entity.tenant}"
            quota = "learned" if profiles[name].mutation_rate is None else f"{entity.rate:g}/s"
            waited = f"{backoff[name] / 1000:>13.1f} s"
        else:  # bare confluent-kafka: no rows of the plan, and no waiting
            name, quota, waited = f"{entity.cluster}-{BASELINE.tenant.name} unpaced", f"{entity.rate:g}/s", "none"
        steady = steady_rate(entity.steps, entity.rate)
        rate = "at once" if steady is None else f"{steady:.1f}/s"
        print(
            f"  {name:<23} {quota:>7} {admitted:>9} {star:>5.1f}s {took:>5.1f}s {rate:>11} "
            f"{entity.throttled_responses:>4}/{entity.requests:<4} {entity.max_throttle_ms:>9} ms {waited:>15}"
        )
    print(_COLUMNS)
    if unpaced is not None:
        _print_why(series, unpaced)


def _print_why(series: list[Admitted], unpaced: UnpacedRun) -> None:
    """The baseline beside the same rows paced: what the broker did to each."""
    bare = next((e for e in series if not e.paced), None)
    [paced] = [e for e in series if e.cluster == BASELINE.cluster and e.tenant == BASELINE.tenant.name]
    if bare is None:
        print(f"\nwhy pace: the baseline reached no broker ({unpaced.failed} topics failed)")
        return
    rate, burst = bare.rate, round(11 * bare.rate)
    admitted = bare.steps[-1][1] if bare.steps else 0
    took = paced.steps[-1][0] - paced.steps[0][0] if paced.steps else 0.0
    why = (
        f"why pace: the {BASELINE.tenant.name} rows of {BASELINE.cluster} ({unpaced.created} topics created, "
        f"{unpaced.failed} failed), sent at once by bare confluent-kafka as a user with the same {rate:g}/s quota: "
        f"the broker admitted {admitted} mutations at once, {max(0, admitted - burst)} past the burst of {burst}, "
        f"and throttled that user for {bare.max_throttle_ms / 1000:.1f} s. Apache Kafka mutes its connection that "
        "long, and refuses its other clients' changes (kafka-topics.sh, Java's Admin: THROTTLING_QUOTA_EXCEEDED) "
        f"until then. Paced, the same rows took {took:.1f} s, and the longest throttle was {paced.max_throttle_ms} ms."
    )
    print("\n" + textwrap.fill(why, width=116, subsequent_indent="  ", break_on_hyphens=False))


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """File descriptor 2 into ``path`` while the block runs: the JVM Spark starts here (and the Python workers it
    forks) keeps writing its start-up notes and log there, off the demo's screen."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _start_unpaced(conf: dict[str, str], rows: list[PlanRow], prefix: str) -> Callable[[], UnpacedRun]:
    """The baseline on a thread of its own, beside the pipeline; returns the function that waits for it."""
    mine = [r for r in rows if r.cluster == f"{BASELINE.cluster}-{BASELINE.tenant.name}"]
    outcome: list[UnpacedRun] = []
    thread = threading.Thread(
        target=lambda: outcome.append(run_unpaced(conf, mine, f"{prefix}.unpaced")), name="demo-unpaced", daemon=True
    )
    thread.start()

    def wait() -> UnpacedRun:
        thread.join()
        return outcome[0] if outcome else UnpacedRun(0, len(mine))

    return wait


def run(
    profiles: dict[str, Profile],
    brokers: dict[str, QuotaBroker] | None,
    args: argparse.Namespace,
    unpaced_conf: dict[str, str] | None = None,
) -> int:
    from throttled_admin.spark import apply_plan, local_session, plan_dataframe

    rows = fleet_plan(args.topics, profiles, args.prefix)
    total = sum(r.partitions or 1 for r in rows)
    entities = "quota entity" if len(profiles) == 1 else "quota entities"
    print(f"plan: {len(rows)} topics, {total} mutations, {len(profiles)} {entities}: {', '.join(profiles)}")
    started = time.monotonic()
    spark_log = Path(tempfile.mkdtemp(prefix="throttled-admin-demo-")) / "spark.log"
    with _stderr_to(spark_log):
        spark = local_session("throttled-admin-demo", args.master)
    print(
        f"Spark {spark.version} on {args.master} started in {time.monotonic() - started:.1f} s "
        f"(its start-up log: {spark_log}, removed unless the run fails)"
    )
    failed = 1  # (kept so until the summary says otherwise: an exception keeps the log)
    try:
        plan_df = plan_dataframe(spark, rows).cache()
        plan_df.count()
        origin = time.monotonic()
        report = _progress_from_brokers(brokers, rows, origin) if brokers else _progress_from_spark(spark, origin)
        halt = _every(args.progress_interval, report)
        unpaced = _start_unpaced(unpaced_conf, rows, args.prefix) if unpaced_conf else None
        try:
            results = [r.asDict() for r in apply_plan(plan_df, profiles).collect()]
        finally:
            halt()
        print(f"pipeline finished in {time.monotonic() - origin:.1f} s")
        failed = _print_summary(results, rows)
        if brokers:
            _print_throttles(results, profiles, admitted_series(brokers, origin), unpaced() if unpaced else None)
        if not args.no_rerun:
            rerun = Counter(r["status"] for r in apply_plan(plan_df, profiles).collect())
            print("\nrerun of the same plan: " + ", ".join(f"{s} {n}" for s, n in rerun.items()))
    finally:
        spark.stop()
        if failed:
            print(f"Spark's start-up log kept: {spark_log}", file=sys.stderr)
        else:
            shutil.rmtree(spark_log.parent, ignore_errors=True)
    if brokers and args.plot:
        from throttled_admin.demo._plot import plot_admitted

        title = f"{len(rows)} topics through the Spark pipeline: admitted mutations vs each tenant's quota"
        print(f"\nplot: {plot_admitted(admitted_series(brokers, origin), Path(args.plot), title)}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m throttled_admin.demo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profiles", help="profiles file (JSON/YAML) of real clusters; default: embedded brokers")
    parser.add_argument("--topics", type=int, default=500, help="about how many topics to provision")
    parser.add_argument("--prefix", default="demo", help="topic name prefix")
    parser.add_argument("--master", default="local[2]", help="Spark master")
    parser.add_argument("--plot", default="demo-admitted-mutations.png", help="PNG to write ('' for none)")
    parser.add_argument("--progress-interval", type=float, default=2.0, help="seconds between progress lines")
    parser.add_argument("--no-rerun", action="store_true", help="skip the rerun that shows nothing changes")
    args = parser.parse_args(argv)
    if args.topics < 1:
        parser.error("--topics must be >= 1")
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print(f"the demo runs on Spark (and Java 17): {install_hint('demo')}", file=sys.stderr)
        return 2
    if args.profiles:
        try:
            profiles = read_profiles(args.profiles)
        except PlanError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return run(profiles, None, args)
    with ExitStack() as stack:
        try:
            brokers, profiles, unpaced_conf = stack.enter_context(embedded_fleet())
        except ImportError as exc:
            print(f"{exc}\n(the embedded clusters need the testing extra, or pass --profiles)", file=sys.stderr)
            return 2
        quotas = ", ".join(f"{t.name} {t.rate:g}/s ({'learned' if t.pace is None else 'given'})" for t in TENANTS)
        print(
            f"embedded clusters: {', '.join(f'{c} {b.bootstrap_servers}' for c, b in brokers.items())}; "
            f"tenants (SASL users) with controller mutation quotas: {quotas}; beside them, unpaced: the "
            f"{BASELINE.tenant.name} rows of {BASELINE.cluster} sent at once by bare confluent-kafka as user "
            f"{BASELINE.user} ({BASELINE.tenant.rate:g}/s)"
        )
        return run(profiles, brokers, args, unpaced_conf)
