"""The error a topic is settled with: rule f of ``machine`` (truthful outcomes), decided in one place.

A topic ends for a reason (``Ending``) in a state (``lifecycle.TopicState``), after attempts whose ``Past`` says
what is true of it; ``settle_error`` looks the rule up in ``RULES`` and applies it to the ``Facts`` the engine
gives. What each rule returns, by what the topic's past says (the first column that applies, from the left):

==================  ==================  =====================  =====================  ==========================
ending              an answer was lost  the broker said 89     the broker refused     none of these (never sent)
==================  ==================  =====================  =====================  ==========================
``ANSWERED``        possibly applied    the answer             the answer             the answer (*)
``DEADLINE``        outcome unknown     89, throttle left      that refusal           cannot connect / not sent
``TOO_LATE``        as DEADLINE         as DEADLINE            as DEADLINE            not sent (too late)
``CANCELLED``       outcome unknown     as DEADLINE            as DEADLINE            not sent (cancelled)
``THROTTLED_HERE``  outcome unknown     89, longer throttle    89                     89
``AUTH_FAILED``     possibly applied    the auth error         the auth error         the auth error
``CANNOT_CONNECT``  outcome unknown     cannot connect         cannot connect         cannot connect
``SEND_REFUSED``    possibly applied    refused (sent before)  refused (sent before)  refused, not sent
``ANSWER_LOST``     outcome unknown     outcome unknown        outcome unknown        outcome unknown (why)
``CLOSED``          closed, unknown     closed, refused        closed, refused        closed, not sent
==================  ==================  =====================  =====================  ==========================

(*) An "already done" (``ALREADY_DONE``) with no earlier attempt unanswered and ``Facts.forwarded`` (a node went
away while it was in flight, or in the ``slot.FORWARD_GRACE_S`` before it was sent; or the driver read the controller
quorum's leader epoch grown, ``on_results(controller_moved=True)``) is possibly applied: a KRaft broker re-sends a
forwarded request whose controller went away, and the next controller finds what the old one applied (issue 37, seen
on a Kafka 4.4 quorum's rolling restart; docs/reliability.md).

A change refused with NOT_CONTROLLER or REQUEST_TIMED_OUT (``Past.failover``; never validate_only) is in the first
column, "an answer was lost", whatever came after: a controller failing over may give either after it applied the
change (a retry's "already done" was seen on that rolling restart). The refusal, amended, is what the deadline tells.

In flight (handed over): ``ANSWERED``, ``SEND_REFUSED`` and ``ANSWER_LOST`` (no usable answer: at the deadline,
or with no time left for another attempt) as above; ``DEADLINE``, ``CANCELLED`` and ``CANNOT_CONNECT`` as queued
(librdkafka's verdict says the latest attempt was never built); ``AUTH_FAILED``: outcome unknown (librdkafka keeps
it until a connection authenticates); ``CLOSED``: closed, outcome unknown. Awaiting visibility (applied):
``DEADLINE`` and ``CLOSED``: not yet visible.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import NamedTuple

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._engine.classify import error_of
from throttled_admin._engine.contact import ContactFailure
from throttled_admin._engine.lifecycle import Past, TopicState
from throttled_admin._engine.request import Forwarded
from throttled_admin._engine.work import Topic
from throttled_admin._errors import (
    ClientClosedError,
    NotSentReason,
    NotYetVisibleError,
    OutcomeUnknownReason,
    ThrottlingQuotaExceededException,
    after_failover_refusal,
    after_lost_forward,
    after_unknown_attempt,
    cannot_connect_error,
    closed_error,
    in_flight_error,
    not_sent_error,
    not_visible_error,
    refused_error,
    unknown_outcome_error,
)

__all__ = [
    "ALREADY_DONE",
    "CANCELLED_WHY",
    "NAMES_THE_TOPIC",
    "RULES",
    "Ending",
    "Facts",
    "closed_here",
    "copied",
    "settle_error",
    "why_not_sent",
]

# Kafka's answer, by API, to a request whose change is already there (a re-sent one that was applied before)
ALREADY_DONE = {
    "CreateTopics": KafkaError.TOPIC_ALREADY_EXISTS,
    "DeleteTopics": KafkaError.UNKNOWN_TOPIC_OR_PART,
    "CreatePartitions": KafkaError.INVALID_PARTITIONS,
}
CANCELLED_WHY = "its caller cancelled it while librdkafka was still looking for the controller"


class Ending(enum.Enum):
    ANSWERED = "the broker's last word on its latest attempt"  # ``Facts.exc``
    DEADLINE = "its call's deadline came"  # queued: ``Facts.why`` it was not sent, ``Facts.failure``
    TOO_LATE = "too little time is left for an answer"  # ``Facts.why``
    CANCELLED = "its caller cancelled it, and its latest attempt was not sent"
    THROTTLED_HERE = "the throttle or the pacer holds it past its deadline (or retry is off)"  # ``Facts.throttle_ms``
    AUTH_FAILED = "authentication failed"  # ``Facts.error``
    CANNOT_CONNECT = "no broker answered, and connections fail before their handshake"  # ``Facts.failure``
    SEND_REFUSED = "confluent-kafka refused the call"  # ``Facts.exc``
    ANSWER_LOST = "its latest attempt got no usable answer, and there is no time to try again"  # ``Facts.why``
    CLOSED = "the client was closed"


class Facts(NamedTuple):
    """What the engine knows as the topic ends (only what its ending needs)."""

    operation: str  # the Kafka API name
    topic: str
    timeout_ms: int  # its call's
    now: float = 0.0
    exc: BaseException | None = None
    error: KafkaError | None = None
    throttle_ms: int = 0
    why: str = ""
    failure: ContactFailure | None = None
    lagging: tuple[int, ...] | None = None  # applied: the brokers whose Metadata did not show it
    because: NotSentReason | OutcomeUnknownReason | None = None  # ``why``, typed (``NotSentError.why`` ...)
    forwarded: Forwarded | None = None  # why an "already done" may be its broker's re-send (never validate-only)


Rule = Callable[[Past, Facts], BaseException]


def settle_error(ending: Ending, state: TopicState, past: Past, facts: Facts) -> BaseException:
    """The error the topic is settled with (rule f). A topic held behind its name is queued."""
    if state is TopicState.HELD_BEHIND_NAME:
        state = TopicState.QUEUED
    return RULES[state, ending](past, facts)


# The endings whose error names the topic even when it has no attempts (the throttle it is told of). Under every other
# ending, topics with no attempts and no lagging brokers, of one state and with one ``why``, get errors alike but for
# being distinct objects, the rest of ``Facts`` being the same for a call's run: ``Engine._end`` gives such a topic a
# copy of the error of the one before it in the run (``copied``) when they match (tests/test_engine_outcomes.py checks
# each rule so).
NAMES_THE_TOPIC = frozenset({Ending.THROTTLED_HERE})


def copied(error: BaseException) -> BaseException:
    """An error like ``error``, never raised: its type, its args and its attributes. Each future gets its own, as
    raising one error from many futures would chain every raise's traceback onto it. A copy costs about half what
    making it anew does (a ``NotSentError``: 1.2 us against 2.3)."""
    twin = type(error).__new__(type(error), *error.args)
    twin.__dict__.update(error.__dict__)
    return twin


def _answered(past: Past, facts: Facts) -> BaseException:
    assert facts.exc is not None
    error = error_of(facts.exc)
    if past.unknown and error is not None:
        # An earlier attempt had no usable answer and may have applied the change: whatever the broker says of
        # this one ("already done", or a refusal that applied nothing), the outcome is unknown.
        return after_unknown_attempt(error, facts.operation)
    if past.failover is not None and error is not None:
        return after_failover_refusal(error, facts.operation, past.failover)  # perhaps applied by that attempt
    if error is None or error.code() != ALREADY_DONE.get(facts.operation):
        return facts.exc
    if facts.forwarded is not None:  # perhaps the answer to its broker's re-send
        return after_lost_forward(error, facts.operation, facts.forwarded.value)
    return facts.exc


def _deadline(past: Past, facts: Facts) -> BaseException:
    """Java's rules: a throttled topic gets the throttle that remains, not a timeout; truth first."""
    if past.unknown:
        return unknown_outcome_error(
            facts.operation, "no attempt was answered by the deadline", why=OutcomeUnknownReason.UNANSWERED
        )
    if past.failover is not None:  # refused as a failover may refuse what it applied
        return after_failover_refusal(past.failover, facts.operation, past.failover)
    if past.throttled is not None:
        throttled = past.throttled
        remaining_ms = max(0, int(throttled.throttle_ms - (facts.now - throttled.ended_at) * 1000))
        return ThrottlingQuotaExceededException(remaining_ms, facts.topic, sent=True)
    if past.refused is not None:
        return past.refused  # refused before (nothing applied), and no time was left to try again
    if facts.failure is not None:  # no broker has answered, and connections fail before their handshake
        return cannot_connect_error(facts.operation, facts.failure.address, facts.failure.reason)
    return not_sent_error(facts.operation, facts.timeout_ms, facts.why, why=_not_sent(facts))


