"""Why a topic was not sent, or why its outcome is unknown, typed where the engine builds the error
(``NotSentError.why``, ``OutcomeUnknownError.why``): callers, and the engine's model, branch on these, never on the
message's words. One sequence per reason, on simulated time."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.engine_records import submit_call
from throttled_admin import (
    ClientClosedNotSentError,
    ClientClosedOutcomeUnknownError,
    NotSentError,
    NotSentReason,
    OutcomeUnknownError,
    OutcomeUnknownReason,
)
from throttled_admin._engine import (
    CREATE_TOPICS,
    DELETE_TOPICS,
    CallSpec,
    Drained,
    Engine,
    EngineConfig,
    Operation,
    Outbox,
    RequestKind,
    RetryBackoff,
    Send,
)
from throttled_admin._engine.lanes import SECOND
from throttled_admin._engine.machine import NEW_CREDENTIALS_GRACE_S
from throttled_admin._engine.work import Topic

BAD_MSG = KafkaException(KafkaError(KafkaError._BAD_MSG, "Local: Bad message format"))
GAVE_UP = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for response from broker: Local"))
NO_CONTROLLER = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for controller: Local"))


def engine(reached: bool = True) -> Engine:
    machine = Engine(pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    if reached:
        machine.on_probe(True, 0.0)
    return machine


def spec_of(at: float, timeout_s: float, operation: Operation = CREATE_TOPICS) -> CallSpec:
    return CallSpec.starting(
        RequestKind(operation, False),
        at,
        int(timeout_s * 1000),
        retry_on_quota_violation=True,
        request_timeout_s=None,
        operation_timeout_s=None,
    )


def create_all(machine: Engine, names: list[str], at: float, timeout_s: float) -> list[Topic]:
    """One call creating ``names`` (one partition each)."""
    _, topics = submit_call(machine, spec_of(at, timeout_s), [(name, NewTopic(name, 1, 1), 1, 2) for name in names])
    return topics


def create(machine: Engine, name: str, at: float, timeout_s: float) -> Topic:
    [topic] = create_all(machine, [name], at, timeout_s)
    return topic


def sent(out: Outbox) -> Send:
    assert out.send is not None, f"nothing sent (wake at {out.wake_at})"
    return out.send


def settled(out: Outbox) -> BaseException | None:
    [(_, exc)] = out.settle
    return exc


def not_sent(out: Outbox) -> NotSentReason | None:
    exc = settled(out)
    assert isinstance(exc, NotSentError), repr(exc)
    return exc.why


def unknown(out: Outbox) -> OutcomeUnknownReason | None:
    exc = settled(out)
    assert isinstance(exc, OutcomeUnknownError), repr(exc)
    return exc.why


def garbled(machine: Engine, request: Send, at: float) -> None:
    """The answer to the request in flight is garbled (it may have been applied); the sentinel comes back."""
    assert machine.status.in_flight == request.request_id
    machine.on_results(request.request_id, dict.fromkeys(request.names, BAD_MSG), at)
    out = machine.step(at)
    assert not out.settle
    assert out.drain is not None
    machine.on_drained(Drained.ANSWERED, at)


def test_a_deadline_passed_behind_a_request_in_flight_is_deadline() -> None:
    machine = engine()
    create(machine, "a", 0.0, 30.0)
    sent(machine.step(0.0))
    create(machine, "b", 0.0, 0.3)
    assert machine.step(0.0).send is None
    assert not_sent(machine.step(0.3)) is NotSentReason.DEADLINE


def test_an_earlier_call_holding_the_name_is_name_held() -> None:
    machine = engine()
    create(machine, "a", 0.0, 30.0)
    sent(machine.step(0.0))
    create(machine, "a", 0.0, 0.3)
    assert not_sent(machine.step(0.3)) is NotSentReason.NAME_HELD


def test_a_connection_still_carrying_an_abandoned_request_is_connection_busy() -> None:
    machine = engine()
    create(machine, "a", 0.0, 1.0)
    request = sent(machine.step(0.0))
    machine.on_results(request.request_id, {"a": GAVE_UP}, 1.0)
    create(machine, "b", 1.0, 2.0)
    assert machine.step(1.0).drain is not None
    assert not_sent(machine.step(3.0)) is NotSentReason.CONNECTION_BUSY


def test_no_broker_answered_yet_is_no_broker_answered() -> None:
    machine = engine(reached=False)
    machine.step(0.0)
    create(machine, "a", 0.0, 8.0)
    out = machine.step(5.0)
    assert out.send is not None
    machine.on_results(out.send.request_id, {"a": NO_CONTROLLER}, 7.5)
    out = machine.step(7.5)
    if not out.settle:  # queued again, with too little time left for another verdict
        out = machine.step(7.6)
    assert not_sent(out) is NotSentReason.NO_BROKER_ANSWERED


def test_less_time_than_three_recent_round_trips_is_round_trip() -> None:
    machine = engine()
    for index, name in enumerate("abc"):
        at = index * 3.0
        create(machine, name, at, 30.0)
        machine.on_results(sent(machine.step(at)).request_id, {name: None}, at + 3.0)  # a whole answer, in 3 s
        machine.step(at + 3.0)
    create(machine, "d", 9.0, 1.0)
    assert not_sent(machine.step(9.0)) is NotSentReason.ROUND_TRIP


def test_less_time_than_the_margin_kept_for_the_answer_is_answer_margin() -> None:
    machine = engine()
    create(machine, "a", 0.0, 0.02)
    assert not_sent(machine.step(0.0)) is NotSentReason.ANSWER_MARGIN


def test_a_topic_cancelled_in_flight_whose_only_attempt_was_never_built_is_cancelled() -> None:
    machine = engine()
    topic = create(machine, "a", 0.0, 30.0)
    request = sent(machine.step(0.0))
    assert not machine.withdraw(*topic.ref, 0.1)  # in flight: it may complete, and is never sent again
    machine.on_results(request.request_id, {"a": NO_CONTROLLER}, 0.2)
    assert not_sent(machine.step(0.2)) is NotSentReason.CANCELLED


def test_in_flight_at_the_deadline_is_no_response() -> None:
    machine = engine()
    create(machine, "a", 0.0, 1.0)
    sent(machine.step(0.0))
    assert unknown(machine.step(1.0)) is OutcomeUnknownReason.NO_RESPONSE


def test_a_garbled_answer_with_no_time_to_send_again_is_unanswered() -> None:
    machine = engine()
    create(machine, "a", 0.0, 0.1)
    request = sent(machine.step(0.0))
    machine.on_results(request.request_id, {"a": BAD_MSG}, 0.09)
    assert unknown(machine.step(0.09)) is OutcomeUnknownReason.UNANSWERED


def test_a_throttle_that_outlasts_the_deadline_after_a_garbled_answer_is_throttled() -> None:
    machine = engine()
    create(machine, "a", 0.0, 1.0)
    garbled(machine, sent(machine.step(0.0)), 0.01)
    machine.on_throttle(1, 5.0, 0.02)
    assert unknown(machine.step(0.02)) is OutcomeUnknownReason.THROTTLED


def test_a_retry_cancelled_in_flight_and_never_built_after_a_garbled_answer_is_cancelled() -> None:
    machine = engine()
    topic = create(machine, "a", 0.0, 30.0)
    garbled(machine, sent(machine.step(0.0)), 0.01)
    retry = sent(machine.step(1.0))
    assert retry.topics == (topic.ref,)
    assert not machine.withdraw(*topic.ref, 1.1)
    machine.on_results(retry.request_id, {"a": NO_CONTROLLER}, 1.2)
    assert unknown(machine.step(1.2)) is OutcomeUnknownReason.CANCELLED


def test_an_authentication_failure_in_flight_is_authentication() -> None:
    machine = engine()
    create(machine, "a", 0.0, 30.0)
    sent(machine.step(0.0))
    machine.on_error(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"), 0.1)
    assert unknown(machine.step(0.1)) is OutcomeUnknownReason.AUTHENTICATION


def test_new_credentials_end_an_authentication_failure_and_the_old_ones_told_after() -> None:
    """Adversarial probe 134 and review 135: an authentication failure fails what is submitted within
    ``AUTH_ERROR_TTL_S`` after it; new SASL credentials end that, and a failure told within
    ``NEW_CREDENTIALS_GRACE_S`` of them (librdkafka's retries with the old ones, queued before the change) is theirs,
    not the new ones'. One told after the grace fails the work again."""
    failure = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Invalid username or password")
    machine = engine()
    machine.on_error(failure, 0.0)
    create(machine, "a", 0.1, 30.0)
    refused = settled(machine.step(0.1))
    assert isinstance(refused, KafkaException), refused
    assert refused.args[0].code() == KafkaError._AUTHENTICATION
    machine.credentials_changed(1.0)
    machine.on_error(failure, 1.0 + NEW_CREDENTIALS_GRACE_S - 0.01)  # served after the change: the old ones'
    create(machine, "b", 1.5, 30.0)
    assert sent(machine.step(1.5)).names == ["b"]
    machine.on_error(failure, 1.0 + NEW_CREDENTIALS_GRACE_S + 0.01)  # the new credentials' own
    assert unknown(machine.step(2.1)) is OutcomeUnknownReason.AUTHENTICATION


def test_topics_not_sent_at_a_deadline_each_get_their_own_error_with_their_own_reason() -> None:
    """At a deadline a call's topics with no attempts share the words of one error (``outcome.copied``), each with
    an error of its own; a topic held by an earlier call's name, between topics that are not, gets its own words (it
    differs in state and reason: the incarnations test has topics of one state that differ in reason alone)."""
    machine = engine()
    for name in ("a", "b"):
        create(machine, name, 0.0, 30.0)
    sent(machine.step(0.0))  # a and b in flight: the connection is busy, and their names are held
    names = ["x", "a", "y", "b", "z"]
    create_all(machine, names, 0.0, 0.3)
    assert machine.step(0.0).send is None
    errors = {ref.name: error for ref, error in machine.step(0.3).settle}
    assert list(errors) == names
    reasons = {name: error.why for name, error in errors.items() if isinstance(error, NotSentError)}
    assert reasons == {
        "x": NotSentReason.DEADLINE,
        "a": NotSentReason.NAME_HELD,
        "y": NotSentReason.DEADLINE,
        "b": NotSentReason.NAME_HELD,
        "z": NotSentReason.DEADLINE,
    }
    assert len({id(error) for error in errors.values()}) == len(names)  # raising one never touches another
    assert str(errors["x"]) == str(errors["y"]) == str(errors["z"]) != str(errors["a"]) == str(errors["b"])


def test_a_close_tells_a_calls_topics_in_flight_and_queued_apart_though_none_has_an_attempt() -> None:
    """close() ends a call's queued and in-flight topics together, none of them answered yet: the queued ones were
    not sent, those in flight may have been applied. The engine shares an error's words only within one state."""
    machine = Engine(pacer=None, backoff=RetryBackoff(), config=EngineConfig(max_topics_per_request=2))
    machine.on_probe(True, 0.0)
    names = ["a", "b", "c", "d"]
    create_all(machine, names, 0.0, 30.0)
    assert sent(machine.step(0.0)).names == ["a", "b"]
    machine.close(0.1)
    kinds = {ref.name: type(error) for ref, error in machine.step(0.1).settle}
    assert kinds == {
        "a": ClientClosedOutcomeUnknownError,
        "b": ClientClosedOutcomeUnknownError,
        "c": ClientClosedNotSentError,
        "d": ClientClosedNotSentError,
    }


def test_an_authentication_failure_tells_each_call_in_flight_its_own_operation() -> None:
    """A delete goes on the second lane beside a bulk create (``lanes``); an authentication failure then ends both
    calls' topics together, none of them answered: each is told its own operation was in flight. The engine shares
    an error's words only within a call's run."""
    machine = Engine(
        pacer=None, backoff=RetryBackoff(), config=EngineConfig(second_lane_from=2, max_topics_per_request=2)
    )
    machine.on_probe(True, 0.0)
    create_all(machine, ["a", "b"], 0.0, 30.0)
    submit_call(machine, spec_of(0.0, 30.0, DELETE_TOPICS), [("x", "x", 1, 1)])
    assert sent(machine.step(0.0)).names == ["a", "b"]
    machine.on_probe(True, 0.01, SECOND)
    assert sent(machine.step(0.01)).lane == SECOND
    machine.on_error(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication failed"), 0.02)
    said = {ref.name: str(error) for ref, error in machine.step(0.02).settle}
    assert list(said) == ["a", "b", "x"]
    assert all("This CreateTopics was in flight" in said[name] for name in ("a", "b")), said
    assert "This DeleteTopics was in flight" in said["x"], said
