"""Topics created with the broker's defaults (``NewTopic(name)``: num_partitions -1): the client counts what the
broker charges, for pacing, learning and metrics alike (issue 27, finding 4). QuotaBroker with ``num.partitions`` set,
over loopback; Apache Kafka 4.4 itself in tests/test_truth_on_kafka.py."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from tests.support import BrokerFactory
from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient


def _outcomes(futures: Mapping[str, Future[Any]]) -> dict[str, BaseException | None]:
    return {name: future.exception(120) for name, future in futures.items()}


# Was (finding 4): NewTopic(name) on a cluster with num.partitions=10, at a known rate under strict enforcement: 25 of
# 25 responses throttled and 110 topics refused with error 89 (the client counted each topic as one partition); the
# same topics with an explicit 10: none. mutations-sent-total said 110 where the broker charged 1,100.
def test_topics_with_the_default_partition_count_are_paced_and_counted_as_the_broker_charges(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(
        controller_mutation_rate=50, quota_window_num=1, enforcement="strict", broker_configs={"num.partitions": "10"}
    )
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=50, burst=50)) as admin:
        names = [f"d{i:02d}" for i in range(20)]
        results = _outcomes(admin.create_topics([NewTopic(name) for name in names], timeout_ms=60000))
        metrics = admin.metrics()
    assert results == dict.fromkeys(names)
    assert broker.topics() == dict.fromkeys(names, 10)
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert not [r for r in creates if r.throttle_time_ms > 0 or any(r.errors.values())], "throttled or refused"
    assert metrics["mutations-sent-total"] == sum(r.mutations for r in creates) == 200


def test_a_learned_rate_counts_the_default_partitions(quota_broker: BrokerFactory) -> None:
    """Was (finding 4): MutationQuota() learned 5/s for a 50/s quota (each topic counted as one partition of ten)."""
    broker = quota_broker(controller_mutation_rate=50, quota_window_num=1, broker_configs={"num.partitions": "10"})
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota()) as admin:
        names = [f"l{i:02d}" for i in range(40)]
        results = _outcomes(admin.create_topics([NewTopic(name) for name in names], timeout_ms=60000))
        rate = admin.metrics()["mutation-rate"]
    assert results == dict.fromkeys(names)
    assert 35 <= rate <= 60, f"learned {rate:.1f}/s for a 50/s quota"
