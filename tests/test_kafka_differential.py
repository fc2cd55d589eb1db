"""QuotaBroker held to Apache Kafka 4.4, scenario by scenario (tests/real_kafka/differential.py): each scenario
runs the same requests against the real broker and against a QuotaBroker configured the same way, and fails on
any difference in error codes, messages, throttle times (beyond ±250 ms) or the resulting topics. The suite's
own tests plant departures in QuotaBroker and show that the suite catches them."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.differential import Outcome, Scenario, all_scenarios, run_scenario
from tests.real_kafka.namespace import KafkaNamespace

pytestmark = pytest.mark.kafka

SCENARIOS = all_scenarios()
BY_ID = {s.id: s for s in SCENARIOS}


def _run(scenario: Scenario, kafka_cluster_of: Callable[..., KafkaCluster], ns: KafkaNamespace) -> Outcome:
    spec = scenario.setup.broker_spec()
    cluster = kafka_cluster_of(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)})
    return run_scenario(scenario, cluster, ns)


def _report(outcome: Outcome) -> str:
    lines = [f"{outcome.scenario.id}: QuotaBroker departs from Kafka 4.4.0"]
    lines += [f"  {d}" for d in outcome.differences]
    for label, result in (("Kafka", outcome.kafka), ("QuotaBroker", outcome.quota_broker)):
        lines.append(f"  {label}:")
        lines += [f"    {o.summary()}" for o in result.observations]
        lines.append(f"    state {result.state}")
    return "\n".join(lines)


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(s, id=s.id, marks=[pytest.mark.xfail(strict=True, reason=s.departs)] if s.departs else [])
        for s in SCENARIOS
    ],
)
def test_quota_broker_answers_as_kafka(
    scenario: Scenario, kafka_cluster_of: Callable[..., KafkaCluster], kafka_ns: KafkaNamespace
) -> None:
    outcome = _run(scenario, kafka_cluster_of, kafka_ns)
    assert outcome.agree, _report(outcome)


def test_the_suite_has_enough_scenarios_in_every_group() -> None:
    groups = collections.Counter(s.group for s in SCENARIOS)
    assert len(SCENARIOS) >= 60, len(SCENARIOS)
    assert set(groups) >= {
        "errors", "throttle-strict", "throttle-permissive", "muting", "validate-only", "duplicates", "batch-cap",
        "invalid", "describe-configs", "metadata", "api-versions", "sasl", "slow",
    }  # fmt: skip
    assert min(groups.values()) >= 5, groups


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
    """The scenario agrees with Kafka as QuotaBroker is (test_quota_broker_answers_as_kafka); with a departure
    planted in QuotaBroker's internals it fails, naming what departed."""
    plant(monkeypatch)
    outcome = _run(BY_ID[scenario_id], kafka_cluster_of, kafka_ns)
    assert not outcome.agree
    assert any(caught in difference for difference in outcome.differences), outcome.differences
