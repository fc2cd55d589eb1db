"""Per-topic futures whose done-callbacks never run on the client's scheduler thread.

The scheduler resolves futures itself (no thread hop on the fast path), but a caller's done-callback may
block, for example waiting on a follow-up call. Run on the scheduler thread, it would stop every call of the
client, the follow-up included. So each callback is handed to ``CallbackRunner``, a pool that starts another
thread whenever all of its threads are busy: a blocked callback costs one thread, never the client.

``TopicFuture.cancel()`` withdraws a topic that has not been sent yet (confluent-kafka's futures cannot be
cancelled at all); once its request is in flight, ``cancel()`` returns False as usual.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["CallbackRunner", "TopicFuture"]

log = logging.getLogger("throttled_admin")

_IDLE_EXIT_S = 5.0  # an idle callback thread exits after this long


class CallbackRunner:
    """An elastic pool for done-callbacks: a new thread whenever none is idle; idle threads exit."""

    def __init__(self, name: str = "throttled-admin-callbacks") -> None:
        self._name = name
        self._lock = threading.Condition()
        self._jobs: deque[Callable[[], None]] = deque()
        self._idle = 0
        self._threads: set[threading.Thread] = set()
        self._closed = False

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                run_inline = True
            else:
                run_inline = False
                self._jobs.append(job)
                if self._idle > len(self._jobs) - 1:
                    self._lock.notify()
                else:
                    thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                    self._threads.add(thread)
                    thread.start()
        if run_inline:  # after close: nobody else will run it
            _run(job)

    def _work(self) -> None:
        me = threading.current_thread()
        try:
            while True:
                with self._lock:
                    while not self._jobs:
                        if self._closed:
                            return
                        self._idle += 1
                        woke = self._lock.wait(_IDLE_EXIT_S)
                        self._idle -= 1
                        if not woke and not self._jobs:
                            return
                    job = self._jobs.popleft()
                _run(job)
        finally:
            with self._lock:
                self._threads.discard(me)

    def close(self, timeout_s: float = 5.0) -> None:
        """Run what is queued, then let idle threads exit; waits (bounded) for threads not stuck in a callback
        and never for the calling thread itself."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            threads = [t for t in self._threads if t is not threading.current_thread()]
        for thread in threads:
            thread.join(timeout_s)


def _run(job: Callable[[], None]) -> None:
    try:
        job()
    except Exception:  # as concurrent.futures does: a failing callback is logged, never propagated
        log.exception("a done-callback of a throttled_admin future raised")


class TopicFuture(Future[None]):
    """The outcome of one topic of one call: ``None`` or the topic's exception."""

    def __init__(self, runner: CallbackRunner) -> None:
        super().__init__()
        self._runner = runner
        self._withdraw: Callable[[], bool] = lambda: False

    def bind_withdraw(self, withdraw: Callable[[], bool]) -> None:
        """How to take this topic back from the scheduler's queue (True when it had not been sent)."""
        self._withdraw = withdraw

    def add_done_callback(self, fn: Callable[[Future[None]], object]) -> None:
        if self.done():
            fn(self)  # already resolved: run in the caller's thread, as concurrent.futures does
            return
        runner = self._runner
        super().add_done_callback(lambda future: runner.submit(lambda: _call(fn, future)))

    def cancel(self) -> bool:
        """Withdraw the topic if it has not been sent; False once it is in flight or resolved."""
        if self.done():
            return self.cancelled()
        return self._withdraw() and super().cancel()


def _call(fn: Callable[[Future[None]], Any], future: Future[None]) -> None:
    fn(future)
