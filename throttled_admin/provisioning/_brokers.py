"""A node away for a restart (issue 37). A KRaft controller refuses a create (or a grow) whose replication factor
exceeds the brokers registered now with INVALID_REPLICATION_FACTOR: "Unable to replicate the partition 3 time(s): The
target replication factor of 3 cannot be reached because only 2 broker(s) are registered or some brokers have all
their log directories cordoned." (Kafka 4.4, ``ReplicationControlManager``; seen on the three-node quorum while one
node was stopped for a rolling restart, tests/test_provisioning_quorum.py). The refusal applies nothing and costs no
quota, and is final for Java's client and for ``create_topics``. A plan, which exists to converge, takes it as a
passing state when the refusal counts fewer brokers than the cluster had when the group started: it waits, within
its budget, until the cluster has them all again, and sends the row again."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait

from throttled_admin import ThrottledAdminClient
from throttled_admin.provisioning._stop import wait_unless_stopped

__all__ = ["POLL_S", "away_refusal", "registered_brokers", "wait_for_brokers"]

#: How often a group waiting for a node that is away asks the cluster how many brokers it has.
POLL_S = 0.5
_REGISTERED = re.compile(r"only (\d+) broker\(s\) are registered")


def registered_brokers(
    admin: ThrottledAdminClient, timeout_s: float, stopped: threading.Event | None = None
) -> int | None:
    """How many brokers the cluster has now (DescribeCluster: the live, unfenced ones), None if it cannot tell or
    ``stopped`` is set first: a cluster losing a node may answer late, and the plan's stop waited for it (up to the
    request timeout)."""
    try:
        future = admin.describe_cluster(request_timeout=timeout_s)
        came = wait_unless_stopped(
            lambda look_s: bool(wait([future], timeout=look_s).done),
            timeout_s + 1,
            lambda: stopped is not None and stopped.is_set(),
        )
        return len(future.result().nodes) if came else None
    except Exception:
        return None


def away_refusal(message: str, at_start: int | None) -> bool:
    """Whether an INVALID_REPLICATION_FACTOR refusal counted fewer registered brokers than ``at_start``."""
    found = _REGISTERED.search(message)
    return at_start is not None and found is not None and int(found.group(1)) < at_start


def wait_for_brokers(
    admin: ThrottledAdminClient,
    at_start: int,
    until: float,
    timeout_s: float,
    report: Callable[[], None],
    stopped: threading.Event,
) -> tuple[bool, float]:
    """Wait until the cluster has ``at_start`` brokers again, at most until ``until`` (monotonic) or until
    ``stopped`` is set (the plan's stop): (back, seconds waited). ``report`` runs at every look (progress)."""
    started = time.monotonic()
    while True:
        # polling a remote cluster: nothing signals its brokers' return; the plan's stop does
        if stopped.wait(min(POLL_S, max(0.0, until - time.monotonic()))):
            return False, time.monotonic() - started
        count = registered_brokers(admin, min(timeout_s, max(0.1, until - time.monotonic())), stopped)
        if count is not None and count >= at_start:
            return True, time.monotonic() - started
        if time.monotonic() >= until:
            return False, time.monotonic() - started
        report()
