"""The ``throttled-admin`` command line (also ``python -m throttled_admin``).

``throttled-admin topics ...`` mirrors kafka-topics.sh, with quota retry off by default and the throttle
time reported; ``throttled-admin apply PLAN`` runs a provisioning plan paced to the quota. Exit codes:
0 success, 1 a Kafka or plan failure, 2 bad arguments (with the usage), 130 interrupted.
"""

from __future__ import annotations

import argparse
import faulthandler
import ssl
import sys
from collections.abc import Sequence

from confluent_kafka import KafkaException

from throttled_admin.cli._args import (
    ACTIONS,
    READING_ACTIONS,
    UsageError,
    build_parser,
    check_topics_args,
    command_timeout,
    read_command_config,
    unrecognized,
)
from throttled_admin.cli._conf import Redactor, checked_conf
from throttled_admin.cli._output import WRITE_ERRORS, ErrorInfo, Output, describe_error, say, stdout_gone

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "main", "run"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _usage_error(error: UsageError, fallback: argparse.ArgumentParser, *, json_mode: bool = False) -> int:
    parser = error.parser or fallback
    if json_mode:  # --output json: every outcome is a JSON object on stdout (the usage still goes to stderr)
        Output(Redactor(), json_mode=True).record(
            {"status": "failed", "error_code": None, "error_name": "USAGE", "error_message": str(error)}
        )
    say(parser.format_usage().rstrip("\n"))
    say(f"{parser.prog}: error: {error}")
    return EXIT_USAGE


def _json_requested(words: Sequence[str]) -> bool:
    """The command line's last ``--output`` (``--output json``, ``--output=json``, or an abbreviation argparse takes,
    ``--out json``) asks for JSON: for an error before the words parsed."""
    chosen = None
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else ""
        flag, equals, value = word.partition("=")
        if len(flag) >= 3 and "--output".startswith(flag):
            chosen = value if equals else following
    return chosen == "json"


def _topics_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """(Not named ``_topics``: importing the submodule of that name sets the package's attribute, and a second
    ``main`` in one process then called the module.)"""
    from throttled_admin.cli._session import AdminSession, CommandTimeout
    from throttled_admin.cli._topics import TopicsFailed, run_topics

    action = check_topics_args(args, parser)
    settings = read_command_config(args.command_config, parser)
    args.timeout_ms, args.deadline, over_an_hour = command_timeout(args, settings.values, parser)
    from throttled_admin.provisioning import PlanError

    try:  # (a setting librdkafka refuses is the file's, named, as for apply)
        conf, left_out = checked_conf(args.command_config, settings, args.bootstrap_server, takes_timeout=True)
    except PlanError as exc:
        raise UsageError(str(exc), parser) from None
    for warning in (left_out, over_an_hour):  # (once every check passed)
        if warning is not None:
            say(warning)
    redact = Redactor([settings.values, conf])  # (conf: the JAAS line's password as read, as sent)
    redact.hide(settings.continued_text)
    out = Output(redact, json_mode=args.output == "json")
    try:
        with AdminSession(
            conf,
            retry_on_quota_violation=args.retry_on_quota_violation,
            timeout_ms=args.timeout_ms,
            changes=action not in READING_ACTIONS,
        ) as session:
            run_topics(args, action, session, out)
    except TopicsFailed:
        return EXIT_FAILURE
    except (KafkaException, ValueError, TypeError, CommandTimeout) as exc:
        # ValueError/TypeError: the client's input checks (a bad topic name, ...), before anything is sent.
        info = (
            describe_error(exc, args.deadline)
            if not isinstance(exc, CommandTimeout)
            else ErrorInfo(None, "TIMEOUT", str(exc))
        )
        if out.json_mode:
            out.record({"topic": args.topic, "operation": action, "status": "failed", **info.as_dict()})
        else:
            out.command_error(info)
        return EXIT_FAILURE
    return EXIT_OK


def run() -> int:
    """The ``throttled-admin`` console script and ``python -m throttled_admin``: ``main`` with Python's fault handler
    on, so that a crash in native code (librdkafka's threads) prints every thread's Python frames to stderr instead of
    a bare exit code (a rare SIGSEGV as the process exits, seen in CI, is to be caught so)."""
    if sys.stderr is not None:  # (``2>&-``: nowhere to print a crash)
        faulthandler.enable()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    parser = build_parser()
    words = list(argv) if argv is not None else sys.argv[1:]
    changes = False  # a topics command that changes the cluster (create, alter, delete)
    try:
        args, extras = parser.parse_known_args(words)
        changes = args.command == "topics" and any(getattr(args, a, False) for a in ACTIONS if a not in READING_ACTIONS)
        if args.command is None:
            raise UsageError("a command is required: topics or apply", parser)
        subparser: argparse.ArgumentParser = args.command_parser
        json_mode = args.output == "json"
        if extras:  # reported with the usage of the command they were given to
            return _usage_error(UsageError(unrecognized(extras, subparser), subparser), parser, json_mode=json_mode)
        try:
            if args.command == "topics":
                return _topics_command(args, subparser)
            from throttled_admin.cli._apply import run_apply

            return run_apply(args, subparser)
        except UsageError as error:
            return _usage_error(error, subparser, json_mode=json_mode)
    except UsageError as error:  # the arguments did not parse (``--partitions abc``): --output read from the words
        return _usage_error(error, parser, json_mode=_json_requested(words))
    except SystemExit as exit_:  # --help and --version
        return exit_.code if isinstance(exit_.code, int) else EXIT_OK
    except KeyboardInterrupt:
        # (a change sent may have been applied: the command may have been waiting for every broker to show it)
        said = ": a change already sent may have been applied; see --describe" if changes else "."
        say(f"Interrupted{said}")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away during a write that is not the command's output (which goes on: reader_may_go), as
        # argparse's --help into `| head -1`: no traceback
        stdout_gone()
        return EXIT_FAILURE
    except OSError as exc:
        if isinstance(exc, ssl.SSLError) or exc.errno not in WRITE_ERRORS:  # (an SSL error's errno is its own)
            raise
        # stdout cannot be written (`> /dev/full`): said in a line, not a traceback (stderr's lines never raise: say)
        stdout_gone()
        say(f"throttled-admin: cannot write the output: {exc.strerror}")  # (dropped too: `&> /dev/full`)
        return EXIT_FAILURE
