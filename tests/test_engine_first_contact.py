"""First contact in the engine, on simulated time (docs/semantics.md, "First contact"): until a broker has answered
the client, what is said depends on how far its connections got, never on a cap of librdkafka's timeouts.

The same rules run over real sockets in tests/test_first_contact.py; tests/test_engine_model.py checks them after
every step of random sequences."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.engine_records import submit_call
from throttled_admin import CannotConnectError, NotSentError, OutcomeUnknownError
from throttled_admin._engine import (
    CREATE_TOPICS,
    CallSpec,
    Engine,
    Outbox,
    RequestKind,
    RetryBackoff,
    wrong_listener,
)
from throttled_admin._engine.contact import broker_address, contact_failure
from throttled_admin._engine.work import Topic

REFUSED = (
    "sasl_ssl://127.0.0.1:9/bootstrap: Connect to ipv4#127.0.0.1:9 failed: Connection refused (after 0ms in state "
    "CONNECT)"
)
NEVER_ANSWERED = (
    "[thrd:127.0.0.1:9/bootstrap]: 127.0.0.1:9/bootstrap: ApiVersionRequest failed: Local: Timed out: probably due "
    "to broker version < 0.10 (see api.version.request configuration) (after 10011ms in state APIVERSION_QUERY)"
)
NO_CONTROLLER = KafkaException(
    KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for controller: Local: Timed out")
)


def engine() -> Engine:
    return Engine(pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))


def create(engine: Engine, at: float, timeout_s: float, name: str = "t") -> Topic:
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), at + timeout_s, int(timeout_s * 1000), True, None, None, at)
    _, [topic] = submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2)])
    return topic


def settled(out: Outbox) -> BaseException | None:
    [(_, exc)] = out.settle
    return exc


# -- how far a connection got, in librdkafka's words ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "address"),
    [
        ("127.0.0.1:9092/bootstrap", "127.0.0.1:9092"),
        ("sasl_plaintext://127.0.0.1:19999/bootstrap", "127.0.0.1:19999"),
        ("ssl://broker-1.example.com:9093/1", "broker-1.example.com:9093"),
        ("sasl_ssl://[::1]:9093/bootstrap", "[::1]:9093"),
        ("127.0.0.1:9092", "127.0.0.1:9092"),
    ],
)
def test_the_address_of_a_broker_is_host_and_port_whatever_the_protocol(name: str, address: str) -> None:
    assert broker_address(name) == address


@pytest.mark.parametrize(
    ("line", "stage"),
    [
        (REFUSED, "tcp"),
        ("h:1/bootstrap: Failed to resolve 'h:1': Name or service not known (after 2ms in state CONNECT)", "tcp"),
        ("ssl://h:1/bootstrap: SSL handshake failed: Disconnected (after 1ms in state SSL_HANDSHAKE)", "tls"),
        ("h:1/bootstrap: Disconnected: connection closed by peer (after 1ms in state APIVERSION_QUERY)", "apiversions"),
        (NEVER_ANSWERED, "apiversions"),
        ("sasl_plaintext://h:1/bootstrap: SASL authentication error: x (after 0ms in state AUTH_REQ)", "sasl"),
        (
            "h:1/bootstrap: Connection setup timed out in state APIVERSION_QUERY (after 30010ms in state "
            "APIVERSION_QUERY)",
            "apiversions",
        ),
        ("h:1/0: Disconnected (after 0ms in state UP)", None),  # the handshake was complete
        ("h:1/0: Disconnected (after 10ms in state UP, 3 identical error(s) suppressed)", None),
        ("1/1 brokers are down", None),
    ],
)
def test_a_failure_says_how_far_its_connection_got(line: str, stage: str | None) -> None:
    failure = contact_failure(line)
    assert (failure.stage if failure is not None else None) == stage
    if failure is not None:
        assert failure.address == "h:1" or failure.address == "127.0.0.1:9"
        assert " (after " not in failure.reason


_TOO_LARGE = "Receive failed: Invalid response size {} (0..100000000): increase receive.message.max.bytes"


@pytest.mark.parametrize(
    ("size", "began"),
    [
        (int.from_bytes(b"HTTP", "big"), "'HTTP'"),  # a web server's "HTTP/1.1 400 Bad Request"
        (int.from_bytes(b"\x15\x03\x03\x00", "big"), "bytes 15 03 03 00"),  # a TLS alert record
    ],
)
def test_a_first_answer_too_large_for_kafka_says_the_listener_speaks_another_protocol(size: int, began: str) -> None:
    """Found by a new user's run: a web port as bootstrap.servers said "increase receive.message.max.bytes",
    librdkafka's advice for a Kafka answer larger than the client takes. ApiVersions' answer is about a kilobyte:
    the listener speaks something else, and what its first four bytes read says what."""
    line = f"h:1/bootstrap: {_TOO_LARGE.format(size)} (after 2ms in state APIVERSION_QUERY)"
    failure = contact_failure(line)
    assert failure is not None
    assert failure.stage == "apiversions"  # (not definite: another bootstrap address may be a broker)
    assert failure.reason == f"the listener at h:1 does not speak Kafka's protocol: its answer began with {began}"
    # Once the handshake is complete, the size is a Kafka answer's, and librdkafka's advice stands.
    assert contact_failure(f"h:1/0: {_TOO_LARGE.format(size)} (after 9ms in state UP)") is None


def test_a_first_answer_of_a_kafka_frames_size_keeps_librdkafkas_advice() -> None:
    """Found by review (helper 102): a Kafka 4 ApiVersions answer is about a kilobyte, over a receive.message.max.bytes
    set to its minimum (1,000): a size whose first byte is 0 may be Kafka's, and the setting is the fix."""
    reason = _TOO_LARGE.format(1100).replace("100000000", "1000")
    failure = contact_failure(f"h:1/bootstrap: {reason} (after 2ms in state APIVERSION_QUERY)")
    assert failure is not None
    assert failure.reason == reason


