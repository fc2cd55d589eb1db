"""The KIP-219 gate ends with its connection (docs/semantics.md, "The gate ends with its connection"), and a request
in flight on a node that goes away is "outcome unknown" (issue 37), on simulated time.

A throttle closes the gate while the connection that carried it lives. Once librdkafka reports that connection
failed (a ``FAIL`` line or an error naming the node, or every broker down), the next request is a probe of one
topic, and only its answer ends the old throttle: no throttle in an answer that charged or refused a topic for the
quota ends it; a throttle in it is the gate from then on; an answer that charged nothing proves nothing."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.engine_records import submit_call
from throttled_admin import OutcomeUnknownError, PossiblyAppliedError, ThrottlingQuotaExceededException
from throttled_admin._engine import (
    CREATE_TOPICS,
    CallSpec,
    Engine,
    MutationQuota,
    Outbox,
    Pacer,
    RequestKind,
    RetryBackoff,
)
from throttled_admin._engine.classify import Outcome, classify, connection_lost, was_written
from throttled_admin._engine.throttle import failed_node

# librdkafka 2.16.0's own words, seen on Kafka 4.4 when the broker that throttled the client restarted
DISCONNECTED = (
    "[thrd:127.0.0.1:55987/1]: 127.0.0.1:55987/1: Disconnected: connection closed by peer: receive 0 after POLLIN "
    "(after 2205ms in state UP)"
)
REFUSED_BOOTSTRAP = (
    "127.0.0.1:55987/bootstrap: Connect to ipv4#127.0.0.1:55987 failed: Connection refused (after 0ms in state CONNECT)"
)
# librdkafka's own request timing out on a connection the broker muted (seen in the field, rd_kafka_broker_fail): the
# broker did not go away, and the debt stands
TIMED_OUT = "127.0.0.1:55987/1: 1 request(s) timed out: disconnect (after 60001ms in state UP)"
TIMED_OUT_RTT = (
    "127.0.0.1:55987/1: 1 request(s) timed out: disconnect (average rtt 501.231ms) (after 60001ms in state UP)"
)
EXISTS = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS))


def reached(pacer: Pacer | None = None) -> Engine:
    engine = Engine(pacer=pacer, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    engine.on_probe(True, 0.0)
    return engine


def create(engine: Engine, names: list[str], now: float, timeout_s: float = 10.0, partitions: int = 1) -> Outbox:
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), now + timeout_s, int(timeout_s * 1000), True, None, None, now)
    submit_call(engine, spec, [(n, NewTopic(n, partitions, 1), partitions, 1 + partitions) for n in names])
    return engine.step(now)


def throttled(seconds: float = 49.0, pacer: Pacer | None = None, partitions: int = 60) -> Engine:
    """A 60-partition create admitted and throttled on node 1's connection."""
    engine = reached(pacer)
    out = create(engine, ["big"], 0.0, partitions=partitions)
    assert out.send is not None
    engine.on_throttle(1, seconds, 0.1)
    engine.on_results(out.send.request_id, {"big": None}, 0.1)
    engine.step(0.1)
    return engine


def answer(
    engine: Engine, out: Outbox, now: float, throttle_s: float = 0.0, exc: BaseException | None = None
) -> Outbox:
    assert out.send is not None
    if throttle_s:
        engine.on_throttle(1, throttle_s, now)
    engine.on_results(out.send.request_id, dict.fromkeys(out.send.names, exc), now)
    return engine.step(now)


def sent(out: Outbox) -> list[str]:
    """The names of the request the step sent ([] for none)."""
    return [] if out.send is None else out.send.names


def refusal(out: Outbox) -> ThrottlingQuotaExceededException:
    """The last topic settled, refused for the quota."""
    exc = out.settle[-1][1]
    assert isinstance(exc, ThrottlingQuotaExceededException), exc
    return exc


def test_while_the_connection_lives_a_call_shorter_than_the_throttle_is_refused_unsent() -> None:
    engine = throttled()
    out = create(engine, ["small"], 4.0)
    assert out.send is None
    assert refusal(out).throttle_time_ms == 45100


@pytest.mark.parametrize("how", ["log", "error_cb", "all brokers down"])
def test_after_the_connection_went_a_probe_of_one_topic_goes_and_its_unthrottled_answer_opens_the_gate(
    how: str,
) -> None:
    """The issue's failure: refused at once, unsent, with throttle_time_ms=45970, where bare confluent-kafka created
    the topic in 0.1 s; a probe goes now, and after its answer the rest goes in one request."""
    engine = throttled()
    if how == "log":
        engine.on_log(DISCONNECTED, 2.0)
    elif how == "error_cb":
        engine.on_error(KafkaError(KafkaError._TRANSPORT, DISCONNECTED.split("]: ", 1)[1]), 2.0)
    else:
        engine.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"), 2.0)
    out = create(engine, ["a", "b", "c"], 4.0)
    assert sent(out) == ["a"], "the probe: one topic"
    assert not out.settle
    out = answer(engine, out, 4.1)
    assert sent(out) == ["b", "c"], "the gate is open: the rest at once"


