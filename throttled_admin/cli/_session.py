"""One admin connection for a command: the client, an authentication watch, and waiting on results.

librdkafka never fails a request because authentication failed: it reports the failure through
``error_cb`` and keeps reconnecting, so a wrong password would hang every call until its timeout. The Java
Admin client fails calls at once with the AuthenticationException; the watch here does the same, so a
script learns about a wrong password within seconds.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from throttled_admin import CannotConnectError, ThrottledAdminClient

__all__ = ["FIRST_CONTACT_S", "AdminSession", "CommandTimeout", "connect_failure"]

T = TypeVar("T")
K = TypeVar("K")

# Errors after which no request of this command can succeed (librdkafka retries them forever).
_FATAL_CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED})
_CONNECT_CODES = frozenset({KafkaError._TRANSPORT, KafkaError._RESOLVE})
_POLL_S = 0.05
_SLICE_S = 0.25  # how soon a fatal error (a wrong password) ends a metadata read
#: How long a command waits for a first answer from any broker while every connection attempt fails (the
#: client core's first-contact limit for mutations, applied here to the metadata reads).
FIRST_CONTACT_S = 5.0


def connect_failure(message: str) -> tuple[str, str] | None:
    """(address, reason) of librdkafka's "HOST:PORT/NAME: Connect to ... failed: ... (after 0ms in state
    CONNECT)" or "...: Failed to resolve '...': ..." (a connection that never came up), else None."""
    if "in state CONNECT" not in message and "Failed to resolve" not in message:
        return None
    broker, _, reason = message.partition(": ")
    if not reason:
        return None
    return broker.split("/", 1)[0], reason.split(" (after ", 1)[0]


class CommandTimeout(Exception):
    """A call that took longer than the command's --timeout-ms."""


class AdminSession:
    """``with AdminSession(conf, ...) as session:`` a ThrottledAdminClient whose waits fail fast on
    authentication errors."""

    def __init__(self, conf: Mapping[str, Any], *, retry_on_quota_violation: bool, timeout_ms: int) -> None:
        settings = dict(conf)
        # Quiet by default, as kafka-topics.sh (its log4j config logs to a file); the errors that matter are
        # reported by the command itself. "log_level" in --command-config turns librdkafka's log back on.
        settings.setdefault("log_level", 0)
        settings["error_cb"] = self._on_error
        settings["throttle_cb"] = self._on_throttle
        self.timeout_ms = timeout_ms
        self._fatal: KafkaError | None = None
        self._connect_error: tuple[str, str] | None = None  # while no broker has answered
        self._reached = False
        self._lock = threading.Lock()
        self.admin = ThrottledAdminClient(
            settings, retry_on_quota_violation=retry_on_quota_violation, default_api_timeout_ms=timeout_ms
        )

    def _on_error(self, error: KafkaError) -> None:
        # Runs on the client's callback thread; remembers the first fatal error and, until a broker has
        # answered, the last reason a connection could not be made.
        with self._lock:
            if error.code() in _FATAL_CODES:
                if self._fatal is None:
                    self._fatal = error
            elif error.code() in _CONNECT_CODES and not self._reached:
                self._connect_error = connect_failure(error.str()) or self._connect_error

    def _on_throttle(self, event: Any) -> None:
        with self._lock:
            self._reached = True
            self._connect_error = None

    def throttle_time_ms(self) -> int:
        """The largest throttle_time_ms a broker has sent this command's client (0 when none)."""
        return self._metric("throttle-time-max")

    def quota_violations(self) -> int:
        """How many times a broker refused a topic of this command with THROTTLING_QUOTA_EXCEEDED."""
        return self._metric("quota-violation-total")

    def _metric(self, name: str) -> int:
        value = self.admin.metrics().get(name, 0.0)
        return 0 if value is None or value != value else int(value)

    @property
    def fatal_error(self) -> KafkaError | None:
        with self._lock:
            return self._fatal

    def _check_fatal(self) -> None:
        fatal = self.fatal_error
        if fatal is not None:
            raise KafkaException(fatal)

    def wait(self, futures: Mapping[K, Future[T]], timeout_s: float | None = None) -> None:
        """Until every future is done; raises KafkaException at once on an authentication failure and
        CommandTimeout after ``timeout_s`` (default: the command's timeout plus a margin for the client's
        own deadline to fire first)."""
        budget = timeout_s if timeout_s is not None else self.timeout_ms / 1000 + 5.0
        deadline = time.monotonic() + budget
        pending = set(futures.values())
        while pending:
            _, pending = concurrent.futures.wait(pending, timeout=_POLL_S)
            if not pending:
                return
            self._check_fatal()
            if time.monotonic() > deadline:
                raise CommandTimeout(f"no answer within {budget:g} s")

    def list_topics(self) -> Any:
        """The cluster's metadata (confluent-kafka's ClusterMetadata), asked for in short slices: a blocking
        librdkafka call cannot be abandoned (destroying the client waits for it), so a fatal error is
        noticed between slices instead."""
        started = time.monotonic()
        deadline = started + self.timeout_ms / 1000
        while True:
            remaining = deadline - time.monotonic()
            try:
                metadata = self.admin.list_topics(timeout=max(0.05, min(_SLICE_S, remaining)))
            except KafkaException as exc:
                self._check_fatal()
                self._check_unreachable(started)
                code = exc.args[0].code() if exc.args and isinstance(exc.args[0], KafkaError) else None
                if code not in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT) or time.monotonic() >= deadline:
                    raise
            else:
                with self._lock:
                    self._reached = True
                    self._connect_error = None
                return metadata

    def _check_unreachable(self, started: float) -> None:
        """No broker has answered for FIRST_CONTACT_S and every connection attempt failed: say why now
        (nothing was sent), not at --timeout-ms."""
        with self._lock:
            failure = None if self._reached else self._connect_error
        if failure is not None and time.monotonic() - started >= FIRST_CONTACT_S:
            address, reason = failure
            raise CannotConnectError(
                KafkaError(KafkaError._TRANSPORT, f"Metadata not sent: cannot connect to {address} ({reason})")
            )

    def close(self) -> None:
        self.admin.close()

    def __enter__(self) -> AdminSession:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
