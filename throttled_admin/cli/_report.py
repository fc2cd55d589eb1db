"""The end of ``apply``: rows that need attention, a summary table per cluster, and the throttle metrics.

Drawn with rich when it is installed (boxes and colour on a terminal, plain boxes in a pipe, each as wide as what it
holds), else as aligned text columns. No cell is ever cut short.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from confluent_kafka import KafkaError

from throttled_admin.cli._conf import Redactor
from throttled_admin.cli._output import reader_may_go
from throttled_admin.cli._progress import QUOTA_WINDOW_S, ClusterStats, format_rate
from throttled_admin.provisioning import STATUSES, RowResult

__all__ = ["Table", "budget_summary", "predicted_durations", "quota_debts", "render_report", "throttle_summary"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return text == "?"
    return True


_UNBOUNDED = 1_000_000  # a width no table reaches: where a table's own least width is measured


def _cells(text: str) -> int:
    """The columns ``text`` takes on a terminal: 2 for a wide character (東), none for a combining or format one (a
    zero-width joiner). Where rich draws, its own measure (``rich.cells.cell_len``) is used instead."""
    return sum(map(_cell, text))


def _cell(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) == "Cf":
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def _word_widths(headers: Sequence[str], rows: Sequence[Sequence[str]], console_width: int) -> list[int] | None:
    """Column widths for a table that does not fit ``console_width`` at its natural width, none of its values' words
    folded: each column its longest value word, and its header's longest word as far as the width allows (header words
    cut alike, at the longest length that fits); the width left is shared in proportion to what each column's longest
    line wants beyond that. None when the values' longest words alone do not fit: rich's own shares then."""
    from rich.cells import cell_len  # rich's measure of what it draws

    columns = [[header, *(row[index] for row in rows)] for index, header in enumerate(headers)]
    room = console_width - 3 * len(columns) - 1  # a box: a border before each column and after the last, padding 1+1
    most = [max((cell_len(line) for cell in column for line in cell.splitlines()), default=1) for column in columns]
    values = [max((cell_len(word) for cell in column[1:] for word in cell.split()), default=1) for column in columns]
    titles = [max((cell_len(word) for word in header.split()), default=1) for header in headers]
    for cap in range(max(titles), -1, -1):
        least = [max(value, min(title, cap)) for value, title in zip(values, titles, strict=True)]
        if sum(least) <= room:
            break
    else:
        return None
    wants = [max(0, m - w) for m, w in zip(most, least, strict=True)]
    spare, wanted = room - sum(least), sum(wants)
    widths = [w + (spare * want // wanted if wanted else 0) for w, want in zip(least, wants, strict=True)]
    for index in sorted(range(len(widths)), key=lambda i: widths[i] - most[i]):  # what the rounding left
        widths[index] += min(room - sum(widths), max(0, most[index] - widths[index]))
    return [max(1, width) for width in widths]


class Table:
    """Title, headers and rows of strings; printed through rich or as aligned columns."""

    def __init__(
        self, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], *, turnable: bool = False
    ) -> None:
        """``turnable``: the first column names each row once (a cluster), so that the table reads as well turned."""
        self.title = title
        self.headers = list(headers)
        self.rows = [list(row) for row in rows]
        self.turnable = turnable

    def plain(self) -> str:
        widths = [max(_cells(str(cell)) for cell in column) for column in zip(self.headers, *self.rows, strict=True)]
        lines = [self.title]
        for cells in (self.headers, *self.rows):
            padded = (cell + " " * (width - _cells(cell)) for cell, width in zip(cells, widths, strict=True))
            lines.append("  ".join(padded).rstrip())
        return "\n".join(lines)

    def rich(self, console: Any) -> Any:
        """The table for ``console`` (rich's). A turnable one that does not fit the console's width whole is drawn
        turned (a row per header, a column per row: the throttle table's ten columns on an 80-column terminal) if
        that fits whole; any other is drawn with its columns as wide as their longest words (values' before headers')
        and the rest of the width shared by what each wants beyond that, so that no word is folded (a config setting
        ``retention.ms=864000000``, a topic's name) where the terminal has room for it."""
        from rich.measure import Measurement

        unbounded = console.options.update_width(_UNBOUNDED)  # (a measure is clamped to the width it is given)

        def fits(table: Any) -> bool:  # at its natural width: no column narrowed, no word folded
            return bool(Measurement.get(console, unbounded, table).maximum <= console.width)

        table = self._rich(self.headers, self.rows)
        if fits(table):
            return table
        table = self._rich(self.headers, self.rows, console.width)
        if not self.turnable or not self.rows:
            return table
        turned_headers = [self.headers[0], *(row[0] for row in self.rows)]
        turned_rows = [[header, *(row[index] for row in self.rows)] for index, header in enumerate(self.headers)][1:]
        turned = self._rich(turned_headers, turned_rows)
        return turned if fits(turned) else table

    def _rich(self, headers: Sequence[str], rows: Sequence[Sequence[str]], console_width: int | None = None) -> Any:
        from rich.table import Table as RichTable

        table = RichTable(title=self.title, title_justify="left")
        widths = _word_widths(headers, rows, console_width) if console_width is not None else None
        for index, header in enumerate(headers):
            numeric = bool(rows) and all(_is_number(row[index]) for row in rows)
            # never cut (rich's default ends a cell too long for its column with an ellipsis: a failed topic's name in
            # a narrow terminal): it goes on over the next lines of its cell
            width = widths[index] if widths else None
            table.add_column(header, justify="right" if numeric else "left", overflow="fold", width=width)
        for row in rows:
            table.add_row(*row)
        return table


def throttle_summary(stats: Mapping[str, ClusterStats], results: Sequence[RowResult]) -> list[dict[str, Any]]:
    """Per group (one quota entity, named by its clusters): mutations admitted and their rate against the quota, the
    largest broker throttle seen, the most time a row spent waiting out throttles, and the throttled responses and
    quota refusals (error 89) apart: Apache Kafka admits librdkafka's requests over the quota and throttles them,
    with no refusal.

    The rate is taken over the time the rows took plus the quota's window (QUOTA_WINDOW_S), as the broker's
    quota sees it: a run paced to the quota from a full burst reads as the quota, and a few mutations
    admitted at once read as few, not as a burst's instant rate."""
    summary = []
    for cluster in stats.values():
        rows = [r for r in results if r.cluster in cluster.clusters]
        sent = [r for r in rows if r.attempts > 0 and r.started_at is not None and r.finished_at is not None]
        elapsed = max(r.finished_at or 0.0 for r in sent) - min(r.started_at or 0.0 for r in sent) if sent else 0.0
        summary.append(
            {
                "cluster": cluster.label,  # the group's cluster names, "a, b" for one entity that serves two
                "clusters": list(cluster.clusters),
                "rows": len(rows),
                "mutations_admitted": cluster.mutations_admitted,
                "elapsed_s": round(elapsed, 3),
                "mutations_per_s": round(cluster.mutations_admitted / (elapsed + QUOTA_WINDOW_S), 3),
                "quota_rate": cluster.quota_rate,
                "max_throttle_time_ms": cluster.max_throttle_time_ms,
                "max_row_throttle_wait_ms": max((r.throttle_time_ms for r in rows), default=0),
                "throttled_responses": cluster.throttled_responses,
                "refused_by_quota": cluster.refused_by_quota,
                "attempts": sum(r.attempts for r in rows),
            }
        )
    return summary


def predicted_durations(results: Sequence[RowResult]) -> dict[str, Any]:
    """A dry run's prediction: per cluster, when its last planned mutation is admitted (seconds from its
    start; None when the quota rate is unknown), and in total (clusters run at the same time)."""
    clusters: dict[str, float | None] = {}
    for result in results:
        if result.status != "planned":
            continue
        known = clusters.get(result.cluster, 0.0)
        if result.cluster in clusters and known is None:
            continue
        clusters[result.cluster] = (
            None if result.predicted_s is None else max(known or 0.0, round(result.predicted_s, 3))
        )
    values = list(clusters.values())
    total = None if any(v is None for v in values) else max((v for v in values if v is not None), default=0.0)
    return {"clusters": clusters, "total": total}


def quota_debts(results: Sequence[RowResult]) -> dict[str, int]:
    """A dry run's word on each cluster whose principal owes quota: the debt in ms (rows' ``quota_debt_ms``)."""
    debts: dict[str, int] = {}
    for result in results:
        if result.status == "planned" and result.quota_debt_ms:
            debts[result.cluster] = max(debts.get(result.cluster, 0), result.quota_debt_ms)
    return debts


def budget_summary(results: Sequence[RowResult], timeout_s: float | None) -> dict[str, dict[str, Any]]:
    """Per cluster with rows the quota held past its time budget (not sent, or refused by a strict quota, error 89,
    at its end): how many, the quota's hold then, and how to go on."""
    ended: dict[str, dict[str, Any]] = {}
    for cluster in dict.fromkeys(r.cluster for r in results if _held(r)):
        rows = [r for r in results if r.cluster == cluster]
        held = [r for r in rows if _held(r)]
        refused = sum(1 for r in held if r.status == "failed")
        debt_ms = max(r.quota_debt_ms or 0 for r in held)
        started = min((r.started_at for r in rows if r.started_at is not None), default=0.0)
        finished = max((r.finished_at for r in rows if r.finished_at is not None), default=started)
        budget = f"--timeout {timeout_s:g}" if timeout_s is not None else "the default budget"
        needed = [r.predicted_s for r in held if r.predicted_s is not None]
        if len(needed) < len(held):  # (the rate unknown: what the hold alone asks, a floor)
            longer = f"longer than --timeout {math.ceil(finished - started + debt_ms / 1000)}"
        else:  # the hold, then every row left admitted at the rate
            longer = f"--timeout {math.ceil(max(needed)) + 1} or more"
        what = f"{len(held) - refused} not sent" + (f", {refused} refused by the quota: error 89" if refused else "")
        hint = (
            f"{cluster}: {len(held)} row(s) not applied ({what}): the principal's quota would have admitted the next "
            f"of them in {debt_ms} ms, past the time budget ({budget}). Run the same plan again once that has passed "
            f"(rows done come back unchanged), or with {longer}."
        )
        ended[cluster] = {
            "rows_not_sent": len(held) - refused,
            "rows_refused_by_quota": refused,
            "quota_debt_ms": debt_ms,
            "hint": hint,
        }
    return ended


def _held(result: RowResult) -> bool:
    """Held by the quota past the budget: not sent, or refused by a strict quota (error 89) when it ended."""
    return result.status == "not_sent" or (
        result.status == "failed" and result.error_code == KafkaError.THROTTLING_QUOTA_EXCEEDED
    )


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f}"


def _tables(results: Sequence[RowResult], throttle: list[dict[str, Any]], dry_run: bool) -> list[Table]:
    tables: list[Table] = []
    failed = [r for r in results if r.status == "failed"]
    if failed:
        tables.append(
            Table(
                "Failed rows",
                ["cluster", "topic", "action", "error"],
                [[r.cluster, r.topic, r.action, r.error_message or str(r.error_code)] for r in failed],
            )
        )
    planned = [r for r in results if r.status == "planned"]
    if dry_run and planned:
        tables.append(
            Table(
                "Planned changes (dry run: nothing was changed)",
                ["cluster", "topic", "action", "mutations", "admitted at s", "change"],
                [
                    [r.cluster, r.topic, r.action, str(r.mutations), _seconds(r.predicted_s), r.detail or ""]
                    for r in planned
                ],
            )
        )
        predicted = predicted_durations(results)
        duration_rows = [
            [name, str(sum(r.mutations for r in planned if r.cluster == name)), _seconds(seconds)]
            for name, seconds in predicted["clusters"].items()
        ]
        duration_rows.append(
            ["total (clusters in parallel)", str(sum(r.mutations for r in planned)), _seconds(predicted["total"])]
        )
        debts = quota_debts(results)
        if debts:
            tables.append(
                Table(
                    "Quota the principal owes (the plan waits for it)",
                    ["cluster", "owed ms", "read from"],
                    [
                        [name, str(ms), "the throttle of a validate-only create of 1 partition"]
                        for name, ms in debts.items()
                    ],
                )
            )
        tables.append(
            Table(
                "Predicted duration (at each cluster's quota, from a full burst or after the debt; "
                "? = quota rate unknown)",
                ["cluster", "mutations", "predicted s"],
                duration_rows,
            )
        )
    clusters = sorted({r.cluster for r in results})
    present = [s for s in STATUSES if any(r.status == s for r in results)]
    rows = [
        [
            c,
            *[str(sum(1 for r in results if r.cluster == c and r.status == s)) for s in present],
            str(sum(1 for r in results if r.cluster == c)),
        ]
        for c in clusters
    ]
    rows.append(["total", *[str(sum(1 for r in results if r.status == s)) for s in present], str(len(results))])
    tables.append(Table("Summary", ["cluster", *present, "rows"], rows, turnable=True))
    if dry_run or not throttle:
        return tables
    tables.append(
        Table(
            f"Throttle metrics (mutations/s over the elapsed time plus the quota's {QUOTA_WINDOW_S:g} s window)",
            [
                "cluster",
                "mutations",
                "elapsed s",
                "mutations/s",
                "quota/s",
                "max throttle ms",
                "max row wait ms",
                "throttled responses",
                "quota refusals",
                "attempts",
            ],
            [
                [
                    t["cluster"],
                    str(t["mutations_admitted"]),
                    f"{t['elapsed_s']:.1f}",
                    f"{t['mutations_per_s']:.1f}",
                    format_rate(t["quota_rate"]),
                    str(t["max_throttle_time_ms"]),
                    str(t["max_row_throttle_wait_ms"]),
                    str(t["throttled_responses"]),
                    str(t["refused_by_quota"]),
                    str(t["attempts"]),
                ]
                for t in throttle
            ],
            turnable=True,
        )
    )
    return tables


def render_report(
    results: Sequence[RowResult],
    throttle: list[dict[str, Any]],
    *,
    dry_run: bool,
    stream: TextIO,
    redact: Redactor,
    rich_console: Any | None,
) -> None:
    for table in _tables(results, throttle, dry_run):
        rows = [[redact(c) for c in row] for row in table.rows]
        redacted = Table(redact(table.title), table.headers, rows, turnable=table.turnable)
        if rich_console is not None:
            rich_console.print(redacted.rich(rich_console))
        else:
            with reader_may_go():
                print(redacted.plain() + "\n", file=stream, flush=True)
