"""The same plain admin sequence gives the same results from QuotaBroker and from Tansu, a real
third-party Kafka-compatible broker."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from throttled_admin.testing import QuotaBroker


def run_sequence(bootstrap: str) -> list[object]:
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def codes(futures: Mapping[str, Future[Any]]) -> dict[str, str]:
        out = {}
        for name, future in futures.items():
            exc = future.exception(30)
            out[name] = "OK" if exc is None else exc.args[0].name()
        return out

    steps: list[object] = [
        codes(admin.create_topics([NewTopic("parity-a", 3, 1), NewTopic("parity-b", 1, 1)])),
        codes(admin.create_topics([NewTopic("parity-a", 3, 1)])),
        codes(admin.delete_topics(["parity-missing"])),
        codes(admin.delete_topics(["parity-b"])),
        codes(admin.delete_topics(["parity-b"])),
        codes(admin.create_topics([NewTopic("parity-b", 2, 1)])),
    ]
    metadata = admin.list_topics(timeout=30)
    steps.append({name: len(t.partitions) for name, t in metadata.topics.items() if name.startswith("parity-")})
    return steps


def test_quota_broker_matches_tansu(tansu: str, quota_broker: Callable[..., QuotaBroker]) -> None:
    expected = run_sequence(tansu)
    assert expected[1] == {"parity-a": "TOPIC_ALREADY_EXISTS"}
    assert expected[2] == {"parity-missing": "UNKNOWN_TOPIC_OR_PART"}
    assert run_sequence(quota_broker().bootstrap_servers) == expected
