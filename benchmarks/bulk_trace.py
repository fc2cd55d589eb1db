"""Where a bulk call's time goes, request by request (issue 40): one call of ``--topics`` one-partition creates.

Each run starts a fresh broker (Apache Kafka 4.4.0 as ``overhead.py --broker kafka`` starts it, or ``--broker
quota``: a QuotaBroker process) and one client process, which times, for each CreateTopics request: when
ThrottledAdminClient handed it to librdkafka, librdkafka's own round trip (``debug=protocol``: from the request's
last byte written to the response's last byte read, the broker's time), when its answer reached the client (after
librdkafka's parse, quadratic in the request's size), and the gap from that answer to the next write; a request ours
writes on a connection of its own (``_driver/direct_creates``) has no librdkafka round trip, and the summary says
how many went through librdkafka. Variants:
``ours`` (the engine's defaults), ``ours-N`` (requests of at most N topics), ``ours-noquorum`` (no DescribeQuorum
read, ``_driver/quorum_watch``: Kafka forwards it to the controller, one request at a time with the creates; the
client reads it as it is made, before the call), ``ours-onelane`` (no second lane, ``_engine/lanes``: one request
at a time), ``bare-N`` (confluent-kafka, calls of N topics all submitted at once, as in overhead.py), ``raw-N``
(requests of N topics on two connections of the benchmark's own, used as ours' lanes, each answer decoded in
Python: the broker's floor without librdkafka's parse) and ``mixed-N`` (the first of those connections a bare
client's). The broker's CPU is shown beside
the client's: over the client process's life, within the call, and with ``--until-quiet`` until the broker is quiet
(Kafka goes on applying the created partitions after it answers: most of their cost comes after the call). With
``--request-log`` (Kafka only) the broker logs every request (which slows it) and each run also shows the
controller's side: how long it spent on each forwarded CreateTopics, and how long it sat between them (a broker
forwards its mutations one at a time).

    THROTTLED_ADMIN_KAFKA_HOME=.kafka/4.4.0 .venv/bin/python benchmarks/bulk_trace.py ours-2000 ours-4000 bare-4000
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from _common import interleaved, variants_parser
from _kafka import forwarded_creates, plain_kafka
from overhead import BULK_HEAP, _cpu_s, broker_process, submit_bulk

from throttled_admin._driver import create_wire
from throttled_admin._driver.wire_codec import read_frame, request_frame, response_body

_QUIET_S, _QUIET_CPU_S, _QUIET_MAX_S = 1.0, 0.3, 120.0
_RTT = re.compile(r"Received CreateTopicsResponse .*CorrId (\d+), rtt ([\d.]+)ms")


def _raw_failed(sock: socket.socket, correlation_id: int, names: list[str]) -> int:
    """Topics failed in the answer to a CreateTopics v4 on ``sock``, decoded as the client does (``create_wire``)."""
    reader = response_body(read_frame(sock, time.monotonic() + 1800, 64 << 20), correlation_id, flexible=False)
    return sum(result is not None for result in create_wire.decode(reader, 1800, names).results.values())


def raw_child(variant: str, bootstrap: str, count: int) -> None:
    """``raw-N``: requests of N topics on two connections of this process's own, used as ours' lanes (the first two
    at once, then each next on the connection answered first), each answer decoded in Python: the broker's floor
    without librdkafka, whose parse of an answer is quadratic in its size. ``mixed-N``: the first connection a bare
    confluent-kafka client's instead (its calls of N topics), the second this process's own."""
    from confluent_kafka.admin import AdminClient, NewTopic

    kind, size = variant.split("-")
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # (made in both: raw-N's stays idle, as a handle would)
    admin.list_topics(timeout=30)
    socks = [socket.create_connection((host, int(port))) for _ in range(2)]
    for sock in socks:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    names = [f"bulk.{i:06d}" for i in range(count)]
    parts = [names[first : first + int(size)] for first in range(0, count, int(size))]
    answers: queue.Queue[tuple[int, int, int]] = queue.Queue()  # (lane, request, topics failed)
    writes: dict[int, float] = {}
    answered: dict[int, float] = {}

    def send(lane: int, request: int, part: list[str]) -> None:
        """Write the request on ``lane``; a thread of its own waits for its answer (the answers come in any order)."""
        writes[request] = time.perf_counter() - started
        if lane == 0 and kind == "mixed":
            topics = [NewTopic(name, 1, 1) for name in part]
            futures = admin.create_topics(topics, request_timeout=1800, operation_timeout=1800)

            def failed() -> int:
                return sum(f.exception() is not None for f in futures.values())
        else:
            body = create_wire.encode([NewTopic(name, 1, 1) for name in part], 1800, validate_only=False)
            socks[lane].sendall(
                request_frame(create_wire.API_KEY, create_wire.VERSION, request, "raw", body, flexible=False)
            )

            def failed() -> int:
                return _raw_failed(socks[lane], request, part)

        threading.Thread(target=lambda: answers.put((lane, request, failed())), daemon=True).start()

    time.sleep(0.1)  # (the connections made, as a client's are before its call)
    broker = int(os.environ["BULK_TRACE_BROKER_PID"])
    broker_before = _cpu_s(broker)
    cpu_before = time.process_time()
    started = time.perf_counter()
    requests, failed = itertools.count(1), 0
    for lane in range(min(2, len(parts))):
        send(lane, next(requests), parts.pop(0))
    while len(answered) < len(writes):
        lane, request, request_failed = answers.get()
        answered[request] = time.perf_counter() - started
        failed += request_failed
        if parts:
            send(lane, next(requests), parts.pop(0))
    wall_s = time.perf_counter() - started
    cpu_s, call_broker_cpu_s = time.process_time() - cpu_before, _cpu_s(broker) - broker_before
    order = sorted(writes)
    events = [("write", writes[r]) for r in order] + [("answer", answered[r]) for r in order]
    rtts = [1000 * (answered[r] - writes[r]) for r in order]
    out = {"wall_s": wall_s, "cpu_s": cpu_s, "failed": failed, "events": events, "rtts_ms": rtts}
    print(json.dumps(out | {"call_broker_cpu_s": call_broker_cpu_s}), flush=True)


def child(variant: str, bootstrap: str, count: int) -> None:
    """In the subprocess: one variant's call, timed; prints JSON on stdout."""
    if variant.startswith(("raw-", "mixed-")):
        raw_child(variant, bootstrap, count)
        return
    from confluent_kafka.admin import AdminClient

    import throttled_admin._client as client_module
    from throttled_admin import NewTopic, ThrottledAdminClient
    from throttled_admin._engine import machine
    from throttled_admin._engine.config import EngineConfig

    rtts: list[float] = []

    class Rtts(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if match := _RTT.search(record.getMessage()):
                rtts.append(float(match.group(2)))

    logger = logging.getLogger("bulk_trace.librdkafka")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Rtts())
    logger.propagate = False
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "debug": "protocol", "logger": logger, "log_level": 7}
    events: list[tuple[str, float]] = []  # ("write" | "answer", seconds since the call)
    started = 0.0
    if variant.startswith("ours"):
        if variant == "ours-noquorum":  # the quorum watch never reads (``_driver/quorum_watch``)
            from throttled_admin._driver.quorum_watch import QuorumWatch

            def never_due(self: QuorumWatch, *, making: bool = False) -> bool:
                return False

            QuorumWatch.due = never_due  # type: ignore[method-assign]
        elif variant == "ours-onelane":  # no second lane (``_engine/lanes``)
            defaults = machine.Engine.__init__.__kwdefaults__
            assert defaults is not None
            defaults["config"] = EngineConfig(second_lane_from=None)
        elif "-" in variant:  # the size as the engine's own setting (Engine's default config, before the client)
            size = int(variant.split("-")[1])
            defaults = machine.Engine.__init__.__kwdefaults__
            assert defaults is not None
            defaults["config"] = EngineConfig(max_topics_per_request=size)
            client_module._FIRST_PART = size  # (the first request goes as soon as its part is checked)
        send = client_module._Transport.send

        def timed_send(self: Any, order: Any, on_answer: Any, sending: Any) -> bool:
            def answered(answer: Any) -> None:
                events.append(("answer", time.perf_counter() - started))
                on_answer(answer)

            events.append(("write", time.perf_counter() - started))
            return send(self, order, answered, sending)

        client_module._Transport.send = timed_send  # type: ignore[method-assign]
        admin: AdminClient = ThrottledAdminClient(conf)
    else:
        admin = AdminClient(conf)
    admin.list_topics(timeout=30)
    topics = [NewTopic(f"bulk.{i:06d}", 1, 1) for i in range(count)]
    admin.poll(0.1)
    rtts.clear()
    broker = int(os.environ["BULK_TRACE_BROKER_PID"])
    broker_before = _cpu_s(broker)
    cpu_before = time.process_time()
    started = time.perf_counter()
    futures = submit_bulk(admin, variant, topics, lambda: events.append(("write", time.perf_counter() - started)))
    failed = sum(future.exception() is not None for future in futures.values())
    wall_s = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_before
    call_broker_cpu_s = _cpu_s(broker) - broker_before
    # librdkafka's log lines arrive when the client polls. Polled for 0.5 s whatever it serves (a poll returns after
    # one event: a bare client's returned at once, and its life missed 0.6 s of the broker's CPU that ours counted)
    end = time.monotonic() + 0.5
    while (left := end - time.monotonic()) > 0:
        admin.poll(left)
    out = {"wall_s": wall_s, "cpu_s": cpu_s, "failed": failed, "events": events, "rtts_ms": rtts}
    out["call_broker_cpu_s"] = call_broker_cpu_s
    print(json.dumps(out), flush=True)
    close = getattr(admin, "close", None)
    if close is not None:
        close()


