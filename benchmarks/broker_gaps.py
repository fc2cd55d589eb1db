"""Where a bulk call leaves QuotaBroker's controller idle (issue 40): one call of ``--topics`` one-partition creates,
timed on the controller's side.

QuotaBroker runs in this process, with no quota, and times each CreateTopics its controller thread handles
(decode, apply, encode: ``Server._answer``); each run's client is a subprocess of its own (``overhead.py``'s
variants: ``ours``, one ThrottledAdminClient call; ``bare-N``, confluent-kafka calls of N topics all submitted at
once), which reports when its call began and when its last future resolved, on the same monotonic clock. A run's
wall time is then the controller's busy time plus three idle parts: before its first request (the client's checks
and first write), between requests (the client's next write, the broker's own hand-over), and after the last (the
last answer's parse and settling). The controller's busy time moves by a tenth from run to run for the same work;
the idle parts are the client's. ``--runs`` rounds, every variant once per round, the order reversed every other
round; medians. Each run's line also gives its gaps between requests of more than 5 ms (the request after the gap,
and the gap's start in ms since the call began) and the client's garbage collections of more than 5 ms (generation,
start, duration), which may keep its next write back.

    .venv/bin/python benchmarks/broker_gaps.py --topics 50000 --runs 5 ours bare-1000
"""

from __future__ import annotations

import gc
import itertools
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from _common import interleaved, variants_parser
from overhead import make_client, submit_bulk

from throttled_admin.admin import NewTopic

CREATE_TOPICS = 19  # the API key
_LONG_S = 0.005  # gaps and collections longer than this are listed run by run


def child(variant: str, bootstrap: str, count: int) -> None:
    """In the subprocess: the call, its start and end on the monotonic clock; JSON on stdout."""
    kind = "confluent-kafka" if variant.startswith("bare-") else "ThrottledAdminClient"
    admin: Any = make_client(kind, bootstrap)
    admin.list_topics(timeout=30)
    topics = [NewTopic(f"gaps.{i:06d}", 1, 1) for i in range(count)]
    collections: list[tuple[int, float, float]] = []  # (generation, start, end)

    def collected(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append((info["generation"], time.perf_counter(), 0.0))
        elif collections:
            generation, began, _ = collections[-1]
            collections[-1] = (generation, began, time.perf_counter())

    gc.callbacks.append(collected)
    started = time.perf_counter()
    futures = submit_bulk(admin, variant, topics)
    failed = sum(future.exception() is not None for future in futures.values())
    ended = time.perf_counter()
    gc.callbacks.remove(collected)
    long = [(generation, began, end) for generation, began, end in collections if end - began > _LONG_S]
    print(json.dumps({"started": started, "ended": ended, "failed": failed, "collections": long}), flush=True)
    getattr(admin, "close", lambda: None)()


def run(variant: str, count: int) -> dict[str, Any]:
    """One measurement against a fresh QuotaBroker: its controller's busy time and idle parts, in ms; its long gaps
    and the client's long collections."""
    from throttled_admin.testing import QuotaBroker, _server

    answer = _server.Server._answer
    jobs: list[tuple[float, float]] = []

    def timed(self: Any, spec: Any, frame: bytes, context: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return answer(self, spec, frame, context, *args, **kwargs)
        finally:
            if context.api_key == CREATE_TOPICS:
                jobs.append((began, time.perf_counter()))

    _server.Server._answer = timed  # type: ignore[method-assign]
    try:
        with QuotaBroker() as broker:
            command = [sys.executable, __file__, "--child", variant, broker.bootstrap_servers, "--topics", str(count)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    finally:
        _server.Server._answer = answer  # type: ignore[method-assign]
    if done.returncode != 0:
        raise RuntimeError(f"{variant} child failed ({done.returncode}): {done.stderr[-2000:]}")
    call = json.loads(done.stdout.strip().splitlines()[-1])
    if call["failed"] or not jobs:
        raise RuntimeError(f"{variant}: {call['failed']} topics failed, {len(jobs)} requests handled")
    gaps = [later[0] - earlier[1] for earlier, later in itertools.pairwise(jobs)]
    at = call["started"]
    return {
        "wall": 1000 * (call["ended"] - call["started"]),
        "busy": 1000 * sum(end - began for began, end in jobs),
        "before": 1000 * (jobs[0][0] - call["started"]),
        "between": 1000 * sum(gaps),
        "after": 1000 * (call["ended"] - jobs[-1][1]),
        "requests": len(jobs),
        "long gaps (request: at, ms)": [
            f"{index + 2}: {1000 * (jobs[index][1] - at):.0f}, {1000 * gap:.0f}"
            for index, gap in enumerate(gaps)
            if gap > _LONG_S
        ],
        "client collections (generation: at, ms)": [
            f"{generation}: {1000 * (began - at):.0f}, {1000 * (end - began):.0f}"
            for generation, began, end in call["collections"]
        ],
    }


def main() -> None:
    args = variants_parser(__doc__, ["ours", "bare-1000"], 50_000, 5).parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.topics)
        return
    results: dict[str, list[dict[str, Any]]] = {variant: [] for variant in args.variants}
    for variant in interleaved(args.variants, args.runs):
        results[variant].append(measured := run(variant, args.topics))
        line = ", ".join(
            f"{key} {value if isinstance(value, list) else f'{value:.1f}'}" for key, value in measured.items()
        )
        print(f"  {variant}: {line}", flush=True)
    print("| client | wall | controller busy | idle: before the first request | between requests | after the last |")
    print("|---|---|---|---|---|---|")
    for variant, runs in results.items():
        cells = [statistics.median(r[key] for r in runs) for key in ("wall", "busy", "before", "between", "after")]
        print(f"| {variant} | " + " | ".join(f"{cell:.1f} ms" for cell in cells) + " |")


if __name__ == "__main__":
    main()
