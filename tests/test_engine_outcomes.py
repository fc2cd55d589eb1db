"""The error a topic is settled with (``_engine/outcome.py``: rule f of the engine in one place), as a table; what a
topic's attempts leave true (``_engine/lifecycle.py``: ``Past``), and the moves between its states (``Call.move``).

The engine's own tests (tests/test_engine_rules.py, tests/test_engine_model.py) check the outcomes a caller sees;
these check each case of the table on its own."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.engine_records import submit_call
from throttled_admin._engine import CREATE_TOPICS, CallSpec, Engine, RequestKind, RetryBackoff
from throttled_admin._engine.classify import Outcome
from throttled_admin._engine.contact import ContactFailure
from throttled_admin._engine.lifecycle import MOVES, Attempt, Past, TopicState
from throttled_admin._engine.outcome import (
    CANCELLED_WHY,
    NAMES_THE_TOPIC,
    RULES,
    Ending,
    Facts,
    copied,
    settle_error,
)
from throttled_admin._engine.work import Call, NameHolds, Topic
from throttled_admin._errors import (
    CannotConnectError,
    ClientClosedError,
    ClientClosedNotSentError,
    ClientClosedOutcomeUnknownError,
    NotSentError,
    NotYetVisibleError,
    OutcomeUnknownError,
    PossiblyAppliedError,
    ThrottlingQuotaExceededException,
)

Q, F, A = TopicState.QUEUED, TopicState.IN_FLIGHT, TopicState.AWAITING_VISIBILITY
NOT_CONTROLLER = KafkaException(KafkaError(KafkaError.NOT_CONTROLLER))
FAILOVER = NOT_CONTROLLER.args[0]  # ``Past.failover``: the refusal's KafkaError
EXISTS = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "Topic 't' already exists."))
AUTH = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication failed")
FAILURE = ContactFailure("127.0.0.1:1", "Connection refused", "tcp")


def attempt(outcome: Outcome, error: BaseException | None = None, *, throttle_ms: int = 0) -> Attempt:
    return Attempt(request_id=1, sent_at=9.0, ended_at=10.0, outcome=outcome, error=error, throttle_ms=throttle_ms)


THROTTLED = attempt(Outcome.THROTTLED, KafkaException(KafkaError(89)), throttle_ms=1000)
# What earlier attempts leave true: nothing, a lost answer, the broker's throttle (1 s, at 10.0), its refusal
PASTS = {
    "never answered": Past(),
    "lost": Past(unknown=True),
    "throttled": Past(throttled=THROTTLED),
    "refused": Past(refused=NOT_CONTROLLER),  # of validate_only (or a cap's refusal): applied nothing
    "failover": Past(refused=NOT_CONTROLLER, failover=FAILOVER),  # of a change: a failover may have applied it
    "lost, then refused": Past(unknown=True, refused=NOT_CONTROLLER),
}
FACTS = Facts("CreateTopics", "t", 5000, now=10.5, why="its deadline passed before it could be sent")

# (state, ending, past, what the ending brings) -> (the error's type, a piece of its message)
ROWS: list[tuple[TopicState, Ending, str, dict[str, Any], type[BaseException], str]] = [
    # the broker's last word, unless an earlier attempt may have applied it
    (F, Ending.ANSWERED, "never answered", {"exc": EXISTS}, KafkaException, "already exists"),
    (F, Ending.ANSWERED, "throttled", {"exc": EXISTS}, KafkaException, "already exists"),
    (F, Ending.ANSWERED, "lost", {"exc": EXISTS}, PossiblyAppliedError, "may have applied it"),
    (F, Ending.ANSWERED, "failover", {"exc": EXISTS}, PossiblyAppliedError, "refused with NOT_CONTROLLER"),
    (F, Ending.ANSWERED, "failover", {"exc": THROTTLED.error}, PossiblyAppliedError, "may have applied it"),
    # the deadline: truth first, then Java's form (the throttle that remains), then the broker's refusal
    (Q, Ending.DEADLINE, "lost, then refused", {}, OutcomeUnknownError, "no attempt was answered by the deadline"),
    (Q, Ending.DEADLINE, "throttled", {}, ThrottlingQuotaExceededException, "throttle_time_ms=500"),
    (Q, Ending.DEADLINE, "refused", {}, KafkaException, "NOT_CONTROLLER"),
    (Q, Ending.DEADLINE, "failover", {}, PossiblyAppliedError, "a controller failing over may say after applying"),
    (Q, Ending.DEADLINE, "never answered", {}, NotSentError, "its deadline passed before it could be sent"),
    (Q, Ending.DEADLINE, "never answered", {"failure": FAILURE}, CannotConnectError, "cannot connect to 127.0.0.1:1"),
    (F, Ending.DEADLINE, "never answered", {}, NotSentError, "not sent within timeout_ms=5000"),
    # no time for a round trip
    (Q, Ending.TOO_LATE, "never answered", {"why": "less time"}, NotSentError, "less time"),
    (Q, Ending.TOO_LATE, "lost", {"why": "less time"}, OutcomeUnknownError, "no attempt was answered"),
    (Q, Ending.TOO_LATE, "refused", {"why": "less time"}, KafkaException, "NOT_CONTROLLER"),
    (Q, Ending.TOO_LATE, "failover", {"why": "less time"}, PossiblyAppliedError, "refused with NOT_CONTROLLER"),
    (F, Ending.CANCELLED, "failover", {}, PossiblyAppliedError, "refused with NOT_CONTROLLER"),
    # cancelled, its latest attempt not sent
    (F, Ending.CANCELLED, "never answered", {}, NotSentError, CANCELLED_WHY),
    (Q, Ending.CANCELLED, "never answered", {}, NotSentError, CANCELLED_WHY),
    (F, Ending.CANCELLED, "lost", {}, OutcomeUnknownError, "its caller cancelled it after an attempt"),
    (F, Ending.CANCELLED, "throttled", {}, ThrottlingQuotaExceededException, "throttle_time_ms=500"),
    # held back by the throttle or the pacer: the longer of this throttle and the topic's own
    (Q, Ending.THROTTLED_HERE, "never answered", {"throttle_ms": 700}, ThrottlingQuotaExceededException, "=700"),
    (Q, Ending.THROTTLED_HERE, "throttled", {"throttle_ms": 700}, ThrottlingQuotaExceededException, "=1000"),
    (Q, Ending.THROTTLED_HERE, "lost", {"throttle_ms": 700}, OutcomeUnknownError, "throttle (700 ms) kept it"),
    (Q, Ending.THROTTLED_HERE, "failover", {"throttle_ms": 700}, OutcomeUnknownError, "with NOT_CONTROLLER, which"),
    # authentication failed: queued topics get it, in-flight ones are outcome unknown
    (Q, Ending.AUTH_FAILED, "never answered", {"error": AUTH}, KafkaException, "SASL authentication failed"),
    (Q, Ending.AUTH_FAILED, "lost", {"error": AUTH}, PossiblyAppliedError, "may have applied it"),
    (Q, Ending.AUTH_FAILED, "failover", {"error": AUTH}, PossiblyAppliedError, "refused with NOT_CONTROLLER"),
    (F, Ending.AUTH_FAILED, "never answered", {"error": AUTH}, OutcomeUnknownError, "was in flight"),
    # connections fail before their handshake
    (Q, Ending.CANNOT_CONNECT, "never answered", {"failure": FAILURE}, CannotConnectError, "Connection refused"),
    (F, Ending.CANNOT_CONNECT, "never answered", {"failure": FAILURE}, CannotConnectError, "Connection refused"),
    (Q, Ending.CANNOT_CONNECT, "lost", {"failure": FAILURE}, OutcomeUnknownError, "may have been handed over"),
    (Q, Ending.CANNOT_CONNECT, "failover", {"failure": FAILURE}, OutcomeUnknownError, "refused with NOT_CONTROLLER"),
    # confluent-kafka refused the call: not sent, and not a NotSentError once a broker refused an earlier attempt
    (F, Ending.SEND_REFUSED, "never answered", {"exc": TypeError("x")}, NotSentError, "refused by confluent-kafka"),
    (F, Ending.SEND_REFUSED, "lost", {"exc": TypeError("x")}, PossiblyAppliedError, "refused by confluent-kafka"),
    (F, Ending.SEND_REFUSED, "failover", {"exc": TypeError("x")}, PossiblyAppliedError, "with NOT_CONTROLLER"),
    # an answer lost, with no time to try again
    (F, Ending.ANSWER_LOST, "never answered", {"why": "no response"}, OutcomeUnknownError, "no response"),
    # closed
    (Q, Ending.CLOSED, "never answered", {}, ClientClosedNotSentError, "it was not sent"),
    (Q, Ending.CLOSED, "refused", {}, ClientClosedError, "the broker refused its last attempt"),
    (Q, Ending.CLOSED, "lost", {}, ClientClosedOutcomeUnknownError, "an earlier attempt was not answered"),
    (Q, Ending.CLOSED, "failover", {}, ClientClosedOutcomeUnknownError, "refused with NOT_CONTROLLER, which"),
    (F, Ending.CLOSED, "never answered", {}, ClientClosedOutcomeUnknownError, "its request was in flight"),
    # applied, not yet shown by every broker
    (A, Ending.DEADLINE, "never answered", {"lagging": (2,)}, NotYetVisibleError, "broker 2 does not"),
    (A, Ending.CLOSED, "lost", {"lagging": (2,)}, NotYetVisibleError, "before the client was closed"),
]


@pytest.mark.parametrize(("state", "ending", "past", "given", "kind", "says"), ROWS)
def test_each_case_of_rule_f_has_its_error(
    state: TopicState, ending: Ending, past: str, given: dict[str, Any], kind: type[BaseException], says: str
) -> None:
    error = settle_error(ending, state, PASTS[past], FACTS._replace(**given))
    assert isinstance(error, kind), repr(error)
    assert says in str(error), str(error)


FIRST_ATTEMPTS = [row for row in ROWS if row[2] == "never answered" and "lagging" not in row[3]]


@pytest.mark.parametrize(("state", "ending", "past", "given", "kind", "says"), FIRST_ATTEMPTS)
def test_a_topic_with_no_attempts_is_named_by_its_error_only_where_the_engine_makes_each_anew(
    state: TopicState, ending: Ending, past: str, given: dict[str, Any], kind: type[BaseException], says: str
) -> None:
    """The engine shares one error's words between the topics with no attempts of a run (``Engine._end``), but for
    the endings in NAMES_THE_TOPIC: so no other rule may put the topic's name in the error. ``copied`` makes each
    topic's own: of the same type, with the same args and attributes, never the same object."""
    one, other = (settle_error(ending, state, Past(), FACTS._replace(topic=name, **given)) for name in ("t", "u"))
    names_it = ending in NAMES_THE_TOPIC
    assert (str(one) != str(other) or vars(one) != vars(other)) is names_it
    twin = copied(one)
    assert type(twin) is type(one)
    assert twin is not one
    assert twin.args == one.args
    assert vars(twin) == vars(one)
    assert (twin.__cause__, twin.__context__, twin.__traceback__) == (None, None, None)


