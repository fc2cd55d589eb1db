"""Kafka's sampled ``Rate`` with an upper-bound quota, as ``ClientRequestQuotaManager`` uses it for the
request quota (KIP-124).

The arithmetic follows Kafka's ``SampledStat``/``WindowedSum``/``Rate``, ``Sensor.checkQuotas`` and
``QuotaUtils.throttleTime`` line by line, on integer milliseconds as Kafka's ``time.milliseconds()``:

- ``samples`` windows of ``window_ms`` (``quota.window.num`` = 11, ``quota.window.size.seconds`` = 1), plus
  one overlapping placeholder; a sample is complete once ``window_ms`` has passed since it started;
- samples whose last event is ``samples x window_ms`` old are reset before measuring;
- rate = sum of the samples / window size, the window counting at least ``samples - 1`` full windows;
- recording always adds the value; a rate above the bound is a violation, and the throttle is
  round((rate - bound) / bound x window size) ms, at most one window for the request quota.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RateSensor"]


@dataclass
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    event_count: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0
        self.event_count = 0


def _java_round(x: float) -> int:
    """``Math.round``: half up."""
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


class RateSensor:
    """One quota entity's request-time sensor. Not thread-safe: the caller holds the quota lock."""

    def __init__(self, bound: float, *, samples: int = 11, window_ms: int = 1000, max_throttle_ms: int | None = None):
        if samples < 1 or window_ms < 1:
            raise ValueError("samples must be >= 1 and window_ms >= 1")
        self.bound = bound
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = window_ms if max_throttle_ms is None else max_throttle_ms
        self._samples: list[_Sample] = []
        self._current = 0

    # -- SampledStat -----------------------------------------------------------------------------

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # Kafka keeps one extra placeholder for the sample overlapping the start of the monitored window.
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    # -- Rate --------------------------------------------------------------------------------------

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        full_windows = elapsed // self.window_ms
        min_full_windows = self.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms``."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000)

    # -- Sensor ------------------------------------------------------------------------------------

    def record(self, value: float, now_ms: int, *, check_quota: bool = True) -> int:
        """Record ``value`` and return the throttle in ms (0 within the quota or when not checked)."""
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms
        if not check_quota:
            return 0
        rate = self.measure(now_ms)
        if rate <= self.bound:
            return 0
        throttle = _java_round((rate - self.bound) / self.bound * self.window_size_ms(now_ms))
        return min(throttle, self.max_throttle_ms)
