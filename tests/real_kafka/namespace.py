"""Keeping tests apart on a shared Kafka broker: a topic prefix and a client id (a quota entity) per test."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaNamespace:
    prefix: str  # every topic of the test starts with it
    client_id: str  # the test's own quota entity (client-id), so quotas set by one test bind no other

    @classmethod
    def for_test(cls, nodeid: str) -> KafkaNamespace:
        digest = hashlib.sha1(nodeid.encode()).hexdigest()[:10]
        return cls(prefix=f"t{digest}-", client_id=f"c{digest}")

    def topic(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def slow(self, millis: int, name: str) -> str:
        """A topic name that holds a ``kafka_slow_broker``'s controller for ``millis`` when created."""
        return f"slow-{millis}-{self.prefix}{name}"
