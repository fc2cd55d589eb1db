"""The engine's metric events, as frozen records, and where they go.

The engine puts each in its ``Outbox`` as an action of its own (``actions``); the driver reports each to its
``MetricsSink`` with ``event.report(sink)`` (``ClientMetrics`` exports them through OpenTelemetry). They compare
equal by value, and ``RecordingSink`` keeps what a sink is told as such records, so tests assert on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, TypeVar, get_args

__all__ = [
    "METRIC_KINDS",
    "BackedOff",
    "CallFinished",
    "MetricEvent",
    "MetricsSink",
    "MutationsAdmitted",
    "QuotaViolations",
    "RecordingSink",
    "RequestSent",
    "ResponseThrottle",
    "Retried",
]


class MetricsSink(Protocol):
    """Where metric events go (``ClientMetrics`` exports them through OpenTelemetry)."""

    def record_throttle(self, node_id: int | None, throttle_ms: float) -> None: ...

    def record_violations(self, operation: str, topics: int) -> None: ...

    def record_retry(self, operation: str) -> None: ...

    def record_request(self, operation: str, topics: int, mutations: int) -> None: ...

    def record_admitted(self, operation: str, mutations: int) -> None: ...

    def record_backoff(self, operation: str, seconds: float) -> None: ...

    def record_call(self, operation: str, seconds: float, error_type: str | None) -> None: ...


@dataclass(frozen=True, slots=True)
class ResponseThrottle:
    """A response's throttle_time_ms (KIP-124), zero included; ``node_id`` None: a response that sent no throttle
    event (librdkafka sends none for an unthrottled response). ``mutation``: the response to the client's own
    mutation request (else another call's, or one not told apart); not part of equality."""

    node_id: int | None
    throttle_ms: float
    mutation: bool = field(default=False, compare=False)

    def report(self, sink: MetricsSink) -> None:
        sink.record_throttle(self.node_id, self.throttle_ms)


@dataclass(frozen=True, slots=True)
class QuotaViolations:
    """Topics refused for the mutation quota: by the broker (error 89), or locally without being sent."""

    operation: str
    topics: int

    def report(self, sink: MetricsSink) -> None:
        sink.record_violations(self.operation, self.topics)


@dataclass(frozen=True, slots=True)
class Retried:
    """A response after which some of its topics were queued again."""

    operation: str

    def report(self, sink: MetricsSink) -> None:
        sink.record_retry(self.operation)


@dataclass(frozen=True, slots=True)
class RequestSent:
    """A mutation request put in the outbox: its topics and the mutations they cost (KIP-599). ``request_id``: the
    ``Send``'s (None as a sink records it): a request the driver did not hand over is not counted."""

    operation: str
    topics: int
    mutations: int
    request_id: int | None = field(default=None, compare=False)

    def report(self, sink: MetricsSink) -> None:
        sink.record_request(self.operation, self.topics, self.mutations)


@dataclass(frozen=True, slots=True)
class MutationsAdmitted:
    """The mutations of the topics a response says the broker applied."""

    operation: str
    mutations: int

    def report(self, sink: MetricsSink) -> None:
        sink.record_admitted(self.operation, self.mutations)


@dataclass(frozen=True, slots=True)
class BackedOff:
    """Local back-off (KIP-219): how long queued work waited for the broker's throttle to end."""

    operation: str
    seconds: float

    def report(self, sink: MetricsSink) -> None:
        sink.record_backoff(self.operation, self.seconds)


@dataclass(frozen=True, slots=True)
class CallFinished:
    """A call's last topic settled: its duration, and its first failure's type (None: every topic succeeded)."""

    operation: str
    seconds: float
    error_type: str | None

    def report(self, sink: MetricsSink) -> None:
        sink.record_call(self.operation, self.seconds, self.error_type)


MetricEvent = ResponseThrottle | QuotaViolations | Retried | RequestSent | MutationsAdmitted | BackedOff | CallFinished
METRIC_KINDS: tuple[type[MetricEvent], ...] = get_args(MetricEvent)  # the union's classes, said once

_Event = TypeVar("_Event", bound=MetricEvent)


class RecordingSink:
    """A ``MetricsSink`` that keeps what it is told, in order, as the events above (tests compare them by value)."""

    def __init__(self) -> None:
        self.events: list[MetricEvent] = []

    def of(self, kind: type[_Event]) -> list[_Event]:
        """The events of one kind, in order."""
        return [event for event in self.events if isinstance(event, kind)]

    def record_throttle(self, node_id: int | None, throttle_ms: float) -> None:
        self.events.append(ResponseThrottle(node_id, throttle_ms))

    def record_violations(self, operation: str, topics: int) -> None:
        self.events.append(QuotaViolations(operation, topics))

    def record_retry(self, operation: str) -> None:
        self.events.append(Retried(operation))

    def record_request(self, operation: str, topics: int, mutations: int) -> None:
        self.events.append(RequestSent(operation, topics, mutations))

    def record_admitted(self, operation: str, mutations: int) -> None:
        self.events.append(MutationsAdmitted(operation, mutations))

    def record_backoff(self, operation: str, seconds: float) -> None:
        self.events.append(BackedOff(operation, seconds))

    def record_call(self, operation: str, seconds: float, error_type: str | None) -> None:
        self.events.append(CallFinished(operation, seconds, error_type))
