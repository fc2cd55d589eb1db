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
b. At most one mutation request is in flight per connection, nothing is sent while the broker's throttle lasts
   (KIP-219), and the slot follows the connection (``connection``): after librdkafka gives up on a request, nothing
   is written on it until a sentinel behind it says the connection is free or closed. A second connection carries
   a second request beside a bulk one only while no throttle was ever seen, the client does not pace and no
   request of it went unanswered (``lanes``). Nothing ever waits in a muted connection or behind an unanswered
   request.
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

import functools
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, repeat

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._engine.actions import (
    Action,
    Outbox,
    Probe,
    Reached,
    ReadMetadata,
    ReadViews,
    Send,
    Settle,
    WakeAt,
)
from throttled_admin._engine.after_answer import (
    AfterAnswer,
    Finish,
    Requeue,
    Response,
    not_controller,
)
from throttled_admin._engine.classify import (
    Outcome,
    classify,
    error_of,
    is_broker_answer,
    was_written,
)
from throttled_admin._engine.config import MAX_RECORDS_PER_REQUEST, MAX_TOPICS_PER_REQUEST, EngineConfig
from throttled_admin._engine.connection import Drained
from throttled_admin._engine.contact import Contact, contact_failure
from throttled_admin._engine.intake import take_in
from throttled_admin._engine.lanes import FIRST, SECOND, Lanes
from throttled_admin._engine.late_settle import LateSettlement
from throttled_admin._engine.learning import Learning
from throttled_admin._engine.lifecycle import Attempt, TopicState
from throttled_admin._engine.metadata import MetadataReads
from throttled_admin._engine.metric_events import (
    BackedOff,
    MetricEvent,
    MutationsAdmitted,
    QuotaViolations,
    RequestSent,
    ResponseThrottle,
    Retried,
)
from throttled_admin._engine.outcome import (
    NAMES_THE_TOPIC,
    Ending,
    Facts,
    closed_here,
    copied,
    settle_error,
    why_not_sent,
)
from throttled_admin._engine.pacer import Pacer
from throttled_admin._engine.queue import WorkQueue
from throttled_admin._engine.request import Forwarded, Request
from throttled_admin._engine.retry import RetryBackoff
from throttled_admin._engine.round_trip import MIN_SAMPLES
from throttled_admin._engine.slot import Slot
from throttled_admin._engine.status import Status
from throttled_admin._engine.throttle import ThrottleTracker, failed_node
from throttled_admin._engine.verdict import Verdict, verdict
from throttled_admin._engine.view_reads import ViewReads
from throttled_admin._engine.visibility import BrokerViews
from throttled_admin._engine.work import (
    CREATE_TOPICS,
    Call,
    CallSpec,
    RequestKind,
    Topic,
    TopicRef,
    TopicSpec,
    TopicSpecs,
    cost_with_default,
    partitions_made,
)
from throttled_admin._errors import (
    CLOSED_MESSAGE,
    NotSentReason,
    OutcomeUnknownReason,
)

__all__ = [
    "COALESCE_RATIO",
    "MAX_RECORDS_PER_REQUEST",
    "MAX_TOPICS_PER_REQUEST",
    "Engine",
    "Outbox",
]

# MAX_TOPICS_PER_REQUEST and MAX_RECORDS_PER_REQUEST: the defaults of the engine's limits (``EngineConfig``)
COALESCE_RATIO = 2.0  # rule c: the longest time budget in a request is at most this times the shortest
_LIBRDKAFKA_MAX_TIMEOUT_S = 3600.0  # request_timeout / operation_timeout range of librdkafka
_MIN_MARGIN_S = 0.05  # the least time kept between the controller's deadline and the call's
_MIN_OPERATION_TIMEOUT_S = 0.001
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
# After new SASL credentials, authentication failures this soon are the old ones': librdkafka's events queued before
# the change (it retries a failing connection every few hundred ms) and a handshake under way with them.
NEW_CREDENTIALS_GRACE_S = 1.0


# The states the engine checks or sets once or more per topic, as module constants: on Python 3.11, reading an Enum
# member off its class is a Python-level call.
_HELD, _QUEUED, _IN_FLIGHT, _SETTLED = (
    TopicState.HELD_BEHIND_NAME,
    TopicState.QUEUED,
    TopicState.IN_FLIGHT,
    TopicState.SETTLED,
)
_THROTTLED, _SUCCESS = Outcome.THROTTLED, Outcome.SUCCESS
_SPEAKS_FOR_QUOTA = frozenset((Outcome.SUCCESS, Outcome.THROTTLED))  # charged, or refused for the quota


