"""The mutation engine against a model of the cluster, on simulated time (hypothesis's stateful testing).

Random calls of all three operations over four shared names (tiny and long deadlines, retry on and off,
validate_only, cancellation, close) meet a simulated broker: KIP-599 strict and permissive with its throttles (and
librdkafka's event when one drops back to 0 before it has ended),
slow, lost, garbled and partial answers, NOT_CONTROLLER, REQUEST_TIMED_OUT, connections that die after the write,
and a cluster librdkafka never reaches (connections failing before their handshake: refused, closed in the TLS
handshake, ApiVersions unanswered, a listener of the other protocol); Redpanda's quota refusal
(UNKNOWN_SERVER_ERROR), Kafka 4's batch cap (a whole request refused with POLICY_VIOLATION, in Kafka 4.4's words or new
ones) and CreateTopicPolicy refusals; three brokers whose Metadata lags (``wait_for_metadata``, and the reads that cost
a paced grow or delete), topics deleted and created again under the same name (incarnations: topic ids); a connection
that still carries a request librdkafka gave up on (the sentinel answered, closed or never sent), sends cut short
before or after confluent-kafka's call, topics cancelled in flight, calls of close budgets sharing a request, creates
of the cluster's default partition count; a connection that carried a throttle failing (a broker restart, its debt
forgiven or not) and a request in flight lost with its node (``_TRANSPORT``, ``_DESTROY_BROKER``). A simulated
driver does what the engine's outbox says, waking it when it asks. Rules a-j of ``throttled_admin/_engine/machine.py``
are checked after every step (and at every send and settlement), against
what the model knows happened in the cluster, from what a driver sees (the outbox's sends and settlements, the
errors' types and typed reasons ``.why``, the metric events), never from the engine's state or a message's words;
each assertion names its rule ("rule b: ..."). So are the batch cap's, wait_for_metadata's and first contact's
(until a broker has answered: nothing handed over while connections fail before their handshake, each call's topics
settled FIRST_CONTACT_TIMEOUT_S after it was made when they do, librdkafka's timeout ending CONTACT_VERDICT_MARGIN_S
before the deadline, and never "outcome unknown" from a cluster whose handshake never completed)."""

from __future__ import annotations

import itertools
import math
import os
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.cimpl import NewPartitions, NewTopic
from hypothesis import HealthCheck, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.engine_records import records, submit_call
from throttled_admin import (
    ClientClosedError,
    MutationQuota,
    NotSentError,
    NotSentReason,
    NotYetVisibleError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    ThrottlingQuotaExceededException,
)
from throttled_admin._engine import SECOND, Send, TopicRef, TopicSpec, wrong_listener
from throttled_admin._engine.actions import Drain, Probe
from throttled_admin._engine.batch_cap import PROBE_AFTER
from throttled_admin._engine.classify import error_of
from throttled_admin._engine.config import MAX_TOPICS_PER_REQUEST, SETTLE_AFTER_SEND_FROM, EngineConfig
from throttled_admin._engine.connection import Drained
from throttled_admin._engine.machine import Engine, Outbox
from throttled_admin._engine.metric_events import (
    BackedOff,
    CallFinished,
    MutationsAdmitted,
    QuotaViolations,
    RecordingSink,
    ResponseThrottle,
    Retried,
)
from throttled_admin._engine.outcome import ALREADY_DONE
from throttled_admin._engine.pacer import Pacer
from throttled_admin._engine.retry import RetryBackoff
from throttled_admin._engine.slot import FORWARD_GRACE_S
from throttled_admin._engine.view_reads import AHEAD_FRESH_S
from throttled_admin._engine.visibility import (
    READ_BEFORE_DEADLINE_S,
    READ_COST_FACTOR,
    READ_WHILE_SENDING_S,
    BrokerViews,
    TopicView,
)
from throttled_admin._engine.work import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    Call,
    CallSpec,
    Operation,
    RequestKind,
    Topic,
)
from throttled_admin._kafka.token_bucket import TokenBucket

NAMES = ("a", "b", "c", "d")
OPERATIONS = {"create": CREATE_TOPICS, "delete": DELETE_TOPICS, "grow": CREATE_PARTITIONS}
EPSILON = 1e-9
RATE = 10.0  # the quota of the simulated broker, mutations/s
# Rules c and d as docs/semantics.md states them (not read from the engine, so that changing them there fails
# here): calls share a request only within a factor of two of each other's time budget; a first attempt is refused
# as "less than a round trip" only when three answers of the last 30 s say so.
COALESCE_RATIO = 2.0
MIN_SAMPLES = 3
RECENT_S = 30.0
DEFAULT_PARTITIONS = 3  # the simulated cluster's num.partitions: what NewTopic(name) (-1) makes, and is charged
FALLBACK_PARTITIONS = 1  # what a -1 create counts while num.partitions is not known (Kafka's own default)
# Kafka 4's batch cap: its two messages, a cap's refusal in words the engine never saw (a cluster of Kafka 4.5, whose
# cap is a setting: KAFKA-20976), and a policy's. The engine splits a request of several topics refused whole with
# the cap's words, or refused alike (one message) and larger than every request accepted (issue 40).
CAP_RECORDS = "Unable to perform excessively large batch operation."
CAP_PARTITIONS = "Excessively large number of partitions per request."
CAP_NEW_WORDS = "The request makes more records than max.records.per.user.op."
POLICY = "Topic name is not allowed by the cluster's CreateTopicPolicy"
REDPANDA = "Too many partition mutations requested"
BROKERS = (1, 2, 3)
LAG_DEPTH = 2  # a lagging broker is at most this many cluster changes behind
# First contact as docs/semantics.md states it (not read from the engine): how long a call waits for a connection
# that fails before its handshake, and how long before a call's deadline librdkafka's verdict is due.
FIRST_CONTACT_S = 5.0
VERDICT_MARGIN_S = 0.5
# librdkafka's reports of connections that failed before their handshake (error_cb, or only its log)
HANDSHAKE_FAILURES = {
    "refused": "127.0.0.1:9/bootstrap: Connect to ipv4#127.0.0.1:9 failed: Connection refused (after 0ms in state "
    "CONNECT)",
    "tls": "ssl://127.0.0.1:9/bootstrap: SSL handshake failed: Disconnected: SSL connection closed by peer: connecting "
    "to a PLAINTEXT broker listener? (after 1ms in state SSL_HANDSHAKE)",
    "apiversions": "[thrd:127.0.0.1:9/bootstrap]: 127.0.0.1:9/bootstrap: ApiVersionRequest failed: Local: Timed out: "
    "probably due to broker version < 0.10 (see api.version.request configuration) (after 10011ms in state "
    "APIVERSION_QUERY)",
}


def event(label: str) -> None:
    """Label what an example reached (``--hypothesis-show-statistics``); a pinned run outside hypothesis has none."""
    if currently_in_test_context():
        hypothesis_event(label)


Results = dict[str, BaseException | None]  # a request's results by topic name, as librdkafka completes it
# A request's fates after which it (or the mute after its answer) may still hold the connection: librdkafka gave up
# waiting, never completed it, could not read its answer, or its send was cut short when it may have run
ABANDONED = ("abandoned", "silent", "bad msg", "cut")
# a request whose answer reached the client (perhaps without a topic): what may leave the second lane open
ANSWERED = ("ok", "not controller", "timed out", "policy", "drop last", "resent")
# A request in flight on a node that goes away: librdkafka 2.16 fails it _TRANSPORT, earlier versions _DESTROY_BROKER
LOST_WITH_THE_NODE = {
    "transport": (KafkaError._TRANSPORT, "Local: Broker transport failure"),
    "destroy broker": (KafkaError._DESTROY_BROKER, "Local: Broker handle destroyed without termination"),
}


def _error(code: int, text: str = "") -> KafkaException:
    return KafkaException(KafkaError(code, text) if text else KafkaError(code))


@dataclass(eq=False)
class Track:
    """What the model knows of one topic of one call."""

    topic: Topic
    order: int  # submission order
    given_at: float  # when the engine was given it (a call's rest may come after the call's deadline: ``extend``)
    handed: int = 0  # requests it was handed to librdkafka in
    written: int = 0  # requests a broker received
    accepted: bool = False  # a broker accepted an attempt (applied it, or validated it under validate_only)
    answered_ok: bool = False
    settled: tuple[float, BaseException | None] | None = None
    withdrawn: bool = False
    cut_maybe_sent: bool = False  # a send of it was cut short after confluent-kafka's call may have run
    costed: bool = False  # a -1 create the engine has counted (at its submit, or at a metadata read)
    counted_as: int | None = None  # ... as this many partitions, when not the cluster's num.partitions
    guessed: bool = False  # ... while the engine knew no num.partitions (counted as 1): it is read back once applied
    cancelled: bool = False  # its caller called cancel() (withdrawn, or its attempt in flight is its last)
    answered_89_at: float | None = None
    unanswered: int = 0  # attempts handed over whose outcome the client never learned (may have been applied)
    cap_refused_with_others: bool = False  # its last answer: a request of several topics refused whole for the cap
    ids_asked: bool = False  # a wait_for_metadata create: a views read out asked about its name while it held it
    ids_read: bool = False  # ... and came back: every broker's ids of the name before its send are known
    ids_before: set[uuid.UUID | None] = field(default_factory=set)  # the ids that read showed
    # a grow or delete: costed (by a read, or from the change it was held behind: the engine costs a topic once), from
    # a read that failed (as 1) or came from a broker behind, or from a default read back wrong; or from a change the
    # client was told applied, exactly, whatever a read said before (``cost_exact`` outweighs ``cost_unsure``)
    cost_read: bool = False
    cost_unsure: bool = False
    cost_exact: bool = False


@dataclass(eq=False)
class Flight:
    """The request in flight, as the model sees it."""

    request: Send
    tracks: list[Track]
    timeout_s: float
    sent_at: float
    fate: str | None = None  # decided by the ``answer`` rule; "lost": librdkafka times it out
    applied_if_lost: bool = False
    budgets: list[float] = field(default_factory=list)
    retryable: bool = False  # a result of it is one the engine may retry
    quota_first: bool = False  # the broker checks the quota first (a 89 can follow an applied attempt)
    contact_capped: bool = False  # sent before first contact: librdkafka's verdict comes before the shortest deadline
    throttles: list[float] = field(default_factory=list)  # seconds, the throttle events delivered while in flight
    refused_89: int = 0  # its topics' 89s the client saw: violations once the engine completes the request
    lane: int = 0  # the connection it went on: the client's own (0), or the second lane's (1, ``lanes``)
    cap_probe: bool = False  # several topics above the batch cap's limit learned: a probe of a cap raised since
    # a node went away while it was in flight, or within FORWARD_GRACE_S before it was sent: its broker may have
    # forwarded it to that node as the controller, and re-send it to the next (the ``resent`` answer)
    forwardable: bool = False
    # the controller changed while it was in flight with no connection lost: the driver's quorum read says so with
    # its answer (``Engine.on_results(controller_moved=True)``, ``_driver/quorum_watch``)
    controller_moved: bool = False


#: ``EngineModel.start``'s strategies (``PacedEngineModel`` narrows some).
START: dict[str, st.SearchStrategy[Any]] = {
    "mode": st.sampled_from(["none", "strict", "permissive", "redpanda"]),
    "paced": st.booleans(),
    "seed": st.integers(0, 2**16),
    "existing": st.dictionaries(st.sampled_from(NAMES), st.integers(1, 3), max_size=4),
    "cap": st.sampled_from([None, None, 4, 7]),  # 7: refused in new words (``over_the_cap``)
    "reached": st.sampled_from([True, True, True, False, "unreachable"]),
    "per_request": st.sampled_from([None, 1, 2]),
    "bulk": st.sampled_from([None, "create", "delete", "delete", "grow"]),
    "settle_late_from": st.sampled_from([SETTLE_AFTER_SEND_FROM, 1]),
    "lanes": st.booleans(),
    "lane_answers": st.sampled_from([True, True, False]),
    "cap_probe_after": st.sampled_from([PROBE_AFTER, 1, 2]),
}


