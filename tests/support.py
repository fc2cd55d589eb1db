"""Helpers shared by the test files: the repository's root, free loopback ports, waiting on a condition, what a
future failed with, whether a thread is inside a function, the calls an OpenTelemetry reader has timed, and the types
of the ``quota_broker`` fixture and of a confluent-kafka conf.

Test files import these from here, never from conftest.py (which holds only fixtures and hooks)."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from throttled_admin.testing import QuotaBroker

__all__ = [
    "REPO",
    "BrokerFactory",
    "Conf",
    "call_durations",
    "free_port",
    "port_open",
    "raised",
    "running",
    "wait_until",
]

REPO = Path(__file__).resolve().parent.parent

#: The ``quota_broker`` fixture (throttled_admin.testing's pytest plugin): QuotaBroker's keywords, a started broker.
BrokerFactory = Callable[..., QuotaBroker]

#: A confluent-kafka conf as ``AdminClient(conf)`` is typed (its stub leaves out the callbacks, ``error_cb`` ...).
Conf = dict[str, str | int | float | bool]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Callable[[], bool], timeout_s: float = 30.0, interval_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def quorum_reads(broker: QuotaBroker, client_id: str | None = None) -> int:
    """The DescribeQuorum requests ``broker`` has logged (of ``client_id`` only, when given)."""
    return sum(r.api_name == "DescribeQuorum" and client_id in (None, r.client_id) for r in broker.request_log())


def refused_a_create(broker: QuotaBroker) -> bool:
    """Whether ``broker`` has refused a topic of a CreateTopics for the quota (THROTTLING_QUOTA_EXCEEDED, 89)."""
    return any(89 in r.errors.values() for r in broker.request_log() if r.api_name == "CreateTopics")


def running(thread: threading.Thread, function: str) -> bool:
    """Whether ``thread`` is inside ``function`` now (its stack, as ``faulthandler`` would print it)."""
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None and frame.f_code.co_name != function:
        frame = frame.f_back
    return frame is not None


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def raised(future: Future[Any], timeout_s: float | None = None) -> BaseException:
    """What ``future`` failed with; a future that succeeded fails the test here."""
    exc = future.exception(timeout_s)
    assert exc is not None, "the future succeeded"
    return exc


def call_durations(reader: InMemoryMetricReader) -> int:
    """How many calls' durations (``messaging.client.operation.duration``, a histogram) the reader has collected."""
    data = reader.get_metrics_data()
    if data is None:
        return 0
    count = 0
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "messaging.client.operation.duration":
                    for point in metric.data.data_points:
                        assert isinstance(point, HistogramDataPoint)  # the duration is a histogram
                        count += point.count
    return count
