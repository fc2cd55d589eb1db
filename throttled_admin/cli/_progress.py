"""Live progress of ``apply``: a rich progress bar per cluster on a terminal, plain lines otherwise.

rich is the ``cli`` extra: it is imported only when a terminal asks for the bar, and without it the plain
lines are used, after a one-line hint on how to get the bar.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, TextIO

from throttled_admin.provisioning import Progress

__all__ = ["CLI_EXTRA_HINT", "ClusterStats", "LiveBar", "PlainLines", "ProgressDisplay", "Silent", "load_rich"]

CLI_EXTRA_HINT = "pip install 'throttled_admin[cli]'"
_PLAIN_INTERVAL_S = 1.0


def load_rich() -> Any | None:
    """The rich module, or None when the cli extra is not installed."""
    try:
        import rich
    except ImportError:
        return None
    return rich


def format_rate(rate: float | None) -> str:
    if rate is None or math.isnan(rate):
        return "?"
    return f"{rate:g}"


@dataclass
class ClusterStats:
    """What the display learned about one cluster's group, kept for the final throttle report."""

    cluster: str
    rows_total: int
    rows_done: int = 0
    mutations_admitted: int = 0
    mutations_per_s: float = 0.0
    quota_rate: float | None = None
    throttle_time_ms: int = 0
    max_throttle_time_ms: int = 0
    started: float = field(default_factory=time.monotonic)

    def update(self, progress: Progress) -> None:
        self.rows_done = progress.rows_done
        self.rows_total = progress.rows_total
        self.mutations_admitted = progress.mutations_admitted
        self.mutations_per_s = progress.mutations_per_s
        if progress.quota_rate is not None and not math.isnan(progress.quota_rate):
            self.quota_rate = progress.quota_rate
        self.throttle_time_ms = progress.throttle_time_ms
        self.max_throttle_time_ms = max(self.max_throttle_time_ms, progress.throttle_time_ms)

    def rate_text(self) -> str:
        return f"{self.mutations_per_s:.1f} mutations/s (quota {format_rate(self.quota_rate)}/s)"


class ProgressDisplay(Protocol):
    stats: dict[str, ClusterStats]

    def __call__(self, progress: Progress) -> None: ...

    def __enter__(self) -> ProgressDisplay: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class _Base:
    def __init__(self, rows_per_cluster: Mapping[str, int]) -> None:
        self.stats = {name: ClusterStats(name, total) for name, total in rows_per_cluster.items()}
        self._lock = threading.Lock()

    def _record(self, progress: Progress) -> ClusterStats:
        stats = self.stats.get(progress.cluster)
        if stats is None:
            stats = self.stats[progress.cluster] = ClusterStats(progress.cluster, progress.rows_total)
        stats.update(progress)
        return stats

    def __enter__(self) -> _Base:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class Silent(_Base):
    """Only collects the statistics (JSON output: stdout is for the records)."""

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            self._record(progress)


class PlainLines(_Base):
    """One line per cluster at most every second, and one when it finishes: readable in CI logs."""

    def __init__(self, rows_per_cluster: Mapping[str, int], stream: TextIO) -> None:
        super().__init__(rows_per_cluster)
        self._stream = stream
        self._last_line: dict[str, tuple[float, int]] = {}

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            stats = self._record(progress)
            now = time.monotonic()
            last_at, last_done = self._last_line.get(progress.cluster, (-math.inf, -1))
            finished = stats.rows_done >= stats.rows_total
            if stats.rows_done == last_done or (now - last_at < _PLAIN_INTERVAL_S and not finished):
                return
            self._last_line[progress.cluster] = (now, stats.rows_done)
            print(
                f"[{stats.cluster}] {stats.rows_done}/{stats.rows_total} rows, {stats.rate_text()}, "
                f"throttle {stats.throttle_time_ms} ms",
                file=self._stream,
                flush=True,
            )


class LiveBar(_Base):
    """rich's live progress: one bar per cluster with rows done, mutations/s against the quota and the
    current throttle. Updates come from the executor's threads; rich's Progress is thread-safe."""

    def __init__(self, rows_per_cluster: Mapping[str, int], rich_console: Any) -> None:
        super().__init__(rows_per_cluster)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("rows"),
            TextColumn("{task.fields[rate]}"),
            TextColumn("throttle {task.fields[throttle]} ms"),
            TimeElapsedColumn(),
            console=rich_console,
            refresh_per_second=8,
        )
        self._tasks = {
            name: self._progress.add_task(name, total=stats.rows_total, rate=stats.rate_text(), throttle=0)
            for name, stats in self.stats.items()
        }

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            stats = self._record(progress)
            task = self._tasks.get(stats.cluster)
            if task is None:
                task = self._tasks[stats.cluster] = self._progress.add_task(
                    stats.cluster, total=stats.rows_total, rate=stats.rate_text(), throttle=0
                )
            self._progress.update(
                task,
                completed=stats.rows_done,
                total=stats.rows_total,
                rate=stats.rate_text(),
                throttle=stats.throttle_time_ms,
            )

    def __enter__(self) -> LiveBar:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()
