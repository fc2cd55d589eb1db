"""Each topic's future has its own lock and Condition, as every ``concurrent.futures.Future`` does (the Condition
made on first need), and the standard library's ``wait``, ``as_completed`` and ``result`` work with it.

``concurrent.futures.wait`` and ``as_completed`` lock the futures they are given in order of ``id(future)``: one
lock per future makes that one global order. Futures of a call that shared one Condition (an optimisation of
issue 21) broke it: two threads waiting on futures of the same two calls could take the two locks in opposite
orders and deadlock, and the scheduler's thread, settling one of those futures, then stopped every call of the
client (found by review: 4 runs of 4).

A future whose result raised is freed without the cycle collector, and a failing callback added to a settled
future is logged, not raised."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, InvalidStateError, as_completed, wait
from concurrent.futures import TimeoutError as FutureTimeout

import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.support import REPO
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.user_code import CallbackRunner

WAITS = 20_000


def _crossing_pairs(admin: ThrottledAdminClient) -> tuple[tuple[Future[None], Future[None]], ...]:
    """(x of call A, y of call B) with id(x) < id(y), and (u of B, v of A) with id(u) < id(v): with a Condition
    per call, wait() on the first locks A then B, on the second B then A. Futures made and dropped in between
    interleave the two calls' futures in memory, as in any long-running program."""
    for round_ in range(20):
        dropped = admin.create_topics([NewTopic(f"old{round_}-{i}", 1, 1) for i in range(200)], timeout_ms=60000)
        for future in dropped.values():
            future.cancel()
        del dropped
        gc.collect()
        a = list(admin.create_topics([NewTopic(f"a{round_}-{i}", 1, 1) for i in range(50)], timeout_ms=60000).values())
        b = list(admin.create_topics([NewTopic(f"b{round_}-{i}", 1, 1) for i in range(50)], timeout_ms=60000).values())
        first = next(((x, y) for x in a for y in b if id(x) < id(y)), None)
        second = next(((u, v) for u in b for v in a if id(u) < id(v)), None)
        if first and second:
            return first, second
    raise AssertionError("no crossing pairs of futures found")


def _waits_on_crossing_pairs() -> None:
    """Run in a child process (a deadlock also stops the client's close(), so it cannot end in the test's own)."""
    with ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9", "log_level": 0}) as admin:
        pairs = _crossing_pairs(admin)
        done = [0, 0]

        def waits(pair: tuple[Future[None], Future[None]], index: int) -> None:
            for _ in range(WAITS):
                wait(list(pair), timeout=0, return_when=FIRST_COMPLETED)
                done[index] += 1

        threads = [threading.Thread(target=waits, args=(pair, i), daemon=True) for i, pair in enumerate(pairs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for future in (*pairs[0], *pairs[1]):
            future.cancel()
    print("waits", done)


def test_two_threads_waiting_on_futures_of_two_calls_never_deadlock() -> None:
    code = "from tests.test_topic_futures import _waits_on_crossing_pairs as run; run()"
    try:
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("deadlocked: two threads in concurrent.futures.wait() and the client stopped") from exc
    assert child.returncode == 0, child.stderr[-2000:]
    assert f"waits [{WAITS}, {WAITS}]" in child.stdout


def test_the_futures_of_one_call_have_conditions_of_their_own() -> None:
    with ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9", "log_level": 0}) as admin:
        futures = list(admin.create_topics([NewTopic("x", 1, 1), NewTopic("y", 1, 1)], timeout_ms=60000).values())
        assert futures[0]._condition is not futures[1]._condition
        for future in futures:
            future.cancel()


# -- the standard library's uses of a future whose Condition is made on first need (issue 21) -----------------


def _pending() -> TopicFuture:
    return TopicFuture(CallbackRunner())


def _settle_when_waited_on(future: TopicFuture, settle: Callable[[], object]) -> threading.Thread:
    """Settle ``future`` from another thread once a waiter has installed itself (``wait``/``as_completed``) or is
    waiting on its Condition (``result``/``exception``)."""

    def run() -> None:
        condition = future._condition
        with condition:
            while not future.__dict__["_waiters"] and not condition._waiters:  # type: ignore[attr-defined]
                condition.wait(0.01)  # polled under the lock: a waiter that releases it shows up here
        settle()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_pending_future_makes_no_condition_until_something_waits() -> None:
    future = _pending()
    assert future._made is None
    future.set_result(None)
    assert future.result() is None  # type: ignore[func-returns-value]  # what result() returns is the check
    assert future.exception() is None
    assert future.done()
    assert future._made is None  # settled before anyone waited: never made


@pytest.mark.parametrize("read", ["result", "exception"])
def test_a_future_settled_while_its_caller_assists_makes_no_condition(read: str) -> None:
    """The fast path (issue 39's latency): a caller in result() that takes the turn settling its own future
    (``Scheduler.assist``) returns without making the Condition a waiter needs."""

    def assist(future: TopicFuture, timeout: float | None) -> float | None:
        future.set_result(None)  # as the caller's own turn settles it
        return timeout

    future = TopicFuture(CallbackRunner(), assist)
    assert getattr(future, read)(60) is None
    assert future._made is None


def test_wait_first_completed_wakes_when_another_thread_settles() -> None:
    future, other = _pending(), _pending()
    settler = _settle_when_waited_on(future, lambda: future.set_result(None))
    done, not_done = wait([future, other], timeout=60, return_when=FIRST_COMPLETED)
    settler.join()
    assert done == {future}
    assert not_done == {other}
    assert future.__dict__["_waiters"] == []  # wait() removed its waiter


def test_as_completed_yields_a_future_settled_with_an_exception() -> None:
    future = _pending()
    error = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS))
    settler = _settle_when_waited_on(future, lambda: future.set_exception(error))
    assert list(as_completed([future], timeout=60)) == [future]  # type: ignore[arg-type]  # typeshed wants a settable _condition
    settler.join()
    assert future.exception() is error
    with pytest.raises(KafkaException):
        future.result()


