"""Where a fleet's client CPU goes, phase by phase: the fleet plan of ``pipeline.py --fleet`` (200 SASL entities on
10 QuotaBroker processes) in this process without Spark, every entity in a thread of its own and every phase taken
by all the entities at once (a barrier between phases), the process's CPU (``os.times``: user + system, every thread)
read at each barrier. Ours does what ``provisioning.execute`` does before and while sending (client, the read of the
group's names, DescribeCluster, the creates paced by ``MutationQuota`` with ``wait_for_metadata``, close); ``--bare``
what ``pipeline.py --bare`` does (AdminClient, one ``list_topics``, creates paced by a bucket, each call waited for).

    .venv/bin/python benchmarks/fleet_phases.py            # ours
    .venv/bin/python benchmarks/fleet_phases.py --bare     # bare confluent-kafka
    .venv/bin/python benchmarks/fleet_phases.py --no-wait-for-metadata
    .venv/bin/python benchmarks/fleet_phases.py --threads [--entities 50]   # and CPU by kind of thread, per phase
    .venv/bin/python benchmarks/fleet_phases.py --turns    # and the schedulers' turns: how many, and their CPU

``--threads`` also reads each thread's CPU (``/proc/self/task/*/schedstat``, with every entity held at the barrier)
and the garbage collector's time (``gc.callbacks``) at each barrier: per phase, the CPU of the schedulers' threads,
the ``wait_for_metadata`` readers, librdkafka's threads, the entities' own threads, and the collector's share of
them all. ``--entities`` runs fewer (or more) entities of the same plan: the cost per topic against the number of
clients in the process. ``--turns`` counts the scheduler's turns and their parts, and times each on its thread's
CPU clock (``TurnCosts``).

Ours waits for its futures as ``provisioning.execute`` does (a callback each, ``_when_settled``): a
``concurrent.futures.wait`` on them made a ``Condition`` a future, and the garbage collector's share with them.
"""

from __future__ import annotations

import argparse
import gc
import os
import queue
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from itertools import pairwise
from pathlib import Path
from typing import Any

import pipeline

from throttled_admin._driver.metadata_read import ContactWatch
from throttled_admin._driver.scheduler import Scheduler
from throttled_admin._driver.turns import Turns
from throttled_admin.provisioning import PlanRow, Profile
from throttled_admin.provisioning._brokers import registered_brokers
from throttled_admin.provisioning._cluster_read import names_to_read, read_cluster_topics
from throttled_admin.provisioning._executor import _new_client, _new_topic, _when_settled

OURS = ("client", "read the group's names", "a second DescribeCluster (main's, cut)", "creates, paced", "close")
BARE = ("client", "list_topics", "creates, paced", "close")


def ours(profile: Profile, rows: list[PlanRow], step: Callable[[], None], visible: bool) -> None:
    watch = ContactWatch()
    admin = _new_client(profile, watch, None)
    step()
    read_cluster_topics(admin, watch, names_to_read(rows), 30)
    step()
    registered_brokers(admin, 30)
    step()
    futures = admin.create_topics([_new_topic(r) for r in rows], request_timeout=30, wait_for_metadata=visible)
    settled: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
    for future in futures.values():  # as ``provisioning.execute`` waits (a wait() would make a Condition each)
        _when_settled(future, settled.put)
    for _ in futures:
        settled.get()
    step()
    admin.close()


def bare(profile: Profile, rows: list[PlanRow], step: Callable[[], None], visible: bool) -> None:
    from confluent_kafka.admin import AdminClient

    conf: dict[str, Any] = dict(profile.conf)
    admin = AdminClient(conf)
    step()
    admin.list_topics(timeout=30)
    step()
    pipeline.bare_paced_creates(admin, profile.mutation_rate or 1.0, [(r.topic, r.partitions or 1) for r in rows])
    step()
    del admin  # confluent-kafka destroys the client when the last reference goes


