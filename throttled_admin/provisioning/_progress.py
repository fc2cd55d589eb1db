"""Progress of one group, reported as rows finish."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Progress", "ProgressCallback"]


@dataclass(frozen=True)
class Progress:
    """One group's state: ``mutations_admitted`` counts the quota units of finished changes,
    ``mutations_per_s`` their rate since the group started, ``quota_rate`` the configured or learned
    rate (None while unknown), ``throttle_time_ms`` the largest throttle the broker sent in the client's
    current metrics window."""

    cluster: str
    rows_done: int
    rows_total: int
    mutations_admitted: int
    mutations_per_s: float
    quota_rate: float | None
    throttle_time_ms: int


ProgressCallback = Callable[[Progress], None]
