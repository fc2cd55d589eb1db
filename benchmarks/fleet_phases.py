"""Where a fleet's client CPU goes, phase by phase: the fleet plan of ``pipeline.py --fleet`` (200 SASL entities on
10 QuotaBroker processes) in this process without Spark, every entity in a thread of its own and every phase taken
by all the entities at once (a barrier between phases), the process's CPU (``os.times``: user + system, every thread)
read at each barrier. Ours does what ``provisioning.execute`` does before and while sending (client, the read of the
group's names, DescribeCluster, the creates paced by ``MutationQuota`` with ``wait_for_metadata``, close); ``--bare``
what ``pipeline.py --bare`` does (AdminClient, one ``list_topics``, creates paced by a bucket, each call waited for).

    .venv/bin/python benchmarks/fleet_phases.py            # ours
    .venv/bin/python benchmarks/fleet_phases.py --bare     # bare confluent-kafka
    .venv/bin/python benchmarks/fleet_phases.py --no-wait-for-metadata
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait
from typing import Any

import pipeline

from throttled_admin._driver.metadata_read import ContactWatch
from throttled_admin.provisioning import PlanRow, Profile
from throttled_admin.provisioning._brokers import registered_brokers
from throttled_admin.provisioning._cluster_read import names_to_read, read_cluster_topics
from throttled_admin.provisioning._executor import _new_client, _new_topic

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
    wait(list(futures.values()))
    step()
    admin.close()


def bare(profile: Profile, rows: list[PlanRow], step: Callable[[], None], visible: bool) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(profile.conf)
    step()
    admin.list_topics(timeout=30)
    step()
    pipeline.bare_paced_creates(admin, profile.mutation_rate or 1.0, [(r.topic, r.partitions or 1) for r in rows])
    step()
    del admin  # confluent-kafka destroys the client when the last reference goes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bare", action="store_true")
    parser.add_argument("--no-wait-for-metadata", action="store_true")
    parser.add_argument("--target-seconds", type=float, default=10.0)
    args = parser.parse_args()
    pipeline.BROKER_PROCESSES["on"] = True
    rates, rows = pipeline.entity_plan(200, args.target_seconds, 5)
    mine: dict[str, list[PlanRow]] = {}
    for row in rows:
        mine.setdefault(row.cluster, []).append(row)
    phases, run = (BARE, bare) if args.bare else (OURS, ours)
    with pipeline.brokers_for(rates, 10) as (_, profiles):
        barrier = threading.Barrier(len(profiles) + 1)

        def entity(user: str) -> None:
            barrier.wait()
            run(profiles[user], mine[user], barrier.wait, not args.no_wait_for_metadata)
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


if __name__ == "__main__":
    main()
