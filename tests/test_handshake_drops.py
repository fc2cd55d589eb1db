"""Telling a client that its listener speaks another protocol. Without SASL on a SASL listener: drops right after
the handshake make a suspicion, and only the listener's own answer to a SaslHandshake makes it an authentication
failure. TLS on one side only: a connection closed during the TLS handshake, or during ApiVersions, and the
listener's answer (a plaintext ApiVersions answered, a TLS handshake completed) makes it a connection failure no
retry gets past."""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from confluent_kafka import KafkaError

from tests.support import wait_until
from throttled_admin._driver.handshake_drops import DROPS, WINDOW_S, HandshakeDrops, questions, said_plainly
from throttled_admin._driver.sasl_probe import _mechanisms, required_sasl_mechanisms, serves_plaintext, speaks_tls
from throttled_admin._engine import contact_failure
from throttled_admin.testing import QuotaBroker

BROKER = "127.0.0.1:9092/bootstrap"


def drop(broker: str = BROKER, up_ms: int = 0) -> str:
    closed = "Disconnected: connection closed by peer: receive 0 after POLLIN"
    return f"[thrd:{broker}]: {broker}: {closed} (after {up_ms}ms in state UP)"


def refused(broker: str = BROKER) -> str:
    failed = "Connect to ipv4#127.0.0.1:9092 failed: Connection refused"
    return f"[thrd:{broker}]: {broker}: {failed} (after 0ms in state CONNECT)"


class Listener:
    """A stand-in for the listener's answer, counting the questions."""

    def __init__(self, mechanisms: list[str] | None) -> None:
        self.mechanisms = mechanisms
        self.asked: list[str] = []
        self.found: list[KafkaError] = []
        self.done = threading.Event()

    def ask(self, address: str) -> list[str] | None:
        self.asked.append(address)
        self.done.set()
        return self.mechanisms

    def drops(self) -> HandshakeDrops:
        return HandshakeDrops("plaintext", self.found.append, ask=self.ask)


def feed(drops: HandshakeDrops, lines: list[str], step_s: float = 0.05) -> list[KafkaError | None]:
    return [drops.observe(line, i * step_s) for i, line in enumerate(lines)]


def test_a_sasl_listener_behind_three_quick_drops_is_an_authentication_failure_reported_from_then_on() -> None:
    listener = Listener(["PLAIN", "SCRAM-SHA-512"])
    drops = listener.drops()
    assert feed(drops, [drop()] * DROPS) == [None] * DROPS
    assert wait_until(lambda: bool(listener.found), timeout_s=10)
    assert listener.asked == ["127.0.0.1:9092"]
    [error] = listener.found
    assert error.code() == KafkaError._AUTHENTICATION
    assert error.str().startswith(f"{BROKER}: the listener requires SASL authentication (it offers PLAIN, SCRAM")
    assert "security.protocol is 'plaintext'" in error.str()
    assert drops.observe(drop(), 1.0) is error  # each further drop reports it at once, without asking again
    assert len(listener.asked) == 1


def test_a_listener_without_sasl_is_not_blamed_for_the_drops_and_is_asked_once_per_interval() -> None:
    listener = Listener(None)  # a PLAINTEXT broker that drops connections
    drops = listener.drops()
    assert feed(drops, [drop()] * (3 * DROPS)) == [None] * (3 * DROPS)
    assert listener.done.wait(10)
    assert listener.asked == ["127.0.0.1:9092"]
    assert listener.found == []


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([drop(), drop(), refused(), drop(), drop()], id="a-refused-connect-between: the broker was down"),
        pytest.param([drop(), drop(up_ms=5000), drop()], id="a-connection-that-lived-between"),
        pytest.param([drop("a:1/1"), drop("b:1/2"), drop("c:1/3")], id="three-brokers-once-each"),
    ],
)
def test_drops_broken_by_a_down_broker_or_a_working_connection_raise_no_suspicion(lines: list[str]) -> None:
    listener = Listener(["PLAIN"])
    assert feed(listener.drops(), lines) == [None] * len(lines)
    assert listener.asked == []


def test_a_request_that_gets_through_clears_the_count_and_what_was_found() -> None:
    listener = Listener(["PLAIN"])
    drops = listener.drops()
    feed(drops, [drop(), drop()])
    drops.answered()
    feed(drops, [drop(), drop()])
    assert listener.asked == []
    feed(drops, [drop()])
    assert wait_until(lambda: bool(listener.found), timeout_s=10)
    drops.answered()
    assert drops.observe(drop(), 5.0) is None


