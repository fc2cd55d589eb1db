"""The futures of a scheduler's pending calls: where each of the engine's settlements finds its future.

The engine names a topic by its call's id and its name (``TopicRef``); the futures live here only. A call's
futures are made after its first request is written (issue 40: 50,000 of them took a fifth of a bulk call's time to
its first write), so a call is first *expected* (``expect``), and what is settled before its futures exist waits
for them (a broker that answers at once, a deadline already passed, a close). ``register`` carries those
settlements out on the new futures and keeps the others, in one step: no other thread sees a future whose outcome
is known but not yet set (a ``close()`` from a frame that cannot wait hedges every future it finds pending).

Not thread-safe: the scheduler uses it under its lock. Settling a future that other threads may already hold
(``carry_out`` from ``Scheduler._resolve``) happens outside that lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import InvalidStateError

from throttled_admin._driver.futures import TopicFuture
from throttled_admin._engine import Settle, TopicRef

__all__ = ["OpenCall", "OpenCalls", "carry_out"]


class OpenCall(dict[str, TopicFuture]):
    """A call's futures still pending here, by topic name, and the call's Kafka API name (``operation``): one
    dict for the call, not a pair a topic (issue 40). ``ended``: called once when none is pending here any more
    (settled, withdrawn, taken by a close, or the call abandoned), under the scheduler's lock: it must not block."""

    __slots__ = ("ended", "operation")

    def __init__(
        self, operation: str, futures: dict[str, TopicFuture], ended: Callable[[], None] | None = None
    ) -> None:
        super().__init__(futures)
        self.operation = operation
        self.ended = ended


class OpenCalls:
    """The calls whose futures may still be pending, by call id, and the settlements of calls whose futures are not
    made yet."""

    __slots__ = ("_calls", "_unborn")

    def __init__(self) -> None:
        self._calls: dict[int, OpenCall] = {}
        self._unborn: dict[int, list[Settle]] = {}  # call id -> its settlements before its futures were made

    def expect(self, call_id: int) -> None:
        """The call is submitted and its futures are not made yet: its settlements wait for them."""
        self._unborn[call_id] = []

    def register(self, call_id: int, pending: OpenCall) -> None:
        """The call's futures are made (no other thread has seen them: nothing waits on them, no callback is added):
        what was settled before is carried out on them here, and the others are pending from now on."""
        early = self._unborn.pop(call_id)
        if early:
            carry_out(early, [pending.pop(settle.topic, None) for settle in early])
        if pending:
            self._calls[call_id] = pending
        else:
            _ended(pending)

    def abandon(self, call_id: int) -> None:
        """The call's ``submit`` was cut short before its caller had the futures: its settlements are dropped, and
        its futures, if registered, are no longer pending here."""
        self._unborn.pop(call_id, None)
        if (call := self._calls.pop(call_id, None)) is not None:
            _ended(call)

    def route(self, settlements: list[Settle]) -> tuple[list[Settle], list[TopicFuture | None]]:
        """The settlements of calls whose futures exist, each with its future (None: withdrawn, or settled by a
        close() here), a call's topics looked up once per run of its settlements (a bulk answer's are one run); the
        others wait for their call's futures (``register``)."""
        if self._unborn:
            settlements = _held(self._unborn, settlements)
        futures: list[TopicFuture | None] = []
        call_id, pending = None, None
        for settle in settlements:
            if settle.call_id != call_id:
                call_id = settle.call_id
                pending = self._calls.get(call_id)
            futures.append(None if pending is None else pending.get(settle.topic))
        return settlements, futures

    def pending(self, ref: TopicRef) -> TopicFuture | None:
        """The topic's future while it is pending here."""
        call = self._calls.get(ref.call_id)
        return None if call is None else call.get(ref.name)

    def forget(self, ref: TopicRef) -> TopicFuture | None:
        """The topic's future, no longer pending here (settled, or withdrawn)."""
        call = self._calls.get(ref.call_id)
        if call is None or (taken := call.pop(ref.name, None)) is None:
            return None
        if not call:
            del self._calls[ref.call_id]
            _ended(call)
        return taken

    def forget_all(self, settlements: list[Settle]) -> None:
        """``forget`` of each settlement's topic, a call's topics once per run of its settlements."""
        call_id, pending = None, None
        for settle in settlements:
            if settle.call_id != call_id:
                call_id = settle.call_id
                pending = self._calls.get(call_id)
            if pending is not None:
                pending.pop(settle.topic, None)
                if not pending:
                    del self._calls[call_id]
                    _ended(pending)
                    pending = None

    def take_all(self) -> dict[int, OpenCall]:
        """Every call still pending here, no longer pending (a close() here settles them)."""
        calls, self._calls = self._calls, {}
        for call in calls.values():
            _ended(call)
        return calls

    def futures(self) -> Iterator[TopicFuture]:
        """Every future pending here."""
        for call in self._calls.values():
            yield from call.values()


def _ended(call: OpenCall) -> None:
    if call.ended is not None:
        call.ended()


def carry_out(settlements: list[Settle], futures: list[TopicFuture | None]) -> None:
    """Each settlement on its future (None: withdrawn, or settled by a close() here)."""
    for settle, future in zip(settlements, futures, strict=True):
        if future is None:  # withdrawn
            continue
        try:  # (not done() first: a call more a topic, issue 39; contextlib.suppress is two)
            if settle.outcome is None:
                future.set_result(None)
            else:
                future.set_exception(settle.outcome)
        except InvalidStateError:  # settled by a close() here
            pass


def _held(unborn: dict[int, list[Settle]], settlements: list[Settle]) -> list[Settle]:
    """The settlements of calls whose futures exist; the others are kept in ``unborn``, by call."""
    born = []
    for settle in settlements:
        held = unborn.get(settle.call_id)
        if held is None:
            born.append(settle)
        else:
            held.append(settle)
    return born
