"""Rule f (truthful outcomes) at the engine, on simulated time, for the sequences an independent review found:
after an attempt whose outcome is unknown, no later answer may be reported as a plain failure."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from throttled_admin import OutcomeUnknownError, ThrottlingQuotaExceededException
from throttled_admin._engine import CREATE_TOPICS, Call, Engine, Outbox, RequestKind, RetryBackoff, Topic

BAD_MSG = KafkaException(KafkaError(KafkaError._BAD_MSG, "Local: Bad message format"))


def started(retry: bool = True, timeout_s: float = 10.0) -> tuple[Engine, Topic, Outbox]:
    """A client that has reached the cluster, with one create sent."""
    engine = Engine(pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    engine.on_probe(True, 0.0)
    call = Call(RequestKind(CREATE_TOPICS, False), timeout_s, int(timeout_s * 1000), retry, None, None, started_at=0.0)
    topic = Topic("t", NewTopic("t", 1, 1), call, None, 1, 2)
    engine.submit(call, [topic])
    out = engine.step(0.0)
    assert out.send is not None
    return engine, topic, out


def garbled_then(engine: Engine, first: Outbox, now: float) -> Outbox:
    """The first answer is garbled (the broker may have applied it); the retry goes out."""
    assert first.send is not None
    engine.on_results(first.send, {"t": BAD_MSG}, 0.01)
    assert not engine.step(0.01).settle  # queued again
    retry = engine.step(now)
    assert retry.send is not None
    return retry


def settled(out: Outbox) -> BaseException | None:
    [(_, exc)] = out.settle
    return exc


def test_a_retry_refused_without_time_left_after_an_unanswered_attempt_is_outcome_unknown() -> None:
    engine, _, first = started(timeout_s=0.5)
    retry = garbled_then(engine, first, 0.12)
    assert retry.send is not None
    engine.on_results(retry.send, {"t": KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT))}, 0.45)
    exc = settled(engine.step(0.45))  # no time for another retry
    assert isinstance(exc, OutcomeUnknownError), repr(exc)
    assert exc.args[0].code() == KafkaError.REQUEST_TIMED_OUT  # the broker's word, kept


def test_error_89_with_retry_off_after_an_unanswered_attempt_is_outcome_unknown() -> None:
    engine, _, first = started(retry=False)
    retry = garbled_then(engine, first, 0.12)
    assert retry.send is not None
    engine.on_results(retry.send, {"t": KafkaException(KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED))}, 0.2)
    exc = settled(engine.step(0.2))
    assert isinstance(exc, OutcomeUnknownError), repr(exc)
    assert not isinstance(exc, ThrottlingQuotaExceededException)


def test_a_deadline_in_the_back_off_after_89_and_an_unanswered_attempt_is_outcome_unknown() -> None:
    engine, _, first = started(timeout_s=1.0)
    retry = garbled_then(engine, first, 0.12)
    assert retry.send is not None
    engine.on_throttle(1, 5.0, 0.2)
    engine.on_results(retry.send, {"t": KafkaException(KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED))}, 0.2)
    out = engine.step(0.2)
    if not out.settle:  # queued behind the throttle: the deadline settles it
        out = engine.step(1.0)
    exc = settled(out)
    assert isinstance(exc, OutcomeUnknownError), repr(exc)


def test_an_authentication_failure_with_a_request_in_flight_is_outcome_unknown() -> None:
    """librdkafka keeps the request and sends it once a connection authenticates: it may yet be applied."""
    engine = Engine(pacer=None, backoff=RetryBackoff())
    engine.on_probe(False, 5.0)  # never answered
    call = Call(RequestKind(CREATE_TOPICS, False), 60.0, 60000, True, None, None, started_at=0.0)
    engine.submit(call, [Topic("t", NewTopic("t", 1, 1), call, None, 1, 2)])
    assert engine.step(5.0).send is not None
    engine.on_error(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"), 5.1)
    exc = settled(engine.step(5.1))
    assert isinstance(exc, OutcomeUnknownError), repr(exc)
    assert exc.args[0].code() == KafkaError._AUTHENTICATION
