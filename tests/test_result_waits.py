"""Findings of an independent review of issue 21's second pass (the TopicFuture without Future.__init__, the
assist path, the wait_for_metadata read cadence, the metadata read), each reproduced as a test that failed on the
reviewed code (695f750) and passes since its fix."""

from __future__ import annotations

import gc
import signal
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.conftest import wait_until
from throttled_admin import NotYetVisibleError, ThrottledAdminClient
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.scheduler import Scheduler
from throttled_admin._driver.user_code import CallbackRunner
from throttled_admin._engine import CREATE_TOPICS, Call, Engine, Outbox, Request, RequestKind, RetryBackoff, Topic
from throttled_admin._engine.machine import MAX_TOPICS_PER_REQUEST
from throttled_admin._engine.visibility import FIRST_READ_S, GROWTH, MAX_INTERVAL_S, TopicView
from throttled_admin.testing import QuotaBroker

BrokerFactory = Callable[..., QuotaBroker]


def _client(broker: QuotaBroker) -> ThrottledAdminClient:
    return ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})


def _scheduler(admin: ThrottledAdminClient) -> Scheduler:
    scheduler = admin._scheduler  # type: ignore[attr-defined]
    assert isinstance(scheduler, Scheduler)
    return scheduler


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Event, list[BaseException | None]]:
    """Run ``fn`` on a daemon thread; the event is set when it returns or raises (its exception in the list)."""
    finished = threading.Event()
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)
        finally:
            finished.set()

    threading.Thread(target=run, daemon=True).start()
    return finished, outcome


# -- 1. cancel() does not wake a caller waiting in result() (assist) ---------------------------------------------


def test_cancel_wakes_a_thread_waiting_in_result(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with _client(broker) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)  # reached: a call is sent from submit()
        broker.blackhole_next("CreateTopics")  # the next request stays in flight: the second call is queued
        admin.create_topics([NewTopic("held", 1, 1)], request_timeout=30)
        (queued,) = admin.create_topics([NewTopic("queued", 1, 1)]).values()
        finished, outcome = _in_thread(queued.result)  # no timeout, as most callers write it
        assert wait_until(lambda: _scheduler(admin)._assisting == 1, timeout_s=5)
        assert queued.cancel()  # not sent: withdrawn
        woke = finished.wait(2.0)  # a plain Future's result() returns at once here
        assert woke, "result() still waiting 2 s after its future was cancelled"
        assert isinstance(outcome[0], CancelledError)


def test_cancel_wakes_a_thread_waiting_in_exception_with_a_timeout(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with _client(broker) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)
        broker.blackhole_next("CreateTopics")
        admin.create_topics([NewTopic("held", 1, 1)], request_timeout=30)
        (queued,) = admin.create_topics([NewTopic("queued", 1, 1)]).values()
        finished, outcome = _in_thread(lambda: queued.exception(timeout=20))
        assert wait_until(lambda: _scheduler(admin)._assisting == 1, timeout_s=5)
        assert queued.cancel()
        assert finished.wait(2.0), "exception(timeout=20) still waiting 2 s after its future was cancelled"
        assert isinstance(outcome[0], CancelledError)


# -- 2. result(timeout) is not honoured while another thread takes a turn ---------------------------------------


def test_result_with_a_timeout_does_not_wait_for_another_threads_turn(quota_broker: BrokerFactory) -> None:
    """A long turn is what the scheduler's thread (or another waiting caller) does when it settles a 1,000-topic
    response whose futures have done-callbacks (~70-110 ms on this machine), and answers arriving back to back make
    the caller take turn after turn: measured, ``result(timeout=0.05)`` returned after 0.47 s and 1.6 s on bulk
    calls over QuotaBroker. Here a turn is held for as long as the test wants, so the mechanism is shown
    deterministically."""
    broker = quota_broker()
    with _client(broker) as admin:
        (warm_up,) = admin.create_topics([NewTopic("warm-up", 1, 1)]).values()
        warm_up.result(30)  # the client has reached the broker: a call's own turn sends at once
        scheduler = _scheduler(admin)
        broker.delay_next("CreateTopics", 0.3)  # the answer comes once the turn below is held
        (future,) = admin.create_topics([NewTopic("t", 1, 1)]).values()  # sent by the caller's own turn
        assert scheduler._turns.take(5)  # another thread's turn in progress (the scheduler's own thread waits too)
        try:
            finished, outcome = _in_thread(lambda: future.result(timeout=0.2))
            assert wait_until(lambda: bool(scheduler._arrived), timeout_s=5)  # its answer is in: a turn is needed
            returned = finished.wait(2.0)
        finally:
            scheduler._turns.release()
        assert returned, "result(timeout=0.2) still waiting after 2 s (it waits for _turn without its timeout)"
        assert outcome
        assert isinstance(outcome[0], FutureTimeout)


