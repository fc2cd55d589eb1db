"""Bad input and fault injection: a bad connection is logged and closed; everything else keeps working. Tests
taking ``any_broker`` run on QuotaBroker and on the shared Apache Kafka 4.4; faults are QuotaBroker's."""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.either_broker import EitherBroker
from tests.support import BrokerFactory, wait_until
from tests.wire import WireClient, create_topics_request
from throttled_admin.testing import QuotaBroker, QuotaEntity

AnyBroker = Callable[..., EitherBroker]


def header(api_key: int, version: int, correlation_id: int = 1) -> bytes:
    return struct.pack(">hhi", api_key, version, correlation_id) + struct.pack(">h", 4) + b"test"


MALFORMED = {
    "absurd length": (struct.pack(">i", 2**31 - 1), "outside"),
    "negative length": (struct.pack(">i", -5), "outside"),
    "shorter than a header": (struct.pack(">i", 3) + b"abc", "outside"),
    "truncated header": (b"\x00\x00", "truncated frame header"),
    "truncated frame": (struct.pack(">i", 100) + b"x" * 10, "truncated frame (10 of 100 bytes)"),
    "unknown api key": (struct.pack(">i", 14) + header(999, 0), "unsupported API key 999"),
    "unknown version": (struct.pack(">i", 14) + header(19, 99), "unsupported version 99 of CreateTopics"),
    "garbage body": (struct.pack(">i", 30) + header(19, 7) + b"\xff" * 16, "cannot decode CreateTopics v7"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_closes_only_that_connection(
    any_broker: AnyBroker, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    broker = any_broker()
    before, after = broker.t("before"), broker.t("after")
    data, expected_log = MALFORMED[case]
    with broker.wire() as healthy:
        assert healthy.request(create_topics_request(7, (before, 1))).topics[0].error_code == 0
        with caplog.at_level(logging.WARNING, logger="throttled_admin.testing"):
            bad = broker.wire()
            bad.send_raw(data)
            if case.startswith("truncated"):
                bad.sock.shutdown(1)  # the peer gives up mid-frame
            assert bad.is_closed_by_peer()
            bad.close()
            if broker.quota is not None:
                assert wait_until(lambda: any(expected_log in r.getMessage() for r in caplog.records), 10)
        lines = [r for r in caplog.records if r.name == "throttled_admin.testing"]
        assert len(lines) == (1 if broker.quota is not None else 0), [r.getMessage() for r in lines]
        assert healthy.request(create_topics_request(7, (after, 1))).topics[0].error_code == 0
    assert broker.settled_topics({before: 1, after: 1}) == {before: 1, after: 1}


def test_unknown_api_versions_version_gets_kafkas_v0_fallback(any_broker: AnyBroker) -> None:
    """ApiVersionsRequest.getErrorResponse: an ApiVersions request of a version the broker does not know is
    answered, as v0, with UNSUPPORTED_VERSION and the versions of ApiVersions it knows, and nothing else (the
    client retries with one of them and then learns the rest)."""
    broker = any_broker()
    with broker.wire() as wire:
        request = ApiVersionsRequest(version=3, client_software_name="x", client_software_version="1")
        request.with_header(correlation_id=5, client_id="probe")
        frame = bytearray(request.encode(header=True, framed=True))
        frame[6:8] = struct.pack(">h", 127)  # a version newer than any broker knows
        wire.send_raw(bytes(frame))
        size = struct.unpack(">i", wire._read(4))[0]
        payload = wire._read(size)
    from kafka.protocol.metadata.api_versions import ApiVersionsResponse

    response = ApiVersionsResponse.decode(payload, version=0, header=True)
    assert response.error_code == 35
    assert [(k.api_key, k.min_version) for k in response.api_keys] == [(18, 0)]
    assert response.api_keys[0].max_version >= 3


def test_an_unresponsive_broker_reads_and_logs_requests_and_answers_none(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.set_unresponsive()
    with WireClient(broker.bootstrap_servers) as wire:
        wire.send(create_topics_request(7, ("ignored", 1)))
        assert wait_until(lambda: [r.api_name for r in broker.request_log()] == ["CreateTopics"], 10)
        broker.set_unresponsive(False)  # what arrives from now on is served; the first request stays unanswered
        answer = wire.request(create_topics_request(7, ("answered", 1)))
    assert [t.name for t in answer.topics] == ["answered"]
    assert broker.topics() == {"answered": 1}
    ignored, answered = broker.request_log()
    assert (ignored.responded_at, ignored.errors, ignored.correlation_id) == (None, {}, 1)
    assert answered.responded_at is not None


def test_drop_connections_and_clients_reconnect(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    assert admin.create_topics([NewTopic("one", 1, 1)])["one"].exception(30) is None
    broker.drop_connections()
    # A request in flight at the drop fails (that is the fault); once librdkafka has reconnected, all works.
    assert admin.list_topics(timeout=30).topics.keys() == {"one"}
    assert admin.create_topics([NewTopic("two", 1, 1)])["two"].exception(30) is None
    assert broker.topics() == {"one": 1, "two": 1}


def test_restart_keeps_port_topics_quota_settings_and_log_and_starts_the_buckets_fresh(
    quota_broker: BrokerFactory,
) -> None:
    """Kafka's quota sensors live in the broker's memory: a restarted one-node Kafka 4.4.0 admitted at once a
    principal that owed 30 s (tests/test_broker_nodes.py has the rest)."""
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)
    bootstrap = broker.bootstrap_servers
    with WireClient(bootstrap) as wire:
        wire.request(create_topics_request(7, ("kept", 15)))
    assert broker.tokens() == pytest.approx(-5, abs=2)
    broker.restart()
    assert broker.bootstrap_servers == bootstrap
    assert broker.topics() == {"kept": 15}
    assert broker.quotas() == {QuotaEntity(user=QuotaEntity.DEFAULT): 10}
    assert broker.tokens() == pytest.approx(10)
    with WireClient(bootstrap) as wire:
        assert wire.request(create_topics_request(7, ("later", 1))).topics[0].error_code == 0
    assert [r.errors for r in broker.request_log() if r.api_key == 19] == [{"kept": 0}, {"later": 0}]


def test_stopped_broker_refuses_connections(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    bootstrap = broker.bootstrap_servers
    broker.stop()
    with pytest.raises(ConnectionRefusedError):
        WireClient(bootstrap, timeout_s=2)
    assert not broker.running


def test_fail_next_injects_an_error_and_charges_nothing(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10)
    broker.fail_next("CreateTopics", KafkaError.POLICY_VIOLATION, count=1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    error = admin.create_topics([NewTopic("x", 5, 1)])["x"].exception(30)
    assert error is not None
    assert error.args[0].code() == KafkaError.POLICY_VIOLATION
    assert admin.create_topics([NewTopic("x", 5, 1)])["x"].exception(30) is None
    assert broker.topics() == {"x": 5}
    assert broker.tokens() == pytest.approx(105, abs=1)  # 110 - 5, plus what refilled since


def test_blackholed_request_is_processed_but_never_answered(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.blackhole_next(19)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    error = admin.create_topics([NewTopic("lost", 1, 1)], request_timeout=1.0)["lost"].exception(30)
    assert error is not None
    assert error.args[0].code() == KafkaError._TIMED_OUT
    [record] = [r for r in broker.request_log() if r.api_key == 19]
    assert record.responded_at is None
    assert broker.topics() == {"lost": 1}  # processed: the classic timed-out-but-created case


def test_blackhole_next_signals_when_its_last_request_is_swallowed(quota_broker: BrokerFactory) -> None:
    """The event ``blackhole_next`` returns is set once the last of its ``count`` requests is processed and left
    unanswered, not before: a test waits on it instead of polling the request log."""
    broker = quota_broker()
    swallowed = broker.blackhole_next("CreateTopics", 2)
    with WireClient(broker.bootstrap_servers) as wire:
        wire.send(create_topics_request(7, ("first", 1)))
        wire.request(MetadataRequest(version=12, topics=None))  # served after the first create: it was handled
        assert not swallowed.is_set()
        wire.send(create_topics_request(7, ("second", 1)))
        assert swallowed.wait(10)
        assert broker.topics() == {"first": 1, "second": 1}  # processed before the event
        assert wire.request(create_topics_request(7, ("third", 1))).topics[0].error_code == 0  # the next is answered
    assert [r.responded_at is None for r in broker.request_log() if r.api_key == 19] == [True, True, False]


def test_latency_delays_every_response(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.set_latency(0.3)
    with WireClient(broker.bootstrap_servers) as wire:
        wire.request(MetadataRequest(version=12, topics=None))
    [record] = broker.request_log()
    assert record.responded_at is not None
    assert record.responded_at - record.received_at >= 0.29
    with pytest.raises(ValueError, match=">= 0"):
        broker.set_latency(-1)


def test_constructor_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="enforcement"):
        QuotaBroker(enforcement="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_brokers"):
        QuotaBroker(num_brokers=0)
    with pytest.raises(ValueError, match="must be greater than 0"):
        QuotaBroker(controller_mutation_rate=0)
    with pytest.raises(ValueError, match="room"):
        QuotaBroker(port=65535, num_brokers=2)
    # The counts are ints, said alike (a window of 2.5 or True was taken, and said otherwise than the other counts)
    for name in ("num_brokers", "quota_window_num", "request_quota_window_num"):
        for value in (0, 2.5, True, "3"):
            settings: dict[str, Any] = {name: value}
            with pytest.raises(ValueError, match=f"^{name} must be an int >= 1, got {value!r}$"):
                QuotaBroker(**settings)


def test_stopping_while_clients_connect_leaks_no_socket() -> None:
    """CPython 3.11's asyncio leaks an accepted socket when a Server is closed between the accept and the
    transport's creation; the broker must stop accepting first. A leak fails this test (unraisable
    ResourceWarning, turned into an error by the suite's warning filters)."""
    import gc
    import socket

    for round_ in range(60):
        broker = QuotaBroker().start()
        for _ in range(round_ % 4):
            socket.create_connection(("127.0.0.1", broker.ports[0]), timeout=5).close()
        broker.stop()
    gc.collect()


# -- bad settings and bad quota values -----------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0.0])
def test_nan_infinite_and_non_positive_quotas_are_refused_from_the_constructor_and_set_quota(value: float) -> None:
    """Kafka 4.4's ClientQuotaControlManager.validateQuotaKeyValue refuses NaN and infinity ("Quota <key> must
    be a finite number") and values <= 0 ("Quota <key> must be greater than 0"); so do QuotaBroker's
    constructor and set_quota."""
    with pytest.raises(ValueError, match="controller_mutation_rate"):
        QuotaBroker(controller_mutation_rate=value)
    with pytest.raises(ValueError, match="request_percentage"):
        QuotaBroker(request_percentage=value)
    broker = QuotaBroker(controller_mutation_rate=5)
    with pytest.raises(ValueError, match="controller_mutation_rate"):
        broker.set_quota(user="alice", controller_mutation_rate=value)
    with pytest.raises(ValueError, match="producer_byte_rate"):
        broker.set_quota(user="alice", controller_mutation_rate=1, producer_byte_rate=value)
    assert broker.client_quotas() == {QuotaEntity(user=QuotaEntity.DEFAULT): {"controller_mutation_rate": 5.0}}


def alter(wire: WireClient, entity: list[tuple[str, str | None]], *ops: tuple[str, float | None]) -> tuple[int, str]:
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest

    E = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        version=1,
        entries=[
            E(
                entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[E.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops],
            )
        ],
        validate_only=False,
    )
    [entry] = wire.request(request).entries
    return int(entry.error_code), entry.error_message


def quotas_of(wire: WireClient, user: str) -> dict[str, float]:
    """DescribeClientQuotas of exactly this user entity: its keys and values."""
    from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest

    C = DescribeClientQuotasRequest.ComponentData
    request = DescribeClientQuotasRequest(
        version=1, components=[C(entity_type="user", match_type=0, match=user)], strict=True
    )
    return {v.key: v.value for entry in wire.request(request).entries for v in entry.values}


def test_alter_client_quotas_validates_keys_and_values_as_kafka(any_broker: AnyBroker) -> None:
    """ClientQuotaControlManager.validateQuotaKeyValue: INVALID_REQUEST (42) with Kafka's messages for an
    unknown key, a value that is not finite (NaN or infinite, whatever the key), a value <= 0, a fractional
    byte rate or one too large for a LONG; an entry with an error changes nothing. The user is the test's own."""
    broker = any_broker()
    name = f"{broker.client_id}-user"
    user: list[tuple[str, str | None]] = [("user", name)]
    with broker.wire() as wire:
        for key, value in [
            ("controller_mutation_rate", float("nan")),
            ("request_percentage", float("inf")),
            ("producer_byte_rate", float("inf")),
            ("controller_mutation_rate", float("-inf")),
        ]:
            assert alter(wire, user, (key, value)) == (42, f"Quota {key} must be a finite number")
        assert alter(wire, user, ("controller_mutation_rate", 0.0)) == (
            42,
            "Quota controller_mutation_rate must be greater than 0",
        )
        assert alter(wire, user, ("producer_byte_rate", 1.5)) == (
            42,
            "producer_byte_rate cannot be a fractional value.",
        )
        assert alter(wire, user, ("producer_byte_rate", 1e30)) == (
            42,
            "Proposed value for producer_byte_rate is too large for a LONG.",
        )
        assert alter(wire, user, ("no_such_quota", 1.0)) == (42, "Invalid configuration key no_such_quota")
        # all or nothing: the valid key of a failing entry is not applied either
        assert alter(wire, user, ("request_percentage", 50.0), ("consumer_byte_rate", -1.0)) == (
            42,
            "Quota consumer_byte_rate must be greater than 0",
        )
        assert quotas_of(wire, name) == {}
        assert alter(wire, [("user", "")], ("request_percentage", 1.0)) == (42, "Empty user not supported")
        assert alter(wire, user, *[(k, 10.0) for k in ("producer_byte_rate", "consumer_byte_rate")])[0] == 0
        assert alter(wire, user, ("request_percentage", 25.0), ("controller_mutation_rate", 2.5))[0] == 0
        assert alter(wire, user, ("producer_byte_rate", None), ("no_such_quota", None))[0] == 0  # removals
        expected = {"consumer_byte_rate": 10.0, "request_percentage": 25.0, "controller_mutation_rate": 2.5}
        broker.settle(lambda: quotas_of(wire, name) == expected)
        assert quotas_of(wire, name) == expected
    if broker.quota is not None:
        assert broker.quota.client_quotas() == {QuotaEntity(user=name): expected}


def test_fail_metadata_next_sets_the_top_level_error_of_metadata_v13(quota_broker: BrokerFactory) -> None:
    """KIP-1102's top-level error_code (v13): the answer as a whole is refused, with no brokers and no topics;
    an earlier version, which has no such field, neither carries nor consumes it."""
    broker = quota_broker()
    broker.create_topic("x", 1)
    wanted = [MetadataRequest.MetadataRequestTopic(name="x")]
    broker.fail_metadata_next(129)  # REBOOTSTRAP_REQUIRED
    with WireClient(broker.bootstrap_servers) as wire:
        old = wire.request(MetadataRequest(version=12, topics=wanted, allow_auto_topic_creation=False))
        refused = wire.request(MetadataRequest(version=13, topics=wanted, allow_auto_topic_creation=False))
        again = wire.request(MetadataRequest(version=13, topics=wanted, allow_auto_topic_creation=False))
    assert [t.name for t in old.topics] == ["x"]
    assert old.brokers
    assert (refused.error_code, refused.brokers, refused.topics) == (129, [], [])
    assert again.error_code == 0
    assert [t.name for t in again.topics] == ["x"]
    assert again.brokers


def test_fault_injection_arguments_are_checked(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with pytest.raises(ValueError, match="error_code 0"):
        broker.fail_metadata_next(0)
    with pytest.raises(ValueError, match="count"):
        broker.fail_metadata_next(129, count=0)
    with pytest.raises(ValueError, match="error_code 0"):
        broker.fail_next("CreateTopics", 0)
    with pytest.raises(ValueError, match="count"):
        broker.fail_next("CreateTopics", 41, count=0)
    with pytest.raises(ValueError, match="count"):
        broker.fail_next("CreateTopics", 41, count=-2)
    with pytest.raises(ValueError, match="count"):
        broker.blackhole_next("CreateTopics", -1)
    with pytest.raises(ValueError, match="count"):
        broker.blackhole_next(19, 0)
    with pytest.raises(ValueError, match="unknown Kafka API"):
        broker.fail_next("CreateTopic", 41)
    with pytest.raises(ValueError, match="message"):
        broker.fail_next("CreateTopics", 41, message=b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="latency"):
        broker.set_latency(float("nan"))
    # nothing was queued by the refused calls
    with WireClient(broker.bootstrap_servers) as wire:
        assert wire.request(create_topics_request(7, ("fine", 1))).topics[0].error_code == 0


def test_request_log_is_capped_and_keeps_the_newest(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(request_log_limit=5)
    with WireClient(broker.bootstrap_servers) as wire:
        for i in range(4):
            wire.request(create_topics_request(7, (f"before-{i}", 1)))
    broker.restart()
    with WireClient(broker.bootstrap_servers) as wire:
        for i in range(4):
            wire.request(create_topics_request(7, (f"after-{i}", 1)))
    log = broker.request_log()
    assert [list(r.errors) for r in log] == [["before-3"], ["after-0"], ["after-1"], ["after-2"], ["after-3"]]
    with pytest.raises(ValueError, match="request_log_limit"):
        QuotaBroker(request_log_limit=0)


def test_request_log_records_what_a_mutation_asked_of_the_controller(quota_broker: BrokerFactory) -> None:
    """Each mutation's timeout_ms (the controller's deadline) and validate_only, as the client sent them: what a
    client test checks that its settings reached the wire by."""
    from kafka.protocol.admin.topics import DeleteTopicsRequest

    broker = quota_broker()
    broker.create_topic("doomed", 1)
    with WireClient(broker.bootstrap_servers) as wire:
        wire.request(create_topics_request(7, ("checked", 1), validate_only=True))
        wire.request(DeleteTopicsRequest(version=4, topic_names=["doomed"], timeout_ms=1234))
        wire.request(MetadataRequest(version=1, topics=None))
    checked, deleted, metadata = broker.request_log()
    assert (checked.api_name, checked.timeout_ms, checked.validate_only) == ("CreateTopics", 30000, True)
    assert (deleted.api_name, deleted.timeout_ms, deleted.validate_only) == ("DeleteTopics", 1234, None)
    assert (metadata.api_name, metadata.timeout_ms, metadata.validate_only) == ("Metadata", None, None)
    assert broker.topics() == {}  # validated only; deleted


# -- SASL as Kafka's PlainSaslServer and SaslServerAuthenticator ---------------------------------


def sasl(wire: WireClient, auth: bytes) -> tuple[int, str | None]:
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    assert wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN")).error_code == 0
    response = wire.request(SaslAuthenticateRequest(version=2, auth_bytes=auth))
    return int(response.error_code), response.error_message


def test_a_listener_without_sasl_answers_sasl_requests_with_illegal_sasl_state(any_broker: AnyBroker) -> None:
    """KafkaApis.handleSaslHandshakeRequest / handleSaslAuthenticateRequest: a listener without SASL answers
    ILLEGAL_SASL_STATE (34) and keeps the connection; a SASL listener answers a mechanism it does not offer with
    UNSUPPORTED_SASL_MECHANISM (33) and the ones it does (QuotaBroker: PLAIN only)."""
    from kafka.protocol.metadata import MetadataRequest
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    broker = any_broker()
    with broker.wire() as wire:
        handshake = wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        assert (handshake.error_code, list(handshake.mechanisms)) == (34, [])
        authenticate = wire.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\x00a\x00b"))
        assert authenticate.error_code == 34
        assert authenticate.error_message == "SaslAuthenticate request received after successful authentication"
        assert wire.request(MetadataRequest(version=1, topics=[])).brokers  # still open
    sasl_broker = any_broker(users={"alice": "alice-secret"})
    with sasl_broker.wire() as wire:
        handshake = wire.request(SaslHandshakeRequest(version=1, mechanism="GSSAPI"))
        assert handshake.error_code == 33
        assert "PLAIN" in handshake.mechanisms
        if sasl_broker.quota is not None:
            assert list(handshake.mechanisms) == ["PLAIN"]


def test_sasl_plain_authorization_id_must_be_the_user(any_broker: AnyBroker) -> None:
    """PlainSaslServer.evaluateResponse: an authorization id different from the user is refused. A successful
    SaslAuthenticate carries the error message '' (SaslAuthenticateResponseData's default), not null."""
    broker = any_broker(users={"alice": "alice-secret", "bob": "bob-secret"})
    with broker.wire() as wire:
        code, message = sasl(wire, b"bob\x00alice\x00alice-secret")
        assert code == 58
        assert message == "Authentication failed: Client requested an authorization id that is different from username"
        assert wire.is_closed_by_peer()
    with broker.wire() as wire:
        assert sasl(wire, b"alice\x00alice\x00alice-secret") == (0, "")  # the same id is fine
    with broker.wire() as wire:
        assert sasl(wire, b"\x00alice") == (58, "Invalid SASL/PLAIN response: expected 3 tokens, got 2")


def test_sasl_reauthentication_cannot_change_the_principal(quota_broker: BrokerFactory) -> None:
    """SaslServerAuthenticator.ReauthInfo.ensurePrincipalUnchanged, with re-authentication on
    (connections.max.reauth.ms > 0): re-authenticating on the same connection as another user fails and closes
    the connection; re-authenticating as the same user is allowed."""
    broker = quota_broker(
        users={"alice": "alice-pw", "bob": "bob-pw"}, broker_configs={"connections.max.reauth.ms": "3600000"}
    )
    with WireClient(broker.bootstrap_servers) as wire:
        assert sasl(wire, b"\x00alice\x00alice-pw") == (0, "")
        assert sasl(wire, b"\x00alice\x00alice-pw") == (0, "")
        assert wire.request(create_topics_request(7, ("by-alice", 1))).topics[0].error_code == 0
        code, message = sasl(wire, b"\x00bob\x00bob-pw")
        assert code == 58
        assert message == "Cannot change principals during re-authentication from User.alice: User.bob"
        assert wire.is_closed_by_peer()
    assert {r.principal for r in broker.request_log() if r.api_key == 19} == {"alice"}


def test_without_reauthentication_a_second_sasl_exchange_is_refused_and_the_connection_kept(
    quota_broker: BrokerFactory,
) -> None:
    """Kafka's default connections.max.reauth.ms = 0: once authenticated, SaslHandshake and SaslAuthenticate are
    KafkaApis' requests, answered ILLEGAL_SASL_STATE (no mechanisms listed) on a connection that stays open
    (Kafka 4.4.0 does so: the differential suite's sasl scenario)."""
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    broker = quota_broker(users={"alice": "alice-pw"})
    with WireClient(broker.bootstrap_servers) as wire:
        assert sasl(wire, b"\x00alice\x00alice-pw") == (0, "")
        handshake = wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        assert (handshake.error_code, list(handshake.mechanisms)) == (34, [])
        authenticate = wire.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\x00alice\x00alice-pw"))
        assert authenticate.error_code == 34
        assert authenticate.error_message == "SaslAuthenticate request received after successful authentication"
        assert wire.request(create_topics_request(7, ("still-open", 1))).topics[0].error_code == 0
    assert broker.topics() == {"still-open": 1}


def test_fuzzed_frames_never_take_the_broker_down(caplog: pytest.LogCaptureFixture) -> None:
    """Random bodies behind valid headers for every API and version: each connection is either answered or
    closed with one warning; no handler raises, and the broker keeps serving everyone else."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from throttled_admin.testing._handlers import API_SPECS

    apis = st.sampled_from(sorted(API_SPECS)).flatmap(
        lambda key: st.tuples(
            st.just(key), st.integers(API_SPECS[key].min_version, API_SPECS[key].max_version), st.binary(max_size=48)
        )
    )
    with QuotaBroker(users=None) as broker, caplog.at_level(logging.WARNING, logger="throttled_admin.testing"):

        @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(apis)
        def one_frame(case: tuple[int, int, bytes]) -> None:
            api_key, version, body = case
            frame = header(api_key, version) + body
            with WireClient(broker.bootstrap_servers, timeout_s=10) as wire:
                wire.send_raw(struct.pack(">i", len(frame)) + frame)
                try:
                    size = struct.unpack(">i", wire._read(4))[0]
                    wire._read(size)
                except ConnectionError:
                    pass  # closed by the broker: a refused frame

        one_frame()
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == []
        with WireClient(broker.bootstrap_servers) as healthy:
            assert healthy.request(create_topics_request(7, ("still-alive", 1))).topics[0].error_code == 0


def test_a_port_in_use_fails_start_cleanly() -> None:
    """start() on a port already in use raises OSError and leaves no thread or socket behind (a leak is a
    ResourceWarning, an error under the suite's warning filters); the same object can start elsewhere."""
    import gc
    import socket
    import threading

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        threads_before = threading.active_count()
        broker = QuotaBroker(port=port)
        with pytest.raises(OSError, match="address already in use"):
            broker.start()
        assert not broker.running
        assert threading.active_count() == threads_before
    with pytest.raises(ValueError, match="request_time_cost_ms must be a finite number of milliseconds"):
        QuotaBroker(request_time_cost_ms=-5)
    gc.collect()


def test_a_response_lost_to_a_dropped_connection_is_not_logged_as_answered(quota_broker: BrokerFactory) -> None:
    """A response held by set_latency when drop_connections() closes its connection is never delivered:
    the request log keeps responded_at None (the mutation itself was applied)."""
    broker = quota_broker()
    broker.set_latency(0.5)
    wire = WireClient(broker.bootstrap_servers)
    try:
        wire.send(create_topics_request(7, ("held", 1)))
        assert wait_until(lambda: bool(broker.request_log()), 10)
        broker.drop_connections()
        assert wire.is_closed_by_peer()
    finally:
        wire.close()
    assert wait_until(lambda: broker.open_connections() == 0, 10)  # past the latency: the handler is done with it
    [record] = broker.request_log()
    assert record.errors == {"held": 0}
    assert record.responded_at is None
    assert broker.topics() == {"held": 1}


def test_open_connections_counts_a_closed_connection_until_its_request_is_handled(quota_broker: BrokerFactory) -> None:
    """open_connections(): an open connection counts; a closed one (by the client, or dropped by the broker) still
    counts while the controller handles a request that came on it (held here), and stops counting once the request
    is applied."""
    broker = quota_broker()
    assert broker.open_connections() == 0
    for closing in ("client", "broker"):
        wire = WireClient(broker.bootstrap_servers)
        try:
            assert wait_until(lambda: broker.open_connections() == 1, 10)
            held = broker.hold_controller_next(2.0)
            wire.send(create_topics_request(7, (closing, 1)))
            assert held.wait(10)  # the controller holds the create
            if closing == "broker":
                broker.drop_connections()
        finally:
            wire.close()
        assert broker.open_connections() == 1, closing  # closed, but its create is not yet handled
        assert closing not in broker.topics()
        assert wait_until(lambda: broker.open_connections() == 0, 10)
        assert broker.topics()[closing] == 1


# -- garbled and late answers (garble_next, delay_next) --------------------------------------------


def mutation_request(api: str, *names: str) -> object:
    """A two-topic (or more) mutation of each kind, in the versions librdkafka sends."""
    from kafka.protocol.admin.topics import CreatePartitionsRequest, DeleteTopicsRequest

    if api == "CreateTopics":
        return create_topics_request(4, *[(name, 2) for name in names])
    if api == "DeleteTopics":
        return DeleteTopicsRequest(version=4, topic_names=list(names), timeout_ms=30000)
    P = CreatePartitionsRequest.CreatePartitionsTopic
    topics = [P(name=name, count=3, assignments=None) for name in names]
    return CreatePartitionsRequest(version=2, topics=topics, timeout_ms=30000, validate_only=False)


def result_names(api: str, response: object) -> list[tuple[str, int]]:
    field = {"CreateTopics": "topics", "DeleteTopics": "responses", "CreatePartitions": "results"}[api]
    return [(r.name, r.error_code) for r in getattr(response, field)]


GARBLED_RESULTS = {
    "drop-last": [("a", 0)],
    "add": [("a", 0), ("b", 0), ("garbled-unrequested", 0)],
    "double": [("a", 0), ("b", 0), ("b", 0)],
}
TOPICS_AFTER = {
    "CreateTopics": {"a": 2, "b": 2},
    "DeleteTopics": {"c": 2},
    "CreatePartitions": {"a": 3, "b": 3, "c": 2},
}


@pytest.mark.parametrize("how", sorted(GARBLED_RESULTS))
@pytest.mark.parametrize("api", ["CreateTopics", "DeleteTopics", "CreatePartitions"])
def test_garble_next_alters_only_the_response(quota_broker: BrokerFactory, api: str, how: str) -> None:
    """The request is applied and charged as usual (the log's ``errors`` and ``mutations`` say what the broker
    did); only the response's per-topic results are altered, for ``count`` requests, and the log says how."""
    broker = quota_broker(controller_mutation_rate=100)
    if api != "CreateTopics":
        for name in ("a", "b", "c"):
            broker.create_topic(name, 2)
    started = time.monotonic()
    tokens_before = broker.tokens()
    assert tokens_before is not None
    broker.garble_next(api, how)
    with WireClient(broker.bootstrap_servers) as wire:
        garbled = wire.request(mutation_request(api, "a", "b"))
        assert result_names(api, garbled) == GARBLED_RESULTS[how]
        assert broker.topics() == TOPICS_AFTER[api]
        # consumed: the next request of that API gets a true answer
        assert result_names(api, wire.request(mutation_request(api, "c"))) == [("c", 0)]
    first, second = [r for r in broker.request_log() if r.api_name == api]
    assert (first.garbled, second.garbled) == (how, None)
    assert first.errors == {"a": 0, "b": 0}  # what the broker did, not what it answered
    assert first.mutations == {"CreateTopics": 4, "DeleteTopics": 4, "CreatePartitions": 2}[api]
    assert first.responded_at is not None
    # Charged for both, less what the bucket refilled meanwhile (at 100/s: bounded by the time that passed,
    # which a loaded machine stretches).
    tokens_after, elapsed_s = broker.tokens(), time.monotonic() - started
    charged = tokens_before - first.mutations - second.mutations
    assert tokens_after is not None
    assert charged - 1e-6 <= tokens_after <= charged + 100 * elapsed_s + 1e-6


def test_garble_next_count_and_apis_are_counted_apart(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.garble_next(19, "double", count=2)
    broker.garble_next("DeleteTopics", "add")
    with WireClient(broker.bootstrap_servers) as wire:
        for name in ("x", "y", "z"):
            wire.request(create_topics_request(7, (name, 1)))
    assert [r.garbled for r in broker.request_log()] == ["double", "double", None]


def test_an_unrequested_result_never_takes_a_requested_name(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.garble_next("CreateTopics", "add")
    with WireClient(broker.bootstrap_servers) as wire:
        response = wire.request(create_topics_request(7, ("garbled-unrequested", 1)))
    assert result_names("CreateTopics", response) == [("garbled-unrequested", 0), ("garbled-unrequested-1", 0)]
    assert broker.topics() == {"garbled-unrequested": 1}


def test_librdkafka_fails_every_topic_of_a_garbled_answer_though_the_broker_applied_them(
    quota_broker: BrokerFactory,
) -> None:
    """What confluent-kafka 2.16 makes of each garble (the behaviour a client on top of it must handle): an
    extra or doubled result fails every topic with _BAD_MSG; a missing last result leaves that topic's future
    unresolved (the others resolve)."""
    broker = quota_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for how in ("add", "double"):
        broker.garble_next("CreateTopics", how)
        futures = admin.create_topics([NewTopic(f"{how}-1", 1, 1), NewTopic(f"{how}-2", 1, 1)])
        for future in futures.values():
            error = future.exception(30)
            assert error is not None
            assert error.args[0].code() == KafkaError._BAD_MSG
    broker.garble_next("CreateTopics", "drop-last")
    futures = admin.create_topics([NewTopic("kept-1", 1, 1), NewTopic("kept-2", 1, 1)], request_timeout=1.0)
    assert futures["kept-1"].exception(30) is None
    with pytest.raises(TimeoutError):
        futures["kept-2"].exception(2.5)  # past librdkafka's request timeout: it never completes it
    assert broker.topics() == dict.fromkeys(("add-1", "add-2", "double-1", "double-2", "kept-1", "kept-2"), 1)


def test_delay_next_applies_at_once_and_answers_late(quota_broker: BrokerFactory) -> None:
    """The mutation is applied when the request arrives; its answer waits ``seconds`` on top of set_latency.
    Other connections are answered meanwhile, and the next request of that API is not delayed."""
    import select

    broker = quota_broker()
    broker.set_latency(0.1)
    broker.delay_next("CreateTopics", 0.6)
    with WireClient(broker.bootstrap_servers) as wire, WireClient(broker.bootstrap_servers) as other:
        request = create_topics_request(7, ("late", 1))
        wire.send(request)
        assert wait_until(lambda: "late" in broker.topics(), 10)
        readable, _, _ = select.select([wire.sock], [], [], 0)
        assert readable == []  # applied, not yet answered
        assert other.request(MetadataRequest(version=12, topics=None)).brokers  # answered meanwhile
        assert wire.receive(request).topics[0].error_code == 0
        wire.request(create_topics_request(7, ("prompt", 1)))
    late, metadata, prompt = broker.request_log()
    assert (late.delay_s, metadata.delay_s, prompt.delay_s) == (0.6, 0.0, 0.0)
    assert late.responded_at is not None
    assert prompt.responded_at is not None
    assert late.responded_at - late.received_at >= 0.69
    assert prompt.responded_at - prompt.received_at < 0.6
    assert [r.api_name for r in (late, metadata, prompt)] == ["CreateTopics", "Metadata", "CreateTopics"]


def test_a_delayed_answer_lost_to_a_dropped_connection_is_not_logged_as_answered(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.delay_next(20, 30)
    broker.create_topic("doomed")
    with WireClient(broker.bootstrap_servers) as wire:
        wire.send(mutation_request("DeleteTopics", "doomed"))
        assert wait_until(lambda: broker.topics() == {}, 10)
        broker.drop_connections()
        assert wire.is_closed_by_peer()
    [record] = broker.request_log()
    assert record.responded_at is None
    assert record.delay_s == 30


def test_garble_and_delay_arguments_are_checked(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with pytest.raises(ValueError, match="how must be one of"):
        broker.garble_next("CreateTopics", "drop-first")
    with pytest.raises(ValueError, match=r"not Metadata \(3\)$"):  # (helper 106: "not 3", the API by number only)
        broker.garble_next("Metadata", "add")
    with pytest.raises(ValueError, match="count"):
        broker.garble_next(19, "add", count=0)
    with pytest.raises(ValueError, match="unknown Kafka API"):
        broker.garble_next("CreateTopic", "add")
    for bad in (-1, float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match="delay"):
            broker.delay_next("CreateTopics", bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="count"):
        broker.delay_next("CreateTopics", 1, count=-1)
    # nothing was queued by the refused calls
    with WireClient(broker.bootstrap_servers) as wire:
        assert result_names("CreateTopics", wire.request(create_topics_request(7, ("fine", 1)))) == [("fine", 0)]
    [record] = broker.request_log()
    assert (record.garbled, record.delay_s) == (None, 0.0)


def test_a_slow_policy_applies_after_the_deadline_and_holds_the_controller(quota_broker: BrokerFactory) -> None:
    """slow_policy: the controller checks a request's deadline when it begins (KRaft times out only an event still
    queued), then takes its time over each matching topic and applies it all the same; a second connection's
    mutation to the same broker waits in that broker's forwarding channel (one request at a time, as KRaft's
    NodeToControllerChannelManager) and its deadline starts when the controller receives it: applied, as Kafka 4.4
    applies it (docs/testing-broker.md, "Held to Apache Kafka 4.4.0")."""
    broker = quota_broker()
    broker.slow_policy("slow-", 0.6)
    with WireClient(broker.bootstrap_servers) as wire, WireClient(broker.bootstrap_servers) as other:
        slow = create_topics_request(7, ("fast-a", 1), ("slow-a", 1), timeout_ms=200)
        wire.send(slow)
        assert wait_until(lambda: "fast-a" in broker.topics(), 10)  # applied; the policy now holds the controller
        queued = create_topics_request(7, ("fast-b", 1), timeout_ms=100)  # its deadline passes behind the policy
        other.send(queued)
        answer = wire.receive(slow)
        assert [t.error_code for t in answer.topics] == [0, 0]  # applied though its 200 ms deadline had passed
        assert other.receive(queued).topics[0].error_code == 0  # its 100 ms began at the controller
    assert set(broker.topics()) == {"slow-a", "fast-a", "fast-b"}
    first, _ = broker.request_log()
    assert first.responded_at is not None
    assert first.responded_at - first.received_at >= 0.6
    broker.slow_policy("slow-", 0)
    with pytest.raises(ValueError, match="policy latency"):
        broker.slow_policy("x", -1)