def start_rule(**narrowed: st.SearchStrategy[Any]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``initialize`` with ``START``'s strategies, ``narrowed`` replacing some (``PacedEngineModel``)."""
    strategies: Any = {**START, **narrowed}  # (none is initialize's own target or targets)
    return initialize(**strategies)


class EngineModel(RuleBasedStateMachine):
    """The specification of the engine, as hypothesis drives it. Rules draw what happens: calls (``submit``,
    ``withdraw``, ``close``), the broker's answers (``answer``, ``no_answer``, ``send_cut_short``), reads
    (``metadata``, ``views``, ``drained``, ``probe``), disruptions, and time (``advance``). The simulated driver
    (``step``, ``apply``) does what the engine's outbox says; the simulated cluster (``cluster_apply`` and its
    helpers) decides what a KRaft broker would. Each rule of the engine is one named check where it happens
    (``check_*`` at every send and settlement) or an invariant after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 1000.0
        self.sink = RecordingSink()
        self.tracks: list[Track] = []
        self.rest: tuple[int, list[TopicSpec]] | None = None  # a call given in two parts: its id and its rest, to come
        self.by_topic: dict[TopicRef, Track] = {}
        self.flights: dict[int, Flight] = {}  # lane -> the request in flight on its connection (rule b)
        self.focus = 0  # the lane whose request the rule at hand acts on (``flight``)
        self.second_from: int | None = None  # the engine's second lane opens beside a request this large
        # the second lane may not go again: a throttle was seen (a response's, or a topic refused for the quota), or
        # a request of the second lane went unanswered (``lanes``: the engine retires it then, at the latest)
        self.lane_retired = False
        self.second_answered = False  # a request on the second lane's connection was answered (its first contact)
        self.cluster: dict[str, int] = {}
        self.bucket: TokenBucket | None = None
        self.mode = "none"
        self.gates: dict[int, float] = {}  # node id -> when the throttle its live connection carries ends
        self.lost_at = {0: -math.inf, SECOND: -math.inf}  # lane -> when its handle last reported a node gone
        self.gone: dict[
            int, float
        ] = {}  # node id -> the end of a throttle whose connection failed, no fresh answer yet
        self.round_trips: list[tuple[float, float]] = []  # (answered at, seconds) of whole answers
        # ms, the throttle events the engine must have recorded by now: a request's once it completed, another
        # method's at once, in that order (rule g)
        self.recorded_throttles: list[float] = []
        self.answers_89 = 0
        self.local_refusals = 0
        self.maybe_local_refusals = 0  # a hopeless retry after a 89: held for a throttle, or too late (rule d)
        self.retries_at_least = 0
        self.retries_at_most = 0
        self.metadata_wanted = False
        # the topics (by ``order``) held behind their name (rule a) at some time while the metadata read out was: that
        # read cannot cost one let go meanwhile (``MetadataReads.let_go``), a later one does
        self.held_while_reading: set[int] = set()
        self.probe_wanted = False
        self.lane_answers = False  # the second lane's probe is answered as it is asked (else the rule ``lane_probe``)
        self.lane_probe_wanted = False  # the second lane's connection is to be probed before its first request
        self.call_operations: dict[int, str] = {}  # each call's operation, by its id
        self.whole_calls: set[int] = set()  # calls the engine has been given whole (a call in two parts: its rest too)
        self.first_errors: dict[int, str] = {}  # each call's first failure's type, as its futures were settled
        self.finished_calls: list[int] = []  # calls seen whole and settled, in the order seen
        self.closed = False
        self.reached = False  # a broker has answered this client (or a request of it was written)
        self.answered = False  # a broker has answered this client (certainly: an answer, the probe, a throttle)
        self.unreachable = False  # no connection of the client ever completes its handshake: nothing is written
        self.contact_failing = False  # librdkafka reported a connection that failed before its handshake
        self.wrong_listener = False  # ... and the client found the listener to speak the other protocol
        self.wake_at = math.inf
        self.cap: int | None = None  # the cluster's batch cap (records per request)
        self.new_words = False  # the cap's refusals in words the engine never saw (a Kafka 4.5 cluster)
        self.smallest_refused = math.inf  # records of the smallest request of several topics refused in the cap's words
        # refused alike and larger than every request accepted, taken for the cap by its shape: the smallest such
        # request's records, by the refusal's words, until a lone topic refused in those words proves them a policy's
        self.refused_by_shape: dict[str, float] = {}
        # the engine's limit before the shape first took each such message for the cap's: where it goes back to
        self.limit_before_shape: dict[str, int] = {}
        self.limit_restored_to: int | None = None  # set by a lone topic's proof, checked once the engine had the answer
        self.policy_words: set[str] = set()  # words a lone topic was refused in after the shape took them for the cap's
        self.largest_accepted = 0  # records of the topics applied by the largest answered request that applied any
        self.applied_since_cap_refusal = 0  # answers that applied a topic since the last refusal for the cap
        self.cap_probe_after = PROBE_AFTER  # the engine's: accepted requests before a lowered limit is tried at twice
        self.ids: dict[str, uuid.UUID] = {}  # each topic's id: a new one for every create (its incarnation)
        # The cluster (partitions, ids) before each of its last LAG_DEPTH changes, oldest first: what a broker that
        # many changes behind shows (a KRaft broker replays the metadata log in order)
        self.history: list[tuple[dict[str, int], dict[str, uuid.UUID]]] = []
        self.last_views_current = False  # a broker of the last views read was up to date
        self.new_ids = (uuid.UUID(int=n) for n in itertools.count(1))
        self.views_wanted: list[str] | None = None
        # ids read ahead (``Engine.read_ahead``): names to ask about, those the read out asks about, those of them a
        # call named since, and what came back (name -> the ids every broker showed, when)
        self.ahead_wanted: set[str] = set()
        self.ahead_asked: set[str] = set()
        self.ahead_spoiled: set[str] = set()
        self.ahead_read: dict[str, tuple[set[uuid.UUID | None], float, int]] = {}  # (ids, asked at, changes then)
        self.ahead_takers: dict[str, Track] = {}  # the create of each name asked about that takes its answer
        self.ahead_asked_changes: dict[str, int] = {}  # ``changes`` of each name when the read ahead out was asked
        self.changes: dict[str, int] = {}  # name -> how many times the cluster changed it
        self.views_read_at: dict[int, float] = {}  # call id -> when the engine last asked about its topics
        self.views_asked_at = 0.0
        self.last_read_s = 0.0
        self.disruptions = 0  # authentication failures, refused connections, throttles of other methods
        self.last_views: BrokerViews = {}
        self.last_views_asked: set[str] = set()  # a view says nothing of a name it was not asked about
        self.per_request = MAX_TOPICS_PER_REQUEST
        self.busy_lanes: set[int] = set()  # connections an abandoned request may still hold (rule b)
        self.default_told = False  # the engine was told the cluster's num.partitions (or read it back)
        self.engine_default: int | None = None  # what the engine takes num.partitions to be
        self.default_from: str | None = None  # the -1 create applied last while it was not known: read back
        self.drains: dict[
            int, tuple[float, float]
        ] = {}  # lane -> the sentinel asked for (when, its timeout), not answered
        self.told: list[Track] = []  # the topics settled, in order
        self.pending_at_close: list[Track] = []
        self.engine: Engine

    @property
    def flight(self) -> Flight | None:
        """The request in flight the rule at hand acts on: the ``focus`` lane's, else the other's."""
        return self.flights.get(self.focus) or next(iter(self.flights.values()), None)

    def focus_on(self, lane: int, *, open_only: bool = True) -> Flight | None:
        """Act on the ``lane``'s request in flight (else the other's); ``open_only``: one the broker has not dealt
        with yet."""
        lanes = [n for n, f in self.flights.items() if not open_only or f.fate is None]
        if not lanes:
            return None
        self.focus = lane if lane in lanes else lanes[0]
        return self.flights[self.focus]

    def open_flight(self) -> bool:
        return any(f.fate is None for f in self.flights.values())

    def let_go(self, flight: Flight) -> bool:
        """The engine let the request go (done, or settled by close())."""
        status = self.engine.status
        held = status.in_flight if flight.lane == 0 else status.second_in_flight
        return held != flight.request.request_id

    @property
    def gate_until(self) -> float:
        """When every throttle a live connection carries has ended (rule b)."""
        return max(self.gates.values(), default=0.0)

    def probe_due(self) -> bool:
        """A throttle whose connection failed lasts, and no fresh answer has said it is over (rule b)."""
        return any(until > self.now for until in self.gone.values())

    @start_rule()
    def start(
        self,
        mode: str,
        paced: bool,
        seed: int,
        existing: dict[str, int],
        cap: int | None,
        reached: bool | str,
        per_request: int | None,
        bulk: str | None,
        settle_late_from: int = SETTLE_AFTER_SEND_FROM,
        lanes: bool = False,
        lane_answers: bool = False,
        cap_probe_after: int = PROBE_AFTER,
    ) -> None:
        """A cluster (its quota mode, its topics, its batch cap), an engine (paced or not), whether a broker has
        answered the contact probe (or never can be reached), and mostly a bulk wait_for_metadata call first;
        ``cap_probe_after``: a lowered cap is tried at twice the limit after that many accepted requests."""
        # A bulk call spans several requests (the engine's MAX_TOPICS_PER_REQUEST, made small for the model): the
        # next request is answered while the views read for the names before it is out.
        if per_request is not None:
            self.per_request = per_request
        self.mode = mode
        self.cap = cap
        self.new_words = cap == 7
        self.cluster = dict(existing)
        self.ids = {name: next(self.new_ids) for name in existing}
        if mode != "none":
            self.bucket = TokenBucket(RATE, window_num=2, window_size_s=1.0)
        pacer = Pacer(MutationQuota(rate=RATE, burst=2 * RATE)) if paced and mode != "none" else None
        backoff = RetryBackoff(initial_ms=100, max_ms=1000)
        # an applied answer of this many topics settles after the next send (issue 40): often every answer here
        # ``lanes``: a second request beside a full one, on a connection of its own (``lanes``), as beside a bulk one
        self.second_from = self.per_request if lanes else None
        self.lane_answers = lane_answers
        config = EngineConfig(
            max_topics_per_request=self.per_request,
            seed=seed,
            settle_after_send_from=settle_late_from,
            second_lane_from=self.second_from,
            cap_probe_after=cap_probe_after,
        )
        self.cap_probe_after = cap_probe_after
        self.engine = Engine(pacer=pacer, backoff=backoff, config=config)
        self.paced = pacer is not None
        self.lane_retired |= self.paced  # a pacing client never opens a second lane
        self.unreachable = reached == "unreachable"
        if reached is True:  # mostly, the contact probe is answered before the first call (the rule ``probe`` is rarer)
            self.step()
            self.probe(answered=True)
        if bulk is not None:
            self.submit_bulk(bulk)

    def submit_bulk(self, operation: str) -> None:
        """A bulk call waiting for every broker's Metadata, of the names it can change: more than one request (at
        most two topics each), so that a request is answered while the views read for the names before it is out."""
        if operation != "create" and len(self.cluster) < 3:
            self.cluster.update({name: self.cluster.get(name, 1) for name in NAMES[:3]})
            self.ids.update({name: self.ids.get(name) or next(self.new_ids) for name in NAMES[:3]})
        names = [name for name in NAMES if (name in self.cluster) != (operation == "create")] or list(NAMES)
        self.submit(operation, names, 30.0, True, False, 4, None, None, True)

    # -- the simulated driver ----------------------------------------------------------------------

    def step(self) -> None:
        out = self.engine.step(self.now)
        self.apply(out)
        if self.lane_probe_wanted and self.lane_answers:  # mostly, the second connection answers its probe at once
            self.lane_probe(answered=True)

    def apply(self, out: Outbox) -> None:
        """The driver does what the engine's outbox says, in its order: metric events to the sink, settlements, the
        completed request let go, the next send, the sentinel, the reads, and when to wake it next."""
        for metric in out.metrics:
            metric.report(self.sink)
        done = [self.flights[lane] for lane in sorted(self.flights) if self.let_go(self.flights[lane])]
        for flight in done:
            if flight.fate in ABANDONED and not self.closed:
                # librdkafka gave up on it, never completed it, or could not read its answer: the request (or the
                # mute after its answer) may still hold its connection until the sentinel says otherwise (rule b),
                # from now: a topic settled in this step may be told so
                self.busy_lanes.add(flight.lane)
                event("an abandoned request holds the connection")
        for topic, exc in out.settle:
            self.settle(self.by_topic[topic], exc)
        for flight in done:
            self.completed(flight)
        for action in out.actions:
            if isinstance(action, Send):
                self.sent(action)
            elif isinstance(action, Drain):
                self.sentinel_asked(action.request_timeout_s, action.lane)
        if out.read_metadata and not self.metadata_wanted:
            self.held_while_reading = set()
        self.metadata_wanted |= out.read_metadata
        if self.metadata_wanted:
            self.held_while_reading |= {t.order for t in self.tracks if _pending(t) and not self.holds(t)}
        if out.read_views is not None:
            self.views_asked(out.read_views)
        self.probe_wanted |= out.probe
        if Probe(SECOND) in out.actions:
            # asked beside a full request in flight on the first connection, never when pacing (retired), before a
            # broker answered the client, or after a close
            first = self.flights.get(0)
            assert first is not None, "lanes: a probe beside no request"
            assert self.second_from is not None, "lanes: a probe of a second lane the engine was not given"
            assert len(first.request.topics) >= self.second_from, "lanes: a probe beside no full request"
            assert self.reached, "lanes: a probe before a broker answered the client"
            assert not self.closed, "lanes: a probe after a close"
            assert not self.lane_retired, "lanes: a probe of a retired second lane"
            assert not self.second_answered, "lanes: a probe of a second lane that has answered"
            assert not self.lane_probe_wanted, "lanes: the second lane probed twice"
            self.lane_probe_wanted = True
        self.wake_at = out.wake_at

    def completed(self, flight: Flight) -> None:
        """The engine let the request in flight go. A retry is counted when a topic of it is queued again: certainly
        when one is still pending now; perhaps when one had a result that is retried (queued again, it may have been
        settled in the same step, refused by a throttle or out of time)."""
        del self.flights[flight.lane]
        self.recorded_throttles += [throttle_s * 1000 for throttle_s in flight.throttles]
        if flight.lane != 0 and flight.fate in ANSWERED and (flight.fate != "drop last" or len(flight.tracks) > 1):
            self.second_answered = True
        if flight.lane != 0 and (flight.fate not in ANSWERED or flight.fate in ("not controller", "timed out")):
            self.lane_retired = True  # unanswered, or a failing-over controller's refusal: retired by then
        if self.closed:
            return
        if flight.fate == "not handed":  # a send cut before its call: no retry, no attempt
            return
        if any(self.queued(t) for t in flight.tracks):
            self.retries_at_least += 1
        if flight.retryable:
            self.retries_at_most += 1

    def sentinel_asked(self, timeout_s: float, lane: int) -> None:
        """Rule b: a sentinel only while an abandoned request may hold its connection, one at a time, on that
        connection."""
        assert lane in self.busy_lanes, "rule b: a sentinel asked for while the connection is free"
        assert lane not in self.drains, "rule b: a second sentinel while one is out"
        self.drains[lane] = (self.now, timeout_s)

    def views_asked(self, names: list[str]) -> None:
        """wait_for_metadata: a read of every broker's Metadata asks about applied changes still awaited and, at
        once, about the names a create not yet sent holds (their ids before the send); one read at a time."""
        assert self.views_wanted is None, "a second read of the brokers' views while one is in progress"
        awaiting = {t.topic.name: t.topic.call for t in self.tracks if self.awaiting(t)}
        unread = {t.topic.name: t for t in self.tracks if self.holds(t) and _reads_ids_first(t) and not t.ids_read}
        # names read ahead: those no pending call names (a pending call's name is its call's to read)
        ahead = self.ahead_wanted
        wanted = set(awaiting) | set(unread) | ahead
        assert set(names) <= wanted, f"views asked for {names}, awaiting, unread or ahead {wanted}"
        assert set(unread) <= set(names), f"a create's ids not read at once: {unread}"
        assert ahead <= set(names), f"names to read ahead not read at once: {ahead - set(names)}"
        self.ahead_asked, self.ahead_wanted = ahead, set()
        self.ahead_asked_changes = {name: self.changes.get(name, 0) for name in ahead}
        if ahead:
            event("ids read ahead")
        for track in unread.values():
            track.ids_asked = True
        for call in {id(call): call for name, call in awaiting.items() if name in names}.values():
            self.check_views_spacing(call, names)
            self.views_read_at[call.id] = self.now
        self.views_wanted = names
        self.views_asked_at = self.now

    def check_views_spacing(self, call: Call, names: list[str]) -> None:
        """A call still sending is read about at most every READ_WHILE_SENDING_S (near its deadline, freely), and
        every topic of a call read about is asked about."""
        last = self.views_read_at.get(call.id)
        tracks = [t for t in self.tracks if t.topic.call is call]
        if any(_pending(t) and not self.awaiting(t) for t in tracks) and last is not None:
            interval_s = max(READ_WHILE_SENDING_S, READ_COST_FACTOR * self.last_read_s)
            margin_s = READ_BEFORE_DEADLINE_S + 2 * self.last_read_s  # reads near the deadline start earlier
            assert self.now >= min(last + interval_s, call.spec.deadline - margin_s) - EPSILON, (
                f"views of a call still sending read again after {self.now - last:.3f} s"
            )
        awaiting = {t.topic.name for t in tracks if self.awaiting(t)}
        assert awaiting <= set(names), "a call's applied topics read about in part"

    def sent(self, request: Send) -> None:
        """The driver hands the request over: every rule of a send is checked here (a to d, first contact, the
        batch cap, broker defaults, cancelled is final)."""
        tracks = [self.by_topic[ref] for ref in request.topics]
        budgets = [_budget_s(t, self.now) for t in tracks]
        self.check_one_slot(request)
        self.check_probe(request)
        self.check_names(tracks)
        self.check_sharing(request, budgets, tracks)
        cap_probe = self.check_cap_learned(tracks)
        self.check_first_contact(request, tracks)
        self.check_charged(request, tracks)
        assert not self.closed, "rule h: sent after close()"
        for track in tracks:
            # cancelled is final: a topic whose caller cancelled it may complete in flight, never be sent again
            assert not track.cancelled, f"rule j: {track.topic.name} sent after its caller cancelled it"
            track.handed += 1
        flight = Flight(request, tracks, request.request_timeout_s, self.now, budgets=budgets, lane=request.lane)
        flight.cap_probe = cap_probe
        flight.contact_capped = not self.answered
        flight.forwardable = self.now - self.lost_at[request.lane] < FORWARD_GRACE_S
        self.flights[request.lane] = flight

    def check_one_slot(self, request: Send) -> None:
        """Rule b: one request in flight per connection, nothing sent while a throttle lasts, nothing written behind
        a request librdkafka abandoned (the slot follows the connection); a second connection's request only beside
        a full one, while no throttle was ever seen, the client does not pace and a broker has answered, and never
        after a request of the second lane went unanswered (``lanes``)."""
        lane = request.lane
        assert lane not in self.flights, "rule b: a second request on a connection while one is in flight"
        assert lane not in self.busy_lanes, "rule b: written behind a request librdkafka abandoned, before the sentinel"
        assert self.now >= self.gate_until - EPSILON, "rule b: sent while the broker's throttle lasts"
        if lane != 0:
            first = self.flights.get(0)
            assert self.second_from is not None, "rule b: a second lane the engine was not given"
            assert first is not None, "rule b: a second request with none on the first connection"
            assert len(first.request.topics) >= self.second_from, "rule b: a second request beside no full one"
            assert not self.lane_retired, "rule b: a second request after a throttle, or after one went unanswered"
            assert self.reached, "rule b: a second request before a broker answered"
            # its handle may never connect: nothing goes there before it has answered (its probe: ``lanes``)
            assert self.second_answered, "rule b: a request on a second connection that never answered"
            event("rule b: a second request on the second lane's connection")
        if request.direct:  # the driver may write it on a connection of its own (``Lanes.direct``)
            assert self.second_from is not None, "rule b: a direct request the engine was given no lanes for"
            assert len(request.topics) >= self.second_from, "rule b: a direct request that is not a bulk one"
            assert not self.lane_retired, "rule b: a direct request after a throttle, or while pacing"
            event("rule b: a request the client may write on its own connection")

    def check_probe(self, request: Send) -> None:
        """Rule b: a throttle whose connection failed closes nothing, but it ends only with a fresh answer: until
        then, one topic a request."""
        if self.probe_due():
            assert len(request.topics) == 1, "rule b: more than a probe sent before a fresh answer ended the throttle"
            event("rule b: a probe on a fresh connection while an old throttle lasts")
            if self.paced:
                event("rule b: a paced engine's probe, past its mirror's debt")

    def check_names(self, tracks: list[Track]) -> None:
        """Rule a: a name once per request, sent only by the earliest pending call naming it; a wait_for_metadata
        create only after every broker's ids of its name were read while it held it (incarnations)."""
        names = [t.topic.name for t in tracks]
        assert len(names) == len(set(names)), f"rule a: a name twice in one request: {names}"
        assert len(names) <= self.per_request, f"{len(names)} topics in one request, more than {self.per_request}"
        for track in tracks:
            assert self.holds(track), f"rule a: {track.topic.name} sent while an earlier call still holds it"
            if _reads_ids_first(track):
                assert track.ids_read, f"{track.topic.name} created before its name's ids were read"
                assert track.topic.ids_before == frozenset(track.ids_before), f"{track.topic.name}: other ids before"

    def check_sharing(self, request: Send, budgets: list[float], tracks: list[Track]) -> None:
        """Rule c: the time budgets of the calls sharing a request are within COALESCE_RATIO. Sharing never hurts:
        the request carries the longest call's timeouts: librdkafka waits as long as that call would alone, no
        longer (the first contact's cap aside), and the controller's deadline is that call's own, ends before its
        budget by the answer's margin at most (a 50 ms floor, or a recent round trip), unless a caller capped it."""
        assert max(budgets) <= COALESCE_RATIO * min(budgets) + EPSILON, f"rule c: budgets {budgets} share a request"
        assert request.request_timeout_s <= max(budgets) + EPSILON, "rule c: librdkafka waits longer than any call"
        # the first contact's cap: a client no broker answered yet, or the second connection before its first answer
        reached = self.answered and (request.lane == 0 or self.second_answered)
        if reached:
            assert request.request_timeout_s >= max(budgets) - EPSILON, f"rule c: librdkafka waits less than {budgets}"
        if len({round(b, 6) for b in budgets}) > 1:
            event("rule c: calls of different budgets share a request")
        assert request.operation_timeout_s <= max(budgets) + EPSILON, "rule c: the controller's deadline is too late"
        capped = any(t.topic.call.spec.operation_timeout_s for t in tracks)
        if reached and not capped:
            margin_s = max([0.05, *self.recent_round_trips()])
            assert request.operation_timeout_s >= max(budgets) - margin_s - EPSILON, (
                f"rule c: the controller's deadline ({request.operation_timeout_s} s) is not the longest call's "
                f"(budgets {budgets})"
            )

    def check_cap_learned(self, tracks: list[Track]) -> bool:
        """The batch cap, once learned: a request of several topics is smaller than every one refused whole, but
        for a probe of a cap raised since: after ``cap_probe_after`` answers that applied topics since the last
        refusal, at most twice the limit and never above Kafka's 10,000, and one at a time. True for a probe."""
        records = sum(t.topic.records for t in tracks)
        limit = self.engine.status.max_records_per_request
        probe = len(tracks) > 1 and records > limit
        if probe:
            assert not any(flight.cap_probe for flight in self.flights.values()), "two batch cap probes in flight"
            event("a request above the limit learned: a probe")
        if len(tracks) > 1 and records >= self.cap_bound():
            assert self.applied_since_cap_refusal >= self.cap_probe_after, (
                f"{records} records sent after {self.cap_bound()} were refused, "
                f"{self.applied_since_cap_refusal} answers applied since (a probe needs {self.cap_probe_after})"
            )
            assert records <= min(2 * limit, 10_000), f"a probe of {records} records, the limit {limit}"
            event("a probe of a cap raised since")
        if self.largest_accepted < self.cap_bound():  # never split below what the cluster accepted
            limit = self.engine.status.max_records_per_request
            assert limit >= min(self.largest_accepted, 10_000), f"limit {limit} below {self.largest_accepted} accepted"
        return probe

    def check_limit_restored(self) -> None:
        """A lone topic's refusal proved words a policy's: the limit is back at least where it was before the shape
        took them for the cap's."""
        restored, self.limit_restored_to = self.limit_restored_to, None
        if restored is not None:
            limit = self.engine.status.max_records_per_request
            assert limit >= restored, f"batch cap: limit {limit}, not back at {restored} after a policy's words"

    def cap_bound(self) -> float:
        """Records of the smallest request of several topics refused for the cap: in its words, or by its shape in
        words not proven a policy's and larger than every request accepted (one as large passed: not the cap's)."""
        shapes = [records for records in self.refused_by_shape.values() if records > self.largest_accepted]
        # a probe applied as large as a request refused: the cap was raised since (the refusal bounds it no more)
        words = self.smallest_refused if self.smallest_refused > self.largest_accepted else math.inf
        return min([words, *shapes])

    def check_first_contact(self, request: Send, tracks: list[Track]) -> None:
        """Until a broker has answered: nothing handed over while connections fail before their handshake, and
        librdkafka's verdict due VERDICT_MARGIN_S before the shortest deadline."""
        if self.reached:
            return
        assert not self.contact_failing, "handed over while connections fail before their handshake"
        remaining = min(_remaining_s(t, self.now) for t in tracks)
        assert request.request_timeout_s <= remaining - VERDICT_MARGIN_S + EPSILON, (
            "librdkafka's verdict would not come before the deadline"
        )

    def check_charged(self, request: Send, tracks: list[Track]) -> None:
        """Broker defaults: once num.partitions is known, a create is counted as the broker charges it, -1 as the
        cluster's num.partitions (a -1 costed before then stays counted as Kafka's default, 1). A grow or delete is
        counted, when paced (else it is not read), from its topic's partitions now (rule g), unless the client could
        not know them: the read that costs it failed (counted as 1) or came from a broker behind, or an attempt of its
        own was applied with no answer telling the client so. Held behind a change the client was told applied, it is
        costed from that change, whatever a read says after."""
        operation = request.kind.operation
        if operation is not CREATE_TOPICS:
            if not self.paced or not all(map(self.cost_knowable, tracks)):
                return
            charged = sum(_counted(t.topic, self.cluster.get(t.topic.name)) for t in tracks)
            assert request.mutations == charged, f"rule g: {request.mutations} mutations counted, {charged} charged"
            event("rule g: a paced grow or delete counted as charged")
            return
        if not self.default_told:
            return
        charged = sum(_made(t.topic.item) if t.counted_as is None else t.counted_as for t in tracks)
        assert request.mutations == charged, f"rule g: {request.mutations} mutations counted, {charged} charged"
        if any(_is_default_create(t.topic) for t in tracks):
            event("a create with the cluster's default partition count")

    @staticmethod
    def cost_knowable(track: Track) -> bool:
        """Whether the engine can know what a grow or delete is charged (``check_charged``): once it is costed, no
        change of its name but its own can come before it is sent (rule a), and one the client was not told of (lost,
        garbled, refused by a resigning controller, re-sent and answered "already done") makes it unknowable."""
        if track.accepted and not track.answered_ok and not track.topic.call.kind.validate_only:
            return False
        return track.cost_exact or not track.cost_unsure

    def note_next_holder(self, track: Track) -> None:
        """``track`` was settled: a grow or delete of a later call held behind it (rule a) is costed from its change,
        if the client was told it applied and knows the partitions it left (``machine._cost_behind``)."""
        name, call = track.topic.name, track.topic.call
        after = next((t for t in self.tracks if t.topic.name == name and self.holds(t)), None)
        if after is None or after.topic.call.kind.operation is CREATE_TOPICS or after.order < track.order:
            return
        if not track.answered_ok or call.kind.validate_only:
            return
        if _is_default_create(track.topic) and self.engine_default != DEFAULT_PARTITIONS:
            # num.partitions not known (a read after costs it), or read back wrong (from a name changed since, or a
            # broker behind): the engine costs it from what it takes num.partitions to be, and no read after
            if self.engine_default is not None:
                after.cost_read = after.cost_unsure = True
            return
        after.cost_read = after.cost_exact = True
        event("a grow or delete costed from the change it was held behind")

    def settle(self, track: Track, exc: BaseException | None) -> None:
        """A topic's future is settled: once, never after it was withdrawn, by its deadline (rule e), with a
        truthful outcome (rule f) whose typed reason is what the model saw happen (``check_why``), and refused
        locally only as rule d and the batch cap allow."""
        assert track.settled is None, f"{track.topic.name} settled twice"
        assert not track.withdrawn, f"{track.topic.name} settled after it was withdrawn"
        # (a rest given after its call's deadline is settled as it comes)
        assert self.now <= max(track.topic.call.spec.deadline, track.given_at) + EPSILON, "rule e: settled late"
        self.check_why(track, exc)  # before it is settled: whether an earlier call held its name, it in flight
        track.settled = (self.now, exc)
        self.note_next_holder(track)
        self.told.append(track)
        if exc is not None:  # the call's duration metric carries its first failure's type
            error = error_of(exc)
            self.first_errors.setdefault(track.topic.call.id, error.name() if error is not None else type(exc).__name__)
        event(f"settled: {_outcome(exc)}")
        if not self.reached and self.contact_failing:
            event("settled while connections fail before their handshake")
        self.check_truthful(track, exc)
        self.count_local_refusal(track, exc)
        self.check_refused_for_a_live_throttle(track, exc)
        self.check_too_late(track, exc)
        self.check_cap_final(track, exc)

    def check_why(self, track: Track, exc: BaseException | None) -> None:
        """The typed reason of a "not sent" or "outcome unknown" is what the model saw: an earlier call held the
        name (rule a), the connection carried an abandoned request (rule b), the request was in flight at the
        deadline (rule e), its caller cancelled it (rule j), no broker had answered (first contact)."""
        why = exc.why if isinstance(exc, (NotSentError, OutcomeUnknownError)) else None
        name = track.topic.name
        if why is NotSentReason.NAME_HELD:
            assert not self.holds(track), f"rule a: {name} not sent for a name no earlier call held"
            event("rule a: not sent, an earlier call held the name")
        elif why is NotSentReason.CONNECTION_BUSY:
            assert 0 in self.busy_lanes, f"rule b: {name} not sent for a busy connection, but it was free"
            event("rule b: not sent, the connection carried an abandoned request")
        elif why is OutcomeUnknownReason.NO_RESPONSE:
            assert self.in_flight(track), f"rule e: {name} told 'no response by the deadline', not in flight"
            assert self.now >= track.topic.call.spec.deadline - EPSILON, f"rule e: {name} given up before its deadline"
        elif why in (NotSentReason.CANCELLED, OutcomeUnknownReason.CANCELLED):
            assert track.cancelled, f"rule j: {name} told its caller cancelled it, who did not"
            event("rule j: a cancelled topic's last attempt was not sent")
        elif why is NotSentReason.NO_BROKER_ANSWERED:
            assert not self.answered, f"{name} told no broker had answered, after one did"

    def check_truthful(self, track: Track, exc: BaseException | None) -> None:
        """Rule f, what only the moment of settlement shows (the rest of it, what each topic was told staying true of
        what the cluster did, is the invariant ``what_each_topic_was_told_stays_true``): a success of a
        wait_for_metadata call only once every broker's last view showed it, "not yet visible" only for such a
        call, and "outcome unknown" only as ``check_unknown`` allows."""
        call = track.topic.call
        waits = call.spec.wait_for_metadata and not call.kind.validate_only
        if exc is None and waits:
            assert self.shown_everywhere(track), f"{track.topic.name} resolved before every broker showed it"
        elif isinstance(exc, NotYetVisibleError):
            assert waits, f"not yet visible, for a call without wait_for_metadata: {exc}"
        elif isinstance(exc, OutcomeUnknownError):
            self.check_unknown(track, exc)

    def check_unknown(self, track: Track, exc: OutcomeUnknownError) -> None:
        """ "Outcome unknown" only for a topic handed over, and never from a cluster whose handshake never completes
        (a handshake never completed means nothing was written), but for close() and an authentication failure
        (librdkafka keeps the request and writes it once a connection authenticates: it may yet be applied), which
        cannot wait for librdkafka's verdict, and a send cut short (whether confluent-kafka's call ran cannot be
        known)."""
        assert track.handed > 0, f"rule f: outcome unknown for a topic never handed over: {exc}"
        exempt = isinstance(exc, ClientClosedError) or exc.args[0].code() == KafkaError._AUTHENTICATION
        exempt |= track.cut_maybe_sent
        assert not self.unreachable or exempt, f"rule f: outcome unknown, never written: {exc}"

    def count_local_refusal(self, track: Track, exc: BaseException | None) -> None:
        """Rule g: a quota refusal the client made without sending is counted as a violation too."""
        if isinstance(exc, ThrottlingQuotaExceededException):
            assert exc.throttle_time_ms >= 0
            # .sent (issue 38): False only for a topic no broker received; True only for one handed over.
            assert exc.sent is not None, "the engine says whether a throttled topic was sent"
            assert exc.sent or track.written == 0, f"rule g: 'never sent', yet a broker received it: {exc}"
            assert not exc.sent or track.handed > 0, f"rule g: 'refused by a broker', never handed over: {exc}"
            event(f"rule g: a throttled topic, sent={exc.sent}")
            if self.too_late_after_a_refusal(track, exc):
                self.maybe_local_refusals += 1
                event("rule g: a hopeless retry after a 89 ended with the broker's refusal, or was held")
            elif track.cancelled and track.answered_89_at is not None:
                # cancelled while queued again after a 89: told that refusal, which its answer counted (rule j)
                event("rule g: a cancel of a topic refused with 89 is told the refusal, counted once")
            elif track.answered_89_at != self.now and self.now < track.topic.call.spec.deadline - EPSILON:
                self.local_refusals += 1  # refused without sending
        if isinstance(exc, OutcomeUnknownError) and exc.why is OutcomeUnknownReason.THROTTLED:
            # refused by a throttle after an attempt that may have been applied; one the broker refused with 89 in
            # this same step was counted by that answer
            self.local_refusals += track.answered_89_at != self.now
            event("rule g: a throttle kept a topic with an unknown outcome from being sent again")

    def check_refused_for_a_live_throttle(self, track: Track, exc: BaseException | None) -> None:
        """Rule b: a topic refused as throttled without being sent, before its deadline, only while a throttle that a
        live connection carries lasts, never for one whose connection failed and that no fresh answer renewed (an
        engine that paces itself refuses on its own reckoning, but not while a probe is due: its mirror's debt is
        what the probe tests)."""
        local = isinstance(exc, ThrottlingQuotaExceededException) and track.answered_89_at != self.now
        if not local or self.mode == "redpanda" or self.now >= track.topic.call.spec.deadline - EPSILON:
            return
        if self.too_late_after_a_refusal(track, exc):
            return  # rule d: no time for the retry's round trip, told the broker's refusal (its throttle's rest)
        if self.paced and not self.probe_due():
            return
        if self.gone:
            event("rule b: refused while a throttle whose connection failed lasts")
        assert self.gate_until > self.now, (
            f"rule b: {track.topic.name} refused for a throttle no live connection carries: {exc}"
        )

    def too_late_after_a_refusal(self, track: Track, exc: BaseException | None) -> bool:
        """A retry of a topic a broker refused with 89 that a recent answer says cannot come back in time: the engine
        does not send it (rule d) and tells it the broker's refusal, with what remains of that throttle (Java's
        AdminClient at a call's deadline), which the broker's answer already counted as a violation; unless a
        throttle holds it back first (then counted as refused here). Found by the model's random runs: a 10 s round
        trip, 89 after another client spent the quota, 19.8 s left."""
        if not isinstance(exc, ThrottlingQuotaExceededException) or track.answered_89_at in (None, self.now):
            return False
        recent = self.recent_round_trips()
        if not recent or self.now >= track.topic.call.spec.deadline - EPSILON:
            return False
        floor = min(recent)
        remaining_s = _remaining_s(track, self.now)
        return remaining_s <= floor + max(0.05, floor) + EPSILON or _budget_s(track, self.now) <= floor

    def check_too_late(self, track: Track, exc: BaseException | None) -> None:
        """Rule d: refused as "less than a round trip" (``NotSentReason.ROUND_TRIP``) only from a recent estimate
        resting on enough whole answers (a first attempt on MIN_SAMPLES, a retry on any), and only when hopeless;
        for "the margin kept for the answer" (``ANSWER_MARGIN``) only in the last 50 ms."""
        if not isinstance(exc, NotSentError):
            return
        remaining_s = _remaining_s(track, self.now)
        if exc.why is NotSentReason.ROUND_TRIP:
            recent = self.recent_round_trips()
            assert len(recent) >= (MIN_SAMPLES if track.handed == 0 else 1), "rule d: refused with no recent estimate"
            floor = min(recent)
            hopeless = remaining_s <= floor + max(0.05, floor) + EPSILON or _budget_s(track, self.now) <= floor
            assert hopeless, "rule d: refused with time for a round trip"
            event("rule d: refused, less than a round trip left")
        if exc.why is NotSentReason.ANSWER_MARGIN:
            assert remaining_s <= 0.05 + EPSILON, "rule d: refused for the answer's margin with more than 50 ms left"
            event("rule d: refused, less than the answer's margin left")

    def check_cap_final(self, track: Track, exc: BaseException | None) -> None:
        """The batch cap's refusal is final only for a topic alone, or when no time is left to split (or when its
        caller cancelled it: the attempt in flight was its last)."""
        if _is_policy(exc) and track.cap_refused_with_others and not track.cancelled:
            floor = min(self.recent_round_trips(), default=0.0)
            remaining_s = _remaining_s(track, self.now)
            assert remaining_s <= floor + max(0.05, floor) + EPSILON, "not split, time was left"

    def recent_round_trips(self) -> list[float]:
        """Round trips of whole answers in the last RECENT_S (rule d's estimate)."""
        return [s for at, s in self.round_trips if self.now - at <= RECENT_S + EPSILON]

    def in_flight(self, track: Track) -> bool:
        """Pending, in a request in flight (librdkafka completes a request's topics together)."""
        return _pending(track) and any(track in flight.tracks for flight in self.flights.values())

    def awaiting(self, track: Track) -> bool:
        """Pending, applied as a broker said, and waiting for every broker to show it (wait_for_metadata)."""
        return _pending(track) and _waits(track) and track.answered_ok and not self.in_flight(track)

    def queued(self, track: Track) -> bool:
        """Pending, and neither in flight nor applied: what the engine may still send (or withdraw). An applied topic
        that waits for no metadata is pending only while the engine holds its large answer to settle after the next
        send (issue 40): not queued either."""
        return _pending(track) and not self.in_flight(track) and not track.answered_ok

    def holds(self, track: Track) -> bool:
        """Pending, and no earlier pending call names its topic (rule a)."""
        if not _pending(track):
            return False
        name = track.topic.name
        return not any(t.topic.name == name and t.order < track.order and _pending(t) for t in self.tracks)

    def shown_everywhere(self, track: Track) -> bool:
        """Every broker's last view shows the change: for a create or a grow, one incarnation (one id), for a create
        one that no broker showed before it was sent, and, when one of those brokers was up to date, the cluster's
        own. (With every broker behind both an earlier create and its delete, that none showed before the send, an
        earlier incarnation can pass: docs/semantics.md says so.)"""
        shown: set[uuid.UUID | None] = set()
        name, operation = track.topic.name, track.topic.call.kind.operation
        if name not in self.last_views_asked:
            return False
        for node in BROKERS:
            view = self.last_views.get(node)
            if view is None:
                return False
            if operation is DELETE_TOPICS:
                if name in view:
                    return False
                continue
            listed = view.get(name)
            if listed is None or listed.partitions < self.cluster.get(name, 0):
                return False
            if not listed.led and (operation is not CREATE_PARTITIONS or listed.leaderless != {0}):
                return False  # (a grow adds at least one partition past the first: its first is not the grow's)
            shown.add(listed.topic_id)
        if operation is DELETE_TOPICS:
            return True
        if len(shown) != 1 or (operation is CREATE_TOPICS and shown & track.ids_before):
            return False
        return not self.last_views_current or shown == {self.ids.get(name)}

    # -- rules: calls --------------------------------------------------------------------------------

    @precondition(lambda self: not self.closed)
    @rule(
        operation=st.sampled_from(sorted(OPERATIONS)),
        names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True),
        timeout_s=st.sampled_from([0.02, 0.3, 1.0, 5.0, 8.0, 15.0, 30.0]),
        retry=st.booleans(),
        validate_only=st.booleans(),
        size=st.integers(0, 4),  # 0: NewTopic(name), the cluster's default partition count (-1)
        request_timeout_s=st.sampled_from([None, None, 0.2, 2.0, 10.0]),
        operation_timeout_s=st.sampled_from([None, None, 0.0, 0.1, 3.0]),
        wait=st.booleans(),
    )
    def submit(
        self,
        operation: str,
        names: list[str],
        timeout_s: float,
        retry: bool,
        validate_only: bool,
        size: int,
        request_timeout_s: float | None,
        operation_timeout_s: float | None,
        wait: bool,
        part: int | None = None,
    ) -> None:
        """``part``: the call is given in two parts (a bulk call's, issue 40): its first ``part`` topics now, the rest
        by ``extend`` (a rule of its own, when hypothesis draws it)."""
        op = OPERATIONS[operation]
        validate_only = validate_only and op.validate_only
        spec = CallSpec(
            kind=RequestKind(op, validate_only),
            deadline=self.now + timeout_s,
            timeout_ms=int(timeout_s * 1000),
            retry_on_quota_violation=retry,
            request_timeout_s=request_timeout_s,
            operation_timeout_s=operation_timeout_s,
            started_at=self.now,
            wait_for_metadata=wait and not validate_only,  # the options refuse both at once
        )
        specs = [self.spec_of(op, name, size) for name in names]
        split = len(specs) if part is None else part
        # the driver numbers the call; the engine names a topic by that id and its name
        call, topics = submit_call(self.engine, spec, specs[:split], more=part is not None)
        self.track(call.id, topics)
        self.call_operations[call.id] = op.name
        if part is not None:
            self.rest = (call.id, specs[split:])
        else:
            self.whole_calls.add(call.id)
        self.step()

    def spec_of(self, op: Operation, name: str, size: int) -> TopicSpec:
        """What the driver hands over of one topic: its name, its snapshot, its cost (None where a read tells it) and
        its metadata records."""
        item: Any
        if op is CREATE_TOPICS:
            item = NewTopic(name, size, 1) if size else NewTopic(name)
        elif op is CREATE_PARTITIONS:
            item = NewPartitions(name, size + 1)
        else:
            item = name
        known = op.known_cost(item)
        cost = known if known is not None else (None if self.paced or op is CREATE_TOPICS else 0)
        return name, item, cost, op.records(item)

    def track(self, call_id: int, topics: list[Topic]) -> None:
        """The engine's own records of a call's topics, read by the model."""
        for topic in topics:
            track = Track(topic, len(self.tracks), self.now)
            self.tracks.append(track)
            self.named_after_read_ahead(track)
            if _is_default_create(topic) and self.engine_default is not None:
                self.count_default_create(track)
            self.by_topic[TopicRef(call_id, topic.name)] = track

    @precondition(lambda self: not self.closed)
    @rule(
        names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True),
        then=st.sampled_from(["nothing", "a create while it is out", "a create after its answer"]),
        lags=st.lists(st.integers(0, LAG_DEPTH), min_size=3, max_size=3),
    )
    def read_ahead(self, names: list[str], then: str, lags: list[int]) -> None:
        """The provisioning executor names creates to come (``Engine.read_ahead``): their names' ids are read with
        the next read, and a create submitted soon after, holding its name, is sent without a read of its own.
        ``then``: the executor's next row, a wait_for_metadata create of the first name, before or after the read's
        answer (``lags``: how far each broker is behind in it)."""
        self.engine.read_ahead(names, self.now)
        self.ahead_wanted |= set(names) - {t.topic.name for t in self.tracks if _pending(t)}  # (its call's to read)
        self.step()
        if then == "nothing" or self.closed:
            return
        if then == "a create after its answer" and self.views_out():
            self.views(lags, unreadable=False, delay=0.0, late=False)
        self.submit("create", names[:1], 30.0, True, False, 1, None, None, True)

    @precondition(lambda self: not self.closed)
    @rule(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=2, unique=True))
    def submit_default_creates(self, names: list[str]) -> None:
        """NewTopic(name): creates of the cluster's default partition count (-1), which the broker charges."""
        self.submit("create", names, 30.0, True, False, 0, None, None, False)

    @precondition(lambda self: not self.closed and self.rest is None)
    @rule(
        operation=st.sampled_from(sorted(OPERATIONS)),
        names=st.lists(st.sampled_from(NAMES), min_size=2, max_size=4, unique=True),
        part=st.integers(1, 3),
        timeout_s=st.sampled_from([0.3, 5.0, 30.0]),
        wait=st.booleans(),
    )
    def submit_in_two_parts(self, operation: str, names: list[str], part: int, timeout_s: float, wait: bool) -> None:
        """A bulk call's first part, the rest to come (``extend``): until then the call is not whole, and it does not
        finish however its first part ends."""
        self.submit(operation, names, timeout_s, True, False, 1, None, None, wait, part=min(part, len(names) - 1))

    @precondition(lambda self: self.rest is not None)
    @rule(given_up=st.sampled_from([False, False, True]))
    def extend(self, given_up: bool) -> None:
        """The rest of the call given in two parts, queued behind what is queued now; ``given_up``: none of it (its
        caller was cut short: the call is whole with its first part). Once closed, the engine refuses it (the driver
        tells the rest "not sent"), and the call never finishes."""
        assert self.rest is not None
        (call_id, rest), self.rest = self.rest, None
        given = [] if given_up else rest
        if self.closed:
            with pytest.raises(RuntimeError):
                self.engine.extend(call_id, given, self.now)
            return
        self.engine.extend(call_id, given, self.now)
        self.whole_calls.add(call_id)
        if given:
            self.track(call_id, records(self.engine, call_id, [name for name, _, _, _ in given])[1])
        event("a call given in two parts, its rest " + ("given up" if given_up else "queued"))
        self.step()

    @precondition(lambda self: not self.closed and bool(self.flights))
    @rule(
        operation=st.sampled_from(sorted(OPERATIONS)),
        timeout_s=st.sampled_from([0.3, 5.0, 8.0]),
        factor=st.sampled_from([1.2, 1.9, 3.0]),
        retry=st.booleans(),
    )
    def submit_pair(self, operation: str, timeout_s: float, factor: float, retry: bool) -> None:
        """Two calls queued behind the request in flight, of one kind, on names no pending call holds: of time
        budgets within a factor of two they share the next request, three times apart they must not (rule c)."""
        held = {t.topic.name for t in self.tracks if _pending(t)}
        free = [name for name in NAMES if name not in held]
        if len(free) < 2:
            return
        self.submit(operation, free[:1], timeout_s, retry, False, 1, None, None, False)
        self.submit(operation, free[1:2], timeout_s * factor, retry, False, 1, None, None, False)

    @precondition(lambda self: not self.closed and any(t.settled is None and not t.withdrawn for t in self.tracks))
    @rule(pick=st.integers(0, 1000))
    def withdraw(self, pick: int) -> None:
        pending = [t for t in self.tracks if t.settled is None and not t.withdrawn]
        self.withdraw_track(pending[pick % len(pending)])

    def withdraw_track(self, track: Track) -> None:
        queued = self.queued(track)
        withdrawn = self.engine.withdraw(*track.topic.ref, self.now)
        # a topic queued again after an attempt a broker had is settled instead, with what it left true
        assert withdrawn == (queued and not track.written), "rule j: only what no broker had can be taken back"
        if queued and track.written:
            event("rule j: a cancel of a topic queued again after an attempt a broker had")
        track.withdrawn = withdrawn
        track.cancelled = True
        if withdrawn:  # taken back once: a later cancel() is its future's to answer (the driver's)
            assert not self.engine.withdraw(*track.topic.ref, self.now), "rule j: a withdrawn topic was pending still"
            event("withdrawn")
        else:
            event("cancelled in flight")
        self.step()

    @precondition(lambda self: not self.closed and self.open_flight())
    @rule(
        pick=st.integers(0, 1000),
        then=st.sampled_from([None, "ok", "not controller", "timed out", "transport"]),
        lane=st.integers(0, 1),
    )
    def cancel_in_flight(self, pick: int, then: str | None, lane: int = 0) -> None:
        """A caller cancels a topic of the request in flight (an asyncio timeout): False, and never sent again.
        ``then``: the broker answers at once, perhaps with what would be retried (a 89, NOT_CONTROLLER, ...), and a
        second passes, long enough for a retry's back-off (cancelled is final: rule j)."""
        flight = self.focus_on(lane)
        assert flight is not None
        pending = [t for t in flight.tracks if _pending(t)]
        if not pending:
            return
        self.withdraw_track(pending[pick % len(pending)])
        if then is not None and self.flights.get(flight.lane) is flight and flight.fate is None and not self.closed:
            self.answer(then, applied=True, delay=0.0, quota_first=False, lane=flight.lane)
            self.advance(1.0)

    @rule(dt=st.sampled_from([0.001, 0.01, 0.05, 0.2, 1.0, 3.0, 10.0, 40.0]))
    def advance(self, dt: float) -> None:
        """Time passes; the driver wakes the engine whenever it asked to be woken, and librdkafka times out a
        request that got no answer (its request_timeout)."""
        target = self.now + dt
        stepped_at = None
        for _ in range(100_000):
            # librdkafka gives up waiting at a request's timeout, answered or not, and completes a sentinel by its own
            lost_at = min(
                (f.sent_at + f.timeout_s for f in self.flights.values() if f.fate in (None, "lost")), default=math.inf
            )
            drain_done_at = min((at + timeout_s for at, timeout_s in self.drains.values()), default=math.inf)
            next_at = min(target, self.wake_at, lost_at, drain_done_at)
            if next_at <= self.now == stepped_at:
                # Woken at once again (a pacer's wait below the clock's resolution): a driver's clock has moved on.
                next_at = math.nextafter(self.now, math.inf)
            self.now = max(self.now, next_at)
            for flight in list(self.flights.values()):
                if self.now >= flight.sent_at + flight.timeout_s and flight.fate in (None, "lost"):
                    self.time_out(flight)
            if self.now >= drain_done_at:  # librdkafka completes the sentinel by its own timeout, at the latest
                lane = min(self.drains, key=lambda n: sum(self.drains[n]))
                self.drained_as("closed", lane)
                continue
            self.step()
            stepped_at = self.now
            if self.now >= target:
                return
        raise AssertionError(f"the engine asks to be woken at once, again and again (at {self.now})")

    def time_out(self, flight: Flight) -> None:
        """librdkafka's request_timeout: "Failed while waiting for response from broker" (it was written; the
        broker may have applied it) for every topic not yet completed."""
        # sharing never hurts: librdkafka gives up on no call's topic before that call would have alone (the
        # first contact's cap aside: then librdkafka's verdict comes before the shortest call's deadline)
        if not flight.contact_capped:
            assert flight.timeout_s >= max(flight.budgets) - EPSILON, f"gave up: {flight.budgets}"
        if self.unreachable:  # never built: no connection came up
            flight.fate = "never built"
            flight.retryable = True
            text = "Failed while waiting for controller: Local: Timed out"
            self.engine.on_results(
                flight.request.request_id,
                {t.topic.name: _error(KafkaError._TIMED_OUT, text) for t in flight.tracks},
                self.now,
            )
            return
        flight.fate = "abandoned"
        self.reached = True  # written: a connection completed its handshake
        if flight.applied_if_lost:
            self.cluster_apply(flight, answered=False)
        text = "Failed while waiting for response from broker: Local: Timed out"
        results: Results = {t.topic.name: _error(KafkaError._TIMED_OUT, text) for t in flight.tracks}
        _mark_written(flight.tracks, unanswered=True)
        flight.retryable = True
        self.engine.on_results(flight.request.request_id, results, self.now)

    # -- rules: the broker -------------------------------------------------------------------------

    @precondition(lambda self: not self.closed and self.open_flight())
    @rule(
        fate=st.sampled_from(
            [
                *("ok",) * 4,
                "bad msg",
                "drop last",
                "transport",
                "destroy broker",
                "not controller",
                "timed out",
                "no controller",
                "policy",
            ]
        ),
        applied=st.booleans(),
        delay=st.sampled_from([0.0, 0.001, 0.05, 0.5, 3.0]),
        quota_first=st.booleans(),
        lane=st.integers(0, 1),
    )
    def answer(self, fate: str, applied: bool, delay: float, quota_first: bool, lane: int = 0) -> None:
        """The broker answers the request in flight ``delay`` later, unless librdkafka times it out first: ``ok``
        (the cluster decides each topic's result), a garbled answer or one missing its last topic (both applied),
        a transport failure, NOT_CONTROLLER or REQUEST_TIMED_OUT (each after the cluster applied it, if ``applied``:
        a controller failing over), no controller (never written), a policy refusing every topic, or (``resent``, a
        forwardable flight's: ``answer_resent``) the answer to its broker's re-send after the controller it forwarded
        it to applied it and went away.
        ``quota_first``: the broker checks the quota before each topic's state (KIP-599 lets a 89 follow an applied
        attempt). ``lane``: the connection whose request is answered, if two are in flight."""
        flight = self.focus_on(lane)
        assert flight is not None
        flight.quota_first = quota_first
        if self.now + delay >= flight.sent_at + flight.timeout_s:
            return  # too late: librdkafka times it out first (``advance``)
        self.advance(delay)  # the engine is woken on the way, as the driver wakes it
        if self.flights.get(flight.lane) is not flight or flight.fate is not None:
            return  # settled meanwhile (abandoned, or the client closed)
        if self.unreachable:
            fate = "no controller"  # no connection completes its handshake: librdkafka never builds the request
        elif fate == "resent" and flight.request.kind.validate_only:
            fate = "ok"  # it applies nothing: its broker's answer is the truth
        flight.fate = fate
        event(f"answer: {fate}")
        results = self.broker_handles(flight, fate, applied)
        if flight.refused_89 > 0:  # the client sees a topic refused for the quota: no second lane again
            self.lane_retired = True
        whole = self.note_cap_refusal(flight, fate, results)
        flight.retryable = whole or _any_retryable(flight, results)
        self.note_contact(fate, len(flight.tracks))
        self.note_fresh_answer(fate, results)
        if results or fate == "drop last":  # the driver hands over what librdkafka completed (an empty answer too)
            moved = flight.controller_moved
            self.engine.on_results(flight.request.request_id, results, self.now, controller_moved=moved)
        self.step()
        self.check_limit_restored()

    # -- the simulated cluster: what a broker does with a request ----------------------------------

    def broker_handles(self, flight: Flight, fate: str, applied: bool) -> Results:
        """The results librdkafka completes the request with, for each way an answer can come."""
        names = [t.topic.name for t in flight.tracks]
        if fate == "resent":
            return self.broker_resends(flight)
        if fate in ("ok", "bad msg", "drop last"):
            return self.broker_applies(flight, fate)
        if fate in LOST_WITH_THE_NODE:  # the connection died after the write (perhaps after the broker applied it)
            if applied:
                self.cluster_apply(flight, answered=False)
            _mark_written(flight.tracks, unanswered=True)
            return {n: _error(*LOST_WITH_THE_NODE[fate]) for n in names}
        if fate == "no controller":  # never written
            return {
                n: _error(KafkaError._TIMED_OUT, "Failed while waiting for controller: Local: Timed out") for n in names
            }
        _mark_written(flight.tracks)
        self.note_round_trip(flight)
        if fate == "policy":  # a CreateTopicPolicy (or any other policy) refuses every topic alike
            return {n: _error(KafkaError.POLICY_VIOLATION, POLICY) for n in names}
        code = KafkaError.NOT_CONTROLLER if fate == "not controller" else KafkaError.REQUEST_TIMED_OUT
        if applied and not flight.request.kind.validate_only:  # a controller that resigns fails what it has not
            # committed, and its successor may commit it (a validate_only request writes nothing)
            self.cluster_apply(flight, answered=False)
            _mark_unanswered(flight.tracks)  # the client is told a refusal: the change may have been applied
            event(f"answer: {fate}, the change applied by a failover")
        return {n: _error(code) for n in names}

    def broker_applies(self, flight: Flight, fate: str) -> Results:
        """The cluster handles the request; its answer reaches the client whole (``ok``), garbled (``bad msg``), or
        without its last topic (``drop last``)."""
        tracks = flight.tracks
        last = tracks[-1]
        last_answered_before, last_89_before = last.answered_ok, last.answered_89_at
        results, throttle_s = self.cluster_apply(flight, answered=fate != "bad msg")
        _mark_written(tracks)
        if throttle_s > 0:
            self.throttle(1, throttle_s, lane=flight.lane)
        if fate == "bad msg":
            _mark_unanswered(tracks)
            return {t.topic.name: _error(KafkaError._BAD_MSG, "Local: Bad message format") for t in tracks}
        if fate == "drop last":
            last.answered_ok = last_answered_before  # its answer never reaches the client
            last.unanswered += 1
            if last.answered_89_at != last_89_before:  # nor its 89: no violation the client could count
                last.answered_89_at = last_89_before
                self.answers_89 -= 1
                flight.refused_89 -= 1
            results.pop(last.topic.name)
        elif all(_broker_answer(exc) for exc in results.values()):
            self.note_round_trip(flight)
        self.note_guessed_applied(tracks, results)
        return results

    def broker_resends(self, flight: Flight) -> Results:
        """Kafka's forwarding (issue 37): the controller the broker forwarded the request to applied it and went away
        before it answered, and the broker re-sent it to the next controller, which finds what the old one applied:
        "already done" for each topic applied, the client never told it was."""
        was_ok = {track.topic.name: track.answered_ok for track in flight.tracks}
        results, throttle_s = self.cluster_apply(flight, answered=True)
        _mark_written(flight.tracks)
        self.note_round_trip(flight)  # a whole answer, every topic's a broker's word
        if throttle_s > 0:
            self.throttle(1, throttle_s, lane=flight.lane)
        done = _error(ALREADY_DONE[flight.request.kind.operation.name])
        for track in flight.tracks:
            if results[track.topic.name] is None:
                track.answered_ok = was_ok[track.topic.name]
                results[track.topic.name] = done
        event("answer: the broker's re-send of what a controller that went away applied")
        return results

    def note_guessed_applied(self, tracks: list[Track], results: Results) -> None:
        """A -1 create counted as 1, applied as the client learns while num.partitions is unknown: read back."""
        for track in tracks:
            applied = track.topic.name in results and results[track.topic.name] is None
            if applied and track.guessed and self.engine_default is None and not track.topic.call.kind.validate_only:
                self.default_from = track.topic.name

    def note_fresh_answer(self, fate: str, results: Results) -> None:
        """Rule b: an answer, after a connection failed, that charged a topic or refused one for the quota ends the
        throttles whose connections failed; its own throttle, if any, was recorded first (``throttle``)."""
        spoke = any(exc is None or _quota_code(exc) for exc in results.values())
        if self.gone and fate in ("ok", "drop last", "resent") and spoke:
            self.gone.clear()
            event("rule b: a fresh answer ended a throttle whose connection failed")

    def note_round_trip(self, flight: Flight) -> None:
        """A whole answer: what the round trip took (rule d's estimate rests on these)."""
        self.round_trips.append((self.now, self.now - flight.sent_at))

    def note_cap_refusal(self, flight: Flight, fate: str, results: Results) -> bool:
        """A request of several topics refused whole for the batch cap, by its words or by its shape (every topic
        refused alike, and larger than every request accepted): later ones must be smaller. True when so."""
        tracks = flight.tracks
        records = sum(t.topic.records for t in tracks)
        limit = self.engine.status.max_records_per_request  # before the engine reads this answer
        every = (
            [results.get(t.topic.name) for t in tracks]
            if fate in ("ok", "resent", "policy") and len(tracks) > 1
            else []
        )
        words = bool(every) and all(_is_cap(exc) for exc in every)
        alike = bool(every) and all(_is_policy(exc) for exc in every) and len({str(exc) for exc in every}) == 1
        # words the shape took for the cap's stay the cap's at any size (a cap lowered since refuses what it accepted)
        shaped = alike and str(every[0]) in self.refused_by_shape
        beyond = records > self.largest_accepted
        whole = words or (alike and (beyond or shaped) and str(every[0]) not in self.policy_words)
        if whole and not beyond:  # the cap was lowered: what it accepted before proves nothing now
            self.largest_accepted = 0
            event("a lowered cap refused a request as large as one accepted before")
        if whole:
            self.applied_since_cap_refusal = 0
        if words:
            self.smallest_refused = min(self.smallest_refused, records)
            event("a request refused whole for the batch cap")
        elif whole:
            message = str(every[0])
            self.refused_by_shape[message] = min(self.refused_by_shape.get(message, math.inf), records)
            self.limit_before_shape.setdefault(message, self.engine.status.max_records_per_request)
            event("a request refused alike, split")
        lone = results.get(tracks[0].topic.name) if len(tracks) == 1 and fate in ("ok", "resent", "policy") else None
        if _is_policy(lone) and records <= limit and self.refused_by_shape.pop(str(lone), None) is not None:
            # a lone topic no larger than the limit refused in words the shape took for the cap's: a policy's (one
            # larger may be over the cap by itself); the limit goes back
            self.policy_words.add(str(lone))
            self.limit_restored_to = self.limit_before_shape.pop(str(lone))
            event("a lone topic's refusal proved a policy's words")
        applied = sum(
            _records_made(t.topic) for t in tracks if t.topic.name in results and results[t.topic.name] is None
        )
        self.largest_accepted = max(self.largest_accepted, applied)
        self.applied_since_cap_refusal += applied > 0
        for track in tracks:
            track.cap_refused_with_others = whole
        return whole

    def note_contact(self, fate: str, topics: int) -> None:
        """Written means a connection completed its handshake; most answers mean a broker answered."""
        if fate != "no controller":
            self.reached = True
        if fate in ("ok", "resent", "not controller", "timed out", "policy") or (fate == "drop last" and topics > 1):
            self.answered = True

    @precondition(lambda self: not self.closed and self.open_flight())
    @rule(views_after=st.booleans(), lane=st.integers(0, 1))
    def answer_ok(self, views_after: bool, lane: int = 0) -> None:
        """The common case, drawn more often: the broker answers at once (the rules above decide what it answers).
        ``views_after``: then the brokers' views read that is out comes back (it may have been asked before this
        request was applied, about other names)."""
        self.answer("ok", applied=False, delay=0.0, quota_first=False, lane=lane)
        if views_after and not self.closed and self.views_wanted is not None:
            self.views([0] * len(BROKERS), unreadable=False, delay=0.0, late=False)

    @precondition(lambda self: not self.closed and self.open_flight())
    @rule(how=st.sampled_from(["lost", "never completed", "refused"]), applied=st.booleans(), lane=st.integers(0, 1))
    def no_answer(self, how: str, applied: bool, lane: int = 0) -> None:
        """The request gets no answer (one rule for the three ways, so that answers are drawn more often)."""
        self.focus_on(lane)
        if how == "lost" or (how == "never completed" and self.unreachable):  # librdkafka's timer always fires
            self.lose(applied)
        elif how == "never completed":
            self.never_completed(applied)
        else:
            self.confluent_kafka_refuses()

    def lose(self, applied: bool) -> None:
        """No answer comes: librdkafka times the request out at its request_timeout."""
        flight = self.flight
        assert flight is not None
        flight.fate = "lost"
        flight.applied_if_lost = applied

    def never_completed(self, applied: bool) -> None:
        """librdkafka never completes the request (the engine abandons it after its timeout and a grace)."""
        flight = self.flight
        assert flight is not None
        flight.fate = "silent"
        self.reached = True  # (written, as far as the client can tell)
        if applied:
            self.cluster_apply(flight, answered=False)
        _mark_written(flight.tracks, unanswered=True)
        flight.retryable = True

    @precondition(
        lambda self: not self.closed and any(f.fate is None and f.sent_at == self.now for f in self.flights.values())
    )
    @rule(handed=st.booleans(), applied=st.booleans(), lane=st.integers(0, 1))
    def send_cut_short(self, handed: bool, applied: bool, lane: int = 0) -> None:
        """The driver's send of the request just composed was cut short (Ctrl-C on a caller's turn): before
        confluent-kafka's call ran (not handed over), or when it may have run (handed over, its answer lost: it may
        even have been written and applied)."""
        lanes = [n for n, f in self.flights.items() if f.fate is None and f.sent_at == self.now]
        flight = self.flights[lane if lane in lanes else lanes[0]]
        if handed:
            flight.fate = "cut"
            if applied:
                self.cluster_apply(flight, answered=False)
            _mark_written(flight.tracks, unanswered=True)  # it may have been
            for track in flight.tracks:
                track.cut_maybe_sent = True
            flight.retryable = True
            event("a send cut short after its call may have run")
        else:
            flight.fate = "not handed"
            for track in flight.tracks:
                track.handed -= 1  # certainly never handed over
            event("a send cut short before its call ran")
        self.engine.on_send_cut_short(flight.request.request_id, handed=handed, now=self.now)
        self.step()
        # nothing stalls the client: the slot is free at once (not handed), or the sentinel is asked for (handed)
        assert self.let_go(flight), "rule i: a send cut short still holds the slot"
        asked = flight.lane in self.drains
        assert not handed or asked or self.closed, "rule i: a send that may have run asks for no sentinel"

    def confluent_kafka_refuses(self) -> None:
        """confluent-kafka refused the call itself (nothing sent)."""
        flight = self.flight
        assert flight is not None
        flight.fate = "refused"
        self.engine.on_send_refused(flight.request.request_id, ValueError("refused"), self.now)
        self.step()

    def cluster_apply(self, flight: Flight, *, answered: bool) -> tuple[Results, float]:
        """The broker handles the request as KRaft does (KIP-599 strict or permissive); returns its results and
        throttle. ``answered``: its answer reaches the client."""
        refused = self.over_the_cap(flight)
        if refused is not None:  # refused whole, nothing applied or charged
            return {
                t.topic.name: _error(KafkaError.POLICY_VIOLATION, refused) for t in flight.tracks
            }, self.throttle_s()
        results: Results = {}
        quota_refused: list[Track] = []
        for track in flight.tracks:
            exc, by_quota = self.topic_refusal(flight, track)
            results[track.topic.name] = exc
            if exc is None:
                self.accept(flight.request, track, answered=answered)
            elif by_quota and answered and track.settled is None:
                quota_refused.append(track)
        throttle_s = self.throttle_s()
        flight.refused_89 += self.count_quota_refusals(flight.request.kind.operation, quota_refused, throttle_s)
        return results, throttle_s

    def throttle_s(self) -> float:
        """The throttle the broker puts in its response (KIP-599: until the bucket is back under the quota)."""
        return self.bucket.throttle_time_ms(self.now) / 1000 if self.bucket is not None else 0.0

    def quota_violated(self) -> bool:
        """Strict mode refuses a mutation while the bucket is over the quota (permissive admits it, throttled)."""
        strict = self.mode in ("strict", "redpanda")
        return self.bucket is not None and strict and self.bucket.violated(self.now)

    def topic_refusal(self, flight: Flight, track: Track) -> tuple[KafkaException | None, bool]:
        """The broker's checks of one topic: its error (None: admitted), and whether the quota refused it."""
        operation = flight.request.kind.operation
        if flight.quota_first and self.quota_violated():
            return self.quota_error(operation), True  # checked before the topic's state
        exc = self.state_refusal(operation, track.topic.item, self.cluster.get(track.topic.name))
        if exc is not None:
            return exc, False
        if self.quota_violated():
            return self.quota_error(operation), True
        return None, False

    @staticmethod
    def state_refusal(operation: Any, item: Any, current: int | None) -> KafkaException | None:
        """What the cluster's state refuses: a create of a name that exists, a change of one that does not, a grow
        that does not grow."""
        if operation is CREATE_TOPICS:
            return _error(KafkaError.TOPIC_ALREADY_EXISTS) if current is not None else None
        if current is None:
            return _error(KafkaError.UNKNOWN_TOPIC_OR_PART)
        if operation is CREATE_PARTITIONS and item.new_total_count <= current:
            return _error(KafkaError.INVALID_PARTITIONS)
        return None

    def accept(self, request: Send, track: Track, *, answered: bool) -> None:
        """The broker admits a topic: charged to the quota, and applied unless validate_only."""
        topic = track.topic
        operation = request.kind.operation
        current = self.cluster.get(topic.name)
        if self.bucket is not None:
            self.bucket.record(operation.cost_from_metadata(topic.item, current), self.now)
        track.accepted = True
        track.answered_ok |= answered
        if not request.kind.validate_only:
            self.change(operation, topic)

    def change(self, operation: Any, topic: Topic) -> None:
        """The cluster's metadata changes; a lagging broker still shows it as it was (``history``)."""
        name = topic.name
        self.changes[name] = self.changes.get(name, 0) + 1
        self.history = [*self.history, (dict(self.cluster), dict(self.ids))][-LAG_DEPTH:]
        if operation is CREATE_TOPICS:
            self.cluster[name] = _made(topic.item)
            self.ids[name] = next(self.new_ids)  # a new incarnation
        elif operation is DELETE_TOPICS:
            del self.cluster[name]
            del self.ids[name]
        else:
            self.cluster[name] = topic.item.new_total_count

    def count_quota_refusals(self, operation: Any, refused: list[Track], throttle_s: float) -> int:
        """The 89s the client will see (rule g counts them as violations); returns how many."""
        counted = 0
        for track in refused:
            # Redpanda's DeleteTopics v4 refusal has no message: a violation only with a throttle in its response
            if self.mode == "redpanda" and operation is DELETE_TOPICS and throttle_s <= 0:
                continue
            self.answers_89 += 1
            counted += 1
            track.answered_89_at = self.now
            event("refused by the quota (89)")
        return counted

    def quota_error(self, operation: Any) -> KafkaException:
        if self.mode != "redpanda":
            return _error(KafkaError.THROTTLING_QUOTA_EXCEEDED)
        # Redpanda, to librdkafka's request versions: UNKNOWN_SERVER_ERROR; DeleteTopics v4 carries no message
        return _error(KafkaError.UNKNOWN) if operation is DELETE_TOPICS else _error(KafkaError.UNKNOWN, REDPANDA)

    def over_the_cap(self, flight: Flight) -> str | None:
        """Kafka 4's two checks of a whole request: the partitions of a CreateTopics, then the records made."""
        if self.cap is None:
            return None
        operation = flight.request.kind.operation
        partitions = records = 0
        for track in flight.tracks:
            item, current = track.topic.item, self.cluster.get(track.topic.name)
            if operation is CREATE_TOPICS:
                partitions += _made(item)
                records += 0 if current is not None else 1 + _made(item)
            elif operation is CREATE_PARTITIONS:
                records += max(0, item.new_total_count - current) if current is not None else 0
            else:
                records += 1 if current is not None else 0
        if self.new_words and max(partitions, records) > self.cap:  # a cluster whose cap's words are new
            return CAP_NEW_WORDS
        if operation is CREATE_TOPICS and partitions > self.cap:
            return CAP_PARTITIONS
        return CAP_RECORDS if records > self.cap else None

    def throttle(self, node_id: int, throttle_s: float, lane: int = 0) -> None:
        """A response carried a throttle (librdkafka's throttle event): nothing may be sent to it until it ends."""
        if throttle_s > 0:
            event("throttled")
        self.reached = self.answered = True  # a response carried it
        if throttle_s > 0 and self.gone.pop(node_id, None) is not None:
            self.gates[node_id] = self.now + throttle_s  # a fresh connection's answer: the truth from then on
        elif throttle_s > 0:
            self.gates[node_id] = max(self.gates.get(node_id, 0.0), self.now + throttle_s)
        if throttle_s > 0:
            self.lane_retired = True  # the engine opens no second lane again (``lanes``)
        flight = self.flights.get(lane)
        if flight is not None:  # recorded when the request completes (rule g)
            flight.throttles.append(throttle_s)
        else:  # another method's response: recorded at once
            self.recorded_throttles.append(throttle_s * 1000)
        self.engine.on_throttle(node_id, throttle_s, self.now, lane)

    # Events that settle or hold up everything: one rule drawn at most twice an example, so examples reach answers.
    @precondition(lambda self: not self.closed and self.disruptions < 2)
    @rule(
        what=st.sampled_from(
            [
                "throttle of another method",
                *HANDSHAKE_FAILURES,
                "listener of the other protocol",
                "authentication fails",
            ]
        ),
        throttle_s=st.sampled_from([0.01, 0.5, 4.0]),
    )
    def disruption(self, what: str, throttle_s: float) -> None:
        self.disruptions += 1
        if what in HANDSHAKE_FAILURES or (what == "throttle of another method" and self.unreachable):
            self.handshake_fails(HANDSHAKE_FAILURES.get(what, HANDSHAKE_FAILURES["refused"]))
        elif what == "listener of the other protocol":
            self.handshake_fails(wrong_listener("ssl://127.0.0.1:9/bootstrap", "ssl", requires_tls=False).str())
        elif what == "authentication fails":
            self.authentication_fails()
        else:
            self.throttle_of_another_method(throttle_s)

    def throttle_of_another_method(self, throttle_s: float) -> None:
        """A throttle in the response to another AdminClient method (describe_configs, ...)."""
        self.throttle(2, throttle_s)
        self.step()

    @precondition(lambda self: not self.closed and self.bucket is not None)
    @rule(seconds=st.sampled_from([2.0, 4.0]))
    def another_client_spends_the_quota(self, seconds: float) -> None:
        """Another client of the same principal spends ``seconds`` of the quota (KIP-599's bucket is the principal's,
        not the connection's): this client's next request may be refused with 89, with no throttle it knew of, and
        rule g counts each such topic as a violation."""
        assert self.bucket is not None
        self.bucket.record(seconds * RATE, self.now)
        event("another client spent the quota")

    @precondition(lambda self: not self.closed and self.cap is not None and self.cap > 2)
    @rule()
    def an_operator_lowers_the_cap(self) -> None:
        """The cluster's batch cap is lowered to 2 records while the client runs (Kafka 4.5 makes it a setting,
        KAFKA-20976): what it accepted before proves nothing now (``note_cap_refusal``), and the engine learns the
        new cap from refusals alone."""
        assert self.cap is not None
        self.cap = 2
        event("the batch cap was lowered")

    @precondition(lambda self: not self.closed and self.gate_until > self.now)
    @rule(node_id=st.sampled_from([1, 2]))
    def throttle_back_to_zero(self, node_id: int) -> None:
        """librdkafka's event when a broker's throttle drops back to 0 (it sends one whenever the throttle changes),
        here while a throttle still lasts: the throttle's end never moves backwards (KIP-219, franz-go's rule)."""
        self.throttle(node_id, 0.0)
        self.step()

    @precondition(lambda self: not self.closed and not self.flights and self.gate_until > self.now)
    @rule(
        how=st.sampled_from(["log", "log", "error_cb", "all down"]),
        node_id=st.sampled_from([1, 1, 2]),
        forgiven=st.booleans(),
    )
    def connection_fails(self, how: str, node_id: int, forgiven: bool) -> None:
        """librdkafka reports a connection that carried a throttle failed (a broker restarted): a ``FAIL`` log line or
        an error naming the node, or every broker down. ``forgiven``: the restart started the quota's bucket fresh
        (a one-node cluster, a controller failover); else the debt is still owed (another node of a quorum)."""
        line = f"127.0.0.1:9092/{node_id}: Disconnected: connection closed by peer (after 2205ms in state UP)"
        nodes = list(self.gates) if how == "all down" else [node_id]
        for node in nodes:
            if node in self.gates:
                self.gone[node] = self.gates.pop(node)
        if forgiven and self.bucket is not None:
            self.bucket = TokenBucket(RATE, window_num=2, window_size_s=1.0)
        event(f"a connection that carried a throttle failed ({how})")
        if how == "log":
            self.engine.on_log(f"[thrd:127.0.0.1:9092/{node_id}]: {line}", self.now)
        elif how == "error_cb":
            self.engine.on_error(KafkaError(KafkaError._TRANSPORT, line), self.now)
        else:
            self.engine.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "2/2 brokers are down"), self.now)
        self.node_went_away(0, SECOND)
        self.step()

    @precondition(lambda self: not self.closed and self.answered and self.lost_at[0] == -math.inf)
    @rule()
    def a_node_goes_away(self) -> None:
        """A node that carried no throttle (node 3: throttles come from nodes 1 and 2) stops, once (a rolling restart):
        librdkafka reports its connection lost, with requests in flight or not; a broker may have forwarded one to it
        as the controller (the ``resent`` answer)."""
        line = "127.0.0.1:9094/3: Disconnected: connection closed by peer (after 2205ms in state UP)"
        self.engine.on_log(f"[thrd:127.0.0.1:9094/3]: {line}", self.now)
        self.node_went_away(0, SECOND)
        event("a node that carried no throttle went away" + (" with a request in flight" if self.flights else ""))
        self.step()

    @precondition(
        lambda self: (
            not self.closed
            and self.mode != "redpanda"  # (no KRaft forwarding)
            and any(f.fate is None and f.forwardable for f in self.flights.values())
        )
    )
    @rule(delay=st.sampled_from([0.0, 0.5]), lane=st.integers(0, 1))
    def answer_resent(self, delay: float, lane: int) -> None:
        """A request in flight that a node's going away may have sent through it (``lane``'s, else the other's) is
        answered by its broker's re-send (``broker_resends``)."""
        lanes = [n for n, f in self.flights.items() if f.fate is None and f.forwardable]
        self.answer("resent", applied=True, delay=delay, quota_first=False, lane=lane if lane in lanes else lanes[0])

    @precondition(
        lambda self: (
            not self.closed
            and self.mode != "redpanda"  # (no KRaft quorum)
            and any(f.fate is None and not f.controller_moved for f in self.flights.values())
        )
    )
    @rule()
    def the_controller_moves_silently(self) -> None:
        """The active controller changes while requests are in flight, with no connection of the client lost (a
        leadership change, a dedicated controller restarting): the driver's read of the quorum's leader epoch tells
        the engine with the answer (``controller_moved``), and a broker may have forwarded a request to the old
        controller (the ``resent`` answer)."""
        for flight in self.flights.values():
            if flight.fate is None:
                flight.forwardable = flight.controller_moved = True
        event("the controller moved with no connection lost")

    def node_went_away(self, *lanes: int) -> None:
        """The ``lanes``' handles reported a node gone: their requests in flight, and those sent within
        ``FORWARD_GRACE_S``, may have been forwarded to it (``resent``)."""
        for lane in lanes:
            self.lost_at[lane] = self.now
            flight = self.flights.get(lane)
            if flight is not None:
                flight.forwardable = True

    @precondition(lambda self: not self.closed and not self.flights and self.gate_until > self.now)
    @rule(how=st.sampled_from(["log", "error_cb"]), node_id=st.sampled_from([1, 2]))
    def request_times_out(self, how: str, node_id: int) -> None:
        """librdkafka's own request timed out (in a muted connection): it tears the connection down, but the broker
        kept it and the debt stands: the gate stays as it was (no probe)."""
        line = f"127.0.0.1:9092/{node_id}: 1 request(s) timed out: disconnect (after 60001ms in state UP)"
        event(f"librdkafka's request timed out ({how})")
        if how == "log":
            self.engine.on_log(f"[thrd:127.0.0.1:9092/{node_id}]: {line}", self.now)
        else:
            self.engine.on_error(KafkaError(KafkaError._TIMED_OUT, line), self.now)
        self.step()

    @precondition(lambda self: not self.closed and self.second_from is not None and self.disruptions < 2)
    @rule(how=st.sampled_from(["bootstrap", "node", "authentication", "timed out"]))
    def second_handle_fails(self, how: str) -> None:
        """The second handle's connection fails (to a bootstrap server, before any node is known, or to a node), its
        authentication fails, or its own request times out: the second lane is not used again, and nothing else
        changes (``lanes``: no gate ends, no first contact fails, no pending work fails for it)."""
        self.disruptions += 1
        self.lane_retired = True
        event(f"the second handle fails ({how})")
        if how == "node":  # a node gone, for both lanes' requests (``Engine.on_log``)
            self.node_went_away(0, SECOND)
        elif how != "timed out":  # a failure of its handle that names no node: its own lane's requests only
            self.node_went_away(SECOND)
        if how == "bootstrap":
            line = "127.0.0.1:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed: Connection refused"
            self.engine.on_log(f"[thrd:127.0.0.1:9092/bootstrap]: {line}", self.now, lane=SECOND)
        elif how == "node":
            line = "127.0.0.1:9092/1: Disconnected: connection closed by peer (after 2205ms in state UP)"
            self.engine.on_log(f"[thrd:127.0.0.1:9092/1]: {line}", self.now, lane=SECOND)
        elif how == "authentication":
            self.engine.on_error(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"), self.now, SECOND)
        else:
            self.engine.on_error(KafkaError(KafkaError._TIMED_OUT, "1 request(s) timed out"), self.now, SECOND)
        self.step()

    @precondition(lambda self: not self.closed and self.metadata_wanted)
    @rule(
        fails=st.sampled_from([False, False, False, True]),
        default_readable=st.booleans(),
        lag=st.sampled_from([0, 0, 1, LAG_DEPTH]),
    )
    def metadata(self, fails: bool, default_readable: bool, lag: int = 0) -> None:
        """The cluster's partition counts (or a failed read) and, when it can be read, its num.partitions, from a
        broker ``lag`` changes behind (the cluster as it was then: a KRaft broker replays the metadata log in order)."""
        fails |= self.unreachable
        self.metadata_wanted = False
        told = default_readable and not fails
        counts = dict(self.as_of(lag)[0])
        event(f"metadata read, num.partitions {'told' if told else 'not told'}")
        self.note_cost_read(counts, fails)
        if lag and counts != self.cluster and not fails:
            event("metadata read from a broker behind")
        learned = self.read_back(counts, fails, told)
        if told or learned is not None:
            self.engine_default = DEFAULT_PARTITIONS if told else learned
            self.default_told |= self.engine_default == DEFAULT_PARTITIONS
        for track in self.tracks:  # -1 creates not yet counted: as num.partitions if known, else as 1 for now
            if _pending(track) and _is_default_create(track.topic) and not track.costed:
                self.count_default_create(track)
        self.engine.on_metadata(None if fails else counts, self.now, DEFAULT_PARTITIONS if told else None)
        self.step()

    def note_cost_read(self, counts: dict[str, int], fails: bool) -> None:
        """The grows and deletes this read costs: queued, their name free, not let go while it was out, not costed
        yet. Costed 1 (the read failed) or from a count behind, what they are charged is not known."""
        for track in self.tracks:
            if track.topic.call.kind.operation is CREATE_TOPICS or track.cost_read or not self.queued(track):
                continue
            if self.holds(track) and track.order not in self.held_while_reading:
                track.cost_read = True
                track.cost_unsure = fails or counts.get(track.topic.name) != self.cluster.get(track.topic.name)

    def read_back(self, counts: dict[str, int], fails: bool, told: bool) -> int | None:
        """A read that does not tell num.partitions still shows it: the partitions of the -1 create applied last
        while it was unknown (or whatever that name has become since), if the read shows that name."""
        name = self.default_from
        learned = None if fails or told or name is None else counts.get(name)
        if told or learned is not None:
            self.default_from = None
            event("num.partitions read back from a topic created with it")
        return learned

    def count_default_create(self, track: Track) -> None:
        """The engine counts a -1 create: as the num.partitions it knows, else as Kafka's default, 1."""
        track.costed = True
        track.guessed = self.engine_default is None
        counted = FALLBACK_PARTITIONS if self.engine_default is None else self.engine_default
        track.counted_as = None if counted == DEFAULT_PARTITIONS else counted

    @precondition(lambda self: not self.closed and self.views_wanted is not None)
    @rule(
        lags=st.lists(st.integers(0, LAG_DEPTH), min_size=3, max_size=3),
        unreadable=st.booleans(),
        delay=st.sampled_from([0.0, 0.3]),
        late=st.booleans(),
        offline_first=st.booleans(),
    )
    def views(self, lags: list[int], unreadable: bool, delay: float, late: bool, offline_first: bool = False) -> None:
        """Every broker's Metadata (wait_for_metadata): a broker ``lag`` changes behind still sees the cluster
        before them (an earlier incarnation of a name, too); one may not answer at all. ``late``: the request in
        flight is answered first (the next request of a bulk call applied while the read for the names before it is
        out). ``offline_first``: every topic of two partitions or more lists its first without a leader (its only
        replica's node away): a create is not shown, a grow is (the partition is not one it added)."""
        if late and self.open_flight():
            self.answer("ok", applied=False, delay=0.0, quota_first=False)
        if delay and self.views_out():
            self.advance(delay)
        if not self.views_out():
            return  # the client closed, or the read ended meanwhile
        names = self.views_wanted
        assert names is not None
        self.views_wanted = None
        views = self.broker_views(names, lags, unreadable, offline_first)
        self.last_views, self.last_views_asked = views, set(names) - self.ahead_asked  # (read ahead: judges nothing)
        current = [node for node, lag in zip(BROKERS, lags, strict=True) if lag == 0]
        self.last_views_current = any(views[node] is not None for node in current)
        self.note_ids_read(views)
        self.note_ids_read_ahead(views)
        self.last_read_s = self.now - self.views_asked_at  # what the read cost: later reads are spaced by it
        event(f"views read, {sum(1 for lag in lags if lag)} broker(s) behind")
        self.engine.on_views(views, self.now)
        self.step()

    def as_of(self, lag: int) -> tuple[dict[str, int], dict[str, uuid.UUID]]:
        """The cluster (partitions, ids) as a broker ``lag`` changes behind shows it."""
        return self.history[-min(lag, len(self.history))] if lag and self.history else (self.cluster, self.ids)

    def views_out(self) -> bool:
        """A read of the brokers' views is out, and the client is open."""
        return not self.closed and self.views_wanted is not None

    def broker_views(
        self, names: list[str], lags: list[int], unreadable: bool, offline_first: bool = False
    ) -> BrokerViews:
        """What each broker's Metadata shows of ``names``: the cluster ``lag`` changes ago (KRaft brokers replay the
        metadata log in order); the last broker none at all when ``unreadable``; ``offline_first``: partition 0 of
        a topic of two partitions or more without a leader."""
        views: BrokerViews = {}
        for node, lag in zip(BROKERS, lags, strict=True):
            if unreadable and node == BROKERS[-1]:
                views[node] = None
                continue
            seen, ids = self.as_of(lag)
            views[node] = {name: _view(seen[name], ids[name], offline_first) for name in names if name in seen}
        return views

    def named_after_read_ahead(self, track: Track) -> None:
        """A call names the topic. A wait_for_metadata create that holds its name takes the ids read ahead of it
        within AHEAD_FRESH_S of that read's asking, or, when that read is out and no call named the name since it was
        asked, that read's answer; any call naming it takes them, or spoils the read out for it."""
        name, holds = track.topic.name, self.holds(track)
        if holds and _reads_ids_first(track) and name in self.ahead_asked and name not in self.ahead_spoiled:
            self.ahead_takers[name] = track
        read = self.ahead_read.pop(name, None)
        self.ahead_wanted.discard(name)
        if name in self.ahead_asked:
            self.ahead_spoiled.add(name)
        if read is not None and _reads_ids_first(track) and holds and self.now - read[1] <= AHEAD_FRESH_S:
            assert self.changes.get(name, 0) == read[2], f"{name} changed since its ids were read ahead"
            track.ids_asked = track.ids_read = True
            track.ids_before = set(read[0])
            event("a create took the ids read ahead")

    def note_ids_read_ahead(self, views: BrokerViews) -> None:
        """The read ahead came back: the creates chosen while it was out take its ids, if still waiting; for the
        other names they are kept, unless a call named them meanwhile; a read that missed a broker is neither."""
        takers, self.ahead_takers = self.ahead_takers, {}
        complete = bool(views) and all(view is not None for view in views.values())
        for name in self.ahead_asked if complete else ():
            ids = {view[name].topic_id for view in views.values() if view and name in view}
            taker = takers.get(name)
            if taker is not None and _pending(taker) and not taker.ids_read:
                assert self.changes.get(name, 0) == self.ahead_asked_changes[name], f"{name} changed since asked"
                taker.ids_asked = taker.ids_read = True
                taker.ids_before = ids
                event("a create submitted while the read ahead was out took its ids")
            elif taker is None and name not in self.ahead_spoiled:
                self.ahead_read[name] = ids, self.views_asked_at, self.ahead_asked_changes[name]
        self.ahead_asked, self.ahead_spoiled = set(), set()

    def note_ids_read(self, views: BrokerViews) -> None:
        """A create of a wait_for_metadata call asked about: the ids its name had on every broker before its send."""
        for track in self.tracks:
            if track.ids_asked and not track.ids_read:
                track.ids_read = True
                name = track.topic.name
                track.ids_before = {view[name].topic_id for view in views.values() if view and name in view}

    @precondition(lambda self: not self.closed and bool(self.drains))
    @rule(
        how=st.sampled_from(["answered", "answered", "closed", "not sent"]),
        throttle_s=st.sampled_from([0.0, 2.0]),
        lane=st.integers(0, 1),
    )
    def drained(self, how: str, throttle_s: float, lane: int = 0) -> None:
        """The sentinel's outcome: answered after the abandoned request's late answer and its mute (its own
        throttle, if any, reported first), written and never answered (librdkafka tore the connection down), or
        never written (no controller in time). ``lane``: whose connection's sentinel, if two are out."""
        lane = lane if lane in self.drains else min(self.drains)
        if how == "answered" and throttle_s > 0:
            self.throttle(1, throttle_s, lane=lane)
        self.drained_as(how, lane)

    def drained_as(self, how: str, lane: int) -> None:
        del self.drains[lane]
        if how != "not sent":
            self.busy_lanes.discard(lane)
        if how == "answered":
            self.reached = self.answered = True
        event(f"sentinel {how}" + (" (the second lane's)" if lane else ""))
        self.engine.on_drained(Drained(how), self.now, lane)
        self.step()

    @precondition(lambda self: not self.closed and self.probe_wanted)
    @rule(answered=st.booleans())
    def probe(self, answered: bool) -> None:
        answered &= not self.unreachable
        self.probe_wanted = False
        self.reached |= answered
        self.answered |= answered
        self.engine.on_probe(answered, self.now)
        self.step()

    @precondition(lambda self: not self.closed and self.lane_probe_wanted)
    @rule(answered=st.booleans())
    def lane_probe(self, answered: bool) -> None:
        """The second lane's connection answers its probe (its first contact: full requests may go there), or does
        not (its handle could not be made, or reached no broker: the lane is retired)."""
        answered &= not self.unreachable
        self.lane_probe_wanted = False
        if answered:
            self.second_answered = True
        else:
            self.lane_retired = True
        event(f"the second lane's probe {'answered' if answered else 'not answered'}")
        self.engine.on_probe(answered, self.now, SECOND)
        self.step()

    def handshake_fails(self, text: str) -> None:
        """librdkafka reports a connection that failed before its handshake: to error_cb (refused, TLS, the
        client's own finding about the listener) or only in its log (ApiVersions unanswered)."""
        if not self.reached:
            self.contact_failing = True
            if "check security.protocol" in text:
                self.wrong_listener = True
            elif "in state CONNECT" in text:
                self.wrong_listener = False  # down, perhaps restarting with other listeners
        if text.startswith("[thrd:"):
            self.engine.on_log(text, self.now)
        else:
            self.engine.on_error(KafkaError(KafkaError._TRANSPORT, text), self.now)
        self.step()

    def authentication_fails(self) -> None:
        self.engine.on_error(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"), self.now)
        self.step()

    @precondition(lambda self: not self.closed and (bool(self.flights) or any(_pending(t) for t in self.tracks)))
    @rule()
    def close(self) -> None:
        self.closed = True
        self.pending_at_close = [t for t in self.tracks if _pending(t)]
        event("rule h: closed with topics pending" if self.pending_at_close else "rule h: closed, nothing pending")
        self.engine.close(self.now)
        self.step()

    # -- invariants --------------------------------------------------------------------------------

    @invariant()
    def every_topic_is_settled_by_its_deadline(self) -> None:
        """Rule e: no future is left pending past its call's deadline."""
        for track in self.tracks:
            if _pending(track) and track.topic.call.spec.deadline <= self.now:
                raise AssertionError(f"rule e: {track.topic.name} pending past its deadline")

    @invariant()
    def close_settles_every_topic(self) -> None:
        """Rule h: after close(), no future is pending, and each one pending at the close was told so, as a
        ClientClosedError (or, applied but not yet shown everywhere, a NotYetVisibleError), or, answered applied
        and held to settle after the next send (issue 40), as applied."""
        if not self.closed:
            return
        for track in self.tracks:
            assert not _pending(track), f"rule h: {track.topic.name} pending after close()"
        for track in self.pending_at_close:
            assert track.withdrawn or track.settled is not None
            exc = None if track.settled is None else track.settled[1]
            held = track.settled is not None and exc is None and track.answered_ok and not _waits(track)
            closed = isinstance(exc, (ClientClosedError, NotYetVisibleError)) or track.withdrawn or held
            assert closed, f"rule h: {track.topic.name}, pending at close(), told {exc!r}"

    @invariant()
    def calls_give_up_on_connections_that_fail_before_their_handshake(self) -> None:  # first contact
        if self.reached or not self.contact_failing or self.closed:
            return
        for track in self.tracks:
            call = track.topic.call
            if not self.queued(track):
                continue
            give_up_at = call.spec.started_at + (0.0 if self.wrong_listener else FIRST_CONTACT_S)
            assert self.now < give_up_at - EPSILON, (
                f"{track.topic.name} still waits for a connection that fails before its handshake"
            )

    @invariant()
    def what_each_topic_was_told_stays_true(self) -> None:  # rule f
        """Every outcome told stays true of what the cluster did, then and later: success only when a broker said
        so, and "not yet visible" only for a change applied; after an attempt that may have been applied, only
        "outcome unknown"; "not sent" only for what no broker received; a plain failure never for what a broker
        accepted."""
        for track in self.told:
            _still_true(track)

    @invariant()
    def a_call_finishes_once_whole_and_settled(self) -> None:
        """A call's duration is recorded once, when it is whole (as the model gave it) and its last topic is settled
        or withdrawn: never for a call given in two parts whose rest is still to come. Each finish is its call's:
        its operation, and its first failure's type (None when every topic succeeded)."""
        calls: dict[int, list[Track]] = {}
        for track in self.tracks:
            calls.setdefault(track.topic.call.id, []).append(track)
        seen = set(self.finished_calls)
        done = [
            call_id
            for call_id, tracks in calls.items()
            if call_id in self.whole_calls and call_id not in seen and not any(_pending(t) for t in tracks)
        ]
        fresh = self.sink.of(CallFinished)[len(self.finished_calls) :]
        expected = Counter((self.call_operations[call_id], self.first_errors.get(call_id)) for call_id in done)
        assert Counter((e.operation, e.error_type) for e in fresh) == expected, (
            f"calls finished {[(e.operation, e.error_type) for e in fresh]}, whole and settled {expected}"
        )
        self.finished_calls += done

    @invariant()
    def a_batch_cap_probe_out_is_a_request_in_flight(self) -> None:
        """The request the batch cap counts as its probe out is in flight: one answered, taken back unsent or refused
        by confluent-kafka is none (found by review: a probe taken back unsent stayed out, and no request of the
        client probed again)."""
        if not hasattr(self, "engine"):
            return
        status = self.engine.status
        probe = status.cap_probe
        assert probe is None or probe in (status.in_flight, status.second_in_flight), f"probe {probe} out, not sent"

    @invariant()
    def metrics_equal_what_the_responses_said(self) -> None:  # rule g
        if not hasattr(self, "engine"):
            return
        """Rule g: the sink's throttles are the responses' (a request's when it completes), one violation per topic
        refused by the quota (by the broker's 89, or locally), a retry per response that queued a topic again."""
        throttles = [event.throttle_ms for event in self.sink.of(ResponseThrottle)]
        recorded = [t for t in self.recorded_throttles if t > 0]
        assert [t for t in throttles if t > 0] == recorded, f"rule g: throttles {throttles}, responses {recorded}"
        violations = sum(event.topics for event in self.sink.of(QuotaViolations))
        # the 89s of a request still in flight (an answer missing a topic) are counted when it completes
        in_flight = sum(flight.refused_89 for flight in self.flights.values())
        refusals = self.answers_89 - in_flight + self.local_refusals
        maybe = self.maybe_local_refusals
        assert refusals <= violations <= refusals + maybe, (
            f"rule g: {violations} violations recorded, {refusals} quota refusals (and {maybe} perhaps)"
        )
        retried = len(self.sink.of(Retried))
        assert self.retries_at_least <= retried <= self.retries_at_most, f"rule g: {retried} retries recorded"
        assert all(event.mutations > 0 for event in self.sink.of(MutationsAdmitted)), "rule g: admitted nothing"
        assert all(event.seconds >= 0 for event in self.sink.of(BackedOff)), "rule g: a negative back-off"


def _mark_written(tracks: list[Track], *, unanswered: bool = False) -> None:
    """A broker received the request (or may have); ``unanswered``: its answer never reached the client."""
    for track in tracks:
        track.written += 1
    if unanswered:
        _mark_unanswered(tracks)


def _mark_unanswered(tracks: list[Track]) -> None:
    """An attempt handed over whose outcome the client never learns: it may have been applied."""
    for track in tracks:
        track.unanswered += 1


def _any_retryable(flight: Flight, results: Results) -> bool:
    """Whether the engine may retry a topic of the request: a retryable error, or a topic left out of the answer
    (the batch cap's refusal of several topics: ``note_cap_refusal``)."""
    tracks = flight.tracks
    throttled = any(throttle_s > 0 for throttle_s in flight.throttles)  # what the engine knows of it
    if any(_retryable(results[t.topic.name], t, throttled) for t in tracks if t.topic.name in results):
        return True
    return len(results) < len(tracks)


def _quota_code(exc: BaseException) -> bool:
    """An error that may be a refusal for the quota (error 89, or Redpanda's UNKNOWN_SERVER_ERROR)."""
    return isinstance(exc, KafkaException) and exc.args[0].code() in (
        KafkaError.THROTTLING_QUOTA_EXCEEDED,
        KafkaError.UNKNOWN,
    )


def _retryable(exc: BaseException | None, track: Track, throttled: bool) -> bool:
    if not isinstance(exc, KafkaException):
        return False
    error = exc.args[0]
    code = error.code()
    quota = code == KafkaError.THROTTLING_QUOTA_EXCEEDED or (
        code == KafkaError.UNKNOWN
        and (error.str() == REDPANDA or (track.topic.call.kind.operation is DELETE_TOPICS and throttled))
    )
    if quota:
        return track.topic.call.spec.retry_on_quota_violation
    return code in (KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT) or code < -1


def _still_true(track: Track) -> None:
    """What a settled topic was told is true of what the model knows the cluster did (rule f)."""
    assert track.settled is not None
    exc = track.settled[1]
    if exc is None:
        assert track.answered_ok, "rule f: success without a broker saying so"
    elif isinstance(exc, NotYetVisibleError):
        assert track.answered_ok, f"rule f: not yet visible, for a change not applied: {exc}"
    elif isinstance(exc, OutcomeUnknownError):
        return
    elif track.unanswered:
        raise AssertionError(f"rule f: an attempt may have been applied, but the topic was told: {exc!r}")
    elif isinstance(exc, NotSentError):
        assert track.written == 0, f"rule f: 'not sent' for a topic a broker received: {exc}"
    else:
        assert not track.accepted, f"rule f: a plain failure for a topic the broker accepted: {exc!r}"


def _outcome(exc: BaseException | None) -> str:
    """A settlement's label: applied, or its error's type (NotSentError, OutcomeUnknownError, ...) and typed reason."""
    if exc is None:
        return "applied"
    why = getattr(exc, "why", None)
    return type(exc).__name__ if why is None else f"{type(exc).__name__} ({why.value})"


def _made(item: Any) -> int:
    """The partitions a create makes: the count asked for, or the cluster's default for -1."""
    return item.num_partitions if item.num_partitions > 0 else DEFAULT_PARTITIONS


def _counted(topic: Topic, current: int | None) -> int:
    """What a paced client counts a grow or delete of a topic of ``current`` partitions as: what the broker charges
    (the partitions a grow adds, those a delete removes); a grow the broker refuses (no such topic, no growth) as 1,
    which a client cannot tell before, a delete of no such topic as 0 (the broker fails it first)."""
    if topic.call.kind.operation is DELETE_TOPICS:
        return current or 0
    added = topic.item.new_total_count - (current or 0)
    return added if current and added > 0 else 1


def _is_default_create(topic: Topic) -> bool:
    return topic.call.kind.operation is CREATE_TOPICS and topic.item.num_partitions < 0


def _pending(track: Track) -> bool:
    return track.settled is None and not track.withdrawn


def _view(partitions: int, topic_id: uuid.UUID, offline_first: bool) -> TopicView:
    """A broker's view of a topic of ``partitions``, every one led, or its first without a leader."""
    if offline_first and partitions >= 2:
        return TopicView(partitions, False, topic_id, frozenset({0}))
    return TopicView(partitions, True, topic_id)


def _reads_ids_first(track: Track) -> bool:
    """A create of a wait_for_metadata call: every broker's ids of its name are read before it is first sent."""
    call = track.topic.call
    return call.spec.wait_for_metadata and not call.kind.validate_only and call.kind.operation is CREATE_TOPICS


def _waits(track: Track) -> bool:
    """A topic of a wait_for_metadata call that applies something (not validate_only)."""
    call = track.topic.call
    return call.spec.wait_for_metadata and not call.kind.validate_only


def _remaining_s(track: Track, now: float) -> float:
    """The time left to the topic's call, from what its caller asked for."""
    return track.topic.call.spec.deadline - now


def _budget_s(track: Track, now: float) -> float:
    """How long a request of the topic's call may take: the time left, capped by the caller's request_timeout."""
    cap = track.topic.call.spec.request_timeout_s
    remaining = _remaining_s(track, now)
    return remaining if cap is None else min(remaining, cap)


def _records_made(topic: Topic) -> int:
    """The records an applied topic made, at least: a grow is sized as its new total, but makes what it adds."""
    if topic.call.kind.operation is CREATE_PARTITIONS:
        return max(1, topic.cost or 0)
    return topic.records


def _is_cap(exc: BaseException | None) -> bool:
    return isinstance(exc, KafkaException) and exc.args[0].str() in (CAP_RECORDS, CAP_PARTITIONS)


def _is_policy(exc: BaseException | None) -> bool:
    return isinstance(exc, KafkaException) and exc.args[0].code() == KafkaError.POLICY_VIOLATION


def _broker_answer(exc: BaseException | None) -> bool:
    return exc is None or (isinstance(exc, KafkaException) and exc.args[0].code() >= -1)


EngineModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("ENGINE_MODEL_EXAMPLES", "600")),
    stateful_step_count=25,
    deadline=None,
    derandomize=os.environ.get("ENGINE_MODEL_RANDOM") is None,  # CI: the same steps every run; set it to explore
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
test_engine_model = EngineModel.TestCase


class PacedEngineModel(EngineModel):
    """The model, always paced against a quota, over topics that mostly exist: a grow's or delete's count
    (``check_charged``, rule g) is compared in about 7 % of random examples, twice ``EngineModel``'s 3 %."""

    @start_rule(
        mode=st.sampled_from(["strict", "permissive", "redpanda"]),
        paced=st.just(True),
        existing=st.dictionaries(st.sampled_from(NAMES), st.integers(1, 3), min_size=2, max_size=4),
        cap=st.sampled_from([None, None, None, 4, 7]),
        reached=st.sampled_from([True, True, True, True, False]),
        bulk=st.sampled_from([None, None, None, "delete", "grow"]),
    )
    def start(self, **drawn: Any) -> None:  # (the strategies name the base's arguments)
        super().start(**drawn)


PacedEngineModel.TestCase.settings = settings(
    EngineModel.TestCase.settings,
    max_examples=int(os.environ.get("ENGINE_MODEL_EXAMPLES", "300")),
    stateful_step_count=30,
)
test_paced_engine_model = PacedEngineModel.TestCase


def test_closed_errors_in_flight_are_outcome_unknown_and_queued_are_not_sent() -> None:
    """close() (rule h) as the model checks it, by type."""
    engine = Engine(pacer=None, backoff=RetryBackoff())
    engine.on_probe(True, 0.0)
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), 10.0, 10000, True, None, None, started_at=0.0)
    call, _ = submit_call(engine, spec, [("x", NewTopic("x", 1, 1), 1, 2)])
    out = engine.step(0.0)
    assert out.send is not None
    later, _ = submit_call(engine, spec, [("x", NewTopic("x", 1, 1), 1, 2)])
    engine.close(0.1)
    settled = {topic.call_id: exc for topic, exc in engine.step(0.1).settle}
    assert isinstance(settled[call.id], ClientClosedError)
    assert isinstance(settled[call.id], OutcomeUnknownError)
    assert isinstance(settled[later.id], ClientClosedError)
    assert isinstance(settled[later.id], NotSentError)