_DEFAULT_CONFIG = EngineConfig()
_REACHED = Reached()  # a flag with no fields: made once


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
        # round trip, batch cap, pacer
        self._learned = Learning(pacer, config.max_records_per_request, config.cap_probe_after)
        self._after = AfterAnswer(backoff, config.seed)  # what becomes of an answered topic, and its back-off
        self._gate = ThrottleTracker()  # KIP-219: the broker's throttle, and how long work waited for it
        self._views = ViewReads()  # wait_for_metadata: every broker's Metadata, and the ids before a create
        # rule b: one request in flight per connection, the slot follows its connection, and a second connection
        # for bulk work (``lanes``)
        self._lanes = Lanes(socket_timeout_s, config.second_lane_from)
        self._metadata = MetadataReads()  # partition counts, and the cluster's default partition count
        # the pending calls; rule a's name holds (a name passed on: its grow's or delete's cost read after that)
        self._queue = WorkQueue(config.max_topics_per_request, self._metadata.let_go)
        self._contact = Contact()  # first contact: has a broker answered this client?
        self._closed = False
        self._late = LateSettlement(config.settle_after_send_from)  # a large applied answer settled after the send
        self._out: list[Action] = []  # what to do, decided since the last step (``actions``)

    # -- state the driver reads -------------------------------------------------------------------

    @property
    def status(self) -> Status:
        """What the driver acts on between steps (``status``)."""
        lanes = self._lanes
        request, second = lanes.first.request, lanes.second.request
        return Status(
            in_flight=None if request is None else request.id,
            closed=self._closed,
            idle=not self._queue.calls and request is None and second is None and not lanes.busy,
            reached=self._contact.reached,
            final_at=lanes.final_at,
            rate=None if self._learned.pacer is None else self._learned.pacer.rate,
            auth_failing=self._contact.auth is not None,
            wants_default_partitions=self._metadata.default_partitions is None,
            max_records_per_request=self._learned.cap.limit,
            second_in_flight=None if second is None else second.id,
            cap_probe=self._learned.cap.probe,
            contact_failure=self._contact.failure,
        )

    def closed_here(self, ref: TopicRef, operation: str, *, unsent: bool) -> BaseException | None:
        """The error of a topic settled by close() from a frame that cannot wait for a step (``outcome.closed_here``):
        read only, from what the engine's record of the topic says (``operation``: its call's Kafka API name, for a
        topic no longer pending here). ``unsent``: its request was about to be sent and certainly was not. None: it
        was applied, of an answer held to be settled after the next send (``late_settle``), and is settled so. A
        topic settled since the last step (a cancel of one queued again: ``withdraw``) keeps that outcome."""
        if self._late.holds(ref):
            return None
        call = self._queue.calls.get(ref.call_id)
        topic = None if call is None else call.find(ref.name)
        if topic is None:  # no longer pending: settled since the last step, perhaps (looked for only then)
            for action in list(self._out):
                if isinstance(action, Settle) and action.ref == ref:
                    return action.outcome
        return closed_here(topic, operation, unsent=unsent)

    # -- events -----------------------------------------------------------------------------------

    def submit(self, call_id: int, spec: CallSpec, topics: Iterable[TopicSpec], *, more: bool = False) -> bool:
        """A call the driver numbered ``call_id`` (unique among its pending calls; a topic is then named to the driver
        by ``TopicRef(call_id, name)``), as its caller asked for it, and its topics (distinct names). The engine's
        own records of them (``Call``, ``Topic``) never leave it (``intake``). ``more``: the call's other topics come
        later, in one ``extend``; until then the call is not finished, however many of these are settled. True when
        no request is in flight (``status``'s ``in_flight`` None: a step now may send the call; the driver's caller
        then takes the turn)."""
        if self._closed:
            raise RuntimeError(CLOSED_MESSAGE)
        call = Call(spec, call_id)
        own = take_in(call, topics, self._queue, self._views, self._metadata.default_partitions, more=more)
        if not own and (finished := self._queue.finished(call, spec.started_at)) is not None:
            self._out.append(finished)
        return self._lanes.first.request is None

    def extend(self, call_id: int, topics: Iterable[TopicSpec], now: float) -> None:
        """The rest of a call submitted with ``more`` (distinct names, none in its first part), queued behind what is
        queued now: a bulk call's first request is sent before the rest of it is made ready (issue 40). The call is
        then whole; an empty ``topics`` only says so (the caller gave up on the rest), and is a no-op on a whole
        call. Raises RuntimeError once closed, as ``submit`` does (the driver tells the rest "not sent")."""
        if self._closed:
            raise RuntimeError(CLOSED_MESSAGE)
        call = self._queue.calls.get(call_id)
        given = TopicSpecs.of(topics)
        if call is None or call.whole:
            if len(given):
                raise ValueError(f"call {call_id} is not waiting for its other topics")
            return
        take_in(call, given, self._queue, self._views, self._metadata.default_partitions, rest=True)
        if (finished := self._queue.finished(call, now)) is not None:
            self._out.append(finished)

    def read_ahead(self, names: Iterable[str], now: float) -> None:
        """Read every broker's ids of these names with the next read, for wait_for_metadata creates of them to come
        (``view_reads``: a create submitted soon after takes them instead of a read of its own before its send)."""
        if not self._closed:
            self._views.read_ahead(names, self._queue.calls.values(), now)

    def withdraw(self, call_id: int, name: str, now: float) -> bool:
        """Its caller cancelled the topic (its future's cancel()). Never sent: taken back, and True. In flight:
        False, and its current attempt is its last (cancelled is final: it may still complete, but is never sent
        again). Queued again after an attempt a broker had (refused, or its answer lost): False, and settled now with
        what that attempt left true (rule j: the throttle left, the refusal, outcome unknown), for a cancelled future
        says it was never sent. Settled or withdrawn already (no longer pending here): False; a later cancel() of a
        withdrawn topic is its future's to answer."""
        call = self._queue.calls.get(call_id)
        topic = None if call is None else call.find(name)
        if call is None or topic is None:
            return False
        topic.cancelled = True
        if topic.state is not TopicState.QUEUED and topic.state is not TopicState.HELD_BEHIND_NAME:
            return False
        if topic.history and topic.past.answered:
            self._end([topic], Ending.CANCELLED, now)
            return False
        call.move(topic, TopicState.WITHDRAWN)
        self._views.forget(topic)
        if (finished := self._queue.settled(topic, now)) is not None:
            self._out.append(finished)
        return True

    def on_throttle(self, node_id: int, throttle_s: float, now: float, lane: int = FIRST) -> None:
        """A response's throttle_time_ms on the ``lane``'s connection (librdkafka sends an event when it changes)."""
        self._gate.record(node_id, throttle_s, now)
        self._contact.answered()  # a response's throttle: a broker has answered this client
        if throttle_s > 0:
            self._lanes.retire()  # a throttle: no second request goes beside the first again
        request = self._lanes.slots[lane].request
        if request is not None:
            request.events.append((node_id, throttle_s))
        else:  # the response of another AdminClient method
            self._out.append(_throttle_event(node_id, throttle_s))

    def credentials_changed(self, now: float) -> None:
        """The application gave new SASL credentials (``set_sasl_credentials``): an authentication failure held
        (``AUTH_ERROR_TTL_S``), or told within ``NEW_CREDENTIALS_GRACE_S`` from now, was the old ones', and fails
        nothing submitted from now on."""
        self._contact.auth = None
        self._contact.new_credentials_at = now

    def on_error(self, error: KafkaError, now: float, lane: int = FIRST) -> None:
        """An authentication failure fails the work at once instead of at its deadline, and what is submitted
        within ``AUTH_ERROR_TTL_S`` after it (librdkafka reports it again while it lasts). A connection that
        failed before its handshake (``contact``) counts until a broker has answered. ``lane``: whose handle told
        it (``lanes``)."""
        if lane != FIRST:  # the second handle's: it fails alone, and is not used again (``lanes``, ``on_log``)
            if error.code() == KafkaError._ALL_BROKERS_DOWN:
                self._lanes.node_lost(now)  # a node went away for both handles: forwarded requests (``outcome``)
            self.on_log(error.str(), now, lost=error.code() != KafkaError._TIMED_OUT, lane=lane)
        elif error.code() in _AUTH_ERRORS:
            if now - self._contact.new_credentials_at > NEW_CREDENTIALS_GRACE_S:  # (else the old credentials')
                self._contact.auth = (error, now)
        elif error.code() == KafkaError._ALL_BROKERS_DOWN:
            self._gate.every_connection_gone()  # every connection is down: none carries a throttle
            self._lanes.node_lost(now)
        else:  # _TIMED_OUT: librdkafka's own request timed out, perhaps in the mute: the connection's throttle holds
            self.on_log(error.str(), now, lost=error.code() != KafkaError._TIMED_OUT, lane=lane)

    def on_log(self, line: str, now: float, *, lost: bool = True, lane: int = FIRST) -> None:
        """A librdkafka ``FAIL`` log line (some failures before the handshake are told only there); a connection
        the broker's side lost no longer carries its node's throttle (``throttle``). A failure of the second
        handle's connections (``lane``) retires the second lane and says nothing of the first's throttles or first
        contact; a node it names went away for both lanes' requests (``Slot.node_lost``)."""
        if lane != FIRST:  # the second handle's connection failed (a bootstrap one, too): not used again
            self._lanes.second_failed(lost, now)
            if lost and failed_node(line) is not None:
                self._lanes.node_lost(now)
            return
        node = failed_node(line) if lost else None
        if node is not None:
            self._gate.connection_gone(node)
            self._lanes.node_lost(now)
        if not self._contact.reached:
            self._contact.failed(contact_failure(line))

    def on_results(
        self, request_id: int, results: dict[str, BaseException | None], now: float, *, controller_moved: bool = False
    ) -> None:
        """Results of topics of a request in flight, as librdkafka completed them. ``controller_moved``: the driver
        read the controller quorum's leader epoch grown since the last read before the request's send
        (``_driver/quorum_watch``), so an "already done" among them may be its broker's re-send (``outcome``)."""
        slot = self._lanes.of(request_id)
        if slot is None:
            return
        request = slot.request
        assert request is not None
        if controller_moved and request.forwarded is None and not request.kind.validate_only:
            request.forwarded = Forwarded.CONTROLLER_MOVED
        if request.first_result_at is None:
            request.first_result_at = now
        if request.answered_at is None:
            for exc in results.values():  # a plain loop: any() over a generator is two frames more, every answer
                if exc is None or is_broker_answer(exc):  # (None: applied, a broker's answer; no call)
                    request.answered_at = now
                    if not self._contact.reached:  # a broker answered, though the answer may leave a topic out
                        self._contact.answered()
                    break
        request.results.update(results)

    def on_send_refused(self, request_id: int, exc: BaseException, now: float) -> None:
        """confluent-kafka refused the call itself: final for every topic, with its reason; nothing was sent."""
        slot = self._lanes.of(request_id)
        if slot is None:
            return
        request = slot.request
        assert request is not None
        slot.free()
        self._learned.cap.ended(request.id)  # never sent: no batch cap probe out (``_complete`` ends a sent one's)
        if slot.lane != FIRST:
            self._lanes.retire()
        self._out += request.throttle_events(answered=False)
        in_flight = [topic for topic in request.topics if topic.state is TopicState.IN_FLIGHT]
        self._end(in_flight, Ending.SEND_REFUSED, now, exc=exc)

    def on_send_cut_short(self, request_id: int, *, handed: bool, now: float, retire: bool = True) -> None:
        """The driver's send of ``request`` was cut short (Ctrl-C, a signal handler, close() from inside the turn):
        ``handed`` False, confluent-kafka's call certainly did not run (the topics go back to the queue, this
        attempt uncounted); True, it may have, and the request counts as handed over with its answer lost (its
        topics' outcome unknown, the slot held until the connection is known to be free: rule b). On the second
        lane (``lanes``), either retires it (the driver reports a second handle it could not make as not handed),
        unless ``retire`` False: the driver took back, before it began, a request of a call whose caller gave up."""
        slot = self._lanes.of(request_id)
        if slot is None:
            return
        request = slot.request
        assert request is not None
        if slot.lane != FIRST and retire:
            self._lanes.retire()
        if handed:
            self._complete(request, slot, now)  # no result: every topic's is missing; the connection may be busy
            return
        slot.free()
        self._learned.cap.ended(request.id)  # (as ``on_send_refused``)
        for node_id, throttle_s in request.events:  # other responses' throttles: this request was never sent
            self._out.append(_throttle_event(node_id, throttle_s))
        for topic in request.topics:
            if topic.state is not TopicState.IN_FLIGHT:
                continue
            if topic.cancelled:  # its caller gave up on it in flight: this attempt not sent, and none will be
                self._end([topic], Ending.CANCELLED, now)
            else:
                topic.call.move(topic, TopicState.QUEUED)

    def on_drained(self, outcome: Drained, now: float, lane: int = FIRST) -> None:
        """What became of the sentinel sent for a ``Drain`` action (``connection``) on the ``lane``'s connection."""
        if outcome is Drained.ANSWERED:
            self._contact.answered()  # a broker answered this client
        self._lanes.slots[lane].drained(outcome, now)

    def on_probe(self, answered: bool, now: float, lane: int = FIRST) -> None:
        """A probe's outcome (``Probe``): a broker answered it (even with an error), or not. The first lane's is the
        contact probe; the second's says whether that connection reaches the cluster (``lanes``)."""
        if lane == FIRST:
            self._contact.probed(answered)
        else:
            self._lanes.probed(answered)

    def on_metadata(self, counts: dict[str, int] | None, now: float, default_partitions: int | None = None) -> None:
        """Partition counts by topic (None: the read failed, and costs not known are taken as 1), and the cluster's
        default partition count if it was read (what a create with -1 partitions makes, and is charged)."""
        default, stale = self._metadata.answered(counts, default_partitions)
        for call in self._queue.calls.values():
            operation = call.kind.operation
            for topic in call.queued.values():
                # a grow or delete held behind its name: costed once the call before it is done (``_cost_behind``),
                # and one let go while this read was out, by a read after it
                if topic.cost is not None or (topic.state is _HELD and operation is not CREATE_TOPICS) or stale(topic):
                    continue
                if operation is CREATE_TOPICS:
                    cost_with_default(topic, default)
                elif counts is None:
                    topic.cost = 1
                else:
                    topic.cost = operation.cost_from_metadata(topic.item, counts.get(topic.name))

    def on_views(self, views: BrokerViews, now: float) -> None:
        """Every broker's Metadata for the topics asked about (a ``ReadViews`` action); see ``visibility``."""
        visible = self._views.answered(list(self._queue.calls.values()), views, now)
        runs = _by_call(visible)
        _settle_applied(runs, (), self._views, self._queue, self._metadata, self._out, now)  # (attempts booked)

    def close(self, now: float) -> None:
        """Fail everything pending: queued topics were not sent; in-flight ones may have been applied."""
        if self._late.held is not None:  # an answer taken already: what it said
            self._settle_answered(*self._late.take(), now)
        self._closed = True
        for slot in self._lanes.slots:
            if (request := slot.request) is not None:  # its responses' throttles still count (KIP-124), answered
                self._out += request.throttle_events(answered=False)  # or not, and its 89s so far (rule g)
                if refused := _quota_refusals(request):
                    self._out.append(QuotaViolations(request.kind.operation.name, refused))
        for call in list(self._queue.calls.values()):
            self._end([*call.queued.values(), *call.in_flight.values(), *call.awaiting.values()], Ending.CLOSED, now)
        for slot in self._lanes.slots:
            if (request := slot.request) is not None:
                self._learned.cap.ended(request.id)  # (no probe out once closed)
            slot.free()

    # -- the decision -----------------------------------------------------------------------------

    def step(self, now: float) -> Outbox:
        """Decide what can be decided at ``now``; returns (and clears) everything to do, in order (``actions``)."""
        if not self._closed:
            # each guarded by what it reads (a call fewer each, every step: issue 39)
            if self._late.held is not None:  # before anything looks at its topics (a deadline: rule e)
                self._settle_answered(*self._late.take(), now)
            lanes = self._lanes
            for request, slot in lanes.done(now):
                self._complete(request, slot, now)
            if self._contact.auth and (error := self._contact.auth_error(now, AUTH_ERROR_TTL_S)) is not None:
                self._end(_unapplied(self._queue.calls), Ending.AUTH_FAILED, now, error=error)  # applied ones stay
            drains, drain_at = lanes.drain(now)
            self._out += drains  # rule b: the sentinel that tells when a connection is free, if one is due
            # (none pending, as after a lone call's answer: nothing to expire, no call)
            wake_at = min(self._expire(now), drain_at) if self._queue.calls else drain_at
            if not self._contact.reached:
                wake_at = min(wake_at, self._first_contact(now))
            wake_at = min(wake_at, lanes.settles_at())
            if self._queue.calls:  # (none pending, as after a lone call's answer: nothing to send, no call)
                # the first lane's connection when free; then a second request beside a bulk one (``lanes``)
                for slot in lanes.senders(self._contact.reached, self._learned.pacer is not None, self._gate, now):
                    wake_at = min(wake_at, self._next_request(slot, now))
                if lanes.probe_asked:  # (the second lane's connection, before its first request: ``lanes``)
                    lanes.probe_asked = False
                    self._out.append(Probe(SECOND))
            if self._late.held is not None:  # settled after the next request, at once; if none went, now
                wake_at = now
                if lanes.first.request is None:
                    self._settle_answered(*self._late.take(), now)
            # after the sending, which may settle queued topics: nothing is read about a topic settled in this step
            read, read_at = self._views.plan(self._queue.calls.values(), now)
            if read is not None:
                self._out.append(ReadViews(read))
            self._out.append(WakeAt(min(wake_at, read_at)))
        out, self._out = Outbox.of(self._out), []
        return out

    # -- settling ---------------------------------------------------------------------------------

    def _first_contact(self, now: float) -> float:
        """Until a broker has answered: ask the contact probe (at the start, and again while connections fail and
        calls wait: a broker that comes up is noticed), and fail the topics of calls that have waited
        FIRST_CONTACT_TIMEOUT_S for a connection that keeps failing before its handshake (at once for a listener of
        the other protocol). Nothing of theirs was handed over. Returns when to look again."""
        wake_at = math.inf
        failure = self._contact.failure
        ask_at = self._contact.probe_at(bool(self._queue.calls), FIRST_CONTACT_TIMEOUT_S)
        if ask_at is not None:
            if now < ask_at:
                wake_at = ask_at
            else:
                self._contact.asked(now)
                self._out.append(Probe())
        if failure is None:
            return wake_at
        for call in list(self._queue.calls.values()):
            if not call.queued:
                continue
            give_up_at = call.spec.started_at + (0.0 if failure.definite else FIRST_CONTACT_TIMEOUT_S)
            if now < give_up_at:
                wake_at = min(wake_at, give_up_at)
                continue
            self._end(list(call.queued.values()), Ending.CANNOT_CONNECT, now)
        return wake_at

    def _expire(self, now: float) -> float:
        """Settle what is past its call's deadline; returns the next deadline (rule e)."""
        next_deadline = math.inf
        for call in list(self._queue.calls.values()):
            if call.spec.deadline > now:
                next_deadline = min(next_deadline, call.spec.deadline)
                continue
            self._end(list(call.queued.values()), Ending.DEADLINE, now)
            # sent, not answered: it may or may not have been applied
            why, because = "no response by the deadline", OutcomeUnknownReason.NO_RESPONSE
            self._end(list(call.in_flight.values()), Ending.ANSWER_LOST, now, why=why, because=because)
            self._end(list(call.awaiting.values()), Ending.DEADLINE, now)  # applied, not yet shown by every broker
        return next_deadline

    def _end(
        self,
        topics: list[Topic],
        ending: Ending,
        now: float,
        *,
        exc: BaseException | None = None,
        error: KafkaError | None = None,
        throttle_ms: int = 0,
        why: str = "",
        because: NotSentReason | OutcomeUnknownReason | None = None,
        forwarded: Forwarded | None = None,
    ) -> None:
        """Settle each of ``topics`` with the error its ending and its attempts call for (``outcome``: rule f), a
        call's run of them at once (``_settle``: one at a time cost half again as much at a bulk call's deadline);
        ``why`` says why in words, ``because`` typed. A call's topics come in a row (``_by_call``), their names
        distinct (``submit``), and each run is settled before the next one's errors are made: a name one lets go
        (rule a) is seen by the next, as when each topic was settled alone. Within a run, a topic with no attempts
        whose state and reason are the last such topic's gets a copy of its error (``outcome.copied``: the rules
        name no topic that has none, but where ``NAMES_THE_TOPIC``), not one made anew: the last of a 50,000-topic
        call's futures came 0.47 s after its deadline, 0.22-0.23 s so (``benchmarks/deadline.py``)."""
        reached, failure, busy = self._contact.reached, self._contact.failure, self._lanes.first.busy
        alike = ending not in NAMES_THE_TOPIC  # (topics with no attempts: one error's words for each state and why)
        for call, run in _by_call(topics):
            operation, timeout_ms = call.kind.operation.name, call.spec.timeout_ms
            excs: list[BaseException | None] = []
            last: tuple[TopicState, str, object, BaseException] | None = None  # the last such error, and its state
            for topic in run:
                if ending is Ending.DEADLINE:
                    why, because = why_not_sent(reached, topic.state is _HELD, self._views.reads_ids(topic), busy)
                fresh = alike and not topic.history and topic.lagging is None
                if fresh and last is not None and last[0] is topic.state and last[2] is because and last[1] == why:
                    excs.append(copied(last[3]))
                    continue
                facts = Facts(
                    operation,
                    topic.name,
                    timeout_ms,
                    now,
                    exc,
                    error,
                    throttle_ms,
                    why,
                    failure,
                    topic.lagging,
                    because,
                    forwarded,
                )
                made = settle_error(ending, topic.state, topic.past, facts)
                if fresh:
                    last = (topic.state, why, because, made)
                excs.append(made)
            _settle(call, run, excs, self._views, self._queue, self._metadata, self._out, now)

    # -- a response -------------------------------------------------------------------------------

    def _complete(self, request: Request, slot: Slot, now: float) -> None:
        """The request in flight in ``slot`` is done: answered whole or in part, abandoned, or cut short after it
        may have been handed over. Every topic still in flight gets its verdict (``verdict``: rule f), and what the
        answer teaches (the connection, the throttle, the batch cap, Redpanda's charge, the round trip, the pacer's
        rate) is learned. A throttle, or a second lane's request that got no answer, retires the second lane."""
        slot.free()
        names = list(map(_NAME, request.topics))  # each topic's result, read in C (issue 39)
        results = dict(zip(names, map(request.results.get, names, repeat(_MISSING)), strict=True))
        answered = request.answered_at is not None
        if answered:  # on_results told the contact, and an answered request leaves nothing on its connection
            self._out.append(_REACHED)
        else:
            _unanswered(request, results, self._contact, slot, self._out, now)
        self._out += request.throttle_events(answered=answered)  # KIP-124: each response's throttle, once
        throttle_s = request.throttle_s if answered and request.events else 0.0  # (events: any throttle told)
        operation = request.kind.operation.name
        outcomes = _outcomes(results, operation, throttled=throttle_s > 0)
        split = self._learned.batch_cap(request, outcomes)
        response = Response(results, outcomes, throttle_s, split=split, forwarded=request.forwarded)
        charged = 0
        if answered:
            response.throttle_s, charged = self._learned.redpanda(request, results, outcomes, throttle_s)
            if response.throttle_s > throttle_s:  # Redpanda's charge: waited out as a throttle
                self._gate.record(-1, response.throttle_s, now)
        self._lanes.ended(slot, answered, response.throttle_s, outcomes)  # a throttle retires the second lane
        accepted = _progress(request.topics, outcomes)
        if any(map(_GUESSED, request.topics)) and (guessed := _made_with_a_guess(request.topics, outcomes)):
            self._metadata.read_back(guessed)
        # (held only from ``from_topics`` topics: most answers are not asked)
        late = len(request.topics) >= self._late.from_topics and self._late.hold(request, response, now)
        retried = not late and self._settle_answered(request, response, now)
        if answered:  # Redpanda's refused topics are charged all the same: the pacer's mirror counts them
            self._learned.answered(request, results, charged + accepted, response.throttle_s, now)
            self._contact.auth = None  # a broker answered: an authentication failure is over
            slot.answered(request, outcomes.values(), now)  # a failover's refusal: committed later, perhaps
        spoke = answered and not _SPEAKS_FOR_QUOTA.isdisjoint(outcomes.values())
        probe = request.id == self._gate.probe_id  # (most requests are none: no call)
        if probe and self._gate.completed(request.id, spoke_for_quota=spoke) and self._learned.pacer is not None:
            self._learned.pacer.connection_renewed(response.throttle_s, now)  # the debt the fresh answer disproved
        self._out += _answer_events(operation, accepted, retried)

    def _settle_answered(self, request: Request, response: Response, now: float) -> bool:
        """Carry out each topic's verdict (a topic no longer in flight was settled already: its deadline passed,
        or authentication failed), as ``after_answer`` decides: queued again, settled, or applied (resolved now, or
        once every broker shows it: wait_for_metadata). True when any topic is queued again (a retry)."""
        if (runs := _applied_runs(request, response)) is not None:  # every topic applied (a bulk call's answer)
            attempt = (Attempt(request.id, request.sent_at, now, Outcome.SUCCESS),)
            _settle_applied(runs, attempt, self._views, self._queue, self._metadata, self._out, now)
            return False
        retried = False
        for topic in request.topics:
            if topic.state is not _IN_FLIGHT:
                continue
            outcome, exc = response.outcomes[topic.name], response.results[topic.name]
            throttle_ms = int(response.throttle_s * 1000 + 0.5) if outcome is _THROTTLED else 0
            topic.history += (Attempt(request.id, request.sent_at, now, outcome, exc, throttle_ms),)
            decided = verdict(
                outcome,
                split=response.split,
                cancelled=topic.cancelled,
                cannot_connect=self._contact.failure is not None,
                outcome_unknown=topic.outcome_unknown,
            )
            if decided is Verdict.THROTTLED:
                self._out.append(QuotaViolations(topic.call.kind.operation.name, 1))
            elif decided is Verdict.RETRY and not_controller(exc):
                self._metadata.refresh = True
            decision = self._after.decide(topic, decided, response, self._learned.round_trip, now)
            if isinstance(decision, Requeue):
                topic.not_before = topic.not_before if decision.not_before is None else decision.not_before
                topic.call.move(topic, TopicState.QUEUED)
                retried = True
            elif isinstance(decision, Finish):
                self._end(
                    [topic], decision.ending, now, exc=decision.exc, why=decision.why, forwarded=decision.forwarded
                )
            elif topic.call.spec.wait_for_metadata and not topic.call.kind.validate_only:
                topic.call.move(topic, TopicState.AWAITING_VISIBILITY)
                self._views.applied(now)
            else:
                _settle(topic.call, (topic,), (None,), self._views, self._queue, self._metadata, self._out, now)
        return retried

    # -- the next request -------------------------------------------------------------------------

    def _next_request(self, slot: Slot, now: float) -> float:
        """Compose the next request for ``slot``'s connection into the outbox, or ask for metadata; returns when to
        look again. Nothing is sent while a throttle lasts (KIP-219), while the connection may carry an abandoned
        request (rule b), before first contact allows it, while costs are unknown, or while the pacer holds the head
        of the queue back."""
        calls = self._queue.calls
        if not calls:
            return math.inf
        gate_s = self._gate.remaining_s(now)
        first = next(iter(calls.values())).kind.operation.name
        if (waited := self._gate.note_wait(gate_s > 0, first, now)) is not None:
            self._out.append(BackedOff(*waited))  # local back-off time: how long queued work waited for the throttle
        if gate_s > 0:
            return self._hold_back(gate_s, None, now)
        if slot.busy:
            return math.inf  # rule b: woken by the sentinel's outcome (or a deadline)
        head = self._queue.head(now, self._views.reads_ids)
        if head is None:
            return self._queue.next_eligible(now, self._views.reads_ids)
        if (
            not self._contact.reached
            and (wake_at := self._contact.hold(head.call.spec.started_at, now, FIRST_CONTACT_TIMEOUT_S)) is not None
        ):  # (reached, as most of the time: nothing held, no call)
            return wake_at  # first contact: hand over only what librdkafka may be able to write
        return self._send_or_hold(head, slot, now)

    def _send_or_hold(self, head: Topic, slot: Slot, now: float) -> float:
        """The head of the queue may go: compose a request of its kind, unless costs are to be read first or the
        pacer holds it back. Returns when to look again."""
        kind = head.call.kind
        pacer = self._learned.pacer
        topics, pending_cost = self._queue.eligible(
            kind, now, self._views.reads_ids, None if pacer is None else pacer.horizon
        )
        # one topic, the cheapest, first: a throttle whose connection is gone (the second lane's connection goes only
        # once it has answered its probe: ``lanes``)
        if probe := self._gate.probe_due(now):
            topics = [min(topics, key=lambda topic: (topic.cost is None, topic.cost or 0))]
        if self._metadata.refresh or None in map(_COST, topics):  # (read in C: every request)
            # costs not yet known, or metadata to refresh (after NOT_CONTROLLER): a read off the deadline-keeping
            # path (expiry goes on meanwhile), waited for
            if self._metadata.ask():
                self._out.append(ReadMetadata())
            return math.inf
        if pacer is not None and not probe:  # the probe tests its debt
            time_left_s = _time_left_s(self._queue.calls.values(), kind, now)
            if (wait_s := pacer.wait_s(head.cost or 0, pending_cost, now, time_left_s)) > 0:
                return self._hold_back(wait_s, kind, now)
        return self._compose(kind, topics, pending_cost, slot, now, probe)

    def _hold_back(self, wait_s: float, paced: RequestKind | None, now: float) -> float:
        """Nothing goes for ``wait_s``; returns when to look again. A call that cannot wait fails its queued topics
        at once as throttled, without sending them (counted as quota violations): behind the broker's throttle
        (``paced`` None: KIP-219), one whose retry is off or whose deadline comes first (Java would sleep through
        it for nothing); behind the pacer, one of the ``paced`` kind whose deadline comes first. A topic the broker
        refused with 89 in this same step was counted then (rule g: one violation per refusal)."""
        throttle_ms = int(wait_s * 1000 + 0.5)
        for call in list(self._queue.calls.values()):
            if not call.queued or (paced is not None and call.kind != paced):
                continue
            retries = paced is not None or call.spec.retry_on_quota_violation
            if retries and wait_s < call.remaining_s(now):
                continue
            queued = list(call.queued.values())
            if refused_here := sum(not _refused_by_the_broker_at(topic, now) for topic in queued):
                self._out.append(QuotaViolations(call.kind.operation.name, refused_here))
            # an earlier throttle of the topic's own, if longer, is the one it is told
            self._end(queued, Ending.THROTTLED_HERE, now, throttle_ms=throttle_ms)
        return now + wait_s

    def _compose(
        self, kind: RequestKind, candidates: list[Topic], pending_cost: float, slot: Slot, now: float, probe: bool
    ) -> float:
        """Put the next request for ``slot``'s connection in the outbox: the candidates (queued, sendable, of one
        kind, in call order) that fit it (``_choose``), with the timeouts their calls allow (``_timeouts``);
        ``pending_cost``: what the pacer paces (``WorkQueue.eligible``); ``probe``: the gate asks for a probe
        (``ThrottleTracker.probe_due``). Returns when to look again."""
        # The round-trip floor for a first attempt and for a retry, computed once for the whole request.
        estimates = self._learned.round_trip.estimates(now)
        chosen, mutations, records, longest = self._choose(candidates, pending_cost, estimates, now)
        if not chosen:
            return now
        margin_s = max(_MIN_MARGIN_S, estimates[MIN_SAMPLES][0])  # the controller's deadline ends this early
        # until a broker has answered, a request's librdkafka verdict comes before its deadline (first contact)
        request_timeout_s, operation_timeout_s = _timeouts(chosen, longest, margin_s, now, self._contact.reached)
        refs: list[TopicRef] = []
        for call, topics in _by_call(chosen):
            call.move_all(topics, _IN_FLIGHT)
            refs += map(_new_ref, zip(repeat(call.id), map(_NAME, topics)))
        request = slot.hand_over(kind, chosen, mutations, (request_timeout_s, operation_timeout_s), now)
        request_id = request.id
        self._learned.cap.sent(request_id, records, len(chosen))  # above the limit: the batch cap's probe
        if probe:  # (most requests are none: no call)
            self._gate.sent(request_id, probe)
        items = tuple(map(_ITEM, chosen))
        timeouts = request_timeout_s, operation_timeout_s
        direct = self._lanes.direct(len(chosen), self._learned.pacer is not None)
        self._out.append(Send(request_id, kind, tuple(refs), items, mutations, *timeouts, slot.lane, direct))
        operation, count = kind.operation.name, len(chosen)
        self._out.append(RequestSent(operation, count, mutations, request_id))
        return request.expires_at  # (``Slot.settles_at`` of a request with no result yet)

    def _choose(
        self, candidates: list[Topic], pending_cost: float, estimates: dict[int, tuple[float, float]], now: float
    ) -> tuple[list[Topic], int, int, float]:
        """The topics of the next request, in order, within the pacer's budget and the batch cap; a topic that can
        no longer be answered before its deadline is settled instead (``_too_late``), and one whose call's time
        budget is far from the others' waits for a request of its own (rule c). Returns the topics, their
        mutations and records, and the longest time budget of their calls."""
        budget = math.inf
        pacer = self._learned.pacer
        if pacer is not None and candidates:
            budget = pacer.batch_budget(now, pending_cost)
        chosen: list[Topic] = []
        mutations = records = 0
        shortest = longest = 0.0  # the time budgets of the calls chosen (rule c)
        last_call: Call | None = None
        time_s = 0.0
        times = (0.0, 0.0)
        lateness: _TooLate = functools.partial(_too_late, self._contact.reached)  # (first contact: once a request)
        too_late = lateness
        cap = self._learned.cap.next_limit()  # twice the limit when a probe is due (``batch_cap``)
        for topic in candidates:
            cost = topic.cost or 0
            if chosen and (mutations + cost > budget or records + topic.records > cap):
                break
            call = topic.call
            if call is not last_call:  # a call's topics are in a row: its times once
                last_call, times = call, call.times(now)
                time_s = times[1]
                too_late = _asked_per_topic(lateness, estimates, len(candidates), times, now)
            late = too_late(bool(topic.history), estimates, len(chosen) + 1, times, now)
            if late is not None:
                self._end([topic], late[0], now, why=late[1], because=late[2])
                continue
            if not chosen or chosen[-1].call is not call:  # the last one chosen of its call: its budget is in
                if chosen and max(longest, time_s) > COALESCE_RATIO * min(shortest, time_s):
                    continue  # rule c: its budget is far from the others'; it goes in a request of its own
                shortest = time_s if not chosen else min(shortest, time_s)
                longest = max(longest, time_s)
            chosen.append(topic)
            mutations += cost
            records += topic.records
        return chosen, mutations, records, longest


