"""``throttled-admin apply PLAN_FILE``: a provisioning plan through ``throttled_admin.provisioning``,
paced to each cluster's quota, with live progress and a closing report."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from throttled_admin.cli._args import UsageError, check_bootstrap, read_command_config
from throttled_admin.cli._conf import Redactor, checked_conf
from throttled_admin.cli._output import Output, say
from throttled_admin.cli._reach import Problem

if TYPE_CHECKING:
    from throttled_admin.provisioning import PlanStop

__all__ = ["run_apply"]

T = TypeVar("T")

# The report's width in a pipe: wider than any table, which rich draws as wide as its cells (it never stretches one)
_LOG_WIDTH = 10_000


def _profiles(
    args: argparse.Namespace, parser: argparse.ArgumentParser, clusters: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """The profiles, and the values of --command-config that went on over a continued line (output hides them)."""
    from throttled_admin.provisioning import Profile, read_profiles

    continued: list[str] = []
    if args.profiles is not None:
        profiles = dict(read_profiles(args.profiles))
    else:
        settings = read_command_config(args.command_config, parser)
        continued = settings.continued_text
        # (a setting librdkafka refuses is the file's, a PlanError as in a profiles file)
        conf, warning = checked_conf(args.command_config, settings, args.bootstrap_server, takes_timeout=False)
        if warning is not None:
            say(warning)
        # One connection serves every cluster named in the plan.
        profiles = {name: Profile(name=name, conf=dict(conf), mutation_rate=args.mutation_rate) for name in clusters}
    # Quiet, as `topics`: librdkafka's log would repeat every failed connection attempt; the command reports
    # what went wrong itself. A profile's own log_level turns the log back on.
    for profile in profiles.values():
        profile.conf.setdefault("log_level", "0")
    return profiles, continued


def _in_cli_terms(result: Any) -> Any:
    """The command line's words where the provisioning API's name a Python parameter: a delete refused for want
    of ``allow_delete=True`` (``error_name`` DELETE_NOT_ALLOWED) names the flag."""
    from throttled_admin.provisioning import DELETE_NOT_ALLOWED

    if result.status == "not_sent" and result.error_message:
        message = re.sub(r"timeout_s=([\d.]+)", r"--timeout \1", result.error_message)
        return dataclasses.replace(result, error_message=message.replace("longer budget", "longer --timeout"))
    if result.error_name != DELETE_NOT_ALLOWED:
        return result
    message = "refused: pass --allow-delete to delete topics"
    return dataclasses.replace(result, error_message=message, detail=message)


def _unreachable_results(rows: list[Any], problems: Mapping[str, Problem]) -> dict[int, Any]:
    """Plan index -> a failed result for each row of a cluster that cannot be used: nothing was sent."""
    from throttled_admin.provisioning import RowResult

    now = time.time()
    return {
        index: RowResult(
            cluster=row.cluster,
            topic=row.topic,
            action=row.action,
            status="failed",
            error_code=problems[row.cluster].code,
            error_name=problems[row.cluster].name,
            error_message=f"not sent: {problems[row.cluster].message}",
            started_at=now,
            finished_at=now,
        )
        for index, row in enumerate(rows)
        if row.cluster in problems
    }


def connection_summary(problems: Mapping[str, Problem], rows: list[Any]) -> str:
    """One line for every cluster that could not be used."""
    parts = []
    for problem in dict.fromkeys(p.message for p in problems.values()):
        names = [name for name, p in problems.items() if p.message == problem]
        count = sum(1 for row in rows if row.cluster in names)
        parts.append(f"{', '.join(names)}: {problem} ({count} row{'s' if count != 1 else ''} not sent)")
    return "throttled-admin apply: connection problems: " + "; ".join(parts)


def _groups(rows: list[Any], profiles: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Rows per group, by its profile's name (the name its progress carries), and the plan's cluster names each
    serves: profiles of one quota entity (two cluster names on one --bootstrap-server) run as one group."""
    from throttled_admin.provisioning import group_rows

    rows_per_group, clusters = {}, {}
    for profile, indexes in group_rows(rows, profiles).values():
        rows_per_group[profile.name] = len(indexes)
        clusters[profile.name] = list(dict.fromkeys(rows[i].cluster for i in indexes))
    return rows_per_group, clusters


