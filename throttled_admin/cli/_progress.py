"""Live progress of ``apply``: a rich progress bar per cluster on a terminal, plain lines otherwise.

rich is the ``cli`` extra: it is imported only when a terminal asks for the bar, and without it the plain
lines are used, after a one-line hint on how to get the bar.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, TextIO

from throttled_admin._extras import install_hint
from throttled_admin.cli._output import WRITE_ERRORS, reader_may_go, stdout_gone
from throttled_admin.provisioning import Progress
from throttled_admin.provisioning._progress import QUOTA_WINDOW_S, AdmittedRate

__all__ = [
    "CLI_EXTRA_HINT",
    "QUOTA_WINDOW_S",
    "ClusterStats",
    "LiveBar",
    "PlainLines",
    "ProgressDisplay",
    "Silent",
    "load_rich",
]

CLI_EXTRA_HINT = install_hint("cli")
_PLAIN_INTERVAL_S = 1.0
# The live bar at its least before its words turn compact, the rate's and throttle's longest words, and the elapsed
# time (0:00:04) with the gaps between the seven columns
_LEAST_BAR, _LONGEST_WORDS, _ELAPSED_AND_GAPS = 10, 31 + 31, 7 + 6
_COMPACT_AGE_S = 0.1  # how long that decision holds (a terminal resized, a row failed)
# Columns the bars leave free at the line's end: a terminal echoes Ctrl-C there as ``^C``, which on a full line wraps
# to the next, and rich's last frame, drawn from the line the cursor is on, would leave the one before above it
_ECHO_ROOM = 2


def load_rich() -> Any | None:
    """The rich module, or None when the cli extra is not installed."""
    try:
        import rich
    except ImportError:
        return None
    return rich


def new_console(**settings: Any) -> Any:
    """rich's Console, but a reader gone (``| head -1``) silences it instead of ending the process with exit 1, as
    rich's own does: the command's exit code says what it did (``reader_may_go``)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            stdout_gone()

    return _Console(**settings)


def format_rate(rate: float | None) -> str:
    if rate is None or math.isnan(rate):
        return "?"
    return f"{rate:.3g}"  # a learned rate: 19.98, not 19.9804


