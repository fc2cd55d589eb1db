"""The mutation engine: every decision of a client's scheduler, as a deterministic state machine (sans-I/O).

Events come in with the current time (monotonic seconds): a call submitted, a topic withdrawn, results of the
request in flight, a request confluent-kafka refused, a throttle, an authentication or connection error, a
metadata read, close; ``step(now)`` then decides. What to do comes out as an ``Outbox`` of frozen actions
(``actions``): a request to send, futures to settle, metadata to read, metric events, and when to be woken. There
are no threads, no clock and no I/O here: the thread driver (``_driver.scheduler``) does the I/O, and tests drive the
engine on simulated time (tests/test_engine_model.py checks every rule below after every step).

The rules (docs/semantics.md):

a. A topic name is in at most one request, and held by one call at a time: a later call naming it waits until
   the earlier one has settled it (Kafka 4 answers a doubled name once; confluent-kafka 2.16 then crashes).
b. At most one mutation request is in flight, nothing is sent while the broker's throttle lasts (KIP-219), and
   the slot follows the connection (``connection``): after librdkafka gives up on a request, nothing is written
   until a sentinel behind it says the connection is free or closed. Nothing ever waits in a muted connection or
   behind an unanswered request.
c. Calls share a request only when their time budgets are within a factor of ``COALESCE_RATIO``, and sharing never
   hurts: the request carries the longest call's timeouts (librdkafka's and the controller's deadline), and each
   call's topics are settled at its own deadline (a shorter call's in flight then: "outcome unknown").
d. Nothing is sent with less time left than the fastest recent answer took, nor with a shorter request_timeout of
   the caller's (``RoundTrip``: a floor that forgets, fed by whole answers only), so a slow outlier cannot lock
   calls out: a first attempt is refused only when ``MIN_SAMPLES`` recent answers agree, a retry when any recent
   answer says it cannot fit.
e. Every topic is settled by its call's deadline: the engine asks to be woken then.
f. Outcomes are truthful: success when the broker says so; "not sent" only for what was never written (never
   handed over, or librdkafka's verdict says it never built the request); "outcome unknown" when a request was
   handed over and no usable answer came (lost, late, garbled); the broker's "already done" after such an
   attempt says an earlier attempt may have applied it. A handshake never completed means nothing was written:
   until a broker has answered the client, nothing is handed over while its connections fail before their
   handshake (they fail "cannot connect to HOST:PORT (how far it got)"), and what is handed over has a
   librdkafka timeout that ends before its call's deadline, so librdkafka's own verdict settles it.
g. Metric events equal what the responses said (throttles, violations, retries), and mutations are counted as
   the broker charges them (a create of -1 partitions: the cluster's ``num.partitions``).
h. ``close`` settles every topic.
i. A send cut short (``on_send_cut_short``) counts as handed over if confluent-kafka's call may have run, and goes
   back to the queue if it certainly did not: nothing is lost and nothing stalls.
j. Cancelled is final: a topic cancelled in flight may complete, but is never sent again.

A topic is queued, in flight, awaiting visibility, then settled (or withdrawn): ``lifecycle`` names the states and
the moves between them, which ``Call.move`` alone makes, and keeps each attempt that came back in the topic's
history. What becomes of an answered attempt is its ``verdict``; the error a topic is settled with follows from
why it ends, its state and what its attempts leave true, in one table (``outcome``: rule f).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._engine.actions import (
    Action,
    Drain,
    Emit,
    Outbox,
    Probe,
    Reached,
    ReadMetadata,
    ReadViews,
    Send,
    Settle,
    WakeAt,
)
from throttled_admin._engine.batch_cap import BatchCap
from throttled_admin._engine.classify import (
    REDPANDA_QUOTA_MESSAGE,
    Outcome,
    classify,
    connection_lost,
    error_of,
    is_broker_answer,
    was_written,
)
from throttled_admin._engine.config import MAX_RECORDS_PER_REQUEST, MAX_TOPICS_PER_REQUEST, EngineConfig
from throttled_admin._engine.connection import Connection, Drained
from throttled_admin._engine.contact import Contact, ProbeState, contact_failure
from throttled_admin._engine.lifecycle import Attempt, TopicState
from throttled_admin._engine.metadata import MetadataReads
from throttled_admin._engine.metric_events import (
    BackedOff,
    CallFinished,
    MetricEvent,
    MutationsAdmitted,
    QuotaViolations,
    RequestSent,
    ResponseThrottle,
    Retried,
)
from throttled_admin._engine.outcome import Ending, Facts, settle_error
from throttled_admin._engine.pacer import MutationQuota, Pacer
from throttled_admin._engine.redpanda import RedpandaHold
from throttled_admin._engine.retry import RetryBackoff
from throttled_admin._engine.round_trip import MIN_SAMPLES, RoundTrip
from throttled_admin._engine.throttle import ThrottleTracker, failed_node
from throttled_admin._engine.verdict import Verdict, verdict
from throttled_admin._engine.visibility import READ_BEFORE_DEADLINE_S, BrokerViews, Visibility, ids_shown, lagging
from throttled_admin._engine.work import CREATE_TOPICS, Call, NameHolds, RequestKind, Topic
from throttled_admin._errors import (
    CLOSED_MESSAGE,
    ClientClosedError,
    NotSentReason,
    NotYetVisibleError,
    OutcomeUnknownReason,
    ThrottlingQuotaExceededException,
    closed_error,
    not_visible_error,
)

__all__ = [
    "COALESCE_RATIO",
    "MAX_RECORDS_PER_REQUEST",
    "MAX_TOPICS_PER_REQUEST",
    "Engine",
    "Outbox",
    "Request",
    "closed_here",
]

# MAX_TOPICS_PER_REQUEST and MAX_RECORDS_PER_REQUEST: the defaults of the engine's limits (``EngineConfig``)
COALESCE_RATIO = 2.0  # rule c: the longest time budget in a request is at most this times the shortest
_LIBRDKAFKA_MAX_TIMEOUT_S = 3600.0  # request_timeout / operation_timeout range of librdkafka
_MIN_MARGIN_S = 0.05  # the least time kept between the controller's deadline and the call's
_MIN_OPERATION_TIMEOUT_S = 0.001
_MIN_QUOTA_BACKOFF_S = 0.005
# A request librdkafka never completes frees the slot this long after its timeout (librdkafka scans timeouts
# once a second).
ABANDON_GRACE_S = 2.0
# librdkafka completes every topic of one response together; a topic still open this long after the first
# answer was left out of the response (a garbled answer): its outcome is unknown.
PARTIAL_GRACE_S = 0.5
_AUTH_ERRORS = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
# First contact (docs/semantics.md, "First contact"). A client asks the cluster something light as it starts (the
# driver's contact probe: describe_cluster, whose librdkafka timeout is FIRST_CONTACT_TIMEOUT_S, so that a probe not
# yet sent never queues ahead of a mutation on a slow broker's connection; asked again at most that often while
# connections fail and calls wait). Until a broker has answered the client (the probe, any response, a throttle):
# - while librdkafka reports connections that fail before their handshake completed (``contact``), nothing is
#   handed over, and a call's topics fail "cannot connect to HOST:PORT (reason)" FIRST_CONTACT_TIMEOUT_S after
#   the call was made (at once when the listener was found to speak the other protocol);
# - otherwise the first request waits for the probe, at most FIRST_CONTACT_TIMEOUT_S (a slow broker), and its
#   librdkafka timeout ends CONTACT_VERDICT_MARGIN_S before its call's deadline: librdkafka's own verdict
#   ("waiting for controller": never built, not sent; "waiting for response": written) comes first.
# Once a broker has answered, requests carry their calls' own timeouts.
FIRST_CONTACT_TIMEOUT_S = 5.0
CONTACT_PROBE_TIMEOUT_S = FIRST_CONTACT_TIMEOUT_S
CONTACT_VERDICT_MARGIN_S = 0.5
# An authentication failure fails what is pending and what is submitted this soon after it; librdkafka keeps
# reconnecting and reports it again if it persists.
AUTH_ERROR_TTL_S = 5.0


# The states the engine checks or sets once or more per topic, as module constants: on Python 3.11, reading an Enum
# member off its class is a Python-level call.
_HELD, _QUEUED, _IN_FLIGHT, _SETTLED = (
    TopicState.HELD_BEHIND_NAME,
    TopicState.QUEUED,
    TopicState.IN_FLIGHT,
    TopicState.SETTLED,
)
_THROTTLED = Outcome.THROTTLED
_SPEAKS_FOR_QUOTA = frozenset((Outcome.SUCCESS, Outcome.THROTTLED))  # charged, or refused for the quota


@dataclass(eq=False)
class Request:
    """One mutation request: handed to confluent-kafka by the driver, answered through ``Engine.on_results``."""

    kind: RequestKind
    topics: list[Topic]
    mutations: int
    sent_at: float
    expires_at: float  # librdkafka's own timeout, plus a grace: the slot is freed by then at the latest
    request_timeout_s: float  # librdkafka's own timeout for the request
    operation_timeout_s: float  # the controller's deadline (the request's timeout_ms)
    id: int  # numbered by its engine, from 1
    results: dict[str, BaseException | None] = field(default_factory=dict)
    first_result_at: float | None = None
    answered_at: float | None = None  # when the first broker answer came
    events: list[tuple[int, float]] = field(default_factory=list)  # throttle events while in flight
    node_lost: bool = False  # a node went away while it was in flight: its broker may re-send it (``outcome``)

    @property
    def items(self) -> list[Any]:
        return [topic.item for topic in self.topics]

    @property
    def names(self) -> list[str]:
        return [topic.name for topic in self.topics]


_DEFAULT_CONFIG = EngineConfig()


@dataclass(eq=False)
class _IdsBefore:
    """wait_for_metadata creates not sent until every broker's ids of the name are read (``visibility``)."""

    unread: dict[Topic, None] = field(default_factory=dict)  # in order
    asked: list[Topic] = field(default_factory=list)  # those of them the read out asks about


