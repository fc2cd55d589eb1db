"""Before ``apply`` sends anything: can each cluster of the plan be reached, as its principal?

One metadata read per connection profile (no quota cost), all clusters at once, with the fast failures of
``_driver.metadata_read`` (which the provisioning executor's own reads use too, worded the same): no broker
reachable fails after a few seconds with "cannot connect to HOST:PORT (reason)", a listener of the other protocol
(TLS or not) and a wrong password as soon as they are found, any other failure with "cannot read the cluster's
topics: ...". Rows of a cluster that cannot be used then fail with that reason, and the command prints one
line of connection problems before its first row.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException

from throttled_admin._driver.metadata_read import read_failure
from throttled_admin.cli._output import describe_error
from throttled_admin.cli._session import AdminSession, CommandTimeout

__all__ = ["Problem", "unreachable"]


@dataclass(frozen=True)
class Problem:
    """Why a cluster cannot be used: Kafka's (librdkafka's) error code when there is one, its name, and the
    message."""

    code: int | None
    message: str
    name: str = "UNKNOWN_ERROR"


def _check(conf: Mapping[str, Any], timeout_s: float) -> Problem | None:
    try:
        timeout_ms = int(timeout_s * 1000)
        with AdminSession(conf, retry_on_quota_violation=False, timeout_ms=timeout_ms, changes=False) as session:
            session.list_topics()
    except KafkaException as exc:  # worded and named as the provisioning executor's own reads: "cannot connect to ..."
        return Problem(*read_failure(exc), describe_error(exc).name)
    except (CommandTimeout, ValueError, TypeError) as exc:
        info = describe_error(exc)
        message = info.message
        # "Metadata not sent: cannot connect to ..." reads as "cannot connect to ..." for a whole cluster.
        return Problem(
            info.code, message.split(": ", 1)[1] if message.startswith("Metadata not sent: ") else message, info.name
        )
    return None


def unreachable(profiles: Mapping[str, Any], budget_s: float | None = None) -> dict[str, Problem]:
    """Profile name -> why its cluster cannot be used; profiles whose cluster answered are left out.
    ``profiles`` are provisioning ``Profile``s; those with the same settings are checked once, all at once, each read
    waiting ``request_timeout_s`` at most, and ``budget_s`` (``--timeout``: each group's budget) if that is less."""
    by_conf: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for name, profile in profiles.items():
        key = tuple(sorted((str(k), str(v)) for k, v in profile.conf.items()))
        by_conf.setdefault(key, []).append(name)
    problems: dict[str, Problem] = {}
    lock = threading.Lock()

    def run(names: list[str]) -> None:
        profile = profiles[names[0]]
        timeout_s = profile.request_timeout_s if budget_s is None else min(profile.request_timeout_s, budget_s)
        problem = _check(profile.conf, timeout_s)
        if problem is not None:
            with lock:
                problems.update(dict.fromkeys(names, problem))

    threads = [threading.Thread(target=run, args=(names,), daemon=True) for names in by_conf.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return problems
