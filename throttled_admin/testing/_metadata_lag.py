"""What a KRaft broker's metadata cache shows while it is still replaying the metadata log.

The controller applies a topic change at once; every other node learns it by replaying the log, so its
Metadata answers show the change ``lag_s`` later (``QuotaBroker(metadata_lag_ms=...)``). The cluster notes each
change (a create, a grow, a delete) with the topic's state *before* it; a lagging node's view is the current
state with every change newer than ``now - lag_s`` undone. Changes older than the lag are forgotten, so a view
costs O(changes within the lag), whatever the cluster holds.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from throttled_admin.testing._topic import Topic

__all__ = ["MetadataLog", "TopicsView"]


def _copy(topic: Topic | None) -> Topic | None:
    if topic is None:
        return None
    return Topic(topic.name, topic.topic_id, [list(r) for r in topic.replicas], dict(topic.configs))


@dataclass(frozen=True)
class TopicsView:
    """The topics one node's Metadata shows: the current ones, with ``overrides`` (name -> the state it shows,
    None for a topic it does not know yet) laid over them."""

    current: Mapping[str, Topic]
    current_by_id: Mapping[uuid.UUID, Topic]
    overrides: Mapping[str, Topic | None]

    def get(self, name: str) -> Topic | None:
        if name in self.overrides:
            return self.overrides[name]
        return self.current.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        for topic in self.overrides.values():
            if topic is not None and topic.topic_id == topic_id:
                return topic
        topic = self.current_by_id.get(topic_id)
        return None if topic is None or topic.name in self.overrides else topic

    def names(self) -> Iterator[str]:
        for name in self.current:
            if self.overrides.get(name, self.current[name]) is not None:
                yield name
        for name, topic in self.overrides.items():
            if name not in self.current and topic is not None:
                yield name


class MetadataLog:
    """The recent topic changes, for the lagging nodes' views. Not thread-safe: the cluster's lock guards it."""

    def __init__(self, lag_s: float, clock: Callable[[], float]):
        self.lag_s = lag_s
        self.clock = clock
        self._changes: deque[tuple[float, str, Topic | None]] = deque()  # (when, name, state before)

    def note(self, name: str, before: Topic | None) -> None:
        """Record a change of ``name`` about to be applied; ``before`` is its state now (None: not there)."""
        if self.lag_s <= 0:
            return
        now = self.clock()
        self._forget(now)
        self._changes.append((now, name, _copy(before)))

    def _forget(self, now: float) -> None:
        horizon = now - self.lag_s
        while self._changes and self._changes[0][0] <= horizon:
            self._changes.popleft()

    def view(self, current: Mapping[str, Topic], by_id: Mapping[uuid.UUID, Topic]) -> TopicsView:
        """What a lagging node shows now: each topic as it was before its oldest change still within the lag."""
        self._forget(self.clock())
        overrides: dict[str, Topic | None] = {}
        for _, name, before in self._changes:
            overrides.setdefault(name, before)
        return TopicsView(current, by_id, overrides)