def test_drops_spread_over_more_than_the_window_raise_no_suspicion() -> None:
    listener = Listener(["PLAIN"])
    assert feed(listener.drops(), [drop()] * DROPS, step_s=WINDOW_S) == [None] * DROPS
    assert listener.asked == []


@pytest.mark.parametrize(
    ("protocol", "asked"),
    [
        ("plaintext", {"sasl", "tls"}),
        ("PLAINTEXT", {"sasl", "tls"}),
        ("SASL_PLAINTEXT", {"tls"}),
        ("SSL", {"plaintext"}),
        ("sasl_ssl", {"plaintext"}),
        ("bogus", set()),
    ],
)
def test_each_protocol_is_asked_what_can_be_wrong_with_it(protocol: str, asked: set[str]) -> None:
    """SASL only for a client with neither SASL nor TLS; whether TLS is required for one without TLS; whether
    the listener speaks TLS at all for one with it."""
    assert questions(protocol) == asked


def test_the_listener_is_asked_over_the_wire(quota_broker: Callable[..., QuotaBroker]) -> None:
    """The SaslHandshake probe against real listeners: a SASL one names its mechanisms; one without SASL
    answers ILLEGAL_SASL_STATE; a closed port cannot be asked."""
    assert required_sasl_mechanisms(quota_broker(users={"alice": "pw"}).bootstrap_servers) == ["PLAIN"]
    assert required_sasl_mechanisms(quota_broker().bootstrap_servers) is None
    assert required_sasl_mechanisms("127.0.0.1:1", timeout_s=1) is None


@pytest.mark.tansu
def test_a_third_party_broker_with_optional_sasl_is_not_taken_for_one_that_requires_it(tansu: str) -> None:
    """Tansu answers a SaslHandshake without SASL configured, and serves unauthenticated requests too."""
    assert required_sasl_mechanisms(tansu) is None


def test_drops_librdkafka_left_out_of_its_log_count() -> None:
    listener = Listener(["PLAIN"])
    drops = listener.drops()
    suppressed = drop().replace("in state UP)", "in state UP, 2 identical error(s) suppressed)")
    assert feed(drops, [drop(), suppressed]) == [None, None]
    assert wait_until(lambda: bool(listener.found), timeout_s=10)


def test_an_answer_that_comes_after_a_request_got_through_is_dropped_and_one_question_runs_at_a_time() -> None:
    release = threading.Event()
    listener = Listener(["PLAIN"])

    def slow_ask(address: str) -> list[str] | None:
        release.wait(10)
        return listener.ask(address)

    drops = HandshakeDrops("plaintext", listener.found.append, ask=slow_ask)
    feed(drops, [drop()] * (2 * DROPS))  # the second pattern does not start a second question
    drops.answered()
    release.set()
    assert listener.done.wait(10)
    assert len(listener.asked) == 1
    assert not wait_until(lambda: bool(listener.found), timeout_s=0.5)
    assert drops.found() is None


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(struct.pack(">ihi", 1, 0, 0), id="no-mechanisms"),
        pytest.param(struct.pack(">ihih", 1, 0, 50_000_000, -2), id="a-huge-count-and-a-negative-length"),
        pytest.param(struct.pack(">ihih", 1, 0, 1, 20) + b"PLAIN", id="a-truncated-name"),
        pytest.param(struct.pack(">ihih", 2, 0, 1, 5) + b"PLAIN", id="another-correlation-id"),
        pytest.param(struct.pack(">ihih", 1, 34, 1, 5) + b"PLAIN", id="illegal-sasl-state"),
    ],
)
def test_an_answer_that_is_not_a_sasl_listeners_is_no_answer(frame: bytes) -> None:
    assert _mechanisms(frame) is None


def test_a_sasl_listeners_answer_names_its_mechanisms() -> None:
    frame = struct.pack(">ihi", 1, 33, 2) + b"".join(struct.pack(">h", len(m)) + m for m in (b"PLAIN", b"SCRAM"))
    assert _mechanisms(frame) == ["PLAIN", "SCRAM"]


