"""What a step says to do (``_engine/actions.py``): an ``Outbox`` of frozen actions, in the order the driver carries
them out, from the engine itself and from ``Outbox.of``."""

from __future__ import annotations

import dataclasses
import math

import pytest
from confluent_kafka.admin import NewTopic

from throttled_admin._engine import (
    CREATE_TOPICS,
    Action,
    CallSpec,
    Drain,
    Engine,
    Outbox,
    Probe,
    Reached,
    ReadMetadata,
    ReadViews,
    RequestKind,
    RetryBackoff,
    Send,
    Settle,
    TopicRef,
    WakeAt,
)
from throttled_admin._engine.metric_events import METRIC_KINDS, RequestSent, Retried

KIND = RequestKind(CREATE_TOPICS, False)


def a_call(timeout_s: float = 10.0) -> CallSpec:
    return CallSpec(KIND, timeout_s, int(timeout_s * 1000), True, None, None, started_at=0.0)


def a_request() -> Send:
    return Send(1, KIND, (TopicRef(1, "t"),), (NewTopic("t", 1, 1),), 1, 10.0, 9.5)


def test_of_puts_actions_in_the_drivers_order_each_kind_in_the_order_decided() -> None:
    request = a_request()
    topic = request.topics[0]
    other = topic._replace(name="u")
    failed = RuntimeError("x")
    decided: list[Action] = [
        Settle(*topic, None),
        Probe(),
        Retried("first"),
        ReadMetadata(),
        request,
        WakeAt(3.0),
        Drain(1.5),
        Settle(*other, failed),
        ReadViews(("a",)),
        Reached(),
        Retried("second"),
    ]
    out = Outbox.of(decided)
    assert out.actions == (
        Retried("first"),
        Retried("second"),
        Reached(),
        ReadViews(("a",)),
        request,
        Drain(1.5),
        Settle(*topic, None),
        Settle(*other, failed),
        ReadMetadata(),
        Probe(),
        WakeAt(3.0),
    )
    # the views of one kind each, as the driver and the tests read them
    assert out.metrics == [Retried("first"), Retried("second")]
    assert out.settle == [(topic, None), (other, failed)]
    assert out.send is request
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.mutations = 2  # type: ignore[misc]
    assert out.drain == 1.5
    assert out.read_views == ["a"]
    assert (out.reached, out.read_metadata, out.probe) == (True, True, True)
    assert out.wake_at == 3.0


def test_a_flag_asked_for_twice_between_two_steps_is_done_once() -> None:
    out = Outbox.of([Reached(), Retried("m"), Reached(), Probe(), ReadMetadata(), Probe(), ReadMetadata()])
    assert out.actions == (Retried("m"), Reached(), ReadMetadata(), Probe())
    assert out.of_kind(Retried) == [Retried("m")]  # events are records: equal ones are all kept
    twice = Outbox.of([Retried("m"), Retried("m")])
    assert twice.metrics == [Retried("m"), Retried("m")]


def test_an_empty_outbox_says_nothing_to_do_and_no_wake() -> None:
    out = Outbox.of([])
    assert out.actions == ()
    assert (out.metrics, out.settle, out.send, out.drain, out.read_views) == ([], [], None, None, None)
    assert (out.reached, out.read_metadata, out.probe) == (False, False, False)
    assert out.wake_at == math.inf


def test_actions_and_the_outbox_are_frozen() -> None:
    out = Outbox.of([Drain(1.0), WakeAt(2.0)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.actions = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.actions[0].request_timeout_s = 2.0  # type: ignore[union-attr,misc]
    assert Drain(1.0) == Drain(1.0)
    assert WakeAt(2.0) != WakeAt(3.0)


def test_a_step_returns_its_actions_in_the_drivers_order_not_the_order_decided() -> None:
    """A step that settles the answered call (its settlement decided first, then its events) and then sends the
    next (its send, then its event): the events come first, then the send, the settlement and the wake (and a
    broker was reached: that comes right after the events)."""
    engine = Engine(pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    assert engine.step(0.0).of_kind(Probe) == [Probe()]  # no broker has answered yet: the contact probe
    engine.on_probe(True, 0.0)
    a, b = TopicRef(1, "a"), TopicRef(2, "b")
    engine.submit(1, a_call(), [("a", NewTopic("a", 1, 1), 1, 2)])
    sent = engine.step(0.0).send
    assert sent is not None
    assert sent.topics == (a,)
    engine.submit(2, a_call(), [("b", NewTopic("b", 1, 1), 1, 2)])  # waits: one request in flight
    engine.on_results(sent.request_id, {"a": None}, 0.01)
    out = engine.step(0.01)
    emits = [action for action in out.actions if isinstance(action, METRIC_KINDS)]
    assert list(out.actions[: len(emits)]) == emits
    assert [type(action) for action in out.actions[len(emits) :]] == [Reached, Send, Settle, WakeAt]
    assert out.send is not None
    assert out.send.topics == (b,)
    assert out.settle == [(a, None)]
    assert RequestSent("CreateTopics", 1, 1) in out.metrics
    assert out.wake_at == out.actions[-1].at  # type: ignore[union-attr]