def _too_late(
    reached: bool,
    retry: bool,
    estimates: dict[int, tuple[float, float]],
    size: int,
    times: tuple[float, float],
    now: float,
) -> tuple[Ending, str, NotSentReason | None] | None:
    """Send nothing that cannot be answered in time: before its deadline (it would be applied after the caller
    was told it failed), and within its time budget, which the caller's request_timeout caps (librdkafka drops
    a later answer). ``reached``: a broker has answered (first contact); ``retry``: the topic has been sent before;
    ``times``: its call's time left and its budget.
    Returns how the topic ends, and why it was not sent, if it is too late for a request of ``size`` topics
    (else None).

    A first attempt is refused only on a robust estimate (rule d: no lockout); a retry is not sent when any
    recent answer says it cannot come back in time (the caller gets the broker's last word instead)."""
    remaining_s, budget_s = times
    base_s, per_topic_s = estimates[1 if retry else MIN_SAMPLES]
    expected_s = base_s + per_topic_s * size
    kept_s = max(_MIN_MARGIN_S, base_s)
    if not reached and remaining_s <= CONTACT_VERDICT_MARGIN_S + kept_s:
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


# ``_too_late`` once first contact is given: (retry, estimates, request size, the call's time left and budget,
# now) -> how it ends, or None
_Lateness = tuple[Ending, str, NotSentReason | None] | None
_TooLate = Callable[[bool, dict[int, tuple[float, float]], int, tuple[float, float], float], _Lateness]