def _start(state: EngineModel, **changes: Any) -> None:
    """Start a pinned run of the model: no quota, nothing existing, a broker answered, no bulk call, but ``changes``."""
    start: dict[str, Any] = {"mode": "none", "paced": False, "seed": 0, "existing": {}, "cap": None, "reached": True}
    state.start(**{**start, "per_request": None, "bulk": None, **changes})


def test_the_model_sees_an_earlier_incarnation_on_lagging_brokers() -> None:
    """Issue 27, finding 7, as a pinned run of the model (hypothesis reaches it rarely in 25 steps): ``a`` (3
    partitions) deleted and created again (1 partition) with wait_for_metadata; two brokers two changes behind
    still show the old ``a``. The model's check at settlement (``shown_everywhere``) fails a client that takes
    them for the new topic."""
    state = EngineModel()
    try:
        _start(state, existing={"a": 3})
        state.submit("delete", ["a"], 30.0, True, False, 1, None, None, False)
        state.answer_ok(views_after=False)
        state.submit("create", ["a"], 30.0, True, False, 1, None, None, True)
        state.views([0, 0, 0], unreadable=False, delay=0.0, late=False)  # the ids before the send: none
        state.answer_ok(views_after=False)
        state.views([0, 2, 2], unreadable=False, delay=0.0, late=False)
        [create] = [t for t in state.tracks if t.topic.call.kind.operation is CREATE_TOPICS]
        assert create.settled is None  # two brokers show the old incarnation
        state.advance(1.0)
        state.views([0, 0, 0], unreadable=False, delay=0.0, late=False)
        assert create.settled is not None
        assert create.settled[1] is None
    finally:
        state.teardown()


