"""What a client costs while its work waits: the scheduler's wake-ups of a fleet of paced clients.

``--clients`` ThrottledAdminClients in this process (as ``pipeline.py --fleet --execution driver`` runs them), each
with a pacer at ``--rate`` mutations/s and a burst of one, each given one call of ``--topics`` one-partition
creates against a ``python -m throttled_admin.testing`` broker process with no quota: after the first send every
client has work pending and waits for its pacer most of the time. Over a window of ``--seconds`` the process's CPU
time (this process only; the broker has its own) and, per client, the scheduler's engine steps and its polls of
librdkafka (counted by wrapping the scheduler's ``_step`` and the transport's ``poll``) are read; printed as JSON
with the load average at the start and end.

    .venv/bin/python benchmarks/waiting_clients.py                          # 100 clients, 1 mutation/s, 8 s
    .venv/bin/python benchmarks/waiting_clients.py --clients 200 --seconds 10
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from collections.abc import Callable
from typing import Any

from overhead import broker_process

from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient


def _counted(counts: dict[str, int], key: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def counting(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return method(*args, **kwargs)

    return counting


def run(args: argparse.Namespace) -> dict[str, Any]:
    with broker_process() as (bootstrap, _):
        counts = {"steps": 0, "polls": 0}
        clients = []
        for i in range(args.clients):
            admin = ThrottledAdminClient(
                {"bootstrap.servers": bootstrap, "client.id": f"wait{i}", "log_level": 0},
                mutation_quota=MutationQuota(rate=args.rate, burst=1),
            )
            scheduler = admin._scheduler
            assert scheduler is not None
            scheduler._step = _counted(counts, "steps", scheduler._step)  # type: ignore[method-assign]
            transport = scheduler._transport
            transport.poll = _counted(counts, "polls", transport.poll)  # type: ignore[method-assign]
            clients.append(admin)
        calls = [
            admin.create_topics([NewTopic(f"w{i}.{j}", 1, 1) for j in range(args.topics)], timeout_ms=600_000)
            for i, admin in enumerate(clients)
        ]
        time.sleep(args.warmup)  # every client sent its first request and waits for its pacer
        load_start = os.getloadavg()[0]
        steps0, polls0 = counts["steps"], counts["polls"]
        cpu0, wall0 = time.process_time(), time.perf_counter()
        time.sleep(args.seconds)
        cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        steps, polls = counts["steps"] - steps0, counts["polls"] - polls0
        load_end = os.getloadavg()[0]
        pending = sum(not future.done() for futures in calls for future in futures.values())
        for admin in clients:
            admin.close()
    per_client_s = args.clients * wall_s
    return {
        "clients": args.clients,
        "rate": args.rate,
        "window_s": round(wall_s, 2),
        "cpu_s": round(cpu_s, 3),
        "cpu_ms_per_client_second": round(1000 * cpu_s / per_client_s, 3),
        "steps_per_client_second": round(steps / per_client_s, 2),
        "polls_per_client_second": round(polls / per_client_s, 2),
        "cpu_us_per_poll": round(1e6 * cpu_s / max(1, polls), 1),
        "topics_pending_at_end": pending,
        "load": f"{load_start:.1f}-{load_end:.1f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rate", type=float, default=1.0, help="each client's pacer, mutations/s")
    parser.add_argument("--topics", type=int, default=60, help="topics per client (enough to outlast the window)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before the window")
    parser.add_argument("--seconds", type=float, default=8.0, help="the measured window")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.runs):
        print(json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