@dataclass
class ClusterStats:
    """What the display learned about one cluster's group, kept for the final throttle report. ``cluster`` is the
    group's profile (the name its progress carries); ``clusters``, the plan's names it serves: more than one where
    profiles name one quota entity (``--bootstrap-server`` with a plan of two clusters, say)."""

    cluster: str
    rows_total: int
    clusters: tuple[str, ...] = ()
    rows_done: int = 0
    rows_not_sent: int = 0  # of rows_done
    rows_failed: int = 0
    mutations_admitted: int = 0
    quota_rate: float | None = None
    throttle_time_ms: int = 0  # the largest in the client's metrics window
    last_throttle_ms: int = 0  # the newest
    max_throttle_time_ms: int = 0
    throttled_responses: int = 0
    refused_by_quota: int = 0
    throttle_until: float = 0.0  # monotonic time the broker's last throttle ends
    started: float = field(default_factory=time.monotonic)
    admitted: AdmittedRate = field(default_factory=AdmittedRate)  # when the broker admitted how many

    def __post_init__(self) -> None:
        self.clusters = self.clusters or (self.cluster,)

    @property
    def label(self) -> str:
        return ", ".join(self.clusters)

    def update(self, progress: Progress, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.rows_done = progress.rows_done
        self.rows_total = progress.rows_total
        self.rows_not_sent = progress.rows_not_sent
        self.rows_failed = progress.rows_failed
        self.admitted.update(progress.mutations_admitted, now)
        self.mutations_admitted = progress.mutations_admitted
        if progress.quota_rate is not None and not math.isnan(progress.quota_rate):
            self.quota_rate = progress.quota_rate
        new_answer = (
            progress.throttled_responses > self.throttled_responses or progress.refused_by_quota > self.refused_by_quota
        )
        if progress.last_throttle_ms > 0 and new_answer:
            # A new throttle from the broker, counted: nothing more is admitted until it ends. (Not the largest of the
            # client's metrics window, which a long throttle before kept: 16 s counted down after a 1 s throttle.)
            self.throttle_until = now + progress.last_throttle_ms / 1000
        self.throttle_time_ms = progress.throttle_time_ms
        self.last_throttle_ms = progress.last_throttle_ms or self.last_throttle_ms
        self.max_throttle_time_ms = max(self.max_throttle_time_ms, progress.throttle_time_ms)
        # Running totals, never lowered by a report
        self.throttled_responses = max(self.throttled_responses, progress.throttled_responses)
        self.refused_by_quota = max(self.refused_by_quota, progress.refused_by_quota)

    def recent_rate(self, now: float | None = None) -> float:
        """Mutations the broker admitted in the last QUOTA_WINDOW_S, per second: never more than it admitted in
        that window, and decaying to 0 while nothing is admitted."""
        return self.admitted.rate(time.monotonic() if now is None else now)

    def throttle_left_s(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return max(0.0, self.throttle_until - now)

    def rows_text(self) -> str:
        """ "rows", and of those done, how many were not applied: a full bar is not a plan applied."""
        ended = [f"{n} {what}" for n, what in ((self.rows_not_sent, "not sent"), (self.rows_failed, "failed")) if n]
        return f"rows ({', '.join(ended)})" if ended else "rows"

    def rate_text(self, now: float | None = None, *, compact: bool = False) -> str:
        """``compact``: a terminal too narrow for the words (``4.0 of 4/s``)."""
        if compact:
            return f"{self.recent_rate(now):.1f} of {format_rate(self.quota_rate)}/s"
        return f"{self.recent_rate(now):.1f} mutations/s (quota {format_rate(self.quota_rate)}/s)"

    def throttle_text(self, now: float | None = None, *, compact: bool = False) -> str:
        left = self.throttle_left_s(now) if self.rows_done < self.rows_total else 0.0  # done: nothing waits
        if left > 0:
            return f"{'throttle' if compact else 'waiting out throttle'}: {math.ceil(left)} s left"
        if not self.throttle_time_ms:
            return "no throttle"
        return (
            f"last throttle {self.last_throttle_ms / 1000:.1f} s"
            if compact
            else f"last throttle {self.last_throttle_ms} ms"
        )


class ProgressDisplay(Protocol):
    stats: dict[str, ClusterStats]

    def __call__(self, progress: Progress) -> None: ...

    def __enter__(self) -> ProgressDisplay: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class _Base:
    def __init__(
        self, rows_per_cluster: Mapping[str, int], clusters: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        """``rows_per_cluster``: rows per group, by the name its progress carries; ``clusters``: the plan's cluster
        names of a group that serves more than its own."""
        named = clusters or {}
        self.stats = {
            name: ClusterStats(name, total, tuple(named.get(name, ()))) for name, total in rows_per_cluster.items()
        }
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
    """One line per cluster at most every second, one when a broker's throttle begins, and one when it finishes:
    readable in CI logs."""

    def __init__(
        self, rows_per_cluster: Mapping[str, int], stream: TextIO, clusters: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        super().__init__(rows_per_cluster, clusters)
        self._stream = stream
        self._last_line: dict[str, tuple[float, int]] = {}
        self._unwritable = False  # (``> /dev/full``: the lines stop; the report's write then says so, exit 1)

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            throttle_was = self.stats[progress.cluster].throttle_until if progress.cluster in self.stats else 0.0
            stats = self._record(progress)
            now = time.monotonic()
            last_at, last_done = self._last_line.get(progress.cluster, (-math.inf, -1))
            finished = stats.rows_done >= stats.rows_total
            throttled = stats.throttle_until != throttle_was and not finished  # a new throttle: say how long, now
            if not throttled and (stats.rows_done == last_done or (now - last_at < _PLAIN_INTERVAL_S and not finished)):
                return
            self._last_line[progress.cluster] = (now, stats.rows_done)
            if self._unwritable:
                return
            line = f"[{stats.label}] {stats.rows_done}/{stats.rows_total} {stats.rows_text()}, {stats.rate_text(now)}, "
            try:
                with reader_may_go():
                    print(line + stats.throttle_text(now), file=self._stream, flush=True)
            except OSError as exc:
                if exc.errno not in WRITE_ERRORS:
                    raise
                self._unwritable = True


class LiveBar(_Base):
    """rich's live progress: one bar per cluster with rows done, the rate admitted over the quota window
    against the quota, and the broker's throttle counting down. The rate and the countdown are computed
    each time the bar is drawn (8 times a second), so they move while no row finishes. Updates come from
    the executor's threads; rich's Progress is thread-safe."""

    def __init__(
        self,
        rows_per_cluster: Mapping[str, int],
        rich_console: Any,
        clusters: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        super().__init__(rows_per_cluster, clusters)
        from rich.constrain import Constrain
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column
        from rich.text import Text

        class StatsColumn(ProgressColumn):
            def __init__(self, render: Any) -> None:
                super().__init__(Column(no_wrap=True))  # never folded: where the line is short, the bar gives way
                self._render = render

            def render(self, task: Any) -> Any:
                return Text(self._render(task.fields["stats"]))

        bar = self

        class Elapsed(TimeElapsedColumn):
            def render(self, task: Any) -> Any:
                return Text("") if bar._compact() else super().render(task)

        self._console = rich_console
        self._compact_at = (-math.inf, False)  # when _compact last decided, and what

        class Bars(Progress):
            def get_renderable(self) -> Any:  # as wide as the terminal less _ECHO_ROOM, however wide the words
                return Constrain(super().get_renderable(), width=max(1, rich_console.width - _ECHO_ROOM))

        self._progress = Bars(
            TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True)),
            BarColumn(),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            StatsColumn(lambda stats: stats.rows_text()),
            StatsColumn(lambda stats: stats.rate_text(compact=self._compact())),
            StatsColumn(lambda stats: stats.throttle_text(compact=self._compact())),
            Elapsed(),  # the summary has it too: left out where the words are compact
            console=rich_console,
            refresh_per_second=8,
        )
        self._tasks = {
            name: self._progress.add_task(stats.label, total=stats.rows_total, stats=stats)
            for name, stats in self.stats.items()
        }

    def _compact(self) -> bool:
        """Whether the bars' words, at their longest (a rate of ``999.9 mutations/s (quota 999/s)``, ``waiting out
        throttle: 99 s left``), would not fit on one line of the terminal as it is now beside a bar of
        ``_LEAST_BAR`` cells: rich would fold each column's words onto a second line. Each column is as wide as its
        widest cell, whichever bar it is in. Decided on the longest words, not the moment's, so the bars do not
        change form as a throttle comes and goes."""
        from rich.cells import cell_len

        now = time.monotonic()
        if now - self._compact_at[0] < _COMPACT_AGE_S:  # asked by three columns of every bar, 8 times a second
            return self._compact_at[1]
        stats = self.stats.values()
        widest = sum(
            max((cell_len(text) for text in column), default=0)
            for column in (
                [s.label for s in stats],
                [f"{s.rows_total}/{s.rows_total}" for s in stats],
                [s.rows_text() for s in stats],
            )
        )
        compact = widest + _LONGEST_WORDS + _LEAST_BAR + _ELAPSED_AND_GAPS > int(self._console.width) - _ECHO_ROOM
        self._compact_at = (now, compact)
        return compact

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            stats = self._record(progress)
            task = self._tasks.get(stats.cluster)
            if task is None:
                task = self._tasks[stats.cluster] = self._progress.add_task(
                    stats.cluster, total=stats.rows_total, stats=stats
                )
            self._progress.update(task, completed=stats.rows_done, total=stats.rows_total)

    def __enter__(self) -> LiveBar:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()
