"""Progress of one group, reported as the broker admits its mutations and as its rows finish."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["QUOTA_WINDOW_S", "AdmittedRate", "Progress", "ProgressCallback"]

#: Kafka's quota window: controller.quota.window.num (11) samples of quota.window.size.seconds (1 s).
QUOTA_WINDOW_S = 11.0


@dataclass(frozen=True)
class Progress:
    """One group's state: ``mutations_admitted`` counts the quota units the broker has admitted so far (the
    mutations of every topic its answers applied, counted when the answer came, before the row finishes),
    ``mutations_per_s`` those admitted in the last quota window (``QUOTA_WINDOW_S``) per second, ``quota_rate``
    the configured or learned rate (None while unknown), ``throttle_time_ms`` the largest throttle the broker sent
    in the client's current metrics window, ``last_throttle_ms`` the newest it sent (what the client waits out after
    a new throttled answer); ``throttled_responses`` the responses with a throttle and ``refused_by_quota`` the topic
    refusals (error 89), counted apart (the client's metrics). Of ``rows_done``, ``rows_not_sent`` and
    ``rows_failed`` ended so (a bar full at the end may still hold rows that were not applied)."""

    cluster: str
    rows_done: int
    rows_total: int
    mutations_admitted: int
    mutations_per_s: float
    quota_rate: float | None
    throttle_time_ms: int
    throttled_responses: int = 0
    refused_by_quota: int = 0
    rows_not_sent: int = 0
    rows_failed: int = 0
    last_throttle_ms: int = 0


ProgressCallback = Callable[[Progress], None]


class AdmittedRate:
    """Mutations admitted in the last ``QUOTA_WINDOW_S`` seconds, per second, from the running total: a burst the
    broker admitted reads as what it admitted over the quota's window (never more), and the rate decays to 0 as
    admissions leave the window while nothing more is admitted. Times are any monotonic clock's seconds."""

    def __init__(self, window_s: float = QUOTA_WINDOW_S) -> None:
        self._window_s = window_s
        self._points: deque[tuple[float, int]] = deque()  # (when the total changed, the total then)
        self._base = 0  # the total before the oldest point kept
        self.total = 0

    def update(self, admitted: int, now: float) -> None:
        if admitted == self.total:
            return
        self.total = admitted
        self._points.append((now, admitted))

    def rate(self, now: float) -> float:
        while self._points and self._points[0][0] <= now - self._window_s:
            self._base = self._points.popleft()[1]
        return (self.total - self._base) / self._window_s
