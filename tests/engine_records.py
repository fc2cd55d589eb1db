"""The engine's own records of a call submitted in a test: the engine builds them from plain values
(``Engine.submit``) and never hands them out, but tests of its decisions read a topic's state and attempts. And
``answered_steps``: steps whose requests a test broker answers at once."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Iterator

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._engine import CallSpec, Engine, Outbox, TopicSpec
from throttled_admin._engine.work import Call, Topic

__all__ = ["EXISTS", "answered_steps", "records", "submit_call"]

# each engine's call ids, from 1, as the driver numbers them
_ids: weakref.WeakKeyDictionary[Engine, Iterator[int]] = weakref.WeakKeyDictionary()


def submit_call(
    engine: Engine, spec: CallSpec, topics: list[TopicSpec], *, more: bool = False
) -> tuple[Call, list[Topic]]:
    """Submit a call numbered as the driver would (1, 2, ... per engine); returns the engine's records of it.
    ``more``: its first part, the rest to come (``Engine.extend``)."""
    call_id = next(_ids.setdefault(engine, itertools.count(1)))
    engine.submit(call_id, spec, topics, more=more)
    return records(engine, call_id, [name for name, _, _, _ in topics])


def records(engine: Engine, call_id: int, names: list[str]) -> tuple[Call, list[Topic]]:
    """The engine's records of a pending call and of its topics of these names (each still pending)."""
    call = engine._queue.calls[call_id]  # the engine's own record, read by its tests
    topics = [call.find(name) for name in names]
    assert all(topic is not None for topic in topics), names
    return call, [topic for topic in topics if topic is not None]


EXISTS = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists"))


def answered_steps(
    engine: Engine,
    answers: list[int | None],
    now: float = 0.0,
    before: Callable[[int, float], None] = lambda step, now: None,
) -> tuple[list[Outbox], float]:
    """A step every 0.25 s, one for each of ``answers`` (``before(step, now)`` first): a request sent is answered
    10 ms later, every topic applied but the one at the answer's index (modulo its size), refused TOPIC_ALREADY_EXISTS
    (None: none refused); a read of the brokers' views finds none. Each step's outbox, and the time of the last."""
    seen = []
    for step, refused in enumerate(answers):
        before(step, now)
        now += 0.25
        out = engine.step(now)
        seen.append(out)
        if out.send is not None:
            results: dict[str, BaseException | None] = dict.fromkeys(out.send.names)
            if refused is not None:
                results[out.send.names[refused % len(out.send.names)]] = EXISTS
            engine.on_results(out.send.request_id, results, now + 0.01)
        if out.read_views is not None:
            engine.on_views({}, now)
    return seen, now