def test_every_ending_a_first_attempt_can_have_is_checked_for_the_name() -> None:
    rules = {(state, ending) for state, ending, *_ in FIRST_ATTEMPTS}
    assert rules == {(state, ending) for state, ending in RULES if state is not A}


def test_a_refusal_after_an_earlier_refusal_is_not_a_not_sent_error() -> None:
    """Sent before (the broker refused it, nothing applied): confluent-kafka's refusal of the next call is no
    NotSentError, and neither is close()."""
    refused = settle_error(Ending.SEND_REFUSED, F, PASTS["refused"], FACTS._replace(exc=TypeError("x")))
    assert type(refused) is KafkaException
    closed = settle_error(Ending.CLOSED, Q, PASTS["throttled"], FACTS)
    assert isinstance(closed, ClientClosedError)
    assert not isinstance(closed, NotSentError)
    assert not closed.sent


def test_the_table_covers_every_state_a_topic_can_be_settled_from() -> None:
    settled_from = {state for state, moves in MOVES.items() if TopicState.SETTLED in moves}
    assert settled_from == {TopicState.HELD_BEHIND_NAME, Q, F, A}
    assert {state for state, _ending in RULES} == {Q, F, A}  # held behind its name: queued
    held = settle_error(Ending.CLOSED, TopicState.HELD_BEHIND_NAME, Past(), FACTS)
    assert isinstance(held, ClientClosedNotSentError)


