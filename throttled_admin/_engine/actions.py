"""What a step of the engine says to do, as frozen records: the driver carries them out in the order given.

``Engine.step(now)`` returns an ``Outbox``, a sequence of actions in the order the driver does them:

1. a metric event itself (``metric_events``), for the client's metrics sink (before settling: a caller that reads
   the metrics after its results finds its call);
2. ``Reached``: a request got through to a broker (the driver's handshake-drop diagnosis resets);
3. ``ReadViews``: read every broker's Metadata for these topics (wait_for_metadata; answered by ``on_views``);
4. ``Send``: hand this request to librdkafka (answered by ``on_results``): plain values, ids and the items;
5. ``Drain``: send the sentinel behind an abandoned request (``connection``; answered by ``on_drained``);
6. ``Settle``: resolve the future of a call's topic, with None or its error (the driver holds the futures);
7. ``ReadMetadata``: read the cluster's metadata (partition counts, ``num.partitions``; answered by ``on_metadata``);
8. ``Probe``: ask the cluster something light (has any broker answered this client? on the second lane's connection:
   does it reach the cluster? answered by ``on_probe``);
9. ``WakeAt``: step again at this time if nothing happens first (last; absent once closed: never).

Events that come between two steps (a result, a withdrawal, close) may add actions too; the next step returns them
with its own. ``Outbox.of`` puts them in the order above (a kind's own in the order they were decided) and keeps one
of a flag asked for twice. The ``Outbox``'s properties are read-only views of one kind each (``send``, ``settle``,
``wake_at`` ...).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from throttled_admin._engine.metric_events import METRIC_KINDS, MetricEvent
from throttled_admin._engine.work import RequestKind, TopicRef

__all__ = [
    "Action",
    "Drain",
    "Outbox",
    "Probe",
    "Reached",
    "ReadMetadata",
    "ReadViews",
    "Send",
    "Settle",
    "WakeAt",
]


@dataclass(frozen=True, slots=True)
class Reached:
    """A request got through to a broker: the diagnosis of connections dropped in their handshake resets."""


@dataclass(frozen=True, slots=True)
class ReadViews:
    """wait_for_metadata: read every broker's Metadata for these topics (the applied topics awaiting visibility,
    and the creates whose ids before sending are not yet known); the answer goes to ``Engine.on_views``."""

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Send:
    """Hand this mutation request to librdkafka: confluent-kafka's method for ``kind``, the items (in the order of
    ``topics``) and the two timeouts; its results, by topic name, go to ``Engine.on_results(request_id, ...)``."""

    request_id: int  # numbered by the engine, from 1
    kind: RequestKind
    topics: tuple[TopicRef, ...]
    items: tuple[Any, ...]
    mutations: int  # KIP-599 mutations, as far as the topics' costs are known
    request_timeout_s: float  # librdkafka's own timeout for the request
    operation_timeout_s: float  # the controller's deadline (the request's timeout_ms)
    lane: int = 0  # the connection it goes on (``lanes``): 0, the client's own; 1, the driver's second handle's
    direct: bool = False  # it may be written and read by the client itself, not librdkafka (``Lanes.direct``)

    @property
    def names(self) -> list[str]:
        return [topic.name for topic in self.topics]


@dataclass(frozen=True, slots=True)
class Drain:
    """Send the sentinel (``connection``) with this librdkafka timeout on the ``lane``'s connection (``lanes``); its
    outcome goes to ``Engine.on_drained``."""

    request_timeout_s: float
    lane: int = 0


@dataclass(frozen=True, slots=True)
class Settle:
    """Resolve the future of the topic named ``topic`` in call ``call_id``: with None (it succeeded) or the error."""

    call_id: int
    topic: str
    outcome: BaseException | None

    @property
    def ref(self) -> TopicRef:
        return TopicRef(self.call_id, self.topic)


@dataclass(frozen=True, slots=True)
class ReadMetadata:
    """Read the cluster's metadata (partition counts, ``num.partitions``); the answer goes to ``Engine.on_metadata``."""


@dataclass(frozen=True, slots=True)
class Probe:
    """Ask the cluster something light: has any broker answered this client? On the second lane's connection
    (``lane`` 1, ``lanes``): does it reach the cluster? (``Engine.on_probe``)"""

    lane: int = 0  # the client's own connection (``lanes.FIRST``)


