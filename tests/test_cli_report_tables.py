"""``apply``'s report tables drawn by rich for a terminal's width (``cli/_report.Table.rich``): a per-cluster table
too wide for the terminal is turned when turned it fits whole; any other table keeps its shape."""

from __future__ import annotations

import io

from rich.console import Console

from throttled_admin.cli._report import Table

HEADERS = ["cluster", "mutations", "max throttle ms", "throttled responses", "quota refusals", "attempts"]
ROWS = [["main", "120", "1000", "4", "0", "9"], ["other", "12", "0", "0", "0", "1"]]


def drawn(table: Table, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(table.rich(console))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return [line.rstrip() for line in text.splitlines()]


def test_a_per_cluster_table_too_wide_is_turned_a_row_per_header_a_column_per_cluster() -> None:
    lines = drawn(Table("Throttle metrics", HEADERS, ROWS, turnable=True), 50)
    assert max(len(line) for line in lines) <= 50, lines
    assert any(line.split() == ["┃", "cluster", "┃", "main", "┃", "other", "┃"] for line in lines), lines
    assert any(line.split() == ["│", "max", "throttle", "ms", "│", "1000", "│", "0", "│"] for line in lines), lines


def test_a_table_that_fits_whole_keeps_its_shape() -> None:
    lines = drawn(Table("Throttle metrics", HEADERS, ROWS, turnable=True), 200)
    assert any(line.split("┃")[1:3] == [" cluster ", " mutations "] for line in lines), lines


def test_only_a_per_cluster_table_is_turned_and_never_one_without_rows() -> None:
    for table in (Table("Failed rows", HEADERS, ROWS), Table("Throttle metrics", HEADERS, [], turnable=True)):
        lines = drawn(table, 50)
        assert not any("│ max" in line for line in lines), lines  # no header became a row


def test_a_table_that_does_not_fit_turned_either_keeps_its_shape() -> None:
    clusters = [[f"cluster-{i}", "1", "2", "3", "4", "5"] for i in range(12)]  # twelve columns turned
    lines = drawn(Table("Throttle metrics", HEADERS, clusters, turnable=True), 50)
    assert not any("│ max" in line for line in lines), lines
    assert lines[1].count("┳") == len(HEADERS) - 1, lines  # its six columns
