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


def test_a_table_too_wide_folds_no_value_word_where_the_terminal_has_room_for_it() -> None:
    """Found by a new user's run (helper 104): the dry run's table on 80 columns folded a config setting mid-number
    (``retention.ms=864000`` over ``00``) and the topics' names, while its number columns kept their headers whole.
    Each value's words are whole now, and a header folds first."""
    changes = [
        ["prod-east", "orders.events.v2", "ensure", "4", "0.0", "create with 4 partitions; set retention.ms=864000000"],
        [
            "prod-east",
            "payments.ledger",
            "ensure",
            "2",
            "0.0",
            "grow from 3 to 12 partitions; set cleanup.policy=compact",
        ],
    ]
    headers = ["cluster", "topic", "action", "mutations", "admitted at s", "change"]
    lines = drawn(Table("Planned changes", headers, changes), 80)
    assert max(len(line) for line in lines) <= 80, lines
    cells = {cell.strip() for line in lines for cell in line.split("│")}
    assert {"orders.events.v2", "payments.ledger"} <= cells, lines
    words = {word for line in lines for word in line.split()}
    assert {"retention.ms=864000000", "cleanup.policy=compact"} <= words, lines
    # Too narrow for the values' longest words: rich's own shares, every cell still there
    narrow = drawn(Table("Planned changes", headers, changes), 40)
    assert max(len(line) for line in narrow) <= 40, narrow


def test_wide_characters_count_as_the_two_columns_they_take() -> None:
    """Review 108: the words' widths were their lengths in characters, so a cluster named 東京 took half the columns
    its words were given and folded; the plain table's columns were as far off."""
    rows = [["東京-payments", "orders.events.v2", "ensure", "refused: the quota would hold this row past the budget"]]
    headers = ["cluster", "topic", "action", "error"]
    lines = drawn(Table("Failed rows", headers, rows), 60)
    assert max(len(line) + sum(1 for c in line if c in "東京") for line in lines) <= 60, lines
    assert any("東京-payments" in line for line in lines), lines  # its word whole, not folded over two lines
    plain = Table("Summary", ["cluster", "rows"], [["東京", "3"], ["east-1", "4"]]).plain().splitlines()
    assert [line.index(line.split()[-1]) + line.count("東") + line.count("京") for line in plain[1:]] == [9] * 3, plain