@pytest.mark.parametrize("first", [("wide", 9, 10), ("unknown", -1, None)], ids=["wide", "cost unknown"])
def test_the_probe_is_the_cheapest_topic_of_known_cost(first: tuple[str, int, int | None]) -> None:
    """A topic whose cost is unknown (its partitions the broker's default) may be the largest grow."""
    engine = throttled()
    engine.on_log(DISCONNECTED, 2.0)
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), 14.0, 10000, True, None, None, 4.0)
    name, partitions, cost = first
    submit_call(
        engine,
        spec,
        [
            (name, NewTopic(name, partitions, 1), cost, 1 + max(partitions, 0)),
            ("narrow", NewTopic("narrow", 1, 1), 1, 2),
        ],
    )
    out = engine.step(4.0)
    assert sent(out) == ["narrow"]


def test_a_throttle_in_the_fresh_answer_is_the_gate_from_then_on() -> None:
    """A restart that kept the debt (a non-controller node of a quorum): the fresh answer carries it, never guessed."""
    engine = throttled()
    engine.on_log(DISCONNECTED, 2.0)
    out = create(engine, ["a", "b"], 4.0)
    assert sent(out) == ["a"]
    out = answer(engine, out, 4.1, throttle_s=30.0)
    assert out.send is None
    assert refusal(out).throttle_time_ms == 30000, "b: the fresh answer's throttle, not the old one's rest"


def test_a_shorter_fresh_throttle_replaces_the_old_one() -> None:
    engine = throttled()
    engine.on_log(DISCONNECTED, 2.0)
    out = answer(engine, create(engine, ["a"], 4.0), 4.1, throttle_s=3.0)
    out = create(engine, ["b"], 7.2)
    assert out.send is not None, "the fresh 3 s throttle has ended; the old 49 s one is gone"


def test_a_probe_that_charged_nothing_proves_nothing() -> None:
    """TOPIC_ALREADY_EXISTS is not charged: an answer without a throttle says nothing of the debt."""
    engine = throttled()
    engine.on_log(DISCONNECTED, 2.0)
    out = create(engine, ["a", "b", "c"], 4.0, timeout_s=30.0)
    out = answer(engine, out, 4.1, exc=EXISTS)
    assert sent(out) == ["b"], "another probe of one topic"
    out = answer(engine, out, 4.2)
    assert sent(out) == ["c"]


def test_another_node_going_away_leaves_the_gate_closed() -> None:
    """Another broker proves nothing: the connection that carried the throttle still lives, muted."""
    engine = throttled()
    engine.on_log(DISCONNECTED.replace("/1", "/2"), 2.0)
    engine.on_error(KafkaError(KafkaError._TRANSPORT, REFUSED_BOOTSTRAP), 2.0)
    out = create(engine, ["small"], 4.0)
    assert out.send is None
    assert refusal(out).throttle_time_ms == 45100


@pytest.mark.parametrize("how", ["log", "log, average rtt", "error_cb"])
def test_librdkafkas_own_request_timing_out_leaves_the_gate_closed(how: str) -> None:
    """The client's request timed out in the muted connection: librdkafka tears it down, but the broker did not go
    away and the debt stands; a probe on a fresh connection would be admitted and throttled, deepening it."""
    engine = throttled()
    if how == "log":
        engine.on_log(f"[thrd:127.0.0.1:55987/1]: {TIMED_OUT}", 2.0)
    elif how == "log, average rtt":
        engine.on_log(f"[thrd:127.0.0.1:55987/1]: {TIMED_OUT_RTT}", 2.0)
    else:
        engine.on_error(KafkaError(KafkaError._TIMED_OUT, TIMED_OUT), 2.0)
    out = create(engine, ["small"], 4.0)
    assert out.send is None
    assert refusal(out).throttle_time_ms == 45100


def test_a_disconnect_before_the_throttle_does_not_end_it() -> None:
    engine = reached()
    engine.on_log(DISCONNECTED, 0.0)
    out = create(engine, ["big"], 0.0, partitions=60)
    answer(engine, out, 0.1, throttle_s=49.0)
    out = create(engine, ["small"], 4.0)
    assert sent(out) == []
    assert refusal(out).throttle_time_ms == 45100


def paced_and_gone() -> Engine:
    """A client paced at 1/s (Kafka's burst of 11) whose 51-partition create drew a 40 s throttle: its pacer's mirror
    owes 40 s, as the broker did; then the connection that carried the throttle failed."""
    engine = throttled(40.0, Pacer(MutationQuota(rate=1.0)), partitions=51)
    engine.on_log(DISCONNECTED, 2.0)
    return engine


