"""How long a stopping combined KRaft node keeps its controller after its broker listener closed (issue 40's
forwarding hedge, ``_engine/slot.FORWARD_GRACE_S``).

A three-node Kafka 4.4 quorum (tests/real_kafka/broker.py, the jars ``make kafka`` fetched); ``--rounds`` times, the
active controller is stopped as a rolling restart stops it (SIGTERM) and started again. From its own log: when its
broker listener stopped processing requests (the connection loss librdkafka reports) and when its controller
resigned. A request a client sends in between may still be forwarded to that controller, which may apply it and
resign before it answers; its broker then re-sends it to the next controller, which answers "already exists".

    .venv/bin/python benchmarks/resign_gap.py --rounds 6
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from datetime import datetime
from pathlib import Path

from _kafka import load_average

from tests.real_kafka.broker import BrokerSpec, KafkaCluster

_LISTENER_STOPPED = "listenerType=BROKER"  # with "Stopping socket server request processors"
_RESIGNED = "Completed transition to ResignedState"


def _at(line: str) -> float:
    """A Kafka log line's timestamp ("[2026-11-30 21:48:54,052] ..."), in seconds."""
    return datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def gap_s(log: str) -> float:
    """The last stop's gap in a node's server.log: its broker listener stopping to its controller resigning."""
    stopped = resigned = None
    for line in log.splitlines():
        if _LISTENER_STOPPED in line and "Stopping socket server request processors" in line:
            stopped, resigned = _at(line), None
        elif _RESIGNED in line and stopped is not None:
            resigned = _at(line)
    if stopped is None or resigned is None:
        raise RuntimeError("no controller resignation after its broker listener stopped: not the leader by then?")
    return resigned - stopped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    cluster = KafkaCluster.start(BrokerSpec(quorum=3), Path(tempfile.mkdtemp(prefix="resign-gap-")))
    gaps = []
    try:
        for _ in range(args.rounds):
            node = cluster.node(cluster.active_controller())
            cluster.stop_node(node)
            try:
                gaps.append(gap_s(cluster.log_path(node).read_text()))
            except RuntimeError as exc:  # a round lost, not the run
                print(f"node {node.node_id}: not measured ({exc})", flush=True)
            else:
                print(f"node {node.node_id}: {gaps[-1] * 1000:.0f} ms (load {load_average():.1f})", flush=True)
            cluster.start_node(node)
    finally:
        cluster.stop()
    if gaps:
        low, high = min(gaps) * 1000, max(gaps) * 1000
        print(f"{len(gaps)} measured: median {statistics.median(gaps) * 1000:.0f} ms, range {low:.0f}-{high:.0f} ms")


if __name__ == "__main__":
    main()
