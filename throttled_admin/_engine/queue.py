"""The pending calls, in submission order, and rule a's name holds: which queued topics may be sent, and when.

``WorkQueue`` keeps the calls it is given by their ids (the driver's), holds each topic behind an earlier pending
call of its name (rule a), lets the next holder go when a topic is settled or withdrawn, and answers what the engine
asks before composing a request: the head of the queue, the topics of one kind that may go now, and when the next one
may. A topic that waits for the ids of its name before its send (``view_reads``) is not sendable: the engine passes
that test in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from throttled_admin._engine.lifecycle import TopicState
from throttled_admin._engine.metric_events import CallFinished
from throttled_admin._engine.work import Call, NameHolds, RequestKind, Topic

__all__ = ["WorkQueue"]

_HELD = TopicState.HELD_BEHIND_NAME

# A topic that must wait for something besides its name and its back-off (the ids before a create's send)
Waits = Callable[[Topic], bool]


class WorkQueue:
    """Not thread-safe: the engine's own state."""

    def __init__(self, max_topics_per_request: int, let_go: Callable[[Topic], None] = lambda topic: None) -> None:
        self.calls: dict[int, Call] = {}  # by id, in submission order, until every topic of the call is settled
        self._names = NameHolds()  # rule a: which pending topic holds each name
        self._max_topics = max_topics_per_request
        self._let_go = let_go  # told of each topic that a name passes to: the engine's reads of costs

    def add(self, call: Call, topics: list[Topic], *, more: bool = False) -> None:
        """Queue the call's topics, each held behind its name while an earlier pending call names it. ``more``: the
        rest of the call comes in one ``extend``; until then the call is not whole, and not finished."""
        if call.id in self.calls:
            raise ValueError(f"call id {call.id} is already pending")
        self._hold(call, topics)
        call.unsettled = len(topics)
        call.whole = not more
        self.calls[call.id] = call

    def extend(self, call: Call, topics: list[Topic]) -> None:
        """The rest of a call added with ``more``, queued behind what is queued now; the call is whole (``finished``
        is asked next). Cut short, ``take_back`` of the same topics."""
        self._hold(call, topics)
        call.unsettled, call.whole = call.unsettled + len(topics), True  # (together: no signal between them)

    def take_back(self, call: Call, topics: list[Topic]) -> None:
        """``extend`` of these topics was cut short: those it queued are withdrawn (none sent), their names given
        back; the call is as before it (not whole)."""
        for topic in topics:
            if topic.state is TopicState.QUEUED or topic.state is _HELD:
                call.move(topic, TopicState.WITHDRAWN)
        self.discard(topics)

    def _hold(self, call: Call, topics: list[Topic]) -> None:
        if self._names.hold_all(topics):  # no earlier pending call names any (a bulk call's, most often)
            call.move_all(topics, TopicState.QUEUED)
        else:
            for topic in topics:
                call.move(topic, TopicState.QUEUED if self._names.hold(topic) else _HELD)

    def discard(self, topics: list[Topic]) -> None:
        """``add`` of these topics' call was cut short, or refused it, before the call was queued (none of them was
        sent): the names they hold go to the calls behind them, and those they wait behind no longer count them."""
        for topic in topics:
            if (holder := self._names.release(topic)) is not None:
                self._hand_over(holder)

    def _hand_over(self, holder: Topic) -> None:
        """The name passes to ``holder``: it may be sent now."""
        holder.call.move(holder, TopicState.QUEUED)
        self._let_go(holder)

    def waiting(self) -> bool:
        """Whether any topic waits behind a name (rule a)."""
        return self._names.waiting()

    def behind(self, name: str) -> Topic | None:
        """The topic of a later call that waits for ``name`` (rule a) and holds it next, if any."""
        return self._names.next_behind(name)

    def settled(self, topic: Topic, now: float) -> CallFinished | None:
        """The topic is settled or withdrawn: the earliest pending call naming it may send it now; the call's
        metric event if that was its last topic."""
        return self.settled_all(topic.call, (topic,), now)

    def settled_all(self, call: Call, topics: Sequence[Topic], now: float) -> CallFinished | None:
        """``settled`` of each of ``topics``, all of ``call``, in order."""
        for holder in self._names.release_all(topics):
            self._hand_over(holder)
        call.unsettled -= len(topics)
        return self.finished(call, now)

    def finished(self, call: Call, now: float) -> CallFinished | None:
        """Once, when the call's last topic is settled or withdrawn: the call leaves the queue, and its duration is
        recorded (before its last future resolves: metric events go first, so a caller that waits for the results
        and then reads the metrics always finds this call in them)."""
        if call.unsettled > 0 or not call.whole or self.calls.pop(call.id, None) is None:
            return None
        return CallFinished(call.kind.operation.name, now - call.spec.started_at, call.error_type)

    def head(self, now: float, waits: Waits) -> Topic | None:
        """The first topic that may be sent now, in call order."""
        for call in self.calls.values():
            for topic in call.queued.values():  # ``_sendable`` inline: every request
                if topic.not_before <= now and topic.state is not _HELD and not waits(topic):
                    return topic
        return None

    def eligible(
        self, kind: RequestKind, now: float, waits: Waits, horizon: float | None = None
    ) -> tuple[list[Topic], float]:
        """The topics of one kind that may be sent now, in call order, at most a request's worth; and, for the
        pacer (``horizon`` given), the cost of every one that may go now, not only a request's worth (a first request
        the full bucket covers while more waits would be charged late: ``pacer.py``), summed until it exceeds
        ``horizon`` (beyond that, all costs are alike to the pacer). One pass for both (issue 40: a paced fleet
        composes or holds thousands of times a second)."""
        topics: list[Topic] = []
        room = self._max_topics
        total = 0.0
        summing, limit = horizon is not None, math.inf if horizon is None else horizon
        for call in self.calls.values():
            if call.kind is not kind and call.kind != kind:  # the same object most often: no dataclass __eq__
                continue
            for topic in call.queued.values():  # ``_sendable`` inline: a bulk call's every topic
                if topic.not_before <= now and topic.state is not _HELD and not waits(topic):
                    if room:
                        topics.append(topic)
                        room -= 1
                    if summing:
                        total += topic.cost or 0
                        summing = total <= limit
                    elif not room:
                        return topics, total
        return topics, total

    def next_eligible(self, now: float, waits: Waits) -> float:
        """When the next queued topic becomes sendable (one waiting for a name's holder is woken by its settling,
        one waiting for the ids before its send by the read's answer)."""
        ready = [t.not_before for c in self.calls.values() for t in c.queued.values() if _sendable(t, waits)]
        return max(now, min(ready, default=math.inf))


def _sendable(topic: Topic, waits: Waits) -> bool:
    """It holds its name (rule a) and waits for nothing else."""
    return topic.state is not _HELD and not waits(topic)
