"""Per-topic futures whose done-callbacks never run on the client's scheduler thread, and which cost little.

The scheduler resolves futures itself (no thread hop on the fast path), but a caller's done-callback may
block, for example waiting on a follow-up call. Run on the scheduler thread, it would stop every call of the
client, the follow-up included. So each callback is handed to ``CallbackRunner`` (``_driver.user_code``).

``TopicFuture.cancel()`` withdraws a topic that has not been sent yet (confluent-kafka's futures cannot be
cancelled at all); once its request is in flight, ``cancel()`` returns False as usual.

**Cheap to make.** A ``concurrent.futures.Future`` makes a ``threading.Condition`` (a Python object with an
``RLock``, a deque and six bound methods) and two lists in ``__init__``: about 4.5 us and 22 objects for the
garbage collector per future, most of a bulk call's per-topic cost. A ``TopicFuture`` makes its ``RLock`` only,
and the ``Condition`` around that same lock when something needs one: a thread that waits for a future still
pending, ``concurrent.futures.wait`` or ``as_completed``. Every change of state is made holding the lock, with
or without the ``Condition``, so a waiter that made it is notified; a future settled before anyone waited never
makes one, and ``result()``/``exception()`` of a settled future read it without waiting. Each future has a lock
of its own: ``concurrent.futures.wait`` and ``as_completed`` lock the futures they are given in order of
``id(future)``, which is one order of locks only while no two futures share one (futures of a call sharing a
Condition deadlocked two threads waiting on futures of the same two calls, and the scheduler's thread with them).

This relies on ``concurrent.futures.Future``'s attributes (``_condition``, ``_state``, ``_result``,
``_exception``, ``_waiters``, ``_done_callbacks``), the same in CPython 3.10 to 3.13;
tests/test_topic_futures.py runs the standard library's own uses of them against this class, on each of those
Pythons (``make test-pythons``).
"""

from __future__ import annotations

import functools
import logging
import threading
from _thread import RLock as _RLock  # threading.RLock() is a Python function around it: one call fewer per topic
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, InvalidStateError
from concurrent.futures._base import CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED, PENDING
from typing import Any

from throttled_admin._driver.user_code import CallbackRunner, run_contained

__all__ = ["TopicFuture"]

log = logging.getLogger("concurrent.futures")  # where Future logs a failing done-callback

_DONE = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED})
_CANCELLED = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED})


Assist = Callable[["TopicFuture", "float | None"], "float | None"]


def _never(_: Any) -> bool:
    return False