# -- 2b. Ctrl-C on a caller's thread that is taking a turn ---------------------------------------------------------


class _Interrupted(BaseException):
    """What the test's SIGINT handler raises: a KeyboardInterrupt, without pytest's handling of one."""


def _interrupt(signum: int, frame: object) -> None:
    raise _Interrupted


def test_ctrl_c_in_result_leaves_no_future_pending_after_close(quota_broker: BrokerFactory) -> None:
    """Ctrl-C arrives while the main thread, waiting in result(), settles the answer's topics (the bulk case: a
    caller waiting for the last topic of a 50,000-topic call spends most of its wait settling other topics)."""
    broker = quota_broker()
    broker.set_controller_latency(0.3)  # the caller is surely waiting in result() when the answer arrives
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        admin = _client(broker)
        try:
            for attempt in range(5):  # the scheduler's thread may take the turn itself (its 50 ms poll): again
                fired: list[object] = []

                def ctrl_c(future: object, fired: list[object] = fired) -> None:
                    if threading.current_thread() is threading.main_thread() and not fired:
                        fired.append(future)
                        signal.raise_signal(signal.SIGINT)

                futures = list(admin.create_topics([NewTopic(f"k{attempt}-{i}", 1, 1) for i in range(5)]).values())
                for future in futures:
                    assert isinstance(future, TopicFuture)
                    future.add_settled_callback(ctrl_c)
                try:
                    futures[-1].result(timeout=30)
                except _Interrupted:
                    break
            else:  # the caller's thread never settled a topic: no turn of its own for Ctrl-C to cut short
                return
        finally:
            admin.close()  # what `with ThrottledAdminClient(...)` does on the way out of the interrupt
    finally:
        signal.signal(signal.SIGINT, previous)
    pending = [future for future in futures if not future.done()]
    assert not pending, f"{len(pending)} of {len(futures)} futures pending after close()"


# -- 3. a reference cycle per failed topic ----------------------------------------------------------------------


def test_a_future_whose_result_raised_is_freed_without_the_cycle_collector() -> None:
    gc.disable()
    try:
        future = TopicFuture(CallbackRunner())
        future.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS)))
        with pytest.raises(KafkaException):
            future.result()
        ref = weakref.ref(future)
        del future
        assert ref() is None, "the future outlives its last reference until the cycle collector runs"
    finally:
        gc.enable()


# -- 4. wait_for_metadata: a call deferred while still sending makes the others' reads back to back --------------


def _wait_call(engine: Engine, names: list[str], at: float, timeout_s: float) -> list[Topic]:
    call = Call(
        RequestKind(CREATE_TOPICS, False),
        at + timeout_s,
        int(timeout_s * 1000),
        True,
        None,
        None,
        started_at=at,
        wait_for_metadata=True,
    )
    topics = [Topic(name, NewTopic(name, 1, 1), call, None, 1, 2) for name in names]
    engine.submit(call, topics)
    return topics


def _ids_read(engine: Engine, now: float) -> None:
    """Creates of wait_for_metadata calls: every broker's ids of their names are read before the first send
    (issue 27, finding 7); here no broker lists them yet."""
    out = engine.step(now)
    assert out.read_views is not None
    assert out.send is None
    engine.on_views({1: {}, 2: {}}, now)


def _sent(out: Outbox) -> Request:
    assert out.send is not None, f"nothing sent (wake at {out.wake_at})"
    return out.send