def test_the_model_shows_a_grow_past_an_offline_first_partition_and_holds_a_create() -> None:
    """Helper 111 on a three-node Kafka, as a pinned run of the model: ``a`` (2 partitions) grown to 3 with
    wait_for_metadata while every broker lists its partition 0 without a leader (its only replica's node away) is
    shown, the partition not being one the grow added; a create of ``b`` (2 partitions) read so is not, until its
    first partition has a leader. The model's check at settlement (``shown_everywhere``) holds the engine to both."""
    state = EngineModel()
    try:
        _start(state, existing={"a": 2})
        state.submit("grow", ["a"], 30.0, True, False, 2, None, None, True)
        state.answer_ok(views_after=False)
        state.views([0, 0, 0], unreadable=False, delay=0.0, late=False, offline_first=True)
        [grow] = [t for t in state.tracks if t.topic.call.kind.operation is CREATE_PARTITIONS]
        assert grow.settled is not None
        assert grow.settled[1] is None
        state.submit("create", ["b"], 30.0, True, False, 2, None, None, True)
        state.views([0, 0, 0], unreadable=False, delay=0.0, late=False)  # the ids before the send: none
        state.answer_ok(views_after=False)
        state.views([0, 0, 0], unreadable=False, delay=0.0, late=False, offline_first=True)
        [create] = [t for t in state.tracks if t.topic.call.kind.operation is CREATE_TOPICS]
        assert create.settled is None  # its first partition has no leader: not usable yet
        state.advance(1.0)
        state.views([0, 0, 0], unreadable=False, delay=0.0, late=False)
        assert create.settled is not None
        assert create.settled[1] is None
    finally:
        state.teardown()


