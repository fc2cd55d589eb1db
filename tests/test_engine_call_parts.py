"""A bulk call handed to the engine in two parts (issue 40): ``Engine.submit(..., more=True)``, then one
``Engine.extend`` with the rest, after the first request was sent. The call is one call throughout: finished once,
when it is whole and its last topic is settled; rule a holds at each part's own time."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import NewTopic
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine_records import answered_steps, records
from throttled_admin._engine import CREATE_TOPICS, CallSpec, Engine, RequestKind, RetryBackoff
from throttled_admin._engine.config import EngineConfig
from throttled_admin._engine.lifecycle import TopicState
from throttled_admin._engine.metric_events import CallFinished
from throttled_admin._engine.queue import WorkQueue

SPEC = CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30_000, True, None, None, 0.0)


def _specs(names: list[str]) -> list[tuple[str, NewTopic, int, int]]:
    return [(name, NewTopic(name, 1, 1), 1, 2) for name in names]


def _engine(per_request: int = 2) -> Engine:
    engine = Engine(
        pacer=None,
        backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0),
        config=EngineConfig(max_topics_per_request=per_request, seed=1),
    )
    engine.on_probe(True, 0.0)
    return engine


def _answer_all(engine: Engine, now: float) -> list[Any]:
    """Steps until nothing is sent, each request answered at once, every topic applied: each step's outbox."""
    seen = []
    while True:
        out = engine.step(now)
        seen.append(out)
        if out.send is None:
            return seen
        engine.on_results(out.send.request_id, dict.fromkeys(out.send.names), now)


def _finished(outboxes: list[Any]) -> list[CallFinished]:
    return [event for out in outboxes for event in out.metrics if isinstance(event, CallFinished)]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([f"t{i}" for i in range(10)]), min_size=1, max_size=10, unique=True),
    st.integers(min_value=0, max_value=10),
    st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=3)), min_size=8, max_size=8),
)
def test_a_call_given_in_two_parts_before_any_step_decides_as_the_call_given_whole(
    names: list[str], split: int, answers: list[int | None]
) -> None:
    def run(parts: bool) -> list[Any]:
        engine = _engine()
        if parts:
            engine.submit(1, SPEC, _specs(names[:split]), more=True)
            engine.extend(1, _specs(names[split:]), 0.0)
        else:
            engine.submit(1, SPEC, _specs(names))
        return answered_steps(engine, answers)[0]

    assert run(parts=True) == run(parts=False)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([f"t{i}" for i in range(10)]), min_size=1, max_size=10, unique=True),
    st.integers(min_value=0, max_value=10),
    st.integers(min_value=0, max_value=4),
    st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=3)), min_size=12, max_size=12),
)
def test_a_call_extended_after_some_steps_settles_each_topic_once_and_finishes_once_after_the_last(
    names: list[str], split: int, steps_before: int, answers: list[int | None]
) -> None:
    """The rest comes after sends, answers and settlements of the first part (refusals: settled with their error),
    as on the caller's thread: every topic is settled once, and the call finishes once, after its last topic."""
    engine = _engine()
    engine.submit(1, SPEC, _specs(names[:split]), more=True)

    def extend_at(step: int, now: float) -> None:
        if step == steps_before:
            engine.extend(1, _specs(names[split:]), now)

    seen, now = answered_steps(engine, answers, before=extend_at)
    seen += _answer_all(engine, now + 1)
    settled = [ref.name for out in seen for ref, _ in out.settle]
    assert sorted(settled) == sorted(names)
    finished = [i for i, out in enumerate(seen) if _finished([out])]
    assert len(finished) == 1
    assert not any(out.settle for out in seen[finished[0] + 1 :])
    assert engine.status.idle


def test_a_call_is_finished_once_when_it_is_whole_and_its_last_topic_settled() -> None:
    engine = _engine()
    engine.submit(1, SPEC, _specs(["a", "b"]), more=True)
    first = _answer_all(engine, 1.0)
    assert [ref.name for out in first for ref, _ in out.settle] == ["a", "b"]
    assert _finished(first) == []  # every topic given so far is settled, and the call is not whole
    engine.extend(1, _specs(["c"]), 2.0)
    rest = _answer_all(engine, 3.0)
    assert [ref.name for out in rest for ref, _ in out.settle] == ["c"]
    assert _finished(rest) == [CallFinished("CreateTopics", 3.0, None)]
    assert engine.status.idle


