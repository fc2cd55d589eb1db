"""The differential suite's own tests (tests/real_kafka/differential.py; the scenarios run in
test_kafka_differential_{quota,errors,reads}.py, one file each so that pytest's workers share them): enough
scenarios in every group, and a departure planted in QuotaBroker makes its scenario fail."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import pytest

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.differential import Observation, SideResult, all_scenarios, compare, run_with
from tests.real_kafka.namespace import KafkaNamespace

pytestmark = pytest.mark.kafka

SCENARIOS = all_scenarios()
BY_ID = {s.id: s for s in SCENARIOS}


def test_the_suite_has_enough_scenarios_in_every_group() -> None:
    groups = collections.Counter(s.group for s in SCENARIOS)
    assert len(SCENARIOS) >= 60, len(SCENARIOS)
    assert set(groups) >= {
        "errors", "throttle-strict", "throttle-permissive", "muting", "validate-only", "duplicates", "batch-cap",
        "invalid", "describe-configs", "metadata", "api-versions", "sasl", "slow",
    }  # fmt: skip
    assert min(groups.values()) >= 5, groups


def _throttled(throttle_ms: int, round_trip_ms: int) -> SideResult:
    answer = Observation("DeleteTopics v1", {"topics": []}, {"throttle_time_ms": throttle_ms}, round_trip_ms)
    return SideResult([answer], {})


def test_a_throttle_is_compared_as_when_it_ends_not_as_what_was_left_when_the_broker_answered() -> None:
    """A clean-clone make test of 7048634 (2026-11-27): Kafka's controller took 290 ms over a DeleteTopics of 10
    partitions, and reported 211 ms of a 500 ms throttle, QuotaBroker at once 499 ms. Both throttles end ~500 ms
    after the send: the same; 400 ms later is a departure whatever Kafka's controller took."""
    assert compare(_throttled(211, 290), _throttled(499, 1)) == ([], [])
    for kafka_round_trip_ms in (5, 290):
        departures, _ = compare(_throttled(500 - kafka_round_trip_ms, kafka_round_trip_ms), _throttled(899, 1))
        assert len(departures) == 1, departures
        assert "throttle_time_ms" in departures[0], departures
    assert compare(_throttled(0, 300), _throttled(150, 1)) == ([], [])  # Kafka's had ended by its answer
    assert compare(_throttled(0, 5), _throttled(499, 1))[0]


# -- the suite catches a planted departure ------------------------------------------------------------------------


def _throttle_400_ms_too_long(monkeypatch: pytest.MonkeyPatch) -> None:
    from throttled_admin.testing._quotas import RequestQuota

    reported = RequestQuota.throttle_time_ms
    monkeypatch.setattr(RequestQuota, "throttle_time_ms", lambda self: reported(self) + 400)


def _another_duplicate_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from throttled_admin.testing import _handlers
    from throttled_admin.testing._cluster import ApiError

    monkeypatch.setattr(_handlers, "DUPLICATE", ApiError(_handlers.DUPLICATE.code, "Topic named twice."))


def _muting_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from throttled_admin.testing._server import Server

    answer = Server._answer

    def unmuted(self: Server, *args: Any, **kwargs: Any) -> Any:
        result = answer(self, *args, **kwargs)
        result.mute_ms = 0
        return result

    monkeypatch.setattr(Server, "_answer", unmuted)


@pytest.mark.parametrize(
    ("plant", "scenario_id", "caught"),
    [
        pytest.param(
            _throttle_400_ms_too_long,
            "throttle-permissive/CreateTopics v4 past the burst",
            "throttle_time_ms",
            id="wrong-throttle",
        ),
        pytest.param(
            _another_duplicate_message,
            "duplicates/CreatePartitions v3 naming a topic twice",
            "Topic named twice.",
            id="wrong-message",
        ),
        pytest.param(
            _muting_off,
            "muting/after a permissive throttle: the same connection waits",
            "answered_after_ms",
            id="muting-off",
        ),
    ],
)
def test_the_suite_fails_on_a_planted_departure(
    plant: Callable[[pytest.MonkeyPatch], None],
    scenario_id: str,
    caught: str,
    monkeypatch: pytest.MonkeyPatch,
    kafka_cluster_of: Callable[..., KafkaCluster],
    kafka_ns: KafkaNamespace,
) -> None:
    """The scenario agrees with Kafka as QuotaBroker is (test_kafka_differential_*.py); with a departure
    planted in QuotaBroker's internals it fails, naming what departed."""
    plant(monkeypatch)
    outcome = run_with(BY_ID[scenario_id], kafka_cluster_of, kafka_ns)
    assert not outcome.agree
    assert any(caught in difference for difference in outcome.differences), outcome.differences