def _display(args: argparse.Namespace, rows: list[Any], profiles: Mapping[str, Any], out: Output) -> tuple[Any, Any]:
    """(progress display, rich console for the report or None)."""
    from throttled_admin.cli._progress import CLI_EXTRA_HINT, LiveBar, PlainLines, Silent, load_rich, new_console

    groups, clusters = _groups(rows, profiles)
    if args.output == "json":
        return Silent(groups, clusters), None
    rich = load_rich()
    if sys.stdout is not None and sys.stdout.isatty():
        if rich is None:
            out.error(f"(for a live progress bar and tables: {CLI_EXTRA_HINT})")
            return PlainLines(groups, sys.stdout, clusters), None
        console = new_console()
        return LiveBar(groups, console, clusters), console
    if rich is None:
        return PlainLines(groups, sys.stdout, clusters), None
    # Not a terminal (a log): plain progress lines, and tables without colour, each as wide as its cells (at a fixed
    # width, the widest cells were cut: a long topic name that failed, and its error)
    return PlainLines(groups, sys.stdout, clusters), new_console(file=sys.stdout, no_color=True, width=_LOG_WIDTH)


def _in_background(work: Callable[[], T], name: str) -> Future[T]:
    """``work()`` on a daemon thread of its own: its result, or what it raised, in the future returned."""
    result: Future[T] = Future()

    def run() -> None:
        try:
            result.set_result(work())
        except BaseException as exc:
            result.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return result


def _run_interruptibly(job: Future[list[Any]]) -> list[Any]:
    """The plan's results, from its daemon thread (``_in_background``), waited for in steps so that Ctrl-C is heard
    at once (the main thread only waits)."""
    while True:
        try:
            return job.result(timeout=0.2)
        except FutureTimeout:
            continue


#: After Ctrl-C's stop, how long ``apply`` lets the plan end the rows the stop ended (at once: a refused row held to
#: go again, say, is told apart from one in flight) and the rows in flight answered meanwhile.
SETTLE_S = 1.0


def _let_settle(job: Future[list[Any]]) -> None:
    with contextlib.suppress(Exception):  # (its end, its error, or SETTLE_S first: the rows known by then count)
        job.result(timeout=SETTLE_S)


def _withdraw(stop: PlanStop) -> list[int]:
    """``stop.stop()``: the rows never sent, withdrawn; none (all of unknown outcome) if it takes over 2 s (a group's
    thread holding its hand-over to the client), so that Ctrl-C still ends the command at once."""
    try:
        return _in_background(stop.stop, "throttled-admin-stop").result(timeout=2.0)
    except FutureTimeout:
        return []


def _not_compared(ended: Any) -> bool:
    """Whether the plan ended a row for the stop before comparing its topic, which Kafka said exists (or is gone), with
    the plan (``NOT_COMPARED``): this run's change of it was refused."""
    from throttled_admin.provisioning._stop import NOT_COMPARED

    return (ended.error_message or "").endswith(NOT_COMPARED)


def _as_interrupted(row: Any, ended: Any, unsent: bool, now: float) -> Any:
    """The result ``apply`` reports for a row not done at Ctrl-C: not sent (``unsent``) or its outcome unknown,
    ``INTERRUPTED``; ``ended``: the result the plan gave it for the stop, if any (its attempts, Kafka's code), told in
    the interrupt's words."""
    from throttled_admin.provisioning import RowResult
    from throttled_admin.provisioning._results import as_given
    from throttled_admin.provisioning._stop import NOT_COMPARED

    status, message = (
        ("not_sent", "interrupted before it was sent (nothing of it applied)")
        if unsent
        else ("failed", "interrupted before its outcome was known: its change may have been applied")
    )
    if ended is not None:
        said = ended.error_message or ""
        if unsent and ended.attempts:
            message = "interrupted before it was sent again (the broker had refused it: nothing of it applied)"
        elif not unsent and _not_compared(ended):  # Kafka said the topic exists (or is gone): its words
            message = f"interrupted before the topic was compared with the plan: {said.removesuffix(NOT_COMPARED)}"
        return dataclasses.replace(ended, status=status, error_name="INTERRUPTED", error_message=message.rstrip())
    return RowResult(
        cluster=row.cluster,
        topic=as_given(row.topic),
        action=as_given(row.action),
        status=status,
        error_name="INTERRUPTED",
        error_message=message,
        finished_at=now,
    )