def _cpu_until_quiet(pid: int) -> float | None:
    """The broker's CPU once it has gone quiet (less than ``_QUIET_CPU_S`` in ``_QUIET_S``); None if it has not
    within ``_QUIET_MAX_S``. Kafka answers a create once its controller has committed it, and goes on applying the
    new partitions after (10,000 topics: 36-63 s of CPU in all, 1.6-2.0 s in the call, whichever client made them)."""
    end, before = time.monotonic() + _QUIET_MAX_S, _cpu_s(pid)
    while time.monotonic() < end:
        time.sleep(_QUIET_S)  # (a process's CPU time signals nothing: it is read at intervals)
        now = _cpu_s(pid)
        if now - before < _QUIET_CPU_S:
            return now
        before = now
    return None


@contextmanager
def _broker(kafka: bool, request_log: bool) -> Iterator[tuple[str, int, Any]]:
    """A fresh broker process: (bootstrap, pid, the Kafka cluster or None), Kafka as ``overhead.kafka_process`` starts
    it; the cluster itself for its request log."""
    if not kafka:
        with broker_process() as (bootstrap, pid):
            yield bootstrap, pid, None
        return
    with plain_kafka(BULK_HEAP, request_log) as cluster:
        yield cluster.bootstrap_servers, cluster.nodes[0].pid, cluster


