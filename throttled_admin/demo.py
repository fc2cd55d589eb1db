"""The main job of ``make demo``: provision many topics in batches under a controller mutation quota.

    python -m throttled_admin.demo                               # embedded QuotaBroker (Apache Kafka rules)
    python -m throttled_admin.demo --bootstrap-servers host:9092 # a real cluster

Every topic ends with a definite outcome: created, already present (re-runs are idempotent), or failed
with its error. Needs the ``testing`` extra for the embedded broker.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from confluent_kafka import KafkaError, KafkaException

from throttled_admin import NewTopic, ThrottledAdminClient


def provision(bootstrap_servers: str, names: list[str], partitions: int, batch_size: int, timeout_ms: int) -> int:
    outcomes: Counter[str] = Counter()
    failures: dict[str, str] = {}
    started = time.monotonic()
    conf = {"bootstrap.servers": bootstrap_servers, "client.id": "throttled-admin-demo"}
    with ThrottledAdminClient(conf, default_api_timeout_ms=timeout_ms) as admin:
        for first in range(0, len(names), batch_size):
            batch = names[first : first + batch_size]
            futures = admin.create_topics([NewTopic(name, partitions, 1) for name in batch])
            for name, future in futures.items():
                error = future.exception()
                if error is None:
                    outcomes["created"] += 1
                elif isinstance(error, KafkaException) and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    outcomes["already present"] += 1
                else:
                    outcomes["failed"] += 1
                    failures[name] = str(error)
            done = first + len(batch)
            print(f"  {done:>5}/{len(names)} topics  {time.monotonic() - started:6.1f} s  {dict(outcomes)}")
        stats = admin.metrics()
    for name, reason in sorted(failures.items())[:20]:
        print(f"  failed: {name}: {reason}")
    print(
        f"done in {time.monotonic() - started:.1f} s: {dict(outcomes)}\n"
        f"  throttle time avg {stats['throttle-time-avg']:.0f} ms, max {stats['throttle-time-max']:.0f} ms; "
        f"{stats['quota-violation-total']:.0f} quota violations, {stats['retry-total']:.0f} retries, "
        f"{stats['backoff-time-ms-total'] / 1000:.1f} s waiting out throttles locally"
    )
    return 1 if outcomes["failed"] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m throttled_admin.demo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bootstrap-servers", help="a real cluster; default: an embedded QuotaBroker")
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--prefix", default="demo.provisioned")
    parser.add_argument("--timeout-ms", type=int, default=120_000, help="deadline of each batch")
    parser.add_argument("--controller-mutation-rate", type=float, default=50.0, help="embedded broker's quota")
    args = parser.parse_args(argv)
    names = [f"{args.prefix}.{i:05d}" for i in range(args.topics)]
    if args.bootstrap_servers:
        print(f"provisioning {len(names)} topics x {args.partitions} partitions on {args.bootstrap_servers}")
        return provision(args.bootstrap_servers, names, args.partitions, args.batch_size, args.timeout_ms)
    try:
        from throttled_admin.testing import QuotaBroker
    except ImportError as exc:
        print(f"{exc}\n(or pass --bootstrap-servers)", file=sys.stderr)
        return 2
    with QuotaBroker(controller_mutation_rate=args.controller_mutation_rate) as broker:
        print(
            f"provisioning {len(names)} topics x {args.partitions} partitions on an embedded QuotaBroker "
            f"({broker.bootstrap_servers}, controller_mutation_rate={args.controller_mutation_rate:g}/s, "
            f"Apache Kafka enforcement: librdkafka is admitted, throttled and must back off itself)"
        )
        code = provision(broker.bootstrap_servers, names, args.partitions, args.batch_size, args.timeout_ms)
        print(f"broker has {len(broker.topics())} topics")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
