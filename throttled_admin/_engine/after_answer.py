"""What becomes of an answered topic, as a decision (``verdict`` says which case; this says what to do).

``AfterAnswer`` owns the retry back-off and its jitter (``EngineConfig.seed``) and decides, for one topic of an
answered request: applied (``Applied``), queued again (``Requeue``, after a back-off drawn once per call and
response, so that the topics refused together go out together again, as Java re-sends a failed call), or settled
(``Finish``, with the ending the outcome table turns into its error: ``outcome``). The engine carries the decision
out; nothing here settles, sends or emits.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from confluent_kafka import KafkaError

from throttled_admin._engine.classify import Outcome, error_of
from throttled_admin._engine.outcome import Ending
from throttled_admin._engine.request import Forwarded
from throttled_admin._engine.retry import RetryBackoff
from throttled_admin._engine.round_trip import RoundTrip
from throttled_admin._engine.verdict import Verdict
from throttled_admin._engine.work import Topic
from throttled_admin._errors import ThrottlingQuotaExceededException

__all__ = ["AfterAnswer", "Applied", "Decision", "Finish", "Requeue", "Response"]

_MIN_QUOTA_BACKOFF_S = 0.005


@dataclass(slots=True)
class Response:
    """What the engine knows of an answered request while it carries out its topics' verdicts."""

    results: dict[str, BaseException | None]  # every topic's result (a stand-in where none came)
    outcomes: dict[str, Outcome]  # what each result means (``classify``)
    throttle_s: float  # the throttle to wait out (Redpanda's charge included)
    split: bool  # refused whole for the batch cap: sent again in smaller requests
    forwarded: Forwarded | None  # why an "already done" may be its broker's re-send (``Request.forwarded``)
    # call id -> the back-off its topics wait after this response, drawn once per call (with its jitter), so topics
    # refused together are sent together again: after error 89 without a throttle, and after a transient failure
    quota_delays: dict[int, float] = field(default_factory=dict)
    delays: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Applied:
    """The broker applied it."""


@dataclass(frozen=True, slots=True)
class Requeue:
    """Queued again, not before ``not_before`` (None: as it was)."""

    not_before: float | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """Settled: how it ends (``outcome``), with the broker's error or the reason in words."""

    ending: Ending
    exc: BaseException | None = None
    why: str = ""
    forwarded: Forwarded | None = None  # why an "already done" may be its broker's re-send (``outcome``)


Decision = Applied | Requeue | Finish


class AfterAnswer:
    """Decides what becomes of each answered topic; owns the retry back-off's jitter."""

    def __init__(self, backoff: RetryBackoff, seed: int | None) -> None:
        self._backoff = backoff
        self._random = random.Random(seed)  # the back-off's jitter

    def decide(self, topic: Topic, verdict: Verdict, response: Response, round_trip: RoundTrip, now: float) -> Decision:
        exc = response.results[topic.name]
        if verdict is Verdict.APPLIED:
            return Applied()
        if verdict is Verdict.THROTTLED:
            return self._throttled(topic, exc, response, round_trip, now)
        if verdict is Verdict.RESEND_SMALLER:  # its history keeps the broker's word, should time run out first
            return Requeue()
        if verdict is Verdict.CANNOT_CONNECT:  # no broker was ever reached: say so now, not at the deadline
            return Finish(Ending.CANNOT_CONNECT)
        if verdict is Verdict.RETRY:
            return self._transient(topic, exc, response.outcomes[topic.name], response, round_trip, now)
        # the broker's last word (outcome unknown after an unanswered attempt, possibly applied when it says "already
        # done" after a node went away in flight or just before, or the controller changed around its flight)
        return Finish(Ending.ANSWERED, exc, forwarded=response.forwarded)

    def _throttled(
        self, topic: Topic, exc: BaseException | None, response: Response, round_trip: RoundTrip, now: float
    ) -> Decision:
        """Queued again behind the throttle (or after a back-off when the response carried none), or settled with
        it when its call does not retry or its caller cancelled it."""
        call = topic.call
        if not call.spec.retry_on_quota_violation or topic.cancelled:  # after an unanswered attempt: outcome unknown
            message = _message(exc)
            refused = ThrottlingQuotaExceededException(topic.history[-1].throttle_ms, topic.name, message, sent=True)
            return Finish(Ending.ANSWERED, refused)
        if response.throttle_s > 0:
            return Requeue()
        # Error 89 with no throttle to wait (the bucket was a fraction of a token short): exponential back-off with
        # jitter per call, starting at about one round trip and reset whenever the call makes progress.
        delays = response.quota_delays
        if call.id not in delays:
            initial_ms = max(_MIN_QUOTA_BACKOFF_S, round_trip.expected_s(1, now, min_samples=1)) * 1000
            delays[call.id] = self._backoff.delay_s(call.quota_backoffs, self._random, initial_ms)
            call.quota_backoffs += 1
        return Requeue(now + delays[call.id])

    def _transient(
        self,
        topic: Topic,
        exc: BaseException | None,
        outcome: Outcome,
        response: Response,
        round_trip: RoundTrip,
        now: float,
    ) -> Decision:
        """Re-queue a topic the broker did not apply (or whose answer was lost) after one back-off per call and
        response; with no time left for it (or never again: cancelled), what this attempt and the earlier ones
        leave true."""
        delays = response.delays
        call = topic.call
        if call.id not in delays:
            delays[call.id] = self._backoff.delay_s(call.transient_retries, self._random)
            call.transient_retries += 1
        delay_s = delays[call.id]
        if topic.cancelled or call.remaining_s(now) <= delay_s + round_trip.expected_s(1, now, min_samples=1):
            if outcome is Outcome.UNKNOWN:
                return Finish(Ending.ANSWER_LOST, why=_reason(exc))
            if outcome is Outcome.NOT_SENT:
                return Finish(Ending.CANCELLED if topic.cancelled else Ending.DEADLINE)
            return Finish(Ending.ANSWERED, exc)  # the broker's refusal
        return Requeue(now + delay_s)


def not_controller(exc: BaseException | None) -> bool:
    """The controller moved: metadata is read again before the next send."""
    error = error_of(exc)
    return error is not None and error.code() == KafkaError.NOT_CONTROLLER


def _message(exc: BaseException | None) -> str | None:
    """The broker's own message for an error 89 or its Redpanda form, if it gave one."""
    error = error_of(exc)
    if error is None or error.str() in (KafkaError(error.code()).str(), KafkaError(KafkaError.UNKNOWN).str()):
        return None
    return error.str()


def _reason(exc: BaseException | None) -> str:
    error = error_of(exc)
    return error.str() if error is not None else "no response"
