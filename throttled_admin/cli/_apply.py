"""``throttled-admin apply PLAN_FILE``: a provisioning plan through ``throttled_admin.provisioning``,
paced to each cluster's quota, with live progress and a closing report."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NoReturn

from throttled_admin.cli._args import UsageError
from throttled_admin.cli._conf import Redactor, build_conf
from throttled_admin.cli._output import Output

__all__ = ["run_apply"]


def _profiles(args: argparse.Namespace, parser: argparse.ArgumentParser, clusters: list[str]) -> dict[str, Any]:
    from throttled_admin.cli import _read_command_config
    from throttled_admin.provisioning import Profile, read_profiles

    if args.profiles is not None:
        return dict(read_profiles(args.profiles))
    conf = build_conf(_read_command_config(args.command_config, parser), args.bootstrap_server)
    # One connection serves every cluster named in the plan.
    return {name: Profile(name=name, conf=dict(conf), mutation_rate=args.mutation_rate) for name in clusters}


def _display(args: argparse.Namespace, rows_per_cluster: dict[str, int], out: Output) -> tuple[Any, Any | None]:
    """(progress display, rich console for the report or None)."""
    from throttled_admin.cli._progress import CLI_EXTRA_HINT, LiveBar, PlainLines, Silent, load_rich

    if args.output == "json":
        return Silent(rows_per_cluster), None
    rich = load_rich()
    if sys.stdout.isatty():
        if rich is None:
            out.error(f"(for a live progress bar and tables: {CLI_EXTRA_HINT})")
            return PlainLines(rows_per_cluster, sys.stdout), None
        from rich.console import Console

        console = Console()
        return LiveBar(rows_per_cluster, console), console
    if rich is None:
        return PlainLines(rows_per_cluster, sys.stdout), None
    from rich.console import Console

    # Not a terminal: plain progress lines, and tables without colour at a fixed width for logs.
    return PlainLines(rows_per_cluster, sys.stdout), Console(file=sys.stdout, no_color=True, width=120)


def _run_interruptibly(work: Callable[[], list[Any]]) -> list[Any]:
    """Run the plan on a daemon thread so that Ctrl-C is heard at once (the main thread only waits)."""
    result: Future[list[Any]] = Future()

    def run() -> None:
        try:
            result.set_result(work())
        except BaseException as exc:
            result.set_exception(exc)

    threading.Thread(target=run, name="throttled-admin-apply", daemon=True).start()
    while True:
        try:
            return result.result(timeout=0.2)
        except FutureTimeout:
            continue


def _interrupted(out: Output) -> NoReturn:
    """The executor's groups cannot be cancelled and its worker threads would be joined at interpreter exit,
    so an interrupt ends the process here (exit 130), after saying what that means."""
    out.error(
        "Interrupted: changes already sent may have been applied. Run the same plan again to finish it "
        "(rows already done come back unchanged)."
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def check_apply_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.profiles is not None:
        if args.bootstrap_server is not None or args.command_config is not None or args.mutation_rate is not None:
            raise UsageError(
                "--profiles cannot be combined with --bootstrap-server, --command-config or "
                "--mutation-rate (put them in the profile)",
                parser,
            )
    elif args.bootstrap_server is None:
        raise UsageError("either --profiles or --bootstrap-server is required", parser)


def run_apply(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    check_apply_args(args, parser)
    try:
        from throttled_admin.provisioning import PlanError, apply_plan, read_plan, summarize
    except ImportError as exc:  # pragma: no cover - the provisioning package ships with throttled_admin
        print(f"throttled-admin apply: provisioning is unavailable: {exc}", file=sys.stderr)
        return 1
    from throttled_admin.cli._report import render_report, throttle_summary

    try:
        rows = read_plan(args.plan)
        clusters = list(dict.fromkeys(row.cluster for row in rows))
        profiles = _profiles(args, parser, clusters)
    except PlanError as exc:
        # A bad plan or profiles file is bad input: nothing was sent.
        print(f"throttled-admin apply: error: {exc}", file=sys.stderr)
        return 2
    redact = Redactor([p.conf for p in profiles.values()])
    out = Output(redact, json_mode=args.output == "json")
    rows_per_cluster = dict(Counter(row.cluster for row in rows))
    display, console = _display(args, rows_per_cluster, out)
    try:
        with display:  # left (the live bar stopped, the cursor restored) before an interrupt ends the process
            results = _run_interruptibly(
                lambda: apply_plan(
                    rows, profiles, allow_delete=args.allow_delete, dry_run=args.dry_run, progress=display
                )
            )
    except KeyboardInterrupt:
        _interrupted(out)
    except PlanError as exc:
        out.error(f"throttled-admin apply: error: {exc}")
        return 2
    throttle = throttle_summary(display.stats, results)
    failed = sum(1 for r in results if r.status == "failed")
    if out.json_mode:
        for result in results:
            out.record(result.as_dict())
        out.record({"summary": summarize(results), "dry_run": bool(args.dry_run), "throttle": throttle})
    else:
        render_report(results, throttle, dry_run=args.dry_run, stream=sys.stdout, redact=redact, rich_console=console)
    return 1 if failed else 0
