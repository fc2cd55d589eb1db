"""``wait_for_metadata``'s reads, as decisions: which names to ask every broker about and when (``visibility``),
the ids of a create's name before its first send (incarnations), and which applied topics a read showed everywhere.

``ViewReads`` takes the engine's calls and topics and returns what to read (``plan``) and what is visible
(``answered``); the engine emits the ``ReadViews`` action and settles the topics.

Ids may be read ahead (``read_ahead``: the provisioning executor names its other creates while its first row is
answered). A name no pending call names is asked about with the next read; a create of it that holds its name when
submitted, while that read is out or within ``AHEAD_FRESH_S`` of its asking, takes those ids instead of a read of its
own, if every broker answered it. Any call naming the name takes them or spoils them: a read ahead stands only for a
name this client left alone from the read's asking to the create. The names read ahead are not among those a read
asks about (``Visibility.asked``): no change applied meanwhile is judged by it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Collection, Iterable

from throttled_admin._engine.lifecycle import TopicState
from throttled_admin._engine.visibility import READ_BEFORE_DEADLINE_S, BrokerViews, Visibility, ids_shown, lagging
from throttled_admin._engine.work import Call, Topic

__all__ = ["AHEAD_FRESH_S", "ViewReads"]

#: How long ids read ahead of a create stand for a read of its own (``read_ahead``), from that read's asking: what they
#: could miss is another client's create and delete of the name in that time (a read of its own, between its answer
#: and the create's send).
AHEAD_FRESH_S = 10.0


class ViewReads:
    """When to read the brokers' views, and of what. Not thread-safe: the engine's own state."""

    def __init__(self) -> None:
        self._when = Visibility()
        self._unread: dict[Topic, None] = {}  # creates whose name's ids before the send are not read yet, in order
        # Whether a topic waits for the ids of its name before its send: the dict's own lookup (a Topic hashes by
        # identity), asked of every topic before a request is composed (a method was three calls a request, issue 39)
        self.reads_ids: Callable[[Topic], bool] = self._unread.__contains__
        self._asked: list[Topic] = []  # those of them the read out asks about
        self._ahead: dict[str, None] = {}  # names whose ids to read ahead, not yet asked about (``read_ahead``)
        self._ahead_asked: frozenset[str] = frozenset()  # those the read out asks about
        self._ahead_asked_at = 0.0  # when it was asked
        self._spoiled: set[str] = set()  # ... that a call named since
        self._takers: dict[str, Topic] = {}  # ... the create of each that takes its answer (``take_ahead``)
        # name -> (the ids every broker showed, when that read was asked)
        self._ahead_read: dict[str, tuple[frozenset[uuid.UUID], float]] = {}

    def read_ahead(self, names: Iterable[str], calls: Iterable[Call], now: float) -> None:
        """Read these names' ids with the next read (at once when none is out), for creates of them to come; not
        those a pending call names (its call's to read: its own, or its create's)."""
        pending = {name for call in calls for name in (*call.queued, *call.in_flight, *call.awaiting)}
        self._ahead.update(dict.fromkeys(name for name in names if name not in pending))
        if self._ahead:
            self._when.soon(now)

    def want_ids(self, topics: Iterable[Topic]) -> None:
        """wait_for_metadata creates: not sent until every broker's ids of the name are read (or ``take_ahead``)."""
        self._unread.update(dict.fromkeys(topics))

    def take_ahead(self, topics: Iterable[Topic], now: float) -> None:
        """Those creates, queued now: one that holds its name (no earlier pending call names it) takes the ids read
        ahead of it within ``AHEAD_FRESH_S`` of that read's asking, or, while that read is out and no call named it
        since it was asked, that read's answer. Either way none is kept for another."""
        if not (self._ahead_read or self._ahead_asked or self._ahead):
            return
        for topic in topics:
            name, holds = topic.name, topic.state is not TopicState.HELD_BEHIND_NAME
            if holds and name in self._ahead_asked and name not in self._spoiled:
                self._takers[name] = topic
            read = self._named(name)
            if holds and read is not None and now - read[1] <= AHEAD_FRESH_S:
                topic.ids_before = read[0]  # (before it leaves the unread: cut short between, it is read again)
                del self._unread[topic]

    def named(self, names: Iterable[str]) -> None:
        """A call other than a wait_for_metadata create names these topics: what was read ahead of them no longer
        holds."""
        if self._ahead_read or self._ahead_asked or self._ahead:
            for name in names:
                self._named(name)

    def _named(self, name: str) -> tuple[frozenset[uuid.UUID], float] | None:
        """A call names ``name``: what was read ahead of it, taken (none is kept, nor asked about any more)."""
        self._ahead.pop(name, None)
        if name in self._ahead_asked:
            self._spoiled.add(name)
        return self._ahead_read.pop(name, None)

    def forget(self, topic: Topic) -> None:
        """The topic is settled or withdrawn: its ids are no longer wanted."""
        self.forget_all((topic,))

    def forget_all(self, topics: Iterable[Topic]) -> None:
        """``forget`` of each of ``topics``."""
        if self._unread:
            for topic in topics:
                self._unread.pop(topic, None)

    def applied(self, now: float) -> None:
        """A topic was applied and now waits for every broker to show it."""
        self._when.awaiting(now)

    def plan(self, calls: Collection[Call], now: float) -> tuple[tuple[str, ...] | None, float]:
        """The names to read now (None: no read now) and when the next read is due. The topics of a call still
        sending are read at most every READ_WHILE_SENDING_S (``visibility``)."""
        if not self._unread and not self._ahead:
            for call in calls:  # (a plain loop, not a call: every step)
                if call.awaiting:
                    break
            else:  # the common case: nothing to read, at once
                if not self._when.reading and self._when.next_at is not None:  # (idle already: nothing to reset)
                    self._when.idle()
                return None, math.inf
        ready, names, deferred, deferred_until = self._awaiting(calls, now)
        first = self._ids_to_read(now)
        if not names and not first and not self._ahead:
            if deferred_until == math.inf and not self._when.reading:
                self._when.idle()
            return None, deferred_until
        read = self._read(ready, names, first, deferred, now) if self._when.due(now) else None
        wake_at = self._when.wake_at()
        return read, min(deferred_until, math.inf if wake_at is None else wake_at)

    def _read(
        self, ready: list[Call], names: list[str], first: list[Topic], deferred: list[str], now: float
    ) -> tuple[str, ...]:
        """The read that goes now: the awaited names, the ids of creates not yet sent, and the names to read ahead."""
        names.extend(topic.name for topic in first)
        # (the names read ahead are not among those it asks about: nothing applied meanwhile is judged by it)
        self._when.read(now, names, deferred)
        if self._ahead:  # (a call naming one since took it out: ``_named``)
            self._ahead_asked, self._ahead_asked_at, self._ahead = frozenset(self._ahead), now, {}
            names.extend(self._ahead_asked)
        self._asked = first
        for call in ready:
            call.views_read_at = now
        return tuple(names)

    def answered(self, calls: Iterable[Call], views: BrokerViews, now: float) -> list[Topic]:
        """Every broker's Metadata for the names asked about: the applied topics it shows everywhere, in order."""
        asked, deferred, unasked = self._when.asked, self._when.deferred, False
        for topic in self._asked:  # the ids before a create is sent, from every broker that could be read
            if topic in self._unread:  # still queued (not withdrawn, not settled)
                del self._unread[topic]
                topic.ids_before = ids_shown(topic.name, views)
        self._asked = []
        if self._ahead_asked:
            self._answered_ahead(views, now)
        visible: list[Topic] = []
        waiting = False
        for call in calls:
            operation = call.kind.operation.name
            for topic in call.awaiting.values():
                if topic.name not in asked:
                    # applied while the read was out: no broker was asked about it (a call still sending, left out
                    # of the read on purpose, waits for its own interval instead)
                    unasked |= topic.name not in deferred
                    waiting = True
                    continue
                topic.lagging = lagging(operation, topic.name, topic.item, views, topic.ids_before, topic.cost)
                if topic.lagging == ():
                    visible.append(topic)
                else:
                    waiting = True
        self._when.answered(now, waiting, unasked)
        return visible

    def _answered_ahead(self, views: BrokerViews, now: float) -> None:
        """The ids read ahead: taken by the creates that ``take_ahead`` chose while the read was out, if still waiting
        for them, and kept for creates to come unless a call named them since it was asked. A read that missed a
        broker (or all of them) is neither: those creates read their own."""
        asked, spoiled, takers, asked_at = self._ahead_asked, self._spoiled, self._takers, self._ahead_asked_at
        self._ahead_asked, self._spoiled, self._takers = frozenset(), set(), {}
        self._ahead_read = {name: read for name, read in self._ahead_read.items() if now - read[1] <= AHEAD_FRESH_S}
        if not views or None in views.values():
            return
        for name in asked:
            if (taker := takers.get(name)) is not None:
                if taker in self._unread:  # (not withdrawn, not settled)
                    taker.ids_before = ids_shown(name, views)
                    del self._unread[taker]
            elif name not in spoiled:
                self._ahead_read[name] = ids_shown(name, views), asked_at

    def _awaiting(self, calls: Iterable[Call], now: float) -> tuple[list[Call], list[str], list[str], float]:
        """The calls whose applied topics may be read now, those topics' names, the names left for later (a call
        still sending, read recently), and when those may be read next."""
        ready: list[Call] = []
        names: list[str] = []
        deferred: list[str] = []
        deferred_until = math.inf  # when a call still sending may be read next
        interval_s = self._when.sending_interval_s()
        # Near the deadline every call is read freely; how near grows with what reads take (an answer must come
        # back before the deadline).
        margin_s = READ_BEFORE_DEADLINE_S + 2 * self._when.last_read_s
        for call in calls:
            if not call.awaiting:
                continue
            if call.queued or call.in_flight:
                last = call.views_read_at
                ready_at = now if last is None else min(last + interval_s, call.spec.deadline - margin_s)
                if now < ready_at:
                    deferred_until = min(deferred_until, ready_at)
                    deferred.extend(call.awaiting)
                    continue
            ready.append(call)
            names.extend(call.awaiting)
        return ready, names, deferred, deferred_until

    def _ids_to_read(self, now: float) -> list[Topic]:
        """wait_for_metadata creates whose ids before the send are to be read (those holding their names, rule a),
        unless a read is out already."""
        if self._ahead and not self._when.reading:  # (to read ahead, perhaps named while a read was out)
            self._when.soon(now)
        if not self._unread or self._when.reading:
            return []
        first = [topic for topic in self._unread if topic.state is not TopicState.HELD_BEHIND_NAME]
        if first:
            self._when.soon(now)
        return first
