"""One thread for the reads the engine asks for (the cluster's metadata, every broker's views), off the scheduler's
thread: a slow or absent broker delays only the sends that wait for a read, never a deadline.

The engine is the only record of which reads are out (``MetadataReads``, ``ViewReads``): it asks for one of each
kind at a time, and each read ends by telling it. ``Reader`` only runs the jobs, in order, on one thread that starts
with the first job and exits once idle; nothing in a job is tied to one client, so one reader could serve several.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["Reader"]

log = logging.getLogger("throttled_admin")

_IDLE_EXIT_S = 5.0  # the reader's thread exits after this long without a job


class Reader:
    """Runs read jobs in order on a thread of its own."""

    def __init__(self, name: str = "throttled-admin-reader") -> None:
        self._name = name
        self._lock = threading.Condition()
        self._jobs: deque[tuple[Callable[[], object], bool]] = deque()  # (job, whether ``close`` waits for it)
        self._thread: threading.Thread | None = None
        self._running = False  # a job that close waits for is running
        self._closed = False

    def submit(self, job: Callable[[], object], *, first: bool = False, waited: bool = True) -> bool:
        """Queue a job (``first``: ahead of those queued); False if it will not run (closed, or no thread can start:
        the interpreter is exiting). ``waited``: whether ``close`` waits for it while it runs (False: it uses nothing
        closed under it, and what it finds is no one's once closed)."""
        entry = (job, waited)
        with self._lock:
            if self._closed:
                return False
            if first:
                self._jobs.appendleft(entry)
            else:
                self._jobs.append(entry)
            if self._thread is not None:
                self._lock.notify()
                return True
            # Known before it starts: a start cut short (Ctrl-C on a caller's thread, inside ``start`` or just after
            # it) leaves either no thread, and the next submit starts one, or this one, never a second beside it.
            thread = self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            try:
                thread.start()
            except BaseException as exc:
                if not thread.is_alive():
                    self._thread = None
                    if isinstance(exc, RuntimeError):  # interpreter shutdown: no new threads
                        self._jobs.remove(entry)
                        return False
                raise
            return True

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._jobs and not self._closed:
                    self._lock.wait(_IDLE_EXIT_S)
                if not self._jobs or self._closed:
                    self._thread = None
                    self._jobs.clear()
                    self._lock.notify_all()
                    return
                job, self._running = self._jobs.popleft()
            try:
                job()
            except Exception:  # a bug in a read: the reader goes on serving the others
                log.exception("a throttled_admin metadata read failed")
            finally:
                with self._lock:
                    self._running = False
                    self._lock.notify_all()

    def close(self, timeout_s: float) -> bool:
        """Run no more jobs; wait up to ``timeout_s`` for the one running if it is waited for (librdkafka's handle
        must outlive it). True if none waited for is running any more."""
        with self._lock:
            self._closed = True
            self._jobs.clear()
            self._lock.notify_all()
            return self._lock.wait_for(lambda: not self._running, timeout=timeout_s)
