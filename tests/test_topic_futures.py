"""The futures of one call share one Condition (_driver/futures.py): each still behaves as its own Future."""

from __future__ import annotations

import concurrent.futures
import threading
from concurrent.futures import Future

import pytest

from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.user_code import CallbackRunner


def _siblings(count: int) -> tuple[threading.Condition, list[TopicFuture]]:
    condition = threading.Condition()
    runner = CallbackRunner()
    return condition, [TopicFuture(runner, condition) for _ in range(count)]


def test_a_shared_condition_future_has_what_a_future_has() -> None:
    """TopicFuture makes a Future's state itself (to share the Condition): it must stay in step with the stdlib."""
    _, (future,) = _siblings(1)
    plain = Future[None]()
    assert set(vars(plain)) - {"__orig_class__"} <= set(vars(future))
    assert not future.done()
    assert not future.running()
    assert "pending" in repr(future)


def test_a_siblings_result_does_not_end_a_wait() -> None:
    """Future.result() waits for one notification; with a shared Condition a sibling's result notifies too, and
    the waiter must go on waiting (not raise TimeoutError) until its own future is done."""
    _, (waited, sibling) = _siblings(2)
    sibling_done = threading.Timer(0.05, sibling.set_exception, (ValueError("the sibling's"),))
    waited_done = threading.Timer(0.2, waited.set_result, (None,))
    sibling_done.start()
    waited_done.start()
    try:
        assert waited.result(timeout=30) is None
        assert sibling.done()
    finally:
        sibling_done.join()
        waited_done.join()


def test_timeouts_and_exceptions_are_each_futures_own() -> None:
    _, (first, second) = _siblings(2)
    second.set_exception(ValueError("second"))
    with pytest.raises(concurrent.futures.TimeoutError):
        first.result(timeout=0.01)
    assert isinstance(second.exception(), ValueError)
    with pytest.raises(ValueError, match="second"):
        second.result()


def test_wait_and_as_completed_see_each_future() -> None:
    _, futures = _siblings(3)
    futures[1].set_result(None)
    done, not_done = concurrent.futures.wait(futures, timeout=0)
    assert done == {futures[1]}
    assert not_done == {futures[0], futures[2]}
    threading.Timer(0.01, futures[0].set_result, (None,)).start()
    threading.Timer(0.02, futures[2].set_exception, (KeyError("k"),)).start()
    assert set(concurrent.futures.as_completed(futures, timeout=30)) == set(futures)
