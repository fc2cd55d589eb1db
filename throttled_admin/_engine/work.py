"""What the scheduler schedules: calls, and the topics of each call with their per-topic state.

A call is the caller's unit (one deadline, one retry setting, one future per topic); a topic is the unit the
scheduler sends, retries and settles. Topics of different calls with the same ``RequestKind`` can share a
request (coalescing).

The driver hands the engine plain frozen values only (a call's id, its ``CallSpec`` and a ``TopicSpec`` per topic)
and names a topic by ``TopicRef``; ``Call`` and ``Topic`` are the engine's own records, built and changed by the
engine alone (``Engine.submit``), never seen by the driver.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from throttled_admin._engine.classify import Outcome
from throttled_admin._engine.lifecycle import MOVES, NO_PAST, Attempt, Past, TopicState

__all__ = [
    "CREATE_PARTITIONS",
    "CREATE_TOPICS",
    "DELETE_TOPICS",
    "FALLBACK_PARTITIONS",
    "Call",
    "NameHolds",
    "Operation",
    "RequestKind",
    "Topic",
    "TopicRef",
    "TopicSpec",
    "TopicSpecs",
    "TopicState",
    "cost_with_default",
    "partitions_made",
]


@dataclass(frozen=True)
class Operation:
    """One kind of topic mutation: its Kafka API name, how confluent-kafka sends it, and what it costs."""

    name: str  # the Kafka API name, also messaging.operation.name
    method: str  # confluent-kafka's AdminClient method
    topic_of: Callable[[Any], str]
    # KIP-599 cost when it is known from the input alone (create: the partitions asked for); None: ask the cluster
    known_cost: Callable[[Any], int | None]
    # At most the KRaft metadata records it makes: a controller refuses a whole request of more than 10,000
    # (QuorumController's MAX_RECORDS_PER_USER_OP), so requests are sized by records too; given the cluster's
    # default partition count when known.
    count_records: Callable[[Any, int | None], int]
    # KIP-599 cost from the topic's current partition count in the cluster's metadata (None: not there) and the
    # cluster's default partition count (None: not known)
    metadata_cost: Callable[[Any, int | None, int | None], int]
    validate_only: bool  # confluent-kafka's method takes validate_only
    # ``specs`` made in one pass, each item read once (None: from the three functions above)
    one_pass: Callable[[list[Any], int | None], TopicSpecs] | None = None

    def specs(self, items: list[Any], unknown: int | None) -> TopicSpecs:
        """Each item's ``TopicSpec``: its name, the item, its cost as the input tells it (else ``unknown``), and its
        records with no default partition count known."""
        if self.one_pass is not None:
            return self.one_pass(items, unknown)
        costs = [_or(self.known_cost(i), unknown) for i in items]
        return TopicSpecs(list(map(self.topic_of, items)), items, costs, [self.records(i) for i in items])

    def cost_from_metadata(self, item: Any, current: int | None, default_partitions: int | None = None) -> int:
        return self.metadata_cost(item, current, default_partitions)

    def records(self, item: Any, default_partitions: int | None = None) -> int:
        return self.count_records(item, default_partitions)


# When the cluster's default partition count cannot be read, a topic created with it (-1) is counted as Kafka's own
# default, 1, until a topic created so is read (docs/semantics.md, rule g).
FALLBACK_PARTITIONS = 1


def _partitions(topic: Any, default: int | None = None) -> int | None:
    """The partitions a create makes: its assignment's, the count asked for, or (-1) the cluster's default (the
    controller's num.partitions, KIP-1211), None while that is not known."""
    if topic.replica_assignment:
        return len(topic.replica_assignment)
    return topic.num_partitions if topic.num_partitions > 0 else default


def _create_cost(topic: Any, _current: int | None, default: int | None) -> int:
    partitions = _partitions(topic, default)
    return FALLBACK_PARTITIONS if partitions is None else partitions


def _create_records(topic: Any, default: int | None) -> int:
    return _records(_partitions(topic, default), topic.config)


def _records(partitions: int | None, config: Any) -> int:
    """A create's metadata records: its TopicRecord, a PartitionRecord each, its configs."""
    return 1 + (FALLBACK_PARTITIONS if partitions is None else partitions) + (len(config) if config else 0)


def _or(cost: int | None, default: int | None) -> int | None:
    return default if cost is None else cost


def _create_specs(topics: list[Any], unknown: int | None) -> TopicSpecs:
    """CREATE_TOPICS' ``specs``: what ``topic_of``, ``_partitions`` and ``_create_records`` make of each topic, its
    partitions found once (issue 40: five calls a topic of a bulk call)."""
    costs: list[int | None] = []
    records: list[int] = []
    add_cost, add_records = costs.append, records.append
    for topic in topics:
        partitions = _partitions(topic)
        add_records(_records(partitions, topic.config))
        add_cost(unknown if partitions is None else partitions)
    return TopicSpecs([topic.topic for topic in topics], topics, costs, records)


def _added(partitions: Any, current: int | None) -> int:
    return max(1, partitions.new_total_count - current) if current else 1


CREATE_TOPICS = Operation(
    "CreateTopics",
    "create_topics",
    lambda t: t.topic,
    _partitions,
    _create_records,
    _create_cost,
    validate_only=True,
    one_pass=_create_specs,
)
DELETE_TOPICS = Operation(
    "DeleteTopics",
    "delete_topics",
    lambda t: t,
    lambda t: None,
    lambda t, _default: 1,
    lambda t, current, _default: current or 0,  # an unknown topic fails first and costs nothing
    validate_only=False,
)
CREATE_PARTITIONS = Operation(
    "CreatePartitions",
    "create_partitions",
    lambda p: p.topic,
    lambda p: None,
    lambda p, _default: max(1, p.new_total_count),
    lambda p, current, _default: _added(p, current),  # only the added partitions
    validate_only=True,
)


@dataclass(frozen=True)
class RequestKind:
    """Topics of one kind can travel in one request."""

    operation: Operation
    validate_only: bool


@dataclass(frozen=True)
class CallSpec:
    """A call as its caller asked for it: what it does and the time it has. The engine's state of it is ``Call``."""

    kind: RequestKind
    deadline: float  # monotonic seconds
    timeout_ms: int
    retry_on_quota_violation: bool
    request_timeout_s: float | None  # the caller's own caps, if any
    operation_timeout_s: float | None
    started_at: float  # monotonic seconds, from the driver's clock (the engine reads no clock)
    wait_for_metadata: bool = False  # applied topics resolve once every broker's Metadata shows them

    @classmethod
    def starting(
        cls,
        kind: RequestKind,
        started_at: float,
        timeout_ms: int,
        *,
        retry_on_quota_violation: bool,
        request_timeout_s: float | None,
        operation_timeout_s: float | None,
        wait_for_metadata: bool = False,
    ) -> CallSpec:
        """The call started at ``started_at``: its deadline is ``timeout_ms`` later. Its fields are set at once, as
        the frozen ``__init__`` would set them one by one (eight calls of object.__setattr__: every call, issue 39)."""
        spec = object.__new__(cls)
        spec.__dict__.update(
            kind=kind,
            deadline=started_at + timeout_ms / 1000,
            timeout_ms=timeout_ms,
            retry_on_quota_violation=retry_on_quota_violation,
            request_timeout_s=request_timeout_s,
            operation_timeout_s=operation_timeout_s,
            started_at=started_at,
            wait_for_metadata=wait_for_metadata,
        )
        return spec


# A topic of a call as the driver hands it over: (name, the snapshot sent to confluent-kafka, KIP-599 cost or None
# while unknown, KRaft metadata records at most).
TopicSpec = tuple[str, Any, "int | None", int]


@dataclass(frozen=True, slots=True)
class TopicSpecs:
    """A call's ``TopicSpec``s as four columns, one index a topic: a bulk call's 50,000 tuples were as many objects
    for the garbage collector to walk before its first write (issue 40). Iterates as ``TopicSpec`` tuples."""

    names: Sequence[str]
    items: Sequence[Any]  # the snapshots sent to confluent-kafka
    costs: Sequence[int | None]
    records: Sequence[int]

    @classmethod
    def of(cls, specs: Iterable[TopicSpec]) -> TopicSpecs:
        """``specs`` as columns (itself if it is)."""
        if isinstance(specs, TopicSpecs):
            return specs
        columns = tuple(zip(*specs, strict=True))
        if not columns:
            return cls((), (), (), ())
        names, items, costs, records = columns
        return cls(names, items, costs, records)

    def __iter__(self) -> Iterator[TopicSpec]:
        return zip(self.names, self.items, self.costs, self.records, strict=True)

    def __len__(self) -> int:
        return len(self.names)


_NAME = operator.attrgetter("name")  # a topic's
_NEW, _HELD, _QUEUED, _IN_FLIGHT = TopicState.NEW, TopicState.HELD_BEHIND_NAME, TopicState.QUEUED, TopicState.IN_FLIGHT
_AWAITING, _SETTLED, _WITHDRAWN = TopicState.AWAITING_VISIBILITY, TopicState.SETTLED, TopicState.WITHDRAWN


@dataclass(eq=False, slots=True, init=False)
class Call:
    """The engine's state of one call: its topics by where they are, its back-off counters, what its metrics need;
    the caller's input is ``spec``."""

    spec: CallSpec
    id: int  # the driver's id of the call (``Engine.submit``), unique among pending calls
    # its topics by state (``lifecycle``; a settled or withdrawn topic is in none), each in order
    queued: dict[str, Topic]  # waiting to be sent (held behind their names too)
    in_flight: dict[str, Topic]
    awaiting: dict[str, Topic]  # applied, until every broker shows it (visibility)
    unsettled: int
    whole: bool  # every topic of the call is here (``Engine.extend``)
    quota_backoffs: int  # error 89 with no throttle, in a row without progress: exponential back-off
    transient_retries: int  # transient errors in a row without progress: exponential back-off
    error_type: str | None  # the first failure's type, for the call's duration metric
    views_read_at: float | None  # wait_for_metadata: when its applied topics were last read about
    # state -> the dict above that holds its topics (new, settled or withdrawn: none)
    _held_in: dict[TopicState, dict[str, Topic] | None] = field(repr=False)
    # ``spec.kind``, read on every step (an attribute, not a property: three calls fewer a 1-topic call, issue 39)
    kind: RequestKind = field(repr=False)

    # Written out (a generated __init__ and a __post_init__ were two calls a call, issue 39)
    def __init__(self, spec: CallSpec, id: int = 0) -> None:
        self.spec, self.id, self.kind = spec, id, spec.kind
        queued: dict[str, Topic] = {}
        self.queued = queued
        self.in_flight, self.awaiting = {}, {}
        self.unsettled = self.quota_backoffs = self.transient_retries = 0
        self.whole = True
        self.error_type = self.views_read_at = None
        # the states as module constants: on Python 3.11 an Enum member off its class is slow
        self._held_in = {
            _NEW: None,
            _HELD: queued,
            _QUEUED: queued,
            _IN_FLIGHT: self.in_flight,
            _AWAITING: self.awaiting,
            _SETTLED: None,
            _WITHDRAWN: None,
        }

    def move(self, topic: Topic, to: TopicState) -> None:
        """``move_all`` of one topic."""
        self.move_all((topic,), to)

    def move_all(self, topics: Sequence[Topic], to: TopicState) -> None:
        """The one place a topic's state changes, for each of ``topics`` (this call's) in order: a move
        ``lifecycle.MOVES`` allows, kept in step with the dicts above (a topic queued again goes to the end of the
        queue; one no longer held behind its name keeps its place). One call for a request's worth (issue 40)."""
        held_in = self._held_in
        goes_to = held_in[to]
        for topic in topics:
            here = topic.state
            if to not in MOVES[here]:
                raise AssertionError(f"topic {topic.name!r}: no move from {here.value} to {to.value}")
            topic.state = to
            was_in = held_in[here]
            if was_in is not goes_to:
                if was_in is not None:
                    del was_in[topic.name]
                if goes_to is not None:
                    goes_to[topic.name] = topic

    def find(self, name: str) -> Topic | None:
        """Its topic of that name while it is pending (queued, held, in flight or awaiting visibility)."""
        for held in (self.queued, self.in_flight, self.awaiting):
            topic = held.get(name)
            if topic is not None:
                return topic
        return None

    def remaining_s(self, now: float) -> float:
        return self.spec.deadline - now

    def times(self, now: float) -> tuple[float, float]:
        """What is left of the call at ``now``, and its budget: how long a request of it may take (what is left,
        capped by the caller's request_timeout); both at once (a request asks both of its every call: issue 39)."""
        spec = self.spec
        remaining = spec.deadline - now
        cap = spec.request_timeout_s
        return remaining, remaining if cap is None else min(remaining, cap)


_UNKNOWN = Outcome.UNKNOWN


class TopicRef(NamedTuple):
    """A topic of a call, as the engine names it to the driver: the call's id and the topic's name."""

    call_id: int
    name: str


@dataclass(eq=False, slots=True)  # one per topic of a call: 100,000 in a bulk call
class Topic:
    """One topic of a call: what is sent, where it is in its lifecycle (``lifecycle``), and its attempts so far."""

    name: str
    item: Any  # the snapshot sent to confluent-kafka: NewTopic, NewPartitions or the name
    call: Call
    cost: int | None  # KIP-599 mutations; None until known
    records: int = 1  # KRaft metadata records, at most
    state: TopicState = TopicState.NEW  # changed by ``Call.move`` only
    history: tuple[Attempt, ...] = ()  # the attempts that came back, oldest first
    not_before: float = 0.0  # back-off: not sent before this monotonic time
    lagging: tuple[int, ...] | None = None  # applied: the brokers whose Metadata did not show it at the last read
    guessed: bool = False  # a create of -1 partitions costed before the cluster's default was known
    cancelled: bool = False  # its caller cancelled it: never sent again (its attempt in flight is its last)
    ids_before: frozenset[uuid.UUID] | None = None  # the ids every broker showed of the name before the first send

    @property
    def ref(self) -> TopicRef:
        return TopicRef(self.call.id, self.name)

    @property
    def attempts(self) -> int:
        return len(self.history)

    @property
    def past(self) -> Past:
        """What its attempts so far leave true (outcome unknown, the broker's throttle or refusal)."""
        return Past.of(self.history, writes=not self.call.kind.validate_only) if self.history else NO_PAST

    @property
    def outcome_unknown(self) -> bool:
        """An earlier attempt may have been applied (it was handed over and no usable answer came)."""
        for attempt in self.history:  # noqa: SIM110 (cheaper than any() over a generator: once per topic answered)
            if attempt.outcome is _UNKNOWN:
                return True
        return False


class NameHolds:
    """Rule a of ``machine``: a topic name is held by one pending call at a time; the topics of that name of later
    calls wait behind it (``TopicState.HELD_BEHIND_NAME``), in call order. A bulk call's names are held alone: no
    list per topic."""

    __slots__ = ("_behind", "_holder")

    def __init__(self) -> None:
        self._holder: dict[str, Topic] = {}  # name -> the pending topic that holds it
        self._behind: dict[str, list[Topic]] = {}  # name -> the pending topics of later calls, in call order

    def hold(self, topic: Topic) -> bool:
        """The topic was submitted: True when it holds its name, False when it waits behind an earlier call's."""
        holder = self._holder.setdefault(topic.name, topic)
        if holder is topic:
            return True
        behind = self._behind.get(topic.name)
        if behind is None:  # (no empty list at any point: a Ctrl-C in between left one, and every release slow)
            self._behind[topic.name] = [topic]
        else:
            behind.append(topic)
        return False

    def hold_all(self, topics: list[Topic]) -> bool:
        """A call's topics were submitted: True when every one holds its name, as ``hold`` would have it, in one step;
        False, and none held, when an earlier call names any or two of them share a name (``hold`` each, then)."""
        names = list(map(_NAME, topics))  # (read in C: issue 39)
        if not self._holder.keys().isdisjoint(names) or len(set(names)) != len(names):
            return False
        self._holder.update(zip(names, topics, strict=True))
        return True

    def release_all(self, topics: Sequence[Topic]) -> list[Topic]:
        """``release`` of each of ``topics``, in order: the topics that hold their names from now on. With nobody
        waiting behind any name (a bulk call's), only the holders' entries go."""
        if self._behind:
            return [holder for topic in topics if (holder := self.release(topic)) is not None]
        holders = self._holder
        for topic in topics:
            if holders.get(topic.name) is topic:
                del holders[topic.name]
        return []

    def waiting(self) -> bool:
        """Whether any topic waits behind a name (none of a bulk call's does)."""
        return bool(self._behind)

    def next_behind(self, name: str) -> Topic | None:
        """The topic that holds ``name`` once its holder lets it go, if one waits."""
        behind = self._behind.get(name)
        return behind[0] if behind else None

    def release(self, topic: Topic) -> Topic | None:
        """The topic was settled or withdrawn: the topic that holds the name from now on, if it changed hands."""
        name = topic.name
        behind = self._behind.get(name)
        if self._holder.get(name) is not topic:  # one waiting behind (a Topic compares by identity)
            if behind is not None and topic in behind:
                behind.remove(topic)
                if not behind:
                    del self._behind[name]
            return None
        if not behind:
            del self._holder[name]
            return None
        holder = self._holder[name] = behind.pop(0)
        if not behind:
            del self._behind[name]
        return holder


def partitions_made(operation: Operation, item: Any, default: int | None) -> tuple[bool, int | None]:
    """What this client's change of a topic, applied, left it with: (whether that is known here, its partition count;
    None: no such topic). A create of the cluster's default count (``default``) is known once that is."""
    if operation is CREATE_PARTITIONS:
        return True, item.new_total_count
    if operation is DELETE_TOPICS:
        return True, None
    partitions = _partitions(item, default)
    return partitions is not None, partitions


def cost_with_default(topic: Topic, default: int | None) -> None:
    """A create of -1 partitions costs the cluster's default; while that is unknown, FALLBACK_PARTITIONS, and the
    first such topic applied is read back to learn it (``MetadataReads.read_back``)."""
    topic.cost = CREATE_TOPICS.cost_from_metadata(topic.item, None, default)
    topic.records = CREATE_TOPICS.records(topic.item, default)
    topic.guessed = default is None
