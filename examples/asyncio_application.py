"""An asyncio service provisioning its topics with AIOThrottledAdminClient (the asyncio form of application.py).

    python examples/asyncio_application.py                      # against an embedded quota-enforcing broker
    python examples/asyncio_application.py --bootstrap-servers host:9092

Each topic gets an ``asyncio.Future``. The whole provisioning has a deadline (``--deadline-s``): when it passes,
the topics not yet sent are withdrawn, never sent, and the service goes on without waiting for them.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from throttled_admin.admin import NewTopic
from throttled_admin.aio import AIOThrottledAdminClient


@contextmanager
def cluster(bootstrap_servers: str | None, **broker_kwargs: Any) -> Iterator[str]:
    """The cluster given, or else an embedded QuotaBroker: only then is the ``testing`` extra needed."""
    if bootstrap_servers:
        yield bootstrap_servers
        return
    from throttled_admin.testing import cluster_or_quota_broker

    with cluster_or_quota_broker(None, **broker_kwargs) as bootstrap:
        yield bootstrap


async def provision(bootstrap: str, topics: int, deadline_s: float) -> int:
    async with AIOThrottledAdminClient({"bootstrap.servers": bootstrap, "client.id": "orders-service"}) as admin:
        wanted = [NewTopic(f"orders.async.{i}", num_partitions=3, replication_factor=1) for i in range(topics)]
        futures = await admin.create_topics(wanted)
        try:
            # Cancelling the gather (here by wait_for's deadline) cancels every topic's future: unsent ones
            # are withdrawn from the client's queue.
            await asyncio.wait_for(asyncio.gather(*futures.values(), return_exceptions=True), deadline_s)
        except asyncio.TimeoutError:
            print(f"deadline of {deadline_s} s passed")
        created = withdrawn = failed = 0
        for name, future in futures.items():
            if future.cancelled():
                withdrawn += 1
            elif future.exception() is not None:
                failed += 1
                print(f"{name}: {future.exception()}")
            else:
                created += 1
        print(f"created {created} of {len(futures)} topics ({withdrawn} withdrawn, {failed} failed)")
        stats = admin.metrics()  # refusals (error 89) and throttled responses apart: Kafka throttles without refusing
        print(
            f"{stats['request-total']:.0f} requests, {stats['mutations-admitted-total']:.0f} partitions admitted; "
            f"{stats['quota-violation-total']:.0f} topics refused by the quota (error 89), "
            f"{stats['throttled-response-total']:.0f} responses throttled "
            f"(longest {stats['throttle-time-max']:.0f} ms); "
            f"{stats['retry-total']:.0f} retries"
        )
    return 0 if created == len(futures) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-servers")
    parser.add_argument("--topics", type=int, default=90)
    parser.add_argument("--deadline-s", type=float, default=120.0)
    args = parser.parse_args(argv)
    with cluster(args.bootstrap_servers, controller_mutation_rate=20, enforcement="strict") as bootstrap:
        return asyncio.run(provision(bootstrap, args.topics, args.deadline_s))


if __name__ == "__main__":
    raise SystemExit(main())