def test_a_cut_short_retry_of_a_cancelled_topic_keeps_its_unknown_outcome() -> None:
    """Found by the model (600 derandomized examples, before its issue-30 split drew other examples): a create's send
    is cut short when confluent-kafka's call may have run (it may be applied), the sentinel comes back and the
    retry goes; its caller cancels it in flight, and the retry's send is cut short before the call ran. The topic
    may still have been created by the first attempt: it must be told "outcome unknown", not "not sent"."""
    state = EngineModel()
    try:
        _start(state)
        state.submit_default_creates(["a"])
        state.metadata(fails=False, default_readable=False)
        state.send_cut_short(handed=True, applied=False)
        state.advance(0.2)
        state.drained(how="answered", throttle_s=0.0)
        state.cancel_in_flight(pick=0, then=None)
        state.submit_default_creates(["a"])
        state.send_cut_short(handed=False, applied=False)
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_a_cancelled_topic_a_broker_refused_before_is_not_told_not_sent() -> None:
    """Found by the model (ENGINE_MODEL_RANDOM=1): a bulk grow refused whole for the batch cap (written, nothing
    applied) is split; its caller cancels a topic of the smaller request in flight, and librdkafka finds no
    controller for it. A broker did receive the topic's first attempt: "not sent" is untrue."""
    state = EngineModel()
    try:
        _start(state, mode="strict", paced=True, cap=4, bulk="grow")
        state.metadata(fails=False, default_readable=False)
        state.submit_default_creates(["a"])
        state.answer("ok", applied=False, delay=0.0, quota_first=False)
        state.withdraw(pick=0)
        state.advance(0.001)
        state.answer("no controller", applied=False, delay=0.0, quota_first=False)
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_the_model_states_rule_g_a_grow_held_behind_a_grow_is_costed_from_it_not_from_a_broker_behind() -> None:
    """Rule g for a paced engine, as a pinned run of the model: ``a`` (1 partition) grown to 2, and by a second call
    to 3, held behind the first (rule a). The first applied, the second costs 1 (3 - 2), though a broker one change
    behind still shows 1 partition (it would cost 2): ``check_charged`` fails an engine that reads the count instead
    of taking it from the change it was told applied (``machine._cost_behind``)."""
    state = EngineModel()
    try:
        _start(state, mode="strict", paced=True, existing={"a": 1})
        state.submit("grow", ["a"], 30.0, True, False, 1, None, None, False)
        state.metadata(fails=False, default_readable=True)
        state.submit("grow", ["a"], 30.0, True, False, 2, None, None, False)
        state.answer_ok(views_after=False)
        if state.metadata_wanted:  # (the engine that reads it)
            state.metadata(fails=False, default_readable=True, lag=1)
        assert state.flight is not None
        assert state.flight.request.mutations == 1
        state.answer_ok(views_after=False)
        assert state.cluster == {"a": 3}
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_the_model_states_rule_g_a_delete_let_go_while_a_read_is_out_is_not_costed_by_that_read() -> None:
    """Rule g for a paced engine, as a pinned run of the model: ``a`` grown from 1 to 2 partitions; a second grow of
    ``a`` waits for a read of its cost, and a delete of ``a`` waits behind it (rule a). The grow is withdrawn while
    the read is out, and a broker one change behind answers it (1 partition): the delete is costed 2 by a read asked
    after, not 1 by that one (``MetadataReads.let_go``)."""
    state = EngineModel()
    try:
        _start(state, mode="strict", paced=True, existing={"a": 1})
        state.submit("grow", ["a"], 30.0, True, False, 1, None, None, False)
        state.metadata(fails=False, default_readable=True)
        state.answer_ok(views_after=False)
        assert state.cluster == {"a": 2}
        state.submit("grow", ["a"], 30.0, True, False, 1, None, None, False)
        assert state.metadata_wanted
        state.submit("delete", ["a"], 30.0, True, False, 1, None, None, False)
        grow, delete = state.tracks[1:]
        state.withdraw_track(grow)
        state.metadata(fails=False, default_readable=True, lag=1)
        if state.metadata_wanted:  # (the engine that does not cost it from the read that predates its release)
            state.metadata(fails=False, default_readable=True)
        assert state.flight is not None
        assert state.flight.tracks == [delete]
        assert state.flight.request.mutations == 2
        state.answer_ok(views_after=False)
        assert state.cluster == {}
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