@dataclass(frozen=True, slots=True)
class WakeAt:
    """Step the engine again at ``at`` (monotonic seconds) if nothing happens first."""

    at: float


# A metric event is an action itself (no wrapper around it: four objects fewer a 1-topic call, issue 39)
Action = MetricEvent | Reached | ReadViews | Send | Drain | Settle | ReadMetadata | Probe | WakeAt

_KINDS = (MetricEvent, Reached, ReadViews, Send, Drain, Settle, ReadMetadata, Probe, WakeAt)  # the driver's order
# Each kind's rank in that order, as a class attribute read by a C-level key: Outbox.of sorts every step's actions
# with it (a stable sort: a kind's own stay in the order they were decided); every metric event's is the first
for _rank_of_kind, _kind in enumerate(_KINDS):
    for _class in METRIC_KINDS if _kind is MetricEvent else (_kind,):
        setattr(_class, "_rank", _rank_of_kind)  # noqa: B010 (not a slot: the class's own, one per kind)
_by_rank = operator.attrgetter("_rank")
_REACHED, _READ_METADATA, _PROBE = (_KINDS.index(flag) for flag in (Reached, ReadMetadata, Probe))

_Kind = TypeVar("_Kind", bound=Action)


def _dedupe_flags(ordered: list[Action]) -> list[Action]:
    """The same flag (``Reached``, ``ReadMetadata``, ``Probe``) twice (rare): keep the first."""
    return [a for i, a in enumerate(ordered) if not (i and isinstance(a, _FLAGS) and ordered[i - 1] == a)]


_FLAGS = (Reached, ReadMetadata, Probe)  # asked for twice between two steps: done once


@dataclass(frozen=True, slots=True)
class Outbox:
    """A step's actions, in the order the driver carries them out (``Outbox.of`` puts them in it)."""

    actions: tuple[Action, ...] = ()
    # When to step again if nothing happens first (``math.inf``: only when something happens): the last action's, a
    # ``WakeAt``, found once here (the driver reads it twice a turn: a property was four calls a 1-topic call)
    wake_at: float = math.inf

    @classmethod
    def of(cls, actions: Iterable[Action]) -> Outbox:
        """The actions in the driver's order (stable: a kind's own as they were decided), each flag once."""
        ordered = sorted(actions, key=_by_rank)
        ranks = list(map(_by_rank, ordered))
        if ranks.count(_REACHED) > 1 or ranks.count(_READ_METADATA) > 1 or ranks.count(_PROBE) > 1:
            ordered = _dedupe_flags(ordered)
        last = ordered[-1] if ordered else None
        return cls(tuple(ordered), last.at if type(last) is WakeAt else math.inf)

    def of_kind(self, kind: type[_Kind]) -> list[_Kind]:
        """The actions of one kind, in order."""
        return [action for action in self.actions if isinstance(action, kind)]

    # -- read-only views, one kind each ------------------------------------------------------------

    @property
    def metrics(self) -> list[MetricEvent]:
        return [action for action in self.actions if isinstance(action, METRIC_KINDS)]

    @property
    def settle(self) -> list[tuple[TopicRef, BaseException | None]]:
        """Each topic settled, with None or its error."""
        return [(action.ref, action.outcome) for action in self.of_kind(Settle)]

    @property
    def send(self) -> Send | None:
        for action in self.actions:
            if isinstance(action, Send):
                return action
        return None

    @property
    def drain(self) -> float | None:
        """The sentinel's librdkafka timeout, if one is to be sent."""
        drains = self.of_kind(Drain)
        return drains[0].request_timeout_s if drains else None

    @property
    def read_views(self) -> list[str] | None:
        reads = self.of_kind(ReadViews)
        return list(reads[-1].names) if reads else None

    @property
    def read_metadata(self) -> bool:
        return any(isinstance(action, ReadMetadata) for action in self.actions)

    @property
    def probe(self) -> bool:
        """The contact probe (the first lane's) is asked for."""
        return any(isinstance(action, Probe) and not action.lane for action in self.actions)

    @property
    def reached(self) -> bool:
        return any(isinstance(action, Reached) for action in self.actions)