def _interrupted(
    out: Output,
    rows: list[Any],
    known: Mapping[int, Any],
    *,
    sent: bool,
    dry_run: bool,
    problems: Mapping[str, Problem],
    never_sent: Collection[int] = (),
    stopped: Mapping[int, Any] | None = None,
) -> NoReturn:
    """The executor's worker threads would be joined at interpreter exit, so an interrupt ends the process here
    (exit 130), after saying what that means: the rows whose result was ``known`` (plan index -> result), and the
    others as the interrupt left them: not sent (``never_sent``, the plan's stop withdrew them or they were never
    handed over; every row when ``sent`` is False: before anything was sent; or a dry run) or their outcome unknown.
    ``stopped``: the results the plan gave rows its stop ended (their attempts, Kafka's code of a refusal).
    Under --output json, a record a row and the summary, after the message (a reader that the same Ctrl-C ended,
    ``| jq``, takes none of them)."""
    from throttled_admin.provisioning import summarize

    nothing_sent = not sent or dry_run
    now = time.time()
    unsent = set(never_sent)
    results = [
        _in_cli_terms(known[i])
        if i in known
        else _as_interrupted(row, (stopped or {}).get(i), nothing_sent or i in unsent, now)
        for i, row in enumerate(rows)
    ]
    done = summarize(r for i, r in enumerate(results) if i in known)
    counts = f" ({', '.join(f'{name}: {n}' for name, n in done.items())})" if done else ""
    rest = len(rows) - len(known)
    try:
        if nothing_sent:
            what = "not planned" if sent else "not sent"  # (sent in a dry run: the clusters were read)
            out.error(
                f"Interrupted: nothing was changed. {len(known)} of {len(rows)} rows done{counts}; {what}: {rest}."
            )
        else:
            held = len(unsent - known.keys())
            # a row whose topic Kafka said exists: this run's change was refused, the topic not compared with the plan
            kept = sum(1 for i, r in (stopped or {}).items() if i not in known and i not in unsent and _not_compared(r))
            unknown = rest - held - kept
            parts = (("not sent", held), ("not compared with the plan", kept), ("outcome unknown", unknown))
            tail = "".join(f"; {what}: {n}" for what, n in parts if n)
            said = ": changes already sent may have been applied" if unknown else ""  # (else none may be)
            again = " Run the same plan again to finish it (rows already done come back unchanged)." if rest else ""
            out.error(f"Interrupted{said}. {len(known)} of {len(rows)} rows done{counts}{tail}.{again}")
        if out.json_mode:
            for result in results:
                out.record(result.as_dict())
            summary: dict[str, Any] = {"summary": summarize(results), "dry_run": dry_run, "interrupted": True}
            if problems:
                summary["connection_problems"] = {name: p.message for name, p in problems.items()}
            out.record(summary)
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # (``>&-``)
                stream.flush()
    except OSError:  # (the reader is gone, or the disk full: the exit code still says what happened)
        pass
    finally:
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
    else:
        check_bootstrap(args.bootstrap_server, parser)


