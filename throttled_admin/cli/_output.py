"""Where the commands print: text lines as kafka-topics.sh prints them, or one JSON object per line.

Everything printed passes through the Redactor, so no mode can show a secret from --command-config or a
profile, whatever a message happens to contain.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from confluent_kafka import KafkaError, KafkaException

from throttled_admin import NotSentError, OutcomeUnknownError, ThrottlingQuotaExceededException, TopicValueError
from throttled_admin._kafka.refusals import THROTTLING_QUOTA_MESSAGE
from throttled_admin.cli._conf import Redactor

__all__ = ["WRITE_ERRORS", "ErrorInfo", "Output", "describe_error", "reader_may_go", "say", "stdout_gone"]

# A write to stdout that cannot be done: no space, an I/O error, a file too large
WRITE_ERRORS = (errno.ENOSPC, errno.EIO, errno.EFBIG)

# Java's ThrottlingQuotaExceededException message when the broker sends none (error 89 never carries one).
QUOTA_MESSAGE = THROTTLING_QUOTA_MESSAGE
# The client's parameter -> the option that sets it, and the name Kafka gives the error a broker would answer.
_OPTIONS = {
    "num_partitions": ("--partitions", "INVALID_PARTITIONS"),
    "new_total_count": ("--partitions", "INVALID_PARTITIONS"),
    "replication_factor": ("--replication-factor", "INVALID_REPLICATION_FACTOR"),
    "replica_assignment": ("--replica-assignment", "INVALID_REPLICA_ASSIGNMENT"),
}


def _in_cli_terms(exc: TopicValueError) -> ErrorInfo:
    """The client's input check, in the command line's words: its options, not the parameters they set."""
    option, name = _OPTIONS.get(exc.field, (exc.field, "INVALID_ARGUMENT"))
    if exc.field == "replica_assignment" or exc.maximum is None:
        return ErrorInfo(None, name, f"{option} {exc.problem}")
    # A create leaves --partitions / --replication-factor out for the broker's default (the API's -1).
    default = " (leave it out for the broker's default)" if exc.field != "new_total_count" else ""
    limit = f"{exc.minimum} and {exc.maximum}"
    return ErrorInfo(None, name, f"{option} must be between {limit} (librdkafka's limit), got {exc.value}{default}")


@dataclass(frozen=True)
class ErrorInfo:
    """What the CLI reports about one failure: Kafka's code, name and message, and the throttle."""

    code: int | None
    name: str
    message: str
    throttle_time_ms: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "error_code": self.code,
            "error_name": self.name,
            "error_message": self.message,
            "throttle_time_ms": self.throttle_time_ms,
        }


def describe_error(exc: BaseException, deadline: str | None = None) -> ErrorInfo:
    """Kafka's view of an exception: the message kafka-topics.sh would print after "Error while executing
    topic command : ". ``deadline``: how the command names the call's deadline ("--timeout-ms 60000")."""
    if isinstance(exc, ThrottlingQuotaExceededException):
        # Our exception appends "(throttle_time_ms=N)"; kafka-topics.sh prints the bare Java message and
        # the CLI adds the throttle on its own line.
        return ErrorInfo(
            KafkaError.THROTTLING_QUOTA_EXCEEDED, "THROTTLING_QUOTA_EXCEEDED", QUOTA_MESSAGE, exc.throttle_time_ms
        )
    if isinstance(exc, TopicValueError):
        return _in_cli_terms(exc)
    if isinstance(exc, NotSentError) and exc.timeout_ms is not None:  # the call's deadline: --timeout-ms
        timed_out: KafkaError = exc.args[0]
        text = f"{exc.operation} not sent within {deadline or f'--timeout-ms {exc.timeout_ms}'}: {exc.reason}"
        return ErrorInfo(timed_out.code(), timed_out.name(), text)
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        error: KafkaError = exc.args[0]
        if error.code() == KafkaError.THROTTLING_QUOTA_EXCEEDED and not isinstance(exc, OutcomeUnknownError):
            return ErrorInfo(error.code(), error.name(), QUOTA_MESSAGE, None)  # (a hedged 89 keeps its words)
        return ErrorInfo(error.code(), error.name(), error.str())
    return ErrorInfo(None, type(exc).__name__, str(exc) or type(exc).__name__)


def stdout_gone() -> None:
    """stdout onto /dev/null: the flush Python attempts at exit would fail again, with a message of its own."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@contextlib.contextmanager
def reader_may_go() -> Iterator[None]:
    """A write to stdout whose reader has gone (``| head -1``) is dropped, and so is the rest: as kafka-topics.sh
    (Java's System.out drops what it cannot write), the command goes on to its end, and its exit code says what it
    did, not whether it was read."""
    try:
        yield
    except BrokenPipeError:
        stdout_gone()


def say(text: str, stream: TextIO | None = None) -> None:
    """A line for the person on stderr (or ``stream``): dropped when it cannot be written (stderr closed, a reader gone
    from ``2>&1 | head -1``, ``2>/dev/full``), as kafka-topics.sh's log lines are: the command goes on, and its exit
    code still says what it did."""
    stream = stream or sys.stderr
    if stream is None:  # (started with fd 2 closed: ``2>&-``)
        return
    with contextlib.suppress(OSError):
        print(_between_words(text, stream), file=stream, flush=True)


def _between_words(text: str, stream: TextIO) -> str:
    """``text`` with its lines wider than the terminal ``stream`` is broken between words (a terminal breaks them
    where its edge falls, within a word); as it is when ``stream`` is no terminal (a pipe, a file, a log)."""
    try:
        if not stream.isatty():
            return text
        width = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):  # (no fd: a StringIO; a terminal that reports no size)
        return text
    if width <= 0:  # (a pseudo-terminal whose size was never set)
        return text
    fill = functools.partial(textwrap.fill, width=width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(fill(line) if len(line) > width else line for line in text.split("\n"))


class Output:
    """Prints records (JSON mode) or lines (text mode), redacted."""

    def __init__(
        self, redact: Redactor, *, json_mode: bool, stdout: TextIO | None = None, stderr: TextIO | None = None
    ) -> None:
        self.redact = redact
        self.json_mode = json_mode
        self._stdout = stdout or sys.stdout
        self._stderr = stderr

    def line(self, text: str = "") -> None:
        """A line of output, as kafka-topics.sh prints it: whole, in a terminal too (what captures a terminal, as
        ``script`` or ``expect`` do, reads what kafka-topics.sh would print)."""
        with reader_may_go():
            print(self.redact(text), file=self._stdout, flush=True)

    def error(self, text: str) -> None:
        say(self.redact(text), self._stderr)

    def record(self, value: dict[str, Any]) -> None:
        """One JSON object on one line (JSON Lines), secrets hidden in every string."""
        with reader_may_go():
            print(json.dumps(self._scrub(value), sort_keys=False), file=self._stdout, flush=True)

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {key: self._scrub(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._scrub(item) for item in value]
        return value

    def command_error(self, info: ErrorInfo) -> None:
        """kafka-topics.sh's failure report (on stdout, as TopicCommand.printException), plus the throttle."""
        self.line(f"Error while executing topic command : {info.message}")
        if info.throttle_time_ms is not None:
            self.line(f"Retry after {info.throttle_time_ms} ms.")
