"""Throttle metrics on the console through the OpenTelemetry SDK (the library itself uses only the API).

python examples/metrics_console.py [--bootstrap-servers host:9092]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

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
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-servers")
    args = parser.parse_args(argv)
    reader = PeriodicExportingMetricReader(ConsoleMetricExporter(), export_interval_millis=60_000)
    provider = MeterProvider(metric_readers=[reader])
    with (
        cluster(args.bootstrap_servers, controller_mutation_rate=10, quota_window_num=2) as bootstrap,
        ThrottledAdminClient(
            {"bootstrap.servers": bootstrap, "client.id": "console-demo"}, meter_provider=provider
        ) as admin,
    ):
        for batch in range(3):
            topics = [NewTopic(f"console.{batch}.{i}", 4, 1) for i in range(3)]
            for future in admin.create_topics(topics).values():
                future.result()
        provider.force_flush()  # print the metrics while the client's gauges still report
    provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
