"""One admin connection for a command: the client, an authentication watch, and waiting on results.

librdkafka never fails a request because authentication failed: it reports the failure through
``error_cb`` and keeps reconnecting, so a wrong password would hang every call until its timeout. The Java
Admin client fails calls at once with the AuthenticationException; the watch (``_driver.metadata_read``'s
``ContactWatch``, shared with the provisioning executor) does the same, so a script learns about a wrong
password within seconds.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar

from confluent_kafka import KafkaError

from throttled_admin import ThrottledAdminClient
from throttled_admin._client import ReadingClient
from throttled_admin._driver.metadata_read import ContactWatch, read_metadata
from throttled_admin._driver.throttle_notice import NOTICE_LOGGER

__all__ = ["AdminSession", "CommandTimeout"]

T = TypeVar("T")
K = TypeVar("K")

_POLL_S = 0.05


class CommandTimeout(Exception):
    """A call that took longer than the command's --timeout-ms."""


class AdminSession:
    """``with AdminSession(conf, ...) as session:`` a ThrottledAdminClient whose waits fail fast on
    authentication errors. ``changes``: False for a command that only reads (``ReadingClient``)."""

    def __init__(
        self, conf: Mapping[str, Any], *, retry_on_quota_violation: bool, timeout_ms: int, changes: bool = True
    ) -> None:
        settings = dict(conf)
        # Quiet by default, as kafka-topics.sh (its log4j config logs to a file); the errors that matter are
        # reported by the command itself. "log_level" in --command-config turns librdkafka's log back on.
        settings.setdefault("log_level", 0)
        self._watch = ContactWatch()
        self._throttle_lock = threading.Lock()
        self._last_throttle_ms = 0  # the latest throttle_time_ms a broker sent (librdkafka's throttle event)
        settings["error_cb"] = self._watch.on_error
        settings["throttle_cb"] = self._on_throttle
        self.timeout_ms = timeout_ms
        client = ThrottledAdminClient if changes else ReadingClient
        self.admin = client(
            settings, retry_on_quota_violation=retry_on_quota_violation, default_api_timeout_ms=timeout_ms
        )
        # The command words a throttle itself (kafka-topics.sh's lines, and its WARNING for a change admitted over the
        # quota): the client's own notice of an unpaced throttle would say it twice, on stderr. One filter per session.
        self._silence: Callable[[logging.LogRecord], bool] = lambda record: False
        logging.getLogger(NOTICE_LOGGER).addFilter(self._silence)

    def _on_throttle(self, event: Any) -> None:
        with self._throttle_lock:
            self._last_throttle_ms = int(getattr(event, "throttle_time", 0.0) * 1000 + 0.5)
        self._watch.on_throttle(event)

    def last_throttle_ms(self) -> int:
        with self._throttle_lock:
            return self._last_throttle_ms

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
        return self._watch.fatal

    def wait(
        self,
        futures: Mapping[K, Future[T]],
        timeout_s: float | None = None,
        *,
        on_throttled: Callable[[int], None] | None = None,
    ) -> None:
        """Until every future is done; raises KafkaException at once on an authentication failure and
        CommandTimeout after ``timeout_s`` (default: the command's timeout plus a margin for the client's
        own deadline to fire first). ``on_throttled(throttle_ms)``: called when the broker has refused topics for
        the quota and the client waits out its throttle to send them again (they are still pending a poll later:
        a throttle that outlasts the deadline fails them at once instead)."""
        budget = timeout_s if timeout_s is not None else self.timeout_ms / 1000 + 5.0
        deadline = time.monotonic() + budget
        pending = set(futures.values())
        violations = self.quota_violations() if on_throttled is not None else 0
        refused = False  # a refusal seen at the last poll, not yet reported
        while pending:
            _, pending = concurrent.futures.wait(pending, timeout=_POLL_S)
            if not pending:
                return
            if on_throttled is not None:
                if refused:  # still pending a poll later: the client waits (its throttle event is in by now)
                    on_throttled(self.last_throttle_ms())
                now_violations = self.quota_violations()
                refused, violations = now_violations > violations, now_violations
            self._watch.check_fatal()
            if time.monotonic() > deadline:
                raise CommandTimeout(f"no answer within {budget:g} s")

    def list_topics(self) -> Any:
        """The cluster's metadata (confluent-kafka's ClusterMetadata) within the command's timeout, failing at
        once on a wrong password and after a few seconds when no broker can be reached (``_driver.metadata_read``)."""
        return read_metadata(self.admin, self._watch, self.timeout_ms / 1000)

    def close(self) -> None:
        try:
            self.admin.close()
        finally:
            logging.getLogger(NOTICE_LOGGER).removeFilter(self._silence)

    def __enter__(self) -> AdminSession:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
