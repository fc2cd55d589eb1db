"""The engine's own records of a call submitted in a test: the engine builds them from plain values
(``Engine.submit``) and never hands them out, but tests of its decisions read a topic's state and attempts."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterator

from throttled_admin._engine import CallSpec, Engine, TopicSpec
from throttled_admin._engine.work import Call, Topic

__all__ = ["records", "submit_call"]

# each engine's call ids, from 1, as the driver numbers them
_ids: weakref.WeakKeyDictionary[Engine, Iterator[int]] = weakref.WeakKeyDictionary()


def submit_call(engine: Engine, spec: CallSpec, topics: list[TopicSpec]) -> tuple[Call, list[Topic]]:
    """Submit a call numbered as the driver would (1, 2, ... per engine); returns the engine's records of it."""
    call_id = next(_ids.setdefault(engine, itertools.count(1)))
    engine.submit(call_id, spec, topics)
    return records(engine, call_id, [name for name, _, _, _ in topics])


def records(engine: Engine, call_id: int, names: list[str]) -> tuple[Call, list[Topic]]:
    """The engine's records of a pending call and of its topics of these names (each still pending)."""
    call = engine._queue.calls[call_id]  # the engine's own record, read by its tests
    topics = [call.find(name) for name in names]
    assert all(topic is not None for topic in topics), names
    return call, [topic for topic in topics if topic is not None]
