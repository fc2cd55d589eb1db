"""QuotaBroker held to Apache Kafka 4.4 on a three-node quorum (tests/real_kafka/differential.py): the scenarios of
tests/real_kafka/scenarios_quorum.py (where the quota's bucket lives, which connection a forwarded throttle mutes,
what a broker restart, a controller failover and a stopped broker do), each run against the run's ``kafka_quorum``
and a three-node QuotaBroker, failing on any difference."""

from __future__ import annotations

import pytest

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.differential import Scenario, all_scenarios, report, run_scenario, scenario_params
from tests.real_kafka.namespace import KafkaNamespace

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.mark.parametrize("scenario", scenario_params("scenarios_quorum"))
def test_quota_broker_answers_as_kafka_on_a_quorum(
    scenario: Scenario, kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    outcome = run_scenario(scenario, kafka_quorum, kafka_ns)
    assert outcome.agree, report(outcome)


def test_the_quorum_suite_fails_when_the_bucket_stays_behind_on_a_failover(
    monkeypatch: pytest.MonkeyPatch, kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    """Planted departure: QuotaBroker's buckets stay with node 0 whoever is the controller and survive its stop (as
    before this suite existed). The kill -9 scenario then sees the old debt where Kafka's new controller forgave it."""
    from throttled_admin.testing._quotas import QuotaManager

    monkeypatch.setattr(QuotaManager, "_buckets", property(lambda self: self._buckets_of.setdefault(0, {})))
    monkeypatch.setattr(QuotaManager, "forget_node", lambda self, node_id: None)
    scenario = next(s for s in all_scenarios() if s.id.startswith("quorum/kill -9 of the controller"))
    outcome = run_scenario(scenario, kafka_quorum, kafka_ns)
    assert not outcome.agree
    assert any("throttle_time_ms" in difference for difference in outcome.differences), outcome.differences
