"""Where the user's code runs: never on the client's scheduler thread.

The scheduler must never wait for code it does not own, but for a bounded wait for a turn's metric exports
(``ClientMetrics.flush``): a done-callback that blocks on a follow-up call, a
``stats_cb`` that writes to a slow sink, an OpenTelemetry exporter stuck on the network. Each would stall every
call of the client. So:

- ``CallbackRunner`` runs the done-callbacks of the futures: an elastic pool whose watcher starts another thread
  whenever the queue has not moved for ``STALL_S`` with every thread in a callback, so a blocked callback costs
  one thread and 10-20 ms to the callbacks behind it, never the client, and a burst of quick ones (a bulk call's
  8,001 futures settled at once) costs one thread, not one a callback (which started 130-150 threads and settled
  the call 0.5 s past its deadline: an adversarial run);
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

__all__ = ["STALL_S", "CallbackRunner", "SerialRunner", "run_contained"]

log = logging.getLogger("throttled_admin")

_IDLE_EXIT_S = 5.0  # an idle callback thread exits after this long
STALL_S = 0.01  # a queue that has not moved for this long, no worker idle: another worker
_SERIAL_QUEUE_LIMIT = 100_000


class CallbackRunner:
    """An elastic pool for done-callbacks. Workers take callbacks in order; a watcher thread, up while callbacks
    are queued, starts a worker when there is none and another whenever the queue has not moved for ``STALL_S``
    with no worker idle (each is in a callback, and one of them may never return). Only the watcher starts
    workers, so a Ctrl-C in ``submit`` can cost a watcher start at most, never a count, and an idle worker is woken
    before it is taken off the idle stack, so a Ctrl-C between the two never leaves it asleep. Idle threads exit: the
    worker idle for the shortest time takes the next callback, so under a trickle the spare ones still do."""

    def __init__(self, name: str = "throttled-admin-callbacks") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._idle_cvs: list[threading.Condition] = []  # the idle workers', the last to come idle on top
        self._watch_cv = threading.Condition(self._lock)  # an idle watcher waits here for a queue
        self._stall_cv = threading.Condition(self._lock)  # the watcher's look every STALL_S (close() cuts it)
        self._jobs: deque[Callable[[], None]] = deque()
        self._idle = 0  # workers waiting for a callback
        self._workers = 0  # workers started (the watcher's count; a worker lowers it as it exits)
        self._taken = 0  # callbacks taken so far: whether the queue moves
        self._watcher: threading.Thread | None = None
        self._threads: set[threading.Thread] = set()  # workers and watchers, for close()
        self._closed = False
        self._said_no_thread = False

    def submit(self, job: Callable[[], None]) -> None:
        started = True
        with self._lock:
            closed = self._closed
            if not closed:
                self._jobs.append(job)
                if self._idle_cvs:  # the worker idle for the shortest time: the others can time out and exit
                    self._idle_cvs[-1].notify()  # woken before it is taken off: a Ctrl-C between the two leaves it
                    self._idle_cvs.pop()  # on the stack, awake, and it takes the callback as one that timed out
                if len(self._jobs) > self._idle:  # more than the idle workers take: the watcher looks
                    if self._watcher is None:
                        started = self._start_watcher()
                    else:
                        self._watch_cv.notify()
        if closed:
            run_contained(job)  # after close: nobody else will run it
        elif not started:
            self._no_thread()

    def _start_watcher(self) -> bool:
        """(Under the lock.) A Ctrl-C here may leave the thread running or not: either way ``_watcher`` is None
        again, so the next submit starts one (two watchers for a while start no more than twice the workers).
        False when no thread is to be had: the callbacks wait for the next submit."""
        thread = threading.Thread(target=self._watch, name=f"{self._name}-watcher", daemon=True)
        try:
            self._watcher = thread
            self._threads.add(thread)
            thread.start()
        except BaseException as exc:
            self._watcher = None
            self._threads.discard(thread)
            if isinstance(exc, RuntimeError):
                return False
            raise
        return True

    def _watch(self) -> None:
        me = threading.current_thread()
        with self._lock:
            try:
                while True:
                    if not self._jobs:
                        if self._closed:
                            return
                        woke = self._watch_cv.wait(_IDLE_EXIT_S)
                        if not woke and not self._jobs:
                            return
                        continue
                    if not self._workers:
                        self._start_worker()
                    taken = self._taken
                    if self._stall_cv.wait(STALL_S):  # close(): look again (a look cut short starts nothing)
                        continue
                    if self._jobs and self._taken == taken and not self._idle:
                        self._start_worker()
            finally:  # (in the same hold of the lock as the decision to end: a submit after it starts a watcher)
                if self._watcher is me:
                    self._watcher = None
                self._threads.discard(me)

    def _start_worker(self) -> None:
        """(Under the lock, on the watcher's thread: no Ctrl-C lands here.)"""
        thread = threading.Thread(target=self._work, name=self._name, daemon=True)
        self._threads.add(thread)
        self._workers += 1
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the watcher tries again after STALL_S
            self._workers -= 1
            self._threads.discard(thread)
            self._lock.release()  # (a logging handler is user code: never under the lock)
            try:
                self._no_thread()
            finally:
                self._lock.acquire()

    def _no_thread(self) -> None:
        """(Not under the lock.) Once: the watcher tries again every STALL_S."""
        with self._lock:
            said, self._said_no_thread = self._said_no_thread, True
        if not said:
            log.warning("no thread to be had for done-callbacks: they wait until one can be started")

    def _work(self) -> None:
        woken = threading.Condition(self._lock)  # this worker's, on the idle stack while it waits
        while True:
            with self._lock:
                while not self._jobs:
                    if self._closed:
                        self._gone()
                        return
                    self._idle += 1
                    self._idle_cvs.append(woken)
                    woken.wait(_IDLE_EXIT_S)
                    self._idle -= 1
                    timed_out = woken in self._idle_cvs  # (popped by a submit or close() if not)
                    if timed_out:
                        self._idle_cvs.remove(woken)
                        if not self._jobs:
                            self._gone()
                            return
                job = self._jobs.popleft()
                self._taken += 1
            try:
                run_contained(job)
            except BaseException:  # (a callback's SystemExit: this thread ends, counted out)
                with self._lock:
                    self._gone()
                raise

    def _gone(self) -> None:
        """(Under the lock, in the same hold as the worker's decision to end: the watcher never counts a worker
        that will take no more callbacks.)"""
        self._workers -= 1
        self._threads.discard(threading.current_thread())

    def close(self, deadline: float) -> None:
        """Run what is queued (a blocked callback still leaves none behind it), then let idle threads exit; waits
        until ``deadline`` (monotonic) at the most, in total, for threads still in a callback, and never for the
        calling thread itself."""
        with self._lock:
            self._closed = True
            while self._idle_cvs:  # (each woken before it is taken off, as in submit)
                self._idle_cvs[-1].notify()
                self._idle_cvs.pop()
            self._watch_cv.notify_all()
            self._stall_cv.notify_all()
            orphaned: list[Callable[[], None]] = []
            if self._watcher is None:  # (a Ctrl-C, or no thread, as submit started one): nobody else will run them
                orphaned = list(self._jobs)
                self._jobs.clear()
        for job in orphaned:  # here, as a submit after close runs its callback
            run_contained(job)
        joined: set[threading.Thread] = {threading.current_thread()}
        while time.monotonic() < deadline:  # and the workers the watcher starts meanwhile for what is queued
            with self._lock:
                threads = [t for t in self._threads if t not in joined]
            if not threads:
                return
            joined.update(threads)
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
            drop = self._closed or len(self._jobs) >= _SERIAL_QUEUE_LIMIT
            say = drop and not self._closed and not self._dropped
            if drop:
                self._dropped = self._dropped or say
                done.set()
            else:
                self._jobs.append((job, done))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                    self._thread.start()
                self._cv.notify()
        if say:  # (a logging handler is user code: never under the lock)
            log.warning("%s is %d jobs behind; dropping work (logged once)", self._name, _SERIAL_QUEUE_LIMIT)
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
