"""A provisioning plan: one row per topic and what should become of it, and the checks every row passes
before anything is sent to a cluster."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from throttled_admin._kafka.topic_names import topic_name_error
from throttled_admin._validation import MAX_PARTITIONS, MAX_REPLICATION_FACTOR

__all__ = ["ACTIONS", "PlanError", "PlanRow", "row_problem"]

#: ``ensure``: make the topic look like the row (create, grow, reconfigure); ``create``: only create;
#: ``grow``: only add partitions; ``delete``: remove (only with ``allow_delete=True``).
ACTIONS = ("ensure", "create", "grow", "delete")


class PlanError(ValueError):
    """A plan or profiles file (or a row built in code) that cannot be applied. The message names the
    file, the row and the field."""


@dataclass(frozen=True)
class PlanRow:
    """One row of a plan. ``partitions`` and ``replication_factor`` None mean "the broker's default" for a
    create and "do not check" for an existing topic; ``source`` says where the row came from
    (``plan.csv: line 7``, ``plan.json: row 3`` the third row object) and begins every problem reported about
    it: ``plan.json: row 3: field 'partitions': ...``."""

    cluster: str
    action: str
    topic: str
    partitions: int | None = None
    replication_factor: int | None = None
    configs: dict[str, str] | None = None
    source: str = ""

    def where(self, index: int) -> str:
        """Where the row came from, else its position (``index`` is 0-based) in the rows given."""
        return self.source or f"row {index + 1}"


def _count_problem(value: Any, maximum: int) -> str | None:
    # bool is an int in Python; True partitions is a typo, not 1.
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        return f"must be an integer >= 1, got {value!r}"
    if value > maximum:  # the client's limit (librdkafka's), checked here in the plan's own terms
        return f"must be at most {maximum} (librdkafka's limit), got {value!r}"
    return None


def row_problem(row: PlanRow) -> tuple[str, str] | None:
    """The first thing wrong with ``row`` as (field, message), or None when it can be applied.

    The readers turn a problem into a ``PlanError``; the executor turns it into a ``failed`` result, so a
    plan built in code or in a DataFrame never raises half-way through."""
    if not isinstance(row.cluster, str) or not row.cluster:
        return "cluster", f"must be a non-empty profile name, got {row.cluster!r}"
    if row.action not in ACTIONS:
        return "action", f"must be one of {', '.join(ACTIONS)}, got {row.action!r}"
    if not isinstance(row.topic, str):
        return "topic", f"must be a string, got {row.topic!r}"
    name_error = topic_name_error(row.topic)
    if name_error is not None:
        return "topic", name_error
    if row.partitions is not None and (problem := _count_problem(row.partitions, MAX_PARTITIONS)) is not None:
        return "partitions", problem
    if row.action == "grow" and row.partitions is None:
        return "partitions", "a grow row needs the partition count to grow to"
    if row.replication_factor is not None:
        problem = _count_problem(row.replication_factor, MAX_REPLICATION_FACTOR)
        if problem is not None:
            return "replication_factor", problem
    if row.configs is not None:
        if row.action in ("grow", "delete"):
            return "configs", f"only ensure and create rows set configs, not {row.action}"
        if not isinstance(row.configs, dict):
            return "configs", f"must be a map of config name to value, got {type(row.configs).__name__}"
        for key, value in row.configs.items():
            if not isinstance(key, str) or not key:
                return "configs", f"config names must be non-empty strings, got {key!r}"
            if not isinstance(value, str):
                return "configs", f"the value of {key} must be a string, got {value!r}"
    return None
