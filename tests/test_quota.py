"""MutationQuota and the Pacer: the arithmetic of pacing to a KIP-599 bucket and of learning its rate, checked
against the same TokenBucket the test broker enforces (a simulated broker on a fake clock)."""

from __future__ import annotations

import math

import pytest
from confluent_kafka.admin import NewTopic

from throttled_admin import MutationQuota
from throttled_admin._engine import CREATE_TOPICS, Call, CallSpec, Engine, RequestKind, RetryBackoff, Topic
from throttled_admin._engine.pacer import _MIN_CHARGE_BOUND_S, Pacer
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
    assert pacer.batch_budget(0.0, pending_cost=55) == 55  # starts full, as Kafka's bucket
    # Until a round trip is known, a request from a full bucket that leaves work waiting is of the steady size.
    assert pacer.batch_budget(0.0, pending_cost=56) == pytest.approx(0.5)
    pacer.on_response(admitted=0, throttle_s=0.0, sent_at=0.0, now=0.02)
    assert pacer.batch_budget(0.02) == pytest.approx(55)


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


def test_the_last_topics_wait_for_less_than_a_round_trip_of_refill_rather_than_go_a_round_trip_later() -> None:
    """44 mutations left, 40 in the bucket, answers taking 30 ms: a steady request of 40 would leave the last topic
    to go after its answer, 30 ms later, where waiting 10 ms for 4 more tokens sends them all in one request. With
    at least a round trip's refill left over, the steady request goes at once."""
    pacer = Pacer(MutationQuota(rate=400, burst=400))
    pacer.on_response(admitted=400, throttle_s=0.0, sent_at=0.0, now=0.03)  # answered 30 ms after its send
    assert pacer.wait_s(4, pending_cost=44, now=0.13) == pytest.approx(0.01)  # 40 tokens at 0.13: 4 more to go
    assert pacer.wait_s(4, pending_cost=52, now=0.13) == 0.0  # 12 left over: 30 ms of refill, a round trip


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


