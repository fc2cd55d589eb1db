"""Can this process open a TCP connection to a cluster? One bounded probe per bootstrap list, all at once.

The Spark job asks twice: the driver before the job (which clusters it can reach), and each task before its
admin work. A cluster the driver reaches and a task does not is an egress problem of the executors (Spark
Connect on serverless compute, a firewalled worker pool): its rows fail at once with words that say so and
what to do, instead of one client per entity retrying connections until its requests time out.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["PROBE_TIMEOUT_S", "addresses", "reachable", "unreachable_message"]

#: How long one connect() may take before an address counts as unreachable: a refused connection answers
#: at once; a dropped one (no RST) takes this long. Every address of a task is probed at the same time.
PROBE_TIMEOUT_S = 4.0


def addresses(bootstrap_servers: str) -> list[tuple[str, int]]:
    """``host:port`` entries of ``bootstrap.servers`` (an optional ``PROTOCOL://`` prefix, IPv6 in brackets);
    entries without a port are skipped (librdkafka would use 9092; the probe does not guess)."""
    found = []
    for entry in bootstrap_servers.split(","):
        entry = entry.strip().rsplit("://", 1)[-1]
        host, sep, port = entry.rpartition(":")
        if not sep or not port.isdigit() or not host:
            continue
        found.append((host.strip("[]"), int(port)))
    return found


def _connects(address: tuple[str, int], timeout_s: float) -> bool:
    try:
        with socket.create_connection(address, timeout=timeout_s):
            return True
    except OSError:
        return False


def reachable(bootstrap_lists: Iterable[str], timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, bool]:
    """For each ``bootstrap.servers`` value: does at least one of its addresses accept a TCP connection?
    A value with no address the probe understands counts as reachable (the client will say what is wrong)."""
    lists = sorted(set(bootstrap_lists))
    every = sorted({address for value in lists for address in addresses(value)})
    if not every:
        return dict.fromkeys(lists, True)
    with ThreadPoolExecutor(max_workers=min(len(every), 64), thread_name_prefix="reach") as pool:
        opened = dict(zip(every, pool.map(lambda a: _connects(a, timeout_s), every), strict=True))
    return {value: not addresses(value) or any(opened[a] for a in addresses(value)) for value in lists}


def unreachable_message(bootstrap_servers: str) -> str:
    where = ", ".join(f"{host}:{port}" for host, port in addresses(bootstrap_servers)) or bootstrap_servers
    return f"executors cannot reach {where}; run with execution='driver' or open egress"
