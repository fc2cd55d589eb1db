"""QuotaBroker end to end over loopback sockets, against independent clients: kafka-python 3 (strict
versions, error 89), confluent-kafka (librdkafka's v4 permissive path), and a raw wire client. Tests taking
``any_broker`` run on QuotaBroker and on the shared Apache Kafka 4.4 (quota windows 11 x 1 s, Kafka's default,
on both)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaAdminClient
from kafka.errors import SaslAuthenticationFailedError
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.topics import CreatePartitionsRequest, DeleteTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from tests.either_broker import EitherBroker
from tests.support import BrokerFactory
from tests.wire import WireClient, create_topics_request
from throttled_admin.testing import QuotaBroker, RequestRecord

AnyBroker = Callable[..., EitherBroker]
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, METADATA = 19, 20, 37, 3


def mutations(broker: QuotaBroker, api_key: int = CREATE_TOPICS) -> list[RequestRecord]:
    return [r for r in broker.request_log() if r.api_key == api_key]


def kafka_python_admin(broker: QuotaBroker, **conf: object) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=30000, **conf)


def confluent_admin(broker: QuotaBroker, **conf: str | int | float | bool) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, **conf})


def outcomes(futures: Mapping[str, Future[Any]], timeout_s: float = 30) -> dict[str, int]:
    out = {}
    for name, future in futures.items():
        exc = future.exception(timeout_s)
        out[name] = 0 if exc is None else exc.args[0].code()
    return out


# -- strict path (kafka-python sends CreateTopics v7) ------------------------------------------


def test_kafka_python_strict_partial_admission_with_error_89(any_broker: AnyBroker) -> None:
    broker = any_broker(controller_mutation_rate=1)  # burst 11 x 1 s x 1/s = 11
    a, b, c = broker.t("a"), broker.t("b"), broker.t("c")
    admin = broker.kafka_python()
    try:
        result = admin.create_topics(
            {
                a: {"num_partitions": 8, "replication_factor": 1},
                b: {"num_partitions": 8, "replication_factor": 1},
                c: {"num_partitions": 1, "replication_factor": 1},
            },
            raise_errors=False,
        )
    finally:
        admin.close()
    errors = {t["name"]: t["error_code"] for t in result["topics"]}
    assert errors == {a: 0, b: 0, c: 89}  # b admitted at K=3 >= 0, then K=-5 rejects c
    assert broker.settled_topics({a: 8, b: 8}) == {a: 8, b: 8}
    if broker.quota is not None:
        [record] = mutations(broker.quota)
        assert record.api_version == 7
        assert record.errors == errors
        assert record.mutations == 16
        assert 4500 <= record.throttle_time_ms <= 5000  # round(5 / 1 * 1000) less the time since it was computed


def test_strict_vector_over_the_wire(any_broker: AnyBroker) -> None:
    """ControllerMutationQuotaManager's strict quota: a topic is admitted while K >= 0, however far it drives K
    below zero, and such an answer carries no throttle (only a QuotaViolationException sets one); the next
    topic is refused with error 89 and the throttle, -K / R less the time since."""
    broker = any_broker(controller_mutation_rate=1)  # R=1, B=11
    results = []
    started = time.monotonic()
    for name in ("t1", "t2", "t3"):
        with broker.wire() as wire:  # a fresh connection is never muted
            results.append(wire.request(create_topics_request(7, (broker.t(name), 9))))
    since_ms = (time.monotonic() - started) * 1000
    assert [r.topics[0].error_code for r in results] == [0, 0, 89]
    assert [results[0].throttle_time_ms, results[1].throttle_time_ms] == [0, 0]
    assert 7000 - since_ms - 1 <= results[2].throttle_time_ms <= 7000  # K = -7, refilled at 1/s since
    assert results[2].topics[0].error_message is None  # KRaft sends error 89 with a null message
    if broker.quota is not None:
        tokens = broker.quota.tokens()
        assert tokens is not None
        assert -7 <= tokens <= -7 + (time.monotonic() - started)  # refilled at 1/s since t2 was charged


def test_permissive_vector_over_the_wire(any_broker: AnyBroker) -> None:
    broker = any_broker(controller_mutation_rate=1)  # R=1, B=11
    throttles = []
    started = time.monotonic()
    for name in ("t1", "t2", "t3"):
        with broker.wire() as wire:
            response = wire.request(create_topics_request(4, (broker.t(name), 9)))  # v4 < v6: permissive
            assert response.topics[0].error_code == 0
            throttles.append(response.throttle_time_ms)
    since_ms = (time.monotonic() - started) * 1000  # refilled at 1/s meanwhile
    assert throttles[0] == 0
    assert 7000 - since_ms - 1 <= throttles[1] <= 7000  # K = -7
    assert 16000 - since_ms - 1 <= throttles[2] <= 16000  # K = -16
    expected = {broker.t("t1"): 9, broker.t("t2"): 9, broker.t("t3"): 9}
    assert broker.settled_topics(expected) == expected


@pytest.mark.parametrize("enforcement", ["strict", "permissive"])
def test_enforcement_override_ignores_the_version(quota_broker: BrokerFactory, enforcement: str) -> None:
    broker = quota_broker(controller_mutation_rate=1, quota_window_num=1, enforcement=enforcement)
    codes = []
    for version, name in ((4, "x"), (4, "y"), (7, "z")):
        with WireClient(broker.bootstrap_servers) as wire:
            codes.append(wire.request(create_topics_request(version, (name, 5))).topics[0].error_code)
    assert codes == ([0, 89, 89] if enforcement == "strict" else [0, 0, 0])


# -- permissive path (librdkafka sends CreateTopics v4) and KIP-219 muting ---------------------


def test_confluent_kafka_is_admitted_throttled_and_then_muted(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)  # burst 10
    admin = confluent_admin(broker)
    assert outcomes(admin.create_topics([NewTopic("big", 15, 1)])) == {"big": 0}  # K = -5: 500 ms
    assert outcomes(admin.create_topics([NewTopic("next", 1, 1)])) == {"next": 0}
    first, second = mutations(broker)
    assert first.api_version == 4
    assert first.errors == {"big": 0}
    assert 400 <= first.throttle_time_ms <= 500
    assert first.responded_at is not None
    # librdkafka does not back off (KIP-219 unsupported): it sent at once, and the broker did not read
    # the muted connection until the throttle had ended.
    assert second.arrived_at < first.responded_at + first.throttle_time_ms / 1000 - 0.2
    assert second.received_at >= first.responded_at + first.throttle_time_ms / 1000 - 0.01
    assert second.held_s > 0.2


def test_muting_applies_to_every_api_on_the_connection(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)
    with WireClient(broker.bootstrap_servers) as wire:
        create = create_topics_request(4, ("t", 14))  # permissive: admitted and throttled
        wire.send(create)
        metadata = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)
        wire.send(metadata)  # pipelined behind the throttled request
        throttled = wire.receive(create)
        wire.receive(metadata)
    assert 300 <= throttled.throttle_time_ms <= 400
    created, described = (r for r in broker.request_log() if r.api_key in (CREATE_TOPICS, METADATA))
    assert created.responded_at is not None
    assert described.received_at >= created.responded_at + created.throttle_time_ms / 1000 - 0.01


def test_old_client_gets_its_response_at_once_and_is_then_muted(quota_broker: BrokerFactory) -> None:
    """Kafka's RequestHandlerHelper.sendResponseMaybeThrottleWithControllerQuota: "Regardless of throttling,
    send the response immediately", for every version; the connection is muted afterwards. Measured on a raw
    socket with CreateTopics v2 (below the client-throttle version 3)."""
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)
    with WireClient(broker.bootstrap_servers) as wire:
        create = create_topics_request(2, ("old", 13))
        started = time.monotonic()
        response = wire.request(create)
        answered_after_s = time.monotonic() - started
        metadata = MetadataRequest(version=1, topics=None)
        wire.request(metadata)
    assert 200 <= response.throttle_time_ms <= 300
    assert answered_after_s < response.throttle_time_ms / 1000  # not held for the throttle
    created, described = (r for r in broker.request_log() if r.api_key in (CREATE_TOPICS, METADATA))
    assert created.responded_at is not None
    assert created.responded_at - created.received_at < created.throttle_time_ms / 1000
    # the next request on the muted connection waited in the broker until the throttle had ended
    assert described.received_at >= created.responded_at + created.throttle_time_ms / 1000 - 0.01


# -- what a mutation costs ---------------------------------------------------------------------


def test_validate_only_is_charged_like_kraft(any_broker: AnyBroker) -> None:
    """ControllerApis charges a validate-only CreateTopics as a real one: 20 partitions validated against a
    burst of 11 leave the bucket in debt, so the next strict create is refused with error 89."""
    broker = any_broker(controller_mutation_rate=1)  # B = 11
    admin = broker.kafka_python()
    try:
        admin.create_topics({broker.t("v"): {"num_partitions": 20, "replication_factor": 1}}, validate_only=True)
    finally:
        admin.close()
    with broker.wire() as wire:
        after = wire.request(create_topics_request(7, (broker.t("after"), 1)))
    assert [t.error_code for t in after.topics] == [89]
    assert broker.topics() == {}
    if broker.quota is not None:
        [validated, refused] = mutations(broker.quota)
        assert (validated.mutations, refused.mutations) == (20, 0)
        assert broker.quota.tokens() == pytest.approx(-9, abs=1)


def test_delete_costs_current_partitions_and_create_partitions_costs_only_added(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(controller_mutation_rate=1000, quota_window_num=1)
    broker.create_topic("grow", 4)
    broker.create_topic("gone", 7)
    admin = kafka_python_admin(broker)
    try:
        admin.create_partitions({"grow": 10})
        admin.delete_topics(["gone"])
        admin.delete_topics(["missing"], raise_errors=False)
    finally:
        admin.close()
    assert [r.mutations for r in mutations(broker, CREATE_PARTITIONS)] == [6]
    assert [r.mutations for r in mutations(broker, DELETE_TOPICS)] == [7, 0]
    assert broker.topics() == {"grow": 10}


def test_invalid_topics_fail_with_kafkas_errors_and_cost_nothing(any_broker: AnyBroker) -> None:
    broker = any_broker(controller_mutation_rate=1000)
    t = broker.t
    broker.create_topic(t("exists"), 1)
    broker.create_topic(t("a_b"), 1)
    long_name = t("x" * 250)
    with broker.wire() as wire:
        response = wire.request(
            create_topics_request(
                7,
                (t("exists"), 1),
                ("bad name", 1),
                (t("a.b"), 1),
                (t("zero"), 0),
                (t("dup"), 1),
                (t("dup"), 1),
                (long_name, 1),
            )
        )
    errors = {t.name: (t.error_code, t.error_message) for t in response.topics}
    assert len(response.topics) == 6  # one result per distinct name, as Kafka's keyed result collection
    assert errors[t("exists")] == (36, f"Topic '{t('exists')}' already exists.")
    assert errors["bad name"] == (
        17,
        "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' "
        "and '-'",
    )
    assert errors[t("a.b")] == (17, f"Topic '{t('a.b')}' collides with existing topic: {t('a_b')}")
    assert errors[t("zero")] == (37, "Number of partitions was set to an invalid non-positive value.")
    assert errors[t("dup")] == (42, "Duplicate topic name.")
    assert errors[long_name] == (
        17,
        f"Topic name is invalid: the length of '{long_name}' is longer than the max allowed length 249",
    )
    if broker.quota is not None:
        assert mutations(broker.quota)[0].mutations == 0


def test_malformed_and_repeated_deletes_as_controller_apis(any_broker: AnyBroker) -> None:
    broker = any_broker()
    foo, quux = broker.t("foo"), broker.t("quux")
    broker.create_topic(foo, 1)
    S = DeleteTopicsRequest.DeleteTopicState
    with broker.wire() as wire:
        metadata = wire.request(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name=foo)]))
        foo_id, other_id = metadata.topics[0].topic_id, uuid.uuid4()
        response = wire.request(
            DeleteTopicsRequest(
                version=6,
                topics=[
                    S(name=None, topic_id=uuid.UUID(int=0)),
                    S(name=foo, topic_id=foo_id),
                    S(name=None, topic_id=other_id),
                    S(name=None, topic_id=other_id),
                    S(name=quux, topic_id=uuid.UUID(int=0)),
                    S(name=quux, topic_id=uuid.UUID(int=0)),
                ],
                timeout_ms=1000,
            )
        )
        partitions = wire.request(
            CreatePartitionsRequest(
                version=3,
                topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=foo, count=3, assignments=None)] * 2,
                timeout_ms=1000,
                validate_only=False,
            )
        )
    # Kafka collects these in hash sets: their order is not asserted
    assert sorted((r.error_code, r.error_message) for r in response.responses) == [
        (42, "Duplicate topic id."),
        (42, "Duplicate topic name."),
        (42, "Neither topic name nor id were specified."),
        (42, "You may not specify both topic name and topic id."),
    ]
    assert [(r.name, r.error_code, r.error_message) for r in partitions.results] == [(foo, 42, "Duplicate topic name.")]
    assert broker.topics() == {foo: 1}


def test_partition_errors_match_kafka(any_broker: AnyBroker) -> None:
    broker = any_broker()
    topic, nope = broker.t("t"), broker.t("nope")
    broker.create_topic(topic, 3)
    admin = broker.kafka_python()
    try:
        result = admin.create_partitions({topic: 2, nope: 4}, raise_errors=False)
        same = admin.create_partitions({topic: 3}, raise_errors=False)
    finally:
        admin.close()
    by_name = {r.name: (r.error_code, r.error_message) for r in result.results}
    assert by_name[topic] == (37, f"The topic {topic} currently has 3 partition(s); 2 would not be an increase.")
    assert by_name[nope] == (3, None)
    assert same.results[0].error_message == "Topic already has 3 partition(s)."


# -- quota entities over the wire, as kafka-configs.sh sets them -------------------------------


def alter_quota(wire: WireClient, entity: list[tuple[str, str | None]], rate: float | None) -> int:
    E = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        version=1,
        entries=[
            E(
                entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[E.OpData(key="controller_mutation_rate", value=rate or 0.0, remove=rate is None)],
            )
        ],
        validate_only=False,
    )
    return int(wire.request(request).entries[0].error_code)


def test_entity_precedence_set_over_the_wire(any_broker: AnyBroker) -> None:
    broker = any_broker()
    special, other = f"{broker.client_id}-special", f"{broker.client_id}-other"
    with broker.wire() as wire:
        assert alter_quota(wire, [("client-id", special)], 1.0) == 0
        broker.settle(lambda: broker.kafka is not None and broker.kafka.describe_quota(client_id=special) == 1.0)
        described = wire.request(
            DescribeClientQuotasRequest(
                version=1,
                components=[
                    DescribeClientQuotasRequest.ComponentData(entity_type="client-id", match_type=2, match=None)
                ],
                strict=False,
            )
        )
    [entry] = [e for e in described.entries if [x.entity_name for x in e.entity] == [special]]
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("client-id", special)]
    assert entry.values[0].value == 1.0
    if broker.quota is not None:
        assert broker.quota.tokens(client_id=special) == pytest.approx(11)  # burst = 11 windows x 1 s x 1/s
        assert broker.quota.tokens(client_id=other) is None

    def create(client_id: str, name: str) -> int:
        with WireClient(broker.bootstrap_servers, client_id=client_id) as wire:
            return int(wire.request(create_topics_request(7, (broker.t(name), 20))).topics[0].error_code)

    assert create(special, "s1") == 0
    assert create(special, "s2") == 89
    assert create(other, "o1") == 0  # unbounded
    # <default> user + specific client-id (level 4) outranks the client-id entity (level 7).
    with broker.wire() as wire:
        assert alter_quota(wire, [("user", None), ("client-id", special)], 1000.0) == 0
        C = DescribeClientQuotasRequest.ComponentData
        default_user_special = DescribeClientQuotasRequest(
            version=1,
            components=[
                C(entity_type="user", match_type=1, match=None),
                C(entity_type="client-id", match_type=0, match=special),
            ],
            strict=True,
        )
        broker.settle(lambda: len(wire.request(default_user_special).entries) == 1)
    assert create(special, "s3") == 0
    if broker.quota is not None:
        with broker.wire() as wire:
            assert alter_quota(wire, [("ip", "127.0.0.1")], 1.0) == 42  # not a quota entity QuotaBroker models


# -- SASL/PLAIN principals ---------------------------------------------------------------------


def test_sasl_principals_get_their_own_buckets(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(
        controller_mutation_rate=10, quota_window_num=1, users={"alice": "alice-secret", "bob": "bob-secret"}
    )

    def sasl_admin(user: str, password: str) -> KafkaAdminClient:
        return kafka_python_admin(
            broker,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=user,
            sasl_plain_password=password,
        )

    alice = sasl_admin("alice", "alice-secret")
    try:
        alice.create_topics({"from-alice": {"num_partitions": 15, "replication_factor": 1}})
    finally:
        alice.close()
    assert broker.tokens(user="alice") == pytest.approx(-5, abs=1)
    assert broker.tokens(user="bob") == pytest.approx(10)
    [record] = mutations(broker)
    assert record.principal == "alice"


def test_sasl_wrong_password_is_rejected_and_the_connection_closed(any_broker: AnyBroker) -> None:
    broker = any_broker(users={"bob": "bob-secret"})
    with broker.wire() as wire:
        handshake = wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        assert handshake.error_code == 0
        assert "PLAIN" in handshake.mechanisms  # Kafka's listener also offers SCRAM; QuotaBroker only PLAIN
        response = wire.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\x00bob\x00wrong"))
        assert (response.error_code, response.error_message) == (
            SaslAuthenticationFailedError.errno,
            "Authentication failed: Invalid username or password",
        )
        assert wire.is_closed_by_peer()


def test_sasl_required_before_any_other_request(any_broker: AnyBroker) -> None:
    broker = any_broker(users={"alice": "alice-secret"})
    with broker.wire() as wire:
        wire.send(create_topics_request(7, (broker.t("sneaky"), 1)))
        assert wire.is_closed_by_peer()
    assert broker.topics() == {}


def test_confluent_kafka_authenticates_with_sasl_plain(any_broker: AnyBroker) -> None:
    broker = any_broker(users={"alice": "alice-secret"})
    admin = AdminClient(
        broker.conf(
            **{
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
            }
        )
    )
    name = broker.t("c")
    assert outcomes(admin.create_topics([NewTopic(name, 1, 1)])) == {name: 0}
    if broker.quota is not None:
        assert mutations(broker.quota)[0].principal == "alice"


# -- cluster model -----------------------------------------------------------------------------


def test_several_brokers_one_controller(quota_broker: BrokerFactory) -> None:
    """Metadata names one controller (node 0); mutations sent to any node are applied (KRaft's
    ForwardingManager), and NOT_CONTROLLER is only an injected fault (tests/test_broker_kraft.py)."""
    broker = quota_broker(num_brokers=3)
    admin = confluent_admin(broker)
    metadata = admin.list_topics(timeout=30)
    assert sorted(metadata.brokers) == [0, 1, 2]
    assert metadata.controller_id == 0
    assert outcomes(admin.create_topics([NewTopic("r3", 6, 3), NewTopic("r4", 1, 4)])) == {
        "r3": 0,
        "r4": KafkaError.INVALID_REPLICATION_FACTOR,
    }
    replicas = admin.list_topics("r3", timeout=30).topics["r3"].partitions
    assert {len(p.replicas) for p in replicas.values()} == {3}
    assert {p.leader for p in replicas.values()} == {0, 1, 2}
    non_controller = f"127.0.0.1:{broker.ports[1]}"
    with WireClient(non_controller) as wire:
        response = wire.request(create_topics_request(7, ("elsewhere", 1)))
    assert response.topics[0].error_code == 0  # forwarded to the controller, as KRaft does
    assert broker.topics()["elsewhere"] == 1


def test_delete_by_topic_id(any_broker: AnyBroker) -> None:
    broker = any_broker()
    name = broker.t("by-id")
    admin = broker.kafka_python()
    try:
        admin.create_topics({name: {"num_partitions": 2, "replication_factor": 1}})
    finally:
        admin.close()
    broker.settle(lambda: name in broker.topics())
    with broker.wire() as wire:
        metadata = wire.request(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name=name)]))
        topic_id = metadata.topics[0].topic_id
        S = DeleteTopicsRequest.DeleteTopicState
        response = wire.request(
            DeleteTopicsRequest(
                version=6,
                topics=[S(name=None, topic_id=topic_id), S(name=None, topic_id=uuid.uuid4())],
                timeout_ms=1000,
            )
        )
    assert sorted((r.name or "", r.error_code) for r in response.responses) == [("", 100), (name, 0)]  # any order
    assert broker.settled_topics({}) == {}


def test_describe_configs_shows_set_and_default_values(any_broker: AnyBroker) -> None:
    broker = any_broker()
    cfg, bad_cfg = broker.t("cfg"), broker.t("bad-cfg")
    admin = AdminClient(broker.conf())
    created = admin.create_topics([NewTopic(cfg, 1, 1, config={"retention.ms": "1000"})])
    assert outcomes(created) == {cfg: 0}
    broker.settle(lambda: cfg in broker.topics())
    [future] = admin.describe_configs([ConfigResource("topic", cfg)]).values()
    entries = future.result(30)
    assert entries["retention.ms"].value == "1000"
    assert not entries["retention.ms"].is_default
    assert entries["cleanup.policy"].value == "delete"
    assert entries["cleanup.policy"].is_default
    bad = admin.create_topics([NewTopic(bad_cfg, 1, 1, config={"no.such.config": "1"})])
    assert outcomes(bad) == {bad_cfg: KafkaError.INVALID_CONFIG}


def test_describe_client_quotas_reports_every_key(quota_broker: BrokerFactory) -> None:
    """DescribeClientQuotas returns all quota keys of each matching entity (ClientQuotaControlManager)."""
    broker = quota_broker(controller_mutation_rate=5)
    broker.set_quota(user="alice", request_percentage=25, producer_byte_rate=1_000_000)
    C = DescribeClientQuotasRequest.ComponentData
    with WireClient(broker.bootstrap_servers) as wire:
        described = wire.request(
            DescribeClientQuotasRequest(
                version=1, components=[C(entity_type="user", match_type=2, match=None)], strict=False
            )
        )
    found = {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
        for entry in described.entries
    }
    assert found == {
        (("user", None),): {"controller_mutation_rate": 5.0},
        (("user", "alice"),): {"producer_byte_rate": 1_000_000.0, "request_percentage": 25.0},
    }
