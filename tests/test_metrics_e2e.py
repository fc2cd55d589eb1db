"""Throttle metrics end to end: known broker throttles give the expected avg/max in ``metrics()`` and in an
OpenTelemetry InMemoryMetricReader passed through ``meter_provider=``."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.support import BrokerFactory, call_durations, wait_until
from throttled_admin import NewTopic, ThrottledAdminClient, ThrottlingQuotaExceededException

SECRET = "metrics-secret-pw"


def points(reader: InMemoryMetricReader, calls: int | None = None) -> dict[str, list[Any]]:
    """The exported points; with ``calls``, once that many call durations are in (exports run off the client's
    thread and follow the results by moments)."""
    if calls is not None:
        assert wait_until(lambda: call_durations(reader) >= calls, timeout_s=10), f"{calls} call durations never came"
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "throttled_admin"
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def test_known_throttles_give_expected_avg_max_and_otel_points(
    quota_broker: BrokerFactory, meter_provider: MeterProvider, metric_reader: InMemoryMetricReader
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=2)  # burst 20, permissive for v4
    conf = {"bootstrap.servers": broker.bootstrap_servers, "client.id": "metrics-e2e", "sasl.password": SECRET}
    with ThrottledAdminClient(conf, meter_provider=meter_provider) as client:
        for i in range(3):
            assert client.create_topics([NewTopic(f"m{i}", 16, 1)])[f"m{i}"].exception(60) is None
        metrics = client.metrics()
        collected = points(metric_reader, calls=3)
    throttles = [r.throttle_time_ms for r in broker.request_log() if r.api_key == 19]
    assert throttles[0] == 0
    assert throttles[1] > 0
    assert throttles[2] > 0
    # Every response of a wrapped call is recorded, zeros included (Kafka NetworkClient semantics).
    assert metrics["throttle-time-avg"] == pytest.approx(sum(throttles) / 3, abs=1)
    assert metrics["throttle-time-max"] == pytest.approx(max(throttles), abs=1)
    assert metrics["node-0-throttle-time-max"] == pytest.approx(max(throttles), abs=1)
    assert metrics["retry-total"] == 0
    assert metrics["backoff-time-ms-total"] > 0

    [histogram] = collected["throttled_admin.throttle.duration"]
    assert histogram.count == 2  # one point per throttled response
    assert histogram.sum == pytest.approx((throttles[1] + throttles[2]) / 1000, abs=0.002)
    assert histogram.explicit_bounds[-1] >= 300  # reaches minutes
    assert histogram.attributes["throttled_admin.node.id"] == 0

    gauges = {tuple(sorted(p.attributes.items())): p.value for p in collected["throttled_admin.throttle.time.max"]}
    port = int(broker.bootstrap_servers.rpartition(":")[2])
    client_wide = (
        ("messaging.client.id", "metrics-e2e"),
        ("messaging.kafka.cluster.id", broker.cluster_id),
        ("messaging.system", "kafka"),
        ("server.address", "127.0.0.1"),
        ("server.port", port),
    )
    assert gauges[client_wide] == pytest.approx(max(throttles) / 1000, abs=0.002)
    per_node = (*client_wide, ("throttled_admin.node.id", 0))
    assert gauges[per_node] == pytest.approx(max(throttles) / 1000, abs=0.002)
    [avg] = [p for p in collected["throttled_admin.throttle.time.avg"] if "throttled_admin.node.id" not in p.attributes]
    assert avg.value == pytest.approx(sum(throttles) / 3000, abs=0.002)

    [backoff] = collected["throttled_admin.backoff.time"]
    assert backoff.value == pytest.approx(metrics["backoff-time-ms-total"] / 1000)
    durations = collected["messaging.client.operation.duration"]
    assert sum(p.count for p in durations) == 3
    assert all(p.attributes["messaging.operation.name"] == "CreateTopics" for p in durations)
    assert all("error.type" not in p.attributes for p in durations)

    everything = repr(collected)
    assert SECRET not in everything
    # No topic name labels a point (compared whole: the cluster id is random text that can contain "m1").
    topic_names = {f"m{i}" for i in range(3)}
    assert not any(topic_names & {str(v) for v in p.attributes.values()} for ps in collected.values() for p in ps)


def test_violations_retries_and_error_type(
    quota_broker: BrokerFactory, meter_provider: MeterProvider, metric_reader: InMemoryMetricReader
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1, enforcement="strict")
    conf = {"bootstrap.servers": broker.bootstrap_servers, "client.id": "violations"}
    with ThrottledAdminClient(conf, meter_provider=meter_provider) as client:
        ok = client.create_topics([NewTopic("a", 12, 1), NewTopic("b", 1, 1)])  # b: 89, retried once
        assert all(f.exception(60) is None for f in ok.values())
        refused = client.create_topics([NewTopic("c", 1, 1)], retry_on_quota_violation=False)["c"].exception(60)
        assert isinstance(refused, ThrottlingQuotaExceededException)
        metrics = client.metrics()
        collected = points(metric_reader, calls=2)
    assert metrics["quota-violation-total"] == 2
    assert metrics["retry-total"] == 1
    [violations] = collected["throttled_admin.quota.violations"]
    assert violations.value == 2
    assert violations.attributes["messaging.operation.name"] == "CreateTopics"
    [retries] = collected["throttled_admin.retries"]
    assert retries.value == 1
    failed = [p for p in collected["messaging.client.operation.duration"] if "error.type" in p.attributes]
    assert [p.attributes["error.type"] for p in failed] == ["THROTTLING_QUOTA_EXCEEDED"]


def test_closed_clients_stop_reporting_gauges(
    meter_provider: MeterProvider, metric_reader: InMemoryMetricReader
) -> None:
    client = ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:1"}, meter_provider=meter_provider)
    client._metrics.record_throttle(3, 250.0)
    assert any(p.value == 0.25 for p in points(metric_reader)["throttled_admin.throttle.time.max"])
    client.close()
    assert "throttled_admin.throttle.time.max" not in points(metric_reader)


def test_window_settings_are_client_keywords() -> None:
    with pytest.raises(ValueError, match="metrics_num_samples"):
        ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:1"}, metrics_num_samples=0)


def test_an_answer_that_tells_of_the_quota_calls_the_listeners_until_stopped() -> None:
    """``_on_answer``: admitted mutations, topics the quota refused and a positive throttle each tell the listener
    (provisioning wakes on it); a zero throttle, a request sent or a retry do not; after ``stop()`` nothing does."""
    client = ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:1"})
    heard: list[str] = []
    stop = client._on_answer(lambda: heard.append("answer"))
    recorder = client._metrics
    recorder.record_throttle(1, 0.0)
    recorder.record_request("create_topics", 2, 2)
    recorder.record_retry("create_topics")
    assert heard == []
    recorder.record_admitted("create_topics", 2)
    recorder.record_violations("create_topics", 1)
    recorder.record_throttle(1, 120.0)
    assert heard == ["answer"] * 3
    stop()
    recorder.record_admitted("create_topics", 1)
    assert heard == ["answer"] * 3
    client.close()
