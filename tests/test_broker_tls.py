"""QuotaBroker's TLS listener (``ssl_context``): TLS clients of both Kafka libraries are served over it, with and
without SASL, and a client that does not speak TLS is closed after a log line, as Kafka's SSL listener does.
Certificates from trustme."""

from __future__ import annotations

import logging
import socket
import ssl
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support import BrokerFactory, Conf, wait_until
from tests.wire import parse_bootstrap
from throttled_admin.testing import QuotaBroker

PASSWORD = "Pw-broker-tls-2c7"


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_confluent_kafka_creates_a_topic_over_tls(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], protocol: str
) -> None:
    users = {"alice": PASSWORD} if protocol == "SASL_SSL" else None
    broker = quota_broker(ssl_context=tls[0], users=users)
    assert broker.security_protocol == protocol
    conf: Conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": protocol,
        "ssl.ca.location": str(tls[1]),
    }
    if users:
        conf.update({"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": PASSWORD})
    admin = AdminClient(conf)
    assert admin.create_topics([NewTopic("t", 2, 1)])["t"].exception(30) is None
    assert broker.topics() == {"t": 2}
    principal = "alice" if users else "ANONYMOUS"
    assert [r.principal for r in broker.request_log() if r.api_name == "CreateTopics"] == [principal]


def test_kafka_python_creates_a_topic_over_tls(quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic as KNewTopic

    broker = quota_broker(ssl_context=tls[0])
    admin = KafkaAdminClient(
        bootstrap_servers=broker.bootstrap_servers, security_protocol="SSL", ssl_cafile=str(tls[1])
    )
    try:
        admin.create_topics([KNewTopic("kp", 3, 1)])
    finally:
        admin.close()
    assert broker.topics() == {"kp": 3}


def test_a_client_that_does_not_speak_tls_is_logged_and_closed(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], caplog: pytest.LogCaptureFixture
) -> None:
    broker = quota_broker(ssl_context=tls[0])
    with caplog.at_level(logging.WARNING, logger="throttled_admin.testing"):
        with socket.create_connection(parse_bootstrap(broker.bootstrap_servers), timeout=10) as sock:
            sock.sendall(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00")  # ApiVersions v0, in plaintext
            assert sock.recv(1) == b""  # closed, nothing answered
        assert wait_until(lambda: any("TLS handshake failed" in r.getMessage() for r in caplog.records), 10)
    assert broker.request_log() == []
    assert broker.security_protocol == "SSL"


def test_ssl_context_must_be_an_ssl_context() -> None:
    with pytest.raises(TypeError, match=r"ssl_context must be an ssl\.SSLContext, got str"):
        QuotaBroker(ssl_context="cert.pem")  # type: ignore[arg-type]