class Engine:
    """Not thread-safe: the driver serializes every call (under its lock)."""

    def __init__(
        self,
        *,
        pacer: Pacer | None,
        backoff: RetryBackoff,
        socket_timeout_s: float = 60.0,
        config: EngineConfig = _DEFAULT_CONFIG,
    ) -> None:
        """``socket_timeout_s``: librdkafka's ``socket.timeout.ms``, how long an abandoned request may stay on its
        connection (``connection``). ``config``: the engine's limits and its back-off's seed (``config``)."""
        self._config = config
        self._pacer = pacer
        self._backoff = backoff
        self._random = random.Random(config.seed)  # the back-off's jitter
        self._call_ids, self._request_ids = itertools.count(1), itertools.count(1)
        self._gate = ThrottleTracker()  # KIP-219: the broker's throttle, and how long work waited for it
        self._cap = BatchCap(config.max_records_per_request)
        self._own_pacer = False  # the pacer is the engine's own (Redpanda's answers), not the caller's
        self._redpanda = RedpandaHold()
        self._visibility = Visibility()
        self._ids_before = _IdsBefore()  # wait_for_metadata creates: the ids of their names before the send
        self._round_trip = RoundTrip()
        self._connection = Connection(socket_timeout_s)  # rule b: the slot follows the connection
        self._final_at = -math.inf  # see ``final_at``
        self._calls: dict[int, Call] = {}  # in submission order
        self._names = NameHolds()  # rule a: which pending topic holds each name
        self._request: Request | None = None
        self._auth_error: tuple[KafkaError, float] | None = None  # (error, when it was reported)
        self._contact = Contact()  # first contact: has a broker answered this client?
        self._metadata = MetadataReads()  # partition counts, and the cluster's default partition count
        self._closed = False
        self._out: list[Action] = []  # what to do, decided since the last step (``actions``)

    # -- state the driver reads -------------------------------------------------------------------

    @property
    def rate(self) -> float | None:
        return None if self._pacer is None else self._pacer.rate

    @property
    def in_flight(self) -> Request | None:
        return self._request

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def final_at(self) -> float:
        """From when no request this client handed over can still be applied: every one was answered, or its
        connection is known closed and its controller deadline (counted from the close: the broker may have read
        it just before) has passed. ``math.inf`` while a request is in flight or the connection may be busy."""
        if self._request is not None or self._connection.busy:
            return math.inf
        return self._final_at

    @property
    def idle(self) -> bool:
        return not self._calls and self._request is None and not self._connection.busy

    @property
    def reached(self) -> bool:
        """A broker has answered this client (first contact)."""
        return self._contact.reached

    @property
    def max_records_per_request(self) -> int:
        """The batch cap as learned so far (``batch_cap``)."""
        return self._cap.limit

    # -- events -----------------------------------------------------------------------------------

    def submit(self, call: Call, topics: list[Topic]) -> None:
        if self._closed:
            raise RuntimeError(CLOSED_MESSAGE)
        if call.spec.wait_for_metadata and not call.kind.validate_only and call.kind.operation is CREATE_TOPICS:
            # incarnations: the ids before the send (``visibility``)
            self._ids_before.unread.update(dict.fromkeys(topics))
        default = self._metadata.default_partitions
        for topic in topics:
            if topic.cost is None and default is not None and call.kind.operation is CREATE_TOPICS:
                self._cost_with_default(topic, default)  # -1 partitions: the cluster's default, known already
            # rule a: held behind its name while an earlier pending call names it too
            call.move(topic, _QUEUED if self._names.hold(topic) else _HELD)
        call.unsettled = len(topics)
        call.id = next(self._call_ids)
        self._calls[call.id] = call
        if not topics:
            self._account(call, call.spec.started_at)

    def withdraw(self, topic: Topic, now: float) -> bool:
        """Its caller cancelled the topic (its future's cancel()). Not yet sent: taken back, and True to this and
        every later cancel. In flight: False, and its current attempt is its last (cancelled is final: it may
        still complete, but is never sent again). Settled: False."""
        topic.cancelled = True
        if topic.state is TopicState.WITHDRAWN:
            return True
        if topic.state is not TopicState.QUEUED and topic.state is not TopicState.HELD_BEHIND_NAME:
            return False
        call = topic.call
        call.move(topic, TopicState.WITHDRAWN)
        self._release(topic)
        call.unsettled -= 1
        self._account(call, now)
        return True

    def on_throttle(self, node_id: int, throttle_s: float, now: float) -> None:
        """A response's throttle_time_ms (librdkafka sends an event when it changes)."""
        self._gate.record(node_id, throttle_s, now)
        self._contact.answered()  # a response's throttle: a broker has answered this client
        request = self._request
        if request is not None:
            request.events.append((node_id, throttle_s))
        else:  # the response of another AdminClient method
            self._metric(_throttle_event(node_id, throttle_s))

    def on_error(self, error: KafkaError, now: float) -> None:
        """An authentication failure fails the work at once instead of at its deadline, and what is submitted
        within ``AUTH_ERROR_TTL_S`` after it (librdkafka reports it again while it lasts). A connection that
        failed before its handshake (``contact``) counts until a broker has answered."""
        if error.code() in _AUTH_ERRORS:
            self._auth_error = (error, now)
        elif error.code() == KafkaError._ALL_BROKERS_DOWN:
            self._gate.every_connection_gone()  # every connection is down: none carries a throttle
            self._node_lost()
        else:  # _TIMED_OUT: librdkafka's own request timed out, perhaps in the mute: the connection's throttle holds
            self.on_log(error.str(), now, lost=error.code() != KafkaError._TIMED_OUT)

    def on_log(self, line: str, now: float, *, lost: bool = True) -> None:
        """A librdkafka ``FAIL`` log line (some failures before the handshake are told only there); a connection
        the broker's side lost no longer carries its node's throttle (``throttle``)."""
        node = failed_node(line) if lost else None
        if node is not None:
            self._gate.connection_gone(node)
            self._node_lost()
        if not self._contact.reached:
            self._contact.failed(contact_failure(line))

    def _node_lost(self) -> None:
        """A node went away: the request in flight may have been forwarded to it as the controller."""
        if self._request is not None and not self._request.kind.validate_only:
            self._request.node_lost = True

    @property
    def auth_failing(self) -> bool:
        return self._auth_error is not None

    def on_results(self, request: Request, results: dict[str, BaseException | None], now: float) -> None:
        """Results of topics of the request in flight, as librdkafka completed them."""
        if request is not self._request:
            return
        if request.first_result_at is None:
            request.first_result_at = now
        if request.answered_at is None and any(is_broker_answer(exc) for exc in results.values()):
            request.answered_at = now
        request.results.update(results)

    def on_send_refused(self, request: Request, exc: BaseException, now: float) -> None:
        """confluent-kafka refused the call itself: final for every topic, with its reason; nothing was sent."""
        if request is not self._request:
            return
        self._request = None
        self._record_response_throttle(request, answered=False)
        for topic in request.topics:
            if topic.state is TopicState.IN_FLIGHT:
                self._end(topic, Ending.SEND_REFUSED, now, exc=exc)

    def on_send_cut_short(self, request: Request, *, handed: bool, now: float) -> None:
        """The driver's send of ``request`` was cut short (Ctrl-C, a signal handler, close() from inside the turn):
        ``handed`` False, confluent-kafka's call certainly did not run (the topics go back to the queue, this
        attempt uncounted); True, it may have, and the request counts as handed over with its answer lost (its
        topics' outcome unknown, the slot held until the connection is known to be free: rule b)."""
        if request is not self._request:
            return
        if handed:
            self._complete(request, now)  # no result: every topic's is missing, and the connection may be busy
            return
        self._request = None
        for node_id, throttle_s in request.events:  # other responses' throttles: this request was never sent
            self._metric(_throttle_event(node_id, throttle_s))
        for topic in request.topics:
            if topic.state is not TopicState.IN_FLIGHT:
                continue
            if topic.cancelled:  # its caller gave up on it in flight: this attempt not sent, and none will be
                self._end(topic, Ending.CANCELLED, now)
            else:
                topic.call.move(topic, TopicState.QUEUED)

    def on_drained(self, outcome: Drained, now: float) -> None:
        """What became of the sentinel sent for a ``Drain`` action (``connection``)."""
        if outcome is Drained.ANSWERED:
            self._contact.answered()  # a broker answered this client
        self._final_at = max(self._final_at, now + self._connection.drained(outcome))

    def on_probe(self, answered: bool, now: float) -> None:
        """The contact probe's outcome: a broker answered it (even with an error), or not."""
        self._contact.probed(answered)

    @property
    def wants_default_partitions(self) -> bool:
        """Whether a metadata read should also read the cluster's default partition count (``num.partitions``)."""
        return self._metadata.default_partitions is None

    def on_metadata(self, counts: dict[str, int] | None, now: float, default_partitions: int | None = None) -> None:
        """Partition counts by topic (None: the read failed, and costs not known are taken as 1), and the cluster's
        default partition count if it was read (what a create with -1 partitions makes, and is charged)."""
        default = self._metadata.answered(counts, default_partitions)
        for call in self._calls.values():
            operation = call.kind.operation
            for topic in call.queued.values():
                if topic.cost is not None:
                    continue
                if operation is CREATE_TOPICS:
                    self._cost_with_default(topic, default)
                elif counts is None:
                    topic.cost = 1
                else:
                    topic.cost = operation.cost_from_metadata(topic.item, counts.get(topic.name))

    def _cost_with_default(self, topic: Topic, default: int | None) -> None:
        """A create of -1 partitions costs the cluster's default; while that is unknown, FALLBACK_PARTITIONS, and
        the first such topic applied is read back to learn it (``MetadataReads.read_back``)."""
        topic.cost = CREATE_TOPICS.cost_from_metadata(topic.item, None, default)
        topic.records = CREATE_TOPICS.records(topic.item, default)
        topic.guessed = default is None

    def on_views(self, views: BrokerViews, now: float) -> None:
        """Every broker's Metadata for the topics asked about (a ``ReadViews`` action); see ``visibility``."""
        asked, deferred, unasked = self._visibility.asked, self._visibility.deferred, False
        for topic in self._ids_before.asked:  # the ids before a create is sent, from every broker that could be read
            if topic in self._ids_before.unread:  # still queued (not withdrawn, not settled)
                del self._ids_before.unread[topic]
                topic.ids_before = ids_shown(topic.name, views)
        self._ids_before.asked = []
        for call in list(self._calls.values()):
            operation = call.kind.operation.name
            for topic in list(call.awaiting.values()):
                if topic.name not in asked:
                    # applied while the read was out: no broker was asked about it (a call still sending, left out
                    # of the read on purpose, waits for its own interval instead)
                    unasked |= topic.name not in deferred
                    continue
                topic.lagging = lagging(operation, topic.name, topic.item, views, topic.ids_before)
                if topic.lagging == ():
                    self._finish(topic, None, now)
        self._visibility.answered(now, any(call.awaiting for call in self._calls.values()), unasked)

    def close(self, now: float) -> None:
        """Fail everything pending: queued topics were not sent; in-flight ones may have been applied."""
        self._closed = True
        if self._request is not None:  # its responses' throttles still count (KIP-124), answered or not
            self._record_response_throttle(self._request, answered=False)
        for call in list(self._calls.values()):
            for topic in [*call.queued.values(), *call.in_flight.values(), *call.awaiting.values()]:
                self._end(topic, Ending.CLOSED, now)
        self._request = None

    # -- the decision -----------------------------------------------------------------------------

    def step(self, now: float) -> Outbox:
        """Decide what can be decided at ``now``; returns (and clears) everything to do, in order (``actions``)."""
        if not self._closed:
            request = self._request
            if request is not None and self._settled_in_flight(request, now):
                self._complete(request, now)
            if self._auth_error is not None:
                self._fail_on_auth_error(now)
            wake_at = min(self._expire(now), self._drain(now))
            if not self._contact.reached:
                wake_at = min(wake_at, self._first_contact(now))
            if self._request is None:
                wake_at = min(wake_at, self._next_request(now))
            else:
                wake_at = min(wake_at, self._request_wake_at(self._request))
            # after the sending, which may settle queued topics: nothing is read about a topic settled in this step
            self._out.append(WakeAt(min(wake_at, self._ask_views(now))))
        out, self._out = Outbox.of(self._out), []
        return out

    def _drain(self, now: float) -> float:
        """Rule b: while the connection may carry an abandoned request, the sentinel that tells when it is free."""
        ask, wake_at = self._connection.step(now)
        if ask:
            self._out.append(Drain(self._connection.sentinel_timeout_s))
        return wake_at

    def _settled_in_flight(self, request: Request, now: float) -> bool:
        return len(request.results) >= len(request.topics) or now >= self._request_wake_at(request)

    def _request_wake_at(self, request: Request) -> float:
        """When the request in flight settles without more results: abandoned, or partly answered."""
        if request.first_result_at is not None:
            return min(request.expires_at, request.first_result_at + PARTIAL_GRACE_S)
        return request.expires_at

    # -- settling ---------------------------------------------------------------------------------

    def _first_contact(self, now: float) -> float:
        """Until a broker has answered: ask the contact probe (at the start, and again while connections fail and
        calls wait: a broker that comes up is noticed), and fail the topics of calls that have waited
        FIRST_CONTACT_TIMEOUT_S for a connection that keeps failing before its handshake (at once for a listener of
        the other protocol). Nothing of theirs was handed over. Returns when to look again."""
        wake_at = math.inf
        failure = self._contact.failure
        ask_at = self._contact.probe_at(bool(self._calls), FIRST_CONTACT_TIMEOUT_S)
        if ask_at is not None:
            if now < ask_at:
                wake_at = ask_at
            else:
                self._contact.asked(now)
                self._out.append(Probe())
        if failure is None:
            return wake_at
        for call in list(self._calls.values()):
            if not call.queued:
                continue
            give_up_at = call.spec.started_at + (0.0 if failure.definite else FIRST_CONTACT_TIMEOUT_S)
            if now < give_up_at:
                wake_at = min(wake_at, give_up_at)
                continue
            for topic in list(call.queued.values()):
                self._end(topic, Ending.CANNOT_CONNECT, now)
        return wake_at

    def _metric(self, event: MetricEvent) -> None:
        self._out.append(Emit(event))

    def _ask_views(self, now: float) -> float:
        """wait_for_metadata: ask for every broker's Metadata when a read is due; returns when the next is. The
        topics of a call still sending are read at most every READ_WHILE_SENDING_S (``visibility``)."""
        calls, names, deferred, deferred_until = self._awaiting_views(now)
        first = self._ids_to_read(now)
        if not names and not first:
            if deferred_until == math.inf and not self._visibility.reading:
                self._visibility.idle()
            return deferred_until
        if self._visibility.due(now):
            names.extend(topic.name for topic in first)
            self._visibility.read(now, names, deferred)
            self._out.append(ReadViews(tuple(names)))
            self._ids_before.asked = first
            for call in calls:
                call.views_read_at = now
        wake_at = self._visibility.wake_at()
        return min(deferred_until, math.inf if wake_at is None else wake_at)

    def _awaiting_views(self, now: float) -> tuple[list[Call], list[str], list[str], float]:
        """The calls whose applied topics may be read now, those topics' names, the names left for later (a call
        still sending, read recently), and when those may be read next."""
        calls: list[Call] = []
        names: list[str] = []
        deferred: list[str] = []
        deferred_until = math.inf  # when a call still sending may be read next
        interval_s = self._visibility.sending_interval_s()
        # Near the deadline every call is read freely; how near grows with what reads take (an answer must come
        # back before the deadline).
        margin_s = READ_BEFORE_DEADLINE_S + 2 * self._visibility.last_read_s
        for call in self._calls.values():
            if not call.awaiting:
                continue
            if call.queued or call.in_flight:
                last = call.views_read_at
                ready_at = now if last is None else min(last + interval_s, call.spec.deadline - margin_s)
                if now < ready_at:
                    deferred_until = min(deferred_until, ready_at)
                    deferred.extend(call.awaiting)
                    continue
            calls.append(call)
            names.extend(call.awaiting)
        return calls, names, deferred, deferred_until

    def _ids_to_read(self, now: float) -> list[Topic]:
        """wait_for_metadata creates whose ids before the send are to be read (those holding their names, rule a),
        unless a read is out already."""
        if not self._ids_before.unread or self._visibility.reading:
            return []
        first = [topic for topic in self._ids_before.unread if self._holds(topic)]
        if first:
            self._visibility.soon(now)
        return first

    def _applied(self, topic: Topic, now: float) -> None:
        """The broker applied the topic: resolved now, or once every broker shows it (wait_for_metadata)."""
        call = topic.call
        if call.spec.wait_for_metadata and not call.kind.validate_only:
            call.move(topic, TopicState.AWAITING_VISIBILITY)
            self._visibility.awaiting(now)
        else:
            self._finish(topic, None, now)

    def _finish(self, topic: Topic, exc: BaseException | None, now: float) -> None:
        """Book a topic's outcome; the driver resolves its future."""
        call = topic.call
        call.move(topic, _SETTLED)
        self._release(topic)
        if exc is not None and call.error_type is None:
            error = error_of(exc)
            call.error_type = error.name() if error is not None else type(exc).__name__
        call.unsettled -= 1
        self._out.append(Settle(topic, exc))
        self._account(call, now)

    def _release(self, topic: Topic) -> None:
        """The topic is settled or withdrawn: the next call waiting for its name may send it."""
        if self._ids_before.unread:
            self._ids_before.unread.pop(topic, None)
        holder = self._names.release(topic)
        if holder is not None:  # the earliest pending call naming it may send it now
            holder.call.move(holder, TopicState.QUEUED)

    def _holds(self, topic: Topic) -> bool:
        """True when no earlier pending call holds the topic's name (rule a)."""
        return topic.state is not _HELD

    def _account(self, call: Call, now: float) -> None:
        if call.unsettled > 0 or self._calls.pop(call.id, None) is None:
            return
        # Recorded before the call's last future resolves (metric events go first): a caller that waits for the
        # results and then reads the metrics always finds this call in them.
        operation, seconds, error_type = call.kind.operation.name, now - call.spec.started_at, call.error_type
        self._metric(CallFinished(operation, seconds, error_type))

    def _fail_on_auth_error(self, now: float) -> None:
        assert self._auth_error is not None
        error, reported_at = self._auth_error
        if now - reported_at > AUTH_ERROR_TTL_S:
            self._auth_error = None
            return
        for call in list(self._calls.values()):
            for topic in [*call.queued.values(), *call.in_flight.values()]:  # applied topics stay applied
                self._end(topic, Ending.AUTH_FAILED, now, error=error)

    def _expire(self, now: float) -> float:
        """Settle what is past its call's deadline; returns the next deadline (rule e)."""
        next_deadline = math.inf
        for call in list(self._calls.values()):
            if call.spec.deadline > now:
                next_deadline = min(next_deadline, call.spec.deadline)
                continue
            for topic in list(call.queued.values()):
                self._end(topic, Ending.DEADLINE, now)
            for topic in list(call.in_flight.values()):  # sent, not answered: it may or may not have been applied
                self._end(
                    topic,
                    Ending.ANSWER_LOST,
                    now,
                    why="no response by the deadline",
                    because=OutcomeUnknownReason.NO_RESPONSE,
                )
            for topic in list(call.awaiting.values()):  # applied, not yet shown by every broker
                self._end(topic, Ending.DEADLINE, now)
        return next_deadline

    def _end(
        self,
        topic: Topic,
        ending: Ending,
        now: float,
        *,
        exc: BaseException | None = None,
        error: KafkaError | None = None,
        throttle_ms: int = 0,
        why: str = "",
        because: NotSentReason | OutcomeUnknownReason | None = None,
        node_lost: bool = False,
    ) -> None:
        """Settle the topic with the error its ending and its attempts call for (``outcome``: rule f); ``why`` says
        why in words, ``because`` typed."""
        call = topic.call
        if ending is Ending.DEADLINE:
            why, because = self._why_not_sent(topic)
        facts = Facts(
            call.kind.operation.name,
            topic.name,
            call.spec.timeout_ms,
            now,
            exc,
            error,
            throttle_ms,
            why,
            self._contact.failure,
            topic.lagging,
            because,
            node_lost,
        )
        self._finish(topic, settle_error(ending, topic.state, topic.past, facts), now)

    def _why_not_sent(self, topic: Topic) -> tuple[str, NotSentReason]:
        """Why a topic that was never sent (or whose attempts were never built) was not sent by its deadline."""
        if not self._contact.reached:
            return "no broker had answered this client", NotSentReason.NO_BROKER_ANSWERED
        if not self._holds(topic):
            return "an earlier call still held the topic's name", NotSentReason.NAME_HELD
        if topic in self._ids_before.unread:
            why = "the brokers' topic ids of the name (to tell the new topic from an earlier one) were still being read"
            return why, NotSentReason.READING_IDS
        if self._connection.busy:
            why = "the connection to the controller still carried an earlier request that got no answer"
            return why, NotSentReason.CONNECTION_BUSY
        return "its deadline passed before it could be sent", NotSentReason.DEADLINE

    # -- a response -------------------------------------------------------------------------------

    def _complete(self, request: Request, now: float) -> None:
        """The request in flight is done: answered whole or in part, abandoned, or cut short after it may have
        been handed over. Every topic still in flight gets its verdict (``verdict``: rule f), and what the answer
        teaches (the connection, the throttle, the batch cap, Redpanda's charge, the round trip, the pacer's rate)
        is learned."""
        self._request = None
        results = {topic.name: request.results.get(topic.name, _MISSING) for topic in request.topics}
        answered = request.answered_at is not None
        self._note_connection(request, results, answered, now)
        throttle_s = self._record_response_throttle(request, answered)
        operation = request.kind.operation.name
        outcomes = {name: classify(exc, operation=operation, throttled=throttle_s > 0) for name, exc in results.items()}
        split = self._learn_batch_cap(request, outcomes)
        response = _Response(results, outcomes, throttle_s, split=split, node_lost=request.node_lost)
        charged = 0
        if answered:
            response.throttle_s, charged = self._redpanda_refusals(request, response, now)
        accepted = _progress(request.topics, outcomes)
        retried = self._settle_answered(request, response, now)
        if answered:  # Redpanda's refused topics are charged all the same: the pacer's mirror counts them
            self._learn_from_answer(request, results, charged + accepted, response.throttle_s, now)
        spoke = answered and not _SPEAKS_FOR_QUOTA.isdisjoint(outcomes.values())
        if self._gate.completed(request.id, spoke_for_quota=spoke) and self._pacer is not None:
            self._pacer.connection_renewed(response.throttle_s, now)  # the debt the fresh answer disproved
        if accepted:
            self._metric(MutationsAdmitted(operation, accepted))
        if retried:
            self._metric(Retried(operation))

    def _note_connection(
        self, request: Request, results: dict[str, BaseException | None], answered: bool, now: float
    ) -> None:
        """What the request's end says of the connection: a broker answered (or the request was written), the
        request may still hold the connection (rule b), or it was written and its connection is gone (``final_at``)."""
        if answered or any(was_written(exc) for exc in results.values()):
            self._contact.answered()
            self._out.append(Reached())
        if request.first_result_at is None or (
            not answered and any(_may_still_be_on_the_connection(exc) for exc in request.results.values())
        ):
            self._connection.abandoned(now, request.operation_timeout_s)  # it may still hold the connection
        elif not answered and any(was_written(exc) for exc in results.values()):
            # written and not answered, its connection gone: the broker may have read it just before
            self._final_at = max(self._final_at, now + request.operation_timeout_s)

    def _learn_batch_cap(self, request: Request, outcomes: dict[str, Outcome]) -> bool:
        """Refused whole for the controller's batch cap: learn it, and send the topics again in smaller requests
        (True)."""
        split = len(request.topics) > 1 and all(outcome is Outcome.TOO_LARGE for outcome in outcomes.values())
        if split:
            self._cap.refused(sum(topic.records for topic in request.topics))
        return split

    def _settle_answered(self, request: Request, response: _Response, now: float) -> bool:
        """Carry out each topic's verdict (a topic no longer in flight was settled already: its deadline passed,
        or authentication failed). True when any topic is queued again (a retry)."""
        retried = False
        for topic in request.topics:
            if topic.state is not _IN_FLIGHT:
                continue
            outcome = response.outcomes[topic.name]
            throttle_ms = int(response.throttle_s * 1000 + 0.5) if outcome is _THROTTLED else 0
            attempt = Attempt(request.id, request.sent_at, now, outcome, response.results[topic.name], throttle_ms)
            topic.history += (attempt,)
            decided = verdict(
                outcome,
                split=response.split,
                cancelled=topic.cancelled,
                cannot_connect=self._contact.failure is not None,
                outcome_unknown=topic.outcome_unknown,
            )
            retried |= self._CARRY_OUT[decided](self, topic, response.results[topic.name], outcome, response, now)
        return retried

    def _learn_from_answer(
        self, request: Request, results: dict[str, BaseException | None], admitted: int, throttle_s: float, now: float
    ) -> None:
        """A broker answered: a whole answer is a round trip (rule d), an authentication failure is over, and the
        pacer learns what was admitted and the throttle."""
        assert request.answered_at is not None
        if all(is_broker_answer(exc) for exc in results.values()):
            self._round_trip.observe(len(request.topics), request.answered_at - request.sent_at, now)
        self._auth_error = None
        if self._pacer is not None:
            self._pacer.on_response(admitted=admitted, throttle_s=throttle_s, sent_at=request.sent_at, now=now)

    def _record_response_throttle(self, request: Request, answered: bool) -> float:
        """Each response's throttle goes to the sensor once, for the request it came from (KIP-124); a request
        that got no response records nothing, as Kafka's NetworkClient. Returns the response's throttle."""
        for node_id, throttle_s in request.events:  # every event stands for one response
            self._metric(_throttle_event(node_id, throttle_s, mutation=True))
        if not answered:
            return 0.0
        if not request.events:
            self._metric(ResponseThrottle(None, 0.0))  # librdkafka sends no event for an unthrottled response
        return max((throttle_s for _, throttle_s in request.events), default=0.0)

    def _redpanda_refusals(self, request: Request, response: _Response, now: float) -> tuple[float, int]:
        """Redpanda charges the topics it refuses: the wait is longer than its throttle (``redpanda``). Returns the
        throttle to wait out, and what the refused topics were charged."""
        results, outcomes, throttle_s = response.results, response.outcomes, response.throttle_s
        refused = [t.cost or 0 for t in request.topics if _redpanda_refused(results[t.name], outcomes[t.name])]
        if not refused:
            self._redpanda.extra_s([], 0, True, throttle_s, None)
            return throttle_s, 0
        admitted_any = any(outcome is Outcome.SUCCESS for outcome in outcomes.values())
        before = _admitted_before_refusal(request.topics, outcomes)
        configured = None if self._pacer is None or self._own_pacer else self._pacer.quota.rate  # exact
        extra_s = self._redpanda.extra_s(refused, before, admitted_any, throttle_s, configured)
        if extra_s > 0:
            throttle_s += extra_s
            self._gate.record(-1, throttle_s, now)
        estimate = self._redpanda.estimate or self._redpanda.rate
        if self._pacer is not None and estimate is not None:
            self._pacer.sample(estimate)  # a learning pacer: Redpanda's answer bounds the rate
        elif self._pacer is None and estimate is not None:
            # Re-sending everything would have Redpanda admit one topic and charge all the others, again and again:
            # from now on the client paces itself, as MutationQuota() would, starting from the rate read from the
            # response (a learned rate's bucket holds one second of it, as Redpanda's does).
            self._pacer = Pacer(MutationQuota())
            self._pacer.sample(estimate)
            self._own_pacer = True
        return throttle_s, sum(refused)

    def _on_applied(
        self, topic: Topic, exc: BaseException | None, outcome: Outcome, response: _Response, now: float
    ) -> bool:
        """``Verdict.APPLIED``; a create made with a guessed partition count is read back (``MetadataReads``)."""
        if topic.guessed and self._metadata.default_partitions is None and not topic.call.kind.validate_only:
            self._metadata.read_back(topic.name)
        self._applied(topic, now)
        return False

    def _on_throttled(
        self, topic: Topic, exc: BaseException | None, outcome: Outcome, response: _Response, now: float
    ) -> bool:
        """``Verdict.THROTTLED``: queued again behind the throttle (or after a back-off when the response carried
        none), or settled with it when its call does not retry or its caller cancelled it."""
        throttle_s, delays, message = response.throttle_s, response.quota_delays, _message(exc)
        call = topic.call
        operation = call.kind.operation.name
        self._metric(QuotaViolations(operation, 1))
        if not call.spec.retry_on_quota_violation or topic.cancelled:  # after an unanswered attempt: outcome unknown
            refused = ThrottlingQuotaExceededException(topic.history[-1].throttle_ms, topic.name, message, sent=True)
            self._end(topic, Ending.ANSWERED, now, exc=refused)
            return False
        if throttle_s <= 0:
            # Error 89 with no throttle to wait (the bucket was a fraction of a token short): exponential back-off
            # with jitter per call, starting at about one round trip and reset whenever the call makes progress.
            if call.id not in delays:
                initial_ms = max(_MIN_QUOTA_BACKOFF_S, self._round_trip.expected_s(1, now, min_samples=1)) * 1000
                delays[call.id] = self._backoff.delay_s(call.quota_backoffs, self._random, initial_ms)
                call.quota_backoffs += 1
            topic.not_before = now + delays[call.id]
        call.move(topic, TopicState.QUEUED)
        return True

    def _on_too_large(
        self, topic: Topic, exc: BaseException | None, outcome: Outcome, response: _Response, now: float
    ) -> bool:
        """``Verdict.RESEND_SMALLER``: queued again, for a request within the batch cap just learned (its history
        keeps the broker's word, should time run out before a smaller request goes)."""
        topic.call.move(topic, TopicState.QUEUED)
        return True

    def _on_cannot_connect(
        self, topic: Topic, exc: BaseException | None, outcome: Outcome, response: _Response, now: float
    ) -> bool:
        """``Verdict.CANNOT_CONNECT``: no broker was ever reached; say so now, not at the deadline."""
        self._end(topic, Ending.CANNOT_CONNECT, now)
        return False

    def _on_final(
        self, topic: Topic, exc: BaseException | None, outcome: Outcome, response: _Response, now: float
    ) -> bool:
        """``Verdict.FINAL``: the broker's last word (outcome unknown after an earlier unanswered attempt, possibly
        applied when it says "already done" after a node went away in flight)."""
        self._end(topic, Ending.ANSWERED, now, exc=exc, node_lost=response.node_lost)
        return False

    def _on_transient(
        self, topic: Topic, exc: BaseException | None, outcome: Outcome, response: _Response, now: float
    ) -> bool:
        """``Verdict.RETRY``: re-queue a topic the broker did not apply (or whose answer was lost) after one
        back-off per call and response, so the topics of one refused request go out together again, as Java
        re-sends a failed call."""
        delays = response.delays
        call = topic.call
        error = error_of(exc)
        if error is not None and error.code() == KafkaError.NOT_CONTROLLER:
            self._metadata.refresh = True
        if call.id not in delays:
            delays[call.id] = self._backoff.delay_s(call.transient_retries, self._random)
            call.transient_retries += 1
        delay_s = delays[call.id]
        if topic.cancelled or call.remaining_s(now) <= delay_s + self._round_trip.expected_s(1, now, min_samples=1):
            # no time left (or never again): what this attempt and the earlier ones leave true
            if outcome is Outcome.UNKNOWN:
                self._end(topic, Ending.ANSWER_LOST, now, why=_reason(exc))
            elif outcome is Outcome.NOT_SENT:
                self._end(topic, Ending.CANCELLED if topic.cancelled else Ending.DEADLINE, now)
            else:
                self._end(topic, Ending.ANSWERED, now, exc=exc)  # the broker's refusal
            return False
        topic.not_before = now + delay_s
        call.move(topic, TopicState.QUEUED)
        return True

    # How ``_settle_answered`` carries out each verdict: the handler returns whether the topic was queued again.
    _CARRY_OUT: ClassVar[dict[Verdict, _OnVerdict]] = {
        Verdict.APPLIED: _on_applied,
        Verdict.THROTTLED: _on_throttled,
        Verdict.RESEND_SMALLER: _on_too_large,
        Verdict.CANNOT_CONNECT: _on_cannot_connect,
        Verdict.RETRY: _on_transient,
        Verdict.FINAL: _on_final,
    }

    # -- the next request -------------------------------------------------------------------------

    def _next_request(self, now: float) -> float:
        """Compose the next request into the outbox, or ask for metadata; returns when to look again. Nothing is
        sent while a throttle lasts (KIP-219), while the connection may carry an abandoned request (rule b), before
        first contact allows it, while costs are unknown, or while the pacer holds the head of the queue back."""
        if not self._calls:
            return math.inf
        if (wake_at := self._throttle_wait(now)) is not None:
            return wake_at
        if self._connection.busy:
            return math.inf  # rule b: woken by the sentinel's outcome (or a deadline)
        head = self._head(now)
        if head is None:
            return self._next_eligible(now)
        if (wake_at := self._contact_wait(head, now)) is not None:
            return wake_at
        kind = head.call.kind
        topics = list(self._eligible(kind, now))
        if probe := self._gate.probe_due(now):  # a throttle whose connection is gone: one topic, the cheapest, first
            topics = [min(topics, key=lambda topic: (topic.cost is None, topic.cost or 0))]
        if (wake_at := self._metadata_wait(topics)) is not None:
            return wake_at
        if not probe and (wake_at := self._pacing_wait(head, now)) is not None:  # the probe tests its debt
            return wake_at
        return self._compose(kind, topics, now)

    def _throttle_wait(self, now: float) -> float | None:
        """KIP-219: nothing is sent while a throttle lasts; returns when it ends (None: no throttle). A call that
        cannot wait fails at once (retry off, or the throttle outlasts its deadline: Java would sleep through it
        for nothing)."""
        gate_s = self._gate.remaining_s(now)
        self._note_gate_wait(gate_s > 0, now)
        if gate_s <= 0:
            return None
        gate_ms = int(gate_s * 1000 + 0.5)
        for call in list(self._calls.values()):
            if call.queued and (not call.spec.retry_on_quota_violation or gate_s >= call.remaining_s(now)):
                self._refuse(call, gate_ms, now)
        return now + gate_s

    def _contact_wait(self, head: Topic, now: float) -> float | None:
        """First contact: hand over only what librdkafka may be able to write. Returns when to look again (None:
        send now)."""
        if self._contact.reached:
            return None
        if self._contact.failure is not None:
            return math.inf  # woken by a broker's answer, or when the calls give up (_first_contact)
        wait_until = head.call.spec.started_at + FIRST_CONTACT_TIMEOUT_S
        if self._contact.probe is ProbeState.ASKED and now < wait_until:
            return wait_until  # or by the probe's answer
        return None

    def _metadata_wait(self, topics: list[Topic]) -> float | None:
        """Costs not yet known, or metadata to refresh (after NOT_CONTROLLER): ask for a metadata read, read off the
        deadline-keeping path (expiry goes on meanwhile), and wait for it (None: nothing to read)."""
        if not self._metadata.refresh and all(topic.cost is not None for topic in topics):
            return None
        if self._metadata.ask():
            self._out.append(ReadMetadata())
        return math.inf  # woken by the metadata read (or a deadline)

    def _pacing_wait(self, head: Topic, now: float) -> float | None:
        """The pacer holds the head of the queue back: returns when it may go (None: now). A call of the same kind
        whose deadline comes first fails at once, as throttled."""
        if self._pacer is None:
            return None
        pending_cost = self._queued_cost(head.call.kind, self._pacer.horizon, now)
        wait_s = self._pacer.wait_s(head.cost or 0, pending_cost, now)
        if wait_s <= 0:
            return None
        kind = head.call.kind
        for call in list(self._calls.values()):
            if call.kind == kind and call.queued and wait_s >= call.remaining_s(now):
                self._refuse(call, int(wait_s * 1000 + 0.5), now)
        return now + wait_s

    def _note_gate_wait(self, waiting: bool, now: float) -> None:
        """Local back-off time (KIP-219): how long queued work waited for the broker's throttle to end."""
        if waiting and not self._gate.waiting:
            head = next(iter(self._calls.values()))
            self._gate.wait_began(head.kind.operation.name, now)
        elif not waiting and (waited := self._gate.wait_ended(now)) is not None:
            self._metric(BackedOff(*waited))

    def _refuse(self, call: Call, throttle_ms: int, now: float) -> None:
        """Fail a call's queued topics as throttled without sending them (counted as quota violations)."""
        queued = list(call.queued.values())
        operation = call.kind.operation.name
        self._metric(QuotaViolations(operation, len(queued)))
        for topic in queued:  # an earlier throttle of the topic's own, if longer, is the one it is told
            self._end(topic, Ending.THROTTLED_HERE, now, throttle_ms=throttle_ms)

    def _head(self, now: float) -> Topic | None:
        for call in self._calls.values():
            for topic in call.queued.values():
                if topic.not_before <= now and self._sendable(topic):
                    return topic
        return None

    def _sendable(self, topic: Topic) -> bool:
        """It holds its name (rule a), and, a wait_for_metadata create, the ids before its send are known."""
        return self._holds(topic) and (not self._ids_before.unread or topic not in self._ids_before.unread)

    def _next_eligible(self, now: float) -> float:
        """When the next queued topic becomes sendable (one waiting for a name's holder is woken by its settling,
        one waiting for the ids before its send by the read's answer)."""
        waits = [t.not_before for c in self._calls.values() for t in c.queued.values() if self._sendable(t)]
        return max(now, min(waits, default=math.inf))

    def _queued_cost(self, kind: RequestKind, horizon: float, now: float) -> float:
        """What the pacer paces: the cost of every topic of ``kind`` that could go now, not only one request's worth
        (a first request the full bucket covers while more waits would be charged late: ``pacer.py``), summed until
        it exceeds ``horizon`` (beyond that, all costs are alike to the pacer)."""
        total = 0.0
        for call in self._calls.values():
            if call.kind != kind:
                continue
            for topic in call.queued.values():
                if topic.not_before <= now and self._sendable(topic):
                    total += topic.cost or 0
                    if total > horizon:
                        return total
        return total

    def _eligible(self, kind: RequestKind, now: float) -> Iterator[Topic]:
        count = 0
        for call in self._calls.values():
            if call.kind != kind:
                continue
            for topic in call.queued.values():
                if topic.not_before <= now and self._sendable(topic):
                    yield topic
                    count += 1
                    if count >= self._config.max_topics_per_request:
                        return

    def _compose(self, kind: RequestKind, candidates: list[Topic], now: float) -> float:
        """Put the next request in the outbox: the candidates (queued, sendable, of one kind, in call order) that
        fit it (``_choose``), with the timeouts their calls allow (``_timeouts``). Returns when to look again."""
        # The round-trip floor for a first attempt and for a retry, computed once for the whole request.
        estimates = {samples: self._round_trip.estimate(now, samples) for samples in (1, MIN_SAMPLES)}
        chosen, mutations, _, longest = self._choose(candidates, estimates, now)
        if not chosen:
            return now
        margin_s = max(_MIN_MARGIN_S, estimates[MIN_SAMPLES][0])  # the controller's deadline ends this early
        request_timeout_s, operation_timeout_s = self._timeouts(chosen, longest, margin_s, now)
        for topic in chosen:
            topic.call.move(topic, _IN_FLIGHT)
        expires_at = now + request_timeout_s + ABANDON_GRACE_S
        request_id = next(self._request_ids)
        request = Request(kind, chosen, mutations, now, expires_at, request_timeout_s, operation_timeout_s, request_id)
        self._request = request
        self._gate.sent(request_id, now)
        self._out.append(Send(request))
        operation, count = kind.operation.name, len(chosen)
        self._metric(RequestSent(operation, count, mutations))
        return self._request_wake_at(request)

    def _choose(
        self, candidates: list[Topic], estimates: dict[int, tuple[float, float]], now: float
    ) -> tuple[list[Topic], int, float, float]:
        """The topics of the next request, in order, within the pacer's budget and the batch cap; a topic that can
        no longer be answered before its deadline is settled instead (``_too_late``), and one whose call's time
        budget is far from the others' waits for a request of its own (rule c). Returns the topics, their
        mutations, and the shortest and longest time budget of their calls."""
        budget = math.inf
        if self._pacer is not None and candidates:
            pending_cost = self._queued_cost(candidates[0].call.kind, self._pacer.horizon, now)
            budget = self._pacer.batch_budget(now, pending_cost)
        chosen: list[Topic] = []
        mutations = records = 0
        shortest = longest = 0.0  # the time budgets of the calls chosen (rule c)
        last_call: Call | None = None
        remaining_s = time_s = 0.0
        for topic in candidates:
            cost = topic.cost or 0
            if chosen and (mutations + cost > budget or records + topic.records > self._cap.limit):
                break
            call = topic.call
            if call is not last_call:  # a call's topics are in a row: its times once
                last_call, remaining_s, time_s = call, call.remaining_s(now), call.budget_s(now)
            late = self._too_late(topic, estimates, len(chosen) + 1, (remaining_s, time_s), now)
            if late is not None:
                self._end(topic, late[0], now, why=late[1], because=late[2])
                continue
            if chosen and max(longest, time_s) > COALESCE_RATIO * min(shortest, time_s):
                continue  # rule c: its budget is far from the others'; it goes in a request of its own
            shortest = time_s if not chosen else min(shortest, time_s)
            longest = max(longest, time_s)
            chosen.append(topic)
            mutations += cost
            records += topic.records
        return chosen, mutations, shortest, longest

    def _too_late(
        self,
        topic: Topic,
        estimates: dict[int, tuple[float, float]],
        size: int,
        times: tuple[float, float],
        now: float,
    ) -> tuple[Ending, str, NotSentReason | None] | None:
        """Send nothing that cannot be answered in time: before its deadline (it would be applied after the caller
        was told it failed), and within its time budget, which the caller's request_timeout caps (librdkafka drops
        a later answer). ``times``: the call's time left and its budget. Returns how the topic ends, and why it was
        not sent, if it is too late for a request of ``size`` topics (else None).

        A first attempt is refused only on a robust estimate (rule d: no lockout); a retry is not sent when any
        recent answer says it cannot come back in time (the caller gets the broker's last word instead)."""
        remaining_s, budget_s = times
        base_s, per_topic_s = estimates[1 if topic.attempts else MIN_SAMPLES]
        expected_s = base_s + per_topic_s * size
        kept_s = max(_MIN_MARGIN_S, base_s)
        if not self._contact.reached and remaining_s <= CONTACT_VERDICT_MARGIN_S + kept_s:
            return Ending.DEADLINE, "", None  # no time for librdkafka's verdict to come
        if remaining_s <= expected_s + kept_s:
            left_ms = max(0.0, remaining_s) * 1000
            why = f"less time was left ({left_ms:.0f} ms) than "
            if expected_s > 0:
                why += f"a round trip takes ({expected_s * 1000:.0f} ms recently)"
                return Ending.TOO_LATE, why, NotSentReason.ROUND_TRIP
            why += f"the {kept_s * 1000:.0f} ms kept for the answer"
            return Ending.TOO_LATE, why, NotSentReason.ANSWER_MARGIN
        if 0 < expected_s >= budget_s:  # time is left, but the caller's request_timeout ends first
            why = f"its request_timeout ({budget_s * 1000:.0f} ms) is shorter than a round trip "
            why += f"({expected_s * 1000:.0f} ms recently)"
            return Ending.TOO_LATE, why, NotSentReason.ROUND_TRIP
        return None

    def _timeouts(self, chosen: list[Topic], longest: float, margin_s: float, now: float) -> tuple[float, float]:
        """The request's librdkafka timeout and its controller deadline (``operation_timeout``), in seconds.

        Sharing never hurts (rule c): the request carries what the longest call would carry alone. librdkafka waits
        for the answer as long as that call would (each call's topics are still settled at its own deadline), and
        the controller's deadline is that call's own, ``margin_s`` early (capped by its caller's operation_timeout),
        so a controller busy past a shorter call's deadline still applies the request, as it would that call's
        alone: the shorter call is told "outcome unknown" at its deadline, never "not sent"."""
        calls = {topic.call.id: topic.call for topic in chosen}.values()
        request_timeout_s = max(_MIN_OPERATION_TIMEOUT_S, min(longest, _LIBRDKAFKA_MAX_TIMEOUT_S))
        if not self._contact.reached:  # librdkafka's verdict comes before the (shortest call's) deadline
            remaining_s = min(call.remaining_s(now) for call in calls)
            request_timeout_s = min(request_timeout_s, remaining_s - CONTACT_VERDICT_MARGIN_S)
        longest_own_s = max(_own_operation_timeout_s(call, margin_s, now) for call in calls)
        operation_timeout_s = min(longest_own_s, request_timeout_s - margin_s)
        operation_timeout_s = max(_MIN_OPERATION_TIMEOUT_S, min(operation_timeout_s, _LIBRDKAFKA_MAX_TIMEOUT_S))
        return request_timeout_s, operation_timeout_s


