"""The observed round trip of a mutation request, by size: rtt(n) = base + per_topic x n.

The scheduler sends nothing that cannot be answered before its deadline: a request sent with less time left
than its expected round trip would only be applied after the caller was told it failed. Both terms are
exponentially weighted moving averages of what responses took; before any response both are zero (optimistic:
the first request of a client is always sent).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RoundTrip"]

_ALPHA = 0.3
_LARGE = 50  # requests of at least this many topics say something about the per-topic term


@dataclass
class RoundTrip:
    base_s: float = 0.0
    per_topic_s: float = 0.0
    samples: int = 0

    def expected_s(self, topics: int) -> float:
        return self.base_s + self.per_topic_s * topics

    def observe(self, topics: int, seconds: float) -> None:
        seconds = max(0.0, seconds)
        if topics >= _LARGE:
            per_topic = max(0.0, seconds - self.base_s) / topics
            self.per_topic_s = per_topic if self.samples == 0 else _ewma(self.per_topic_s, per_topic)
        base = max(0.0, seconds - self.per_topic_s * topics)
        self.base_s = base if self.samples == 0 else _ewma(self.base_s, base)
        self.samples += 1


def _ewma(old: float, new: float) -> float:
    return old + _ALPHA * (new - old)
