"""Bulk topic provisioning under a controller mutation quota: plain confluent-kafka vs ThrottledAdminClient.

Both run the same job against a fresh QuotaBroker with Apache Kafka's rules (librdkafka's v4 requests are
admitted, throttled, and the connection is then muted): create ``--topics`` topics in batches, and like
the provisioning tools users report on (Terraform provider, operators), retry a batch's timed-out topics
once. Each topic's final outcome is counted, and the broker's request log shows how long requests sat in
a muted connection.

    .venv/bin/python benchmarks/bulk_provision.py            # defaults as in docs/benchmarks.md
    .venv/bin/python benchmarks/bulk_provision.py --topics 100 --partitions 5
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from throttled_admin import ThrottledAdminClient
from throttled_admin.testing import QuotaBroker

CreateFn = Callable[[list[NewTopic]], dict[str, Future[None]]]


def classify(futures: dict[str, Future[None]]) -> dict[str, str]:
    out = {}
    for name, future in futures.items():
        error = future.exception()
        out[name] = "created" if error is None else error.args[0].name()
    return out


def run_job(create: CreateFn, topics: list[str], partitions: int, batch_size: int) -> tuple[Counter[str], float]:
    outcomes: Counter[str] = Counter()
    started = time.monotonic()
    for first in range(0, len(topics), batch_size):
        batch = topics[first : first + batch_size]
        result = classify(create([NewTopic(n, partitions, 1) for n in batch]))
        timed_out = [n for n, o in result.items() if o == "_TIMED_OUT"]
        if timed_out:  # the usual remedy: retry what timed out
            retried = classify(create([NewTopic(n, partitions, 1) for n in timed_out]))
            result.update({n: f"timed out, then {o} on retry" for n, o in retried.items()})
        outcomes.update(result.values())
    return outcomes, time.monotonic() - started


def muted_wait_s(broker: QuotaBroker) -> float:
    """The longest a mutation sat unprocessed in a muted connection (KIP-219) before the broker read it."""
    return max((r.held_s for r in broker.request_log() if r.api_key == 19), default=0.0)


def bench(name: str, make: Callable[[str], Any], args: argparse.Namespace) -> dict[str, Any]:
    topics = [f"bench.{i:05d}" for i in range(args.topics)]
    with QuotaBroker(controller_mutation_rate=args.rate) as broker:
        client = make(broker.bootstrap_servers)
        outcomes, elapsed = run_job(client.create_topics, topics, args.partitions, args.batch_size)
        if isinstance(client, ThrottledAdminClient):
            client.close()
        created = broker.topics()
        requests = [r for r in broker.request_log() if r.api_key == 19]
        return {
            "client": name,
            "seconds": elapsed,
            "outcomes": dict(outcomes),
            "topics on broker": len(created),
            "CreateTopics requests": len(requests),
            "longest muted wait s": muted_wait_s(broker),
        }


def earliest_s(args: argparse.Namespace) -> float:
    """When the bucket (full at burst) has refilled enough to admit the last batch (K >= 0 again)."""
    last_batch = (args.topics - 1) % args.batch_size + 1
    before_last = (args.topics - last_batch) * args.partitions
    return max(0.0, float((before_last - 11 * args.rate) / args.rate))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--rate", type=float, default=100.0, help="controller_mutation_rate (burst = 11 x rate)")
    parser.add_argument("--request-timeout", type=float, default=5.0, help="librdkafka request_timeout, seconds")
    args = parser.parse_args()

    def conf(bootstrap: str) -> dict[str, Any]:
        return {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(args.request_timeout * 1000)}

    def plain(bootstrap: str) -> Any:
        admin = AdminClient(conf(bootstrap))
        original = admin.create_topics
        admin.create_topics = lambda new, **kw: original(new, request_timeout=args.request_timeout)  # type: ignore[method-assign]
        return admin

    def throttled(bootstrap: str) -> Any:
        admin = ThrottledAdminClient(conf(bootstrap), default_api_timeout_ms=120_000)
        original = admin.create_topics
        admin.create_topics = lambda new, **kw: original(new, request_timeout=args.request_timeout)  # type: ignore[method-assign]
        return admin

    mutations = args.topics * args.partitions
    print(
        f"{args.topics} topics x {args.partitions} partitions = {mutations} mutations in batches of "
        f"{args.batch_size}; quota {args.rate:g}/s, burst {11 * args.rate:g}; "
        f"request_timeout {args.request_timeout:g} s; "
        f"earliest the last batch can be admitted: {earliest_s(args):.1f} s\n"
    )
    columns = [
        "client",
        "wall time",
        "outcome per topic",
        "topics on broker",
        "CreateTopics requests",
        "longest wait in a muted connection",
    ]
    print("| " + " | ".join(columns) + " |")
    print("|---|---|---|---|---|---|")
    for name, make in (("confluent-kafka AdminClient", plain), ("throttled_admin.ThrottledAdminClient", throttled)):
        row = bench(name, make, args)
        outcomes = ", ".join(f"{k}: {v}" for k, v in sorted(row["outcomes"].items()))
        print(
            f"| {row['client']} | {row['seconds']:.1f} s | {outcomes} | {row['topics on broker']} | "
            f"{row['CreateTopics requests']} | {row['longest muted wait s']:.1f} s |",
            flush=True,
        )


if __name__ == "__main__":
    main()