def test_a_listener_silent_through_the_handshake_is_said_so_not_an_old_broker() -> None:
    """librdkafka's "probably due to broker version < 0.10" for an ApiVersions never answered: a Kafka 4 client
    meets no such broker; a listener that accepts and never answers is what it was (a new user's run)."""
    failure = contact_failure(NEVER_ANSWERED)
    assert failure is not None
    assert failure.stage == "apiversions"
    assert failure.reason == "the listener at 127.0.0.1:9 did not answer the Kafka handshake (ApiVersions) in 10011 ms"
    # librdkafka's other timeouts keep their words
    queued = contact_failure(
        "h:1/bootstrap: ApiVersionRequest failed: Local: Timed out in queue (after 5ms in state APIVERSION_QUERY)"
    )
    assert queued is not None
    assert queued.reason == "ApiVersionRequest failed: Local: Timed out in queue"


# -- issue 27, finding 9: no cap of librdkafka's timeouts, before or after contact -----------------------------------


def test_a_first_request_waits_for_the_probe_at_most_five_seconds_then_goes_with_its_whole_time() -> None:
    """A broker slower than 5 s an answer: the probe (asked at the start) is not answered; the request goes at 5 s
    with librdkafka's timeout ending half a second before the deadline, not 5 s after it was sent."""
    machine = engine()
    assert machine.step(0.0).probe
    create(machine, 0.0, 40.0)
    out = machine.step(0.0)
    assert out.send is None
    assert out.wake_at == 5.0
    out = machine.step(5.0)
    assert out.send is not None
    assert out.send.request_timeout_s == pytest.approx(34.5)
    assert out.send.operation_timeout_s < 34.5


def test_once_a_broker_has_answered_requests_carry_their_calls_whole_time() -> None:
    machine = engine()
    machine.step(0.0)
    machine.on_probe(True, 0.2)
    create(machine, 0.2, 40.0)
    out = machine.step(0.2)
    assert out.send is not None
    assert out.send.request_timeout_s == pytest.approx(40.0)


def test_a_throttle_event_is_an_answer() -> None:
    machine = engine()
    machine.step(0.0)
    machine.on_throttle(1, 0.0, 0.1)  # the response to some other method carried it
    create(machine, 0.1, 40.0)
    assert machine.step(0.1).send is not None


# -- issue 27, finding 5: a handshake never completed means nothing was written ---------------------------------------