def _never_late(
    retry: bool, estimates: dict[int, tuple[float, float]], size: int, times: tuple[float, float], now: float
) -> None:
    return None


def _asked_per_topic(
    too_late: _TooLate, estimates: dict[int, tuple[float, float]], size: int, times: tuple[float, float], now: float
) -> _TooLate:
    """What ``Engine._choose`` asks of each topic of a call: ``too_late``, unless the call's topics are in time for a
    request of ``size`` (the largest it can make), sent before or not; then in time for any smaller one (a
    request's expected time grows with its size), and no topic needs asking."""
    if size == 1:  # its one topic is asked once, as it is (the answer is the same: issue 39)
        return too_late
    if too_late(False, estimates, size, times, now) is None and too_late(True, estimates, size, times, now) is None:
        return _never_late
    return too_late


def _time_left_s(calls: Iterable[Call], kind: RequestKind, now: float) -> float:
    """The shortest time left of the calls with topics of ``kind`` queued: the pacer holds none of them for company
    past a share of it (``pacer._GATHER_SHARE``), so that ``Engine._hold_back`` fails nothing the pacer itself would
    have let go."""
    left_s = math.inf
    for call in calls:
        if call.queued and call.kind == kind:
            left_s = min(left_s, call.remaining_s(now))
    return left_s


