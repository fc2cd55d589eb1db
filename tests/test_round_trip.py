"""The round-trip floor is cached between requests (issue 21); the cache must never change an answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from throttled_admin._engine.round_trip import MIN_SAMPLES, RECENT_S, RoundTrip

Observed = tuple[int, float]  # (topics, seconds)
LARGE = 50  # requests of at least this many topics tell the per-topic term


def floor(samples: list[tuple[float, int, float]], now: float, min_samples: int) -> tuple[float, float]:
    """The floor as the module's docstring defines it, computed from scratch: over the answers of the last
    RECENT_S seconds (none if fewer than min_samples), the least time per topic of large requests, and the least
    time left of any once that is taken off."""
    recent = [(topics, seconds) for at, topics, seconds in samples if now - at <= RECENT_S]
    if len(recent) < min_samples:
        return 0.0, 0.0
    per_topic = min((seconds / topics for topics, seconds in recent if topics >= LARGE), default=0.0)
    return min((max(0.0, seconds - per_topic * topics) for topics, seconds in recent), default=0.0), per_topic


# (seconds since the previous step, observe (topics, seconds) or None to ask for the estimate)
steps = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.001, 1.0, RECENT_S / 2, RECENT_S, RECENT_S + 0.001, 2 * RECENT_S]),
        st.one_of(st.none(), st.tuples(st.integers(1, 2000), st.floats(0.0, 10.0, allow_nan=False))),
    ),
    max_size=60,
)


@given(steps)
def test_the_cached_floor_is_always_the_one_computed_afresh(script: list[tuple[float, Observed | None]]) -> None:
    cached = RoundTrip()
    both = RoundTrip()  # the same answers, asked only for both estimates at once (as a request asks: issue 39)
    now = 0.0
    for elapsed, observed in script:
        now += elapsed
        if observed is not None:
            cached.observe(*observed, now)
            both.observe(*observed, now)
            continue
        for min_samples in (1, MIN_SAMPLES):
            base, per_topic = floor(list(cached._samples), now, min_samples)
            assert cached.estimate(now, min_samples) == (base, per_topic)
            assert cached.expected_s(10, now, min_samples) == base + per_topic * 10
        assert both.estimates(now) == {n: floor(list(both._samples), now, n) for n in (1, MIN_SAMPLES)}


def test_the_floor_rises_when_the_answer_that_set_it_is_pushed_out() -> None:
    """16 samples are kept: the 17th answer pushes out the first, the fastest, while it is still recent."""
    round_trip = RoundTrip()
    round_trip.observe(1, 0.001, 0.0)
    for i in range(1, 16):
        round_trip.observe(1, 0.005, i * 0.01)
    assert round_trip.estimate(0.2) == (0.001, 0.0)
    round_trip.observe(1, 0.004, 0.3)
    assert round_trip.estimate(0.3) == (0.004, 0.0) == floor(list(round_trip._samples), 0.3, MIN_SAMPLES)