def test_what_attempts_leave_true_is_read_off_the_history() -> None:
    refused = attempt(Outcome.NOT_APPLIED, NOT_CONTROLLER)
    assert Past.of([]) == Past()
    assert Past.of([attempt(Outcome.UNKNOWN), attempt(Outcome.NOT_SENT)]) == Past(unknown=True)
    # a refusal ends what a throttle said, and stays until another refusal replaces it; NOT_CONTROLLER of a change
    # stays as a failover's, which may follow an applied change (never of validate_only, which applies nothing)
    assert Past.of([THROTTLED, refused]) == Past(refused=NOT_CONTROLLER, failover=FAILOVER)
    assert Past.of([refused, THROTTLED]) == Past(throttled=THROTTLED, refused=NOT_CONTROLLER, failover=FAILOVER)
    assert Past.of([THROTTLED, refused], writes=False) == Past(refused=NOT_CONTROLLER)
    assert Past.of([refused, THROTTLED, attempt(Outcome.NOT_SENT)]).refusal == KafkaError(89).str()
    assert Past.of([refused]).refusal == KafkaError(KafkaError.NOT_CONTROLLER).str()
    assert not Past.of([attempt(Outcome.NOT_SENT)]).answered


def test_a_topic_moves_only_as_its_lifecycle_allows_and_its_call_holds_it_by_state() -> None:
    spec = CallSpec.starting(
        RequestKind(CREATE_TOPICS, validate_only=False),
        0.0,
        1000,
        retry_on_quota_violation=True,
        request_timeout_s=None,
        operation_timeout_s=None,
    )
    call = Call(spec)
    topic = Topic("t", "t", call, 1)
    held = Topic("t", "t", call, 1)
    call.move(held, TopicState.HELD_BEHIND_NAME)  # (an earlier call names it too)
    assert list(call.queued.values()) == [held]
    call.move(held, TopicState.WITHDRAWN)
    call.move(topic, Q)
    call.move(topic, F)
    assert (topic.state, list(call.in_flight), list(call.queued)) == (F, ["t"], [])
    with pytest.raises(AssertionError, match="no move from in flight to withdrawn"):
        call.move(topic, TopicState.WITHDRAWN)
    call.move(topic, A)
    call.move(topic, TopicState.SETTLED)
    assert (call.queued, call.in_flight, call.awaiting) == ({}, {}, {})
    with pytest.raises(AssertionError):
        call.move(topic, Q)
    topic.history += (attempt(Outcome.UNKNOWN), attempt(Outcome.NOT_APPLIED, NOT_CONTROLLER))
    assert topic.attempts == 2
    assert topic.outcome_unknown
    assert topic.past.refused is NOT_CONTROLLER