def _timeouts(chosen: list[Topic], longest: float, margin_s: float, now: float, reached: bool) -> tuple[float, float]:
    """The request's librdkafka timeout and its controller deadline (``operation_timeout``), in seconds.

    Sharing never hurts (rule c): the request carries what the longest call would carry alone. librdkafka waits
    for the answer as long as that call would (each call's topics are still settled at its own deadline), and
    the controller's deadline is that call's own, ``margin_s`` early (capped by its caller's operation_timeout),
    so a controller busy past a shorter call's deadline still applies the request, as it would that call's
    alone: the shorter call is told "outcome unknown" at its deadline, never "not sent"."""
    # the calls of the request (a call's topics are in a row: one call's request, no dict of them)
    calls = [chosen[0].call] if chosen[0].call is chosen[-1].call else [call for call, _ in _by_call(chosen)]
    request_timeout_s = max(_MIN_OPERATION_TIMEOUT_S, min(longest, _LIBRDKAFKA_MAX_TIMEOUT_S))
    if not reached:  # librdkafka's verdict comes before the (shortest call's) deadline
        remaining_s = min(call.remaining_s(now) for call in calls)
        request_timeout_s = min(request_timeout_s, remaining_s - CONTACT_VERDICT_MARGIN_S)
    longest_own_s = max(map(_own_operation_timeout_s, calls, repeat(margin_s), repeat(now)))  # (no frame for a list)
    operation_timeout_s = min(longest_own_s, request_timeout_s - margin_s)
    operation_timeout_s = max(_MIN_OPERATION_TIMEOUT_S, min(operation_timeout_s, _LIBRDKAFKA_MAX_TIMEOUT_S))
    return request_timeout_s, operation_timeout_s


