"""Issue 40: a bulk call's next request is handed over before the answered one's topics are settled.

An answer of many topics, every one applied, leaves nothing the next request depends on: no throttle, no split, no
retry. Its topics' settling (8-10 us a topic) then waits for the next step, so that the write of the next request
follows the answer at once; the step that composes it wakes again at once for them. Settled late, they are settled
as what the broker said (applied), whatever happens between the two steps: a deadline, close(). An answer of few
topics (a 1-topic call's), or one that refuses any, is settled in the step that takes it, as before."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.engine_records import submit_call
from throttled_admin._engine import CREATE_TOPICS, CallSpec, Engine, Outbox, RequestKind, RetryBackoff
from throttled_admin._engine.config import MAX_TOPICS_PER_REQUEST, SETTLE_AFTER_SEND_FROM, EngineConfig


def bulk(count: int, timeout_s: float = 30.0, config: EngineConfig | None = None) -> tuple[Engine, Outbox]:
    """An engine that has reached the cluster, one call of ``count`` one-partition creates, its first request out;
    one request at a time (the second lane's request, beside it, is ``test_engine_lanes``'s)."""
    engine = Engine(
        pacer=None,
        backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0),
        config=config or EngineConfig(second_lane_from=None),
    )
    engine.on_probe(True, 0.0)
    spec = CallSpec(
        RequestKind(CREATE_TOPICS, False), timeout_s, int(timeout_s * 1000), True, None, None, started_at=0.0
    )
    names = [f"t{i}" for i in range(count)]
    submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2) for name in names])
    out = engine.step(0.0)
    assert out.send is not None
    return engine, out


def answer(engine: Engine, out: Outbox, now: float, error: KafkaError | None = None) -> Outbox:
    """The broker answers the request ``out`` sent, every topic applied (or the first refused with ``error``)."""
    assert out.send is not None
    results: dict[str, BaseException | None] = dict.fromkeys(out.send.names)
    if error is not None:
        results[out.send.names[0]] = KafkaException(error)
    engine.on_results(out.send.request_id, results, now)
    return engine.step(now)


def test_an_applied_bulk_answer_hands_over_the_next_request_before_settling_its_topics() -> None:
    engine, first = bulk(2 * MAX_TOPICS_PER_REQUEST)
    assert first.send is not None
    assert len(first.send.topics) == MAX_TOPICS_PER_REQUEST

    second = answer(engine, first, 0.1)
    assert second.send is not None
    assert len(second.send.topics) == MAX_TOPICS_PER_REQUEST
    assert second.settle == []  # the write does not wait for 4,000 settlements
    assert second.wake_at == 0.1  # they are next, at once

    settled = engine.step(0.1)
    assert settled.send is None
    assert sorted(ref.name for ref, _ in settled.settle) == sorted(first.send.names)
    assert all(outcome is None for _, outcome in settled.settle)  # applied


def test_settled_late_they_are_applied_past_the_deadline_and_through_close() -> None:
    engine, first = bulk(2 * MAX_TOPICS_PER_REQUEST, timeout_s=1.0)
    assert first.send is not None
    second = answer(engine, first, 0.5)
    assert second.send is not None
    assert second.settle == []
    late = engine.step(5.0)  # the call's deadline passed before the next step
    told = dict(late.settle)
    assert all(told[ref] is None for ref in first.send.topics)  # applied, not "no response by the deadline"
    assert all(told[ref] is not None for ref in second.send.topics)  # the one in flight: its outcome unknown

    engine, first = bulk(2 * MAX_TOPICS_PER_REQUEST)
    assert first.send is not None
    assert answer(engine, first, 0.1).settle == []
    engine.close(0.1)
    told = dict(engine.step(0.1).settle)
    assert all(told[ref] is None for ref in first.send.topics)  # applied, not "closed while in flight"


def test_a_small_answer_or_one_with_a_refusal_is_settled_in_the_step_that_takes_it() -> None:
    small = SETTLE_AFTER_SEND_FROM - 1
    engine, first = bulk(2 * small, config=EngineConfig(max_topics_per_request=small, second_lane_from=None))
    assert first.send is not None
    assert len(first.send.topics) == small
    second = answer(engine, first, 0.1)
    assert second.send is not None
    assert len(second.settle) == small

    engine, first = bulk(2 * MAX_TOPICS_PER_REQUEST)
    assert first.send is not None
    second = answer(engine, first, 0.1, KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists"))
    assert second.send is not None
    assert len(second.settle) == MAX_TOPICS_PER_REQUEST


def test_nothing_to_send_next_settles_at_once() -> None:
    engine, first = bulk(MAX_TOPICS_PER_REQUEST)
    out = answer(engine, first, 0.1)
    assert out.send is None
    assert len(out.settle) == MAX_TOPICS_PER_REQUEST
