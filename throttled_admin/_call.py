"""One topic-mutation call with Java AdminClient semantics (KIP-599), run on a worker thread.

Flow of an attempt: wait for the KIP-219 gate -> send the pending topics through the inner AdminClient
-> wait for its futures -> drain throttle events (so the response's throttle is applied before any of this
call's futures resolve) -> settle successes and non-quota errors -> raise ThrottlingQuotaExceededException
for the throttled subset, which the retry policy re-sends after the broker's throttle, within one deadline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException
from tenacity import RetryCallState

from throttled_admin._errors import (
    ThrottlingQuotaExceededException,
    closed_error,
    is_throttled,
    timed_out_error,
)
from throttled_admin._metrics import ClientMetrics
from throttled_admin._options import MutationOptions
from throttled_admin._retry import quota_retry_policy
from throttled_admin._throttle import ThrottleTracker

__all__ = ["CREATE_PARTITIONS", "CREATE_TOPICS", "DELETE_TOPICS", "CallContext", "MutationCall", "Operation"]

log = logging.getLogger("throttled_admin")

# librdkafka times out its own request at the call's deadline; allow it this long to report that.
_REPORT_GRACE_S = 2.0


@dataclass(frozen=True)
class Operation:
    """How to send one kind of mutation through confluent-kafka and name its topics."""

    name: str  # the Kafka API name, also messaging.operation.name
    send: Callable[[Any, list[Any], dict[str, Any]], dict[str, Future[None]]]
    topic_of: Callable[[Any], str]


CREATE_TOPICS = Operation("CreateTopics", lambda admin, items, kw: admin.create_topics(items, **kw), lambda t: t.topic)
DELETE_TOPICS = Operation("DeleteTopics", lambda admin, items, kw: admin.delete_topics(items, **kw), lambda t: t)
CREATE_PARTITIONS = Operation(
    "CreatePartitions", lambda admin, items, kw: admin.create_partitions(items, **kw), lambda p: p.topic
)


class CallContext(Protocol):
    """What a call needs from its client; the call never reaches back into the facade otherwise."""

    inner: Any
    tracker: ThrottleTracker
    metrics: ClientMetrics
    wake: threading.Condition
    min_wait_s: float

    @property
    def closed(self) -> bool: ...

    def drain_throttle_events(self) -> None: ...


class _Closed(Exception):
    pass


class _TimedOut(Exception):
    pass


class MutationCall:
    def __init__(
        self,
        context: CallContext,
        operation: Operation,
        items: Sequence[Any],
        options: MutationOptions,
        *,
        retry: bool,
        timeout_ms: int,
    ):
        self.started_at = time.monotonic()
        self.deadline = self.started_at + timeout_ms / 1000
        self.timeout_ms = timeout_ms
        self._context = context
        self._operation = operation
        self._options = options
        self._retry = retry
        self.pending: dict[str, Any] = {operation.topic_of(item): item for item in items}
        self.futures: dict[str, Future[None]] = {}
        for name in self.pending:
            future: Future[None] = Future()
            future.set_running_or_notify_cancel()  # as confluent-kafka's: not cancellable
            self.futures[name] = future
        self._error_type: str | None = None
        self._throttled_at = self.started_at

    # -- running ---------------------------------------------------------------------------------

    def run(self) -> None:
        name = self._operation.name
        try:
            if self._context.closed:
                raise _Closed
            policy = quota_retry_policy(
                enabled=self._retry,
                budget_s=self._remaining_s(),
                min_wait_s=self._context.min_wait_s,
                sleep=self._back_off,
                before_sleep=self._before_retry,
            )
            policy(self._attempt)
        except ThrottlingQuotaExceededException as exc:
            # Java fails still-throttled topics with the throttle that remains, not a TimeoutException.
            elapsed_ms = (time.monotonic() - self._throttled_at) * 1000
            remaining_ms = max(0, int(exc.throttle_time_ms - elapsed_ms))
            throttled = exc
            self._fail_pending(lambda topic: throttled.for_topic(topic, remaining_ms))
        except _Closed:
            self._fail_pending(lambda topic: closed_error(name))
        except _TimedOut:
            self._fail_pending(lambda topic: timed_out_error(name, self.timeout_ms))
        except Exception as exc:  # anything unexpected still gives every topic an outcome
            log.exception("%s failed unexpectedly", name)
            reason = f"{name} failed: {type(exc).__name__}"
            self._fail_pending(lambda topic: KafkaException(KafkaError(KafkaError._FAIL, reason)))

    def _attempt(self) -> None:
        self._wait_for_gate()
        remaining_s = self._remaining_s()
        if remaining_s <= 0:
            raise _TimedOut
        items = list(self.pending.values())
        try:
            inner = self._operation.send(self._context.inner, items, self._options.inner_kwargs(remaining_s))
        except KafkaException as exc:  # refused by confluent-kafka itself: final for every topic
            refused = exc
            self._fail_pending(lambda topic: refused)
            return
        self._await(list(inner.values()), remaining_s + _REPORT_GRACE_S)
        answered = {topic: future for topic, future in inner.items() if future.done()}
        if answered:
            # The response's throttle event is queued before its result: apply it before settling anything.
            self._context.drain_throttle_events()
        throttled = []
        for topic, future in answered.items():
            error = future.exception()
            if error is None:
                self._settle(topic, None)
            elif is_throttled(error):
                throttled.append(topic)
            else:
                self._settle(topic, error)
        if len(answered) < len(inner):
            raise _TimedOut
        if throttled:
            self._throttled(len(throttled), self._context.tracker.remaining_ms())

    def _wait_for_gate(self) -> None:
        """KIP-219: do not send to a throttled cluster; fail fast when waiting cannot help. Re-checked
        after each wait: a concurrent call may have been throttled meanwhile."""
        while (gate_s := self._context.tracker.remaining_s()) > 0:
            if not self._retry or gate_s >= self._remaining_s():
                self._throttled(len(self.pending), int(gate_s * 1000 + 0.5))
            self._back_off(gate_s)

    def _throttled(self, topics: int, throttle_ms: int) -> None:
        self._context.metrics.record_violations(self._operation.name, topics)
        self._throttled_at = time.monotonic()
        raise ThrottlingQuotaExceededException(throttle_ms)

    def _before_retry(self, state: RetryCallState) -> None:
        log.debug(
            "%s: %d topic(s) throttled, re-sending in %.0f ms",
            self._operation.name,
            len(self.pending),
            state.upcoming_sleep * 1000,
        )
        self._context.metrics.record_retry(self._operation.name)

    # -- waiting (every wait wakes on close) -----------------------------------------------------

    def _remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def _back_off(self, seconds: float) -> None:
        start = time.monotonic()
        until = start + seconds
        with self._context.wake:
            while not self._context.closed:
                left = until - time.monotonic()
                if left <= 0:
                    break
                self._context.wake.wait(left)
        self._context.metrics.record_backoff(self._operation.name, time.monotonic() - start)
        if self._context.closed:
            raise _Closed

    def _await(self, futures: list[Future[None]], timeout_s: float) -> None:
        until = time.monotonic() + timeout_s
        wake = self._context.wake

        def notify(_: Future[None]) -> None:
            # Runs on librdkafka's background thread: only a brief lock to wake the worker, never a wait.
            with wake:
                wake.notify_all()

        for future in futures:
            future.add_done_callback(notify)
        with wake:
            while not all(f.done() for f in futures):
                if self._context.closed:
                    raise _Closed
                left = until - time.monotonic()
                if left <= 0:
                    return
                wake.wait(left)

    # -- outcomes --------------------------------------------------------------------------------

    def _settle(self, topic: str, exc: BaseException | None) -> None:
        self.pending.pop(topic, None)
        future = self.futures[topic]
        if future.done():
            return
        if exc is not None and self._error_type is None:
            error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
            self._error_type = error.name() if isinstance(error, KafkaError) else type(exc).__name__
        if not self.pending:
            # Record the call before its last future resolves: a caller that waits for the results and then
            # reads the metrics always finds this call in them.
            elapsed_s = time.monotonic() - self.started_at
            self._context.metrics.record_call(self._operation.name, elapsed_s, self._error_type)
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)

    def _fail_pending(self, make: Callable[[str], BaseException]) -> None:
        for topic in list(self.pending):
            self._settle(topic, make(topic))
