"""The KIP-599 token bucket, exactly as Kafka's ``TokenBucket`` and ``ControllerMutationQuotaManager``.

One implementation serves the test broker (which enforces the quota) and anything on the client side
that needs to reason about it, so the arithmetic lives in one place:

- rate R (mutations/s), burst B = samples x window_s x R; the bucket starts full (K = B);
- refill: K = min(B, K + R x elapsed_s); record N: K = min(B, K - N), with no lower bound;
- a violation only when K < 0 (zero is fine); throttle = round(-K / R x 1000) ms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TokenBucket", "throttle_time_ms"]


def throttle_time_ms(tokens: float, rate: float) -> int:
    """Kafka's throttle for a bucket at ``tokens``: round(-K / R x 1000), 0 when K >= 0."""
    if tokens >= 0:
        return 0
    # Kafka uses Math.round (half up); for the negative tokens here -K/R is positive, so int(x + 0.5) matches.
    return int(-tokens / rate * 1000 + 0.5)


@dataclass
class TokenBucket:
    """A KIP-599 bucket. Times are seconds on any monotonic clock the caller supplies."""

    rate: float
    window_num: int = 11
    window_size_s: float = 1.0
    tokens: float = field(init=False)
    last_update_s: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ValueError(f"rate must be > 0 mutations/s, got {self.rate!r}")
        if self.window_num < 1 or self.window_size_s <= 0:
            raise ValueError("window_num must be >= 1 and window_size_s > 0")
        self.tokens = self.burst

    @property
    def burst(self) -> float:
        return self.window_num * self.window_size_s * self.rate

    def measure(self, now_s: float) -> float:
        """The token count at ``now_s`` after refilling (Kafka's ``TokenBucket.measure``). The cap is the burst of
        the rate in force now, also on the first measure: a rate lowered before first use caps a full bucket."""
        elapsed_s = 0.0 if self.last_update_s is None else max(0.0, now_s - self.last_update_s)
        self.tokens = min(self.burst, self.tokens + self.rate * elapsed_s)
        self.last_update_s = now_s
        return self.tokens

    def record(self, mutations: float, now_s: float) -> None:
        """Charge ``mutations`` at ``now_s``; tokens may go (far) below zero."""
        self.measure(now_s)
        self.tokens = min(self.burst, self.tokens - mutations)

    def violated(self, now_s: float) -> bool:
        """Kafka's ``Sensor.checkQuotas`` for a TokenBucket: a violation only when K < 0."""
        return self.measure(now_s) < 0

    def throttle_time_ms(self, now_s: float) -> int:
        return throttle_time_ms(self.measure(now_s), self.rate)
