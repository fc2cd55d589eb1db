"""One mutation scheduler per client: it alone sends CreateTopics, DeleteTopics and CreatePartitions.

Calls validate their input, hand their topics to the scheduler and return futures at once; no call holds a
thread. The scheduler's thread runs this loop:

1. serve librdkafka's callbacks (``poll``): throttle events update the KIP-219 gate as they arrive;
2. settle the request in flight once all of its results are in: classify each topic (``_classify``), resolve
   it or queue it again, and feed the response's throttle to the metrics and the pacer;
3. settle what cannot wait: topics whose call's deadline has passed (queued ones were never sent; in-flight ones
   have an unknown outcome), and everything after an authentication failure;
4. if nothing is in flight, build the next request: wait for the gate (the broker's throttle) and the pacer
   (the quota's tokens), coalesce queued topics of compatible calls, and send it.

At most one mutation request is in flight, so nothing is ever sent into a muted connection (Kafka's controller
applies mutations one at a time anyway). Each request's controller deadline (``operation_timeout``, the
request's ``timeout_ms``) ends before the earliest deadline of the calls in it, with a margin for the answer to
come back: a KRaft controller refuses what it cannot handle by then (REQUEST_TIMED_OUT) and applies nothing.
Futures are resolved on this thread, but their done-callbacks run elsewhere (``_futures``).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._classify import Outcome, classify, error_of
from throttled_admin._errors import (
    ThrottlingQuotaExceededException,
    after_unknown_attempt,
    closed_error,
    in_flight_error,
    not_sent_error,
    refused_error,
    unknown_outcome_error,
)
from throttled_admin._futures import TopicFuture
from throttled_admin._handshake_drops import HandshakeDrops, diagnoses
from throttled_admin._metrics import ClientMetrics
from throttled_admin._quota import Pacer
from throttled_admin._retry import RetryBackoff
from throttled_admin._round_trip import RoundTrip
from throttled_admin._throttle import ThrottleTracker
from throttled_admin._user_code import CallbackRunner
from throttled_admin._work import CREATE_PARTITIONS, DELETE_TOPICS, Call, RequestKind, Topic

__all__ = ["USER_CODE_WAIT_S", "ClientGone", "Scheduler", "Transport"]

log = logging.getLogger("throttled_admin")

MAX_TOPICS_PER_REQUEST = 1000  # librdkafka's cost per request grows faster than linearly with its size
# A KRaft controller refuses a whole request that makes more than this many metadata records with
# POLICY_VIOLATION "Unable to perform excessively large batch operation." (QuorumController's
# MAX_RECORDS_PER_USER_OP); a single topic larger than that is sent alone, and gets the broker's answer.
MAX_RECORDS_PER_REQUEST = 10_000
_LIBRDKAFKA_MAX_TIMEOUT_S = 3600.0  # request_timeout / operation_timeout range of librdkafka
_MIN_MARGIN_S = 0.05  # the least time kept between the controller's deadline and the call's
_MIN_OPERATION_TIMEOUT_S = 0.001
_MIN_QUOTA_BACKOFF_S = 0.005
_BUSY_POLL_S = 0.05  # how often librdkafka's callbacks are served while work is pending
_IDLE_POLL_S = 0.2  # ... and while idle (throttle, error and stats callbacks of other AdminClient methods)
# A request librdkafka never completes frees the slot this long after its timeout (librdkafka scans timeouts
# once a second).
_ABANDON_GRACE_S = 2.0
_METADATA_TIMEOUT_S = 5.0
# close() waits this long in all for user code still running (done-callbacks, conf callbacks, exports).
USER_CODE_WAIT_S = 2.0
_AUTH_ERRORS = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
# An authentication failure fails what is pending and what is submitted this soon after it; librdkafka keeps
# reconnecting and reports it again if it persists.
_AUTH_ERROR_TTL_S = 5.0
# The answer a re-sent mutation gets when an earlier attempt with an unknown outcome was applied after all.
_ALREADY_DONE = {
    "CreateTopics": KafkaError.TOPIC_ALREADY_EXISTS,
    "DeleteTopics": KafkaError.UNKNOWN_TOPIC_OR_PART,
    "CreatePartitions": KafkaError.INVALID_PARTITIONS,
}


class ClientGone(Exception):
    """The client behind the transport was garbage-collected or closed."""


class Transport(Protocol):
    """What the scheduler needs from the librdkafka handle; the facade provides it without a strong reference."""

    def send(self, method: str, items: list[Any], kwargs: dict[str, Any]) -> dict[str, Future[None]]: ...

    def poll(self) -> None: ...

    def partition_counts(self, timeout_s: float) -> dict[str, int]: ...


@dataclass(eq=False)
class _Request:
    kind: RequestKind
    topics: list[Topic]
    mutations: int
    sent_at: float
    expires_at: float  # librdkafka's own timeout, plus a grace: the slot is freed by then at the latest
    kwargs: dict[str, Any]  # confluent-kafka's per-request settings
    inner: dict[str, Future[None]] = field(default_factory=dict)
    outstanding: int = 0
    events: list[tuple[int, float]] = field(default_factory=list)  # throttle events while in flight

    @property
    def complete(self) -> bool:
        return self.outstanding == 0


Settlement = tuple[TopicFuture, BaseException | None]


class Scheduler:
    def __init__(
        self,
        transport: Transport,
        metrics: ClientMetrics,
        *,
        pacer: Pacer | None,
        backoff: RetryBackoff,
        security_protocol: str = "plaintext",
        report: Callable[[KafkaError], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``report``: where an error the client finds itself goes (the application's error_cb)."""
        self._transport = transport
        self._report = report
        self._handshake_drops = (
            HandshakeDrops(security_protocol, self._on_sasl_required) if diagnoses(security_protocol) else None
        )
        self._reached = False  # a request of this client got through to a broker
        self._metrics = metrics
        self._pacer = pacer
        self._backoff = backoff
        self._clock = clock
        self.tracker = ThrottleTracker(clock)
        self._round_trip = RoundTrip()
        self._callbacks = CallbackRunner()
        self._cv = threading.Condition()
        self._calls: dict[int, Call] = {}  # in submission order
        # topic name -> the topics of every pending call that name it, in submission order: only the first is
        # ever sent (rule a: a request never names a topic twice, and a call touching a name an earlier call
        # still holds waits for it; Kafka 4 answers a doubled name once, which crashes librdkafka's parser)
        self._holders: dict[str, list[Topic]] = {}
        self._request: _Request | None = None
        self._auth_error: tuple[KafkaError, float] | None = None  # (error, when it was reported)
        self._refresh_metadata = False  # after NOT_CONTROLLER: read metadata before sending again, as Java does
        self._dirty = False
        self._closed = False
        self._gate_wait: tuple[str, float] | None = None  # (operation, since when) work waits for a throttle
        self._thread = threading.Thread(target=self._run, name="throttled-admin-scheduler", daemon=True)
        self._thread.start()

    # -- called by the facade and by librdkafka's callbacks (any thread) --------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def learned_rate(self) -> float | None:
        with self._cv:
            return None if self._pacer is None else self._pacer.rate

    def submit(self, call: Call, items: list[tuple[str, Any, int | None, int]]) -> dict[str, Future[None]]:
        """Queue a validated call's topics: (name, snapshot, cost or None, metadata records). Returns one future
        per topic."""
        futures: dict[str, Future[None]] = {}
        with self._cv:
            if self._closed:
                raise RuntimeError("ThrottledAdminClient is closed")
            for name, item, cost, records in items:
                future = TopicFuture(self._callbacks)
                topic = call.queued[name] = Topic(name, item, call, future, cost, records)
                self._holders.setdefault(name, []).append(topic)
                future.bind_withdraw(functools.partial(self._withdraw, topic))
                futures[name] = future
            call.unsettled = len(items)
            self._calls[call.id] = call
            self._wake()
        return futures

    def _withdraw(self, topic: Topic) -> bool:
        with self._cv:
            call = topic.call
            if call.queued.get(topic.name) is not topic:
                return False  # in flight or settled
            del call.queued[topic.name]
            self._release(topic)
            call.unsettled -= 1
            self._account(call)
            self._wake()
            return True

    def on_throttle(self, node_id: int, throttle_s: float) -> None:
        """librdkafka's throttle event: one response's throttle_time_ms (sent when it changes)."""
        self.tracker.record(node_id, throttle_s)
        with self._cv:
            request = self._request
            if request is not None:
                request.events.append((node_id, throttle_s))
            else:  # the response of another AdminClient method
                self._metrics.record_throttle(node_id, throttle_s * 1000)
            self._wake()

    def on_error(self, error: KafkaError) -> None:
        """librdkafka's error_cb: an authentication failure fails the work at once instead of at its deadline."""
        if error.code() in _AUTH_ERRORS:
            with self._cv:
                self._auth_error = (error, self._clock())
                self._wake()

    def on_log(self, message: str) -> None:
        """A librdkafka ``FAIL`` log line: a listener that drops every connection right after the handshake may
        be refusing a client that does not authenticate (``_handshake_drops`` asks it)."""
        if self._handshake_drops is None:
            return
        with self._cv:
            error = self._handshake_drops.observe(message, self._clock())
        if error is not None:
            self._on_sasl_required(error)

    def _on_sasl_required(self, error: KafkaError) -> None:
        """The listener requires SASL and this client has none: an authentication failure, reported once."""
        with self._cv:
            first = self._auth_error is None
            self._auth_error = (error, self._clock())
            self._wake()
        if first and self._report is not None:
            self._report(error)

    def close(self, deadline: float | None = None) -> None:
        """Fail everything pending with _DESTROY and stop the thread (not joined from the thread itself). Waits
        for done-callbacks still running until ``deadline`` (monotonic) at the most."""
        with self._cv:
            self._closed = True
            self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        self._callbacks.close(time.monotonic() + USER_CODE_WAIT_S if deadline is None else deadline)

    def _wake(self) -> None:
        self._dirty = True
        self._cv.notify_all()

    # -- the loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._closed:
                self._iterate()
        except ClientGone:
            with self._cv:
                self._closed = True
        except Exception:  # a bug here must not leave calls hanging: everything pending fails, new calls are refused
            log.exception("the mutation scheduler failed; the client refuses further mutations")
            with self._cv:
                self._closed = True
        finally:
            self._fail_everything(closed_error)

    def _iterate(self) -> None:
        try:
            self._transport.poll()
        except ClientGone:
            raise
        except Exception:
            log.exception("serving librdkafka's callbacks failed")
        settle: list[Settlement] = []
        send: _Request | None = None
        need_metadata = False
        with self._cv:
            if self._closed:
                return
            now = self._clock()
            self._dirty = False
            request = self._request
            if request is not None and (request.complete or now >= request.expires_at):
                self._complete(request, now, settle)
            if self._auth_error is not None:
                self._fail_on_auth_error(now, settle)
            wait_s = self._expire(now, settle)
            if self._request is None:
                decision = self._next_request(now, settle)
                if isinstance(decision, _Request):
                    send = decision
                elif decision is None:
                    need_metadata = True
                else:
                    wait_s = min(wait_s, decision)
            else:
                wait_s = min(wait_s, self._request.expires_at - now)
        _resolve(settle)
        if need_metadata:
            self._read_metadata()
        elif send is not None:
            self._send(send)
        else:
            busy = bool(self._calls) or self._request is not None
            with self._cv:
                if not self._dirty and not self._closed:
                    self._cv.wait(max(0.0, min(wait_s, _BUSY_POLL_S if busy else _IDLE_POLL_S)))

    # -- settling --------------------------------------------------------------------------------

    def _finish(self, topic: Topic, exc: BaseException | None, settle: list[Settlement]) -> None:
        """Book a topic's outcome (under the lock); its future is resolved once the lock is released."""
        call = topic.call
        call.queued.pop(topic.name, None)
        call.in_flight.pop(topic.name, None)
        self._release(topic)
        if exc is not None and call.error_type is None:
            error = error_of(exc)
            call.error_type = error.name() if error is not None else type(exc).__name__
        call.unsettled -= 1
        settle.append((topic.future, exc))
        self._account(call)

    def _release(self, topic: Topic) -> None:
        """The topic is settled or withdrawn: the next call waiting for its name may send it."""
        holders = self._holders.get(topic.name)
        if holders is None:
            return
        holders[:] = [held for held in holders if held is not topic]
        if not holders:
            del self._holders[topic.name]

    def _holds(self, topic: Topic) -> bool:
        """True when no earlier pending call holds the topic's name."""
        return self._holders[topic.name][0] is topic

    def _account(self, call: Call) -> None:
        if call.unsettled > 0 or self._calls.pop(call.id, None) is None:
            return
        # Record the call before its last future resolves: a caller that waits for the results and then reads
        # the metrics always finds this call in them.
        self._metrics.record_call(call.kind.operation.name, self._clock() - call.started_at, call.error_type)

    def _fail_everything(self, make: Callable[..., BaseException]) -> None:
        """``make(operation, sent=...)``: queued topics were not sent; in-flight ones may have been applied."""
        settle: list[Settlement] = []
        with self._cv:
            for call in list(self._calls.values()):
                operation = call.kind.operation.name
                for topic in list(call.queued.values()):
                    self._finish(topic, make(operation, sent=topic.outcome_unknown), settle)
                for topic in list(call.in_flight.values()):
                    self._finish(topic, make(operation, sent=True), settle)
            self._calls.clear()
            self._holders.clear()
        _resolve(settle)

    def _fail_on_auth_error(self, now: float, settle: list[Settlement]) -> None:
        assert self._auth_error is not None
        error, reported_at = self._auth_error
        if now - reported_at > _AUTH_ERROR_TTL_S:
            # librdkafka reports its own again while it lasts; a listener found to require SASL holds until a
            # request gets through (librdkafka logs its repeated drops only every 30 s).
            found = self._handshake_drops.found() if self._handshake_drops is not None else None
            if found is None:
                self._auth_error = None
                return
            error = found
            self._auth_error = (error, now)
        for call in list(self._calls.values()):
            operation = call.kind.operation.name
            for topic in list(call.queued.values()):
                if topic.outcome_unknown:  # an earlier attempt was sent and its answer lost: it may have applied
                    self._finish(topic, after_unknown_attempt(error, operation), settle)
                else:
                    self._finish(topic, KafkaException(error), settle)
            for topic in list(call.in_flight.values()):
                # Handed to librdkafka: never sent while no request of this client has ever got through (it
                # never authenticated); otherwise it may have been written before the failure.
                exc = in_flight_error(error, operation) if self._reached else KafkaException(error)
                self._finish(topic, exc, settle)

    def _expire(self, now: float, settle: list[Settlement]) -> float:
        """Settle what is past its call's deadline; returns the time until the next deadline."""
        next_deadline_s = math.inf
        for call in list(self._calls.values()):
            remaining_s = call.remaining_s(now)
            if remaining_s > 0:
                next_deadline_s = min(next_deadline_s, remaining_s)
                continue
            for topic in list(call.queued.values()):
                self._finish(topic, self._gave_up(topic, now), settle)
            for topic in list(call.in_flight.values()):
                # Sent, not answered by the deadline: it may or may not have been applied; say so.
                self._finish(
                    topic, unknown_outcome_error(call.kind.operation.name, "no response by the deadline"), settle
                )
        return next_deadline_s

    def _gave_up(self, topic: Topic, now: float) -> BaseException:
        """The error of a queued topic whose call's deadline passed (Java's rules: throttled topics get the
        throttle that remains, not a timeout)."""
        call = topic.call
        if topic.throttled_at is not None:
            remaining_ms = max(0, int(topic.throttle_ms - (now - topic.throttled_at) * 1000))
            return ThrottlingQuotaExceededException(remaining_ms, topic.name)
        if topic.outcome_unknown:
            return unknown_outcome_error(call.kind.operation.name, "no attempt was answered by the deadline")
        if topic.last_error is not None:
            return topic.last_error  # refused before (nothing applied), and no time was left to try again
        return not_sent_error(call.kind.operation.name, call.timeout_ms, "its deadline passed before it could be sent")

    # -- a response ------------------------------------------------------------------------------

    def _complete(self, request: _Request, now: float, settle: list[Settlement]) -> None:
        self._request = None
        operation = request.kind.operation
        results = {topic.name: _result(request, topic) for topic in request.topics}
        answered = any(_is_broker_answer(exc) for exc in results.values())
        if answered or any(_was_written(exc) for exc in results.values()):
            self._reached = True
            if self._handshake_drops is not None:
                self._handshake_drops.answered()  # the connection carried a request past the handshake
        throttle_s = self._record_response_throttle(request, answered)
        admitted = 0
        retried = False
        outcomes = {topic.name: classify(results[topic.name]) for topic in request.topics}
        for topic in request.topics:  # progress resets a call's back-offs
            if outcomes[topic.name] is Outcome.SUCCESS:
                topic.call.quota_backoffs = topic.call.transient_retries = 0
        # call id -> the back-off its topics wait after this response, drawn once per call (with its jitter), so
        # topics refused together are sent together again
        quota_delays: dict[int, float] = {}
        delays: dict[int, float] = {}
        for topic in request.topics:
            exc = results[topic.name]
            outcome = outcomes[topic.name]
            if outcome is Outcome.SUCCESS:
                admitted += topic.cost or 0
            call = topic.call
            if call.in_flight.pop(topic.name, None) is None:
                continue  # settled already (its deadline passed, or authentication failed)
            topic.attempts += 1
            if outcome is Outcome.SUCCESS:
                self._finish(topic, None, settle)
            elif outcome is Outcome.THROTTLED:
                retried |= self._on_throttled(topic, throttle_s, now, settle, quota_delays)
            elif outcome in (Outcome.NOT_APPLIED, Outcome.UNKNOWN):
                retried |= self._on_transient(topic, exc, outcome, now, settle, delays)
            else:
                self._finish(topic, self._final_error(topic, exc), settle)
        if answered:
            self._round_trip.observe(len(request.topics), now - request.sent_at)
            self._auth_error = None
            if self._pacer is not None:
                self._pacer.on_response(admitted=admitted, throttle_s=throttle_s, sent_at=request.sent_at, now=now)
        if retried:
            self._metrics.record_retry(operation.name)

    def _record_response_throttle(self, request: _Request, answered: bool) -> float:
        """Each response's throttle goes to the sensor once, for the request it came from (KIP-124); a request
        that got no response records nothing, as Kafka's NetworkClient. Returns the response's throttle."""
        for node_id, throttle_s in request.events:  # every event stands for one response
            self._metrics.record_throttle(node_id, throttle_s * 1000)
        if not answered:
            return 0.0
        if not request.events:
            self._metrics.record_throttle(None, 0.0)  # librdkafka sends no event for an unthrottled response
        return max((throttle_s for _, throttle_s in request.events), default=0.0)

    def _on_throttled(
        self, topic: Topic, throttle_s: float, now: float, settle: list[Settlement], delays: dict[int, float]
    ) -> bool:
        call = topic.call
        self._metrics.record_violations(call.kind.operation.name, 1)
        topic.throttled_at = now
        topic.throttle_ms = int(throttle_s * 1000 + 0.5)
        if not call.retry_on_quota_violation:
            self._finish(topic, ThrottlingQuotaExceededException(topic.throttle_ms, topic.name), settle)
            return False
        if throttle_s <= 0:
            # Error 89 with no throttle to wait (the bucket was a fraction of a token short): exponential back-off
            # with jitter per call, starting at about one round trip and reset whenever the call makes progress.
            if call.id not in delays:
                initial_ms = max(_MIN_QUOTA_BACKOFF_S, self._round_trip.expected_s(1)) * 1000
                delays[call.id] = self._backoff.delay_s(call.quota_backoffs, initial_ms)
                call.quota_backoffs += 1
            topic.not_before = now + delays[call.id]
        call.queued[topic.name] = topic
        return True

    def _on_transient(
        self,
        topic: Topic,
        exc: BaseException | None,
        outcome: Outcome,
        now: float,
        settle: list[Settlement],
        delays: dict[int, float],
    ) -> bool:
        """Re-queue a topic the broker did not apply (or whose answer was lost) after one back-off per call and
        response, so the topics of one refused request go out together again, as Java re-sends a failed call."""
        call = topic.call
        if outcome is Outcome.UNKNOWN:
            topic.outcome_unknown = True
        else:
            topic.last_error = exc  # the broker's word, should time run out before a retry is answered
            topic.throttled_at = None
        error = error_of(exc)
        if error is not None and error.code() == KafkaError.NOT_CONTROLLER:
            self._refresh_metadata = True
        if call.id not in delays:
            delays[call.id] = self._backoff.delay_s(call.transient_retries)
            call.transient_retries += 1
        delay_s = delays[call.id]
        if call.remaining_s(now) <= delay_s + self._round_trip.expected_s(1):
            if outcome is Outcome.UNKNOWN:
                self._finish(topic, unknown_outcome_error(call.kind.operation.name, _reason(exc)), settle)
            else:
                self._finish(topic, self._final_error(topic, exc), settle)
            return False
        topic.not_before = now + delay_s
        call.queued[topic.name] = topic
        return True

    def _final_error(self, topic: Topic, exc: BaseException | None) -> BaseException:
        assert exc is not None
        error = error_of(exc)
        operation = topic.call.kind.operation.name
        if topic.outcome_unknown and error is not None and error.code() == _ALREADY_DONE.get(operation):
            return after_unknown_attempt(error, operation)
        return exc

    # -- the next request ------------------------------------------------------------------------

    def _next_request(self, now: float, settle: list[Settlement]) -> _Request | float | None:
        """A request to send now, or how long to wait, or None: the cluster's metadata must be read first (the
        controller moved, or pacing needs costs)."""
        if not self._calls:
            return math.inf
        gate_s = self.tracker.remaining_s()
        self._note_gate_wait(gate_s > 0, now)
        if gate_s > 0:
            # KIP-219: nothing is sent while a throttle lasts. A call that cannot wait fails at once (retry off,
            # or the throttle outlasts its deadline: Java would sleep through it for nothing).
            gate_ms = int(gate_s * 1000 + 0.5)
            for call in list(self._calls.values()):
                if call.queued and (not call.retry_on_quota_violation or gate_s >= call.remaining_s(now)):
                    self._refuse(call, gate_ms, now, settle)
            return gate_s
        head = self._head(now)
        if head is None:
            return self._next_eligible_s(now)
        kind = head.call.kind
        topics = list(self._eligible(kind, now))
        if self._refresh_metadata:
            return None
        if self._pacer is not None:
            if any(topic.cost is None for topic in topics):
                return None
            pending_cost = sum(topic.cost or 0 for topic in topics)
            wait_s = self._pacer.wait_s(head.cost or 0, pending_cost, now)
            if wait_s > 0:
                for call in list(self._calls.values()):
                    if call.kind == kind and call.queued and wait_s >= call.remaining_s(now):
                        self._refuse(call, int(wait_s * 1000 + 0.5), now, settle)
                return wait_s
        return self._compose(kind, topics, now, settle)

    def _note_gate_wait(self, waiting: bool, now: float) -> None:
        """Local back-off time (KIP-219): how long queued work waited for the broker's throttle to end."""
        if waiting and self._gate_wait is None:
            head = next(iter(self._calls.values()))
            self._gate_wait = (head.kind.operation.name, now)
        elif not waiting and self._gate_wait is not None:
            operation, since = self._gate_wait
            self._gate_wait = None
            self._metrics.record_backoff(operation, now - since)

    def _refuse(self, call: Call, throttle_ms: int, now: float, settle: list[Settlement]) -> None:
        """Fail a call's queued topics as throttled without sending them (counted as quota violations)."""
        queued = list(call.queued.values())
        self._metrics.record_violations(call.kind.operation.name, len(queued))
        for topic in queued:
            if not call.retry_on_quota_violation or topic.throttled_at is None:
                error = ThrottlingQuotaExceededException(throttle_ms, topic.name)
            else:
                error = ThrottlingQuotaExceededException(max(throttle_ms, topic.throttle_ms), topic.name)
            self._finish(topic, error, settle)

    def _head(self, now: float) -> Topic | None:
        for call in self._calls.values():
            for topic in call.queued.values():
                if topic.not_before <= now and self._holds(topic):
                    return topic
        return None

    def _next_eligible_s(self, now: float) -> float:
        waits = [t.not_before - now for c in self._calls.values() for t in c.queued.values() if self._holds(t)]
        return max(0.0, min(waits, default=math.inf))

    def _eligible(self, kind: RequestKind, now: float) -> Iterator[Topic]:
        count = 0
        for call in self._calls.values():
            if call.kind != kind:
                continue
            for topic in call.queued.values():
                if topic.not_before <= now and self._holds(topic):
                    yield topic
                    count += 1
                    if count >= MAX_TOPICS_PER_REQUEST:
                        return

    def _compose(
        self, kind: RequestKind, candidates: list[Topic], now: float, settle: list[Settlement]
    ) -> _Request | float:
        budget = self._pacer.batch_budget(now) if self._pacer is not None else math.inf
        margin_s = max(_MIN_MARGIN_S, self._round_trip.base_s)
        chosen: list[Topic] = []
        mutations = 0
        records = 0
        for topic in candidates:
            cost = topic.cost or 0
            if chosen and (mutations + cost > budget or records + topic.records > MAX_RECORDS_PER_REQUEST):
                break
            call = topic.call
            # Send nothing that cannot be answered before its deadline: it would be applied after the caller
            # was told it failed.
            if call.remaining_s(now) <= self._round_trip.expected_s(len(chosen) + 1) + margin_s:
                self._finish(topic, self._gave_up_early(topic, now), settle)
                continue
            chosen.append(topic)
            mutations += cost
            records += topic.records
        if not chosen:
            return 0.0
        calls = {topic.call.id: topic.call for topic in chosen}.values()
        remaining_s = min(call.remaining_s(now) for call in calls)
        request_timeout_s = min(remaining_s, _LIBRDKAFKA_MAX_TIMEOUT_S)
        caps = [call.request_timeout_s for call in calls if call.request_timeout_s is not None]
        if caps:
            request_timeout_s = max(_MIN_OPERATION_TIMEOUT_S, min(request_timeout_s, *caps))
        operation_timeout_s = min(remaining_s, request_timeout_s) - margin_s
        # A caller's operation_timeout of 0 (confluent-kafka's "do not wait") is no cap: a Kafka 4 controller refuses a
        # request whose timeout_ms is 0 at once (REQUEST_TIMED_OUT, nothing applied), and answers after the commit
        # whatever the timeout, so the controller deadline derived from the call's deadline stays.
        caps = [call.operation_timeout_s for call in calls if call.operation_timeout_s]
        if caps:
            operation_timeout_s = min(operation_timeout_s, *caps)
        operation_timeout_s = max(_MIN_OPERATION_TIMEOUT_S, min(operation_timeout_s, _LIBRDKAFKA_MAX_TIMEOUT_S))
        for topic in chosen:
            del topic.call.queued[topic.name]
            topic.call.in_flight[topic.name] = topic
        kwargs: dict[str, Any] = {"request_timeout": request_timeout_s, "operation_timeout": operation_timeout_s}
        if kind.operation is not DELETE_TOPICS:
            kwargs["validate_only"] = kind.validate_only
        request = _Request(kind, chosen, mutations, now, now + request_timeout_s + _ABANDON_GRACE_S, kwargs)
        self._request = request
        return request

    def _gave_up_early(self, topic: Topic, now: float) -> BaseException:
        if topic.throttled_at is not None or topic.outcome_unknown or topic.last_error is not None:
            return self._gave_up(topic, now)
        call = topic.call
        return not_sent_error(
            call.kind.operation.name,
            call.timeout_ms,
            f"less time was left ({max(0.0, call.remaining_s(now)) * 1000:.0f} ms) than a round trip takes",
        )

    # -- I/O (outside the lock) ------------------------------------------------------------------

    def _send(self, request: _Request) -> None:
        kwargs = request.kwargs
        operation = request.kind.operation
        items = [topic.item for topic in request.topics]
        self._metrics.record_request(operation.name, len(items), request.mutations)
        try:
            inner = self._transport.send(operation.method, items, kwargs)
        except ClientGone:
            raise
        except Exception as exc:  # confluent-kafka refused the call itself: final for every topic, with its reason
            settle: list[Settlement] = []
            with self._cv:
                self._request = None
                for topic in request.topics:
                    if topic.call.in_flight.get(topic.name) is topic:
                        self._finish(topic, refused_error(operation.name, exc), settle)
            _resolve(settle)
            return
        with self._cv:
            request.inner = inner
            request.outstanding = len(inner)
        for future in inner.values():
            future.add_done_callback(lambda _f: self._on_inner_done(request))

    def _on_inner_done(self, request: _Request) -> None:
        # Runs on librdkafka's background thread: a brief lock to count and wake, never a wait.
        with self._cv:
            request.outstanding -= 1
            if request.outstanding <= 0:
                self._wake()

    def _read_metadata(self) -> None:
        """A metadata request: librdkafka learns the current controller from it (after NOT_CONTROLLER), and the
        costs of deletes and partition additions need the topics' current partition counts (KIP-599)."""
        with self._cv:
            self._refresh_metadata = False
        try:
            counts = self._transport.partition_counts(_METADATA_TIMEOUT_S)
        except ClientGone:
            raise
        except Exception as exc:
            log.warning("could not read the cluster's metadata (%s); costs not known are taken as 1", exc)
            counts = {}
        with self._cv:
            for call in self._calls.values():
                operation = call.kind.operation
                for topic in call.queued.values():
                    if topic.cost is not None:
                        continue
                    current = counts.get(topic.name, 0)
                    if operation is DELETE_TOPICS:
                        topic.cost = current
                    elif operation is CREATE_PARTITIONS:
                        topic.cost = max(1, topic.item.new_total_count - current) if current else 1
                    else:
                        topic.cost = 1


def _result(request: _Request, topic: Topic) -> BaseException | None:
    inner = request.inner.get(topic.name)
    if inner is None or not inner.done():  # librdkafka never completed it (its slot was abandoned)
        return KafkaException(KafkaError(KafkaError._TIMED_OUT, "librdkafka did not complete the request"))
    return inner.exception()


def _is_broker_answer(exc: BaseException | None) -> bool:
    """True when the result came from a broker response (librdkafka's local errors are negative codes)."""
    error = error_of(exc)
    return exc is None or (error is not None and error.code() >= 0)


def _was_written(exc: BaseException | None) -> bool:
    """True when librdkafka wrote the request and then lost the connection (it knew the controller)."""
    error = error_of(exc)
    return error is not None and error.code() == KafkaError._TRANSPORT


def _reason(exc: BaseException | None) -> str:
    error = error_of(exc)
    return error.str() if error is not None else "no response"


def _resolve(settle: list[Settlement]) -> None:
    for future, exc in settle:
        if future.done():  # withdrawn meanwhile
            continue
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)
