"""Exceptions raised by the application's conf callbacks, kept for the application's next ``poll()``.

confluent-kafka runs ``error_cb``, ``stats_cb`` and ``throttle_cb`` inside ``poll()``, and whatever one raises
propagates out of that ``poll()`` (applications raise from ``error_cb`` to stop on a fatal error). This client
serves librdkafka's callbacks on its scheduler's thread and runs the application's own on its user-code thread
(``_driver.user_code``), so nothing of the application's ever stops the scheduler. What a callback raises is
recorded here instead, in order, and ``ThrottledAdminClient.poll()`` raises it, one a call: never swallowed,
never raised on a thread of the client's.

At most ``_KEEP`` wait for a ``poll()``; past that (an application that never polls, with a callback that always
raises) the first one dropped is logged, and at ``close()`` what was never collected is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["CallbackErrors"]

log = logging.getLogger("throttled_admin")

_KEEP = 100


def _described(exc: BaseException) -> str:
    """The exception and where it was raised, without its formatted traceback: CPython 3.11 formats one with
    ``ast.parse``, whose recursion counter is shared by every thread (gh-106905), so formatting it here, on any
    thread while another compiles (an import), can fail that import with SystemError."""
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
    return f"{type(exc).__name__}: {exc}{where}"


class CallbackErrors:
    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._pending: deque[tuple[str, BaseException]] = deque()
        self._dropped = 0
        self._handed: deque[threading.Event] = deque()  # done-events of conf callbacks handed over, oldest first
        self.handed_total = 0  # conf callbacks ever handed over
        self._runner: int | None = None  # the thread that runs them

    def counted(
        self, run: Callable[[Callable[[], None]], threading.Event | None]
    ) -> Callable[[Callable[[], None]], None]:
        """``run`` (which hands a job to the user-code thread and returns the event set once it has run or was
        dropped), for conf callbacks: ``poll()`` waits for those librdkafka served before it returns, as
        confluent-kafka's ``poll()`` runs them (and raises what they raise) whatever its timeout."""

        def hand_over(job: Callable[[], None]) -> None:
            def marked() -> None:
                self._runner = threading.get_ident()
                job()

            done = run(marked)
            with self._cv:
                self.handed_total += 1
                self._forget_run()
                if done is not None and not done.is_set():
                    self._handed.append(done)

        return hand_over

    def _forget_run(self) -> None:
        """Drop the oldest handed-over callbacks that have run (or were dropped); under ``_cv``."""
        while self._handed and self._handed[0].is_set():
            self._handed.popleft()

    def wait_handed_over(self, timeout: float) -> None:
        """Until the conf callbacks handed over so far have run or one has raised (confluent-kafka's ``poll()``
        stops at the first exception), ``timeout`` seconds at most; at once on the thread that runs them (a
        callback that polls would wait for itself)."""
        if threading.get_ident() == self._runner:
            return
        end = time.monotonic() + timeout
        while True:
            with self._cv:
                self._forget_run()
                if not self._handed or self._pending:
                    return
                oldest = self._handed[0]
            if not oldest.wait(max(0.0, end - time.monotonic())):
                return

    def wrap(self, name: str, callback: Callable[..., Any]) -> Callable[..., None]:
        """``callback`` (``name`` from conf), whose exception is recorded instead of raised."""

        def call(*args: Any) -> None:
            try:
                callback(*args)
            except BaseException as exc:  # SystemExit and KeyboardInterrupt too: they are the application's
                self.record(name, exc)

        return call

    def record(self, name: str, exc: BaseException) -> None:
        with self._cv:
            if len(self._pending) < _KEEP:
                self._pending.append((name, exc))
                self._cv.notify_all()
                return
            self._dropped += 1
            first = self._dropped == 1
        if first:
            log.error(
                "the %s from conf raised %s, and %d earlier exceptions of conf callbacks wait for poll(): this one "
                "and later ones are dropped (poll() raises them)",
                name,
                _described(exc),
                _KEEP,
            )

    def raise_first(self) -> None:
        """Raise the oldest exception not yet raised, if any (its traceback is the callback's)."""
        with self._cv:
            if not self._pending:
                return
            _, exc = self._pending.popleft()
        try:
            raise exc
        finally:
            del exc  # no reference cycle through this frame

    def wait(self, timeout: float) -> bool:
        """Until an exception is recorded or ``timeout`` seconds pass; True when one waits."""
        with self._cv:
            return self._cv.wait_for(lambda: bool(self._pending), timeout)

    def close(self) -> None:
        """Log what no ``poll()`` collected (the client is closing): nothing is lost without a word."""
        with self._cv:
            pending, self._pending = list(self._pending), deque()
            dropped, self._dropped = self._dropped, 0
        for name, exc in pending:
            log.error("the %s from conf raised %s, and no poll() raised it before close()", name, _described(exc))
        if dropped:
            log.error("%d more exceptions of conf callbacks were dropped: no poll() collected them", dropped)
