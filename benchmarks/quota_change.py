"""A quota that changes under a paced client, on Apache Kafka 4.4 (issue 37): how soon the pacer follows.

- **raise**: ``MutationQuota()`` learns the rate under a client-id quota of 10/s (``--learn`` one-partition
  topics, then 50 paced), then the quota is raised to 100/s (AlterClientQuotas, applied at once) and the same
  client creates ``--topics`` more: the time that took, and how soon after the raise the client first created 90
  topics in one second (90 % of the new rate): "followed within".
- **drop**: ``MutationQuota(rate=40, burst=40)`` and ``MutationQuota()`` under 40/s pace a call (200 topics, or the
  600 that teach the learner), the quota is lowered to 4/s, and a call of ``--after`` topics follows: its
  throttled responses (``throttled_admin.throttle.duration``'s points) and the longest throttle. The quota changes
  between calls: a change sent during a call lands wherever the call has got to once the controller has it.

Every topic's outcome is checked against the broker (``KafkaCluster.topics``). One broker for the run, one quota
entity (client id) and topic prefix per run. The machine's load average is printed with each row.

    THROTTLED_ADMIN_KAFKA_HOME=.kafka/4.4.0 .venv/bin/python benchmarks/quota_change.py
    PYTHONPATH=<a checkout before issue 37> ... benchmarks/quota_change.py   # the pacer before the probe
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from concurrent.futures import Future
from typing import Any

from _common import markdown_table
from _kafka import load_average, plain_kafka
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from tests.real_kafka.broker import KafkaCluster
from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient

TIMEOUT_S = 600.0
STEADY = 50  # topics paced at the learned 10/s before the raise


def throttles(reader: InMemoryMetricReader) -> tuple[int, float]:
    """(throttled responses, the longest throttle in s) from ``throttled_admin.throttle.duration``."""
    data = reader.get_metrics_data()
    count, longest = 0, 0.0
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "throttled_admin.throttle.duration":
                    for point in metric.data.data_points:
                        assert isinstance(point, HistogramDataPoint)
                        count += point.count
                        longest = max(longest, point.max)
    return count, longest


class Done:
    """When each future got its outcome (done-callbacks, on the client's threads)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, _future: Future[Any]) -> None:
        with self._lock:
            self.times.append(time.monotonic())


def create(client: ThrottledAdminClient, names: list[str], done: Done | None = None) -> dict[str, Future[None]]:
    futures = client.create_topics([NewTopic(name, 1, 1) for name in names], timeout_ms=int(TIMEOUT_S * 1000))
    for future in futures.values():
        if done is not None:
            future.add_done_callback(done)
    return futures


def settle(futures: dict[str, Future[None]]) -> list[str]:
    return [name for name, future in futures.items() if future.exception(TIMEOUT_S) is not None]


def raise_run(cluster: KafkaCluster, learn: int, topics: int) -> list[Any]:
    client_id = f"raise-{uuid.uuid4().hex[:8]}"
    cluster.set_quota(client_id=client_id, controller_mutation_rate=10)
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota()) as client:
        failed = settle(create(client, [f"{client_id}-l{i:04d}" for i in range(learn)]))
        # a paced call after the learning one: its last throttle waited out, the client paces at the learned rate
        failed += settle(create(client, [f"{client_id}-s{i:04d}" for i in range(STEADY)]))
        learned = client.metrics()["mutation-rate"]
        cluster.set_quota(client_id=client_id, controller_mutation_rate=100)
        raised_at, done = time.monotonic(), Done()
        names = [f"{client_id}-r{i:04d}" for i in range(topics)]
        failed += settle(create(client, names, done))
        took_s = max(done.times) - raised_at
    followed = next(
        (t - raised_at for i, t in enumerate(done.times) if i >= 89 and t - done.times[i - 89] <= 1.0), None
    )
    held = cluster.topics(client_id)
    assert not failed, failed
    assert len(held) == learn + STEADY + topics, len(held)
    return [
        "raise 10/s -> 100/s, learned",
        f"{learned:.2f}",
        f"{took_s:.1f} s",
        "never" if followed is None else f"{followed:.1f} s",
        "",
        "",
        f"{load_average():.1f}",
    ]


def drop_run(cluster: KafkaCluster, learned: bool, after: int) -> list[Any]:
    client_id = f"drop-{uuid.uuid4().hex[:8]}"
    cluster.set_quota(client_id=client_id, controller_mutation_rate=40)
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id}
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    quota = MutationQuota() if learned else MutationQuota(rate=40, burst=40)
    before = 600 if learned else 200  # slow start's 600 teach 40/s; a known rate's one-second burst paces 200
    with ThrottledAdminClient(conf, mutation_quota=quota, meter_provider=provider) as client:
        failed = settle(create(client, [f"{client_id}-b{i:04d}" for i in range(before)]))
        at_drop, _ = throttles(reader)
        cluster.set_quota(client_id=client_id, controller_mutation_rate=4)
        dropped_at = time.monotonic()
        failed += settle(create(client, [f"{client_id}-a{i:04d}" for i in range(after)]))
        took_s = time.monotonic() - dropped_at
        count, longest = throttles(reader)
        rate = client.metrics()["mutation-rate"]
    provider.shutdown()
    assert not failed, failed
    assert len(cluster.topics(client_id)) == before + after
    label = f"drop 40/s -> 4/s, {'learned' if learned else 'known rate 40, burst 40'}"
    return [label, f"{rate:.2f}", f"{took_s:.1f} s", "", count - at_drop, f"{longest:.1f} s", f"{load_average():.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--learn", type=int, default=300, help="topics the learner learns 10/s from")
    parser.add_argument("--topics", type=int, default=600, help="topics after the raise")
    parser.add_argument("--after", type=int, default=100, help="topics of the call after the drop")
    parser.add_argument("--only", choices=["raise", "drop"], help="one scenario")
    args = parser.parse_args()
    rows = []
    with plain_kafka() as cluster:
        if args.only in (None, "raise"):
            rows.append(raise_run(cluster, args.learn, args.topics))
        if args.only in (None, "drop"):
            rows.extend(drop_run(cluster, learned, args.after) for learned in (False, True))
    columns = [
        "run",
        "rate after (mutation-rate)",
        "took (after the change)",
        "followed within",
        "throttled responses after the drop",
        "longest throttle",
        "load average",
    ]
    print(markdown_table(columns, rows))


if __name__ == "__main__":
    main()
