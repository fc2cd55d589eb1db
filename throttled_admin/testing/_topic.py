"""A topic as the test broker's cluster holds it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

__all__ = ["Topic"]


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    replicas: list[list[int]]  # partition index -> replica node ids, leader first
    configs: dict[str, str] = field(default_factory=dict)  # the topic's overrides, as sent
    # Metadata's partition entries as last built (partition count, entries): a Metadata request for every topic
    # of a big cluster rebuilt them all each time, most of the broker's time under many clients' reads
    metadata_partitions: tuple[int, list[object]] | None = field(default=None, repr=False, compare=False)

    @property
    def partition_count(self) -> int:
        return len(self.replicas)

    @property
    def replication_factor(self) -> int:
        return len(self.replicas[0])