def _own_operation_timeout_s(call: Call, margin_s: float, now: float) -> float:
    """The controller deadline a call would carry alone: its time budget, ``margin_s`` early, capped by its caller's
    own operation_timeout. A caller's operation_timeout of 0 (confluent-kafka's "do not wait") is no cap: a Kafka 4
    controller refuses a request whose timeout_ms is 0 at once (REQUEST_TIMED_OUT, nothing applied), and answers
    after the commit whatever the timeout, so the controller deadline derived from the call's deadline stays."""
    own_s = call.times(now)[1] - margin_s  # its budget
    cap_s = call.spec.operation_timeout_s
    return min(own_s, cap_s) if cap_s else own_s


def _unanswered(
    request: Request,
    results: dict[str, BaseException | None],
    contact: Contact,
    slot: Slot,
    out: list[Action],
    now: float,
) -> None:
    """``Engine._complete`` of a request no broker answered: written, it reached a broker; what its end leaves on the
    connection (rule b)."""
    if any(was_written(exc) for exc in results.values()):
        contact.answered()  # the request was written
        out.append(_REACHED)
    slot.ended(request, results, False, now)


def _unapplied(calls: dict[int, Call]) -> list[Topic]:
    """The topics of ``calls`` not applied yet: queued (held too) and in flight, call by call."""
    return [topic for call in list(calls.values()) for topic in [*call.queued.values(), *call.in_flight.values()]]


