"""QuotaBroker end to end over loopback sockets, against independent clients: kafka-python 3 (strict
versions, error 89), confluent-kafka (librdkafka's v4 permissive path), and a raw wire client."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaAdminClient
from kafka.errors import SaslAuthenticationFailedError
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.topics import CreatePartitionsRequest, DeleteTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from tests.wire import WireClient, create_topics_request
from throttled_admin.testing import QuotaBroker, RequestRecord

BrokerFactory = Callable[..., QuotaBroker]
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, METADATA = 19, 20, 37, 3


def mutations(broker: QuotaBroker, api_key: int = CREATE_TOPICS) -> list[RequestRecord]:
    return [r for r in broker.request_log() if r.api_key == api_key]


def kafka_python_admin(broker: QuotaBroker, **conf: object) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=30000, **conf)


def confluent_admin(broker: QuotaBroker, **conf: object) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, **conf})


def outcomes(futures: dict[str, object], timeout_s: float = 30) -> dict[str, int]:
    out = {}
    for name, future in futures.items():
        exc = future.exception(timeout_s)  # type: ignore[attr-defined]
        out[name] = 0 if exc is None else exc.args[0].code()
    return out


# -- strict path (kafka-python sends CreateTopics v7) ------------------------------------------


def test_kafka_python_strict_partial_admission_with_error_89(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)  # burst 10
    admin = kafka_python_admin(broker)
    try:
        result = admin.create_topics(
            {
                "a": {"num_partitions": 8, "replication_factor": 1},
                "b": {"num_partitions": 8, "replication_factor": 1},
                "c": {"num_partitions": 1, "replication_factor": 1},
            },
            raise_errors=False,
        )
    finally:
        admin.close()
    errors = {t["name"]: t["error_code"] for t in result["topics"]}
    assert errors == {"a": 0, "b": 0, "c": 89}  # b admitted at K=2 >= 0, then K=-6 rejects c
    [record] = mutations(broker)
    assert record.api_version == 7
    assert record.errors == errors
    assert record.mutations == 16
    assert 500 <= record.throttle_time_ms <= 600  # round(6 / 10 * 1000) less the time since it was computed
    assert broker.topics() == {"a": 8, "b": 8}


def test_strict_vector_over_the_wire(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=10)  # R=10, B=100
    results = []
    for name in ("t1", "t2", "t3"):
        with WireClient(broker.bootstrap_servers) as wire:  # a fresh connection is never muted
            results.append(wire.request(create_topics_request(7, (name, 90))))
    assert [r.topics[0].error_code for r in results] == [0, 0, 89]
    assert results[0].throttle_time_ms == 0
    assert 7500 <= results[1].throttle_time_ms <= 8000
    assert 7500 <= results[2].throttle_time_ms <= 8000
    assert results[2].topics[0].error_message is None  # KRaft sends error 89 with a null message
    assert broker.tokens() == pytest.approx(-80, abs=10)


def test_permissive_vector_over_the_wire(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=10)
    throttles = []
    for name in ("t1", "t2", "t3"):
        with WireClient(broker.bootstrap_servers) as wire:
            response = wire.request(create_topics_request(4, (name, 90)))  # v4 < v6: permissive
            assert response.topics[0].error_code == 0
            throttles.append(response.throttle_time_ms)
    assert throttles[0] == 0
    assert 7500 <= throttles[1] <= 8000
    assert 16500 <= throttles[2] <= 17000
    assert broker.topics() == {"t1": 90, "t2": 90, "t3": 90}


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
        create = create_topics_request(7, ("t", 14))
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


def test_validate_only_is_charged_like_kraft(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)
    admin = kafka_python_admin(broker)
    try:
        admin.create_topics({"v": {"num_partitions": 20, "replication_factor": 1}}, validate_only=True)
    finally:
        admin.close()
    assert broker.topics() == {}
    [record] = mutations(broker)
    assert record.mutations == 20
    assert broker.tokens() == pytest.approx(-10, abs=1)


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


def test_invalid_topics_fail_with_kafkas_errors_and_cost_nothing(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=1000, quota_window_num=1)
    broker.create_topic("exists", 1)
    broker.create_topic("a_b", 1)
    with WireClient(broker.bootstrap_servers) as wire:
        response = wire.request(
            create_topics_request(
                7, ("exists", 1), ("bad name", 1), ("a.b", 1), ("zero", 0), ("dup", 1), ("dup", 1), ("x" * 250, 1)
            )
        )
    errors = {t.name: (t.error_code, t.error_message) for t in response.topics}
    assert len(response.topics) == 6  # one result per distinct name, as Kafka's keyed result collection
    assert errors["exists"] == (36, "Topic 'exists' already exists.")
    assert errors["bad name"][0] == 17
    assert "illegal" in errors["bad name"][1]
    assert errors["a.b"] == (17, "Topic 'a.b' collides with existing topic: a_b")
    assert errors["zero"][0] == 37
    assert errors["dup"] == (42, "Duplicate topic name.")
    assert errors["x" * 250][0] == 17
    assert "249" in errors["x" * 250][1]
    assert mutations(broker)[0].mutations == 0


def test_malformed_and_repeated_deletes_as_controller_apis(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.create_topic("foo", 1)
    S = DeleteTopicsRequest.DeleteTopicState
    with WireClient(broker.bootstrap_servers) as wire:
        metadata = wire.request(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name="foo")]))
        foo_id, other_id = metadata.topics[0].topic_id, uuid.uuid4()
        response = wire.request(
            DeleteTopicsRequest(
                version=6,
                topics=[
                    S(name=None, topic_id=uuid.UUID(int=0)),
                    S(name="foo", topic_id=foo_id),
                    S(name=None, topic_id=other_id),
                    S(name=None, topic_id=other_id),
                    S(name="quux", topic_id=uuid.UUID(int=0)),
                    S(name="quux", topic_id=uuid.UUID(int=0)),
                ],
                timeout_ms=1000,
            )
        )
        partitions = wire.request(
            CreatePartitionsRequest(
                version=3,
                topics=[CreatePartitionsRequest.CreatePartitionsTopic(name="foo", count=3, assignments=None)] * 2,
                timeout_ms=1000,
                validate_only=False,
            )
        )
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (42, "Neither topic name nor id were specified."),
        (42, "You may not specify both topic name and topic id."),
        (42, "Duplicate topic id."),
        (42, "Duplicate topic name."),
    ]
    assert [(r.name, r.error_code, r.error_message) for r in partitions.results] == [
        ("foo", 42, "Duplicate topic name.")
    ]
    assert broker.topics() == {"foo": 1}


def test_partition_errors_match_kafka(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.create_topic("t", 3)
    admin = kafka_python_admin(broker)
    try:
        result = admin.create_partitions({"t": 2, "nope": 4}, raise_errors=False)
        same = admin.create_partitions({"t": 3}, raise_errors=False)
    finally:
        admin.close()
    by_name = {r.name: (r.error_code, r.error_message) for r in result.results}
    assert by_name["t"] == (37, "The topic t currently has 3 partition(s); 2 would not be an increase.")
    assert by_name["nope"] == (3, None)
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


def test_entity_precedence_set_over_the_wire(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with WireClient(broker.bootstrap_servers, client_id="admin") as wire:
        assert alter_quota(wire, [("client-id", "special")], 1.0) == 0
        described = wire.request(
            DescribeClientQuotasRequest(
                version=1,
                components=[
                    DescribeClientQuotasRequest.ComponentData(entity_type="client-id", match_type=2, match=None)
                ],
                strict=False,
            )
        )
    [entry] = described.entries
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("client-id", "special")]
    assert entry.values[0].value == 1.0
    assert broker.tokens(client_id="special") == pytest.approx(11)  # burst = 11 windows x 1 s x 1/s
    assert broker.tokens(client_id="other") is None

    def create(client_id: str, name: str) -> int:
        with WireClient(broker.bootstrap_servers, client_id=client_id) as wire:
            return int(wire.request(create_topics_request(7, (name, 20))).topics[0].error_code)

    assert create("special", "s1") == 0
    assert create("special", "s2") == 89
    assert create("other", "o1") == 0  # unbounded
    # <default> user + specific client-id (level 4) outranks the client-id entity (level 7).
    with WireClient(broker.bootstrap_servers, client_id="admin") as wire:
        assert alter_quota(wire, [("user", None), ("client-id", "special")], 1000.0) == 0
    assert create("special", "s3") == 0
    with WireClient(broker.bootstrap_servers, client_id="admin") as wire:
        assert alter_quota(wire, [("ip", "127.0.0.1")], 1.0) == 42  # not a quota entity we model


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


def test_sasl_wrong_password_is_rejected_and_the_connection_closed(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(users={"bob": "bob-secret"})
    with WireClient(broker.bootstrap_servers) as wire:
        handshake = wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN"])
        response = wire.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\x00bob\x00wrong"))
        assert response.error_code == SaslAuthenticationFailedError.errno
        assert "wrong" not in (response.error_message or "")
        assert wire.is_closed_by_peer()


def test_sasl_required_before_any_other_request(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(users={"alice": "pw"})
    with WireClient(broker.bootstrap_servers) as wire:
        wire.send(create_topics_request(7, ("sneaky", 1)))
        assert wire.is_closed_by_peer()
    assert broker.topics() == {}


def test_confluent_kafka_authenticates_with_sasl_plain(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(users={"carol": "carol-secret"})
    admin = confluent_admin(
        broker,
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "carol",
            "sasl.password": "carol-secret",
        },
    )
    assert outcomes(admin.create_topics([NewTopic("c", 1, 1)])) == {"c": 0}
    assert mutations(broker)[0].principal == "carol"


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


def test_delete_by_topic_id(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    admin = kafka_python_admin(broker)
    try:
        admin.create_topics({"by-id": {"num_partitions": 2, "replication_factor": 1}})
    finally:
        admin.close()
    with WireClient(broker.bootstrap_servers) as wire:
        metadata = wire.request(
            MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name="by-id")])
        )
        topic_id = metadata.topics[0].topic_id
        S = DeleteTopicsRequest.DeleteTopicState
        response = wire.request(
            DeleteTopicsRequest(
                version=6,
                topics=[S(name=None, topic_id=topic_id), S(name=None, topic_id=uuid.uuid4())],
                timeout_ms=1000,
            )
        )
    assert [(r.name, r.error_code) for r in response.responses] == [("by-id", 0), (None, 100)]
    assert broker.topics() == {}


def test_describe_configs_shows_set_and_default_values(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    admin = confluent_admin(broker)
    created = admin.create_topics([NewTopic("cfg", 1, 1, config={"retention.ms": "1000"})])
    assert outcomes(created) == {"cfg": 0}
    [future] = admin.describe_configs([ConfigResource("topic", "cfg")]).values()
    entries = future.result(30)
    assert entries["retention.ms"].value == "1000"
    assert not entries["retention.ms"].is_default
    assert entries["cleanup.policy"].value == "delete"
    assert entries["cleanup.policy"].is_default
    bad = admin.create_topics([NewTopic("bad-cfg", 1, 1, config={"no.such.config": "1"})])
    assert outcomes(bad) == {"bad-cfg": KafkaError.INVALID_CONFIG}


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