def test_result_waits_for_a_settle_and_times_out_while_pending() -> None:
    future = _pending()
    with pytest.raises(FutureTimeout):
        future.result(timeout=0)
    settler = _settle_when_waited_on(future, lambda: future.set_result(None))
    assert future.result(timeout=60) is None  # type: ignore[func-returns-value]  # what result() returns is the check
    settler.join()


def test_a_future_is_settled_once() -> None:
    future = _pending()
    future.set_result(None)
    with pytest.raises(InvalidStateError):
        future.set_exception(RuntimeError("late"))
    assert future.exception() is None


def test_callbacks_run_once_whether_added_before_or_after_the_settle() -> None:
    future = _pending()
    calls: list[str] = []
    ran = threading.Event()
    future.add_settled_callback(lambda f: calls.append("settled-before"))

    def done_before(f: object) -> None:
        calls.append("done-before")
        ran.set()

    future.add_done_callback(done_before)
    future.set_result(None)
    assert ran.wait(60)  # done-callbacks run on the callback runner's thread
    future.add_settled_callback(lambda f: calls.append("settled-after"))
    future.add_done_callback(lambda f: calls.append("done-after"))
    assert sorted(calls) == ["done-after", "done-before", "settled-after", "settled-before"]


def test_a_withdrawn_topics_future_is_done_for_wait_and_as_completed() -> None:
    future = _pending()
    future.bind_withdraw(lambda topic: True, object())
    waiting = _pending()
    waiting.bind_withdraw(lambda topic: True, object())
    canceller = _settle_when_waited_on(waiting, waiting.cancel)
    done, _ = wait([waiting], timeout=60)
    canceller.join()
    assert done == {waiting}
    assert waiting.cancelled()
    assert future.cancel()
    assert future.cancelled()
    assert future.done()
    assert list(as_completed([future], timeout=0)) == [future]  # type: ignore[arg-type]  # typeshed wants a settable _condition
    with pytest.raises(CancelledError):
        future.result()


def test_a_topic_in_flight_cannot_be_cancelled() -> None:
    future = _pending()
    future.bind_withdraw(lambda topic: False, object())
    assert not future.cancel()
    assert not future.done()
    future.set_result(None)
    assert not future.cancel()
    assert future.result() is None  # type: ignore[func-returns-value]  # what result() returns is the check


def test_done_callbacks_run_in_the_order_added_one_after_another() -> None:
    """As concurrent.futures promises: a future's callbacks are called in the order they were added. They run off
    the settling thread (the client's callback pool), as one job per future, so they never overlap either (found
    by review: each was a job of its own, and the elastic pool ran them on several threads at once)."""
    future = _pending()
    order: list[int] = []
    running = threading.Lock()
    overlapped: list[int] = []
    finished = threading.Event()
    running_count = threading.Lock()

    calls = [0]

    def callback(index: int) -> Callable[[Future[None]], None]:
        def run(_: Future[None]) -> None:
            if running.acquire(blocking=False):
                order.append(index)
                threading.Event().wait(0.001)  # long enough for another pool thread to start on the next one
                running.release()
            else:
                overlapped.append(index)
            with running_count:
                calls[0] += 1
                if calls[0] == 50:
                    finished.set()

        return run

    for index in range(50):
        future.add_done_callback(callback(index))
    future.set_result(None)
    assert finished.wait(60)
    assert not overlapped
    assert order == list(range(50))


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


def test_a_failing_callback_added_to_a_settled_future_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    future = TopicFuture(CallbackRunner())
    future.set_result(None)

    def failing(_: object) -> None:
        raise ZeroDivisionError

    future.add_done_callback(failing)  # concurrent.futures.Future: logged as "exception calling callback for ..."
    assert "exception calling callback" in caplog.text
