"""QuotaBroker held to Apache Kafka 4.4 (tests/real_kafka/differential.py): the scenarios of
tests/real_kafka/scenarios_quota.py, on the controller mutation quota (throttle_time_ms at strict and permissive
versions, muting, validate_only, requests that waited behind a slow one). Each runs the same requests against the
real broker and a QuotaBroker configured the same way, and fails on any difference in codes, messages, throttle
and answer times (beyond ±250 ms) or the topics left."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.differential import Scenario, report, run_with, scenario_params
from tests.real_kafka.namespace import KafkaNamespace

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("scenario", scenario_params("scenarios_quota"))
def test_quota_broker_answers_as_kafka(
    scenario: Scenario, kafka_cluster_of: Callable[..., KafkaCluster], kafka_ns: KafkaNamespace
) -> None:
    outcome = run_with(scenario, kafka_cluster_of, kafka_ns)
    assert outcome.agree, report(outcome)
