"""The attributes of the client's metric series: one series per client and cluster, never overwriting each other.

Two clients on two clusters with the default client.id report two series (the cluster id and the first bootstrap
address tell them apart, not only ``messaging.client.id='rdkafka'``); two clients of one quota entity (every
attribute the same) aggregate (the max of their maxes, not the last writer's gauge); provisioning labels each
entity stably across runs; caller-given attributes are checked before anything is made; docs/metrics.md's filter
names every operation the client records."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.support import BrokerFactory, wait_until
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.provisioning import PlanRow, Profile, apply_plan
from throttled_admin.testing import QuotaBroker

Series = dict[tuple[tuple[str, Any], ...], Any]
SECRET = "series-secret-pw"


def _points(reader: InMemoryMetricReader) -> dict[str, Series]:
    """Instrument name -> {sorted attribute items: data point}; every point of one instrument has its own
    attribute set (the SDK merges equal sets)."""
    data = reader.get_metrics_data()
    out: dict[str, Series] = {}
    if data is None:
        return out
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                series = out.setdefault(metric.name, {})
                for point in metric.data.data_points:
                    assert point.attributes is not None
                    key = tuple(sorted(point.attributes.items()))
                    assert key not in series, f"{metric.name}: two points with the attributes {key}"
                    series[key] = point
    return out


def _collect(reader: InMemoryMetricReader, calls: int) -> dict[str, Series]:
    """The points once ``calls`` call durations are exported (exports follow the results by moments)."""

    def durations() -> int:
        return sum(p.count for p in _points(reader).get("messaging.client.operation.duration", {}).values())

    assert wait_until(lambda: durations() >= calls, timeout_s=10)
    return _points(reader)


def _client_wide(series: Series) -> Series:
    return {key: point for key, point in series.items() if "throttled_admin.node.id" not in dict(key)}


def _port(broker: QuotaBroker) -> int:
    return int(broker.bootstrap_servers.split(",")[0].rpartition(":")[2])


def test_two_clients_on_two_clusters_report_two_series(
    quota_broker: BrokerFactory, meter_provider: MeterProvider, metric_reader: InMemoryMetricReader
) -> None:
    throttled = quota_broker(controller_mutation_rate=5, quota_window_num=1)  # burst 5: 25 partitions owe 4 s
    free = quota_broker()
    assert throttled.cluster_id != free.cluster_id
    # The default client.id on both, as the person who found this ran them.
    with (
        ThrottledAdminClient(
            {"bootstrap.servers": throttled.bootstrap_servers, "sasl.password": SECRET}, meter_provider=meter_provider
        ) as a,
        ThrottledAdminClient({"bootstrap.servers": free.bootstrap_servers}, meter_provider=meter_provider) as b,
    ):
        assert a.create_topics([NewTopic("a", 25, 1)])["a"].exception(30) is None
        assert b.create_topics([NewTopic("b", 25, 1)])["b"].exception(30) is None
        collected = _collect(metric_reader, calls=2)
        a_max_ms, b_max_ms = a.metrics()["throttle-time-max"], b.metrics()["throttle-time-max"]
    assert a_max_ms > 3000
    assert b_max_ms == 0

    def base(broker: QuotaBroker) -> dict[str, Any]:
        return {
            "messaging.system": "kafka",
            "messaging.client.id": "rdkafka",  # confluent-kafka's client.id, unchanged
            "server.address": "127.0.0.1",
            "server.port": _port(broker),
            "messaging.kafka.cluster.id": broker.cluster_id,
        }

    gauges = _client_wide(collected["throttled_admin.throttle.time.max"])
    assert {key: point.value for key, point in gauges.items()} == {
        tuple(sorted(base(throttled).items())): pytest.approx(a_max_ms / 1000),
        tuple(sorted(base(free).items())): 0.0,
    }
    for name in ("throttled_admin.requests", "throttled_admin.mutations", "messaging.client.operation.duration"):
        series = collected[name]
        assert len(series) == 2, (name, list(series))
        for broker in (throttled, free):
            [key] = [k for k in series if dict(k)["messaging.kafka.cluster.id"] == broker.cluster_id]
            attributes = dict(key)
            assert attributes == {**base(broker), "messaging.operation.name": "CreateTopics"}
            point = series[key]
            expected = 25 if name.endswith("mutations") else 1
            assert (point.count if name.endswith("duration") else point.value) == expected
    assert SECRET not in repr(collected)


def test_two_clients_of_one_entity_on_one_cluster_aggregate(
    quota_broker: BrokerFactory, meter_provider: MeterProvider, metric_reader: InMemoryMetricReader
) -> None:
    """Clients sharing every attribute are one quota entity: counters add up, the throttle gauges give the max of
    their maxes and the average over every response of both (not the last writer's)."""
    broker = quota_broker(controller_mutation_rate=5, quota_window_num=1)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "client.id": "tenant-a"}
    with (
        ThrottledAdminClient(conf, meter_provider=meter_provider) as first,
        ThrottledAdminClient(conf, meter_provider=meter_provider) as second,
    ):
        assert first.create_topics([NewTopic("one", 25, 1)])["one"].exception(30) is None  # owes 4 s
        assert second.create_topics([NewTopic("two", 1, 1)])["two"].exception(30) is None  # owes 4.2 s
        assert second.create_topics([NewTopic("three", 1, 1)])["three"].exception(30) is None  # after the wait
        collected = _collect(metric_reader, calls=3)
        snapshots = [first.metrics(), second.metrics()]
    throttles_ms = [r.throttle_time_ms for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert len(throttles_ms) == 3
    assert snapshots[0]["throttle-time-max"] != snapshots[1]["throttle-time-max"]  # last writer would be wrong

    [(key, maximum)] = _client_wide(collected["throttled_admin.throttle.time.max"]).items()
    assert dict(key)["messaging.client.id"] == "tenant-a"
    assert maximum.value == pytest.approx(max(throttles_ms) / 1000, abs=0.002)
    [average] = _client_wide(collected["throttled_admin.throttle.time.avg"]).values()
    assert average.value == pytest.approx(sum(throttles_ms) / len(throttles_ms) / 1000, abs=0.002)
    [requests] = collected["throttled_admin.requests"].values()
    assert requests.value == 3
    [mutations] = collected["throttled_admin.mutations"].values()
    assert mutations.value == 27
    [durations] = collected["messaging.client.operation.duration"].values()
    assert durations.count == 3


def test_provisioning_labels_each_entity_stably_across_runs(
    quota_broker: BrokerFactory, meter_provider: MeterProvider, metric_reader: InMemoryMetricReader
) -> None:
    """apply_plan makes one client per (cluster, principal): its series carry the profile's cluster name and the
    principal's user name (never a secret), the same on every run, so a fleet's dashboard tells tenants apart."""
    users = {"alice": "alice-" + SECRET, "bob": "bob-" + SECRET}
    east, west = quota_broker(users=users), quota_broker(users=users)

    def profile(name: str, broker: QuotaBroker, user: str) -> Profile:
        conf = {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": user,
            "sasl.password": users[user],
        }
        return Profile(name, conf, mutation_rate=100)

    profiles = {
        "east-alice": profile("east-alice", east, "alice"),
        "east-bob": profile("east-bob", east, "bob"),
        "west-alice": profile("west-alice", west, "alice"),
    }
    seen: list[set[tuple[tuple[str, Any], ...]]] = []
    for run in range(2):
        rows = [PlanRow(name, "ensure", f"{name}.{run}", 2) for name in profiles]
        results = apply_plan(rows, profiles, meter_provider=meter_provider)
        assert [r.status for r in results] == ["created"] * 3
        seen.append(set(_points(metric_reader)["throttled_admin.requests"]))
    assert seen[0] == seen[1]  # no new series on the second run
    labels = {
        (a["throttled_admin.cluster"], a["throttled_admin.principal"], a["messaging.kafka.cluster.id"])
        for a in map(dict, seen[1])
    }
    assert labels == {
        ("east-alice", "alice", east.cluster_id),
        ("east-bob", "bob", east.cluster_id),
        ("west-alice", "alice", west.cluster_id),
    }
    assert SECRET not in repr(_points(metric_reader))


@pytest.mark.parametrize(
    ("bootstrap", "server"),
    [
        ("broker-1:9093,broker-2:9093", ("broker-1", 9093)),
        ("SASL_SSL://kafka.example.com:9094", ("kafka.example.com", 9094)),
        ("[::1]:19092", ("::1", 19092)),
        ("localhost", ("localhost", 9092)),  # librdkafka's default port
        ("", None),
    ],
)
def test_server_attributes_are_the_first_bootstrap_address(bootstrap: str, server: tuple[str, int] | None) -> None:
    from throttled_admin._telemetry.metrics import server_of

    assert server_of(bootstrap) == server


def test_metric_attributes_are_checked_before_anything_is_made() -> None:
    conf = {"bootstrap.servers": "127.0.0.1:1"}
    with pytest.raises(ValueError, match=r"'messaging\.client\.id' is set by the client itself"):
        ThrottledAdminClient(conf, metric_attributes={"messaging.client.id": "x"})
    with pytest.raises(TypeError, match=r"metric_attributes\['tenant'\] must be a str"):
        ThrottledAdminClient(conf, metric_attributes={"tenant": ["a"]})  # type: ignore[dict-item]  # a list on purpose
    with pytest.raises(TypeError, match="metric_attributes must be a mapping"):
        ThrottledAdminClient(conf, metric_attributes=[("tenant", "a")])  # type: ignore[arg-type]


def test_docs_show_the_filter_that_keeps_admin_calls_out_of_latency_panels() -> None:
    """Admin calls stay on messaging.client.operation.duration (the messaging conventions); docs/metrics.md shows
    the filter naming every operation the client records, in PromQL and for the Collector."""
    import re

    from tests.support import REPO
    from throttled_admin._engine import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS

    names = {CREATE_TOPICS.name, CREATE_PARTITIONS.name, DELETE_TOPICS.name}
    docs = (REPO / "docs" / "metrics.md").read_text()
    promql = re.search(r'messaging_operation_name!~"([^"]+)"', docs)
    collector = re.search(r'"\^\(([^)]+)\)\$"', docs)
    assert promql is not None
    assert collector is not None
    assert set(promql.group(1).split("|")) == names
    assert set(collector.group(1).split("|")) == names
    assert 'otel_scope_name!="throttled_admin"' in docs