@pytest.mark.parametrize(
    ("ahead", "validate_only", "existing", "costed"),
    [
        ("grows to 2", False, 1, 2),
        ("grows to 2, validate_only", True, 1, 1),
        ("is refused (3 partitions)", False, 3, 3),
    ],
)
def test_the_model_states_rule_g_a_delete_queued_with_a_grow_before_the_read_is_costed_after_the_grow(
    ahead: str, validate_only: bool, existing: int, costed: int
) -> None:
    """Rule g for a paced engine, as pinned runs of the model (review 132): a grow of ``a`` to 2 and a delete of
    ``a`` both queued before the read that costs the grow. The delete, held behind the grow (rule a), is costed from
    what the grow left, not from that read: 2 after a grow applied (helper 128's case: an engine that costs held
    topics from the read counts 1), 1 after a validate_only one, 3 after one refused as no growth."""
    state = EngineModel()
    try:
        _start(state, mode="strict", paced=True, existing={"a": existing})
        state.submit("grow", ["a"], 30.0, True, validate_only, 1, None, None, False)
        state.submit("delete", ["a"], 30.0, True, False, 1, None, None, False)
        state.metadata(fails=False, default_readable=True)
        state.answer_ok(views_after=False)
        if state.metadata_wanted:  # (a grow that changed nothing, or the engine that reads it)
            state.metadata(fails=False, default_readable=True, lag=1)
        if state.metadata_wanted:
            state.metadata(fails=False, default_readable=True)
        assert state.flight is not None, ahead
        assert state.flight.request.mutations == costed, ahead
        state.answer_ok(views_after=False)
        assert state.cluster == {}
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_the_model_states_rule_g_a_delete_behind_a_grow_not_shown_by_its_deadline_is_costed_from_the_grow() -> None:
    """Rule g for a paced engine, as a pinned run of the model (review 132): a wait_for_metadata grow of ``a`` to 2,
    answered applied, ends NotYetVisibleError at its deadline; the delete behind it is costed 2 from the grow's
    change (its last attempt's answer), not 1 from a broker one change behind."""
    state = EngineModel()
    try:
        _start(state, mode="strict", paced=True, existing={"a": 1})
        state.submit("grow", ["a"], 5.0, True, False, 1, None, None, True)
        state.submit("delete", ["a"], 30.0, True, False, 1, None, None, False)
        state.metadata(fails=False, default_readable=True)
        state.answer_ok(views_after=False)
        state.advance(10.0)
        grow, delete = state.tracks
        assert grow.settled is not None
        assert isinstance(grow.settled[1], NotYetVisibleError)
        if state.metadata_wanted:  # (the engine that reads it)
            state.metadata(fails=False, default_readable=True, lag=1)
        if state.metadata_wanted:
            state.metadata(fails=False, default_readable=True)
        assert state.flight is not None
        assert state.flight.tracks == [delete]
        assert state.flight.request.mutations == 2
    finally:
        state.teardown()


