"""One mutation request in flight: its topics, its timeouts, and what came back of it so far (the engine's own)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from throttled_admin._engine.metric_events import ResponseThrottle
from throttled_admin._engine.work import RequestKind, Topic

__all__ = ["Forwarded", "Request"]

_UNTHROTTLED = ResponseThrottle(None, 0.0)  # frozen: one for every unthrottled answer


class Forwarded(enum.Enum):
    """Why an "already done" answer to a change may be its broker's re-send of it: a KRaft broker re-sends a
    forwarded request whose controller went away (``NodeToControllerRequestThread``), and the next controller finds
    what the old one applied (``outcome``). The value says so in words, for ``{operation}``."""

    NODE_LOST = "a node went away while this {operation} was in flight, or just before it was sent"
    CONTROLLER_MOVED = (
        "the cluster's controller changed since the client last read it, before or while this {operation} was in flight"
    )


@dataclass(eq=False, slots=True)
class Request:
    """One mutation request: handed to confluent-kafka by the driver, answered through ``Engine.on_results``."""

    kind: RequestKind
    topics: list[Topic]
    mutations: int
    sent_at: float
    expires_at: float  # librdkafka's own timeout, plus a grace: the slot is freed by then at the latest
    request_timeout_s: float  # librdkafka's own timeout for the request
    operation_timeout_s: float  # the controller's deadline (the request's timeout_ms)
    id: int  # numbered by its engine, from 1
    results: dict[str, BaseException | None] = field(default_factory=dict)
    first_result_at: float | None = None
    answered_at: float | None = None  # when the first broker answer came
    events: list[tuple[int, float]] = field(default_factory=list)  # throttle events while in flight
    forwarded: Forwarded | None = None  # re-sent to the next controller, perhaps (``outcome``); never validate_only
    lane: int = 0  # the connection it went on (``lanes``)

    @property
    def throttle_s(self) -> float:
        """The longest throttle a response to it carried (0: none)."""
        if not self.events:
            return 0.0
        return max((throttle_s for _, throttle_s in self.events), default=0.0)

    def throttle_events(self, *, answered: bool) -> list[ResponseThrottle]:
        """Each response's throttle goes to the sensor once, for the request it came from (KIP-124); a request that
        got no response records no unthrottled one, as Kafka's NetworkClient (librdkafka sends no event for an
        unthrottled response)."""
        if not self.events:  # most requests: one unthrottled response, or none
            return [_UNTHROTTLED] if answered else []
        return [ResponseThrottle(node_id, throttle_s * 1000, True) for node_id, throttle_s in self.events]
