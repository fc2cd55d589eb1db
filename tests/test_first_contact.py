"""First contact (issue 27 findings 5 and 9, issue 28 findings 2 and 3): what a client that no broker has answered
says depends on how far its connections got (TCP, TLS, ApiVersions, SASL), not on a timer. Over real sockets:
QuotaBroker's faults (a listener that never answers, one that answers slowly) and its TLS listener.

Times are printed (``pytest -s``), never asserted; each call's deadline is far beyond the time its diagnosis takes,
so a diagnosis that waited for the deadline fails the assertion on what was said.
"""

from __future__ import annotations

import concurrent.futures
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.either_broker import EitherBroker
from tests.support import BrokerFactory
from throttled_admin import (
    CannotConnectError,
    NewTopic,
    NotSentError,
    OutcomeUnknownError,
    ThrottledAdminClient,
)
from throttled_admin.testing import QuotaBroker
from throttled_admin.testing._handlers import ANONYMOUS

pytestmark = pytest.mark.slow

PASSWORD = "Pw-first-contact-5e1"


def client_conf(bootstrap: str, protocol: str, ca: Path | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "security.protocol": protocol}
    if protocol.startswith("SASL_"):
        conf.update({"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": PASSWORD})
    if protocol.endswith("SSL") and ca is not None:
        conf["ssl.ca.location"] = str(ca)
    return conf


def create(conf: dict[str, Any], timeout_ms: int, name: str = "t") -> tuple[BaseException | None, float]:
    """One create through ThrottledAdminClient: its outcome and how long it took."""
    started = time.monotonic()
    with ThrottledAdminClient(conf) as admin:
        error = admin.create_topics([NewTopic(name, 1, 1)], timeout_ms=timeout_ms)[name].exception(
            timeout=timeout_ms / 1000 + 10
        )
    return error, time.monotonic() - started


def mutations(broker: QuotaBroker) -> list[str]:
    return [r.api_name for r in broker.request_log() if r.api_name in ("CreateTopics", "DeleteTopics")]


# -- issue 27, finding 5: a listener that accepts connections and never answers ---------------------------------


@pytest.mark.parametrize("timeout_ms", [8000, 20000])
def test_a_listener_that_never_answers_is_never_written_to_and_the_topic_is_not_sent(
    quota_broker: BrokerFactory, timeout_ms: int
) -> None:
    broker = quota_broker()
    broker.set_unresponsive()
    error, took_s = create({"bootstrap.servers": broker.bootstrap_servers}, timeout_ms)
    print(f"[timing] never answered, timeout_ms={timeout_ms}: {took_s:.2f} s: {error}")
    assert isinstance(error, NotSentError), repr(error)
    assert not isinstance(error, OutcomeUnknownError), repr(error)
    assert {r.api_name for r in broker.request_log()} == {"ApiVersions"}  # all the listener ever received
    assert all(r.responded_at is None for r in broker.request_log())


# -- issue 27, finding 9: a broker slower than 5 s an answer ------------------------------------------------------


def test_a_broker_slower_than_five_seconds_an_answer_is_served_as_bare_confluent_kafka_serves_it(
    quota_broker: BrokerFactory,
) -> None:
    """Every answer 6 s late: bare confluent-kafka (request_timeout 40 s) creates the topic; so must we, with
    timeout_ms 40000. Both run at once, each against a broker of its own."""
    ours, theirs = quota_broker(), quota_broker()
    ours.set_latency(6.0)
    theirs.set_latency(6.0)

    def bare() -> tuple[BaseException | None, float]:
        started = time.monotonic()
        admin = AdminClient({"bootstrap.servers": theirs.bootstrap_servers})
        future = admin.create_topics([NewTopic("slow", 1, 1)], request_timeout=40)["slow"]
        return future.exception(timeout=60), time.monotonic() - started

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        baseline = pool.submit(bare)
        error, took_s = create({"bootstrap.servers": ours.bootstrap_servers}, 40_000, "slow")
        bare_error, bare_s = baseline.result()
    print(f"[timing] 6 s an answer: bare {bare_s:.1f} s ({bare_error}), ours {took_s:.1f} s ({error})")
    assert bare_error is None, bare_error  # the baseline: bare confluent-kafka manages it
    assert error is None, repr(error)
    assert ours.topics() == {"slow": 1}
    assert mutations(ours) == ["CreateTopics"]  # one attempt: nothing given up on and sent again


