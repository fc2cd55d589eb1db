"""A topic's lifecycle: the state it is in, and the history of its attempts (as urllib3's ``Retry.history``).

States, and the only moves between them (``MOVES``; ``Call.move`` makes every move, and checks it):

- NEW -> QUEUED: submitted; or NEW -> HELD_BEHIND_NAME, while an earlier pending call names the topic too (rule a
  of ``machine``);
- HELD_BEHIND_NAME -> QUEUED: that call settled it (the topic keeps its place in its call's queue);
- QUEUED -> IN_FLIGHT: sent; IN_FLIGHT -> QUEUED: to be sent again (at the end of the queue), or its send was cut
  short before it was handed over;
- IN_FLIGHT -> AWAITING_VISIBILITY: applied, under wait_for_metadata, until every broker's Metadata shows it;
- HELD_BEHIND_NAME or QUEUED -> WITHDRAWN: its caller cancelled it before it was sent;
- HELD_BEHIND_NAME, QUEUED, IN_FLIGHT or AWAITING_VISIBILITY -> SETTLED: its outcome is booked.

Each attempt that came back (answered, or given up on by librdkafka or the engine) is one frozen ``Attempt`` in
``Topic.history``, with what its result meant (``classify.Outcome``). What earlier attempts leave true
(``Past``: outcome unknown, the broker's throttle, the broker's refusal) is read off the history, not kept in flags;
``outcome`` decides from it the error a topic is settled with.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from confluent_kafka import KafkaError

from throttled_admin._engine.classify import Outcome, error_of

__all__ = ["MOVES", "Attempt", "Past", "TopicState"]


class TopicState(enum.Enum):
    NEW = "new"  # not yet submitted
    HELD_BEHIND_NAME = "held behind its name"  # an earlier pending call names it too (its call's ``queued``)
    QUEUED = "queued"  # waiting to be sent (its call's ``queued``, in order)
    IN_FLIGHT = "in flight"  # in the request in flight (its call's ``in_flight``)
    AWAITING_VISIBILITY = "awaiting visibility"  # applied, until every broker shows it (its call's ``awaiting``)
    SETTLED = "settled"  # its outcome is booked: the driver resolves its future
    WITHDRAWN = "withdrawn"  # its caller cancelled it before it was sent: taken back, never settled

    # Members compare by identity; hashing them so too keeps ``Call.move`` (three per topic of a bulk call) off
    # Enum's hash, a Python function.
    __hash__ = object.__hash__


_S = TopicState
MOVES: dict[TopicState, frozenset[TopicState]] = {
    _S.NEW: frozenset({_S.QUEUED, _S.HELD_BEHIND_NAME}),
    _S.HELD_BEHIND_NAME: frozenset({_S.QUEUED, _S.SETTLED, _S.WITHDRAWN}),
    _S.QUEUED: frozenset({_S.IN_FLIGHT, _S.SETTLED, _S.WITHDRAWN}),
    _S.IN_FLIGHT: frozenset({_S.QUEUED, _S.AWAITING_VISIBILITY, _S.SETTLED}),
    _S.AWAITING_VISIBILITY: frozenset({_S.SETTLED}),
    _S.SETTLED: frozenset(),
    _S.WITHDRAWN: frozenset(),
}


class Attempt(NamedTuple):  # frozen, and cheap to make: one per topic of each answered request
    """One attempt of a topic that came back: the request it went in, and how it ended."""

    request_id: int
    sent_at: float  # monotonic seconds
    ended_at: float
    outcome: Outcome  # what its result meant: applied, refused (FINAL, NOT_APPLIED, TOO_LARGE), throttled, ...
    error: BaseException | None = None  # its result (None: applied)
    throttle_ms: int = 0  # THROTTLED: the throttle it was refused with (Redpanda's charge included)


_THROTTLE_NAME = KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED).str()


@dataclass(frozen=True, slots=True)
class Past:
    """What a topic's attempts so far leave true."""

    unknown: bool = False  # an attempt got no usable answer: it may have been applied
    throttled: Attempt | None = None  # the broker's last refusal was error 89 (none since that applied nothing)
    refused: BaseException | None = None  # the broker's last refusal (NOT_CONTROLLER, a cap's, ...): see ``failover``
    # The first refusal of a change with NOT_CONTROLLER or REQUEST_TIMED_OUT (``Outcome.NOT_APPLIED``): a KRaft
    # controller that resigns fails the writes it has not committed with NOT_CONTROLLER, and the next one may still
    # commit them; a broker whose forwarded request timed out while it re-sent it says REQUEST_TIMED_OUT. So the
    # change may have been applied, as after a lost answer (never for validate_only, which applies nothing).
    failover: KafkaError | None = None

    @classmethod
    def of(cls, history: Sequence[Attempt], *, writes: bool = True) -> Past:
        """``writes``: the attempts could apply a change (False for validate_only)."""
        unknown = False
        throttled: Attempt | None = None
        refused: BaseException | None = None
        failover: KafkaError | None = None
        for attempt in history:
            if attempt.outcome is Outcome.UNKNOWN:
                unknown = True
            elif attempt.outcome is Outcome.THROTTLED:
                throttled = attempt
            elif attempt.outcome in (Outcome.NOT_APPLIED, Outcome.TOO_LARGE):  # refused, then re-sent
                throttled, refused = None, attempt.error
                if writes and failover is None and attempt.outcome is Outcome.NOT_APPLIED:
                    failover = error_of(attempt.error)
        return cls(unknown, throttled, refused, failover)

    @property
    def answered(self) -> bool:
        """The broker's word, or a lost answer, says more than "not sent"."""
        return self.unknown or self.throttled is not None or self.refused is not None

    @property
    def refusal(self) -> str | None:
        """The broker's reason when it refused the last attempt without applying it, else None."""
        if self.throttled is not None:
            return _THROTTLE_NAME
        error = error_of(self.refused)
        return error.str() if error is not None else None


NO_PAST = Past()
