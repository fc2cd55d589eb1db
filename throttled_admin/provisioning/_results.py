"""What became of each plan row, and the counts a report shows."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

__all__ = [
    "DELETE_NOT_ALLOWED",
    "PLAN_CONFLICT",
    "PLAN_ERROR",
    "RESULT_FIELDS",
    "STATUSES",
    "RowResult",
    "as_given",
    "summarize",
]

#: ``planned`` only in a dry run; every other status is final. ``not_sent``: the group's time budget ended before the
#: quota let the row go (nothing of it applied; ``quota_debt_ms`` says how long the quota still held it).
STATUSES = ("created", "grown", "reconfigured", "deleted", "unchanged", "failed", "not_sent", "planned")
#: ``error_name`` of a row that failed by the plan's own rules, before anything was sent: a row that cannot be
#: applied as written, a delete without ``allow_delete=True``, and a topic that differs from the plan in a way
#: these APIs cannot change (fewer partitions, another replication factor, a create of a topic that exists and
#: differs, a grow of a topic that does not exist, a name colliding with an existing topic).
PLAN_ERROR, DELETE_NOT_ALLOWED, PLAN_CONFLICT = "PLAN_ERROR", "DELETE_NOT_ALLOWED", "PLAN_CONFLICT"


def as_given(value: object) -> str:
    """A plan row's cluster, topic or action as its result shows it: a number as its digits, a missing one (null in
    a DataFrame, JSON or YAML) missing still: ``str(None)`` made it the text 'None', a topic name Kafka takes."""
    return cast(str, value) if value is None or isinstance(value, str) else str(value)


@dataclass(frozen=True)
class RowResult:
    """The outcome of one plan row.

    ``attempts``: how many times the row's change was sent (0 when nothing was needed or it failed
    before sending). ``throttle_time_ms``: how long the group's client waited out broker throttles while
    this row was pending. ``started_at``/``finished_at``: epoch seconds. Beyond the required columns:
    ``mutations`` the quota units the row costs (created partitions, added partitions, or the deleted
    topic's partitions), ``detail`` what was (or in a dry run would be) done, and in a dry run
    ``predicted_s``, when the row's mutations would be admitted, in seconds from the group's start (on a ``not_sent``
    row: when the quota would have admitted every row left, had the budget allowed).
    ``error_name``: set on every failed row, Kafka's name of ``error_code`` when there is one, else one of the
    plan's own (``PLAN_ERROR``, ``DELETE_NOT_ALLOWED``, ``PLAN_CONFLICT``) or the exception's type.
    ``quota_debt_ms``: how long the principal's quota still held the row when it was given up (``not_sent``, or
    refused with error 89), or in a dry run the debt the principal owes; None when nothing was owed or known."""

    cluster: str
    topic: str
    action: str
    status: str
    error_code: int | None = None
    error_message: str | None = None
    attempts: int = 0
    throttle_time_ms: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    mutations: int = 0
    detail: str | None = None
    predicted_s: float | None = None
    error_name: str | None = None
    quota_debt_ms: int | None = None

    def as_dict(self) -> dict[str, Any]:
        # Every field is a scalar: a shallow read is dataclasses.asdict's answer without its recursive copy,
        # which was a third of the driver's CPU for a 14,700-topic fleet (py-spy, docs/benchmarks.md).
        return {name: getattr(self, name) for name in RESULT_FIELDS}


RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(RowResult))


def summarize(results: Iterable[RowResult]) -> dict[str, int]:
    """Status -> number of rows, in the order of ``STATUSES``, statuses with no rows left out."""
    counts = Counter(r.status for r in results)
    return {status: counts[status] for status in STATUSES if counts[status]}
