"""Pacing to the controller mutation quota (KIP-599): ``MutationQuota`` (public) and the ``Pacer`` behind it.

The pacer keeps a mirror of the broker's token bucket, with the same ``TokenBucket`` arithmetic the test broker
enforces, and releases a request only when the mirror holds enough tokens for it (one request is in flight at a
time). So the broker admits every request without a throttle: a strict broker rejects nothing and a permissive one
is never pushed past R x W + B in any window of W seconds. Its state is corrected by every throttle the broker
reports (throttle t means K = -t x R right after the charge).

When the broker charged a request is not observed: after it was sent, before its answer, which waits for the
controller to commit the request's records (Kafka 4.4: 30 ms for 10 topics, 45-125 ms for 100). The mirror is
charged as of the send time plus the shortest round trip seen so far (this request's included), so never before
the broker can have charged it (charged earlier it would run ahead of the broker, by the request's travel time,
and draw small throttles). That matters only while the bucket is full, where the refill after the charge is lost
to the mirror: so, until a round trip is known, a request from a full mirror carries only the steady size
(``_MIN_REQUEST_S`` of the rate, or the few topics a steady request gathers: ``wait_s``), and the rest of the
bucket follows in the next. What that first request's own
round trip still costs (Kafka: its commit, 30-95 ms of refill, for good) is given back once
``_CORRECTION_SAMPLES`` steady answers of requests no larger are in: their commit took no longer than its own, so
it was charged at most its round trip less their shortest one after its send; plus ``_CHARGE_JITTER_S`` for the
jitter of their own charges, that is when the mirror is replayed from (every later charge as it was made, so a
bucket that filled up meanwhile loses the refill again). A first request held before the broker read it (a slow
thread) has a round trip longer than theirs by the hold, and gets nothing back.

With no configured rate the pacer learns it. Right after a throttle t0 the bucket holds K = -t0 x R; if N mutations
are admitted in the requests sent over the next dt seconds (the bucket never filling up meanwhile), and the last of
them is answered with throttle t1, then -t1 x R = -t0 x R + dt x R - N, so R = N / (t1 - t0 + dt). A sample is taken
over at least 0.25 s, so millisecond timing noise stays small; the median of the last five is the estimate, paced at
95 % of it so an estimate a little high draws no throttle. Until a rate is known, requests grow from 32 mutations,
doubling after each answer without a throttle (slow start), each kept within what the answers prove any window of
one second may hold (``slow_start.py``), so the learner never pushes a permissive broker past R·W + B. Once the rate
is learned, that proof goes on (``_window_limit``): every window of W holds at most R·W + B at the rate paced and
the q = B / R slow start proved (at least one second, the least Kafka allows), or what the answers since the last
estimate or step prove, if more (a failover's fresh bucket inflates a proof across it). The probe's steps
(``rate_probe.py``) refill the mirror faster but stay within it: a step funded by a bucket that filled while the
pace ran below the broker's rate holds, and the next step's request then found a window the stretch had filled (91
against R·W + B = 80 on a three-node quorum).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field

from throttled_admin._engine.rate_probe import RateProbe
from throttled_admin._engine.slow_start import SlowStart
from throttled_admin._kafka.token_bucket import TokenBucket

__all__ = ["MutationQuota", "Pacer"]

# Each paced request carries at least this much of the rate's worth of work, so a steady stream of topics
# goes out as requests about every 100 ms instead of one topic at a time.
_MIN_REQUEST_S = 0.1
# Where a topic costs more than that (a few partitions at a rate of tens a second: one topic every 200-500 ms), a
# paced request waits for company: eight topics, or four where eight would be held longer than ``_GATHER_SHARE`` of
# the time its calls have left, at most ``_GATHER_S_A_TOPIC`` of the rate's worth a topic and half the burst (a
# request never waits for a full mirror, which loses the refill of its round trip). A request costs the client a turn,
# an answer and their wake-ups (about 1 ms of CPU, issue 40's fleet), however few its topics; the last topics still go
# as soon as the bucket covers them, so the work ends when it did, within a round trip. fleet_phases.py --turns (100
# entities at 10-25/s, five partitions a topic): 675 paced requests, 1,100 with four topics a request, 1,275 with one;
# the paced creates' CPU 12 % below four's. A learned rate gathers four at most, and so does a configured one once the
# broker's word contradicted it: the steps of the rate probe overdraw by what a request carries (with eight, a step's
# throttle grew from under 100 ms to 140-320 ms: tests/test_quota.py, calls back to back).
_GATHER_TOPICS = (8, 4)
_GATHER_TOPICS_LEARNED = (4,)
_GATHER_S_A_TOPIC = 0.5
_GATHER_SHARE = 0.1
_LEARNED_SAMPLES = 5
_MIN_SAMPLE_SPAN_S = 0.25
_LEARNED_PACE = 0.95  # a learned rate is paced at this share of the estimate
# A learned rate's window limit (``_window_limit``): W, and the least q = B / R Kafka allows (one window of 1 s).
_WINDOW_S = 1.0
_LEAST_WINDOWS_S = 1.0
# A known rate gives way to the broker's word only when the learned estimate is this far below it (the estimate's
# own error is a few percent).
_CONTRADICTED = 0.9
# The learning formula assumes the bucket did not fill up between the two requests; Kafka's windows are >= 1 s.
_MAX_REFILL_S = 1.0
# The first charge's correction (``_FirstCharge``): the steady answers it waits for, and the jitter it leaves for
# the send-to-charge delays of requests after them (the client's thread, the broker's queue).
_CORRECTION_SAMPLES = 3
_CORRECTION_HORIZON = 30  # answers after the first: without the samples by then, it is left as charged
_CHARGE_JITTER_S = 0.005
# The budget is rounded to this many decimals: a wait computed to the exact token leaves the mirror a rounding error
# short (31.999999999 for 32), and the request would go without its last topic.
_BUDGET_DECIMALS = 9


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
        # The anchor of a learning sample: (send time, throttle s) of a throttled request, and the mutations
        # admitted by requests sent after it.
        self._anchor: tuple[float, float] | None = None
        self._admitted_since_anchor = 0.0
        self._last_throttle_end = -math.inf  # send time + throttle of the latest throttled request
        self._slow_start = SlowStart()  # the requests while the rate is unknown
        self._shortest_round_trip_s = math.inf  # of a mutation request: charged before it is answered
        self._first_charge: _FirstCharge | None = None  # a request from a full mirror, charged late (docstring)
        self._believed: float | None = None  # the broker's rate as the pacer believes it (paced below if learned)
        self._base: float | None = None  # the last rate from the broker's word or the configuration (not a probe's)
        self._probe = RateProbe(quota.rate)  # steps the believed rate up after a stretch without a throttle
        self._held = False  # the last request's budget left work waiting: the rate, not the work, was the limit
        # the size of a steady request as ``wait_s`` last aimed for it (None: not asked yet): a first request from a
        # full mirror is no larger, so that steady answers correct its charge (``_correct_first_charge``)
        self._steady: float | None = None
        self._windows_s: float | None = None  # a learned rate's q = B / R as slow start proved it (``_window_limit``)
        self._contradicted = False  # the broker's word was once well below the configured rate (``_learn``)
        if quota.rate is not None:
            self._believe(quota.rate)

    @property
    def rate(self) -> float | None:
        """The quota's rate as the broker's word or the configuration gave it: the configured rate, the broker's word
        where it contradicts it, or the learned estimate (paced a little below it). A probe's step above it is a
        guess until the broker's word confirms it, and is not reported."""
        return self._base

    def _believe(self, rate: float, *, probed: bool = False) -> None:
        """A configured rate (or one above it: it is a ceiling) is paced as given, with its burst; a rate from the
        broker's answers at 95 %, with one second's worth of burst (cautious until a throttle says more). A rate the
        probe stepped to refills the mirror faster but banks no more than one second of the last rate the broker's
        word (or the configuration) gave: a step the broker's bucket funded (a failover's, an idle client's) is never
        saved up as a larger burst."""
        self._believed = rate
        if not probed:
            self._base = rate
            if self.quota.rate is None and self._windows_s is None:
                proved = self._slow_start.proved  # R·(W + q) >= proved, with R the rate learned
                self._windows_s = max(_LEAST_WINDOWS_S, (proved or 0.0) / rate - _WINDOW_S)
        if self._windows_s is not None:
            self._slow_start = self._slow_start.restart(self._windows_s)
        ceiling = self.quota.rate
        base = min(rate, self._base if self._base is not None else rate)
        if ceiling is not None and rate >= ceiling:
            self._believed = self._base = ceiling  # back to what was configured: the configuration's word again
            configured_burst = self.quota.burst if self.quota.burst is not None else 11 * ceiling
            self._set_rate(ceiling, configured_burst if base >= ceiling else base * _LEARNED_PACE)
        else:
            self._set_rate(rate * _LEARNED_PACE, base * _LEARNED_PACE)

    def _set_rate(self, rate: float, burst: float) -> None:
        if self._bucket is None:
            self._bucket = TokenBucket(rate, window_num=1, window_size_s=burst / rate)
        else:
            self._first_charge = None  # its replay would take the new rate for the old one
            self._bucket.rate = rate
            self._bucket.window_size_s = burst / rate
            self._bucket.tokens = min(self._bucket.tokens, self._bucket.burst)

    # -- before a request ------------------------------------------------------------------------

    @property
    def horizon(self) -> float:
        """A pending cost above this is all alike to ``batch_budget`` and ``wait_s``: more than the bucket holds."""
        return self._bucket.burst if self._bucket is not None else 0.0

    def batch_budget(self, now: float, pending_cost: float = math.inf) -> float:
        """Mutations that can be sent now without a throttle (the slow-start size while the rate is unknown). From a
        full mirror before any round trip is known, when the ``pending_cost`` queued (all of it, not one request's
        worth: ``WorkQueue.eligible``) is more than the bucket holds,
        only the steady size: the commit of a whole bucket's request would be lost to the mirror, and what is left
        would wait for it (module docstring). What the bucket covers goes at once, in one request."""
        bucket = self._bucket
        if bucket is None:
            return self._slow_start.budget(now)
        tokens = max(0.0, round(bucket.measure(now), _BUDGET_DECIMALS))
        if tokens >= bucket.burst and pending_cost > tokens and self._shortest_round_trip_s == math.inf:
            steady = bucket.rate * _MIN_REQUEST_S if self._steady is None else self._steady
            tokens = min(tokens, steady)
        if (limit := self._window_limit()) is not None:
            tokens = max(0.0, min(tokens, round(self._slow_start.room(now, limit), _BUDGET_DECIMALS)))
        self._held = pending_cost > tokens
        return tokens

    def wait_s(self, cost: float, pending_cost: float, now: float, time_left_s: float = math.inf) -> float:
        """How long until a request worth sending can go: one holding at least ``cost`` (the next topic)
        and, while more is pending, about ``_MIN_REQUEST_S`` of the rate's worth, or a few topics' worth when that
        is less (``_GATHER_TOPICS``, the most that is not held past ``_GATHER_SHARE`` of ``time_left_s``, the shortest
        time its calls have left). The last topics wait to go with it
        when what a steady request would leave behind refills in less than the shortest round trip: sent after its
        answer, they would end a round trip later, where a larger request costs only a few more milliseconds of
        commit (Kafka 4.4: 30-34 ms for 10 topics, 37-40 ms for 92)."""
        bucket = self._bucket
        if bucket is None:
            return self._slow_start.wait_s(cost, pending_cost, now)
        steady = max(cost, bucket.rate * _MIN_REQUEST_S)
        for topics in _GATHER_TOPICS_LEARNED if self.quota.rate is None or self._contradicted else _GATHER_TOPICS:
            gathered = min(topics * cost, topics * bucket.rate * _GATHER_S_A_TOPIC, bucket.burst / 2)
            if gathered > steady:
                wait_s = self._wait_for(bucket, gathered, cost, pending_cost, now)
                if wait_s <= _GATHER_SHARE * time_left_s:
                    self._steady = gathered
                    return wait_s
        self._steady = steady
        return self._wait_for(bucket, steady, cost, pending_cost, now)

    def _wait_for(self, bucket: TokenBucket, size: float, cost: float, pending_cost: float, now: float) -> float:
        """``wait_s`` for a request of ``size`` mutations, the last topics with it."""
        wanted = min(size, pending_cost, bucket.burst)
        round_trip_s = self._shortest_round_trip_s if math.isfinite(self._shortest_round_trip_s) else 0.0
        if pending_cost <= bucket.burst and pending_cost - wanted < bucket.rate * round_trip_s:
            wanted = pending_cost
        wanted = max(wanted, min(cost, bucket.burst))
        missing = round(wanted - bucket.measure(now), _BUDGET_DECIMALS)  # as the budget: no wait of a rounding error
        wait_s = max(0.0, missing / bucket.rate)
        if (limit := self._window_limit()) is not None:
            wait_s = max(wait_s, self._slow_start.wait_for(wanted, now, limit))
        return wait_s

    def _window_limit(self) -> float | None:
        """What any window of W may hold under a learned rate (None: a configured one, whose mirror is exact): R·W + B
        at the rate paced and the q = B / R that slow start proved, at least one second (module docstring). Steps of
        the probe (``rate_probe.py``) refill the mirror faster, never past it."""
        if self.quota.rate is not None or self._base is None or self._windows_s is None:
            return None
        return self._base * _LEARNED_PACE * (_WINDOW_S + self._windows_s)

    # -- after a response ------------------------------------------------------------------------

    def on_response(self, *, admitted: float, throttle_s: float, sent_at: float, now: float) -> None:
        """The broker admitted ``admitted`` mutations and answered with ``throttle_s``. The mirror is charged as of
        ``sent_at`` plus the shortest round trip seen (module docstring), never before it was last measured. The
        broker computed the throttle when it charged the request, a fixed travel time after ``sent_at``: learning
        pairs send times, which the client knows precisely, not answer times, which wait for the client's thread."""
        round_trip_s = max(0.0, now - sent_at)
        self._shortest_round_trip_s = min(self._shortest_round_trip_s, round_trip_s)
        bucket = self._bucket
        if bucket is None or self.quota.rate is None:  # learned: what the window holds (``_window_limit``)
            self._slow_start.answered(admitted, throttle_s=throttle_s, sent_at=sent_at, now=now)
        if bucket is not None and admitted > 0:
            self._charge(bucket, admitted, round_trip_s, throttled=throttle_s > 0, sent_at=sent_at, now=now)
        if self._believed is not None:  # a step refused goes back before the broker's word is read at its rate
            self._probe_step(throttled=throttle_s > 0, sent_at=sent_at)
        self._take_sample(admitted, throttle_s, sent_at)
        if throttle_s > 0:
            bucket = self._bucket
            if bucket is not None:
                bucket.measure(now)
                bucket.tokens = -throttle_s * bucket.rate  # the broker's own word on its bucket
                self._first_charge = None

    def connection_renewed(self, throttle_s: float, now: float) -> None:
        """The gate's probe was answered for the quota on a fresh connection, after the one that carried a throttle
        failed (``throttle.py``), and this answer was taken (``on_response``). Without a throttle it proved the broker's
        bucket held K >= 0 after its charge (a restart or a failover forgave the debt): the mirror holds at least 0
        tokens, never more (a full bucket is not proved), and no learning sample spans the bucket it may have
        replaced. A throttle in it was taken as any throttle: the debt survived."""
        bucket = self._bucket
        if throttle_s > 0 or bucket is None:
            return
        bucket.tokens = max(bucket.measure(now), 0.0)
        self._anchor = None

    def _take_sample(self, admitted: float, throttle_s: float, sent_at: float) -> None:
        """The learning sample between two throttles (module docstring), for a known rate too: the broker's word."""
        if sent_at - self._last_throttle_end > _MAX_REFILL_S:
            self._anchor = None  # the bucket may have filled up since: start a new sample
        if self._anchor is not None:
            self._admitted_since_anchor += admitted
        if throttle_s <= 0:
            return
        self._last_throttle_end = sent_at + throttle_s
        anchor = self._anchor
        if anchor is None:
            self._anchor, self._admitted_since_anchor = (sent_at, throttle_s), 0.0
        elif sent_at - anchor[0] >= _MIN_SAMPLE_SPAN_S:
            denominator = throttle_s - anchor[1] + (sent_at - anchor[0])
            if denominator > 0 and self._admitted_since_anchor > 0:
                self._learn(self._admitted_since_anchor / denominator)
            self._anchor, self._admitted_since_anchor = (sent_at, throttle_s), 0.0

    def _probe_step(self, *, throttled: bool, sent_at: float) -> None:
        """The upward probe (``rate_probe.py``): a step up after a stretch without a throttle, back after a throttle.
        The samples describe the quota before a step: the next ones are the raised quota's."""
        assert self._believed is not None
        rate = self._probe.answered(self._believed, throttled=throttled, held=self._held, sent_at=sent_at)
        if rate is not None:
            if not throttled:
                self._samples.clear()
            self._believe(rate, probed=True)

    def _charge(
        self, bucket: TokenBucket, admitted: float, round_trip_s: float, *, throttled: bool, sent_at: float, now: float
    ) -> None:
        """The mirror charged as of the send plus the shortest round trip (never before it was last measured), and
        the first charge from a full mirror noted, or corrected by this answer (module docstring)."""
        full = _full_at(bucket, sent_at)
        charged_at = min(now, sent_at + self._shortest_round_trip_s)
        if bucket.last_update_s is not None:
            charged_at = max(charged_at, bucket.last_update_s)  # measured since: it cannot be rewound
        bucket.record(admitted, charged_at)
        bucket.measure(now)
        if full:  # the refill after the broker's charge, until this one, is lost to the mirror: corrected later
            self._first_charge = _FirstCharge(sent_at, admitted, round_trip_s, charged_at - sent_at)
        elif self._first_charge is not None and not throttled:
            self._first_charge.charges.append((charged_at, admitted))
            self._correct_first_charge(bucket, admitted, round_trip_s, now)

    def _correct_first_charge(self, bucket: TokenBucket, admitted: float, round_trip_s: float, now: float) -> None:
        """A steady answer after the first request from a full mirror: once ``_CORRECTION_SAMPLES`` of them, no
        larger than it, are in, the first is taken as charged its round trip less their shortest one after its send
        (their commit took no longer than its own: it was no smaller), plus ``_CHARGE_JITTER_S``. The mirror is
        replayed from that charge, with every charge since as it was made (a bucket that fills up meanwhile loses
        the refill again), and takes what the replay holds if that is more (module docstring)."""
        first = self._first_charge
        assert first is not None
        if len(first.charges) > _CORRECTION_HORIZON:
            self._first_charge = None
            return
        if admitted > first.admitted:
            return
        first.steady_round_trips_s.append(round_trip_s)
        if len(first.steady_round_trips_s) < _CORRECTION_SAMPLES:
            return
        self._first_charge = None
        delay_s = max(0.0, first.round_trip_s - min(first.steady_round_trips_s)) + _CHARGE_JITTER_S
        if delay_s >= first.charged_after_s:
            return
        replay = TokenBucket(bucket.rate, window_num=1, window_size_s=bucket.window_size_s)
        replay.record(first.admitted, first.sent_at + delay_s)
        for charged_at, mutations in first.charges:
            replay.record(mutations, charged_at)
        if replay.measure(now) > bucket.measure(now):
            bucket.tokens = replay.tokens

    def sample(self, rate: float) -> None:
        """A rate read from elsewhere (Redpanda's refusal bounds it: ``redpanda.py``), taken as a learning sample by a
        learning pacer (a configured rate on Redpanda is exact: the engine reads its refusals with it)."""
        if self.quota.rate is None:
            self._learn(rate)

    def _learn(self, sample: float) -> None:
        """The median of the last five samples (a probe's step clears them: they describe the quota before it). A
        configured rate gives way to the broker's word once the estimate is well below it (``_CONTRADICTED``), and
        comes back to it when the probe finds it again."""
        if not math.isfinite(sample) or sample <= 0:
            return
        self._samples.append(sample)
        estimate = statistics.median(self._samples)
        self._probe.reset()
        ceiling = self.quota.rate
        contradicted = ceiling is not None and estimate < _CONTRADICTED * ceiling
        self._contradicted = self._contradicted or contradicted
        # An estimate a few percent high would let the mirror run ahead of the broker and draw small throttles.
        self._believe(estimate if contradicted or ceiling is None else ceiling)


@dataclass
class _FirstCharge:
    """A request sent from a full mirror at ``sent_at``, the mirror charged ``charged_after_s`` after its send: its
    mutations, its round trip, the round trips of the steady requests answered since, and every charge since."""

    sent_at: float
    admitted: float
    round_trip_s: float
    charged_after_s: float
    steady_round_trips_s: list[float] = field(default_factory=list)
    charges: list[tuple[float, float]] = field(default_factory=list)  # (when the mirror charged it, mutations)


def _full_at(bucket: TokenBucket, at: float) -> bool:
    """Whether the mirror was full at ``at`` (a send): not known (False) when it was measured after it."""
    last = bucket.last_update_s
    if last is None:
        return True  # never measured: full since the start
    return last <= at and bucket.tokens + bucket.rate * (at - last) >= bucket.burst
