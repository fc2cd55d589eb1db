"""What one row needs, given what the cluster has: a pure function, so every rule is in one place and
testable without a broker."""

from __future__ import annotations

from dataclasses import dataclass, field

from throttled_admin.provisioning._configs import same_value
from throttled_admin.provisioning._plan import PlanRow
from throttled_admin.provisioning._results import DELETE_NOT_ALLOWED, PLAN_CONFLICT

__all__ = ["Change", "TopicState", "decide"]


@dataclass(frozen=True)
class TopicState:
    """A topic as the cluster reports it; ``configs`` None when they were not read (or could not be)."""

    partitions: int
    replication_factor: int
    configs: dict[str, str] | None = None


@dataclass
class Change:
    """``kind``: create, grow, delete, reconfigure, none (nothing to do) or fail (``reason`` says why, in the
    Python API's words, and ``error_name`` what it is, so a command line can word it in its own).
    An ``ensure`` row can grow and reconfigure at once: ``kind`` is then grow and ``alter`` is set."""

    row: PlanRow
    kind: str
    mutations: int = 0
    alter: dict[str, str] = field(default_factory=dict)
    from_partitions: int = 0
    reason: str | None = None
    error_name: str | None = None

    @property
    def detail(self) -> str:
        if self.kind == "fail":
            return self.reason or "failed"
        parts: list[str] = []
        row = self.row
        if self.kind == "create":
            partitions = _count(row.partitions, "partition") if row.partitions is not None else "the broker's default"
            rf = row.replication_factor if row.replication_factor is not None else "the broker's default"
            parts.append(f"create with {partitions}, replication factor {rf}")
            if row.configs:
                parts.append("configs " + ", ".join(f"{k}={v}" for k, v in sorted(row.configs.items())))
        elif self.kind == "grow":
            parts.append(f"grow from {self.from_partitions} to {_count(row.partitions or 0, 'partition')}")
        elif self.kind == "delete":
            parts.append(f"delete ({_count(self.from_partitions, 'partition')})")
        if self.alter:
            parts.append("set " + ", ".join(f"{k}={v}" for k, v in sorted(self.alter.items())))
        return "; ".join(parts) or ("already gone" if self.row.action == "delete" else "already as planned")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _differing(planned: dict[str, str] | None, current: dict[str, str] | None) -> dict[str, str]:
    if not planned:
        return {}
    if current is None:  # unknown: setting a value to what it already is is harmless
        return dict(planned)
    # Compared as Kafka parses them: 'compact, delete' is the 'compact,delete' the cluster shows.
    return {k: v for k, v in planned.items() if not same_value(k, v, current.get(k))}


def _conflict(row: PlanRow, reason: str) -> Change:
    """The cluster's topic differs from the row in a way these APIs cannot change."""
    return Change(row, "fail", reason=reason, error_name=PLAN_CONFLICT)


def decide(row: PlanRow, topic: TopicState | None, *, allow_delete: bool) -> Change:
    """The change ``row`` needs when the cluster has ``topic`` (None: it does not exist).

    Kafka cannot remove partitions or change a replication factor through these APIs, so a plan asking
    for either fails with that reason instead of being silently ignored."""
    action = row.action
    if action == "delete":
        if topic is None:
            return Change(row, "none")  # already gone: a rerun converges
        if not allow_delete:
            return Change(
                row, "fail", reason="refused: pass allow_delete=True to delete topics", error_name=DELETE_NOT_ALLOWED
            )
        return Change(row, "delete", mutations=topic.partitions, from_partitions=topic.partitions)
    if topic is None:
        if action == "grow":
            return _conflict(row, f"cannot grow {row.topic!r}: the topic does not exist")
        # KRaft charges the resolved partition count; the broker default (num.partitions) is 1 unless set.
        return Change(row, "create", mutations=row.partitions or 1)
    if row.replication_factor is not None and row.replication_factor != topic.replication_factor:
        return _conflict(
            row,
            f"the topic has replication factor {topic.replication_factor}, the plan says "
            f"{row.replication_factor}: Kafka changes a replication factor only by reassigning partitions",
        )
    if row.partitions is not None and row.partitions < topic.partitions:
        return _conflict(
            row,
            f"the topic has {topic.partitions} partitions, the plan says {row.partitions}: "
            "Kafka cannot remove partitions from a topic",
        )
    grow = row.partitions is not None and row.partitions > topic.partitions
    alter = _differing(row.configs, topic.configs)
    if action == "create" and (grow or alter):
        return _conflict(
            row,
            f"the topic already exists and differs from the plan ({topic.partitions} partitions); "
            "use action ensure to change it",
        )
    if grow:
        assert row.partitions is not None
        added = row.partitions - topic.partitions
        return Change(row, "grow", mutations=added, alter=alter, from_partitions=topic.partitions)
    if alter:
        return Change(row, "reconfigure", alter=alter)
    return Change(row, "none")
