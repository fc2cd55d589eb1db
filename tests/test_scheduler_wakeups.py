"""The scheduler's thread wakes to serve librdkafka's callbacks while work is pending; a wake-up that finds nothing new
(no answer, no event for the engine, the engine's wake time not reached) serves the callbacks and nothing else: it
does not step the engine (a fleet of 200 paced clients spent most of a core on such steps). Against QuotaBroker over
loopback; the engine's steps and librdkafka's polls are counted on the client's own scheduler."""

from __future__ import annotations

import concurrent.futures
import functools
import math
import sys
import threading
from collections.abc import Callable
from typing import Any

from tests.engine_records import submit_call
from tests.support import BrokerFactory
from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient
from throttled_admin._driver.scheduler import (
    _BUSY_POLL_S,
    _IDLE_POLL_S,
    _WAITING_POLL_S,
    Scheduler,
    _poll_interval,
)
from throttled_admin._engine import CREATE_TOPICS, CallSpec, Engine, Pacer, RequestKind, RetryBackoff
from throttled_admin.testing import QuotaBroker


def _client(broker: QuotaBroker, **kwargs: Any) -> ThrottledAdminClient:
    return ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}, **kwargs)


def _scheduler(admin: ThrottledAdminClient) -> Scheduler:
    scheduler = admin._scheduler
    assert isinstance(scheduler, Scheduler)
    return scheduler


def _counting(counts: dict[str, int], key: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return method(*args, **kwargs)

    return counted


def test_waiting_for_the_pacer_the_client_polls_librdkafka_but_steps_the_engine_only_for_what_happens(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker()
    # A burst of one at 0.4 mutations/s: the first topic goes at once, the second 2.5 s later.
    with _client(broker, mutation_quota=MutationQuota(rate=0.4, burst=1)) as admin:
        scheduler = _scheduler(admin)
        counts = {"steps": 0, "polls": 0}
        scheduler._step = _counting(counts, "steps", scheduler._step)  # type: ignore[method-assign]
        transport = scheduler._transport
        transport.poll = _counting(counts, "polls", transport.poll)  # type: ignore[method-assign]
        futures = admin.create_topics([NewTopic("first", 1, 1), NewTopic("second", 1, 1)], timeout_ms=60_000)
        assert futures["first"].exception(30) is None
        before = dict(counts)
        assert futures["second"].exception(30) is None
        steps, polls = counts["steps"] - before["steps"], counts["polls"] - before["polls"]
    assert {"first", "second"} <= broker.topics().keys()
    # While the second topic waited for the pacer, librdkafka's callbacks were served (polls), and the engine was
    # stepped only for the pacer's wake time, the second request's answer and the odd event (a log line): before,
    # every poll of librdkafka came with a step (about 50 steps in these 2.5 s).
    assert steps <= 5, (steps, polls)
    assert polls > steps, (steps, polls)
    # ... once a second (issue 40): 12 polls without a step in these 2.5 s at 200 ms, most of a paced client's cost
    assert polls - steps <= 4, (steps, polls)


def test_a_paced_client_steps_the_engine_twice_a_request_its_send_and_its_answer(quota_broker: BrokerFactory) -> None:
    """A request sent by the scheduler's thread at the pacer's wake time is followed by a step only when something
    happens (its answer): before, the turn that sent stepped again at once, for nothing, once per request."""
    broker = quota_broker()
    with _client(broker, mutation_quota=MutationQuota(rate=20.0, burst=1)) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)  # contact made
        scheduler = _scheduler(admin)
        counts = {"steps": 0, "sends": 0}
        scheduler._step = _counting(counts, "steps", scheduler._step)  # type: ignore[method-assign]
        scheduler.send = _counting(counts, "sends", scheduler.send)  # type: ignore[method-assign]
        futures = admin.create_topics([NewTopic(f"paced{i}", 1, 1) for i in range(12)], timeout_ms=60_000)
        done, _ = concurrent.futures.wait(futures.values(), timeout=30)  # no turn taken on this thread (assist)
        assert len(done) == 12
        assert all(future.exception() is None for future in futures.values())
    sends, steps = counts["sends"], counts["steps"]
    assert sends >= 6  # a burst of one: the pacer lets one or two topics go at a time
    # Each send's step and its answer's step, and the odd event (the submit's own step, a pacer's wake a hair early):
    # before, 3 a send (38 steps for 12 sends).
    assert steps <= 2 * sends + 6, (steps, sends)


def test_a_call_that_finds_the_turn_taken_is_sent_by_the_schedulers_thread(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with _client(broker) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)  # reached, idle: a call sends from submit()
        scheduler = _scheduler(admin)
        # Another thread's turn (here this thread's own) is under way when the call is queued: the call cannot take
        # its turn, and that turn may have stepped before it; the scheduler's thread steps for it.
        assert scheduler._turns.take()
        try:
            (future,) = admin.create_topics([NewTopic("queued", 1, 1)], timeout_ms=20_000).values()
        finally:
            scheduler._turns.release()
        assert future.exception(15) is None  # not left waiting for an event that never comes
    assert "queued" in broker.topics()


def test_a_callers_turn_leaves_the_schedulers_thread_alone_while_it_is_awake(quota_broker: BrokerFactory) -> None:
    """The scheduler's thread (the process's loop, ``driver_loop``), awake (serving this client, not waiting to),
    reads the engine's wake time before it says when to serve it next: a caller's turn does not wake it. Woken, it
    took a turn for nothing, and the next call's turn, finding it awake in that one, woke it again: a turn of the
    scheduler's thread beside 13-17 % of 1-topic calls waited for one after another on Tansu, each contending for
    the GIL with the caller (issue 39's latency)."""
    broker = quota_broker()
    with _client(broker) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)  # reached, idle: a call sends from submit()
        scheduler = _scheduler(admin)
        parked, release = threading.Event(), threading.Event()
        next_due = scheduler._next_due

        def park() -> float:  # the loop's thread, serving this client, held before it says when to serve it next
            parked.set()
            release.wait(30)
            return next_due()

        wakes: list[str] = []
        wake = scheduler._wake

        def counted_wake() -> None:
            wakes.append(sys._getframe(1).f_code.co_name)
            wake()

        scheduler._next_due = park  # type: ignore[method-assign]
        with scheduler._cv:
            scheduler._wake()  # out of its sleep: a turn (nothing new), then park()
        assert parked.wait(30)
        scheduler._wake = counted_wake  # type: ignore[method-assign]
        try:
            (future,) = admin.create_topics([NewTopic("sent", 1, 1)], timeout_ms=20_000).values()
            assert "_turn_here" not in wakes
        finally:
            scheduler._wake = wake  # type: ignore[method-assign]
            scheduler._next_due = next_due  # type: ignore[method-assign]
            release.set()
        assert future.exception(15) is None
    assert "sent" in broker.topics()