def test_a_paced_clients_mirror_keeps_no_debt_a_fresh_unthrottled_answer_disproved() -> None:
    """The restart forgave the debt: the probe goes past the mirror's debt as past the gate, and its answer (charged,
    no throttle) proves the broker's bucket held K >= 0 after the charge: the next request waits for its own tokens,
    not for the 36 s of the old debt, nor goes as from a full bucket (not proved)."""
    engine = paced_and_gone()
    out = create(engine, ["a", "b", "c"], 4.0, timeout_s=30.0)
    assert sent(out) == ["a"], "the probe goes: the mirror's debt is what it tests"
    out = answer(engine, out, 4.1)
    assert sent(out) == []
    assert [(topic.name, exc) for topic, exc in out.settle] == [("a", None)], "the probe: created"
    # b's token and c's at 1/s from an empty mirror: b waits for c, as two topics are within 2 s of the rate (the
    # pacer's gathering); from a full bucket both would go at once, behind the old debt at 40.1
    assert out.wake_at == pytest.approx(6.1), "two topics' tokens at 1/s from an empty mirror"
    assert sent(engine.step(6.1)) == ["b", "c"]


def test_a_throttle_in_a_paced_clients_fresh_answer_is_the_mirrors_debt() -> None:
    """The restart kept the debt (a quorum's non-controller node): the probe's 30 s throttle is the mirror's word from
    then on, neither the old debt (which would hold b until 42.1) nor a full bucket (b and c at 34.1)."""
    engine = paced_and_gone()
    out = create(engine, ["a", "b", "c"], 4.0, timeout_s=60.0)
    assert sent(out) == ["a"]
    out = answer(engine, out, 4.1, throttle_s=30.0)
    assert sent(out) == []
    assert [(topic.name, exc) for topic, exc in out.settle] == [("a", None)], "the probe: created"
    out = engine.step(34.1)
    assert sent(out) == [], "the gate has ended; the mirror, back at 0, waits for b's and c's tokens (gathered)"
    assert out.wake_at == pytest.approx(36.1)
    assert sent(engine.step(36.1)) == ["b", "c"]


def test_failed_node_reads_the_node_id_of_librdkafkas_broker_name() -> None:
    assert failed_node(DISCONNECTED) == 1
    assert failed_node(DISCONNECTED.split("]: ", 1)[1]) == 1
    assert failed_node("sasl_ssl://kafka-2.example:9093/2: Disconnected (after 5ms in state UP)") == 2
    assert failed_node(REFUSED_BOOTSTRAP) is None
    assert failed_node("1/1 brokers are down") is None
    assert failed_node("[thrd:[::1]:9092/1]: [::1]:9092/1: Disconnected (after 5ms in state UP)") == 1
    assert (
        failed_node("[::1]:9092/3: Connect to ipv6#[::1]:9092 failed: Connection refused (after 0ms in state CONNECT)")
        == 3
    )
    assert failed_node("h:1/2: Receive failed: Connection reset by peer (after 5ms in state UP)") == 2


def test_failed_node_counts_no_timed_out_request_or_connection() -> None:
    """Only the broker's side losing the connection counts: a request or a connect that timed out may be the mute."""
    assert failed_node(TIMED_OUT) is None
    assert failed_node(TIMED_OUT_RTT) is None
    assert (
        failed_node(
            "h:1/1: Connection setup timed out in state APIVERSION_QUERY (after 30010ms in state APIVERSION_QUERY)"
        )
        is None
    )
    # a connect that timed out (the kernel's ETIMEDOUT), in the words of a connect that failed: not the broker's side
    connect = (
        "127.0.0.1:9092/1: Connect to ipv4#127.0.0.1:9092 failed: Connection timed out (after 30001ms in state CONNECT)"
    )
    assert failed_node(connect) is None


# -- a request in flight on a node that goes away --------------------------------------------------------------

LOST = {
    "_TRANSPORT (librdkafka 2.16)": KafkaException(
        KafkaError(KafkaError._TRANSPORT, "Local: Broker transport failure")
    ),
    "_DESTROY_BROKER (before 2.16)": KafkaException(
        KafkaError(KafkaError._DESTROY_BROKER, "Local: Broker handle destroyed without termination")
    ),
}


@pytest.mark.parametrize("exc", LOST.values(), ids=LOST.keys())
def test_a_request_lost_with_its_node_is_outcome_unknown(exc: KafkaException) -> None:
    assert classify(exc) is Outcome.UNKNOWN
    assert was_written(exc)
    assert connection_lost(exc)


@pytest.mark.parametrize("exc", LOST.values(), ids=LOST.keys())
def test_a_retry_after_the_node_went_away_that_finds_the_topic_is_possibly_applied(exc: KafkaException) -> None:
    engine = reached()
    out = create(engine, ["t"], 0.0)
    out = answer(engine, out, 0.1, exc=exc)
    assert not out.settle, "outcome unknown, never a final answer: retried"
    out = engine.step(1.0)
    assert sent(out) == ["t"], "re-sent at once: the connection is gone, not busy"
    out = answer(engine, out, 1.1, exc=EXISTS)
    [(_, settled)] = out.settle
    assert isinstance(settled, PossiblyAppliedError), settled


@pytest.mark.parametrize("exc", LOST.values(), ids=LOST.keys())
def test_a_request_lost_with_its_node_at_the_deadline_is_outcome_unknown(exc: KafkaException) -> None:
    engine = reached()
    out = create(engine, ["t"], 0.0, timeout_s=0.5)
    out = answer(engine, out, 0.45, exc=exc)
    [(_, settled)] = out.settle
    assert isinstance(settled, OutcomeUnknownError), settled
