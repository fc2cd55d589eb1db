"""Per-topic futures whose done-callbacks never run on the client's scheduler thread.

The scheduler resolves futures itself (no thread hop on the fast path), but a caller's done-callback may
block, for example waiting on a follow-up call. Run on the scheduler thread, it would stop every call of the
client, the follow-up included. So each callback is handed to ``CallbackRunner`` (``_driver.user_code``).

``TopicFuture.cancel()`` withdraws a topic that has not been sent yet (confluent-kafka's futures cannot be
cancelled at all); once its request is in flight, ``cancel()`` returns False as usual.

Each future has a ``threading.Condition`` of its own, as every ``concurrent.futures.Future`` does:
``concurrent.futures.wait`` and ``as_completed`` lock the futures they are given in order of ``id(future)``,
which is one order of locks only while no two futures share one (futures of a call sharing a Condition deadlocked
two threads waiting on futures of the same two calls, and the scheduler's thread with them).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from throttled_admin._driver.user_code import CallbackRunner

__all__ = ["TopicFuture"]


def _never(_: Any) -> bool:
    return False


class TopicFuture(Future[None]):
    """The outcome of one topic of one call: ``None`` or the topic's exception."""

    def __init__(self, runner: CallbackRunner) -> None:
        super().__init__()
        self._runner = runner
        self._withdraw: Callable[[Any], bool] = _never
        self._topic: Any = None

    def bind_withdraw(self, withdraw: Callable[[Any], bool], topic: Any) -> None:
        """How to take this topic back from the scheduler's queue: ``withdraw(topic)``, True when it had not been
        sent."""
        self._withdraw = withdraw
        self._topic = topic

    def add_done_callback(self, fn: Callable[[Future[None]], object]) -> None:
        if self.done():
            fn(self)  # already resolved: run in the caller's thread, as concurrent.futures does
            return
        runner = self._runner
        super().add_done_callback(lambda future: runner.submit(lambda: _call(fn, future)))

    def add_settled_callback(self, fn: Callable[[Future[None]], object]) -> None:
        """For the client's own code that never blocks (the asyncio bridge): ``fn`` runs on the thread that settles
        the future, with no hop to the callback pool."""
        super().add_done_callback(fn)

    def cancel(self) -> bool:
        """Withdraw the topic if it has not been sent; False once it is in flight or resolved."""
        if self.done():
            return self.cancelled()
        return self._withdraw(self._topic) and super().cancel()


def _call(fn: Callable[[Future[None]], Any], future: Future[None]) -> None:
    fn(future)