# -- issue 28, finding 2: HOST:PORT on every protocol ---------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"])
def test_a_client_that_cannot_connect_names_host_and_port_on_every_protocol(
    protocol: str, refused_address: str
) -> None:
    address = refused_address
    error, took_s = create(client_conf(address, protocol), 120_000)
    print(f"[timing] refused, {protocol}: {took_s:.2f} s")
    assert isinstance(error, CannotConnectError), repr(error)
    assert str(error.args[0].str()) == (
        f"CreateTopics not sent: cannot connect to {address} (Connect to ipv4#{address} failed: Connection refused)"
    )


# -- issue 28, finding 3: TLS on one side only ----------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_a_tls_client_on_a_plaintext_listener_is_told_the_listener_does_not_speak_tls(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], protocol: str
) -> None:
    broker = quota_broker(users={"alice": PASSWORD} if protocol == "SASL_SSL" else None)
    address = broker.bootstrap_servers
    error, took_s = create(client_conf(address, protocol, tls[1]), 120_000)
    print(f"[timing] {protocol} client, plaintext listener: {took_s:.2f} s: {error}")
    assert isinstance(error, CannotConnectError), repr(error)
    assert (
        f"CreateTopics not sent: cannot connect to {address} (the listener at {address} does not speak TLS; "
        f"check security.protocol, which is {protocol})"
    ) == error.args[0].str()
    assert mutations(broker) == []


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_a_plaintext_client_on_a_tls_listener_is_told_the_listener_requires_tls(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], protocol: str
) -> None:
    broker = quota_broker(ssl_context=tls[0], users={"alice": PASSWORD} if protocol == "SASL_PLAINTEXT" else None)
    address = broker.bootstrap_servers
    error, took_s = create(client_conf(address, protocol), 120_000)
    print(f"[timing] {protocol} client, TLS listener: {took_s:.2f} s: {error}")
    assert isinstance(error, CannotConnectError), repr(error)
    assert (
        f"CreateTopics not sent: cannot connect to {address} (the listener at {address} requires TLS; "
        f"check security.protocol, which is {protocol})"
    ) == error.args[0].str()
    assert broker.request_log() == []  # no request got through the TLS handshake


def test_a_sasl_client_on_a_listener_without_sasl_is_told_the_listener_does_not_use_sasl(
    any_broker: Callable[..., EitherBroker],
) -> None:
    """Both brokers answer a SaslHandshake on a listener without SASL with ILLEGAL_SASL_STATE and no mechanism
    (``test_a_listener_without_sasl_answers_sasl_requests_with_illegal_sasl_state``); librdkafka's words for it
    ("Request not valid in current SASL state: broker's supported mechanisms: ") are said plainly first, to the
    topic and to the error_cb from conf, and kept after it."""
    broker = any_broker()
    events: list[KafkaError] = []
    conf = {
        **client_conf(broker.bootstrap_servers, "SASL_PLAINTEXT"),
        "client.id": broker.client_id,
        "error_cb": events.append,
    }
    error, took_s = create(conf, 120_000, name=broker.t("t"))
    print(f"[timing] SASL_PLAINTEXT client, listener without SASL: {took_s:.2f} s: {error}")
    assert type(error) is KafkaException, repr(error)  # never sent: the authentication failure itself
    plainly = (
        f"sasl_plaintext://{broker.bootstrap_servers}/bootstrap: the listener at {broker.bootstrap_servers} does not "
        "use SASL; check security.protocol, which is SASL_PLAINTEXT (PLAINTEXT for this listener). librdkafka: SASL "
        "PLAIN mechanism handshake failed: Broker: Request not valid in current SASL state: broker's supported "
        "mechanisms:  (after "
    )
    authentication = [e for e in events if e.code() == KafkaError._AUTHENTICATION]  # (and "1/1 brokers are down")
    assert authentication, events  # (create() closes the client: its error_cb events are all in)
    for told in (error.args[0], *authentication):
        assert told.code() == KafkaError._AUTHENTICATION
        assert told.str().startswith(plainly), told.str()
        assert told.str().endswith("in state AUTH_HANDSHAKE)"), told.str()
        assert PASSWORD not in told.str()
    assert broker.topics() == {}


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_quota_brokers_tls_listener_serves_a_tls_client(
    quota_broker: BrokerFactory, tls: tuple[ssl.SSLContext, Path], protocol: str
) -> None:
    broker = quota_broker(ssl_context=tls[0], users={"alice": PASSWORD} if protocol == "SASL_SSL" else None)
    assert broker.security_protocol == protocol
    error, _ = create(client_conf(broker.bootstrap_servers, protocol, tls[1]), 30_000)
    assert error is None, repr(error)
    assert broker.topics() == {"t": 1}
    principal = "alice" if protocol == "SASL_SSL" else ANONYMOUS
    assert [r.principal for r in broker.request_log() if r.api_name == "CreateTopics"] == [principal]