_APPLIED_ONLY = {Outcome.SUCCESS}
# a topic's snapshot as the request carries it, its name, whether its cost was guessed, its cost, its state: read in C
# (issue 39)
_ITEM, _NAME, _GUESSED = operator.attrgetter("item"), operator.attrgetter("name"), operator.attrgetter("guessed")
_COST, _STATE = operator.attrgetter("cost"), operator.attrgetter("state")
_new_ref = functools.partial(tuple.__new__, TopicRef)  # TopicRef((call id, name)), made in C (its __new__ is Python)


def _applied_runs(request: Request, response: Response) -> list[tuple[Call, list[Topic]]] | None:
    """When the broker applied every topic of ``request`` and no call of it waits for metadata: its topics still in
    flight, a run for each call in request order; else None (``Engine._settle_answered`` decides topic by topic)."""
    if set(response.outcomes.values()) != _APPLIED_ONLY:
        return None
    topics = request.topics  # those still in flight (read in C)
    runs = _by_call(list(compress(topics, map(operator.is_, map(_STATE, topics), repeat(_IN_FLIGHT)))))
    for call, _ in runs:
        if call.spec.wait_for_metadata and not call.kind.validate_only:
            return None  # applied topics await every broker's Metadata
    return runs


def _by_call(topics: list[Topic]) -> list[tuple[Call, list[Topic]]]:
    """``topics`` in runs of one call each, in order. A call's topics must be in a row: they are in a request, and in
    what a read of the brokers' views shows (``ViewReads.answered`` walks each call once)."""
    if not topics or topics[0].call is topics[-1].call:  # one call's (most requests)
        return [(topics[0].call, topics)] if topics else []
    runs: list[tuple[Call, list[Topic]]] = []
    last: Call | None = None
    for topic in topics:
        if topic.call is not last:
            last = topic.call
            runs.append((last, []))
        runs[-1][1].append(topic)
    return runs