def _controller_side(cluster: Any, requests: int) -> tuple[list[float], list[float]]:
    """From Kafka's request log: ms the controller spent on each forwarded CreateTopics, and ms between them. The log
    is written as requests complete: read until it holds the run's ``requests`` (10 s at most)."""
    end = time.monotonic() + 10
    spans = forwarded_creates(cluster, "rdkafka")
    while len(spans) < requests and time.monotonic() < end:
        time.sleep(0.1)  # (a file written by another process signals nothing)
        spans = forwarded_creates(cluster, "rdkafka")
    took = [1000 * (b - a) for a, b in spans]
    between = [1000 * (later[0] - earlier[1]) for earlier, later in itertools.pairwise(spans)]
    return took, between


def run(variant: str, count: int, kafka: bool, until_quiet: bool, request_log: bool = False) -> dict[str, Any]:
    """One measurement: a fresh broker process, one client process."""
    with _broker(kafka, request_log) as (bootstrap, pid, cluster):
        load = os.getloadavg()[0]
        broker_cpu = _cpu_s(pid)
        command = [sys.executable, __file__, "--child", variant, bootstrap, "--topics", str(count)]
        env = dict(os.environ, BULK_TRACE_BROKER_PID=str(pid))
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"{variant} child failed ({done.returncode}): {done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        result.update(variant=variant, load=load, broker_cpu_s=_cpu_s(pid) - broker_cpu)
        if until_quiet:
            quiet = _cpu_until_quiet(pid)
            result["quiet_broker_cpu_s"] = None if quiet is None else quiet - broker_cpu
        if cluster is not None and request_log:
            requests = sum(kind == "write" for kind, _ in result["events"])
            result["controller_ms"], result["between_ms"] = _controller_side(cluster, requests)
    writes = [t for kind, t in result["events"] if kind == "write"]
    answers = [t for kind, t in result["events"] if kind == "answer"]
    result["first_write_ms"] = 1000 * writes[0]
    # ours: each answer's time past librdkafka's round trip (its parse, and the hand-over to Python), and the gap
    # from an answer to the next write (bare: no answers timed; the last write has no next). A request the client
    # wrote on its own connection (``_driver/direct_creates``) has no librdkafka round trip: none past it then.
    rtts = result["rtts_ms"]
    timed = len(rtts) == len(writes) == len(answers)
    result["after_rtt_ms"] = (
        [1000 * (a - w) - rtt for w, a, rtt in zip(writes, answers, rtts, strict=True)] if timed else []
    )
    result["gap_ms"] = [1000 * (w - a) for a, w in zip(answers, writes[1:], strict=False)]
    return result


