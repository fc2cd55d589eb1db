"""Progress as a person watches it: the ``apply`` progress bar and the demo's progress lines tell the truth.

The bar's rate is the mutations the broker admitted in the quota's window: it never reads above what the broker
admitted and decays while nothing is admitted, even while rows still wait (with ``wait_for_metadata`` a row finishes
when every broker shows it, seconds after the broker admitted it; counting a row's mutations when it finished made
the rate rise during a throttle). The demo's progress lines are per cluster, as its plot."""

from __future__ import annotations

import io
import itertools
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect
import pytest

from tests.cli_helpers import REPO, cli_env
from tests.support import BrokerFactory
from throttled_admin.testing import QuotaBroker

QUOTA_WINDOW_S = 11.0
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_BAR = re.compile(
    r"(?:dev [━╺╸\s]+)?(?P<done>\d+)/(?P<total>\d+) rows\s+(?P<rate>[\d.]+) mutations/s \(quota [^)]*\)\s+"
    r"(?P<throttle>waiting out throttle: \d+ s left|last throttle \d+ ms|no throttle)\s+\d+:\d\d:\d\d"
)


@dataclass(frozen=True)
class Frame:
    at: float  # monotonic time the frame was read from the terminal (drawn at most 1/8 s before)
    text: str
    rows_done: int
    rate: float
    throttle: str


def _read_bar(child: pexpect.spawn, screen: io.StringIO) -> list[Frame]:
    """Every complete bar line the terminal showed, with the time it was read."""
    frames: list[Frame] = []
    pending = ""
    while True:
        try:
            chunk = child.read_nonblocking(65536, timeout=0.05)
        except pexpect.TIMEOUT:
            continue
        except pexpect.EOF:
            return frames
        at = time.monotonic()
        screen.write(chunk)
        pending += _ANSI.sub("", chunk)
        last = 0
        for match in _BAR.finditer(pending):
            line = " ".join(match.group(0).split())
            frames.append(Frame(at, line, int(match["done"]), float(match["rate"]), match["throttle"]))
            last = match.end()
        pending = pending[last:]


def _admitted_between(broker: QuotaBroker, start: float, end: float) -> int:
    """Mutations the broker admitted (charged and applied) to CreateTopics received in (start, end]."""
    return sum(
        r.mutations
        for r in broker.request_log()
        if r.api_name == "CreateTopics" and start < r.received_at <= end and not any(r.errors.values())
    )


