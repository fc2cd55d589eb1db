"""``wait_for_metadata``: a topic's future resolves only when every broker's Metadata shows the change.

A KRaft broker learns of a mutation by replaying the metadata log; until it has, its Metadata lacks the topic
(or the new partitions, or still lists a deleted topic, or an earlier topic of the same name) and producers get
UNKNOWN_TOPIC_OR_PARTITION. With ``wait_for_metadata`` (kafka-python 3's name) the engine keeps an applied topic's
future open and asks the driver for every broker's view of it (one Metadata request per broker) until each shows
it:

- a create: listed, with at least the partitions asked for (any count for the broker's default), each with a
  leader, and every broker showing one topic id that none showed before the create was sent (its *incarnation*);
- a grow: listed with at least the new count, each partition it added with a leader (partitions offline before it are
  not its to wait for), and every broker showing one id;
- a delete: absent.

Incarnations (docs/semantics.md, "Incarnations"): a name deleted and created again is another topic, with another
id, and a lagging broker may still show the old one, whose partitions can be "at least the partitions asked for". A
create's partition count alone cannot tell the two apart; confluent-kafka sends CreateTopics v4, whose answer has no
topic id. So before a create of a ``wait_for_metadata`` call is first sent, the engine asks every broker for the ids
it shows of the name (``Topic.ids_before``: a read of its own, a ``ReadViews`` action), and the create is visible
once every broker shows one id that was not among them. A broker whose view carries no id (the driver's fallback
reader, ``_driver/broker_views.py``, or a broker older than Metadata v10) leaves the partition rule alone: that is
the rule the view allows. Brokers that could not be read before the send contribute no ids; a create is sent after
one such read, whatever it found, so the reader never keeps a mutation from being sent.

A broker whose Metadata could not be read does not show it, and a read judges only the names it asked about (a
delete applied while a read for other names was out is absent from every view without having been asked about).
Reads are spaced from ``FIRST_READ_S``, growing by ``GROWTH`` to ``MAX_INTERVAL_S``; a topic still not shown
everywhere at its call's deadline fails with ``NotYetVisibleError``: applied, not yet visible everywhere
(naming the brokers that lag).

While a call still has topics to send or in flight, its applied topics are read about at once the first time
and then at most every ``READ_WHILE_SENDING_S`` (and as usual from ``READ_BEFORE_DEADLINE_S`` before its
deadline, and once it has nothing left to send): a bulk call of many requests does not ask every broker after
each request, and a paced call (a fleet's client's) asks every broker every 5 s (issue 40: 6 % less client CPU in
the fleet benchmark than at 2 s), at the cost of its early topics settling up to one interval (and a read) after
every broker shows them. A command line's bar shows the admitted rate as mutations are admitted; its count of
rows done moves with each read.
The interval grows with what reads cost: at least ``READ_COST_FACTOR`` times as long as the last read took, so
busy brokers, whose answers come slowly, are asked less often; and reads near the deadline start earlier by twice
the last read's duration, so their answer comes back in time. A read of the ids before a send is never deferred.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

__all__ = [
    "FIRST_READ_S",
    "GROWTH",
    "MAX_INTERVAL_S",
    "READ_BEFORE_DEADLINE_S",
    "READ_COST_FACTOR",
    "READ_WHILE_SENDING_S",
    "BrokerViews",
    "TopicView",
    "Visibility",
    "ids_shown",
    "lagging",
    "topic_view",
]

FIRST_READ_S = 0.05
GROWTH = 1.5
MAX_INTERVAL_S = 1.0
READ_BEFORE_DEADLINE_S = 3.0
READ_WHILE_SENDING_S = 5.0
READ_COST_FACTOR = 10.0


class TopicView(NamedTuple):
    """What one broker's Metadata shows of a topic it lists."""

    partitions: int
    led: bool  # every partition has a leader and no error
    topic_id: uuid.UUID | None = None  # None: the view carries no id (the fallback reader, Metadata < v10)
    leaderless: frozenset[int] = frozenset()  # the partitions without a leader or with an error (by index)


def topic_view(partitions: int, topic_error: bool, topic_id: uuid.UUID | None, leaderless: frozenset[int]) -> TopicView:
    """A broker's view of a topic it lists, from its Metadata: ``leaderless`` the partitions without a leader or with
    an error. A topic-level error (LEADER_NOT_AVAILABLE) leaves none usable: every partition counts as leaderless, so
    that a grow waits for it (its added partitions' leaders alone passed it)."""
    if topic_error:
        leaderless = frozenset(range(partitions))
    return TopicView(partitions, not topic_error and not leaderless, topic_id, leaderless)


# node id -> its Metadata for the topics asked about (absent: not listed), or None when it could not be read
BrokerViews = dict[int, dict[str, TopicView] | None]


def _wanted_partitions(operation: str, item: Any) -> int:
    if operation == "CreatePartitions":
        return int(item.new_total_count)
    if item.replica_assignment:
        return len(item.replica_assignment)
    return max(1, int(item.num_partitions))  # -1: the broker's default, at least one


