"""librdkafka's handle and the inherited calls that block in it: confluent-kafka's handle destroy waits for a
``list_topics`` under way on another thread (forever with its default timeout, on a broker that does not answer), so
``close()`` leaves the destroy to the last such call to return, and returns within its budget."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka.admin import AdminClient

__all__ = ["CLOSED_HANDLE", "HandleCalls", "closed_twin"]

#: confluent-kafka's words for a call on a destroyed handle, said as soon as the close begins
CLOSED_HANDLE = "Handle has been closed"

_T = TypeVar("_T")


class HandleCalls:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._under_way = 0
        self._closed = False
        self._destroy: Callable[[], object] | None = None  # left to the last call under way to return

    @property
    def closed(self) -> bool:
        """The close has begun: every call on the handle raises confluent-kafka's own error (``closed_twin``)."""
        return self._closed

    def call(self, method: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``method(*args, **kwargs)``, a call that blocks in the handle; RuntimeError once the close has begun."""
        with self._lock:
            if self._closed:
                raise RuntimeError(CLOSED_HANDLE)
            self._under_way += 1
        try:
            return method(*args, **kwargs)
        finally:
            with self._lock:
                self._under_way -= 1
                destroy = self._destroy if self._under_way == 0 else None
                if destroy is not None:
                    self._destroy = None
            if destroy is not None:  # (on a thread of ours: the caller has its answer now)
                try:
                    threading.Thread(target=destroy, name="throttled-admin-close", daemon=True).start()
                except RuntimeError:  # (the interpreter is shutting down: no new thread)
                    destroy()

    def close(self, destroy: Callable[[], object]) -> bool:
        """``destroy()`` now when no call is under way (True), else when the last returns (False)."""
        with self._lock:
            self._closed = True
            if self._under_way:
                self._destroy = destroy
                return False
        destroy()
        return True


_twin: AdminClient | None = None
_twin_lock = threading.Lock()


def closed_twin() -> AdminClient:
    """A closed confluent-kafka AdminClient, made once: a call on a client whose close has begun is made on it, and
    raises what confluent-kafka raises on a closed client, in its words (the client's own handle may still be open,
    its destroy waiting for a call under way)."""
    global _twin
    with _twin_lock:
        if _twin is None:
            twin = AdminClient({"log_level": 0})
            twin.__exit__(None, None, None)
            _twin = twin
        return _twin
