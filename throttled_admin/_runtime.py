"""The machinery behind one ThrottledAdminClient: the inner confluent-kafka AdminClient, the KIP-219
throttle tracker, the metrics, the worker threads that run calls, and the serving of throttle events.

Calls talk to this object (the ``CallContext`` of ``_call.py``), never to the public facade.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka.admin import AdminClient

from throttled_admin._call import MutationCall
from throttled_admin._metrics import ClientMetrics
from throttled_admin._throttle import ThrottleTracker

__all__ = ["AdminRuntime"]

log = logging.getLogger("throttled_admin")

_MAX_CONCURRENT_CALLS = 16
_IDLE_POLL_S = 0.2  # how often events of delegated calls (throttle, error, stats callbacks) are served


def _close_at_exit(runtime: AdminRuntime) -> None:
    """At interpreter exit, close the client before concurrent.futures joins its worker threads, so a
    script that ends with a call still waiting out a throttle exits at once instead of after the wait.
    threading's exit hooks run in reverse order of registration, so this runs before the executor's
    (the hook is private; concurrent.futures uses it the same way, and without it exit is only slower)."""
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        return
    ref = weakref.ref(runtime)

    def close() -> None:
        alive = ref()
        if alive is not None:
            alive.close()

    with contextlib.suppress(RuntimeError):  # already shutting down
        register(close)


class AdminRuntime:
    def __init__(self, conf: dict[str, Any], metrics: ClientMetrics):
        conf = dict(conf)
        self._user_throttle_cb: Callable[[Any], None] | None = conf.pop("throttle_cb", None)
        conf["throttle_cb"] = self._on_throttle
        self.min_wait_s = float(conf.get("retry.backoff.ms", 100)) / 1000
        self.tracker = ThrottleTracker()
        self.metrics = metrics
        self.inner = AdminClient(conf)
        self.wake = threading.Condition()
        self._closed = False
        self._in_flight = 0
        self._poll_lock = threading.Lock()
        self._events_seen = 0
        self._executor = ThreadPoolExecutor(_MAX_CONCURRENT_CALLS, thread_name_prefix="throttled-admin")
        self._poller = threading.Thread(target=self._poll_idle, name="throttled-admin-poll", daemon=True)
        self._poller.start()
        _close_at_exit(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, call: MutationCall) -> None:
        with self.wake:
            if self._closed:
                raise RuntimeError("ThrottledAdminClient is closed")
            self._in_flight += 1
            self._executor.submit(self._run, call)

    def _run(self, call: MutationCall) -> None:
        try:
            call.run()
        finally:
            with self.wake:
                self._in_flight -= 1

    # -- throttle events -------------------------------------------------------------------------

    def _on_throttle(self, event: Any) -> None:
        """librdkafka's throttle_cb; runs inside ``poll()`` on whichever thread polls (under _poll_lock)."""
        self._events_seen += 1
        self.tracker.record(event.broker_id, event.throttle_time)
        self.metrics.record_throttle(event.broker_id, event.throttle_time * 1000)
        if self._user_throttle_cb is not None:
            try:
                self._user_throttle_cb(event)
            except Exception:
                log.exception("the throttle_cb from conf raised")

    def drain_throttle_events(self) -> None:
        """Serve queued throttle events after a wrapped response. librdkafka sends none for a response
        with throttle_time_ms 0, so no event means 0, which the sensor records as Kafka's NetworkClient does."""
        with self._poll_lock:
            self._events_seen = 0
            self.inner.poll(0)
            seen = self._events_seen
        if seen == 0:
            self.metrics.record_throttle(None, 0.0)

    def _poll_idle(self) -> None:
        """Serve events of delegated calls while no wrapped call is in flight (those drain their own,
        and polling here too could take their event and leave them recording a zero)."""
        with self.wake:
            while not self._closed:
                if self._in_flight == 0:
                    with self._poll_lock:
                        self.inner.poll(0)
                self.wake.wait(_IDLE_POLL_S)

    def close(self) -> None:
        with self.wake:
            if self._closed:
                return
            self._closed = True
            self.wake.notify_all()
        self._executor.shutdown(wait=True)
        self._poller.join()
        self.metrics.close()