def test_a_listener_that_trickles_its_answer_is_given_up_on_in_the_time_allowed() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        connection, _ = server.accept()
        with connection:
            connection.sendall(struct.pack(">i", 1000))  # a response of 1000 bytes, one byte at a time
            while not stop.wait(0.2):
                connection.sendall(b"\x00")

    threading.Thread(target=trickle, daemon=True).start()
    try:
        started = time.monotonic()
        assert required_sasl_mechanisms(f"127.0.0.1:{server.getsockname()[1]}", timeout_s=1.0) is None
        assert time.monotonic() - started < 5
    finally:
        stop.set()
        server.close()


# -- TLS on one side only ------------------------------------------------------------------------------------------

TLS_BROKER = "ssl://127.0.0.1:9093/bootstrap"


def closed_in_tls_handshake(broker: str = TLS_BROKER) -> str:
    why = (
        "SSL handshake failed: Disconnected: SSL connection closed by peer: connecting to a PLAINTEXT broker listener?"
    )
    return f"[thrd:{broker}]: {broker}: {why} (after 1ms in state SSL_HANDSHAKE)"


def closed_in_apiversions(broker: str = BROKER) -> str:
    closed = "Disconnected: connection closed by peer: receive 0 after POLLIN"
    return f"[thrd:{broker}]: {broker}: {closed} (after 1ms in state APIVERSION_QUERY)"


@pytest.mark.parametrize(
    ("protocol", "line", "requires_tls"),
    [
        ("SSL", closed_in_tls_handshake(), False),
        ("SASL_SSL", closed_in_tls_handshake("sasl_ssl://127.0.0.1:9093/bootstrap"), False),
        ("PLAINTEXT", closed_in_apiversions("127.0.0.1:9093/bootstrap"), True),
        ("SASL_PLAINTEXT", closed_in_apiversions("sasl_plaintext://127.0.0.1:9093/bootstrap"), True),
    ],
)
def test_one_connection_closed_in_its_handshake_asks_the_listener_and_its_answer_is_a_definite_failure(
    protocol: str, line: str, requires_tls: bool
) -> None:
    asked: list[tuple[str, str]] = []
    found: list[KafkaError] = []

    def yes_to(question: str) -> Callable[[str], bool]:
        def answer(address: str) -> bool:
            asked.append((question, address))
            return True

        return answer

    drops = HandshakeDrops(
        protocol,
        found.append,
        ask=lambda address: pytest.fail("SASL was not the question"),
        ask_tls=yes_to("tls"),
        ask_plaintext=yes_to("plaintext"),
    )
    assert drops.observe(line, 0.0) is None
    assert wait_until(lambda: bool(found), timeout_s=10)
    assert asked == [("tls" if requires_tls else "plaintext", "127.0.0.1:9093")]
    [error] = found
    assert error.code() == KafkaError._TRANSPORT
    what = "requires TLS" if requires_tls else "does not speak TLS"
    assert error.str().endswith(f"the listener at 127.0.0.1:9093 {what}; check security.protocol, which is {protocol}")
    failure = contact_failure(error.str())  # what the engine and the command line's watch read from it
    assert failure is not None
    assert (failure.definite, failure.address) == (True, "127.0.0.1:9093")
    assert drops.observe(line, 1.0) is error  # known from then on
    assert drops.found() is error


def test_a_listener_that_speaks_the_clients_protocol_after_all_is_not_blamed() -> None:
    found: list[KafkaError] = []
    done = threading.Event()

    def not_plaintext(address: str) -> bool:
        done.set()
        return False

    drops = HandshakeDrops("SSL", found.append, ask_plaintext=not_plaintext)
    drops.observe(closed_in_tls_handshake(), 0.0)
    assert done.wait(10)
    assert not wait_until(lambda: bool(found), timeout_s=0.3)


def test_other_failures_in_the_handshake_keep_what_was_found_and_a_refused_connection_forgets_it() -> None:
    found: list[KafkaError] = []
    drops = HandshakeDrops("SSL", found.append, ask_plaintext=lambda address: True)
    drops.observe(closed_in_tls_handshake(), 0.0)
    assert wait_until(lambda: drops.found() is not None, timeout_s=10)
    reset = f"{TLS_BROKER}: Disconnected: SSL connection closed by peer (after 6ms in state SSL_HANDSHAKE)"
    assert drops.observe(reset, 0.5) is found[0]  # the same closing, as librdkafka's receive path words it
    assert drops.observe(f"{TLS_BROKER}: 1/1 brokers are down", 0.6) is None
    assert drops.found() is found[0]
    refused_now = (
        f"{TLS_BROKER}: Connect to ipv4#127.0.0.1:9093 failed: Connection refused (after 0ms in state CONNECT)"
    )
    drops.observe(refused_now, 1.0)  # down: perhaps restarting with other listeners
    assert drops.found() is None