def _too_late(past: Past, facts: Facts) -> BaseException:
    if past.answered:
        return _deadline(past, facts)
    return not_sent_error(facts.operation, facts.timeout_ms, facts.why, why=_not_sent(facts))


def _cancelled(past: Past, facts: Facts) -> BaseException:
    if past.unknown:
        why = "its caller cancelled it after an attempt that got no usable answer"
        return unknown_outcome_error(facts.operation, why, why=OutcomeUnknownReason.CANCELLED)
    if past.answered:
        return _deadline(past, facts)
    return not_sent_error(facts.operation, facts.timeout_ms, CANCELLED_WHY, why=NotSentReason.CANCELLED)


def _throttled_here(past: Past, facts: Facts) -> BaseException:
    if past.unknown or past.failover is not None:  # its earlier attempt may have been applied: not "throttled"
        earlier = "was not answered"
        if (failover := None if past.unknown else past.failover) is not None:
            earlier = f"was refused with {failover.name()}, which a failover may give"
        why = f"an earlier attempt {earlier}, and the broker's throttle ({facts.throttle_ms} ms) kept it from "
        return unknown_outcome_error(facts.operation, why + "being sent again", why=OutcomeUnknownReason.THROTTLED)
    throttle_ms = facts.throttle_ms if past.throttled is None else max(facts.throttle_ms, past.throttled.throttle_ms)
    # Never written, unless a broker refused an earlier attempt (nothing applied either way).
    return ThrottlingQuotaExceededException(throttle_ms, facts.topic, sent=past.answered)