def _shows_enough(operation: str, item: Any, wanted: int, listed: TopicView, added: int | None) -> bool:
    """The topic a broker lists has the partitions wanted, led (a grow: those it added)."""
    return listed.partitions >= wanted and (listed.led or _added_led(operation, item, listed, added))


def _added_led(operation: str, item: Any, listed: TopicView, added: int | None) -> bool:
    """A grow, on a broker that lists its new count: whether the partitions it added have a leader, whatever became of
    those before it (offline while their only replicas' node is away: not the grow's to wait for) and of any added
    since by another client. The added ones are the last up to the new count: as many as its replica assignment
    names, else ``added`` (the grow's cost, once the partitions before it were read), else at least the very last
    (Kafka places added partitions on live brokers, and refuses an assignment to brokers all away)."""
    if operation != "CreatePartitions" or not listed.leaderless:  # (not led, yet none leaderless: no partition)
        return False
    total = int(item.new_total_count)
    count = len(item.replica_assignment) if item.replica_assignment else (added or 1)
    return not any(total - count <= index < total for index in listed.leaderless)


def ids_shown(name: str, views: BrokerViews) -> frozenset[uuid.UUID]:
    """Every topic id the brokers show for ``name`` (the ids before a create is sent)."""
    return frozenset(
        listed.topic_id
        for view in views.values()
        if view is not None and (listed := view.get(name)) is not None and listed.topic_id is not None
    )


def lagging(
    operation: str,
    name: str,
    item: Any,
    views: BrokerViews,
    before: frozenset[uuid.UUID] | None = None,
    added: int | None = None,
) -> tuple[int, ...] | None:
    """The brokers that do not show the change yet (sorted); None when no broker's view is known at all.
    ``before``: the ids the brokers showed of the name before a create was sent (None: not read); ``added``: the
    partitions a grow adds, when known."""
    if not views:
        return None
    if operation == "DeleteTopics":
        return tuple(n for n, view in sorted(views.items()) if view is None or view.get(name) is not None)
    wanted = _wanted_partitions(operation, item)
    behind: set[int] = set()
    shown: dict[int, uuid.UUID | None] = {}  # the brokers that show enough: the id each shows
    for node_id, view in views.items():
        listed = None if view is None else view.get(name)
        if listed is None or not _shows_enough(operation, item, wanted, listed, added):
            behind.add(node_id)
        elif listed.topic_id in (before or ()):
            behind.add(node_id)  # an incarnation that was there before the create: not ours
        else:
            shown[node_id] = listed.topic_id
    if len(set(shown.values())) > 1 and None not in shown.values():
        # They disagree: one id is not yet everywhere, and which one is the cluster's cannot be told from here.
        behind.update(shown)
    return tuple(sorted(behind))


class Visibility:
    """When to read the brokers' views next. Not thread-safe: the engine's own state."""

    def __init__(self) -> None:
        self.reading = False
        self.asked: frozenset[str] = frozenset()  # the names the read out (or the last one) was asked about
        self.deferred: frozenset[str] = frozenset()  # awaiting names that read left out on purpose
        self.next_at: float | None = None  # None: nothing awaits
        self.last_read_s = 0.0  # how long the last read took, from asking to the answer
        self._read_at = 0.0
        self._interval_s = FIRST_READ_S

    def awaiting(self, now: float) -> None:
        """A topic was applied and now waits: read soon (at once when nothing waited)."""
        if self.next_at is None:
            self.next_at = now

    def soon(self, now: float) -> None:
        """A create waits for the ids before its send: read at once (it is never deferred)."""
        self.next_at = now if self.next_at is None else min(self.next_at, now)

    def due(self, now: float) -> bool:
        return not self.reading and self.next_at is not None and now >= self.next_at

    def read(self, now: float, names: list[str], deferred: Iterable[str] = ()) -> None:
        """A read of ``names`` goes out; ``deferred``: awaiting topics left out on purpose (their calls still send)."""
        self.reading = True
        self.asked = frozenset(names)
        self.deferred = frozenset(deferred)
        self._read_at = now

    def answered(self, now: float, still_waiting: bool, unasked: bool = False) -> None:
        """A read came back. ``unasked``: topics applied while it was out wait for a read of their own, at once."""
        self.reading = False
        self.last_read_s = max(0.0, now - self._read_at)
        if unasked:
            self.next_at = now
        elif still_waiting:
            self.next_at = now + self._interval_s
            self._interval_s = min(MAX_INTERVAL_S, self._interval_s * GROWTH)
        else:
            self.idle()

    def idle(self) -> None:
        self.next_at = None
        self._interval_s = FIRST_READ_S

    def sending_interval_s(self) -> float:
        """How often a call still sending is read about."""
        return max(READ_WHILE_SENDING_S, READ_COST_FACTOR * self.last_read_s)

    def wake_at(self) -> float | None:
        return None if self.reading else self.next_at
