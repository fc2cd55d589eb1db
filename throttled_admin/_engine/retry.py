"""The retry back-off, as data: Kafka's ``ExponentialBackoff`` (clients/.../utils/ExponentialBackoff.java).

Quota retries do not use it when the broker gave a throttle: Java's AdminClient waits exactly the connection
throttle (KIP-219), and so does the scheduler's gate. It is used for what has no throttle to wait:
- error 89 that came with throttle_time_ms = 0;
- NOT_CONTROLLER and REQUEST_TIMED_OUT (nothing applied), and responses lost (outcome unknown).
delay(n) = min(retry.backoff.ms x 2^n, retry.backoff.max.ms) x uniform(1 - 0.2, 1 + 0.2), as Kafka computes it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["RetryBackoff"]


@dataclass(frozen=True)
class RetryBackoff:
    initial_ms: float = 100.0  # retry.backoff.ms
    max_ms: float = 1000.0  # retry.backoff.max.ms
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if not (math.isfinite(self.initial_ms) and self.initial_ms >= 0):
            raise ValueError(f"retry.backoff.ms must be a non-negative number, got {self.initial_ms!r}")
        if not (math.isfinite(self.max_ms) and self.max_ms >= 0):
            raise ValueError(f"retry.backoff.max.ms must be a non-negative number, got {self.max_ms!r}")

    def delay_s(self, attempts: int, rng: random.Random, initial_ms: float | None = None) -> float:
        """The wait before retry number ``attempts`` + 1 (``attempts`` = retries so far), its jitter drawn from
        ``rng`` (the engine's: ``EngineConfig.seed``); ``initial_ms`` overrides where the sequence starts (error
        89 without a throttle starts at about one round trip)."""
        initial = self.initial_ms if initial_ms is None else initial_ms
        if initial <= 0:
            return 0.0
        ceiling = max(initial, self.max_ms)
        term = min(initial * self.multiplier ** min(attempts, 32), ceiling)
        spread = rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else 1.0
        return term * spread / 1000