def _auth_failed(past: Past, facts: Facts) -> BaseException:
    assert facts.error is not None
    if past.unknown:  # an earlier attempt was sent and its answer lost: it may have applied
        return after_unknown_attempt(facts.error, facts.operation)
    if past.failover is not None:
        return after_failover_refusal(facts.error, facts.operation, past.failover)
    return KafkaException(facts.error)


def _cannot_connect(past: Past, facts: Facts) -> BaseException:
    failure = facts.failure
    assert failure is not None
    if past.unknown or past.failover is not None:  # a send cut short after its call may have begun (librdkafka may
        # write it once connected), or a refusal a failover may give after applying it
        earlier = "may have been handed over"
        if (failover := None if past.unknown else past.failover) is not None:
            earlier = f"was refused with {failover.name()}"
        why = f"an attempt {earlier}, and connections to {failure.address} fail"
        return unknown_outcome_error(facts.operation, why, why=OutcomeUnknownReason.CANNOT_CONNECT)
    return cannot_connect_error(facts.operation, failure.address, failure.reason)


def _send_refused(past: Past, facts: Facts) -> BaseException:
    assert facts.exc is not None
    refused: BaseException = refused_error(facts.operation, facts.exc)
    if past.refusal is not None:  # a broker refused an earlier attempt: it was written, not applied
        refused = KafkaException(refused.args[0])
    return _answered(past, facts._replace(exc=refused))


def _answer_lost(past: Past, facts: Facts) -> BaseException:
    because = facts.because
    why = because if isinstance(because, OutcomeUnknownReason) else OutcomeUnknownReason.UNANSWERED
    return unknown_outcome_error(facts.operation, facts.why, why=why)


def _not_sent(facts: Facts) -> NotSentReason:
    """Why a topic was not sent, typed: what the engine said, else its deadline."""
    return facts.because if isinstance(facts.because, NotSentReason) else NotSentReason.DEADLINE


def _closed_queued(past: Past, facts: Facts) -> BaseException:
    if past.failover is not None and not past.unknown:
        return closed_error(facts.operation, sent=True, in_flight=False, failover=past.failover.name())
    return closed_error(facts.operation, sent=past.unknown, refused=past.refusal, in_flight=False)


def _in_flight_auth_failed(past: Past, facts: Facts) -> BaseException:
    # Handed to librdkafka, which keeps it and sends it once a connection authenticates (a transient failure,
    # credentials still propagating): its outcome is unknown.
    assert facts.error is not None
    return in_flight_error(facts.error, facts.operation)