def _controller_text(result: dict[str, Any]) -> str:
    """``--request-log``: the controller's time on each request and between them, in one run's line."""
    if "controller_ms" not in result:
        return ""
    took, between = ([round(ms) for ms in result[key]] for key in ("controller_ms", "between_ms"))
    return f"; the controller {took} ms, between {between} ms"


def _quiet(runs: list[dict[str, Any]]) -> str:
    """The broker's CPU until quiet over ``runs`` (``--until-quiet``; the median), and how many runs it never went
    quiet in; "" without ``--until-quiet``."""
    if "quiet_broker_cpu_s" not in runs[0]:
        return ""
    quiet = [r["quiet_broker_cpu_s"] for r in runs if r["quiet_broker_cpu_s"] is not None]
    text = f", {statistics.median(quiet):.2f} s until quiet" if quiet else ""
    late = len(runs) - len(quiet)
    return text + (f", {late} not quiet within {_QUIET_MAX_S:.0f} s" if late else "")


def main() -> None:
    parser = variants_parser(__doc__, ["ours", "bare-4000"], 10_000, 3)
    parser.add_argument("--broker", choices=("kafka", "quota"), default="kafka")
    parser.add_argument("--until-quiet", action="store_true", help="also the broker's CPU until it is quiet")
    parser.add_argument(
        "--request-log", action="store_true", help="Kafka: the controller's time per request and between requests"
    )
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.topics)
        return
    results: dict[str, list[dict[str, Any]]] = {variant: [] for variant in args.variants}
    for variant in interleaved(args.variants, args.runs):
        result = run(variant, args.topics, args.broker == "kafka", args.until_quiet, args.request_log)
        results[variant].append(result)
        after, gaps = result["after_rtt_ms"], result["gap_ms"]
        print(
            f"{variant}: wall {result['wall_s']:.2f} s, client CPU {result['cpu_s']:.2f} s, broker CPU "
            f"{result['broker_cpu_s']:.2f} s ({result['call_broker_cpu_s']:.2f} s in the call{_quiet([result])}), load "
            f"{result['load']:.1f}; first write {result['first_write_ms']:.0f}"
            f" ms; round trips {[round(r) for r in result['rtts_ms']]} ms"
            + (f"; past them {[round(a) for a in after]} ms; gaps {[round(g) for g in gaps]} ms" if gaps else "")
            + _controller_text(result),
            flush=True,
        )
    print()
    for variant, runs in results.items():
        after = [a for r in runs for a in r["after_rtt_ms"]]
        gaps = [g for r in runs for g in r["gap_ms"]]
        line = f"{variant}: wall {statistics.median(r['wall_s'] for r in runs):.2f} s (median of {len(runs)})"
        line += f", client CPU {statistics.median(r['cpu_s'] for r in runs):.2f} s"
        line += f", broker CPU {statistics.median(r['broker_cpu_s'] for r in runs):.2f} s"
        line += f" ({statistics.median(r['call_broker_cpu_s'] for r in runs):.2f} s in the call{_quiet(runs)})"
        if after:  # one request at a time: the broker's time is the sum of the round trips
            line += f", round trips {statistics.median(sum(r['rtts_ms']) for r in runs):.0f} ms in all"
            line += f", past them {statistics.median(after):.0f} ms and gaps {statistics.median(gaps or [0]):.0f} ms"
            line += " a request"
        elif variant.startswith("bare-"):  # all written at once: the last answer's round trip, the broker's time
            line += f", the last round trip {statistics.median(max(r['rtts_ms'] or [0]) for r in runs):.0f} ms"
        elif variant.startswith("ours"):  # some written by the client itself (``_driver/direct_creates``)
            writes = statistics.median(sum(kind == "write" for kind, _ in r["events"]) for r in runs)
            timed = statistics.median(len(r["rtts_ms"]) for r in runs)
            line += f", {timed:.0f} of {writes:.0f} requests through librdkafka"
        if "controller_ms" in runs[0]:
            took = statistics.median(sum(r["controller_ms"]) for r in runs)
            between = statistics.median(sum(r["between_ms"]) for r in runs)
            line += f"; the controller {took:.0f} ms on the requests, {between:.0f} ms between them"
        print(line)


if __name__ == "__main__":
    main()