def engine_with_calls(*names: str) -> tuple[Engine, list[Topic]]:
    """A client that has reached the cluster, with one single-topic create call per name, in order."""
    engine = Engine(pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    engine.on_probe(True, 0.0)
    topics = []
    for name in names:
        spec = CallSpec(RequestKind(CREATE_TOPICS, False), 10.0, 10_000, True, None, None, started_at=0.0)
        _, [topic] = submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2)])
        topics.append(topic)
    return engine, topics


def test_an_engine_keeps_each_attempt_and_moves_the_topic_through_its_states() -> None:
    engine, [topic] = engine_with_calls("t")
    assert topic.state is Q
    first = engine.step(0.0).send
    assert first is not None
    assert topic.state is F
    engine.on_results(first.request_id, {"t": NOT_CONTROLLER}, 0.01)
    assert not engine.step(0.01).settle
    assert topic.state is Q  # to be sent again after the back-off, once metadata is read (NOT_CONTROLLER)
    assert [(a.request_id, a.outcome, a.error) for a in topic.history] == [(1, Outcome.NOT_APPLIED, NOT_CONTROLLER)]
    assert engine.step(0.2).read_metadata
    engine.on_metadata({}, 0.21)
    second = engine.step(0.21).send
    assert second is not None
    assert (second.request_id, topic.state) == (2, F)
    engine.on_results(second.request_id, {"t": None}, 0.22)
    assert engine.step(0.22).settle == [(topic.ref, None)]
    assert topic.state is TopicState.SETTLED
    assert [(a.request_id, a.outcome, a.sent_at) for a in topic.history][1:] == [(2, Outcome.SUCCESS, 0.21)]


def test_a_topic_an_earlier_call_names_is_held_behind_the_name_until_that_call_settles_it() -> None:
    engine, [first, later] = engine_with_calls("t", "t")
    assert (first.state, later.state) == (Q, TopicState.HELD_BEHIND_NAME)
    sent = engine.step(0.0).send
    assert sent is not None
    assert sent.topics == (first.ref,)
    engine.on_results(sent.request_id, {"t": EXISTS}, 0.01)
    out = engine.step(0.01)
    assert out.settle == [(first.ref, EXISTS)]
    assert later.state is F  # queued once the name was free, and sent in the same step
    assert out.send is not None
    assert out.send.topics == (later.ref,)


def test_a_name_is_held_by_the_earliest_pending_topic_that_names_it() -> None:
    _engine, [first, second, third, other] = engine_with_calls("t", "t", "t", "u")
    names = NameHolds()  # the engine's own holds these already: a fresh one, fed by hand
    assert [names.hold(topic) for topic in (first, second, third, other)] == [True, False, False, True]
    assert names.release(second) is None  # withdrawn while it waited: the name stays with the first
    assert names.release(first) is third
    assert names.release(third) is None
    assert names.release(other) is None
    assert names.hold(second)  # nothing left of the name


def test_a_call_spec_made_by_starting_is_the_one_its_constructor_makes() -> None:
    """``CallSpec.starting`` sets its fields at once, past the frozen ``__init__`` (issue 39): every field is set, as
    the constructor sets it (a field added later and left out fails here, not in a call)."""
    kind = RequestKind(CREATE_TOPICS, False)
    made = CallSpec.starting(
        kind, 5.0, 2_500, retry_on_quota_violation=False, request_timeout_s=1.5, operation_timeout_s=None
    )
    built = CallSpec(kind, 7.5, 2_500, False, 1.5, None, started_at=5.0, wait_for_metadata=False)
    assert made == built
    assert vars(made) == vars(built)
