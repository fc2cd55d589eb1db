"""Property tests (hypothesis).

- ``TokenBucket`` against an independent model of Apache Kafka's ``TokenBucket`` (clients/.../metrics/stats/
  TokenBucket.java) driven the way ``ControllerMutationQuotaManager``'s strict quota drives it: integer
  millisecond clocks, the quota read from the metric config at every refill (so a quota change applies the new
  rate to the whole interval since the last update), ``checkQuotas`` before ``record``.
- Input validation against confluent-kafka: whatever our checks accept, confluent-kafka accepts too (the
  snapshot we would send, and the caller's original object), so no accepted input can fail when the request
  is made. Parity row by row is tests/test_input_parity.py; this explores the space between its rows.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from throttled_admin._kafka.token_bucket import TokenBucket
from throttled_admin._validation import Checked, check_delete_topics, check_new_partitions, check_new_topics

PROPERTY_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WALL_CLOCK_MS = 1_700_000_000_000  # Kafka's buckets run on System.currentTimeMillis()

# -- Kafka's TokenBucket, transcribed --------------------------------------------------------------


@dataclass
class KafkaTokenBucket:
    """``TokenBucket`` with its ``MetricConfig``: tokens start at 0 with lastUpdateMs 0, so the first refill on
    a wall clock fills the bucket; burst = samples x window x quota, re-read on every call."""

    quota: float
    samples: int
    window_ms: int
    tokens: float = 0.0
    last_update_ms: int = 0

    def _burst(self) -> float:
        return self.samples * (self.window_ms / 1000.0) * self.quota

    def _refill(self, time_ms: int) -> None:
        self.tokens = min(self._burst(), self.tokens + self.quota * ((time_ms - self.last_update_ms) / 1000.0))
        self.last_update_ms = time_ms

    def measure(self, time_ms: int) -> float:
        self._refill(time_ms)
        return self.tokens

    def record(self, value: float, time_ms: int) -> None:
        self._refill(time_ms)
        self.tokens = min(self._burst(), self.tokens - value)

    def strict_record(self, value: float, time_ms: int) -> int:
        """StrictControllerMutationQuota.record: 0 when admitted, else the throttle (nothing recorded)."""
        tokens = self.measure(time_ms)  # Sensor.checkQuotas: a TokenBucket violates only below zero
        if tokens < 0:
            return math.floor(-tokens / self.quota * 1000 + 0.5)  # Math.round
        self.record(value, time_ms)
        return 0


_operation = st.one_of(
    st.tuples(st.just("advance"), st.integers(min_value=0, max_value=20_000)),
    st.tuples(st.just("record"), st.integers(min_value=0, max_value=400)),
    st.tuples(st.just("record"), st.floats(min_value=0, max_value=400, allow_nan=False)),
    st.tuples(st.just("quota"), st.integers(min_value=1, max_value=200)),
    st.tuples(st.just("quota"), st.floats(min_value=0.1, max_value=200, allow_nan=False)),
)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


@PROPERTY_SETTINGS
@given(
    quota=st.integers(min_value=1, max_value=200),
    samples=st.integers(min_value=1, max_value=20),
    window_ms=st.sampled_from([100, 500, 1000, 2000]),
    operations=st.lists(_operation, min_size=1, max_size=40),
)
def test_token_bucket_matches_kafkas(quota: int, samples: int, window_ms: int, operations: list[Any]) -> None:
    kafka = KafkaTokenBucket(float(quota), samples, window_ms)
    ours = TokenBucket(rate=float(quota), window_num=samples, window_size_s=window_ms / 1000)
    # Both buckets in use from the start (a quota change before the very first use is its own test below).
    kafka.measure(WALL_CLOCK_MS)
    ours.measure(0.0)
    elapsed_ms = 0
    for op, value in operations:
        now_ms = WALL_CLOCK_MS + elapsed_ms
        now_s = elapsed_ms / 1000  # any monotonic origin will do for ours
        if op == "advance":
            elapsed_ms += value
        elif op == "quota":
            kafka.quota = float(value)  # a new MetricConfig: the next refill uses it for the whole interval
            ours.rate = float(value)
        else:
            expected_tokens = kafka.measure(now_ms)
            if abs(expected_tokens) <= 1e-6:
                return  # exactly at zero, the decision depends on float noise in both; the example ends here
            expected_throttle = kafka.strict_record(float(value), now_ms)
            if ours.violated(now_s):
                throttle = ours.throttle_time_ms(now_s)
            else:
                ours.record(float(value), now_s)
                throttle = 0
            assert (throttle == 0) == (expected_throttle == 0), (throttle, expected_throttle)
            assert abs(throttle - expected_throttle) <= 1  # Math.round on nearly equal doubles
        assert _close(ours.measure(now_s), kafka.measure(now_ms)), (ours.tokens, kafka.tokens)
        assert _close(ours.burst, kafka._burst())


def test_kafka_unit_vector() -> None:
    """ControllerMutationQuotaManagerTest: R = 10, 10 one-second samples (B = 100): 90 and 90 admitted (K = -80),
    the third refused with 8000 ms; 5 s later the throttle reads 3000 ms. Same answers from both."""
    kafka = KafkaTokenBucket(10.0, 10, 1000)
    ours = TokenBucket(rate=10.0, window_num=10, window_size_s=1.0)
    assert kafka.strict_record(90, WALL_CLOCK_MS) == 0
    assert kafka.strict_record(90, WALL_CLOCK_MS) == 0
    assert kafka.strict_record(1, WALL_CLOCK_MS) == 8000
    assert kafka.strict_record(1, WALL_CLOCK_MS + 5000) == 3000
    ours.record(90, 0.0)
    assert not ours.violated(0.0)
    ours.record(90, 0.0)
    assert ours.violated(0.0)
    assert ours.throttle_time_ms(0.0) == 8000
    assert ours.throttle_time_ms(5.0) == 3000


def test_quota_change_applies_to_the_whole_interval_since_the_last_update() -> None:
    """Kafka reads the quota at refill time: lowering it from 10 to 1 while the bucket is empty refills the
    past 4 s at the new rate (4 tokens), not the old one (40)."""
    kafka = KafkaTokenBucket(10.0, 11, 1000)
    ours = TokenBucket(rate=10.0, window_num=11, window_size_s=1.0)
    kafka.record(110, WALL_CLOCK_MS)
    ours.record(110, 0.0)
    kafka.quota = ours.rate = 1.0
    assert kafka.measure(WALL_CLOCK_MS + 4000) == pytest.approx(4.0)
    assert ours.measure(4.0) == pytest.approx(4.0)


def test_quota_lowered_before_first_use_caps_at_the_new_burst() -> None:
    kafka = KafkaTokenBucket(10.0, 11, 1000)
    ours = TokenBucket(rate=10.0, window_num=11, window_size_s=1.0)
    kafka.quota = ours.rate = 1.0
    assert kafka.measure(WALL_CLOCK_MS) == pytest.approx(11.0)
    assert ours.measure(0.0) == pytest.approx(11.0)


# -- validation: nothing we accept fails in confluent-kafka ------------------------------------------


@pytest.fixture(scope="module")
def bare() -> AdminClient:
    """confluent-kafka checks its input when the call is made, before it needs a broker."""
    return AdminClient({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})


def _confluent_accepts(bare: AdminClient, method: str, argument: Any) -> bool:
    try:
        getattr(bare, method)(argument, request_timeout=0.5, operation_timeout=0.4)
    except (TypeError, ValueError):
        return False
    return True


_counts = st.one_of(st.integers(min_value=-3, max_value=12), st.sampled_from([100_000, 100_001, 2**31, True]))
_broker_ids = st.one_of(st.integers(min_value=-2, max_value=4), st.sampled_from([2**31, "0", 0.0, True]))
_assignments = st.one_of(
    st.none(),
    st.lists(st.lists(_broker_ids, max_size=3), max_size=4),
    st.lists(st.tuples(_broker_ids), max_size=2),
    st.sampled_from(["ab", {}, 5, ((0,),)]),
)
_config_values = st.one_of(
    st.text(max_size=5), st.integers(), st.floats(), st.booleans(), st.none(), st.binary(max_size=3)
)
_configs = st.one_of(
    st.none(), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), _config_values, max_size=3)
)
_names = st.one_of(
    st.sampled_from(["t", "a.b", "a_b", "", ".", "..", "a b", "x" * 249, "x" * 250]), st.text(max_size=6)
)


def _new_topic(name: str, partitions: Any, replication: Any, assignment: Any, config: Any, explicit: bool) -> Any:
    kwargs: dict[str, Any] = {}
    if assignment is not None or explicit:
        kwargs["replica_assignment"] = assignment
    if config is not None:
        kwargs["config"] = config
    try:
        return NewTopic(name, partitions, replication, **kwargs)
    except (TypeError, ValueError, OverflowError):
        assume(False)  # the constructor itself refused: nothing to compare
        raise


def _sent(checked: Checked[Any]) -> list[Any]:
    """What the client would send: the snapshots of the topics not refused per topic (a KafkaError)."""
    return [item for _, item in checked if not isinstance(item, KafkaError)]


@PROPERTY_SETTINGS
@given(
    topics=st.lists(st.tuples(_names, _counts, _counts, _assignments, _configs, st.booleans()), min_size=1, max_size=3)
)
def test_create_topics_we_accept_confluent_kafka_accepts(bare: AdminClient, topics: list[Any]) -> None:
    def build() -> list[Any]:
        return [_new_topic(*spec) for spec in topics]

    try:
        snapshots = check_new_topics(build())
    except (TypeError, ValueError):
        event("refused by our checks")
        return  # refused before anything is sent: fine whatever confluent-kafka thinks (parity has the rows)
    sent = _sent(snapshots)
    if not sent:
        event("every topic refused per topic")
        return
    assert _confluent_accepts(bare, "create_topics", sent)
    # the caller's own objects too, unless it passed replica_assignment=None explicitly (a documented laxity)
    if not any(explicit and assignment is None for *_, assignment, _, explicit in topics):
        assert _confluent_accepts(bare, "create_topics", build())


@PROPERTY_SETTINGS
@given(grows=st.lists(st.tuples(_names, _counts, _assignments), min_size=1, max_size=3))
def test_create_partitions_we_accept_confluent_kafka_accepts(bare: AdminClient, grows: list[Any]) -> None:
    def build() -> list[Any]:
        items = []
        for name, total, assignment in grows:
            try:
                items.append(
                    NewPartitions(name, total, assignment) if assignment is not None else NewPartitions(name, total)
                )
            except (TypeError, ValueError, OverflowError):
                assume(False)
        return items

    try:
        snapshots = check_new_partitions(build())
    except (TypeError, ValueError):
        event("refused by our checks")
        return
    sent = _sent(snapshots)
    if not sent:
        event("every topic refused per topic")
        return
    assert _confluent_accepts(bare, "create_partitions", sent)
    assert _confluent_accepts(bare, "create_partitions", build())


@PROPERTY_SETTINGS
@given(names=st.lists(st.one_of(_names, st.integers(), st.none(), st.binary(max_size=3)), min_size=0, max_size=3))
def test_delete_topics_we_accept_confluent_kafka_accepts(bare: AdminClient, names: list[Any]) -> None:
    with contextlib.suppress(TypeError, ValueError):
        checked = check_delete_topics(list(names))
        sent = _sent(checked)  # what the client sends (an illegal name is refused per topic, not sent)
        assert not sent or _confluent_accepts(bare, "delete_topics", sent)
        assert _confluent_accepts(bare, "delete_topics", list(names))