def test_the_model_knows_a_grow_behind_a_default_create_is_costed_from_the_default_the_engine_read_back() -> None:
    """The model does not fail a correct engine (review 132): num.partitions read back from ``a``, created with it,
    while a broker two changes behind still shows the old ``a`` (1 partition); a grow of ``b`` to 5 held behind a
    create of ``b`` with the default is costed 4 from that (5 - 1), though the broker charges 2 (``b`` has 3)."""
    state = EngineModel()
    try:
        _start(state, mode="strict", paced=True, existing={"a": 1})
        state.submit("delete", ["a"], 30.0, True, False, 1, None, None, False)
        state.metadata(fails=False, default_readable=False)
        state.answer_ok(views_after=False)
        state.submit_default_creates(["a"])
        state.metadata(fails=False, default_readable=False)
        state.answer_ok(views_after=False)
        assert state.cluster == {"a": DEFAULT_PARTITIONS}
        state.advance(1.0)
        state.submit_default_creates(["b"])
        state.submit("grow", ["b"], 30.0, True, False, 4, None, None, False)
        state.metadata(fails=False, default_readable=False, lag=2)  # shows the old a: 1 partition
        assert state.engine_default == 1
        state.answer_ok(views_after=False)
        grow = state.tracks[-1]
        assert grow.cost_unsure
        assert not grow.cost_exact
        assert state.flight is not None
        assert state.flight.request.mutations == 4
    finally:
        state.teardown()


def test_the_model_states_rule_b_a_paced_engines_probe_goes_past_its_mirrors_debt() -> None:
    """Rule b for a paced engine, as a pinned run of the model (hypothesis rarely gives a paced engine a mutation
    throttle): another client of the principal spent 30 s of the quota, so ``a`` is refused with a 28 s throttle,
    which the pacer's mirror holds too; the broker restarts and forgives it. A call shorter than the old debt is
    not refused for it (``check_refused_for_a_live_throttle``): the probe goes, and its answer clears the mirror."""
    state = EngineModel()
    try:
        _start(state, mode="strict", paced=True)
        assert state.bucket is not None
        state.bucket.record(300, state.now)
        state.submit("create", ["a"], 60.0, True, False, 1, None, None, False)
        state.answer_ok(views_after=False)
        assert state.gate_until > state.now + 20, "a's 89 and its throttle: the gate and the mirror hold it"
        state.connection_fails(how="log", node_id=1, forgiven=True)
        state.submit("create", ["b"], 5.0, True, False, 1, None, None, False)
        state.answer_ok(views_after=False)  # the probe, a: admitted by the fresh bucket, no throttle
        state.advance(0.2)
        state.answer_ok(views_after=False)
        assert [t.settled is not None and t.settled[1] is None for t in state.tracks] == [True, True], "a, b created"
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_the_model_states_rule_c_calls_three_times_apart_do_not_share() -> None:
    """Rule c as a pinned run of the model (hypothesis draws the pair rarely): two calls queued behind a request, of
    budgets 5 s and 15 s, go in requests of their own (``check_sharing`` fails a request that holds both); two of
    5 s and 9.5 s share one."""
    for factor, shared in ((3.0, False), (1.9, True)):
        state = EngineModel()
        try:
            _start(state)
            state.submit("create", ["a"], 30.0, True, False, 1, None, None, False)
            state.submit_pair("create", 5.0, factor, False)
            state.answer_ok(views_after=False)
            assert state.flight is not None
            assert len(state.flight.tracks) == (2 if shared else 1)
        finally:
            state.teardown()


def test_the_model_states_rule_c_a_shared_request_carries_the_longest_calls_controller_deadline() -> None:
    """Rule c, issue 39: a 5 s call and a 9.5 s call share a request, and the controller's deadline is the long call's
    own (``check_sharing`` failed the engine that gave it the short call's: "the controller's deadline (4.95 s) is not
    the longest call's"). The controller answers after 6 s: the short call, in flight at its deadline, is told
    "outcome unknown", never "not sent"; the long call succeeds, as alone."""
    state = EngineModel()
    try:
        _start(state)
        state.submit("create", ["a"], 30.0, True, False, 1, None, None, False)
        state.submit_pair("create", 5.0, 1.9, False)
        state.answer_ok(views_after=False)
        flight = state.flight
        assert flight is not None
        assert [t.topic.name for t in flight.tracks] == ["b", "c"]
        state.advance(6.0)
        state.answer("ok", applied=False, delay=0.0, quota_first=False)
        state.what_each_topic_was_told_stays_true()
        short, long = state.tracks[1:]
        assert short.settled is not None
        assert isinstance(short.settled[1], OutcomeUnknownError)
        assert long.settled is not None
        assert long.settled[1] is None
    finally:
        state.teardown()