def test_listeners_are_asked_whether_they_speak_tls_over_the_wire(
    quota_broker: Callable[..., QuotaBroker], tls: tuple[ssl.SSLContext, Path]
) -> None:
    plaintext, sasl, secure = quota_broker(), quota_broker(users={"alice": "pw"}), quota_broker(ssl_context=tls[0])
    assert [serves_plaintext(b.bootstrap_servers) for b in (plaintext, sasl, secure)] == [True, True, False]
    assert [speaks_tls(b.bootstrap_servers) for b in (plaintext, sasl, secure)] == [False, False, True]
    assert serves_plaintext("127.0.0.1:1", timeout_s=1) is False
    assert speaks_tls("127.0.0.1:1", timeout_s=1) is False


def test_a_tls_listener_that_wants_a_client_certificate_still_speaks_tls(tmp_path: Path) -> None:
    """TLS 1.2 with a required client certificate: the listener ends the handshake with an alert, in TLS."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca.configure_trust(context)
    context.verify_mode = ssl.CERT_REQUIRED
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = server.accept()
        with connection, contextlib.suppress(OSError):
            context.wrap_socket(connection, server_side=True)

    threading.Thread(target=serve, daemon=True).start()
    try:
        assert speaks_tls(f"127.0.0.1:{server.getsockname()[1]}", timeout_s=5) is True
    finally:
        server.close()


def test_only_an_authentication_failure_whose_handshake_offered_no_mechanism_is_said_plainly() -> None:
    broker = "sasl_ssl://kafka-1:9093/bootstrap"
    failed = "SASL PLAIN mechanism handshake failed: Broker: Request not valid in current SASL state"
    none = KafkaError(
        KafkaError._AUTHENTICATION,
        f"[thrd:{broker}]: {broker}: {failed}: broker's supported mechanisms:  (after 0ms in state AUTH_HANDSHAKE)",
    )
    said = said_plainly(none, "sasl_ssl")
    assert said.code() == KafkaError._AUTHENTICATION
    assert said.str() == (
        f"{broker}: the listener at kafka-1:9093 does not use SASL; check security.protocol, which is SASL_SSL (SSL "
        f"for this listener). librdkafka: {failed}: broker's supported mechanisms:  (after 0ms in state AUTH_HANDSHAKE)"
    )
    before, after = contact_failure(none.str()), contact_failure(said.str())  # where and how far it got, as before
    assert before is not None
    assert after is not None
    assert (after.address, after.stage) == (before.address, before.stage) == ("kafka-1:9093", "sasl")
    offered = KafkaError(
        KafkaError._AUTHENTICATION,
        f"{broker}: SASL SCRAM-SHA-512 mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's "
        "supported mechanisms: PLAIN (after 1ms in state AUTH_HANDSHAKE)",
    )
    wrong_password = KafkaError(
        KafkaError._AUTHENTICATION,
        f"{broker}: SASL authentication error: Authentication failed: Invalid username or password (after 2ms in "
        "state AUTH_REQ)",
    )
    # an empty list after another refusal, or a frame librdkafka could not read: not a listener without SASL
    offers_none = KafkaError(
        KafkaError._AUTHENTICATION,
        f"{broker}: SASL PLAIN mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's supported "
        "mechanisms:  (after 1ms in state AUTH_HANDSHAKE)",
    )
    unreadable = KafkaError(
        KafkaError._AUTHENTICATION,
        f"{broker}: SASL PLAIN mechanism handshake failed: Local: Bad message format: broker's supported "
        "mechanisms:  (after 1ms in state AUTH_HANDSHAKE)",
    )
    not_authentication = KafkaError(KafkaError._TRANSPORT, none.str())
    for error in (offered, wrong_password, offers_none, unreadable, not_authentication):
        assert said_plainly(error, "sasl_ssl") is error
