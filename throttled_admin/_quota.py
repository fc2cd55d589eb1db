"""Pacing to the controller mutation quota (KIP-599): ``MutationQuota`` (public) and the ``Pacer`` behind it.

The pacer keeps a mirror of the broker's token bucket, with the same ``TokenBucket`` arithmetic the test broker
enforces, and releases a request only when the mirror holds enough tokens for it (one request is in flight at a
time, and the mirror is charged when its answer arrives). So the broker admits every request without a throttle:
a strict broker rejects nothing and a permissive one is never pushed past R x W + B in any window of W seconds.
Its state is corrected by every throttle the broker reports (throttle t means K = -t x R right after the charge).

With no configured rate the pacer learns it. Right after a throttle t0 the bucket holds K = -t0 x R; a request
of N mutations admitted dt seconds later, answered with throttle t1, means -t1 x R = -t0 x R + dt x R - N, so
R = N / (t1 - t0 + dt). Until a rate is known the client sends as Java's does and waits out throttles.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass

from throttled_admin._token_bucket import TokenBucket

__all__ = ["MutationQuota", "Pacer"]

# Each paced request carries at least this much of the rate's worth of work, so a steady stream of topics
# goes out as requests about every 100 ms instead of one topic at a time.
_MIN_REQUEST_S = 0.1
_LEARNED_SAMPLES = 5
# The learning formula assumes the bucket did not fill up between the two requests; Kafka's windows are >= 1 s.
_MAX_REFILL_S = 1.0


@dataclass(frozen=True)
class MutationQuota:
    """Pace mutations to a controller mutation quota.

    ``rate``: the quota in mutations (partitions) per second (``controller_mutation_rate``); None learns it
    from the broker's throttles. ``burst``: the bucket size, by default Kafka's 11 one-second windows x rate
    for a known rate, and one second's worth for a learned one (cautious until a throttle says more)."""

    rate: float | None = None
    burst: float | None = None

    def __post_init__(self) -> None:
        for name in ("rate", "burst"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"MutationQuota {name} must be a positive number, got {value!r}")
        if self.rate is None and self.burst is not None:
            raise ValueError("MutationQuota burst needs a rate (a learned rate learns its own burst)")


class Pacer:
    """Not thread-safe: used under the scheduler's lock. Times are monotonic seconds."""

    def __init__(self, quota: MutationQuota) -> None:
        self.quota = quota
        self._bucket: TokenBucket | None = None
        self._samples: deque[float] = deque(maxlen=_LEARNED_SAMPLES)
        self._last_throttle: tuple[float, float] | None = None  # (monotonic time, throttle s) of the last throttle
        if quota.rate is not None:
            self._set_rate(quota.rate)

    @property
    def rate(self) -> float | None:
        return None if self._bucket is None else self._bucket.rate

    def _set_rate(self, rate: float) -> None:
        burst = self.quota.burst if self.quota.burst is not None else (11 * rate if self.quota.rate else rate)
        if self._bucket is None:
            self._bucket = TokenBucket(rate, window_num=1, window_size_s=burst / rate)
        else:
            self._bucket.rate = rate
            self._bucket.window_size_s = burst / rate
            self._bucket.tokens = min(self._bucket.tokens, self._bucket.burst)

    # -- before a request ------------------------------------------------------------------------

    def batch_budget(self, now: float) -> float:
        """Mutations that can be sent now without a throttle (inf while the rate is unknown)."""
        if self._bucket is None:
            return math.inf
        return max(0.0, self._bucket.measure(now))

    def wait_s(self, cost: float, pending_cost: float, now: float) -> float:
        """How long until a request worth sending can go: one holding at least ``cost`` (the next topic)
        and, while more is pending, about ``_MIN_REQUEST_S`` of the rate's worth."""
        bucket = self._bucket
        if bucket is None:
            return 0.0
        wanted = min(max(cost, bucket.rate * _MIN_REQUEST_S), pending_cost, bucket.burst)
        wanted = max(wanted, min(cost, bucket.burst))
        missing = wanted - bucket.measure(now)
        return max(0.0, missing / bucket.rate)

    # -- after a response ------------------------------------------------------------------------

    def on_response(self, *, admitted: float, throttle_s: float, sent_at: float, now: float) -> None:
        """The broker admitted ``admitted`` mutations and answered with ``throttle_s``. The mirror is charged
        now, when the answer arrives: the broker charged a little earlier, so the mirror never runs ahead of it
        (charged at send time it would, by the request's travel time, and draw small throttles). The broker computed
        the throttle when it charged the request, a fixed travel time after ``sent_at``: learning pairs send times,
        which the client knows precisely, not answer times, which wait for the client's thread."""
        if self._bucket is not None and admitted > 0:
            self._bucket.record(admitted, now)
        if throttle_s > 0:
            previous = self._last_throttle
            if previous is not None and admitted > 0:
                at, previous_s = previous
                elapsed_s = sent_at - at
                denominator = throttle_s - previous_s + elapsed_s
                if denominator > 0 and elapsed_s - previous_s < _MAX_REFILL_S:
                    self._learn(admitted / denominator)
            self._last_throttle = (sent_at, throttle_s)
            bucket = self._bucket
            if bucket is not None:
                bucket.measure(now)
                bucket.tokens = -throttle_s * bucket.rate  # the broker's own word on its bucket
        elif (
            self._last_throttle is not None
            and sent_at - self._last_throttle[0] - self._last_throttle[1] > _MAX_REFILL_S
        ):
            self._last_throttle = None  # too long ago to pair with a later throttle

    def _learn(self, sample: float) -> None:
        if self.quota.rate is not None or not math.isfinite(sample) or sample <= 0:
            return
        self._samples.append(sample)
        self._set_rate(statistics.median(self._samples))