def thread_cpu() -> dict[int, tuple[str, float]]:
    """Each thread of this process: its kind (Python's by thread name, numbers dropped; the others, librdkafka's, by
    their own name) and its CPU seconds so far."""
    names = {t.native_id: t.name.rstrip("0123456789-_") for t in threading.enumerate()}
    out: dict[int, tuple[str, float]] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            ran_ns = int((task / "schedstat").read_text().split()[0])
            stat = (task / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        name = names.get(int(task.name)) or stat[stat.index("(") + 1 : stat.rindex(")")]
        if name.startswith("rdk:"):
            name = "librdkafka (rdk:*)"
        elif name.startswith("Thread"):
            name = "the entities"
        out[int(task.name)] = name, ran_ns / 1e9
    return out


class TurnCosts:
    """``--turns``: how many times the driver's parts ran over the whole run, and their CPU (``time.thread_time``
    of the thread running each, nested parts inside their callers'), by wrapping them: what a scheduler's turn
    costs and what it is made of. The wrapping adds about 2 us a call to what it measures."""

    PARTS = (
        (Scheduler, "_turn", "a turn (any thread)"),
        (Scheduler, "_step", "of which the engine's step"),
        (Turns, "finish_leftover", "of which carrying out what it says"),
        (Scheduler, "send", "of which sends"),
        (Scheduler, "_poll", "of which polls"),
        (Scheduler, "_serve", "the scheduler's thread's serves (a turn, or a poll)"),
        (Scheduler, "_poll_only", "its polls between turns"),
        (Scheduler, "_read_views", "a wait_for_metadata read (the views reader)"),
        (Scheduler, "_views_done", "its answer handed to the engine"),
    )

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        for owner, name, label in self.PARTS:
            setattr(owner, name, self._wrapped(getattr(owner, name), label))

    def _wrapped(self, method: Callable[..., Any], label: str) -> Callable[..., Any]:
        counts, seconds, clock = self.counts, self.seconds, time.thread_time

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = clock()
            try:
                return method(*args, **kwargs)
            finally:
                seconds[label] += clock() - started  # (a dict's += on one key: the GIL keeps it whole enough)
                counts[label] += 1

        return timed

    def print(self) -> None:
        print("\nThe driver's parts over the whole run (--turns):\n| part | times | CPU | each |\n|---|---|---|---|")
        for _, _, label in self.PARTS:
            n, cpu = self.counts[label], self.seconds[label]
            print(f"| {label} | {n} | {cpu:.2f} s | {1e6 * cpu / max(n, 1):.0f} us |")


class Collector:
    """The garbage collector's time, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._on)

    def _on(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bare", action="store_true")
    parser.add_argument("--no-wait-for-metadata", action="store_true")
    parser.add_argument("--target-seconds", type=float, default=10.0)
    parser.add_argument("--entities", type=int, default=200)
    parser.add_argument("--threads", action="store_true", help="also CPU by kind of thread, per phase")
    parser.add_argument("--turns", action="store_true", help="also the schedulers' turns: how many, their CPU")
    args = parser.parse_args()
    turns = TurnCosts() if args.turns and not args.bare else None
    pipeline.BROKER_PROCESSES["on"] = True
    rates, rows = pipeline.entity_plan(args.entities, args.target_seconds, 5)
    mine: dict[str, list[PlanRow]] = {}
    for row in rows:
        mine.setdefault(row.cluster, []).append(row)
    phases, run = (BARE, bare) if args.bare else (OURS, ours)
    with pipeline.brokers_for(rates, 10) as (_, profiles):
        collector = Collector()
        kinds: list[tuple[dict[int, tuple[str, float]], float]] = []  # at each barrier, every entity held there

        def mark() -> None:
            if args.threads:
                kinds.append((thread_cpu(), collector.seconds))

        barrier = threading.Barrier(len(profiles) + 1, action=mark)

        def step() -> None:
            barrier.wait()

        def entity(user: str) -> None:
            barrier.wait()
            run(profiles[user], mine[user], step, not args.no_wait_for_metadata)
            barrier.wait()

        threads = [threading.Thread(target=entity, args=(user,)) for user in profiles]
        for thread in threads:
            thread.start()
        marks: list[tuple[float, float]] = []
        for _ in range(len(phases) + 1):
            barrier.wait()
            times: Any = os.times()
            marks.append((times.user + times.system, time.monotonic()))
        for thread in threads:
            thread.join()
    print(f"{len(profiles)} entities, {len(rows)} topics; CPU of this process (os.times), every entity at once:")
    print("| phase | wall | CPU | per entity | per topic |\n|---|---|---|---|---|")
    for phase, (cpu0, wall0), (cpu1, wall1) in zip(phases, marks[:-1], marks[1:], strict=True):
        cpu = cpu1 - cpu0
        print(
            f"| {phase} | {wall1 - wall0:.2f} s | {cpu:.2f} s | {1000 * cpu / len(profiles):.2f} ms | "
            f"{1000 * cpu / len(rows):.3f} ms |"
        )
    total = marks[-1][0] - marks[0][0]
    print(f"| all | {marks[-1][1] - marks[0][1]:.2f} s | {total:.2f} s | - | {1000 * total / len(rows):.3f} ms |")
    if kinds:
        print_threads(phases, kinds)
    if turns is not None:
        turns.print()


def print_threads(phases: tuple[str, ...], kinds: list[tuple[dict[int, tuple[str, float]], float]]) -> None:
    """CPU by kind of thread in each phase: of the threads alive at its end (close ends the clients' own, whose
    CPU in it is missed)."""
    rows: list[defaultdict[str, float]] = []
    for (before, _), (after, _) in pairwise(kinds):
        row: defaultdict[str, float] = defaultdict(float)
        for tid, (kind, seconds) in after.items():
            row[kind] += seconds - (before[tid][1] if tid in before else 0.0)
        rows.append(row)
    names = sorted({kind for row in rows for kind in row}, key=lambda kind: -sum(row[kind] for row in rows))
    print("\nCPU by kind of thread, per phase (s), the garbage collector's share included (its own column):")
    print("| phase | " + " | ".join(names) + " | garbage collector |")
    print("|---" * (len(names) + 2) + "|")
    for phase, row, (_, gc0), (_, gc1) in zip(phases, rows, kinds[:-1], kinds[1:], strict=True):
        cells = [f"{row[kind]:.2f}" for kind in names]
        print(f"| {phase} | " + " | ".join(cells) + f" | {gc1 - gc0:.2f} |")


if __name__ == "__main__":
    main()