def _settle_applied(
    runs: list[tuple[Call, list[Topic]]],
    attempt: tuple[Attempt, ...],
    views: ViewReads,
    queue: WorkQueue,
    metadata: MetadataReads,
    out: list[Action],
    now: float,
) -> None:
    """``_settle`` of applied topics, a call's run at once (issue 40: one at a time was most of an answer's cost),
    each attempt booked first (``attempt``, alike for all: frozen, shared; none for topics a read of the brokers'
    views shows, booked when answered)."""
    for call, topics in runs:
        if attempt:
            for topic in topics:
                topic.history = topic.history + attempt if topic.history else attempt
        _settle(call, topics, None, views, queue, metadata, out, now)


def _settle(
    call: Call,
    topics: Sequence[Topic],
    excs: Sequence[BaseException | None] | None,
    views: ViewReads,
    queue: WorkQueue,
    metadata: MetadataReads,
    out: list[Action],
    now: float,
) -> None:
    """Book the outcomes of ``topics``, ``call``'s, in order: each one's error in ``excs`` (None: applied; ``excs``
    None: all applied). Settled, their ids no longer wanted, the call's first error noted (its metric attribute),
    their futures resolved (``Settle``), their names let go to the calls waiting behind them, the call's duration
    recorded with its last topic."""
    call.move_all(topics, _SETTLED)
    views.forget_all(topics)
    if excs is None:
        out += map(Settle, repeat(call.id), map(_NAME, topics), repeat(None))
    else:
        if call.error_type is None and (first := next((e for e in excs if e is not None), None)) is not None:
            error = error_of(first)
            call.error_type = error.name() if error is not None else type(first).__name__
        out += map(Settle, repeat(call.id), map(_NAME, topics), excs)
    if queue.waiting() and not call.kind.validate_only:  # (a topic waits behind a name: rule a; a bulk call's never)
        _cost_behind(call, topics, excs, queue, metadata)
    if (finished := queue.settled_all(call, topics, now)) is not None:
        out.append(finished)


def _cost_behind(
    call: Call,
    topics: Sequence[Topic],
    excs: Sequence[BaseException | None] | None,
    queue: WorkQueue,
    metadata: MetadataReads,
) -> None:
    """A later call's grow or delete of a topic of ``call``'s waits for its name (rule a), its cost (the topic's
    partition count) not read yet (``Engine.on_metadata``): where ``call`` applied its change (answered so, even if
    settled otherwise since: not yet visible by its deadline), the count it left is known here, and costs it (a read
    now might predate the change on a broker); else it is read before it goes (``MetadataReads.let_go``)."""
    operation = call.kind.operation
    for topic, exc in zip(topics, repeat(None) if excs is None else excs, strict=False):  # (repeat: endless)
        after = queue.behind(topic.name)
        if after is None or after.cost is not None or after.call.kind.operation is CREATE_TOPICS:
            continue
        if exc is None or (topic.history and topic.history[-1].outcome is Outcome.SUCCESS):
            known, count = partitions_made(operation, topic.item, metadata.default_partitions)
            if known:
                after.cost = after.call.kind.operation.cost_from_metadata(after.item, count)


def _refused_by_the_broker_at(topic: Topic, now: float) -> bool:
    """The broker refused the topic's last attempt with 89 at ``now`` (this step): that refusal is its violation,
    not a second one when the throttle then keeps it past its deadline (rule g)."""
    return bool(topic.history) and topic.history[-1].outcome is _THROTTLED and topic.history[-1].ended_at == now


def _throttle_event(node_id: int, throttle_s: float, *, mutation: bool = False) -> ResponseThrottle:
    return ResponseThrottle(node_id, throttle_s * 1000, mutation)


# No result for the topic: the response left it out, or librdkafka never completed the request.
_MISSING = KafkaException(KafkaError(KafkaError._TIMED_OUT, "no result for the topic in the response"))


def _answer_events(operation: str, accepted: int, retried: bool) -> list[MetricEvent]:
    """An answer's metric events: the mutations it admitted, and a retry if any topic was queued again."""
    events: list[MetricEvent] = [MutationsAdmitted(operation, accepted)] if accepted else []
    if retried:
        events.append(Retried(operation))
    return events


def _outcomes(results: dict[str, BaseException | None], operation: str, *, throttled: bool) -> dict[str, Outcome]:
    """Each topic's result classified (``classify``), as an answer of ``operation`` with or without a throttle."""
    # applied (None: most results of a bulk call) needs no call; every topic applied (most answers), none at all
    if not any(results.values()):
        return dict.fromkeys(results, _SUCCESS)
    return {
        name: _SUCCESS if exc is None else classify(exc, operation=operation, throttled=throttled)
        for name, exc in results.items()
    }


def _quota_refusals(request: Request) -> int:
    """The topics of a request the broker refused for the quota, as far as its answer came (rule g)."""
    outcomes = _outcomes(request.results, request.kind.operation.name, throttled=request.throttle_s > 0)
    return list(outcomes.values()).count(_THROTTLED)


def _made_with_a_guess(topics: list[Topic], outcomes: dict[str, Outcome]) -> list[str]:
    """The creates the broker made that were costed with a guessed partition count, to be read back (``metadata``):
    whenever the answer says so, settled here already or not (its deadline, an authentication failure; rule g).
    Asked only of a request with a topic guessed (most have none: ``Engine._complete`` looks first, in C)."""
    return [t.name for t in topics if t.guessed and outcomes[t.name] is _SUCCESS and not t.call.kind.validate_only]


def _progress(topics: list[Topic], outcomes: dict[str, Outcome]) -> int:
    """The topics the broker applied reset their calls' back-offs (progress); returns their mutations (as far as
    their costs are known)."""
    accepted = 0
    for topic in topics:
        if outcomes[topic.name] is Outcome.SUCCESS:
            topic.call.quota_backoffs = topic.call.transient_retries = 0
            accepted += topic.cost or 0
    return accepted
