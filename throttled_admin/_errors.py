"""Exceptions raised by throttled_admin.

Every per-topic failure is a ``confluent_kafka.KafkaException`` whose ``args[0]`` is a ``KafkaError`` (its code
and message), so a handler written for confluent-kafka keeps working. What the caller can conclude about the
topic is the exception's type::

    confluent_kafka.KafkaException
    ├── ThrottlingQuotaExceededException   throttled by the controller mutation quota (KIP-599); not applied
    ├── NotSentError                       certainly not applied: never written to a broker
    │   └── CannotConnectError             ... because no broker could be reached
    ├── OutcomeUnknownError                sent, and no usable answer: the broker may or may not have applied it
    │   └── PossiblyAppliedError           the broker's answer to a retry after an attempt with an unknown outcome
    ├── NotYetVisibleError                 applied, but not yet in every broker's metadata (``wait_for_metadata``)
    └── ClientClosedError                  the client was closed with the topic pending (``.sent``)
        ├── ClientClosedNotSentError       ... queued, never sent: also a NotSentError
        └── ClientClosedOutcomeUnknownError ... in flight, or an earlier attempt unanswered: also an OutcomeUnknownError

Why a topic was not sent, or why its outcome is unknown, is also typed: ``NotSentError.why`` is a ``NotSentReason`` and
``OutcomeUnknownError.why`` an ``OutcomeUnknownReason`` (None where the exception's type says it all: a closed client,
``PossiblyAppliedError``, a topic refused before sending with the code a broker would give), so that a caller, and the
engine's model, branch on them and never on the message's words.

- ``ThrottlingQuotaExceededException``: ``THROTTLING_QUOTA_EXCEEDED`` (retriable), with ``throttle_time_ms``.
- ``NotSentError``: ``_TIMED_OUT`` "... not sent within timeout_ms=...: ..." when the call's deadline passed
  before the topic could be sent; ``_INVALID_ARG`` "... refused by confluent-kafka: ..." when confluent-kafka
  refused the call itself.
- ``CannotConnectError``: ``_TRANSPORT`` "... not sent: cannot connect to ADDRESS (REASON)".
- ``OutcomeUnknownError``: ``_TIMED_OUT`` "... outcome unknown: ...; the broker may or may not have applied it, and
  may still apply it ..." when the topic was sent and no answer came by the deadline (no answer means the request
  may still be at the controller, which completes what it has begun however late); an authentication failure
  (``_AUTHENTICATION``, SASL_AUTHENTICATION_FAILED, its code kept) for a topic in flight ("... outcome unknown ...":
  librdkafka keeps the request and sends it once a connection authenticates).
- ``PossiblyAppliedError``: whatever ends a call after an attempt whose outcome was unknown, code kept, "... An
  earlier attempt of this ..., whose outcome was unknown ..., may have applied it.": the broker's "already done"
  (TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PART, INVALID_PARTITIONS), a refusal that applied nothing this time
  (REQUEST_TIMED_OUT, NOT_CONTROLLER, error 89 with retry off, ...), confluent-kafka refusing the retry, or an
  authentication failure; and any other "already done" when a node went away while it was in flight or in the 5 s
  before it was sent ("... its broker may have re-sent it to the next controller ...": Kafka's forwarding
  re-sends it).
- ``NotYetVisibleError``: ``_TIMED_OUT`` "... applied, but not yet visible in every broker's metadata by the
  deadline (timeout_ms=...): broker N does not ...", with ``brokers`` (the ids that lag), for a call with
  ``wait_for_metadata=True`` whose change the controller applied but some broker did not yet show by the
  deadline (or by ``close()``).
- ``ClientClosedError``: ``_DESTROY`` "ThrottledAdminClient was closed before ... completed; ...". ``.sent`` is
  True when an attempt may have been applied: its request was in flight, or an earlier attempt's answer was lost
  (the exception is then a ``ClientClosedOutcomeUnknownError``, also an ``OutcomeUnknownError``). For a queued
  topic it is False, and the exception is a ``ClientClosedNotSentError``, also a ``NotSentError``, except for one
  whose last attempt the broker refused (nothing applied, but it was sent): a plain ``ClientClosedError``.

Other failures are confluent-kafka's own ``KafkaException`` with the broker's error unchanged (e.g.
POLICY_VIOLATION, INVALID_REPLICATION_FACTOR), or an authentication failure for a topic never sent. Bad input
raises ``ValueError`` / ``TypeError`` before anything is sent; a topic's count or replica assignment out of bounds
raises ``TopicValueError`` (a ``ValueError``) saying which field and which limit, so a caller such as the command
line can word it in its own terms.

Each exception pickles to its own class with the same code and message (Spark ships exceptions between
processes; confluent-kafka's ``KafkaException`` itself does not pickle).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._kafka.refusals import THROTTLING_QUOTA_MESSAGE

__all__ = [
    "CLOSED_MESSAGE",
    "CannotConnectError",
    "ClientClosedError",
    "ClientClosedNotSentError",
    "ClientClosedOutcomeUnknownError",
    "NotSentError",
    "NotSentReason",
    "NotYetVisibleError",
    "OutcomeUnknownError",
    "OutcomeUnknownReason",
    "PossiblyAppliedError",
    "ThrottlingQuotaExceededException",
    "TopicValueError",
    "after_lost_forward",
    "after_unknown_attempt",
    "cannot_connect_error",
    "closed_error",
    "in_flight_error",
    "not_sent_error",
    "not_visible_error",
    "refused_error",
    "unknown_outcome_error",
]

DEFAULT_MESSAGE = THROTTLING_QUOTA_MESSAGE  # Kafka's, when the broker sends none
# confluent-kafka's RuntimeError for a call on a closed AdminClient (or one whose __init__ was never called).
CLOSED_MESSAGE = "AdminClient has been closed"


class NotSentReason(Enum):
    """Why a topic was not sent (``NotSentError.why``): nothing of it was written to a broker."""

    DEADLINE = "deadline"  # its call's deadline passed before it could be sent
    NO_BROKER_ANSWERED = "no broker answered"  # the deadline passed, and no broker had answered this client yet
    NAME_HELD = "name held"  # ... while an earlier call still held the topic's name (docs/semantics.md, rule a)
    READING_IDS = "reading ids"  # ... while every broker's topic ids of the name were read (wait_for_metadata)
    CONNECTION_BUSY = "connection busy"  # ... while the connection carried an earlier request with no answer (rule b)
    ROUND_TRIP = "round trip"  # less time was left than recent round trips took (rule d)
    ANSWER_MARGIN = "answer margin"  # less time was left than the least kept for the answer (rule d)
    CANCELLED = "cancelled"  # its caller cancelled it before any attempt reached a broker (rule j)
    REFUSED = "refused"  # confluent-kafka refused the call itself (``_INVALID_ARG``)
    CANNOT_CONNECT = "cannot connect"  # no broker could be reached (``CannotConnectError``)


class OutcomeUnknownReason(Enum):
    """Why a topic's outcome is unknown (``OutcomeUnknownError.why``): an attempt was handed over, no usable answer
    came, and no later attempt settled it."""

    NO_RESPONSE = "no response"  # its request was still in flight at the call's deadline
    UNANSWERED = "unanswered"  # an attempt got no usable answer (lost, garbled, left out), and none was sent again
    THROTTLED = "throttled"  # after such an attempt, the broker's throttle kept it from being sent again
    CANCELLED = "cancelled"  # after such an attempt, its caller cancelled it (rule j)
    CANNOT_CONNECT = "cannot connect"  # after a send that may have been handed over, connections fail
    AUTHENTICATION = "authentication"  # authentication failed with its request in flight


class ThrottlingQuotaExceededException(KafkaException):
    """A topic was throttled by the controller mutation quota (KIP-599), as Java's exception of that name.

    ``throttle_time_ms`` is how long the broker asked the client to wait, measured from when the
    exception was raised; ``topic`` the topic it is about (None for a whole call). ``sent``: False when the topic
    was never written to a broker (the throttle or the pacer held it past its deadline), True when a broker refused
    it with error 89, None when not said; either way nothing was applied."""

    throttle_time_ms: int
    topic: str | None
    sent: bool | None

    def __init__(
        self, throttle_time_ms: int, topic: str | None = None, message: str | None = None, sent: bool | None = None
    ):
        text = message or DEFAULT_MESSAGE
        if throttle_time_ms > 0:
            text = f"{text} (throttle_time_ms={throttle_time_ms})"
        super().__init__(KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED, text, retriable=True))
        self.throttle_time_ms = max(0, int(throttle_time_ms))
        self.topic = topic
        self.sent = sent
        self._message = message  # the broker's own (Redpanda's), kept through pickling

    def __reduce__(
        self,
    ) -> tuple[type[ThrottlingQuotaExceededException], tuple[int, str | None, str | None, bool | None]]:
        return (type(self), (self.throttle_time_ms, self.topic, self._message, self.sent))


class NotSentError(KafkaException):
    """The topic was certainly not applied: its request was never written to a broker."""

    # When the call's deadline is why (_TIMED_OUT): the operation, its timeout_ms and the reason, in parts, for a
    # front end to word in its own terms (the command line names --timeout-ms); otherwise None.
    operation: str | None
    timeout_ms: int | None
    reason: str | None
    why: NotSentReason | None  # why, typed (None where the type and code say it: closed, refused before sending)

    def __init__(
        self,
        error: KafkaError,
        *,
        operation: str | None = None,
        timeout_ms: int | None = None,
        reason: str | None = None,
        why: NotSentReason | None = None,
    ) -> None:
        super().__init__(error)
        self.operation = operation
        self.timeout_ms = timeout_ms
        self.reason = reason
        self.why = why

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"operation": self.operation, "timeout_ms": self.timeout_ms, "reason": self.reason, "why": self.why}
        return (_rebuild, (type(self), self.args[0], fields))


def _rebuild(cls: type[NotSentError], error: KafkaError, fields: dict[str, Any]) -> NotSentError:
    return cls(error, **fields)


class CannotConnectError(NotSentError):
    """The topic was certainly not applied: no broker could be reached (the message names the address and why)."""


class OutcomeUnknownError(KafkaException):
    """The topic's request was sent and no usable answer came: the broker may or may not have applied it."""

    why: OutcomeUnknownReason | None  # why, typed (None where the type says it: closed, PossiblyAppliedError)

    def __init__(self, error: KafkaError, why: OutcomeUnknownReason | None = None) -> None:
        super().__init__(error)
        self.why = why

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.why))


