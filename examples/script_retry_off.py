"""A script that behaves like kafka-topics.sh: quota retries off, fail fast, exit 1.

    python examples/script_retry_off.py --topic audit.log --partitions 12
    python examples/script_retry_off.py --bootstrap-servers host:9092 --topic audit.log --partitions 12

kafka-topics.sh passes retryOnQuotaViolation(false) and prints
"Error while executing topic command : The throttling quota has been exceeded."; so does this script, and
it also says how long to wait before trying again (``throttle_time_ms``), on stdout as kafka-topics.sh does.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from throttled_admin import NewTopic, ThrottledAdminClient, ThrottlingQuotaExceededException


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
    parser.add_argument("--topic", default="audit.log")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--replication-factor", type=int, default=1)
    args = parser.parse_args(argv)
    # As kafka-topics.sh, no log lines: the error and the hint below say what a throttle means.
    logging.getLogger("throttled_admin.throttle_notice").setLevel(logging.ERROR)
    # The embedded demo broker's quota (1 mutation/s, burst 11) is used up first (12 mutations: in debt), to show
    # the error; a cluster given with --bootstrap-servers gets the one create asked for, as kafka-topics.sh does.
    with (
        cluster(args.bootstrap_servers, controller_mutation_rate=1, enforcement="strict") as bootstrap,
        ThrottledAdminClient({"bootstrap.servers": bootstrap}, retry_on_quota_violation=False) as admin,
    ):
        if args.bootstrap_servers is None:
            for future in admin.create_topics([NewTopic(f"{args.topic}.warm-up", 12, 1)]).values():
                future.result()
        topic = NewTopic(args.topic, args.partitions, args.replication_factor)
        try:
            admin.create_topics([topic])[topic.topic].result()
        except ThrottlingQuotaExceededException as exc:
            # kafka-topics.sh's line, then the hint as `throttled-admin topics` words it
            print("Error while executing topic command : The throttling quota has been exceeded.")
            print(f"Retry after {exc.throttle_time_ms} ms.")
            return 1
        except KafkaException as exc:
            error = exc.args[0]
            print(f"Error while executing topic command : {error.str() if isinstance(error, KafkaError) else exc}")
            return 1
    print(f"Created topic {topic.topic}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