def _own_operation_timeout_s(call: Call, margin_s: float, now: float) -> float:
    """The controller deadline a call would carry alone: its time budget, ``margin_s`` early, capped by its caller's
    own operation_timeout. A caller's operation_timeout of 0 (confluent-kafka's "do not wait") is no cap: a Kafka 4
    controller refuses a request whose timeout_ms is 0 at once (REQUEST_TIMED_OUT, nothing applied), and answers
    after the commit whatever the timeout, so the controller deadline derived from the call's deadline stays."""
    own_s = call.budget_s(now) - margin_s
    cap_s = call.spec.operation_timeout_s
    return min(own_s, cap_s) if cap_s else own_s


@dataclass(slots=True)
class _Response:
    """What the engine knows of an answered request while it carries out its topics' verdicts."""

    results: dict[str, BaseException | None]  # every topic's result (``_MISSING`` where none came)
    outcomes: dict[str, Outcome]  # what each result means (``classify``)
    throttle_s: float  # the throttle to wait out (Redpanda's charge included)
    split: bool  # refused whole for the batch cap: sent again in smaller requests
    node_lost: bool  # a node went away while the request was in flight (``Request.node_lost``)
    # call id -> the back-off its topics wait after this response, drawn once per call (with its jitter), so topics
    # refused together are sent together again: after error 89 without a throttle, and after a transient failure
    quota_delays: dict[int, float] = field(default_factory=dict)
    delays: dict[int, float] = field(default_factory=dict)


