"""What the benchmarks share: reading the broker's request log, futures' outcomes, timing a stage and markdown tables.

Benchmarks run as scripts (``python benchmarks/provision.py``), so this module is imported as ``_common``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError

from throttled_admin.testing import RequestRecord

__all__ = [
    "CREATE_TOPICS",
    "QUOTA_EXCEEDED",
    "best_us",
    "failures",
    "interleaved",
    "markdown_table",
    "mutation_records",
    "peak_in_window",
    "percentile",
    "variants_parser",
]

CREATE_TOPICS = 19  # Kafka API key
QUOTA_EXCEEDED = 89  # THROTTLING_QUOTA_EXCEEDED


def best_us(
    stage: Callable[[], Any], repeat: int, rounds: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The best of ``rounds`` rounds of ``repeat`` calls of ``stage``: us a call on ``clock`` (``time.thread_time``:
    the calling thread's CPU)."""
    best = float("inf")
    for _ in range(rounds):
        started = clock()
        for _ in range(repeat):
            stage()
        best = min(best, (clock() - started) / repeat)
    return best * 1e6


def failures(futures: dict[str, Future[None]], timeout_s: float | None = None) -> dict[str, str]:
    """Topic -> error name, for the futures that failed (confluent-kafka's KafkaException(KafkaError))."""
    out: dict[str, str] = {}
    for name, future in futures.items():
        exc = future.exception(timeout_s)
        if exc is None:
            continue
        error = exc.args[0] if exc.args else None
        out[name] = str(error.name()) if isinstance(error, KafkaError) else type(exc).__name__
    return out


def variants_parser(doc: str | None, variants: list[str], topics: int, runs: int) -> argparse.ArgumentParser:
    """The command line of a benchmark of client variants (``ours``, ``bare-N``) over ``--runs`` rounds, each run's
    client a subprocess of its own (``--child VARIANT BOOTSTRAP``)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="*", default=variants)
    parser.add_argument("--topics", type=int, default=topics)
    parser.add_argument("--runs", type=int, default=runs, help="rounds, every variant once, the order reversed")
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "BOOTSTRAP"), help=argparse.SUPPRESS)
    return parser


def interleaved(variants: Sequence[str], runs: int) -> Iterator[str]:
    """``runs`` rounds of every variant once, the order reversed every other round (drift hits all alike)."""
    for round_ in range(runs):
        yield from variants if round_ % 2 == 0 else variants[::-1]


def mutation_records(records: Iterable[RequestRecord], api_key: int = CREATE_TOPICS) -> list[RequestRecord]:
    return sorted((r for r in records if r.api_key == api_key), key=lambda r: r.received_at)


def peak_in_window(records: Sequence[RequestRecord], window_s: float) -> float:
    """The most mutations the broker admitted in any ``window_s`` window: a record's mutations count at its
    ``received_at`` (when the broker charged them). The busiest window starts at some record, so only those
    starts are tried."""
    times = [r.received_at for r in records]
    best = 0.0
    end = 0
    total = 0.0
    for start in range(len(records)):
        while end < len(records) and times[end] < times[start] + window_s:
            total += records[end].mutations
            end += 1
        best = max(best, total)
        total -= records[start].mutations
    return best


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between the closest ranks (statistics' "inclusive" method)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if q < 100 else max(values)


def markdown_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