def run_paced_job(
    pacer: Pacer,
    topics: int,
    cost: int,
    rate: float,
    burst: float,
    charge_delay_s: float,
    *,
    plain_round_trip_s: float | None = None,
    first_charge_delay_s: float | None = None,
) -> tuple[float, list[int]]:
    """A paced job on simulated time against a Kafka-like controller, as the engine composes it (the head topic
    goes when the pacer allows, with every following topic the budget covers): the controller charges a request
    ``charge_delay_s`` after it is sent (the first one ``first_charge_delay_s``) and answers once its records are
    committed, 20 ms plus 1 ms a topic later (Kafka 4.4's single node: 30 ms for 10 topics, 45-125 ms for 100).
    ``plain_round_trip_s``: the contact probe's round trip, answered before the job starts. Returns when the last
    answer came and the throttles the broker computed."""
    broker = TokenBucket(rate, window_num=1, window_size_s=burst / rate)
    if plain_round_trip_s is not None:
        pacer.on_plain_round_trip(plain_round_trip_s)
    now, pending, throttles = 0.0, topics, []
    delay_s = charge_delay_s if first_charge_delay_s is None else first_charge_delay_s
    while pending:
        now += pacer.wait_s(cost, pending_cost=pending * cost, now=now)
        size = max(1, min(pending, int(pacer.batch_budget(now, pending * cost) // cost)))
        charged_at = now + delay_s
        answered_at = charged_at + 0.020 + 0.001 * size
        broker.record(size * cost, charged_at)
        throttles.append(throttle_time_ms(broker.measure(charged_at), rate))
        pacer.on_response(admitted=size * cost, throttle_s=throttles[-1] / 1000, sent_at=now, now=answered_at)
        now, pending, delay_s = answered_at, pending - size, charge_delay_s
    return now, throttles


def test_only_a_request_sent_from_a_full_bucket_is_charged_as_of_the_probes_bound() -> None:
    """Kafka at load 15 (2026-11-27 08:22 UTC): the first request (10 topics) was charged 2 ms after its send and
    answered 97 ms after it; the second, sent from a mirror 1.2 mutations short of full, waited 84 ms in the
    broker's request queue and was charged 91 ms after its send, while the broker's bucket sat full; the third drew
    a 45 ms throttle. Charged as of the probe's 5 ms, the second left the mirror 34 mutations ahead of the broker.
    A request sent from a bucket that is not full is charged as of the shortest mutation round trip, as before."""
    rate, burst, cost = 400, 400, 4
    broker = TokenBucket(rate, window_num=1, window_size_s=burst / rate)
    pacer = Pacer(MutationQuota(rate=rate, burst=burst))
    pacer.on_plain_round_trip(0.002)
    now, pending, throttles = 0.0, 300, []
    for charge_delay_s, round_trip_s in [(0.002, 0.097), (0.091, 0.400), (0.002, 0.035), (0.002, 0.035)]:
        now += pacer.wait_s(cost, pending_cost=pending * cost, now=now)
        size = min(pending, int(pacer.batch_budget(now, pending * cost) // cost))
        broker.record(size * cost, now + charge_delay_s)
        throttles.append(throttle_time_ms(broker.measure(now + charge_delay_s), rate))
        pacer.on_response(admitted=size * cost, throttle_s=throttles[-1] / 1000, sent_at=now, now=now + round_trip_s)
        now, pending = now + round_trip_s, pending - size
    assert throttles == [0, 0, 0, 0]


@pytest.mark.parametrize("charge_delay_s", [0.001, 0.005])
@pytest.mark.parametrize(("rate", "burst"), [(400, 400), (400, 4400), (100, 100), (10, 110)])
def test_a_paced_job_loses_no_more_than_one_short_commit(rate: float, burst: float, charge_delay_s: float) -> None:
    """The broker charges a request long before it answers (the controller commits first), and a full bucket banks
    none of the refill meanwhile: the mirror cannot see when the charge came. Charged as of the send plus the
    contact probe's round trip (a request the broker answers itself, taken as at least ``_MIN_CHARGE_BOUND_S``), a
    paced job ends one steady request's commit after T* (the last one's), plus what that bound exceeds the charge
    delay by and one topic's refill (topics are whole), with no throttle. (Charged as of the send plus the shortest
    mutation round trip, the first request's own: two steady commits, 1.03 x T* at R = B = 400; charged when the
    answer came, with a whole bucket's first request: 1.09 x T*, and 1.39 x at Kafka's default burst of 11 windows,
    where the first request's commit took over a second.)"""
    cost, topics = 4, 300 if burst < 1000 else 1400
    t_star = max(0.0, topics * cost - burst) / rate
    plain_round_trip_s = 2 * charge_delay_s  # there and back, where the charge is one way
    pacer = Pacer(MutationQuota(rate=rate, burst=burst))
    done, throttles = run_paced_job(
        pacer, topics, cost, rate, burst, charge_delay_s, plain_round_trip_s=plain_round_trip_s
    )
    assert not any(throttles), throttles
    steady_commit_s = charge_delay_s + 0.020 + 0.001 * max(1, int(rate * 0.1 // cost))
    excess_s = max(_MIN_CHARGE_BOUND_S, plain_round_trip_s) - charge_delay_s
    assert done <= t_star + steady_commit_s + excess_s + cost / rate, (done, t_star)  # and one topic's refill


def test_a_first_request_charged_later_than_a_fast_probe_says_draws_no_throttle() -> None:
    """A broker that answers the probe in 0.2 ms can still take up the first request 4 ms later than the ones
    after it (the client's thread, the broker's queue): the floor of the bound covers that jitter. Charged at the
    send plus the probe's round trip alone, the mirror would run 1.5 mutations ahead of the broker for good, and
    the next request that empties it would draw a throttle."""
    rate, burst, cost = 400, 400, 4
    pacer = Pacer(MutationQuota(rate=rate, burst=burst))
    _, throttles = run_paced_job(
        pacer, 300, cost, rate, burst, 0.0005, plain_round_trip_s=0.0002, first_charge_delay_s=0.0045
    )
    assert not any(throttles), throttles


def paced_engine(topics: int, at: float) -> Engine:
    """An engine pacing to R = B = 400 whose contact probe (asked at 0) was answered at ``at``, with a call of
    ``topics`` topics of 4 partitions submitted then."""
    engine = Engine(pacer=Pacer(MutationQuota(rate=400, burst=400)), backoff=RetryBackoff(100, 100, jitter=0.0))
    assert engine.step(0.0).probe
    engine.on_probe(True, at)
    call = Call(CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30_000, True, None, None, started_at=at))
    names = [f"t{i:03d}" for i in range(topics)]
    engine.submit(call, [Topic(name, NewTopic(name, 4, 1), call, None, 4, 5) for name in names])
    return engine


def test_the_engine_bounds_the_first_charge_by_a_probe_on_a_connection_that_is_up() -> None:
    """The contact probe took 20 ms (its connection's handshake too). Before the first request from a full bucket
    the engine asks the probe again and waits for it: 2 ms, so the floor's 5 ms bound the charge of the request
    (sent at 22 ms, answered at 62 ms). The next request carries the refill from 27 ms on: 374 mutations, 93
    topics (92 charged as of the contact probe's 20 ms, 90 as of its own answer)."""
    engine = paced_engine(300, 0.020)
    out = engine.step(0.020)
    assert out.send is None
    assert out.probe
    engine.on_probe(True, 0.022)
    first = engine.step(0.022).send
    assert first is not None
    assert len(first.topics) == 10  # the steady size: no mutation round trip is known yet
    engine.on_results(first, {topic.name: None for topic in first.topics}, 0.062)
    second = engine.step(0.062).send
    assert second is not None
    assert len(second.topics) == 93
    assert not engine.step(0.2).probe  # once a client


def test_the_first_request_waits_for_the_pacers_probe_a_tenth_of_a_second_at_most() -> None:
    """Unanswered, the probe holds the first request 0.1 s; the request is then charged as of the contact probe's
    round trip. A job the full bucket covers goes at once, with no probe."""
    engine = paced_engine(300, 0.020)
    out = engine.step(0.020)
    assert out.send is None
    assert out.probe
    assert out.wake_at == pytest.approx(0.120)
    assert engine.step(0.119).send is None
    sent = engine.step(out.wake_at).send
    assert sent is not None
    assert len(sent.topics) == 10
    small = paced_engine(100, 0.020).step(0.020)
    assert not small.probe
    assert small.send is not None
    assert len(small.send.topics) == 100
