"""Issue 37, scenario 5 on Apache Kafka 4.4: the quota raised, lowered and removed in the middle of one paced job
(AlterClientQuotas, which Kafka applies at once), for a known rate and for a learned one. Every outcome is checked
against what the broker holds afterwards (``KafkaCluster.topics``, a settled read)."""

from __future__ import annotations

import itertools

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.cluster]  # make test-cluster (quota changes on Kafka)

START = 40.0  # mutations/s: Kafka's default windows make the broker's burst 440
# The quota set before each call after the first: raised to 200/s, lowered to 10/s, removed.
CHANGES: list[float | None] = [200.0, 10.0, None]
WAIT_S = 120


def throttled_responses(reader: InMemoryMetricReader) -> int:
    """How many responses carried a throttle: the points of ``throttled_admin.throttle.duration``."""
    data = reader.get_metrics_data()
    if data is None:
        return 0
    return sum(
        point.count
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "throttled_admin.throttle.duration"
        for point in metric.data.data_points
        if isinstance(point, HistogramDataPoint)
    )


def created(client: ThrottledAdminClient, names: list[str]) -> dict[str, BaseException | None]:
    futures = client.create_topics([NewTopic(name, 1, 1) for name in names], timeout_ms=WAIT_S * 1000)
    return {name: future.exception(WAIT_S) for name, future in futures.items()}


@pytest.mark.parametrize(
    ("quota", "calls"),
    [(MutationQuota(rate=START, burst=START), [200, 100, 200, 100]), (MutationQuota(), [600, 100, 200, 100])],
    ids=["known", "learned"],
)
def test_the_quota_raised_lowered_and_removed_during_a_job(
    kafka_broker: KafkaCluster,
    kafka_ns: KafkaNamespace,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
    quota: MutationQuota,
    calls: list[int],
) -> None:
    """One client's job of one-partition topics in four calls at 40/s (a known rate with a one-second burst, or a
    learned one, which slow start's 600 topics teach); before the second call the quota is raised to 200/s, before
    the third lowered to 10/s, before the fourth removed (AlterClientQuotas between calls: a change in the middle of
    a call lands wherever the call has got to once the controller has it, seconds later under load). Every topic is
    created, as the broker confirms; the third call, 200 topics against a bucket of 110 refilled at 10/s, draws at
    most six throttled responses (the broker's word wins over what the pacer believed: before issue 37 a known rate
    was throttled on every request), and the last, with no quota, none."""
    kafka_broker.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=START)
    names = [kafka_ns.topic(f"q{i:04d}") for i in range(sum(calls))]
    conf = {"bootstrap.servers": kafka_broker.bootstrap_servers, "client.id": kafka_ns.client_id}
    results: dict[str, BaseException | None] = {}
    bounds = list(itertools.accumulate(calls, initial=0))
    throttled: list[int] = []
    with ThrottledAdminClient(conf, mutation_quota=quota, meter_provider=meter_provider) as client:
        for index, (first, last) in enumerate(itertools.pairwise(bounds)):
            if index:
                kafka_broker.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=CHANGES[index - 1])
            before = throttled_responses(metric_reader)
            results |= created(client, names[first:last])
            throttled.append(throttled_responses(metric_reader) - before)
    assert results == dict.fromkeys(names)
    assert kafka_broker.topics(kafka_ns.prefix) == dict.fromkeys(names, 1)
    assert throttled[2] <= 6, throttled
    assert throttled[3] == 0, throttled