@pytest.mark.slow
def test_the_bar_reads_what_the_broker_admitted_during_a_throttle(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    # Kafka's 11 x 1 s window at 10/s, and librdkafka's CreateTopics v4 admitted whole over the quota: 40 topics x 5
    # partitions in one request owe (200 - 110) / 10 = 9 s of throttle. The two other nodes list a change 13 s
    # after the controller applies it, so every row waits that long for wait_for_metadata while nothing more is
    # admitted: the bar is read during the throttle, after it, and past the quota's window.
    broker = quota_broker(num_brokers=3, metadata_lag_ms=13_000, controller_mutation_rate=10)
    plan = tmp_path / "plan.csv"
    plan.write_text("cluster,action,topic,partitions\n" + "".join(f"dev,create,t{i:02d},5\n" for i in range(40)))
    screen = io.StringIO()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "throttled_admin", "apply", str(plan), "--bootstrap-server", broker.bootstrap_servers],
        env=cli_env(),
        cwd=str(REPO),
        encoding="utf-8",
        timeout=90,
        dimensions=(30, 200),
    )
    frames = _read_bar(child, screen)
    child.close()
    assert child.exitstatus == 0, screen.getvalue()[-3000:]
    assert frames, screen.getvalue()[-3000:]
    last_admission = max(r.received_at for r in broker.request_log() if r.api_name == "CreateTopics")

    # Never above what the broker admitted in the window (the frame was drawn at most 1/8 s before it was read, and
    # an admission reaches the bar a fraction of a second after the broker's answer).
    slack_s = 1.0
    for frame in frames:
        admitted = _admitted_between(broker, frame.at - QUOTA_WINDOW_S - slack_s, frame.at)
        assert frame.rate <= admitted / QUOTA_WINDOW_S + 0.05, (frame, admitted)
    throttled = [f for f in frames if f.throttle.startswith("waiting out throttle") and f.rows_done < 40]
    assert throttled, [f.text for f in frames]
    print("\nthe bar during the throttle:", throttled[len(throttled) // 2].text, sep="\n  ")
    print("and past the quota's window:", frames[-1].text, sep="\n  ")

    # Admitted once (slow start's three requests, answered within some 50 ms: a frame may fall between them): from
    # the first frame that shows all of it, the rate never rises again, and once the admission has left the window
    # it reads 0 while the rows still wait.
    shown = [f for f in frames if f.rate == pytest.approx(200 / QUOTA_WINDOW_S, abs=0.05)]
    assert shown, [f.text for f in frames]
    assert all(f.rate <= shown[0].rate for f in frames[: frames.index(shown[0])]), [f.text for f in frames]
    later = frames[frames.index(shown[0]) :]
    assert all(b.rate <= a.rate for a, b in itertools.pairwise(later)), [f.text for f in later]
    decayed = [f for f in later if f.at > last_admission + QUOTA_WINDOW_S + slack_s and f.rows_done < 40]
    assert decayed, [f.text for f in frames]
    assert all(f.rate == 0 for f in decayed), [f.text for f in decayed]


def test_the_demo_progress_lines_are_per_cluster_as_its_plot(capsys: pytest.CaptureFixture[str]) -> None:
    """They added both clusters together (``payments: 296/300``) while the plot shows 150 per cluster, and counted the
    unpaced baseline's topics on east as the plan's (``topics 325/250``)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from throttled_admin.demo import _progress_from_brokers
    from throttled_admin.demo._fleet import embedded_fleet, fleet_plan
    from throttled_admin.provisioning import apply_plan

    with embedded_fleet() as (brokers, profiles, unpaced_conf):
        rows = fleet_plan(20, profiles, "p")
        east_payments = [row for row in rows if row.cluster == "east-payments"]
        origin = time.monotonic()
        assert {r.status for r in apply_plan(east_payments, profiles)} == {"created"}
        bare = AdminClient(dict(unpaced_conf))  # the baseline's user: a topic on east that is not the plan's
        assert bare.create_topics([NewTopic("p.unpaced.t0", 1, 1)])["p.unpaced.t0"].result(30) is None
        del bare  # (destroyed before its broker stops)
        _progress_from_brokers(brokers, rows, origin)()
    lines = capsys.readouterr().out.splitlines()
    planned = sum(row.partitions or 1 for row in east_payments)  # the same plan on each cluster
    [east] = [line for line in lines if " east: " in line]
    [west] = [line for line in lines if " west: " in line]
    assert f"topics {len(east_payments):>4}/{len(rows) // 2}" in east
    assert re.search(rf"payments:\s+{planned}/{planned}\b", east), east
    assert re.search(rf"payments:\s+0/{planned}\b", west), west


@pytest.mark.parametrize("width", [80, 99, 140])
def test_the_live_bar_keeps_one_line_a_cluster_on_a_narrow_terminal(width: int) -> None:
    """A new user's run at 80 columns (helper 107): the rate's and the throttle's words were folded onto a second
    line of each bar ("(quota 4/s)", "ms" under the rest). Too narrow for the words at their longest, they are
    compact (``4.0 of 4/s``, ``throttle: 5 s left``), so one bar stays one line, in every state of the throttle."""
    from rich.console import Console

    from throttled_admin.cli._progress import LiveBar
    from throttled_admin.provisioning import Progress

    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=True)
    bar = LiveBar({"main": 40, "west-payments": 120}, console)
    compact = width < 120  # the widest cells of each column, the longest words, a bar of 10, the elapsed time
    for throttle_ms in (3392, 0):  # a throttle being waited out, then one in the past
        bar(Progress("main", 22, 40, 44, 4.0, 4.0, throttle_ms, rows_failed=2))
        bar(Progress("west-payments", 0, 120, 0, 0.0, None, 0))
        bar.stats["main"].throttle_until = time.monotonic() + (99 if throttle_ms else 0)
        bar.stats["main"].throttle_time_ms = bar.stats["main"].last_throttle_ms = throttle_ms or 3392
        console.file = io.StringIO()
        console.print(bar._progress.get_renderable())
        lines = console.file.getvalue().splitlines()
        assert len(lines) == 2, lines
        assert all(len(line) <= width for line in lines), lines
        main = _ANSI.sub("", lines[0])
        assert ("4.0 of 4/s" in main) is compact, main
        assert ("4.0 mutations/s (quota 4/s)" in main) is not compact, main
        if throttle_ms:
            assert ("throttle: 99 s left" if compact else "waiting out throttle: 99 s left") in main, main
        else:
            assert ("last throttle 3.4 s" if compact else "last throttle 3392 ms") in main, main
        assert re.search(r"22/40\s+rows \(2 failed\)", main), main
        assert ("0.0 of ?/s" if compact else "(quota ?/s)") in _ANSI.sub("", lines[1]), lines[1]