# How ``Engine._settle_answered`` carries out a verdict: (the engine, the topic, its result, its outcome, the
# response, now) -> whether the topic was queued again (a retry).
_OnVerdict = Callable[[Engine, Topic, "BaseException | None", Outcome, _Response, float], bool]


def _throttle_event(node_id: int, throttle_s: float, *, mutation: bool = False) -> ResponseThrottle:
    return ResponseThrottle(node_id, throttle_s * 1000, mutation)


# No result for the topic: the response left it out, or librdkafka never completed the request.
_MISSING = KafkaException(KafkaError(KafkaError._TIMED_OUT, "no result for the topic in the response"))


def closed_here(topic: Topic, *, unsent: bool) -> ClientClosedError | NotYetVisibleError:
    """The error of a topic settled by close() from a frame that cannot wait for the engine (a signal handler that
    interrupted it): what its own fields say, and where they cannot tell, outcome unknown. ``unsent``: its request
    was about to be sent and certainly was not (the driver knows)."""
    call = topic.call
    operation = call.kind.operation.name
    if topic.state is TopicState.AWAITING_VISIBILITY:  # applied
        return not_visible_error(operation, call.spec.timeout_ms, topic.lagging, closed=True)
    queued = topic.state is TopicState.QUEUED or topic.state is TopicState.HELD_BEHIND_NAME or unsent
    if queued and not topic.outcome_unknown:
        if topic.attempts == 0:
            return closed_error(operation, sent=False)
        refused = topic.past.refusal
        if refused is not None:
            return closed_error(operation, sent=False, refused=refused, in_flight=False)
    # in flight, or settled or withdrawn (its future not yet resolved), or after an unanswered attempt
    return closed_error(operation, sent=True, in_flight=not queued)


