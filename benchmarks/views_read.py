"""What one ``wait_for_metadata`` read costs the client: the broker-views reader's Metadata request to one QuotaBroker
(a process of its own, SASL PLAIN, as in the fleet of ``pipeline.py --fleet``) about topics that exist, on its kept
connection, timed on the reading thread's CPU clock; and the answer's decode alone (its response header and body:
``_driver/metadata_wire``), on the answer's bytes as read. Best of ``--rounds`` rounds of ``--reads`` reads each.

    .venv/bin/python benchmarks/views_read.py                    # 17 topics of 5 partitions (a fleet read)
    .venv/bin/python benchmarks/views_read.py --topics 73 --partitions 1
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pipeline
from _common import best_us
from confluent_kafka.admin import NewTopic

from throttled_admin import ThrottledAdminClient
from throttled_admin._driver import broker_connection, metadata_wire
from throttled_admin._driver.wire_codec import response_body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=17)
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--reads", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    pipeline.BROKER_PROCESSES["on"] = True
    names = [f"views-read-{i:04d}" for i in range(args.topics)]
    with pipeline.brokers_for({"reader": 1000.0}, 1) as (_, profiles):
        admin = ThrottledAdminClient(profiles["reader"].conf)
        try:
            for future in admin.create_topics([NewTopic(n, args.partitions, 1) for n in names]).values():
                future.result()
            reader = admin._broker_views
            frames: list[bytes] = []
            keep = broker_connection.response_body  # type: ignore[attr-defined]

            def kept(frame: bytes, correlation_id: int, flexible: bool) -> Any:
                frames.append(frame)
                return keep(frame, correlation_id, flexible=flexible)

            broker_connection.response_body = kept  # type: ignore[attr-defined]  # (the answer's bytes, once)
            reader.read_cluster(names)
            broker_connection.response_body = keep  # type: ignore[attr-defined]
            read_us = best_us(lambda: reader.read_cluster(names), args.reads, args.rounds, time.thread_time)
            frame, asked = frames[-1], set(names)
            correlation_id = int.from_bytes(frame[:4], "big")
            (connection,) = reader._connections.values()  # one broker: one connection, the version it speaks
            version = connection.metadata_version
            decode_us = best_us(
                lambda: metadata_wire.decode(version, response_body(frame, correlation_id, flexible=True), asked),
                args.reads * 10,
                args.rounds,
                time.thread_time,
            )
        finally:
            admin.close()
    print(f"{args.topics} topics of {args.partitions} partitions, {len(frame)} bytes an answer:")
    print(f"| a views read (its thread's CPU) | {read_us:.0f} us |")
    print(f"| of which the answer's decode | {decode_us:.0f} us |")


if __name__ == "__main__":
    main()