def _in_flight_closed(past: Past, facts: Facts) -> BaseException:
    return closed_error(facts.operation, sent=True)


def _not_visible(past: Past, facts: Facts) -> BaseException:
    return not_visible_error(facts.operation, facts.timeout_ms, facts.lagging)


def _not_visible_closed(past: Past, facts: Facts) -> BaseException:
    return not_visible_error(facts.operation, facts.timeout_ms, facts.lagging, closed=True)


_Q, _F, _A = TopicState.QUEUED, TopicState.IN_FLIGHT, TopicState.AWAITING_VISIBILITY
# (the topic's state, why it ends) -> the rule; no other pair happens. The topics of an answered request are still
# in flight while their verdicts are carried out: DEADLINE, CANCELLED and CANNOT_CONNECT then mean that the latest
# attempt was not sent (librdkafka never built the request).
RULES: dict[tuple[TopicState, Ending], Rule] = {
    (_Q, Ending.DEADLINE): _deadline,
    (_Q, Ending.TOO_LATE): _too_late,
    (_Q, Ending.CANCELLED): _cancelled,
    (_Q, Ending.THROTTLED_HERE): _throttled_here,
    (_Q, Ending.AUTH_FAILED): _auth_failed,
    (_Q, Ending.CANNOT_CONNECT): _cannot_connect,
    (_Q, Ending.CLOSED): _closed_queued,
    (_F, Ending.ANSWERED): _answered,
    (_F, Ending.DEADLINE): _deadline,
    (_F, Ending.CANCELLED): _cancelled,
    (_F, Ending.CANNOT_CONNECT): _cannot_connect,
    (_F, Ending.ANSWER_LOST): _answer_lost,
    (_F, Ending.SEND_REFUSED): _send_refused,
    (_F, Ending.AUTH_FAILED): _in_flight_auth_failed,
    (_F, Ending.CLOSED): _in_flight_closed,
    (_A, Ending.DEADLINE): _not_visible,
    (_A, Ending.CLOSED): _not_visible_closed,
}


def why_not_sent(reached: bool, held: bool, reading_ids: bool, busy: bool) -> tuple[str, NotSentReason]:
    """Why a topic that was never sent (or whose attempts were never built) was not sent by its deadline: no broker
    had answered, an earlier call held its name (rule a), its name's ids were being read, or the connection still
    carried an abandoned request (rule b)."""
    if not reached:
        return "no broker had answered this client", NotSentReason.NO_BROKER_ANSWERED
    if held:
        return "an earlier call still held the topic's name", NotSentReason.NAME_HELD
    if reading_ids:
        why = "the brokers' topic ids of the name (to tell the new topic from an earlier one) were still being read"
        return why, NotSentReason.READING_IDS
    if busy:
        why = "the connection to the controller still carried an earlier request that got no answer"
        return why, NotSentReason.CONNECTION_BUSY
    return "its deadline passed before it could be sent", NotSentReason.DEADLINE


def closed_here(topic: Topic | None, operation: str, *, unsent: bool) -> ClientClosedError | NotYetVisibleError:
    """The error of a topic settled by close() from a frame that cannot wait for the engine (a signal handler that
    interrupted it): what the engine's record of it says (None: no longer pending there, its future not yet
    resolved), and where that cannot tell, outcome unknown. ``unsent``: its request was about to be sent and
    certainly was not (the driver knows)."""
    if topic is None:  # settled or withdrawn, its future not yet resolved: its outcome is not known here
        return closed_error(operation, sent=True)
    if topic.state is TopicState.AWAITING_VISIBILITY:  # applied
        return not_visible_error(operation, topic.call.spec.timeout_ms, topic.lagging, closed=True)
    queued = topic.state is TopicState.QUEUED or topic.state is TopicState.HELD_BEHIND_NAME or unsent
    if queued and not topic.outcome_unknown:
        if topic.attempts == 0:
            return closed_error(operation, sent=False)
        past = topic.past
        if past.failover is not None:
            return closed_error(operation, sent=True, in_flight=False, failover=past.failover.name())
        if past.refusal is not None:
            return closed_error(operation, sent=False, refused=past.refusal, in_flight=False)
    # in flight, or after an unanswered attempt
    return closed_error(operation, sent=True, in_flight=not queued)
