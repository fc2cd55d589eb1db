"""Throttle metrics for Prometheus (opentelemetry-exporter-prometheus).

python examples/metrics_prometheus.py                    # print the exposition text once
python examples/metrics_prometheus.py --serve-port 9464  # and keep serving it on 127.0.0.1:9464/metrics
"""

from __future__ import annotations

import argparse
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry, generate_latest, start_http_server

from throttled_admin import NewTopic, ThrottledAdminClient


@contextmanager
def cluster(bootstrap_servers: str | None, **broker_kwargs: Any) -> Iterator[str]:
    """The cluster given, or else an embedded QuotaBroker: only then is the ``testing`` extra needed."""
    if bootstrap_servers:
        yield bootstrap_servers
        return
    from throttled_admin.testing import cluster_or_quota_broker

    with cluster_or_quota_broker(None, **broker_kwargs) as bootstrap:
        yield bootstrap


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-servers")
    parser.add_argument("--serve-port", type=int)
    parser.add_argument("--serve-seconds", type=float, default=float("inf"))
    args = parser.parse_args(argv)
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    conf = {"client.id": "prometheus-demo"}
    with (
        cluster(args.bootstrap_servers, controller_mutation_rate=10, quota_window_num=2) as bootstrap,
        ThrottledAdminClient({**conf, "bootstrap.servers": bootstrap}, meter_provider=provider) as admin,
    ):
        for batch in range(3):
            for future in admin.create_topics([NewTopic(f"prom.{batch}.{i}", 4, 1) for i in range(3)]).values():
                future.result()
        # Read at once, no flush: a call's points are recorded before its futures resolve (docs/metrics.md).
        print(generate_latest(registry).decode())
        if args.serve_port is not None:
            start_http_server(args.serve_port, addr="127.0.0.1", registry=registry)
            print(f"serving http://127.0.0.1:{args.serve_port}/metrics", flush=True)
            try:  # until Ctrl-C by default (time.sleep(inf) raises OverflowError)
                threading.Event().wait(None if math.isinf(args.serve_seconds) else args.serve_seconds)
            except KeyboardInterrupt:
                print("stopped", flush=True)
    provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
