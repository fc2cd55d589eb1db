"""An application provisioning its topics: the one-import swap from confluent-kafka.

    python examples/application.py                      # against an embedded quota-enforcing broker
    python examples/application.py --bootstrap-servers host:9092

Retry on quota violation is on (the default, as in Java's AdminClient): throttled topics are re-sent after
the broker's throttle, within one 60 s deadline for the whole call.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The one-line port: was `from confluent_kafka.admin import AdminClient, NewTopic`.
from throttled_admin.admin import AdminClient, NewTopic


@contextmanager
def cluster(bootstrap_servers: str | None, **broker_kwargs: Any) -> Iterator[str]:
    """The cluster given, or else an embedded QuotaBroker: only then is the ``testing`` extra needed."""
    if bootstrap_servers:
        yield bootstrap_servers
        return
    from throttled_admin.testing import cluster_or_quota_broker

    with cluster_or_quota_broker(None, **broker_kwargs) as bootstrap:
        yield bootstrap


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-servers")
    parser.add_argument("--topics", type=int, default=90)
    args = parser.parse_args(argv)
    with (
        cluster(args.bootstrap_servers, controller_mutation_rate=20, enforcement="strict") as bootstrap,
        AdminClient({"bootstrap.servers": bootstrap, "client.id": "orders-service"}) as admin,
    ):
        wanted = [NewTopic(f"orders.events.{i}", num_partitions=3, replication_factor=1) for i in range(args.topics)]
        futures = admin.create_topics(wanted)
        failed = 0
        for name, future in futures.items():
            try:
                future.result()
            except Exception as exc:  # every topic has a definite outcome: report each failure
                failed += 1
                print(f"{name}: {exc}")
        print(f"created {len(futures) - failed} of {len(futures)} topics")
        # A refusal (error 89) and a throttle are two things: Apache Kafka admits librdkafka's requests over the
        # quota whole and throttles the principal afterwards, so a run can be throttled for minutes with 0 refused.
        stats = admin.metrics()
        print(
            f"{stats['request-total']:.0f} requests, {stats['mutations-admitted-total']:.0f} partitions admitted; "
            f"{stats['quota-violation-total']:.0f} topics refused by the quota (error 89), "
            f"{stats['throttled-response-total']:.0f} responses throttled "
            f"(longest {stats['throttle-time-max']:.0f} ms); "
            f"{stats['retry-total']:.0f} retries, waited {stats['backoff-time-ms-total'] / 1000:.1f} s for the quota"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