def test_an_answer_that_arrives_during_the_callers_turn_is_taken_by_the_caller(quota_broker: BrokerFactory) -> None:
    """librdkafka's answer can come while the caller's thread is still in its turn (inside the send, its thread not
    running on a loaded machine: 14-38 % of 1-topic calls on Tansu): the caller takes it in one more turn, and the
    scheduler's thread is not woken to take it instead, while the caller waits in result() for that thread's turn
    (issue 39's latency)."""
    broker = quota_broker()
    with _client(broker) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)  # reached, idle: a call sends from submit()
        scheduler = _scheduler(admin)
        answered = threading.Event()
        on_answer, send, wake = scheduler._on_answer, scheduler._transport.send, scheduler._wake
        wakes: list[str] = []

        def answer_seen(request: Any, epoch: Any, answer: Any) -> None:
            on_answer(request, epoch, answer)
            answered.set()

        def send_then_await_answer(*args: Any) -> bool:  # the caller's turn lasts until the answer is in
            handed = send(*args)
            assert answered.wait(15)
            return handed

        def counted_wake() -> None:
            wakes.append(sys._getframe(1).f_code.co_name)
            wake()

        scheduler._on_answer = answer_seen  # type: ignore[method-assign]
        scheduler._transport.send = send_then_await_answer  # type: ignore[method-assign,assignment]
        scheduler._wake = counted_wake  # type: ignore[method-assign]
        try:
            (future,) = admin.create_topics([NewTopic("answered", 1, 1)], timeout_ms=20_000).values()
            assert future.done()  # settled on this thread before create_topics returned
        finally:
            scheduler._on_answer = on_answer  # type: ignore[method-assign]
            scheduler._transport.send = send  # type: ignore[method-assign]
            scheduler._wake = wake  # type: ignore[method-assign]
        assert "_on_answer" not in wakes
        assert future.exception(15) is None
    assert "answered" in broker.topics()


# -- how often librdkafka's callbacks are served, on simulated time ----------------------------------------------


def _create(engine: Engine, names: list[str]) -> None:
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), 60.0, 60_000, True, None, None, 0.0)
    submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2) for name in names])


def test_callbacks_are_served_often_only_while_a_request_is_in_flight_or_calls_wait_for_first_contact() -> None:
    """50 ms while what a callback tells decides pending work at once (an error_cb settles the request in flight; a
    connection's failure, told in a log line, fails calls waiting for first contact), every second while the work
    waits for the engine's own wake time (here the pacer's: a fleet's paced clients wait so most of the time; 200 ms
    before issue 40), 200 ms while none is pending. Before, every client with work pending was woken every 50 ms."""
    engine = Engine(
        pacer=Pacer(MutationQuota(rate=1.0, burst=1.0)), backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0)
    )
    assert engine.step(0.0).probe
    assert _poll_interval(engine) == _IDLE_POLL_S  # nothing pending
    _create(engine, ["first", "second"])
    assert engine.step(0.0).send is None  # waits for the probe's answer
    assert _poll_interval(engine) == _BUSY_POLL_S  # a call waits for first contact
    engine.on_probe(True, 0.01)
    out = engine.step(0.01)
    assert out.send is not None
    assert out.send.names == ["first"]
    assert _poll_interval(engine) == _BUSY_POLL_S  # in flight
    engine.on_results(out.send.request_id, {"first": None}, 0.02)
    out = engine.step(0.02)
    assert out.send is None
    assert 0.02 < out.wake_at < math.inf
    assert _poll_interval(engine) == _WAITING_POLL_S
    paced_at = out.wake_at
    out = engine.step(paced_at)
    assert out.send is not None
    assert out.send.names == ["second"]
    assert _poll_interval(engine) == _BUSY_POLL_S
    engine.on_results(out.send.request_id, {"second": None}, paced_at + 0.01)
    engine.step(paced_at + 0.01)
    assert engine.status.idle
    assert _poll_interval(engine) == _IDLE_POLL_S
