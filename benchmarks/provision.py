"""Provisioning N topics x P partitions under a controller mutation quota (R, B), strategy by strategy.

Each strategy runs against a fresh QuotaBroker (``controller_mutation_rate=R``, bucket B = R x window,
one window of B / R seconds) in enforcement ``strict`` (error 89 for every client) and ``by-version``
(Apache Kafka: librdkafka's CreateTopics v4 is admitted and throttled, kafka-python's v7 gets error 89).
Everything measured about the broker's side comes from its request log:

- completion / T*: from the first create_topics call to the last topic's outcome, over the quota's floor
  T* = max(0, N x P - B) / R (the bucket starts full at B and refills at R);
- on the broker / T*: the same job as the broker saw it, from the first CreateTopics request's arrival to the last
  answer's leaving (without the client's first contact: its connection, handshake and first reads);
- topics failed, and of those the ones the broker holds anyway (reported failed, but created);
- CreateTopics requests, the responses that carried a throttle, and topic entries rejected with error 89
  (THROTTLING_QUOTA_EXCEEDED), or with Redpanda's UNKNOWN_SERVER_ERROR under ``--enforcement redpanda`` (its
  bucket holds one second of the rate: B = R);
- the wait at the broker, longest and summed over the run's requests (``held_s``: a request sitting unread in a
  muted connection, KIP-219, or behind another request);
- the most mutations admitted in any W-second window (a record's mutations at its ``received_at``),
  against the quota's envelope R x W + B;
- the load average as each run started (the machine is shared).

The strategies: bare confluent-kafka, kafka-python 3, the Java AdminClient with its defaults
(benchmarks/java/Reference.java, from the jars `make kafka` fetched; left out, saying so, when they are not
there) and this project's client, reactive, paced at a known rate and learning the rate.

    .venv/bin/python benchmarks/provision.py                       # 300 x 4, R = B = 400, both enforcements
    .venv/bin/python benchmarks/provision.py --plot docs/images/provision.png
    .venv/bin/python benchmarks/provision.py --topics 500 --partitions 2 --rate 200 --burst 600
    .venv/bin/python benchmarks/provision.py --enforcement redpanda --topics 100 --rate 200 --timeout 30

``--broker kafka`` runs the same job against Apache Kafka 4.4.0 itself (the jars `make kafka` fetched): one
single-node KRaft broker for every run (``controller.quota.window.num`` = B / R one-second windows), each run with
a client-id quota entity and a topic prefix of its own, its topics deleted afterwards. The columns come from the
broker's side:
Kafka's request log (``kafka.request.logger`` at DEBUG) and a proxy that notes when each request was written
(benchmarks/_kafka.py, _proxy.py): a request's mutations count when the controller took it up, and its wait at
the broker runs from its write to a request handler taking it up (unread in a muted connection included).

    .venv/bin/python benchmarks/provision.py --broker kafka --repeat 3

``--broker quorum`` runs on three combined KRaft nodes (a quorum of three voters, Kafka's request log on in each,
no proxy: a request's arrival is when its broker read it), a 1,000-topic job by default, once steady and once with a
rolling restart of every node during the job (``--roll-after`` seconds after its first CreateTopics). The active
controller charges the quota and a failover starts a fresh bucket, so the peak is also given per controller epoch
(each stretch of requests charged by one controller). The strategies: ours paced (known rate and learned) and the
Java AdminClient, unless ``--strategy`` says otherwise.

    .venv/bin/python benchmarks/provision.py --broker quorum --repeat 3
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from _common import QUOTA_EXCEEDED, failures, markdown_table, mutation_records, peak_in_window
from _kafka import KafkaBench, KafkaRecord, QuorumBench, java_available, load_average
from confluent_kafka.admin import AdminClient

from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker, RequestRecord

ENFORCEMENTS = ("strict", "by-version", "redpanda", "kafka")
DEFAULT_ENFORCEMENTS = ("strict", "by-version")
# A quota refusal: error 89, or Redpanda's UNKNOWN_SERVER_ERROR (-1) for librdkafka's request versions
REFUSED = {QUOTA_EXCEEDED, -1}


@dataclass
class Run:
    """One strategy's run: its own clock (monotonic, the broker's too) and what each topic ended as."""

    strategy: str
    enforcement: str  # QuotaBroker's enforcement, or "kafka" for Apache Kafka itself
    client_id: str = "bench"  # the quota entity
    started_at: float = 0.0
    finished_at: float = 0.0
    failed: dict[str, str] = field(default_factory=dict)  # topic -> error name
    records: list[RequestRecord] = field(default_factory=list)
    held: set[str] = field(default_factory=set)  # topics the broker holds at the end
    metrics: dict[str, float] = field(default_factory=dict)  # ThrottledAdminClient.metrics() at the end
    load: float = field(default_factory=load_average)  # the machine's load average as the run started
    rolled: tuple[float, float] | None = None  # a rolling restart's start and end, on the run's clock

    @property
    def seconds(self) -> float:
        return self.finished_at - self.started_at


Strategy = Callable[[str, list[str], argparse.Namespace, Run], None]


def _conf(bootstrap: str, run: Run) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "client.id": run.client_id, "log_level": 0}  # librdkafka's chatter off


def _batches(names: list[str], size: int) -> list[list[str]]:
    return [names[i : i + size] for i in range(0, len(names), size)]


def _new_topics(names: list[str], partitions: int) -> list[NewTopic]:
    return [NewTopic(name, partitions, 1) for name in names]


def _wait_all(futures: list[dict[str, Future[None]]], run: Run) -> None:
    for batch in futures:
        run.failed.update(failures(batch))
    run.finished_at = time.monotonic()


def _bare(batch_size: int | None) -> Strategy:
    """confluent-kafka's AdminClient: every batch submitted before waiting on any (each returns futures)."""

    def strategy(bootstrap: str, names: list[str], args: argparse.Namespace, run: Run) -> None:
        admin = AdminClient(_conf(bootstrap, run))
        admin.list_topics(timeout=10)  # connected before the clock starts, as for every strategy
        run.started_at = time.monotonic()
        futures = [
            admin.create_topics(_new_topics(batch, args.partitions), request_timeout=args.timeout)
            for batch in _batches(names, batch_size or len(names))
        ]
        _wait_all(futures, run)

    return strategy


