"""One thread that serves every client's scheduler in the process, as an event loop serves many connections.

A scheduler (``scheduler``) is served when something happens for it (``Served.wake``) or when the time it asked for
comes; serving it is one call of its ``serve`` function, which takes its turn (or only serves librdkafka's callbacks)
and says when it wants to be served next, in real (monotonic) time, or None once it is done. Nothing else is shared:
each client keeps its own engine, lock, turn and futures.

Before this, each client had a thread of its own that slept on its own condition: a process with 200 paced clients
(the fleet benchmark's executors) had 200 threads waking on their own, and more clients in a process cost each one
more (issue 40). Here a wake-up serves every client due at that moment.

The loop thread never waits for a client: a turn held by a caller's thread is tried again shortly, a metric export
still pending is looked at again later (``serve`` says when), and a ``serve`` that raises is a bug logged, never the
loop's end. While a serve runs, the other clients wait for it: what runs inside a turn (the application's logging
handlers, an ``oauth_cb``) delays them all. Wakes take no lock: safe from signal handlers and finalizers.

One loop per process; its thread starts with the first client and ends with the last (a closed client leaves no
thread behind), and a process forked from one with a loop makes its own.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable

__all__ = ["DriverLoop", "Served", "done_serving", "driver_loop"]

log = logging.getLogger("throttled_admin")

THREAD_NAME = "throttled-admin-scheduler"


class Served:
    """One client's place in the loop: ``wake()`` asks for a serve as soon as the loop can; ``finished`` is set once
    its ``serve`` has said it is done (None), and ``ended`` is then the loop's thread if it ended with this client,
    the last (``close`` joins it: a closed client leaves no thread behind)."""

    __slots__ = ("_loop", "counted", "due", "ended", "finished", "queued", "serve")

    def __init__(self, loop: DriverLoop, serve: Callable[[], float | None]) -> None:
        self._loop = loop
        self.serve = serve
        self.queued = False  # in the loop's inbox (cleared just before it is served)
        self.due: float | None = None  # when the loop serves it by itself (real time); None: not waiting for a time
        self.finished = threading.Event()
        self.ended: threading.Thread | None = None
        self.counted = False  # among the loop's clients (``DriverLoop.add``), until it is done

    def wake(self) -> None:
        """Serve soon. Takes no lock (``queue.SimpleQueue.put``): safe from a signal handler, a finalizer or a garbage
        collection on any thread, the loop's own included. Cheap when already queued: what the caller changed before
        calling is seen by that serve, which clears ``queued`` before it looks."""
        if not self.queued and not self.finished.is_set():
            self.queued = True
            self._loop.inbox.put(self)


class DriverLoop:
    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[Served] = queue.SimpleQueue()  # the clients woken
        self._timers: list[tuple[float, int, Served]] = []  # (due, order, client): the loop's thread's alone
        self._order = itertools.count()
        # the thread's start and end, and the clients' count (never taken in a wake); an RLock for its owner alone
        # (``held_here``): no section of it is entered again
        self._life = threading.RLock()
        self._thread: threading.Thread | None = None
        self._clients = 0  # added and not finished: the thread ends when none is left, and starts with the next
        self._claimed: threading.Thread | None = None  # the thread that runs (``_run`` claims it as it starts)

    def held_here(self) -> bool:
        """Whether the caller is in one of the loop's sections: a garbage collection there runs the finalizers of
        dropped clients, whose close must not wait for the loop (``Scheduler.close``)."""
        return bool(self._life._is_owned())  # type: ignore[attr-defined]

    def on_its_thread(self) -> bool:
        """Whether the caller is the loop's running thread."""
        claimed = self._claimed
        return claimed is not None and claimed.ident == threading.get_ident()

    def add(self, served: Served) -> None:
        """Count ``served`` among the clients to serve, from its first ``wake()``, and see that a thread runs
        (RuntimeError: none can start, the interpreter is shutting down). Cut short (Ctrl-C), the caller lets it go
        (``abandon``): made first, then counted in one step, it is never counted unseen."""
        with self._life:
            self._clients += 1
            served.counted = True
        self.ensure_thread()

    def abandon(self, served: Served) -> None:
        """A client whose making was cut short after ``add``: no longer counted (once), so the thread still ends
        with the last client."""
        with self._life:
            if not served.counted or served.serve is done_serving:
                return
            if self._thread is None:
                served.counted = False
                self._clients -= 1
                return
            served.serve = done_serving  # a thread runs: it finishes the client as it finishes any
        served.wake()

    def ensure_thread(self) -> None:
        """While any client is counted, a thread runs or starts. One made earlier that never ran (its start failed or
        was cut short, before or in ``start()``) is replaced; if it runs after all, it finds itself replaced and exits
        (``_run``), so two never serve at once."""
        current = self._thread
        if current is not None and current is self._claimed:
            # (without the lock, on every call: the running thread ends only with the last client, and the caller's
            # client is counted, ``add`` having taken the lock before)
            return
        while True:
            with self._life:
                current = self._thread
                if self._clients == 0 or (current is not None and (current is self._claimed or current.is_alive())):
                    return
                thread = self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
            try:
                thread.start()
            except BaseException:
                with self._life:
                    if self._thread is thread and self._claimed is not thread and not thread.is_alive():
                        self._thread = None  # never ran: the next add, call or close starts another
                raise
            return

    def _run(self) -> None:
        with self._life:  # replaced before it ran (``ensure_thread``): another serves
            if self._thread is not threading.current_thread():
                return
            self._claimed = self._thread
        while True:
            for served in self._next():
                if served.finished.is_set():  # (a wake that came as it finished)
                    continue
                try:
                    due = served.serve()
                except BaseException:  # (``serve`` handles its own failures: a bug, which never ends the loop)
                    log.exception("a throttled_admin scheduler failed to be served")
                    due = time.monotonic() + 1.0
                if due is not None:
                    self._at(served, due)
                elif self._finish(served):
                    return

    def _next(self) -> list[Served]:
        """Wait until a client is woken or its time comes: those, each marked not queued (a wake from now on queues
        it again) and not waiting for a time."""
        timers = self._timers
        batch: list[Served] = []
        while not batch:
            now = time.monotonic()
            while timers and (timers[0][0] <= now or timers[0][2].due != timers[0][0]):
                due, _, served = heapq.heappop(timers)
                if served.due == due:  # (else a stale time: served since)
                    batch.append(served)
            try:
                if not batch:  # nothing due: sleep until a wake or the next time
                    batch.append(self.inbox.get(timeout=timers[0][0] - now if timers else None))
                while True:
                    batch.append(self.inbox.get_nowait())
            except queue.Empty:
                pass
        for served in batch:
            served.queued = False
            served.due = None
        return list(dict.fromkeys(batch))  # (a client both due and woken: once)

    def _at(self, served: Served, due: float) -> None:
        if served.queued:  # woken while it was served: served again anyway
            return
        served.due = due
        heapq.heappush(self._timers, (due, next(self._order), served))

    def _finish(self, served: Served) -> bool:
        """``served`` is done; True if it was the last client: this thread ends (the next client starts another)."""
        with self._life:
            self._clients -= 1
            served.counted = False
            last = self._clients == 0
            if last:
                served.ended, self._thread = self._thread, None
                self._timers.clear()
        served.finished.set()
        return last


def done_serving() -> float | None:
    """A serve that says the client is done: for a client whose making was cut short."""
    return None


_loop: DriverLoop | None = None
_loop_lock = threading.Lock()


def driver_loop() -> DriverLoop:
    """The process's loop."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = DriverLoop()
        return _loop


def _forget_in_child() -> None:
    """A forked child has none of its parent's threads: its clients get a loop of their own (those it inherited are
    closed without the loop: ``Scheduler.close``). Nothing else here: a lock a parent's thread held at the fork is
    held for good in the child."""
    global _loop, _loop_lock
    _loop, _loop_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
