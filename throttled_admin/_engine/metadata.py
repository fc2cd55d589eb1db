"""What the engine reads of the cluster's metadata before it sends: partition counts (the KIP-599 cost of a delete
or a grow), and the cluster's default partition count (what a create of -1 partitions makes and is charged: the
controller's ``num.partitions``, docs/semantics.md, rule g)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from throttled_admin._engine.work import CREATE_TOPICS, Topic

__all__ = ["MetadataReads"]


@dataclass
class MetadataReads:
    """The engine asks for one read at a time (``Outbox.read_metadata``); the driver answers ``Engine.on_metadata``."""

    reading: bool = False  # a read is out
    refresh: bool = False  # read before sending again: after NOT_CONTROLLER (as Java does), or to read a default back
    default_partitions: int | None = None  # the cluster's default partition count, once read
    default_from: str | None = None  # a topic created with a guessed count, to read back when the setting could not be
    # topics let go behind their name (rule a) while a read was out, their count not known here: that read predates
    # the change before them; costed by the next (``Engine.on_metadata``)
    _released: set[Topic] = field(default_factory=set)

    def ask(self) -> bool:
        """Whether to ask for a read now (True: one is now out)."""
        if self.reading:
            return False
        self.refresh, self.reading = False, True
        return True

    def read_back(self, names: list[str]) -> None:
        """Topics created with the cluster's default partition count, guessed: read the last back (unless the default
        is known by now)."""
        if names and self.default_partitions is None:
            self.default_from, self.refresh = names[-1], True

    def let_go(self, topic: Topic) -> None:
        """A name passed to ``topic`` (rule a, ``WorkQueue``): a grow or delete whose count is not known here
        (``machine._cost_behind``) is costed by a read asked from now on; one out now predates the change ahead."""
        if self.reading and topic.cost is None and topic.call.kind.operation is not CREATE_TOPICS:
            self._released.add(topic)

    def answered(
        self, counts: dict[str, int] | None, default_partitions: int | None
    ) -> tuple[int | None, Callable[[Any], bool]]:
        """The read came back: partition counts by topic (None: the read failed) and the cluster's default if it was
        read. Returns the default partition count as now known, and whether the read predates a topic's release
        (``let_go``): it cannot cost that one."""
        self.reading = False
        predates, self._released = self._released.__contains__, set()
        if default_partitions is None and counts is not None and self.default_from in counts:
            default_partitions = counts[self.default_from]  # a topic created with the default, read back
        if default_partitions is not None:
            self.default_partitions = default_partitions
            self.default_from = None
        return self.default_partitions, predates
