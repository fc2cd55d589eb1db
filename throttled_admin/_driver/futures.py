"""Per-topic futures whose done-callbacks never run on the client's scheduler thread.

The scheduler resolves futures itself (no thread hop on the fast path), but a caller's done-callback may
block, for example waiting on a follow-up call. Run on the scheduler thread, it would stop every call of the
client, the follow-up included. So each callback is handed to ``CallbackRunner`` (``_driver.user_code``).

``TopicFuture.cancel()`` withdraws a topic that has not been sent yet (confluent-kafka's futures cannot be
cancelled at all); once its request is in flight, ``cancel()`` returns False as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from throttled_admin._driver.user_code import CallbackRunner

__all__ = ["TopicFuture"]


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
