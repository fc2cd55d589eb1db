"""A windowed Avg/Max sensor with Kafka's ``SampledStat`` semantics (KIP-124 throttle-time metrics).

- Samples of ``sample_window_ms``; at most ``num_samples`` of them, reused round-robin.
- A sample is complete once ``sample_window_ms`` has passed since it started; the next record starts
  (or resets) the following one.
- Reading purges samples that started ``num_samples x sample_window_ms`` or more ago.
- Avg = total / count and Max = max over the live samples; both NaN when no event is live.
Times are milliseconds on any monotonic clock the caller supplies.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SensorStats", "WindowedSensor"]


@dataclass(frozen=True)
class SensorStats:
    """What the live samples hold: events, their sum and their maximum (-inf when none). Stats of several sensors
    combine exactly: counts and totals add up, maxima take the max (``merged``)."""

    count: int = 0
    total: float = 0.0
    maximum: float = -math.inf

    @property
    def avg(self) -> float:
        return self.total / self.count if self.count else math.nan

    @property
    def max(self) -> float:
        return self.maximum if self.count else math.nan

    def merged(self, other: SensorStats) -> SensorStats:
        return SensorStats(self.count + other.count, self.total + other.total, max(self.maximum, other.maximum))


@dataclass
class _Sample:
    start_ms: float
    count: int = 0
    total: float = 0.0
    maximum: float = -math.inf

    def reset(self, now_ms: float) -> None:
        self.start_ms, self.count, self.total, self.maximum = now_ms, 0, 0.0, -math.inf


class WindowedSensor:
    def __init__(self, clock_ms: Callable[[], float], *, num_samples: int = 2, sample_window_ms: int = 30000):
        if num_samples < 1 or sample_window_ms <= 0:
            raise ValueError("metrics_num_samples must be >= 1 and metrics_sample_window_ms > 0")
        self._clock_ms = clock_ms
        self._num_samples = num_samples
        self._window_ms = sample_window_ms
        self._samples: list[_Sample] = []
        self._current = 0
        self._lock = threading.Lock()

    def record(self, value: float) -> None:
        now = self._clock_ms()
        with self._lock:
            if not self._samples:
                self._samples.append(_Sample(now))
            sample = self._samples[self._current]
            if now - sample.start_ms >= self._window_ms:
                self._current = (self._current + 1) % self._num_samples
                if self._current >= len(self._samples):
                    self._samples.append(_Sample(now))
                else:
                    self._samples[self._current].reset(now)
                sample = self._samples[self._current]
            sample.count += 1
            sample.total += value
            sample.maximum = max(sample.maximum, value)

    def _live(self) -> list[_Sample]:
        now = self._clock_ms()
        expire_ms = self._num_samples * self._window_ms
        for sample in self._samples:
            if now - sample.start_ms >= expire_ms:
                sample.reset(now)
        return [s for s in self._samples if s.count]

    def stats(self) -> SensorStats:
        with self._lock:
            live = self._live()
            return SensorStats(
                sum(s.count for s in live),
                sum(s.total for s in live),
                max((s.maximum for s in live), default=-math.inf),
            )

    def avg(self) -> float:
        return self.stats().avg

    def max(self) -> float:
        return self.stats().max
