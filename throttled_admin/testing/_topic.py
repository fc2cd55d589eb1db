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

    @property
    def partition_count(self) -> int:
        return len(self.replicas)

    @property
    def replication_factor(self) -> int:
        return len(self.replicas[0])
