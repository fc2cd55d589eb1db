"""MutationQuota and the Pacer: the arithmetic of pacing to a KIP-599 bucket and of learning its rate, checked
against the same TokenBucket the test broker enforces (a simulated broker on a fake clock)."""

from __future__ import annotations

import math

import pytest

from throttled_admin import MutationQuota
from throttled_admin._engine.pacer import Pacer
from throttled_admin._kafka.token_bucket import TokenBucket, throttle_time_ms


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 0}, "rate must be a positive number"),
        ({"rate": -1}, "rate must be a positive number"),
        ({"rate": math.nan}, "rate must be a positive number"),
        ({"rate": True}, "rate must be a positive number"),
        ({"rate": 5, "burst": 0}, "burst must be a positive number"),
        ({"burst": 10}, "burst needs a rate"),
    ],
)
def test_bad_quotas_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MutationQuota(**kwargs)


def test_known_rate_defaults_to_kafkas_eleven_windows_of_burst() -> None:
    pacer = Pacer(MutationQuota(rate=5))
    assert pacer.rate == 5
    assert pacer.batch_budget(0.0) == 55  # starts full, as Kafka's bucket


def test_the_pacer_waits_for_the_next_topic_and_a_worthwhile_request() -> None:
    pacer = Pacer(MutationQuota(rate=100, burst=100))
    pacer.on_response(admitted=100, throttle_s=0.0, sent_at=0.0, now=0.0)  # bucket empty at t = 0
    assert pacer.batch_budget(0.0) == 0
    # the next topic costs 4, but a request worth sending carries ~100 ms of the rate (10 mutations)
    assert pacer.wait_s(4, pending_cost=400, now=0.0) == pytest.approx(0.1)
    # with only 4 mutations pending, it goes as soon as they fit
    assert pacer.wait_s(4, pending_cost=4, now=0.0) == pytest.approx(0.04)
    # a topic larger than the burst goes when the bucket is full (it will be throttled, but it can go)
    assert pacer.wait_s(500, pending_cost=500, now=0.0) == pytest.approx(1.0)


def test_a_reported_throttle_sets_the_mirror_to_the_brokers_bucket() -> None:
    pacer = Pacer(MutationQuota(rate=10, burst=10))
    pacer.on_response(admitted=0, throttle_s=2.0, sent_at=0.0, now=0.0)
    assert pacer.batch_budget(0.0) == 0
    assert pacer.wait_s(10, pending_cost=10, now=0.0) == pytest.approx(3.0)  # 2 s to zero, 1 s for 10 tokens


def simulate(rate: float, burst: float, batches: list[int], pacer: Pacer) -> list[int]:
    """Send batches to a simulated permissive broker as the scheduler does (each request when the pacer and
    the broker's throttle allow), feeding every answer back; returns the throttles the broker reported."""
    broker = TokenBucket(rate, window_num=1, window_size_s=burst / rate)
    now = 0.0
    gate = 0.0
    throttles = []
    for size in batches:
        now = max(now, gate) + pacer.wait_s(size, pending_cost=size, now=max(now, gate))
        broker.record(size, now)
        throttle_ms = throttle_time_ms(broker.measure(now), rate)
        throttles.append(throttle_ms)
        gate = now + throttle_ms / 1000
        now += 0.002  # the answer arrives; the scheduler decides nothing before it
        pacer.on_response(admitted=size, throttle_s=throttle_ms / 1000, sent_at=now - 0.002, now=now)
    return throttles


def test_the_rate_is_learned_within_five_percent_after_a_few_throttles() -> None:
    pacer = Pacer(MutationQuota())
    assert pacer.rate is None
    simulate(rate=37, burst=37 * 11, batches=[600, 120, 90, 150], pacer=pacer)
    assert pacer.rate is not None
    assert pacer.rate == pytest.approx(37, rel=0.05)


def test_once_paced_to_a_known_rate_the_broker_reports_no_throttle() -> None:
    throttles = simulate(rate=50, burst=100, batches=[40] * 30, pacer=Pacer(MutationQuota(rate=50, burst=100)))
    assert throttles == [0] * 30