class PossiblyAppliedError(OutcomeUnknownError):
    """An earlier attempt of this call, whose outcome was unknown, may have applied it, whatever a later one got."""


class NotYetVisibleError(KafkaException):
    """The change was applied, but not every broker's Metadata showed it in time (``wait_for_metadata``);
    ``brokers``: the node ids that did not (empty when no broker could be asked)."""

    brokers: tuple[int, ...]

    def __init__(self, error: KafkaError, brokers: tuple[int, ...] = ()) -> None:
        super().__init__(error)
        self.brokers = tuple(brokers)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.brokers))


class ClientClosedError(KafkaException):
    """Closed with the topic pending: certainly not applied if not ``sent``; if ``sent``, perhaps applied."""

    sent: bool

    def __init__(self, error: KafkaError, sent: bool) -> None:
        super().__init__(error)
        self.sent = bool(sent)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.sent))


class ClientClosedNotSentError(ClientClosedError, NotSentError):
    """The client was closed with the topic queued: it was certainly not applied."""

    def __init__(self, error: KafkaError, sent: bool = False) -> None:
        super().__init__(error, sent)


class ClientClosedOutcomeUnknownError(ClientClosedError, OutcomeUnknownError):
    """The client was closed with the topic's request in flight (or after an attempt whose answer was lost): the
    broker may or may not have applied it."""

    def __init__(self, error: KafkaError, sent: bool = True) -> None:
        super().__init__(error, sent)


