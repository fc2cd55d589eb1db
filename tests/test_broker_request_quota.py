"""The request quota (KIP-124) as Kafka's ClientRequestQuotaManager enforces it: request time per entity
over the quota window, throttle = max(request throttle, mutation throttle) on every response that carries
one, and the connection muted for it. Unit vectors on a fake clock, then over the wire, then end to end with
confluent-kafka's throttle_cb."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support import BrokerFactory, wait_until
from tests.wire import WireClient, create_topics_request
from throttled_admin.testing import QuotaEntity
from throttled_admin.testing._quotas import QuotaManager
from throttled_admin.testing._rate_sensor import RateSensor

METADATA, CREATE_TOPICS = 3, 19


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep_ms(self, ms: float) -> None:
        self.now += ms / 1000


def test_kafkas_request_percentage_vector() -> None:
    """ClientRequestQuotaManagerTest.testRequestPercentageQuotaViolation, step by step: a 1% quota (10 ms per
    second), 11 one-second samples; 4 ms a second is fine; a 67.1 ms spike half-way through a window gives
    (107.1 / 10.5 - 10) / 10 x 10.5 s = 210 ms; a 500 ms spike is throttled by at most one window (1000 ms)
    until its sample rolls over."""
    clock = Clock()
    quotas = QuotaManager(window_num=11, window_size_s=1.0, clock=clock)
    quotas.set_quota(QuotaEntity("ANONYMOUS", "test-client"), 1, "request_percentage")

    def record(ms: float) -> int:
        return quotas.record_request_time("ANONYMOUS", "test-client", ms)

    for _ in range(10):
        assert record(4) == 0
        clock.sleep_ms(1000)
    clock.sleep_ms(500)
    throttle = record(67.1)
    assert throttle == 210
    clock.sleep_ms(throttle)
    for _ in range(11):
        record(4)
        clock.sleep_ms(1000)
    assert record(0) == 0  # the bursty sample has rolled over
    assert record(500) == 1000
    for _ in range(10):
        clock.sleep_ms(1000)
        assert record(0) == 1000
    clock.sleep_ms(1000)
    assert record(0) == 0


def test_window_size_counts_at_least_samples_minus_one_full_windows() -> None:
    """Rate.windowSize: with little history the window still counts samples - 1 full windows, so a first
    burst is measured over (samples - 1) x window, as Kafka does."""
    sensor = RateSensor(10.0, samples=11, window_ms=1000)
    assert sensor.record(100.0, 0) == 0  # 100 / 10 s = 10 %: at the bound, not over it
    assert sensor.record(10.0, 0) == 1000  # 11 %: round(1 / 10 x 10000) = 1000, capped at one window
    assert sensor.window_size_ms(0) == 10_000
    assert sensor.window_size_ms(10_500) == 10_500


def test_quota_change_keeps_the_samples_and_applies_the_new_bound() -> None:
    """ClientQuotaManager.updateQuotaMetricConfigs changes the quota of the existing sensor in place."""
    clock = Clock()
    quotas = QuotaManager(window_num=11, window_size_s=1.0, clock=clock)
    entity = QuotaEntity(user=QuotaEntity.DEFAULT)
    quotas.set_quota(entity, 10, "request_percentage")
    assert quotas.record_request_time("u", "c", 500) == 0  # 50 / 10 s = 5 %
    quotas.set_quota(entity, 4.8, "request_percentage")
    assert quotas.request_rate("u", "c") == pytest.approx(5.0)
    assert quotas.record_request_time("u", "c", 0) == 417  # round((5 - 4.8) / 4.8 x 10 s)
    quotas.set_quota(entity, 1, "request_percentage")
    assert quotas.record_request_time("u", "c", 0) == 1000  # 40 s needed, capped at one window
    quotas.set_quota(entity, None, "request_percentage")
    assert quotas.record_request_time("u", "c", 10_000) == 0  # no quota: unbounded


# -- over the wire ------------------------------------------------------------------------------


def test_request_quota_throttles_any_api_and_mutes_the_connection(quota_broker: BrokerFactory) -> None:
    """KafkaApis answers every throttleable request through RequestHandlerHelper.sendResponseMaybeThrottle:
    the request time is recorded, a violation sets throttle_time_ms (at most one quota window) and mutes
    the connection, also for versions whose response has no throttle field (Metadata v0)."""
    broker = quota_broker(request_percentage=10, request_time_cost_ms=100, request_quota_window_num=2)
    with WireClient(broker.bootstrap_servers) as wire:
        versions = wire.request(ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"))
        metadata = wire.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False))
        wire.request(MetadataRequest(version=0, topics=[]))
    assert versions.throttle_time_ms == 0  # 100 ms over a window of at least 1 s: 10 %, at the bound
    assert 0 < metadata.throttle_time_ms <= 1000  # over it: throttled, by at most one window
    versions_record, second, third = broker.request_log()
    assert versions_record.throttle_time_ms == 0
    assert second.throttle_time_ms == metadata.throttle_time_ms
    assert second.responded_at is not None
    assert third.received_at >= second.responded_at + second.throttle_time_ms / 1000 - 0.01
    assert third.throttle_time_ms > 0  # throttled too, though Metadata v0 cannot say so
    assert broker.request_rate() == pytest.approx(30, rel=0.5)


def test_a_response_carries_the_max_of_request_and_mutation_throttles(quota_broker: BrokerFactory) -> None:
    """RequestHandlerHelper.sendResponseMaybeThrottleWithControllerQuota: throttle_time_ms = max(controller
    mutation throttle, request throttle), and the connection is muted for that."""
    broker = quota_broker(
        controller_mutation_rate=10,
        quota_window_num=1,  # burst 10
        request_percentage=10,
        request_time_cost_ms=100,
        request_quota_window_num=2,
    )
    with WireClient(broker.bootstrap_servers) as wire:
        first = wire.request(create_topics_request(4, ("ten", 10)))  # K = 0: no mutation throttle; 10 %: none
    with WireClient(broker.bootstrap_servers) as wire:
        second = wire.request(create_topics_request(4, ("one", 1)))  # K = -1: 100 ms; request time: 20 %
        wire.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False))
    assert first.throttle_time_ms == 0
    assert 100 < second.throttle_time_ms <= 1000  # the request throttle dominates the 100 ms mutation one
    created, _, held = broker.request_log()
    assert held.received_at >= created.responded_at + second.throttle_time_ms / 1000 - 0.01


def test_sasl_exchanges_are_not_charged(quota_broker: BrokerFactory) -> None:
    """KIP-124: SaslHandshake used for authentication is not throttled (SaslServerAuthenticator handles the
    exchange before KafkaApis); the first request after it is charged normally."""
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    broker = quota_broker(users={"alice": "pw"}, request_percentage=10, request_time_cost_ms=100)
    with WireClient(broker.bootstrap_servers) as wire:
        wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        wire.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\x00alice\x00pw"))
        metadata = wire.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False))
    assert metadata.throttle_time_ms == 0
    assert broker.request_rate(user="alice") == pytest.approx(1.0, rel=0.2)  # one 100 ms request over 10 s


# -- end to end: confluent-kafka sees the throttle on non-mutation calls ------------------------


def polled(admin: AdminClient, events: list[float]) -> bool:
    """Serve queued callbacks (throttle_cb fires only from poll) and report whether any event came."""
    admin.poll(0.05)
    return bool(events)


def test_confluent_kafka_sees_request_throttles_on_list_topics_and_describe_configs(
    quota_broker: BrokerFactory,
) -> None:
    """KIP-124 intends client throttle metrics to cover every request: librdkafka reports each response's
    throttle_time_ms through throttle_cb, so list_topics and describe_configs under a request quota must
    produce throttle events (and KIP-219 back-off keeps the calls working)."""
    broker = quota_broker(request_percentage=1, request_time_cost_ms=40)
    broker.create_topic("t", 1)
    events: list[float] = []
    admin = AdminClient(  # a callback in the conf: confluent-kafka's stub types conf values as str | int | float | bool
        {"bootstrap.servers": broker.bootstrap_servers, "throttle_cb": lambda event: events.append(event.throttle_time)}  # type: ignore[dict-item]
    )
    for _ in range(3):
        assert "t" in admin.list_topics(timeout=30).topics
        admin.poll(0)
    assert wait_until(lambda: polled(admin, events), 10)
    assert max(events) > 0
    throttled_metadata = [r for r in broker.request_log() if r.api_key == METADATA and r.throttle_time_ms > 0]
    assert throttled_metadata
    events.clear()
    [future] = admin.describe_configs([ConfigResource("topic", "t")]).values()
    assert future.result(30)["cleanup.policy"].value == "delete"
    assert wait_until(lambda: polled(admin, events), 10)
    assert max(events) > 0
    assert any(r.api_name == "DescribeConfigs" and r.throttle_time_ms > 0 for r in broker.request_log())


def test_our_client_metrics_see_request_throttles_on_non_mutation_calls(quota_broker: BrokerFactory) -> None:
    """KIP-124's client side (NetworkClient records every response's throttle_time_ms): the throttle-time
    metrics of ThrottledAdminClient include throttles on list_topics and describe_configs."""
    from throttled_admin import ThrottledAdminClient

    broker = quota_broker(request_percentage=1, request_time_cost_ms=40)
    broker.create_topic("t", 1)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        for _ in range(3):
            assert "t" in admin.list_topics(timeout=30).topics
        [future] = admin.describe_configs([ConfigResource("topic", "t")]).values()
        future.result(30)
        assert wait_until(lambda: admin.metrics()["throttle-time-max"] > 0, 10)
        assert admin.metrics()["throttle-time-max"] <= 1000  # one request-quota window at most
    assert any(r.api_key == METADATA and r.throttle_time_ms > 0 for r in broker.request_log())


def test_request_quotas_are_per_broker(quota_broker: BrokerFactory) -> None:
    """KIP-124: "As with produce/fetch quotas, request quotas will be per-broker" (each broker's
    ClientRequestQuotaManager has its own sensors); the controller mutation quota, by contrast, is one
    bucket for the cluster."""
    broker = quota_broker(num_brokers=2, request_percentage=10, request_time_cost_ms=100, request_quota_window_num=2)
    throttles = []
    for node_id in (0, 1, 0):
        with WireClient(f"127.0.0.1:{broker.ports[node_id]}") as wire:
            throttles.append(
                wire.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)).throttle_time_ms
            )
    assert throttles[0] == 0
    assert throttles[1] == 0  # node 1 has seen nothing of this client yet
    assert throttles[2] > 0  # node 0's second request: 20 % of one window
    assert broker.request_rate(node_id=1) == pytest.approx(10, rel=0.5)
