"""The demo's baseline: one tenant's rows sent as most code sends them today, in one ``create_topics`` call of
bare confluent-kafka, with no pacing, to the same broker as the paced run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from throttled_admin.provisioning import PlanRow

__all__ = ["UnpacedRun", "run_unpaced"]


@dataclass(frozen=True)
class UnpacedRun:
    created: int
    failed: int


def run_unpaced(conf: Mapping[str, str], rows: Sequence[PlanRow], prefix: str) -> UnpacedRun:
    """Create ``rows``' topics (their partitions, under ``prefix``) at once; wait for every result."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(dict(conf))
    topics = [NewTopic(f"{prefix}.{index:04d}", row.partitions or 1) for index, row in enumerate(rows)]
    futures = admin.create_topics(topics, request_timeout=60)
    failed = sum(1 for future in futures.values() if future.exception(timeout=90) is not None)
    return UnpacedRun(len(topics) - failed, failed)