def _kafka_python(bootstrap: str, names: list[str], args: argparse.Namespace, run: Run) -> None:
    """kafka-python 3's KafkaAdminClient: CreateTopics v7 (error 89 on both enforcements), one call, no retry."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap, client_id=run.client_id, request_timeout_ms=int(args.timeout * 1000)
    )
    try:
        admin.describe_cluster()
        run.started_at = time.monotonic()
        topics = {name: {"num_partitions": args.partitions, "replication_factor": 1} for name in names}
        result = admin.create_topics(topics, timeout_ms=int(args.timeout * 1000), raise_errors=False)
        run.finished_at = time.monotonic()
        for topic in result["topics"]:
            if topic["error_code"]:
                run.failed[topic["name"]] = f"error {topic['error_code']}"
    finally:
        admin.close()


def _ours(batch_size: int | None, quota: Callable[[argparse.Namespace], MutationQuota | None]) -> Strategy:
    """ThrottledAdminClient; with a batch size, every batch is submitted before waiting on any."""

    def strategy(bootstrap: str, names: list[str], args: argparse.Namespace, run: Run) -> None:
        with ThrottledAdminClient(
            _conf(bootstrap, run), mutation_quota=quota(args), default_api_timeout_ms=int(args.timeout * 1000)
        ) as admin:
            admin.list_topics(timeout=10)
            run.started_at = time.monotonic()
            futures = [
                admin.create_topics(_new_topics(batch, args.partitions))
                for batch in _batches(names, batch_size or len(names))
            ]
            _wait_all(futures, run)
            run.metrics = admin.metrics()

    return strategy


def _java(batch_size: int | None) -> Strategy:
    """The Java AdminClient with its defaults (benchmarks/java/Reference.java, a JVM of its own): createTopics
    with retryOnQuotaViolation true and default.api.timeout.ms 60 s; batches are all made before waiting on any.
    Its clock starts once it has read the cluster, as every strategy's."""

    def strategy(bootstrap: str, names: list[str], args: argparse.Namespace, run: Run) -> None:
        from _kafka import java_command

        command = java_command("--bootstrap", bootstrap, "--client-id", run.client_id, "--names", ",".join(names))
        command += ["--partitions", str(args.partitions)]
        if batch_size:
            command += ["--batch-size", str(batch_size)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        offset = time.monotonic() - time.time()  # its times are the wall clock's
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        ends = [line for line in lines if line.get("event") == "done"]
        if done.returncode != 0 or not ends:
            raise RuntimeError(f"Reference.java failed ({done.returncode}): {done.stdout[-1000:]}{done.stderr[-2000:]}")
        run.started_at = ends[0]["started_at"] + offset
        run.finished_at = ends[0]["finished_at"] + offset
        for line in lines:
            if "topic" in line and not line["ok"]:
                run.failed[line["topic"]] = line["error"]

    return strategy


def _burst(args: argparse.Namespace) -> float:
    return float(args.burst if args.burst is not None else args.rate)


JAVA_STRATEGIES: dict[str, Strategy] = {
    "Java AdminClient, one call": _java(None),
    "Java AdminClient, batches of 50": _java(50),
}
STRATEGIES: dict[str, Strategy] = {
    **JAVA_STRATEGIES,
    "confluent-kafka, one call": _bare(None),
    "confluent-kafka, batches of 50": _bare(50),
    "kafka-python 3, one call": _kafka_python,
    "ours reactive, one call": _ours(None, lambda args: None),
    "ours reactive, batches of 50": _ours(50, lambda args: None),
    "ours paced, known rate": _ours(None, lambda args: MutationQuota(rate=args.rate, burst=_burst(args))),
    "ours paced, learned rate": _ours(None, lambda args: MutationQuota()),
}


def run_one(name: str, enforcement: str, args: argparse.Namespace) -> Run:
    names = [f"bench.{i:06d}" for i in range(args.topics)]
    run = Run(name, enforcement)
    with QuotaBroker(
        controller_mutation_rate=args.rate,
        quota_window_num=1,
        quota_window_size_s=_burst(args) / args.rate,  # B = 1 x window x R
        enforcement=enforcement,  # type: ignore[arg-type]
    ) as broker:
        STRATEGIES[name](broker.bootstrap_servers, names, args, run)
        time.sleep(0.2)  # let the broker log a request the client gave up on
        run.records = mutation_records(broker.request_log())
        run.held = set(broker.topics())
    return run


def run_one_kafka(
    name: str,
    kafka: KafkaBench,
    args: argparse.Namespace,
    before_read: Callable[[], None] | None = None,
    client_id: str | None = None,
) -> Run:
    """One run on the shared Kafka broker: a client-id quota entity and a topic prefix of its own, both removed
    afterwards (the topics deleted by a client without a quota). ``before_read`` runs after the job, before the
    broker is read (the end of a rolling restart)."""
    client_id = client_id or f"bench-{uuid.uuid4().hex[:8]}"
    run = Run(name, "kafka", client_id=client_id)
    prefix = f"{client_id}."
    kafka.set_quota(run.client_id, args.rate)
    try:
        STRATEGIES[name](kafka.bootstrap_servers, [f"{prefix}{i:06d}" for i in range(args.topics)], args, run)
        if before_read is not None:
            before_read()
        run.records = list(kafka.records(run.client_id))
        run.held = kafka.topics(prefix)
    finally:
        kafka.delete(prefix)
        kafka.set_quota(run.client_id, None)
    return run


QUORUM_STRATEGIES = ("ours paced, known rate", "ours paced, learned rate", "Java AdminClient, one call")
QUORUM_MODES = ("steady", "rolling restart")


def run_one_quorum(name: str, quorum: QuorumBench, args: argparse.Namespace, mode: str) -> Run:
    """One run on the quorum, as :func:`run_one_kafka`; in mode "rolling restart", every node is restarted in turn
    from ``--roll-after`` seconds after a node first logs one of the run's CreateTopics, while the job runs."""
    roller: threading.Thread | None = None
    span: list[float] = []
    client_id = f"bench-{uuid.uuid4().hex[:8]}"
    if mode == "rolling restart":

        def roll() -> None:
            deadline = time.monotonic() + args.timeout
            while not quorum.has_created(client_id) and time.monotonic() < deadline:
                time.sleep(0.05)  # the request log is a file: read it again shortly
            time.sleep(args.roll_after)
            span.append(time.monotonic())
            quorum.roll()
            span.append(time.monotonic())

        roller = threading.Thread(target=roll, name="roll", daemon=True)
        roller.start()
    run = run_one_kafka(
        name, quorum, args, before_read=roller.join if roller is not None else None, client_id=client_id
    )
    run.enforcement = "quorum"
    if len(span) == 2:
        run.rolled = (span[0], span[1])
    return run


def epochs(run: Run) -> list[tuple[int, list[RequestRecord]]]:
    """The run's requests in charge order, cut where the controller that charged them changes: one stretch per
    controller epoch (a failover's successor starts with a full bucket). A request whose controller's line was not
    matched stays in the stretch before it."""
    out: list[tuple[int, list[RequestRecord]]] = []
    for record in run.records:
        controller = record.controller if isinstance(record, KafkaRecord) else 0
        if out and controller == 0:
            controller = out[-1][0]
        if not out or out[-1][0] != controller:
            out.append((controller, []))
        out[-1][1].append(record)
    return out


def t_star(args: argparse.Namespace) -> float:
    mutations: float = args.topics * args.partitions
    return max(0.0, mutations - _burst(args)) / float(args.rate)


def _spread(values: list[float], fmt: str) -> str:
    """The median, and the range when the run was repeated."""
    middle, low, high = (fmt.format(f(values)) for f in (statistics.median, min, max))
    return middle if low == high else f"{middle} ({low}-{high})"


def broker_span(run: Run) -> float | None:
    """The job as the broker saw it: from the first CreateTopics request's arrival to the last answer's leaving."""
    answered = [r.responded_at for r in run.records if r.responded_at is not None]
    if not answered:
        return None
    return max(answered) - min(r.arrived_at for r in run.records)


def row(runs: list[Run], args: argparse.Namespace) -> list[str]:
    """One strategy's repetitions: medians, with the range in parentheses when they differ."""
    floor = t_star(args)
    envelope = args.rate * args.window + _burst(args)
    rejected = [float(sum(code in REFUSED for r in run.records for code in r.errors.values())) for run in runs]
    throttled = [float(sum(r.throttle_time_ms > 0 for r in run.records)) for run in runs]
    longest = [max((max(0.0, r.held_s) for r in run.records), default=0.0) for run in runs]
    waited = [sum(max(0.0, r.held_s) for r in run.records) for run in runs]
    peaks = [peak_in_window(run.records, args.window) for run in runs]
    on_broker = [span / floor for span in map(broker_span, runs) if span is not None] if floor > 0 else []
    return [
        runs[0].strategy,
        _spread([run.seconds for run in runs], "{:.2f}") + " s",
        _spread([run.seconds / floor for run in runs], "{:.2f}") if floor > 0 else "-",
        _spread(on_broker, "{:.2f}") if floor > 0 and on_broker else "-",
        _spread([float(len(run.failed)) for run in runs], "{:.0f}"),
        _spread([float(sum(name in run.held for name in run.failed)) for run in runs], "{:.0f}"),
        _spread([float(len(run.records)) for run in runs], "{:.0f}"),
        _spread(throttled, "{:.0f}"),
        _spread(rejected, "{:.0f}") + f" ({100 * statistics.median(rejected) / args.topics:.0f} %)",
        _spread(longest, "{:.2f}") + " s / " + _spread(waited, "{:.2f}") + " s",
        _spread(peaks, "{:.0f}") + f" ({statistics.median(peaks) / envelope:.2f}x)",
        " ".join(f"{run.load:.1f}" for run in runs),
    ]


def quorum_row(runs: list[Run], args: argparse.Namespace) -> list[str]:
    """:func:`row`, with the controller epochs of each run, the highest peak in W of any one epoch, and when the
    rolling restart ran against the job (seconds on the run's clock)."""
    envelope = args.rate * args.window + _burst(args)
    counts = [float(len(epochs(run))) for run in runs]
    highest = [max((peak_in_window(rs, args.window) for _, rs in epochs(run)), default=0.0) for run in runs]
    median_run = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
    per_epoch = ", ".join(
        f"n{controller} {peak_in_window(rs, args.window):.0f}" for controller, rs in epochs(median_run)
    )
    rolled = [
        f"{run.rolled[0] - run.started_at:.0f}-{run.rolled[1] - run.started_at:.0f} s / {run.seconds:.0f} s"
        for run in runs
        if run.rolled is not None
    ]
    return [
        *row(runs, args),
        _spread(counts, "{:.0f}"),
        _spread(highest, "{:.0f}") + f" ({statistics.median(highest) / envelope:.2f}x); median run: {per_epoch}",
        "; ".join(rolled) or "-",
    ]


def trace(run: Run) -> str:
    """The run's requests as the broker saw them, times in seconds since the first call: ``arrived`` (written),
    ``received`` (charged), ``waited`` (``held_s``: unread in the socket, queued), the controller's deadline."""
    rate = run.metrics.get("mutation-rate")
    lines = [
        f"  {run.strategy}, {run.enforcement}"
        + (f" (client's mutation-rate at the end: {rate:.1f}/s)" if rate and math.isfinite(rate) else "")
    ]
    lines.append("   arrived  received  responded  waited  topics  admitted  89s  throttle  timeout_ms")
    for r in run.records:
        rejected = sum(code in REFUSED for code in r.errors.values())
        responded = f"{r.responded_at - run.started_at:9.3f}" if r.responded_at is not None else "        -"
        lines.append(
            f"  {r.arrived_at - run.started_at:8.3f} {r.received_at - run.started_at:9.3f} {responded} "
            f"{r.held_s:7.3f} {len(r.errors):7d} {r.mutations:9d} {rejected:4d} {r.throttle_time_ms:6d} ms"
            f" {r.timeout_ms if r.timeout_ms is not None else '-':>11}"
        )
    return "\n".join(lines)


COLUMNS = [
    "strategy",
    "completion",
    "completion / T*",
    "on the broker / T*",
    "topics failed",
    "failed but on broker",
    "CreateTopics requests",
    "throttled responses",
    "entries rejected (89)",
    "wait at the broker: longest / sum",
    "peak admitted in W (/ R·W+B)",
    "load average per run",
]
QUORUM_COLUMNS = [
    *COLUMNS,
    "controller epochs",
    "peak in W per controller epoch, highest (/ R·W+B)",
    "rolling restart / job",
]


def plot(runs: list[Run], args: argparse.Namespace, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    enforcements = [e for e in ENFORCEMENTS if any(run.enforcement == e for run in runs)]
    width = max(11.0, 6.5 * len(enforcements))  # one panel (Kafka) still needs room for the legend and title
    fig, axes = plt.subplots(1, len(enforcements), figsize=(width, 5.6), sharey=True, squeeze=False)
    total = args.topics * args.partitions
    horizon = max((run.seconds for run in runs), default=1.0)
    horizon = min(horizon, 3 * max(t_star(args), 1.0))  # a stuck strategy must not squash the others
    for ax, enforcement in zip(axes[0], enforcements, strict=True):
        ts = [0.0, horizon]
        ax.plot(ts, [_burst(args) + args.rate * t for t in ts], "k--", linewidth=1.5, label="quota envelope B + R·t")
        for run in (r for r in runs if r.enforcement == enforcement):
            xs, ys, admitted = [0.0], [0.0], 0
            for record in run.records:
                admitted += record.mutations
                xs.append(record.received_at - run.started_at)
                ys.append(admitted)
            xs.append(max(xs[-1], run.seconds))
            ys.append(admitted)
            ax.step(xs, ys, where="post", linewidth=1.6, label=run.strategy)
        ax.axhline(total, color="grey", linewidth=0.8, linestyle=":")
        # Lines that rise at t = 0 and stop there overlap on the axis: name them.
        instant = [
            f"{run.strategy}: {sum(r.mutations for r in run.records)}"
            for run in runs
            if run.enforcement == enforcement
            and run.records
            and run.records[-1].received_at - run.started_at < 0.05 * horizon
        ]
        if instant:
            ax.text(
                0.03 * horizon,
                total * 1.1,
                "all at t ≈ 0 (admitted):\n" + "\n".join(instant),
                fontsize=8,
                verticalalignment="top",
                bbox={"facecolor": "white", "edgecolor": "grey", "alpha": 0.9},
            )
        ax.set_xlim(0, horizon)
        ax.set_ylim(0, total * 1.15)
        ax.set_title("Apache Kafka 4.4.0" if enforcement == "kafka" else f"enforcement={enforcement}")
        ax.set_xlabel("seconds since the first create_topics call")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("mutations admitted by the broker (cumulative)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.suptitle(
        f"{args.topics} topics x {args.partitions} partitions, R = {args.rate:g}/s, B = {_burst(args):g}: "
        f"mutations admitted by the broker against the quota envelope"
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rate", type=float, default=400.0, help="controller_mutation_rate R (mutations/s)")
    parser.add_argument("--burst", type=float, default=None, help="bucket size B (default: R, one 1-s window)")
    parser.add_argument("--window", type=float, default=1.0, help="W for the peak, seconds")
    parser.add_argument("--timeout", type=float, default=120.0, help="each client's timeout, seconds")
    parser.add_argument("--enforcement", choices=ENFORCEMENTS, action="append", help="default: strict and by-version")
    parser.add_argument("--strategy", choices=list(STRATEGIES), action="append", help="default: all")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of admitted mutations over time")
    parser.add_argument("--trace", action="store_true", help="print every CreateTopics request of every run")
    parser.add_argument("--repeat", type=int, default=1, help="runs per strategy: medians (min-max); plot: median run")
    parser.add_argument(
        "--broker",
        choices=("quotabroker", "kafka", "quorum"),
        default="quotabroker",
        help="QuotaBroker (default), Apache Kafka 4.4.0 itself (`make kafka` first), or a quorum of three Kafka nodes",
    )
    parser.add_argument(
        "--mode", choices=QUORUM_MODES, action="append", help="on the quorum: steady, rolling restart (default both)"
    )
    parser.add_argument(
        "--roll-after", type=float, default=1.0, help="on the quorum: seconds from the job's first request to the roll"
    )
    args = parser.parse_args()
    if args.broker == "quorum":
        _quorum_defaults(parser, args)
    burst = _burst(args)
    if args.broker != "quotabroker" and args.enforcement:
        parser.error("--enforcement sets QuotaBroker's rules; Apache Kafka applies its own (by request version)")
    if args.broker != "quotabroker" and (burst / args.rate != int(burst / args.rate) or burst < args.rate):
        parser.error("on Kafka, B = controller.quota.window.num x 1 s x R: --burst must be a whole multiple of --rate")
    print(
        f"{args.topics} topics x {args.partitions} partitions = {args.topics * args.partitions} mutations; "
        f"R = {args.rate:g}/s, B = {burst:g}; T* = {t_star(args):.2f} s; "
        f"W = {args.window:g} s, R·W + B = {args.rate * args.window + burst:g}\n",
        flush=True,
    )
    runs: list[Run] = []
    if args.broker == "quorum":
        with QuorumBench(window_num=int(burst / args.rate)) as quorum:
            print(f"A Kafka 4.4.0 quorum of 3 started in {quorum.start_seconds:.1f} s; load {load_average():.1f}\n")
            names = args.strategy or list(QUORUM_STRATEGIES)
            for mode in args.mode or QUORUM_MODES:
                one = functools.partial(run_one_quorum, quorum=quorum, args=args, mode=mode)
                runs += _section(f"quorum, {mode}", names, one, args)
    elif args.broker == "kafka":
        with KafkaBench(window_num=int(burst / args.rate)) as kafka:
            print(f"Apache Kafka 4.4.0 started in {kafka.start_seconds:.1f} s; load average {load_average():.1f}\n")
            names = args.strategy or list(STRATEGIES)
            runs += _section("kafka", names, lambda name: run_one_kafka(name, kafka, args), args)
    else:
        names = args.strategy or list(STRATEGIES)
        if not args.strategy and not java_available():
            names = [name for name in names if name not in JAVA_STRATEGIES]
            print("(no Java AdminClient rows: its jars are not fetched; run `make kafka`)\n", flush=True)
        for enforcement in args.enforcement or DEFAULT_ENFORCEMENTS:
            runs += _section(enforcement, names, functools.partial(run_one, enforcement=enforcement, args=args), args)
    if args.plot:
        plot(runs, args, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)


def _quorum_defaults(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The quorum's job, unless given: 1,000 topics x 1 partition at R = B = 40/s (T* = 24 s), long enough for a
    rolling restart (about 20 s on a quiet machine) to run inside it."""
    defaults = {"--topics": ("topics", 1000), "--partitions": ("partitions", 1), "--rate": ("rate", 40.0)}
    for option, (attribute, value) in defaults.items():
        if option not in sys.argv:
            setattr(args, attribute, value)
    if args.plot:
        parser.error("--plot draws one line per strategy and enforcement: not for the quorum")


def _section(enforcement: str, names: list[str], run: Callable[[str], Run], args: argparse.Namespace) -> list[Run]:
    """One table: every strategy ``args.repeat`` times; returns each strategy's median run (for the plot)."""
    quorum = enforcement.startswith("quorum")
    title = {"kafka": "Apache Kafka 4.4.0"}.get(enforcement, f"enforcement={enforcement}")
    title = f"Apache Kafka 4.4.0, {enforcement}" if quorum else title
    columns, make_row = (QUORUM_COLUMNS, quorum_row) if quorum else (COLUMNS, row)
    print(f"### {title}\n")
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns), flush=True)
    medians = []
    for name in names:
        repeats = [run(name) for _ in range(args.repeat)]
        medians.append(sorted(repeats, key=lambda r: r.seconds)[len(repeats) // 2])
        print(markdown_table(columns, [make_row(repeats, args)]).splitlines()[-1], flush=True)
        if args.trace:
            print("\n".join(trace(r) for r in repeats), flush=True)
    print()
    return medians


if __name__ == "__main__":
    main()