class TopicFuture(Future[None]):
    """The outcome of one topic of one call: ``None`` or the topic's exception."""

    # What a new future holds until set: class defaults, so that making one (10,000 in a bulk call) sets only what
    # differs per future; each is set on the instance when it changes.
    _made: threading.Condition | None = None
    _exception: BaseException | None = None
    # (callback, run on the pool): the caller's done-callbacks go to the pool, the client's own run in place
    _callbacks: list[tuple[Callable[[Future[None]], object], bool]] | None = None

    # Future.__init__ is not called: it would make the Condition and lists this class makes only when needed.
    def __init__(
        self,
        runner: CallbackRunner,
        assist: Assist | None = None,
        wake: Callable[[], None] | None = None,
        withdraw: Callable[[Any], bool] = _never,
        topic: Any = None,
    ) -> None:
        """``assist``: how a thread that waits for this future while it is pending can take the scheduler's turn
        itself when an answer arrives (``Scheduler.assist``); returns the time left of the wait. ``wake``: tells
        those threads that a future was settled outside the scheduler (cancelled). ``withdraw``, ``topic``: as
        ``bind_withdraw``."""
        self._lock = _RLock()
        self._assist = assist
        self._wake = wake
        self._state = PENDING
        self._result = None
        self._runner = runner
        self._withdraw = withdraw
        self._topic = topic

    # -- what concurrent.futures reads: made on first use --------------------------------------------

    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        made = self._made
        if made is None:
            with self._lock:
                made = self._made
                if made is None:
                    self.__dict__["_waiters"] = []  # only ever used holding the Condition
                    made = self._made = threading.Condition(self._lock)
        return made

    # -- settling -------------------------------------------------------------------------------------

    def set_result(self, result: None) -> None:
        self._settle(result, None)

    def set_exception(self, exception: BaseException | None) -> None:
        self._settle(None, exception)

    def _settle(self, result: None, exception: BaseException | None) -> None:
        with self._lock:
            if self._state in _DONE:
                raise InvalidStateError(f"{self._state}: {self!r}")
            self._result = result
            self._exception = exception
            self._state = FINISHED
            made = self._made
            if made is not None:  # someone waits or has waited: wake them, as Future does
                for waiter in self.__dict__["_waiters"]:
                    if exception is None:
                        waiter.add_result(self)
                    else:
                        waiter.add_exception(self)
                made.notify_all()
        if self._callbacks is not None:  # none added (most of a bulk call's): nothing to run
            self._invoke_callbacks()

    def _invoke_callbacks(self) -> None:
        callbacks = self._callbacks or []
        for callback, pooled in callbacks:
            if not pooled:
                _call_logged(callback, self)
        done_callbacks = [callback for callback, pooled in callbacks if pooled]
        if done_callbacks:  # one job: in the order they were added, one after another, as Future runs them
            self._runner.submit(lambda: _call_each(done_callbacks, self))

    # -- reading --------------------------------------------------------------------------------------

    def held_here(self) -> bool:
        """Whether this thread holds the future's lock (a signal handler that interrupted it must not wait for
        another thread to settle it)."""
        return bool(self._lock._is_owned())  # type: ignore[attr-defined]

    def done(self) -> bool:
        return self._state in _DONE  # a settled state never changes again

    def cancelled(self) -> bool:
        return self._state in _CANCELLED

    def running(self) -> bool:
        return False  # a topic's future goes from pending to done (set_running_or_notify_cancel is never called)

    def result(self, timeout: float | None = None) -> None:
        try:
            if self._state == FINISHED and self._exception is None:
                return None
            if self._state == PENDING and self._assist is not None:
                timeout = self._assist(self, timeout)
                if self._state == FINISHED and self._exception is None:  # settled in the wait: no Condition made
                    return None
            return super().result(timeout)
        finally:
            # Break the reference cycle future -> exception -> traceback -> this frame -> future, as Future does.
            del self

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state == FINISHED:
            return self._exception
        if self._state in _CANCELLED:
            raise CancelledError()
        if self._assist is not None:
            timeout = self._assist(self, timeout)
            if self._state == FINISHED:  # settled in the wait: no Condition made
                return self._exception
        return super().exception(timeout)

    # -- callbacks and cancelling ---------------------------------------------------------------------

    def bind_withdraw(self, withdraw: Callable[[Any], bool], topic: Any) -> None:
        """How to take this topic back from the scheduler's queue: ``withdraw(topic)``, True when it had not been
        sent."""
        self._withdraw = withdraw
        self._topic = topic

    def add_done_callback(self, fn: Callable[[Future[None]], object]) -> None:
        self._add(fn, pooled=True)

    def add_settled_callback(self, fn: Callable[[Future[None]], object]) -> None:
        """For the client's own code that never blocks (the asyncio bridge): ``fn`` runs on the thread that settles
        the future, with no hop to the callback pool."""
        self._add(fn, pooled=False)

    def _add(self, fn: Callable[[Future[None]], object], *, pooled: bool) -> None:
        with self._lock:
            if self._state not in _DONE:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append((fn, pooled))
                return
        _call_logged(fn, self)  # already settled: run in the caller's thread, as concurrent.futures does

    def cancel(self) -> bool:
        """Withdraw the topic if it has not been sent; False once it is in flight or resolved. A withdrawn topic's
        future is done at once for ``concurrent.futures.wait`` and ``as_completed`` too (a plain Future's
        ``cancel()`` leaves that to an executor's ``set_running_or_notify_cancel``)."""
        if self.done():
            return self.cancelled()
        if not self._withdraw(self._topic):  # in flight (its attempt is its last) or settled
            return False
        with self._lock:
            if self._state in _DONE:  # another thread's cancel() of the same topic got here first
                return self.cancelled()
            self._state = CANCELLED_AND_NOTIFIED
            made = self._made
            if made is not None:
                for waiter in self.__dict__["_waiters"]:
                    waiter.add_cancelled(self)
                made.notify_all()
        if self._wake is not None:  # a thread in result() may be waiting in Scheduler.assist, not on the Condition
            self._wake()
        self._invoke_callbacks()
        return True


def _call_logged(fn: Callable[[Future[None]], Any], future: Future[None]) -> None:
    """A callback of a settled future: its exception is logged, not raised, as Future.add_done_callback does."""
    try:
        fn(future)
    except Exception:
        log.exception("exception calling callback for %r", future)


def _call_each(callbacks: list[Callable[[Future[None]], Any]], future: Future[None]) -> None:
    for fn in callbacks:
        run_contained(functools.partial(fn, future))  # a failing one is logged and the next still runs