class TopicValueError(ValueError):
    """A topic's value that cannot be sent, found before anything is: ``field`` is the parameter's name
    (``num_partitions``, ``replication_factor``, ``new_total_count``, ``replica_assignment``), ``index`` the entry of
    a replica assignment, ``value`` what was given, ``minimum``/``maximum`` the bounds when the field is a count, and
    ``problem`` what is wrong, in words that name no parameter (``must be >= 1 (at most 100000), ...``)."""

    def __init__(
        self,
        topic: str,
        field: str,
        problem: str,
        *,
        value: Any = None,
        minimum: int | None = None,
        maximum: int | None = None,
        index: int | None = None,
    ) -> None:
        where = field if index is None else f"{field}[{index}]"
        super().__init__(f"topic {topic!r}: {where} {problem}")
        self.topic = topic
        self.field = field
        self.problem = problem
        self.value = value
        self.minimum = minimum
        self.maximum = maximum
        self.index = index

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"value": self.value, "minimum": self.minimum, "maximum": self.maximum, "index": self.index}
        return (_topic_value_error, (self.topic, self.field, self.problem, fields))


def _topic_value_error(topic: str, field: str, problem: str, fields: dict[str, Any]) -> TopicValueError:
    return TopicValueError(topic, field, problem, **fields)


