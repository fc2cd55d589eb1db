"""Where the user's code runs: never on the client's scheduler thread.

The scheduler must never wait for code it does not own, but for a bounded wait for a turn's metric exports
(``ClientMetrics.flush``): a done-callback that blocks on a follow-up call, a
``stats_cb`` that writes to a slow sink, an OpenTelemetry exporter stuck on the network. Each would stall every
call of the client. So:

- ``CallbackRunner`` runs the done-callbacks of the futures: an elastic pool that starts another thread whenever
  all of its threads are busy, so a blocked callback costs one thread, never the client;
- ``SerialRunner`` runs jobs in order on one thread of its own; a client has one for the callbacks from ``conf``
  and another for the metric exports, so a slow callback delays only the callbacks after it, never a result (a
  turn waits for its exports only, ``EXPORT_WAIT_S`` at most). Its queue is bounded; past the bound, work is
  dropped and that is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["CallbackRunner", "SerialRunner", "run_contained"]

log = logging.getLogger("throttled_admin")

_IDLE_EXIT_S = 5.0  # an idle callback thread exits after this long
_SERIAL_QUEUE_LIMIT = 100_000


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
            run_contained(job)

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
                run_contained(job)
        finally:
            with self._lock:
                self._threads.discard(me)

    def close(self, deadline: float) -> None:
        """Run what is queued, then let idle threads exit; waits until ``deadline`` (monotonic) at the most, in
        total, for threads still in a callback, and never for the calling thread itself."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            threads = [t for t in self._threads if t is not threading.current_thread()]
        _join(threads, deadline)


def run_contained(job: Callable[[], None]) -> None:
    try:
        job()
    except Exception:  # as concurrent.futures does: a failing callback is logged, never propagated
        log.exception("a done-callback of a throttled_admin future raised")


class SerialRunner:
    """One thread, started on first use, running jobs in order; ``close()`` runs what is queued and stops it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._cv = threading.Condition()
        self._jobs: deque[tuple[Callable[[], None], threading.Event]] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._dropped = False

    def submit(self, job: Callable[[], None]) -> threading.Event:
        """Queue ``job``; the returned event is set once it has run (or was dropped)."""
        done = threading.Event()
        with self._cv:
            if self._closed or len(self._jobs) >= _SERIAL_QUEUE_LIMIT:
                if not self._closed and not self._dropped:
                    self._dropped = True
                    log.warning("%s is %d jobs behind; dropping work (logged once)", self._name, len(self._jobs))
                done.set()
                return done
            self._jobs.append((job, done))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
            self._cv.notify()
        return done

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._jobs and not self._closed:
                    self._cv.wait()
                if not self._jobs:
                    return
                job, done = self._jobs.popleft()
            try:
                run_contained(job)
            finally:
                done.set()

    def close(self, deadline: float) -> None:
        """Run what is queued and stop; waits until ``deadline`` (monotonic) at the most."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            _join([thread], deadline)


def _join(threads: list[threading.Thread], deadline: float) -> None:
    """One budget for all: a thread stuck in user code costs the rest of the budget once, not a timeout each."""
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
