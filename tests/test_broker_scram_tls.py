"""QuotaBroker's SASL/SCRAM-SHA-256/512 (``sasl_mechanisms``) and TLS listeners (``ssl_context``), checked with
independent clients: confluent-kafka (librdkafka) and kafka-python over real loopback sockets. Kafka's messages:
``ScramSaslServer`` and ``SaslServerAuthenticator`` (a SCRAM refusal names only the phase and the mechanism)."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KafkaPythonTopic
from kafka.protocol.sasl import SaslHandshakeRequest

from tests.support import BrokerFactory, Conf
from tests.tls_helpers import make_tls
from tests.wire import WireClient
from throttled_admin.testing import QuotaBroker

SCRAM = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


def scram_conf(broker: QuotaBroker, mechanism: str, password: str, **extra: str) -> Conf:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
        **extra,
    }


@pytest.mark.parametrize("mechanism", SCRAM)
def test_confluent_kafka_authenticates_with_scram(quota_broker: BrokerFactory, mechanism: str) -> None:
    broker = quota_broker(users={"alice": "alice-secret"}, sasl_mechanisms=[mechanism])
    admin = AdminClient(scram_conf(broker, mechanism, "alice-secret"))
    assert admin.create_topics([NewTopic("by-scram", 1, 1)])["by-scram"].exception(30) is None
    assert {r.principal for r in broker.request_log() if r.api_name == "CreateTopics"} == {"alice"}


@pytest.mark.parametrize("mechanism", SCRAM)
def test_a_wrong_scram_password_gets_kafkas_generic_refusal(quota_broker: BrokerFactory, mechanism: str) -> None:
    broker = quota_broker(users={"alice": "alice-secret"}, sasl_mechanisms=[mechanism])
    errors: list[KafkaError] = []
    admin = AdminClient(scram_conf(broker, mechanism, "not-it", error_cb=errors.append))  # type: ignore[arg-type]
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(0.5)  # librdkafka's error callbacks are served by poll()
    expected = f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    assert any(expected in error.str() for error in errors), [e.str() for e in errors]
    assert not any("not-it" in error.str() or "alice-secret" in error.str() for error in errors)
    assert not [r for r in broker.request_log() if r.api_name == "Metadata"]


def test_kafka_python_authenticates_with_scram_sha_512(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(users={"bob": "bob-secret"}, sasl_mechanisms=["PLAIN", "SCRAM-SHA-512"])
    admin = KafkaAdminClient(
        bootstrap_servers=broker.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="bob",
        sasl_plain_password="bob-secret",
        request_timeout_ms=30000,
    )
    try:
        admin.create_topics([KafkaPythonTopic("by-bob", 1, 1)])
    finally:
        admin.close()
    assert broker.topics() == {"by-bob": 1}
    assert {r.principal for r in broker.request_log() if r.api_name == "CreateTopics"} == {"bob"}


def test_the_handshake_offers_the_enabled_mechanisms(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(users={"alice": "pw"}, sasl_mechanisms=["SCRAM-SHA-256", "SCRAM-SHA-512"])
    with WireClient(broker.bootstrap_servers) as wire:
        handshake = wire.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"))
        assert (handshake.error_code, list(handshake.mechanisms)) == (33, ["SCRAM-SHA-256", "SCRAM-SHA-512"])
    with pytest.raises(ValueError, match="sasl_mechanisms"):
        QuotaBroker(users={"alice": "pw"}, sasl_mechanisms=["GSSAPI"])


@pytest.mark.parametrize("sasl", [False, True], ids=["ssl", "sasl_ssl"])
def test_confluent_kafka_over_a_tls_listener(quota_broker: BrokerFactory, tmp_path: Path, sasl: bool) -> None:
    tls = make_tls(tmp_path)
    users = {"alice": "alice-secret"} if sasl else None
    broker = quota_broker(ssl_context=tls.server_context(), users=users, sasl_mechanisms=["SCRAM-SHA-256"])
    conf: Conf = {"bootstrap.servers": broker.bootstrap_servers, **tls.client_conf()}
    if sasl:
        conf |= scram_conf(broker, "SCRAM-SHA-256", "alice-secret", **{"security.protocol": "SASL_SSL"})
    else:
        conf["security.protocol"] = "SSL"
    admin = AdminClient(conf)
    assert admin.create_topics([NewTopic("over-tls", 1, 1)])["over-tls"].exception(30) is None
    assert broker.topics() == {"over-tls": 1}