def test_an_empty_rest_finishes_a_call_whose_first_part_is_settled() -> None:
    engine = _engine()
    engine.submit(1, SPEC, _specs(["a"]), more=True)
    assert _finished(_answer_all(engine, 1.0)) == []
    engine.extend(1, (), 2.0)
    assert _finished([engine.step(2.0)]) == [CallFinished("CreateTopics", 2.0, None)]
    engine.extend(1, (), 3.0)  # (told twice: nothing more)
    assert _finished([engine.step(3.0)]) == []


def test_the_rest_is_queued_behind_what_is_queued_then_and_a_call_between_the_parts_goes_first() -> None:
    """A call submitted between the two parts (another thread's) that names a topic of the rest holds that name: the
    rest's topic waits behind it (rule a), as it would behind any call submitted before it."""
    engine = _engine(per_request=10)
    engine.submit(1, SPEC, _specs(["a"]), more=True)
    engine.submit(2, SPEC, _specs(["b", "x"]))
    engine.extend(1, _specs(["b", "c"]), 0.0)
    _, (a, b, c) = records(engine, 1, ["a", "b", "c"])
    assert [t.state for t in (a, b, c)] == [TopicState.QUEUED, TopicState.HELD_BEHIND_NAME, TopicState.QUEUED]
    first = engine.step(1.0).send
    assert first is not None
    assert list(first.names) == ["a", "c", "b", "x"]  # call 1's, in its order, then call 2's
    engine.on_results(first.request_id, dict.fromkeys(first.names), 1.0)
    second = engine.step(1.0).send
    assert second is not None
    assert list(second.names) == ["b"]  # call 1's b, once call 2's was settled


def test_extend_refuses_a_closed_engine_and_more_topics_for_a_whole_call() -> None:
    engine = _engine()
    engine.submit(1, SPEC, _specs(["a"]))
    with pytest.raises(ValueError, match="not waiting for its other topics"):
        engine.extend(1, _specs(["b"]), 0.0)
    engine.extend(1, (), 0.0)  # nothing to add: nothing done
    engine.submit(2, SPEC, _specs(["c"]), more=True)
    engine.close(0.0)
    with pytest.raises(RuntimeError, match="closed"):
        engine.extend(2, _specs(["d"]), 0.0)


def test_an_extend_cut_short_queues_none_of_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C inside ``extend``, after its topics held their names: none of them stays queued, their names are free
    again (a later call naming one is not held behind it), and the call waits for the driver to say it is whole."""
    engine = _engine(per_request=10)
    engine.submit(1, SPEC, _specs(["a"]), more=True)
    hold = WorkQueue._hold

    def hold_then_interrupted(queue: WorkQueue, call: Any, topics: list[Any]) -> None:
        hold(queue, call, topics)
        raise KeyboardInterrupt

    monkeypatch.setattr(WorkQueue, "_hold", hold_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        engine.extend(1, _specs(["b", "c"]), 0.0)
    monkeypatch.undo()
    call, _ = records(engine, 1, ["a"])
    assert list(call.queued) == ["a"]
    assert not call.whole
    engine.submit(2, SPEC, _specs(["b"]))
    (b,) = records(engine, 2, ["b"])[1]
    assert b.state is TopicState.QUEUED  # not held behind call 1's b, which is gone
    out = engine.step(1.0)
    assert out.send is not None
    assert list(out.send.names) == ["a", "b"]
    engine.on_results(out.send.request_id, dict.fromkeys(out.send.names), 1.0)
    assert [e.operation for e in _finished([engine.step(1.0)])] == ["CreateTopics"]  # call 2's only
    engine.extend(1, (), 2.0)
    assert _finished([engine.step(2.0)]) == [CallFinished("CreateTopics", 2.0, None)]