def _engine() -> Engine:
    engine = Engine(pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    engine.on_probe(True, 0.0)
    return engine


def test_a_call_deferred_while_sending_does_not_make_another_calls_reads_back_to_back() -> None:
    """Call A waits for "x", which a broker is slow to show (metadata lag); call B, a bulk create, is still sending
    and its applied topics are deferred (READ_WHILE_SENDING_S). A's reads should be spaced from FIRST_READ_S
    growing to MAX_INTERVAL_S: about 7 reads in 2 s. Every answer comes 10 ms after its read."""
    engine = _engine()
    _wait_call(engine, ["x"], 0.0, 30.0)
    bulk = [f"t{i}" for i in range(2 * MAX_TOPICS_PER_REQUEST + 1)]
    _wait_call(engine, bulk, 0.0, 30.0)
    _ids_read(engine, 0.0)
    first = _sent(engine.step(0.0))  # x and B's first topics share the request
    engine.on_results(first, dict.fromkeys(first.names), 0.01)
    out = engine.step(0.01)
    assert out.read_views is not None
    assert "x" in out.read_views
    second = _sent(out)
    shown = dict.fromkeys(bulk, TopicView(1, True))  # B's topics shown everywhere; x on no broker yet
    engine.on_views({1: dict(shown), 2: dict(shown)}, 0.02)
    engine.step(0.02)
    engine.on_results(second, dict.fromkeys(second.names), 0.03)
    _sent(engine.step(0.03))  # B's last topic: B still sends, its second request's topics are deferred
    now, reads = 0.03, []
    while now < 2.0:
        out = engine.step(now)
        if out.read_views is not None:
            reads.append(now)
            now += 0.01
            engine.on_views({1: {"x": TopicView(1, True)}, 2: {}}, now)  # broker 2 still lags on x
            continue
        now = min(2.0, max(out.wake_at, now + 0.001))
    expected = 1 + sum(1 for k in range(20) if sum(min(MAX_INTERVAL_S, FIRST_READ_S * GROWTH**i) for i in range(k)) < 2)
    assert len(reads) <= expected + 2, f"{len(reads)} reads of every broker in 2 s (spaced: about {expected})"


def test_a_call_still_sending_is_not_reported_not_yet_visible_for_topics_visible_long_before() -> None:
    """Reads take 4 s (busy brokers; a read may take up to its 5 s timeout). Call B (60 s) was submitted at 17 s
    behind other work; its first request's topics are read at once (a 4 s read: the interval becomes 40 s), its
    second request's topics are applied at 21.5 s and visible everywhere from then on, and its last request is
    never answered (it stays in flight until the deadline)."""
    engine = _engine()
    start = 17.0
    bulk = [f"t{i}" for i in range(2 * MAX_TOPICS_PER_REQUEST + 1)]
    _wait_call(engine, bulk, start, 43.0)  # deadline 60 s
    _ids_read(engine, start)
    first = _sent(engine.step(start))
    engine.on_results(first, dict.fromkeys(first.names), start + 0.01)
    out = engine.step(start + 0.01)
    assert out.read_views is not None
    second = _sent(out)
    shown = dict.fromkeys(bulk, TopicView(1, True))
    engine.on_views({1: dict(shown), 2: dict(shown)}, start + 4.01)  # the read took 4 s
    engine.step(start + 4.01)
    engine.on_results(second, dict.fromkeys(second.names), 21.5)
    out = engine.step(21.5)
    _sent(out)  # the last topic goes out and is never answered
    now, outcomes = 21.5, {}
    read_out_at = now if out.read_views is not None else None  # a read of every broker, answered 4 s later
    now += 0.001
    while now <= 60.0 and len(outcomes) < len(second.names):
        if read_out_at is not None and now >= read_out_at + 4.0:
            engine.on_views({1: dict(shown), 2: dict(shown)}, now)  # every broker shows every topic
            read_out_at = None
        out = engine.step(now)
        outcomes.update({topic.name: exc for topic, exc in out.settle if topic.name in second.names})
        if out.read_views is not None:
            read_out_at = now
        wake = out.wake_at if read_out_at is None else min(out.wake_at, read_out_at + 4.0)
        now = max(wake, now + 0.001)
    failed = [name for name, exc in outcomes.items() if isinstance(exc, NotYetVisibleError)]
    assert not failed, f"{len(failed)} topics visible everywhere since 21.5 s reported NotYetVisibleError at 60 s"


# -- 6. read_metadata: a fatal error reported after the first slice waits for the first-contact window ----------


def test_a_wrong_password_reported_after_the_first_slice_still_fails_the_read_at_once(
    quota_broker: BrokerFactory,
) -> None:
    """The command line's and the pipeline's reads fail at once on a wrong password. Here the broker answers the
    SASL authentication 0.6 s late (a busy broker, a distant one): before issue 21's change the read failed after
    1.0 s; now it waits for the end of its second slice, the first-contact window or the read's timeout (4 s)."""
    from throttled_admin.cli._session import AdminSession

    broker = quota_broker(users={"alice": "right"})
    broker.delay_next("SaslAuthenticate", 0.6, count=5)
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "wrong",
    }
    with AdminSession(conf, retry_on_quota_violation=True, timeout_ms=4000) as session:
        started = time.monotonic()
        with pytest.raises(KafkaException) as raised:
            session.list_topics()
        elapsed = time.monotonic() - started
    assert raised.value.args[0].code() == KafkaError._AUTHENTICATION
    assert elapsed < 2.5, f"the authentication failure ended the read after {elapsed:.1f} s"


# -- 8. a failing callback added to a settled future (pre-existing, found while reviewing issue 21) ---------------


def test_a_failing_callback_added_to_a_settled_future_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    future = TopicFuture(CallbackRunner())
    future.set_result(None)

    def failing(_: object) -> None:
        raise ZeroDivisionError

    future.add_done_callback(failing)  # concurrent.futures.Future: logged as "exception calling callback for ..."
    assert "exception calling callback" in caplog.text
