"""How long after a bulk call's deadline its last future is done, when no request of the call is answered in time.

Each run starts a QuotaBroker in this process that answers every CreateTopics a minute late (``delay_next``; the
topics are created at once), warms a client up with a one-topic call, then makes one ``create_topics`` call of
``--topics`` one-partition topics with ``timeout_ms``. The topics of the requests in flight are told "outcome unknown"
and the rest "not sent", all at the deadline (rule e). Reported: from the call's deadline (its start, taken just
before ``create_topics``, plus ``timeout_ms``) until every future is done, as a caller that asks each future in turn
sees it (``concurrent.futures.wait`` on them all adds its own cost: a waiter on each); the median and range over
``--runs`` runs, the sizes interleaved.

    .venv/bin/python benchmarks/deadline.py                          # 12,000 and 50,000 topics, 5 runs each
    PYTHONPATH=<a checkout of 2fff720> .venv/bin/python benchmarks/deadline.py   # before (a topic at a time)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import Counter

from _common import markdown_table

from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker

LATE_S = 60.0  # how late the broker answers each CreateTopics: past any deadline here


def one_run(topics: int, timeout_ms: int) -> tuple[float, Counter[str]]:
    """Seconds from the deadline until the last future is done, and the outcomes by error type."""
    with QuotaBroker() as broker:
        client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
        try:
            client.create_topics([NewTopic("warm-up", 1, 1)])["warm-up"].result()
            broker.delay_next("CreateTopics", LATE_S, count=1000)
            new_topics = [NewTopic(f"deadline-{i:06d}", 1, 1) for i in range(topics)]
            started = time.monotonic()
            futures = client.create_topics(new_topics, timeout_ms=timeout_ms)
            outcomes = Counter(type(future.exception()).__name__ for future in futures.values())  # each in turn
            late_s = time.monotonic() - started - timeout_ms / 1000
        finally:
            client.close()
    return late_s, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, nargs="+", default=[12000, 50000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout-ms", type=int, default=5000)
    args = parser.parse_args()
    late: dict[int, list[float]] = {n: [] for n in args.topics}
    outcomes: dict[int, Counter[str]] = {n: Counter() for n in args.topics}
    loads = []
    for run in range(args.runs):
        for n in args.topics:
            late_s, told = one_run(n, args.timeout_ms)
            late[n].append(late_s)
            outcomes[n] += told
            loads.append(os.getloadavg()[0])
        print(f"  run {run + 1} done, load average {loads[-1]:.1f}", flush=True)
    rows = []
    for n in args.topics:
        values = late[n]
        shares = ", ".join(f"{name} {count // args.runs}" for name, count in sorted(outcomes[n].items()))
        span = f"{min(values):.3f}-{max(values):.3f}"
        rows.append(
            [
                f"{n:,}",
                f"{statistics.median(values):.3f} s ({span})",
                f"{statistics.median(values) / n * 1e6:.1f} us",
                shares,
            ]
        )
    print(f"\ntimeout_ms={args.timeout_ms}, {args.runs} runs, load average {min(loads):.1f}-{max(loads):.1f}\n")
    print(markdown_table(["topics", "last future done after the deadline", "per topic", "told (per run)"], rows))


if __name__ == "__main__":
    main()