def not_sent_error(operation: str, timeout_ms: int, reason: str, *, why: NotSentReason) -> NotSentError:
    """_TIMED_OUT for a topic not sent by its call's deadline: ``why``, typed, and ``reason``, its words."""
    return NotSentError(
        KafkaError(KafkaError._TIMED_OUT, f"{operation} not sent within timeout_ms={timeout_ms}: {reason}"),
        operation=operation,
        timeout_ms=timeout_ms,
        reason=reason,
        why=why,
    )


_SHOWN = {
    # (a create: the new topic, not an earlier one of its name; a grow: one topic id on every broker)
    "CreateTopics": "list it (the new topic's id) with a leader for every partition",
    "CreatePartitions": "list its new partitions, each with a leader, under one topic id",
    "DeleteTopics": "have it gone",
}


def not_visible_error(
    operation: str, timeout_ms: int, brokers: tuple[int, ...] | None, closed: bool = False
) -> NotYetVisibleError:
    """A change applied whose call ended (deadline, or ``closed``) before every broker's Metadata showed it."""
    when = "before the client was closed" if closed else f"by the deadline (timeout_ms={timeout_ms})"
    if brokers:
        which = "broker" if len(brokers) == 1 else "brokers"
        verb = "does" if len(brokers) == 1 else "do"
        why = f"{which} {', '.join(map(str, brokers))} {verb} not {_SHOWN.get(operation, 'show it')} yet"
    else:
        why = "no broker's metadata could be read"
    return NotYetVisibleError(
        KafkaError(
            KafkaError._TIMED_OUT, f"{operation} applied, but not yet visible in every broker's metadata {when}: {why}"
        ),
        brokers or (),
    )


def cannot_connect_error(operation: str, address: str, reason: str) -> CannotConnectError:
    """_TRANSPORT for a topic never sent because no broker could be reached (librdkafka's ``reason``)."""
    return CannotConnectError(
        KafkaError(KafkaError._TRANSPORT, f"{operation} not sent: cannot connect to {address} ({reason})"),
        why=NotSentReason.CANNOT_CONNECT,
    )


def unknown_outcome_error(operation: str, reason: str, *, why: OutcomeUnknownReason) -> OutcomeUnknownError:
    """_TIMED_OUT for a topic handed over with no usable answer: ``why``, typed, and ``reason``, its words."""
    return OutcomeUnknownError(
        KafkaError(
            KafkaError._TIMED_OUT,
            f"{operation} outcome unknown: {reason}; the broker may or may not have applied it, and may still apply "
            "it (a controller completes a request it has begun, however late): read the cluster once the client's "
            "wait_until_final() returns True",
        ),
        why,
    )


def _amended(error: KafkaError, sentence: str) -> KafkaError:
    """``error`` with its code, and a sentence added to its message, ended first where it has no full stop (librdkafka's
    own words for a code have none: "Broker: Unknown topic or partition", a DeleteTopics answer carrying no message)."""
    said = error.str().rstrip()
    if said and not said.endswith((".", "!", "?")):
        said += "."
    return KafkaError(error.code(), f"{said} {sentence}" if said else sentence)