def test_librdkafkas_verdict_that_it_never_built_the_request_is_not_sent_before_the_deadline() -> None:
    machine = engine()
    machine.step(0.0)
    topic = create(machine, 0.0, 8.0)
    out = machine.step(5.0)
    assert out.send is not None
    assert out.send.request_timeout_s == pytest.approx(2.5)
    machine.on_results(out.send.request_id, {"t": NO_CONTROLLER}, 7.5)  # librdkafka's timer, before the deadline
    out = machine.step(7.5)
    if not out.settle:  # queued again, with too little time left for another verdict: not sent
        out = machine.step(7.6)
    exc = settled(out)
    assert isinstance(exc, NotSentError), repr(exc)
    assert not isinstance(exc, OutcomeUnknownError)
    assert "no broker had answered this client" in str(exc)
    assert topic.attempts == 1


def test_a_verdict_after_a_failure_before_the_handshake_says_how_far_the_connection_got() -> None:
    machine = engine()
    machine.step(0.0)
    create(machine, 0.0, 20.0)
    out = machine.step(5.0)
    assert out.send is not None
    machine.on_log(NEVER_ANSWERED, 10.0)  # only in librdkafka's log
    machine.on_results(out.send.request_id, {"t": NO_CONTROLLER}, 19.5)
    exc = settled(machine.step(19.5))
    assert isinstance(exc, CannotConnectError), repr(exc)
    assert str(exc.args[0].str()) == (
        "CreateTopics not sent: cannot connect to 127.0.0.1:9 (the listener at 127.0.0.1:9 did not answer the Kafka "
        "handshake (ApiVersions) in 10011 ms)"
    )


# -- issue 28, findings 2 and 3: nothing handed over while connections fail before their handshake ------------------


def test_while_connections_fail_before_their_handshake_nothing_is_handed_over_and_calls_give_up_after_5_s() -> None:
    machine = engine()
    machine.step(0.0)
    machine.on_error(KafkaError(KafkaError._TRANSPORT, REFUSED), 0.01)
    create(machine, 1.0, 60.0)
    out = machine.step(1.0)
    assert out.send is None
    assert out.wake_at == pytest.approx(6.0)
    exc = settled(machine.step(6.0))
    assert isinstance(exc, CannotConnectError)
    assert exc.args[0].str() == (
        "CreateTopics not sent: cannot connect to 127.0.0.1:9 (Connect to ipv4#127.0.0.1:9 failed: Connection refused)"
    )


def test_a_listener_of_the_other_protocol_fails_the_calls_at_once_and_holds_against_librdkafkas_own_reports() -> None:
    machine = engine()
    machine.step(0.0)
    machine.on_error(wrong_listener("ssl://127.0.0.1:9/bootstrap", "ssl", requires_tls=False), 0.2)
    tls = "ssl://127.0.0.1:9/bootstrap: SSL handshake failed: Disconnected (after 1ms in state SSL_HANDSHAKE)"
    machine.on_error(KafkaError(KafkaError._TRANSPORT, tls), 0.3)
    create(machine, 0.3, 60.0)
    exc = settled(machine.step(0.3))
    assert isinstance(exc, CannotConnectError)
    assert exc.args[0].str() == (
        "CreateTopics not sent: cannot connect to 127.0.0.1:9 (the listener at 127.0.0.1:9 does not speak TLS; "
        "check security.protocol, which is SSL)"
    )


def test_the_probe_is_asked_again_while_connections_fail_and_a_broker_that_comes_up_gets_the_call() -> None:
    machine = engine()
    assert machine.step(0.0).probe
    machine.on_error(KafkaError(KafkaError._TRANSPORT, REFUSED), 0.01)
    machine.on_probe(False, 5.0)  # librdkafka gave up on it
    create(machine, 6.0, 60.0)
    out = machine.step(6.0)
    assert out.probe  # asked again: is a broker up by now?
    assert out.send is None
    machine.on_probe(True, 6.5)
    out = machine.step(6.5)
    assert out.send is not None
    assert out.send.request_timeout_s == pytest.approx(59.5)  # answered: the call's whole time left


def test_a_deadline_shorter_than_the_first_contact_limit_says_cannot_connect() -> None:
    machine = engine()
    machine.step(0.0)
    machine.on_error(KafkaError(KafkaError._TRANSPORT, REFUSED), 0.01)
    create(machine, 0.0, 2.0)
    exc = settled(machine.step(2.0))
    assert isinstance(exc, CannotConnectError), repr(exc)
