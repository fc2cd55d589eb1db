"""The KIP-599 token bucket against the vectors of quota-behaviour.md section 1."""

from __future__ import annotations

import pytest

from throttled_admin._kafka.token_bucket import TokenBucket, throttle_time_ms


def test_kip_example_560_mutations_at_rate_5_burst_500() -> None:
    bucket = TokenBucket(rate=5, window_num=100, window_size_s=1.0)
    assert bucket.burst == 500
    bucket.record(560, now_s=0.0)
    assert bucket.tokens == -60
    assert bucket.throttle_time_ms(now_s=0.0) == 12000


def test_starts_full_and_never_refills_past_burst() -> None:
    bucket = TokenBucket(rate=10, window_num=10)
    assert bucket.measure(0.0) == 100
    bucket.record(30, 0.0)
    assert bucket.measure(1.0) == 80
    assert bucket.measure(100.0) == 100


def test_zero_tokens_is_not_a_violation_only_below_zero() -> None:
    bucket = TokenBucket(rate=10, window_num=10)
    bucket.record(100, 0.0)
    assert bucket.tokens == 0
    assert not bucket.violated(0.0)
    bucket.record(1, 0.0)
    assert bucket.violated(0.0)
    assert bucket.throttle_time_ms(0.0) == 100


def test_default_burst_is_eleven_windows() -> None:
    assert TokenBucket(rate=5).burst == 55


def test_throttle_rounds_like_math_round() -> None:
    assert throttle_time_ms(-0.00049, 1) == 0
    assert throttle_time_ms(-0.0005, 1) == 1
    assert throttle_time_ms(0.0, 1) == 0
    assert throttle_time_ms(5.0, 1) == 0


@pytest.mark.parametrize(("rate", "window_num", "size"), [(0, 11, 1.0), (-1, 11, 1.0), (1, 0, 1.0), (1, 1, 0)])
def test_rejects_nonsense_settings(rate: float, window_num: int, size: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        TokenBucket(rate, window_num, size)
