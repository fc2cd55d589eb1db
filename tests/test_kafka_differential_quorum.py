"""QuotaBroker held to Apache Kafka 4.4 on a three-node quorum (tests/real_kafka/differential.py): the scenarios of
tests/real_kafka/scenarios_quorum.py (where the quota's bucket lives, which connection a forwarded throttle mutes,
what a broker restart, a controller failover and a stopped broker do), each run against the run's ``kafka_quorum``
and a three-node QuotaBroker, failing on any difference."""

from __future__ import annotations

import pytest

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.differential import Scenario, report, run_scenario, scenario_params
from tests.real_kafka.namespace import KafkaNamespace

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.mark.parametrize("scenario", scenario_params("scenarios_quorum"))
def test_quota_broker_answers_as_kafka_on_a_quorum(
    scenario: Scenario, kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    outcome = run_scenario(scenario, kafka_quorum, kafka_ns)
    assert outcome.agree, report(outcome)