def test_the_model_states_rule_d_on_the_budget_the_callers_request_timeout_caps() -> None:
    """Rule d, issue 39: with three recent answers, a 60 s call whose request_timeout (1 ms) is shorter than any
    of them is not sent (``check_too_late`` holds the refusal to the budget). Was: rule d judged the 60 s left, so
    the create was sent, librdkafka dropped its answer at 1 ms, and it was re-sent until the deadline."""
    state = EngineModel()
    try:
        _start(state)
        for name in ("a", "b", "c"):
            state.submit("create", [name], 30.0, True, False, 1, None, None, False)
            state.answer("ok", applied=False, delay=0.01, quota_first=False)
        state.submit("create", ["d"], 60.0, True, False, 1, 0.001, None, False)
        assert state.flight is None
        track = state.tracks[-1]
        assert track.settled is not None
        exc = track.settled[1]
        assert isinstance(exc, NotSentError), repr(exc)
        assert exc.why is NotSentReason.ROUND_TRIP
        assert track.settled[0] == state.now  # at once, not at the deadline
    finally:
        state.teardown()


def test_the_model_states_rule_d_a_first_attempt_needs_three_answers() -> None:
    """Rule d as a pinned run of the model: one answer that took 3 s is no estimate for a first attempt, so a 1 s
    call is sent, not refused as "less than a round trip" (``check_too_late`` fails such a refusal)."""
    state = EngineModel()
    try:
        _start(state)
        state.submit("create", ["a"], 30.0, True, False, 1, None, None, False)
        state.answer("ok", applied=False, delay=3.0, quota_first=False)
        state.submit("create", ["b"], 1.0, True, False, 1, None, None, False)
        assert state.flight is not None
        assert [t.topic.name for t in state.flight.tracks] == ["b"]
    finally:
        state.teardown()


def test_the_model_states_rule_e_a_request_never_completed_is_settled_at_the_deadline() -> None:
    """Rule e as a pinned run of the model (the 600 derandomized examples leave every request in flight at its call's
    deadline to librdkafka's own timeout, which ends then): librdkafka never completes a 1 s create's request, which
    the engine abandons only 2 s after its timeout; the topic is still told "outcome unknown" at its deadline
    (``every_topic_is_settled_by_its_deadline``, and ``settle``'s own check, fail an engine that waits)."""
    state = EngineModel()
    try:
        _start(state)
        state.submit("create", ["a"], 1.0, True, False, 1, None, None, False)
        state.no_answer("never completed", applied=False)
        state.advance(3.0)
        state.every_topic_is_settled_by_its_deadline()
        [track] = state.tracks
        assert track.settled is not None
        assert track.settled[0] == 1001.0  # the model's clock starts at 1000 s
        exc = track.settled[1]
        assert isinstance(exc, OutcomeUnknownError)
        assert exc.why is OutcomeUnknownReason.NO_RESPONSE
    finally:
        state.teardown()


def test_the_model_states_rule_f_already_exists_after_a_lost_answer_may_have_been_applied() -> None:
    """Rule f as a pinned run of the model (the derandomized examples do not reach it): a create is applied and its
    connection dies before the answer; the retry is answered TOPIC_ALREADY_EXISTS. The first attempt may have created
    it: the topic is told "outcome unknown" (PossiblyAppliedError), never a plain "already exists"
    (``what_each_topic_was_told_stays_true`` fails an engine that says so)."""
    state = EngineModel()
    try:
        _start(state)
        state.submit("create", ["a"], 30.0, True, False, 1, None, None, False)
        state.answer("transport", applied=True, delay=0.0, quota_first=False)
        state.advance(1.0)
        state.answer_ok(views_after=False)
        state.what_each_topic_was_told_stays_true()
        [track] = state.tracks
        assert track.settled is not None
        exc = track.settled[1]
        assert isinstance(exc, OutcomeUnknownError)
        assert exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    finally:
        state.teardown()


@pytest.mark.parametrize("when", ["in flight", "just before", "long before", "controller moved in flight"])
def test_the_model_knows_a_forwarded_request_re_sent_after_its_controller_went_away(when: str) -> None:
    """Rule f (issue 37, and a CI run of 31c5ec6 on the Kafka 4.4 quorum's roll): a node goes away while a create is
    in flight, or just before it is sent, or the controller moves in flight with no connection lost (the driver's
    quorum read says so); its broker had forwarded it to the old controller, which applied it, and re-sends it to
    the next: "already exists". The topic is told possibly applied, never a plain failure
    (``what_each_topic_was_told_stays_true``). A node gone long before says nothing of a topic that already existed:
    the broker's word."""
    state = EngineModel()
    try:
        _start(state, existing={"a": 1} if when == "long before" else {})
        if when in ("just before", "long before"):
            state.a_node_goes_away()
            state.advance(FORWARD_GRACE_S if when == "long before" else 0.2)
        state.submit("create", ["a"], 30.0, True, False, 1, None, None, False)
        if when == "in flight":
            state.a_node_goes_away()
        elif when == "controller moved in flight":
            state.the_controller_moves_silently()
        state.answer("resent", applied=True, delay=0.0, quota_first=False)
        state.what_each_topic_was_told_stays_true()
        [track] = state.tracks
        assert track.settled is not None
        exc = track.settled[1]
        assert exc is not None
        assert exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
        assert isinstance(exc, OutcomeUnknownError) is (when != "long before"), exc
    finally:
        state.teardown()


def test_the_model_counts_a_default_create_as_the_engine_after_num_partitions_is_read_back() -> None:
    """Found by the model (ENGINE_MODEL_RANDOM=1, 3000 examples: 'rule g: 3 mutations counted, 1 charged'), a gap of
    the model, not of the engine: a create of -1 partitions applied while num.partitions is unknown is read back, and
    a read that does not tell num.partitions still teaches it to the engine. The model took every -1 create pending
    at such a read as counted 1 (so, once a later read told num.partitions, 'rule g: 4 mutations counted, 2
    charged'); the engine counted ``b`` as the 3 it read back, as the broker charges it."""
    state = EngineModel()
    try:
        _start(state)
        state.submit_default_creates(["a"])
        state.metadata(fails=False, default_readable=False)  # counted as 1 for now
        state.answer_ok(views_after=False)  # applied: read back
        state.submit("create", ["c"], 30.0, True, False, 1, None, None, False)
        state.submit_default_creates(["b"])
        state.metadata(fails=False, default_readable=False)  # shows a's 3 partitions
        state.answer("not controller", applied=False, delay=0.0, quota_first=False)  # a metadata refresh
        state.metadata(fails=False, default_readable=True)
        state.advance(1.0)  # c and b sent: check_charged
        assert state.flight is not None
        assert [t.topic.name for t in state.flight.tracks] == ["c", "b"]
        assert state.flight.request.mutations == 1 + DEFAULT_PARTITIONS
    finally:
        state.teardown()


def test_the_model_states_rule_g_a_topic_refused_by_the_broker_and_held_past_its_deadline_is_one_violation() -> None:
    """Found by the model's random runs ('rule g: 2 violations recorded, 1 quota refusals'): another client of the
    principal spent the quota; a 0.3 s create is refused with 89 and a throttle longer than its time left. The
    broker's refusal is its one violation: the throttle that then keeps it from a retry, in the same step, is not
    a second refusal (it was counted twice)."""
    state = EngineModel()
    try:
        _start(state, mode="strict")
        state.another_client_spends_the_quota(seconds=2.0)
        state.another_client_spends_the_quota(seconds=2.0)
        state.submit("create", ["a"], 0.3, True, False, 1, None, None, False)
        state.answer_ok(views_after=False)
        [track] = state.tracks
        assert isinstance(track.settled[1] if track.settled else None, ThrottlingQuotaExceededException)
        state.metrics_equal_what_the_responses_said()
    finally:
        state.teardown()


def test_the_model_knows_an_applied_answer_held_for_after_the_next_send_is_not_queued_again() -> None:
    """Found by the model's random runs ('rule g: 0 retries recorded', ``1 <= 0``): with every answer settled after
    the next send (issue 40), an applied topic is still pending when its request completes; the model took it for
    a topic queued again and expected a retry the engine rightly never counted."""
    state = EngineModel()
    try:
        _start(state, settle_late_from=1)
        state.submit("create", ["a"], 0.3, False, False, 1, None, None, False)
        state.submit_pair(operation="create", timeout_s=0.3, factor=1.2, retry=False)
        state.answer_ok(views_after=False)
        state.metrics_equal_what_the_responses_said()
    finally:
        state.teardown()


def test_the_model_lets_close_settle_a_held_applied_answer_as_applied() -> None:
    """Found by the model's random runs ('rule h: a, pending at close(), told None'): a delete of ``a`` answered
    applied and held for after the next send, then close(). The broker's answer is the truth: close() settles
    ``a`` as applied, which rule h allows beside ClientClosedError."""
    state = EngineModel()
    try:
        _start(state, existing={"a": 1}, per_request=1, settle_late_from=1)
        state.submit("delete", ["a", "b"], 0.3, False, False, 1, None, None, False)
        state.answer_ok(views_after=False)
        state.close()
        state.close_settles_every_topic()
        [a] = [t for t in state.tracks if t.topic.name == "a"]
        assert a.settled is not None
        assert a.settled[1] is None  # applied, as the broker said
    finally:
        state.teardown()


def test_the_model_knows_a_lone_topics_refusal_proves_the_words_a_policys() -> None:
    """Found by the model's random runs ("10 records sent after 10 were refused", and "not split, time was left"):
    a bulk create refused alike by a CreateTopicPolicy is split as the batch cap's shape says, down to a lone topic
    refused in the same words; those words are then a policy's, the limit goes back (``batch_cap``) and the topics
    left go whole again, each with the policy's error. The model kept the refused size as the cap's bound."""
    state = EngineModel()
    try:
        _start(state, mode="strict", per_request=2, bulk="create")
        state.advance(0.001)
        state.advance(0.001)
        state.views(delay=0.0, lags=[0, 0, 0], late=False, unreadable=False)
        state.answer("policy", applied=False, delay=0.0, quota_first=False)
        state.answer("policy", applied=False, delay=0.0, quota_first=False)
        state.every_topic_is_settled_by_its_deadline()
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_the_model_knows_a_partial_answer_is_a_broker_answering() -> None:
    """Found by the model (ENGINE_MODEL_RANDOM=1, 2000 examples: "a told no broker had answered, after one did"): a
    bulk delete's answer reaches the client without its last topic, the others' results a broker's; a create queued
    behind it runs out of time while librdkafka still owes the last topic. It was not sent, but not because no
    broker had answered: one had, and the engine took a broker as reached only once the whole request completed."""
    state = EngineModel()
    try:
        _start(state, reached=False, bulk="delete")
        state.probe(answered=False)
        state.submit("create", ["a"], 0.02, False, False, 0, None, None, False)
        state.answer(applied=False, delay=0.0, fate="drop last", quota_first=False)
        state.advance(0.05)
        state.every_topic_is_settled_by_its_deadline()
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_the_model_knows_an_accepted_request_disproves_a_shapes_bound() -> None:
    """Found by the model (ENGINE_MODEL_RANDOM=1, 2000 examples: "2 records sent after 2 were refused"): a delete of
    two topics refused alike by a policy is taken for the cap by its shape, and split; its lone topics are applied, in
    words proving nothing. Then a create of 4 records is applied: the cap is at least 4, so the 2 records refused were
    not the cap's, and the engine sends two topics a request again (``BatchCap.accepted``). The model had kept the
    shape's bound after a larger request passed."""
    state = EngineModel()
    try:
        _start(state, existing={"a": 1, "b": 1}, per_request=2)
        state.submit("delete", ["a", "b"], 30.0, False, False, 0, None, None, False)
        state.answer("policy", applied=False, delay=0.0, quota_first=False)
        state.answer_ok(views_after=False)
        state.answer_ok(views_after=False)
        state.submit("create", ["c"], 30.0, False, False, 4, None, None, False)
        state.answer_ok(views_after=False)
        state.submit("delete", ["c", "d"], 30.0, False, False, 0, None, None, False)
        assert state.flight is not None
        assert len(state.flight.tracks) == 2  # one request of both
        state.answer_ok(views_after=False)
        state.every_topic_is_settled_by_its_deadline()
        state.what_each_topic_was_told_stays_true()
    finally:
        state.teardown()


def test_the_model_knows_a_lowered_cap_refuses_what_it_accepted_before() -> None:
    """A cluster's batch cap lowered while the client runs (Kafka 4.5 makes it a setting, KAFKA-20976): a create of
    two topics (4 records) is applied under a cap of 4; the cap goes down to 2, and the same shape is refused whole in
    the cap's words. What was accepted before proves nothing now: the engine splits (one topic a request), and the
    model's bound (``note_cap_refusal``) follows the new cap instead of the old acceptance."""
    state = EngineModel()
    try:
        _start(state, cap=4)
        state.submit("create", ["a", "b"], 30.0, False, False, 1, None, None, False)
        assert state.flight is not None
        assert len(state.flight.tracks) == 2
        state.answer_ok(views_after=False)
        state.an_operator_lowers_the_cap()
        state.submit("create", ["c", "d"], 30.0, False, False, 1, None, None, False)
        assert state.flight is not None
        assert len(state.flight.tracks) == 2  # 4 records: accepted before
        state.answer_ok(views_after=False)  # refused whole in the cap's words
        assert state.largest_accepted == 0
        assert state.flight is not None
        assert len(state.flight.tracks) == 1  # split below the refusal
        state.answer_ok(views_after=False)
        state.answer_ok(views_after=False)
        state.every_topic_is_settled_by_its_deadline()
        state.what_each_topic_was_told_stays_true()
        outcomes = [t.settled for t in state.tracks]
        assert all(settled is not None and settled[1] is None for settled in outcomes), outcomes
    finally:
        state.teardown()


@pytest.mark.parametrize("fate", ["not controller", "timed out"])
def test_the_model_knows_a_failover_may_refuse_what_it_applied(fate: str) -> None:
    """Rule f (seen on Kafka 4.4's rolling restart): a controller that resigns fails the writes it has not committed
    with NOT_CONTROLLER, and the next one may commit them; a broker whose forwarded request timed out says
    REQUEST_TIMED_OUT. A create so applied whose retry finds no time before the deadline is told outcome unknown,
    not the plain refusal (nothing applied); two whose retry is answered "already exists" are told it as possibly
    applied."""
    state = EngineModel()
    try:
        _start(state)
        state.submit("create", ["a"], 0.3, False, False, 1, None, None, False)
        state.answer(fate, applied=True, delay=0.0, quota_first=False)
        _await_a_send(state, 1000.25)  # its retry, after the back-off (and a metadata read)
        state.answer(fate, applied=False, delay=0.0, quota_first=False)  # refused again: no time for a third
        state.advance(1.0)
        _serve_reads(state)
        state.submit("create", ["b", "c"], 30.0, False, False, 1, None, None, False)
        _await_a_send(state, state.now + 5.0)
        state.answer(fate, applied=True, delay=0.0, quota_first=False)
        _await_a_send(state, state.now + 5.0)
        state.answer_ok(views_after=False)
        state.advance(1.0)
        state.every_topic_is_settled_by_its_deadline()
        state.what_each_topic_was_told_stays_true()
        told = {t.topic.name: t.settled[1] for t in state.told if t.settled is not None}
        assert all(isinstance(told[name], OutcomeUnknownError) for name in "abc"), told
    finally:
        state.teardown()


def test_the_model_counts_one_violation_for_a_89_whose_throttle_holds_a_topic_a_failover_may_have_applied() -> None:
    """Found by the model's random runs ("rule g: 3 violations recorded, 6 quota refusals"): a create refused with
    NOT_CONTROLLER after it was applied (a failover), retried, refused with 89 (the quota checked first) with a
    throttle past its deadline: held back in that same step, it is told outcome unknown (THROTTLED), and that 89 is
    its one violation (the engine counted it with the answer), not a second one for the hold."""
    state = EngineModel()
    try:
        _start(state, mode="strict")
        state.submit("create", ["a"], 1.0, True, False, 1, None, None, False)
        state.answer("not controller", applied=True, delay=0.0, quota_first=False)
        state.another_client_spends_the_quota(4.0)
        state.advance(0.2)
        _serve_reads(state)
        state.advance(0.2)
        state.answer("ok", applied=False, delay=0.0, quota_first=True)
        state.advance(0.5)
        state.metrics_equal_what_the_responses_said()
        state.what_each_topic_was_told_stays_true()
        [track] = state.tracks
        assert track.settled is not None
        assert isinstance(track.settled[1], OutcomeUnknownError), track.settled
    finally:
        state.teardown()


def _await_a_send(state: EngineModel, until: float) -> None:
    """A pinned run's clock moved on, reads served, until a request is in flight (before ``until``)."""
    while state.flight is None and state.now < until:
        state.advance(0.01)
        _serve_reads(state)
    assert state.flight is not None, f"nothing sent by {until}"


def _serve_reads(state: EngineModel) -> None:
    """A pinned run's sentinel answered and metadata read (after NOT_CONTROLLER), where the engine asked for them."""
    if state.drains:
        state.drained("answered", 0.0)
    if state.metadata_wanted:
        state.metadata(fails=False, default_readable=True)


def _a_probe_in_flight(state: EngineModel) -> None:
    """Under a cap of 4 records, a create of three one-partition topics (6) is refused and the limit learned is 3;
    ``a`` (2) is accepted, and ``b`` and ``c`` (4) go as a probe, in flight."""
    _start(state, cap=4, cap_probe_after=1)
    state.submit("create", ["a", "b", "c"], 30.0, False, False, 1, None, None, False)
    state.answer_ok(views_after=False)  # refused whole: 6 records
    state.answer_ok(views_after=False)  # a
    assert state.flight is not None
    assert [t.topic.name for t in state.flight.tracks] == ["b", "c"]
    assert state.engine.status.cap_probe == state.flight.request.request_id


@pytest.mark.parametrize("how", ["cut short unsent", "refused by confluent-kafka"])
def test_the_model_knows_a_batch_cap_probe_never_sent_is_no_probe_out(how: str) -> None:
    """Found by review of the probe's one-at-a-time rule: a probe taken back before confluent-kafka's call ran, or
    refused by that call, stayed the probe out, and no request probed again for the client's life."""
    state = EngineModel()
    try:
        _a_probe_in_flight(state)
        if how == "cut short unsent":
            state.send_cut_short(handed=False, applied=False)
        else:
            state.no_answer("refused", applied=False)
        state.a_batch_cap_probe_out_is_a_request_in_flight()
    finally:
        state.teardown()


def test_the_model_knows_a_batch_cap_probe_in_flight_at_close_is_no_probe_out() -> None:
    """Found by review: close() freed the slots without ending the probe, so ``Status.cap_probe`` named a request no
    longer in flight (the model's invariant, reached by a random run, would have failed)."""
    state = EngineModel()
    try:
        _a_probe_in_flight(state)
        state.close()
        state.a_batch_cap_probe_out_is_a_request_in_flight()
    finally:
        state.teardown()
