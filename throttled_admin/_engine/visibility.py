"""``wait_for_metadata``: a topic's future resolves only when every broker's Metadata shows the change.

A KRaft broker learns of a mutation by replaying the metadata log; until it has, its Metadata lacks the topic
(or the new partitions, or still lists a deleted topic) and producers get UNKNOWN_TOPIC_OR_PARTITION. With
``wait_for_metadata`` (kafka-python 3's name) the engine keeps an applied topic's future open and asks the driver
for every broker's view of it (one Metadata request per broker) until each shows it:

- a create: listed, with at least the partitions asked for (any count for the broker's default), each with a
  leader;
- a grow: listed with at least the new count, each partition with a leader;
- a delete: absent.

A broker whose Metadata could not be read does not show it, and a read judges only the names it asked about (a
delete applied while a read for other names was out is absent from every view without having been asked about).
Reads are spaced from ``FIRST_READ_S``, growing by ``GROWTH`` to ``MAX_INTERVAL_S``; a topic still not shown
everywhere at its call's deadline fails with ``NotYetVisibleError``: applied, not yet visible everywhere
(naming the brokers that lag).

While a call still has topics to send or in flight, its applied topics are read about at once the first time
and then at most every ``READ_WHILE_SENDING_S`` (and as usual from ``READ_BEFORE_DEADLINE_S`` before its
deadline, and once it has nothing left to send): a bulk call of many requests no longer asks every broker
after each request. (A broker's Metadata is one request per broker, and through librdkafka, on TLS and SASL
listeners, it lists every topic of the cluster: 200 pipeline entities reading after each request kept ten
test brokers from answering anything else.) Progress still shows: a command line's bar moves every few seconds.
The interval grows with what reads cost: at least ``READ_COST_FACTOR`` times as long as the last read took, so
busy brokers, whose answers come slowly, are asked less often; and reads near the deadline start earlier by twice
the last read's duration, so their answer comes back in time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
    "lagging",
]

FIRST_READ_S = 0.05
GROWTH = 1.5
MAX_INTERVAL_S = 1.0
READ_BEFORE_DEADLINE_S = 3.0
READ_WHILE_SENDING_S = 2.0
READ_COST_FACTOR = 10.0

# (partitions listed, every one of them with a leader and no error)
TopicView = tuple[int, bool]
# node id -> its Metadata for the topics asked about (absent: not listed), or None when it could not be read
BrokerViews = dict[int, dict[str, TopicView] | None]


def _wanted_partitions(operation: str, item: Any) -> int:
    if operation == "CreatePartitions":
        return int(item.new_total_count)
    if item.replica_assignment:
        return len(item.replica_assignment)
    return max(1, int(item.num_partitions))  # -1: the broker's default, at least one


def lagging(operation: str, name: str, item: Any, views: BrokerViews) -> tuple[int, ...] | None:
    """The brokers that do not show the change yet (sorted); None when no broker's view is known at all."""
    if not views:
        return None
    behind = []
    for node_id, view in sorted(views.items()):
        if view is None:
            behind.append(node_id)
            continue
        listed = view.get(name)
        if operation == "DeleteTopics":
            if listed is not None:
                behind.append(node_id)
        elif listed is None or listed[0] < _wanted_partitions(operation, item) or not listed[1]:
            behind.append(node_id)
    return tuple(behind)


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
