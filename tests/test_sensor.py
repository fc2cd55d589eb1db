"""The windowed sensor against hand-computed windows (Kafka's SampledStat: Avg and Max)."""

from __future__ import annotations

import math

import pytest

from throttled_admin._telemetry.sensor import WindowedSensor


class Clock:
    def __init__(self) -> None:
        self.ms = 0.0

    def __call__(self) -> float:
        return self.ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_nan_without_events(clock: Clock) -> None:
    sensor = WindowedSensor(clock, num_samples=2, sample_window_ms=1000)
    assert math.isnan(sensor.avg())
    assert math.isnan(sensor.max())


def test_zeros_count_toward_the_average(clock: Clock) -> None:
    sensor = WindowedSensor(clock)
    for value in (0, 0, 300):
        sensor.record(value)
    assert sensor.avg() == 100
    assert sensor.max() == 300


def test_windows_roll_and_expire_after_samples_times_window(clock: Clock) -> None:
    sensor = WindowedSensor(clock, num_samples=2, sample_window_ms=1000)
    sensor.record(100)  # sample A starts at 0
    clock.ms = 500
    sensor.record(300)  # still A
    clock.ms = 1000
    sensor.record(50)  # A is complete: sample B starts at 1000
    assert sensor.avg() == 150
    assert sensor.max() == 300
    clock.ms = 1999
    assert sensor.max() == 300  # A is 1999 ms old: still live
    clock.ms = 2000
    assert sensor.avg() == 50  # A started 2000 ms ago = 2 x 1000: purged
    assert sensor.max() == 50
    clock.ms = 3000
    assert math.isnan(sensor.avg())
    assert math.isnan(sensor.max())


def test_the_oldest_sample_is_reused_round_robin(clock: Clock) -> None:
    sensor = WindowedSensor(clock, num_samples=2, sample_window_ms=1000)
    sensor.record(10)  # A at 0
    clock.ms = 1200
    sensor.record(20)  # B at 1200
    clock.ms = 2300
    sensor.record(40)  # B complete: A is reset and reused at 2300 (its 10 is gone)
    assert sensor.avg() == 30
    assert sensor.max() == 40


def test_rejects_nonsense_windows(clock: Clock) -> None:
    with pytest.raises(ValueError, match="metrics_num_samples"):
        WindowedSensor(clock, num_samples=0)
    with pytest.raises(ValueError, match="metrics_sample_window_ms"):
        WindowedSensor(clock, sample_window_ms=0)