def run_apply(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    check_apply_args(args, parser)
    try:
        from throttled_admin.provisioning import (
            STOPPED,
            PlanError,
            PlanStop,
            apply_plan,
            group_rows,
            read_plan,
            summarize,
        )
    except ImportError as exc:  # pragma: no cover - the provisioning package ships with throttled_admin
        say(f"throttled-admin apply: provisioning is unavailable: {exc}")
        return 1
    from throttled_admin.cli._report import (
        budget_summary,
        predicted_durations,
        quota_debts,
        render_report,
        throttle_summary,
    )

    json_mode = args.output == "json"
    try:
        rows = read_plan(args.plan)
        clusters = list(dict.fromkeys(row.cluster for row in rows))
        profiles, continued = _profiles(args, parser, clusters)
    except PlanError as exc:
        # A bad plan or profiles file is bad input: nothing was sent.
        return _plan_error(exc, json_mode)
    redact = Redactor([p.conf for p in profiles.values()])
    redact.hide(continued)
    out = Output(redact, json_mode=json_mode)
    try:
        # Rows naming no profile are a plan error, before any cluster is contacted.
        group_rows(rows, profiles)
        from throttled_admin.cli._reach import unreachable

        problems = unreachable({name: profiles[name] for name in clusters}, args.timeout)
    except PlanError as exc:
        return _plan_error(exc, json_mode, redact)
    except KeyboardInterrupt:
        _interrupted(out, rows, {}, sent=False, dry_run=bool(args.dry_run), problems={})
    failed_early = _unreachable_results(rows, problems)
    if problems:
        out.error(connection_summary(problems, rows))
    in_plan = [index for index in range(len(rows)) if index not in failed_early]
    runnable = [rows[index] for index in in_plan]
    known: dict[int, Any] = dict(failed_early)  # plan index -> the row's result, as each is known
    display, console = _display(args, runnable, profiles, out)
    stop = PlanStop()
    job: Future[list[Any]] | None = None
    try:
        with display:  # left (the live bar stopped, the cursor restored) before an interrupt ends the process
            job = _in_background(
                lambda: apply_plan(
                    runnable,
                    profiles,
                    allow_delete=args.allow_delete,
                    dry_run=args.dry_run,
                    progress=display,
                    timeout_s=args.timeout,
                    on_result=lambda index, result: known.__setitem__(in_plan[index], result),
                    stop=stop,
                ),
                "throttled-admin-apply",
            )
            ran = _run_interruptibly(job)
    except KeyboardInterrupt:
        # A second Ctrl-C would cut the report short (no records, a traceback): ignored, as the report takes 3 s at most
        with contextlib.suppress(ValueError):  # (only the main thread sets handlers: apply run from another has none)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        never = {in_plan[index] for index in _withdraw(stop)}  # withdrawn now: certain never to be sent
        if job is not None:
            _let_settle(job)
        # (rows the groups ended for the stop meanwhile are the interrupt's, as those it had not ended yet; one copy,
        # as the groups may still add to ``known``: a dict's copy is atomic)
        known_now = dict(known)
        done = {index: result for index, result in known_now.items() if result.error_name != STOPPED}
        stopped = {index: result for index, result in known_now.items() if index not in done}
        never.update(index for index, result in stopped.items() if result.status == "not_sent")
        _interrupted(
            out, rows, done, sent=True, dry_run=bool(args.dry_run), problems=problems, never_sent=never, stopped=stopped
        )
    except PlanError as exc:
        return _plan_error(exc, json_mode, redact)
    ran_iter = iter(ran)
    results = [_in_cli_terms(failed_early[i] if i in failed_early else next(ran_iter)) for i in range(len(rows))]
    throttle = throttle_summary(display.stats, results)
    failed = sum(1 for r in results if r.status in ("failed", "not_sent"))
    budget = budget_summary(results, args.timeout)
    if out.json_mode:
        for result in results:
            out.record(result.as_dict())
        summary: dict[str, Any] = {"summary": summarize(results), "dry_run": bool(args.dry_run), "throttle": throttle}
        if args.dry_run:
            summary["predicted_s"] = predicted_durations(results)
            summary["quota_debt_ms"] = quota_debts(results)
        if budget:
            summary["budget_ended"] = budget
        if problems:
            summary["connection_problems"] = {name: p.message for name, p in problems.items()}
        out.record(summary)
    else:
        render_report(results, throttle, dry_run=args.dry_run, stream=sys.stdout, redact=redact, rich_console=console)
        for ended in budget.values():  # where a budget ended the plan: what was left, and how to go on
            out.line(ended["hint"])
    return 1 if failed else 0


def _plan_error(exc: Exception, json_mode: bool, redact: Redactor | None = None) -> int:
    """A bad plan or profiles file: exit 2, nothing sent; under --output json also one JSON object."""
    message = f"throttled-admin apply: error: {exc}"
    out = Output(redact or Redactor(), json_mode=json_mode)
    if json_mode:
        out.record({"status": "failed", "error_code": None, "error_name": "PLAN_ERROR", "error_message": str(exc)})
    out.error(message)
    return 2
