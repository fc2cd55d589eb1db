"""The observed round trip of a mutation request, by size: rtt(n) = base + per_topic x n.

The engine sends nothing that cannot be answered before its deadline: a request sent with less time left than
it takes would only be applied after the caller was told it failed. So the estimate is a *floor*, the fastest
that recent answers took, never a mean: one slow answer (a controller election, a GC pause) must not lock short
calls out, and only answered requests count (a request that got no answer says nothing about how long one
takes). Samples older than ``RECENT_S`` are forgotten, so an estimate that once was high recovers even while no
call is sent. An estimate needs ``MIN_SAMPLES`` recent answers; with fewer it is zero, and the engine tries
(the first requests of a client are always sent, and a lone slow answer is answered by trying again).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

__all__ = ["MIN_SAMPLES", "RECENT_S", "RoundTrip"]

RECENT_S = 30.0
MIN_SAMPLES = 3
_SAMPLES = 16
_NONE = (0.0, 0.0)  # no estimate: too few recent answers
_LARGE = 50  # requests of at least this many topics say something about the per-topic term


@dataclass
class RoundTrip:
    _samples: deque[tuple[float, int, float]] = field(default_factory=lambda: deque(maxlen=_SAMPLES))
    # (base, per topic, recent samples, until when that holds): it changes only with a new sample or when the
    # oldest recent one expires; every request asks for it, with two values of min_samples
    _cached: tuple[float, float, int, float] | None = field(default=None, repr=False, compare=False)

    def observe(self, topics: int, seconds: float, now: float) -> None:
        """An answered request of ``topics`` topics took ``seconds`` (sent to answered), seen at ``now``."""
        samples, sample = self._samples, (now, max(1, topics), max(0.0, seconds))
        oldest = samples[0] if len(samples) == _SAMPLES else None  # the sample this one pushes out
        samples.append(sample)
        self._cached = _updated(self._cached, sample, oldest, samples[0][0], now)

    def estimate(self, now: float, min_samples: int = MIN_SAMPLES) -> tuple[float, float]:
        """(base, per topic) at ``now``: ``expected_s(n)`` is ``base + per_topic * n``, for sizing many topics at
        one time without recomputing the floor for each."""
        cached = self._cached
        if cached is None or now >= cached[3]:
            cached = self._cached = self._floor(now)
        base, per_topic, count, _ = cached
        return (base, per_topic) if count >= min_samples else _NONE

    def estimates(self, now: float) -> dict[int, tuple[float, float]]:
        """``estimate`` with 1 and with ``MIN_SAMPLES`` samples, by that number: a request asks both (a retry is
        sized by any recent answer, a first attempt by ``MIN_SAMPLES``), once."""
        cached = self._cached
        if cached is None or now >= cached[3]:
            cached = self._cached = self._floor(now)
        base, per_topic, count, _ = cached
        both = (base, per_topic) if count else _NONE
        return {1: both, MIN_SAMPLES: both if count >= MIN_SAMPLES else _NONE}

    def _floor(self, now: float) -> tuple[float, float, int, float]:
        # Plain loops over at most _SAMPLES samples: every answer asks for a new floor (a call's request, once).
        oldest = per_topic = math.inf
        recent: list[tuple[float, int, float]] = []
        for sample in self._samples:
            at, topics, seconds = sample
            if now - at <= RECENT_S:
                recent.append(sample)
                oldest = at if at < oldest else oldest
                if topics >= _LARGE and seconds / topics < per_topic:
                    per_topic = seconds / topics
        per_topic = 0.0 if per_topic == math.inf else per_topic
        # It holds until the oldest recent sample expires (older ones have; none: until a new sample).
        base = math.inf
        for _, topics, seconds in recent:
            left = seconds - per_topic * topics
            base = left if left < base else base
        base = 0.0 if base == math.inf else (base if base > 0.0 else 0.0)
        return base, per_topic, len(recent), oldest + RECENT_S

    def expected_s(self, topics: int, now: float, min_samples: int = MIN_SAMPLES) -> float:
        """The least a request of ``topics`` topics has recently taken (0 with fewer than ``min_samples`` recent
        answers). Refusing to send asks for ``MIN_SAMPLES``; whether a retry still fits, and how much of a call's
        time to keep for the answer, take any recent answer (``min_samples=1``): a wrong guess there costs a retry,
        never a lockout."""
        base, per_topic = self.estimate(now, min_samples)
        return base + per_topic * topics


def _updated(
    cached: tuple[float, float, int, float] | None,
    sample: tuple[float, int, float],
    oldest: tuple[float, int, float] | None,
    first_at: float,
    now: float,
) -> tuple[float, float, int, float] | None:
    """The floor after a new ``sample`` (seen at ``now``, the newest), from the floor before it, when that can be
    told without going over the samples again (else None: ``_floor`` then recomputes it). ``oldest``: the sample it
    pushed out, if any; ``first_at``: when the oldest sample left was seen (time only moves forward)."""
    if cached is None or now >= cached[3] or sample[1] >= _LARGE:  # stale, or the per-topic term may change
        return None
    base, per_topic, count, holds_until = cached
    if oldest is not None and now - oldest[0] <= RECENT_S:  # a recent sample left: the oldest recent one
        if oldest[1] >= _LARGE or oldest[2] - per_topic * oldest[1] <= base:
            return None  # it may have set the floor
        count, holds_until = count - 1, first_at + RECENT_S
    new_base = max(0.0, sample[2] - per_topic * sample[1])
    if not count:  # the only recent sample
        return new_base, per_topic, 1, now + RECENT_S
    return min(base, new_base), per_topic, count + 1, holds_until