def after_unknown_attempt(error: KafkaError, operation: str) -> PossiblyAppliedError:
    return PossiblyAppliedError(
        _amended(
            error,
            f"An earlier attempt of this {operation}, whose outcome was unknown (its response was lost), may have "
            "applied it.",
        )
    )


def after_lost_forward(error: KafkaError, operation: str, how: str) -> PossiblyAppliedError:
    """``error`` ("already done") for an attempt that may have been forwarded to a controller that went away:
    ``how`` that may be, in words, for ``{operation}`` (a node went away while it was in flight or just before, or
    the controller changed since the client last read it, before or while it was in flight). A KRaft broker re-sends
    a forwarded request whose controller went away (``NodeToControllerRequestThread``), and the next controller finds
    what the old one applied."""
    said = how.format(operation=operation)
    return PossiblyAppliedError(
        _amended(
            error,
            f"{said[:1].upper()}{said[1:]} (outcome unknown): its broker may have re-sent it to the next controller "
            "after the old one applied it.",
        )
    )


def after_failover_refusal(error: KafkaError, operation: str, refusal: KafkaError) -> PossiblyAppliedError:
    """``error`` (a later attempt's answer, or ``refusal`` itself at the deadline) for a change an attempt of which
    was refused with NOT_CONTROLLER or REQUEST_TIMED_OUT: a KRaft controller that resigns fails the writes it has
    not committed with the first, and the next controller may still commit them; a broker whose forwarded request
    timed out while it re-sent it to the next controller says the second. Either may follow an applied change."""
    return PossiblyAppliedError(
        _amended(
            error,
            f"An attempt of this {operation} was refused with {refusal.name()}, which a controller failing over may "
            "say after applying it: outcome unknown, that attempt may have applied it.",
        )
    )


def in_flight_error(error: KafkaError, operation: str) -> OutcomeUnknownError:
    """``error`` (an authentication failure) for a topic whose request was in flight when it came."""
    return OutcomeUnknownError(
        _amended(error, f"This {operation} was in flight: outcome unknown, the broker may or may not have applied it."),
        OutcomeUnknownReason.AUTHENTICATION,
    )


def refused_error(operation: str, exc: BaseException) -> NotSentError:
    return NotSentError(
        KafkaError(KafkaError._INVALID_ARG, f"{operation} refused by confluent-kafka: {type(exc).__name__}: {exc}"),
        why=NotSentReason.REFUSED,
    )


def closed_error(
    operation: str, *, sent: bool, refused: str | None = None, in_flight: bool = True, failover: str | None = None
) -> ClientClosedError:
    """_DESTROY for a topic pending at close(): a queued one was not sent (also a NotSentError); one that may have
    been applied (also an OutcomeUnknownError) was in flight, or (``in_flight=False``) queued again after an
    attempt whose answer was lost, or (``failover``: the refusal's name) refused with NOT_CONTROLLER or
    REQUEST_TIMED_OUT, which a failover may give after applying it. ``refused``: a queued topic whose last attempt
    the broker refused without applying it (the broker's reason): sent before, so not a NotSentError, not applied."""
    if sent and in_flight:
        what = "its request was in flight: outcome unknown, the broker may or may not have applied it"
    elif sent and failover is not None:
        what = (
            f"an earlier attempt was refused with {failover}, which a controller failing over may say after applying"
            " it: outcome unknown"
        )
    elif sent:
        what = "an earlier attempt was not answered: outcome unknown, the broker may or may not have applied it"
    elif refused is not None:
        what = f"the broker refused its last attempt ({refused}), applying nothing, and it was not sent again"
    else:
        what = "it was not sent"
    error = KafkaError(KafkaError._DESTROY, f"ThrottledAdminClient was closed before {operation} completed; {what}")
    if refused is not None and not sent:
        return ClientClosedError(error, sent=False)
    return ClientClosedOutcomeUnknownError(error) if sent else ClientClosedNotSentError(error)