def _may_still_be_on_the_connection(exc: BaseException | None) -> bool:
    """librdkafka gave up waiting for the answer, or could not read it (its throttle is then unknown): the request,
    or the mute after its answer, may still hold the connection (``connection``). A transport failure closed the
    connection; a request never built ("waiting for controller") was not written."""
    error = error_of(exc)
    if error is None:
        return False
    return error.code() == KafkaError._BAD_MSG or (was_written(exc) and not connection_lost(exc))


def _progress(topics: list[Topic], outcomes: dict[str, Outcome]) -> int:
    """The topics the broker applied reset their calls' back-offs (progress); returns their mutations (as far as
    their costs are known)."""
    accepted = 0
    for topic in topics:
        if outcomes[topic.name] is Outcome.SUCCESS:
            topic.call.quota_backoffs = topic.call.transient_retries = 0
            accepted += topic.cost or 0
    return accepted


def _admitted_before_refusal(topics: list[Topic], outcomes: dict[str, Outcome]) -> int:
    """The cost of the topic admitted just before the first one refused for the quota, in request order (0: none)."""
    previous = 0
    for topic in topics:
        outcome = outcomes[topic.name]
        if outcome is Outcome.THROTTLED:
            return previous
        previous = (topic.cost or 0) if outcome is Outcome.SUCCESS else 0
    return 0


def _redpanda_refused(exc: BaseException | None, outcome: Outcome) -> bool:
    """Refused for the quota in Redpanda's form: its message, or the message-less -1 of DeleteTopics < v5."""
    error = error_of(exc)
    if error is None or outcome is not Outcome.THROTTLED:
        return False
    return error.code() == KafkaError.UNKNOWN or error.str() == REDPANDA_QUOTA_MESSAGE


def _message(exc: BaseException | None) -> str | None:
    """The broker's own message for an error 89 or its Redpanda form, if it gave one."""
    error = error_of(exc)
    if error is None or error.str() in (KafkaError(error.code()).str(), KafkaError(KafkaError.UNKNOWN).str()):
        return None
    return error.str()


def _reason(exc: BaseException | None) -> str:
    error = error_of(exc)
    return error.str() if error is not None else "no response"
