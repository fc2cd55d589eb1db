"""Apache Kafka 4.4 for the benchmarks: one broker, what it logged about each request, and a proxy's timestamps.

:class:`KafkaBench` starts a single-node KRaft broker (tests/real_kafka/broker.py, from the jars `make kafka`
fetched) with Kafka's request log on (``kafka.request.logger`` at DEBUG: each request and response, its queue
time and throttle), and puts :mod:`_proxy` in front of it: the broker advertises the proxy's port, so every
client connection goes through it and the proxy notes when each request was written. :meth:`records` joins the
three into :class:`KafkaRecord` (a ``RequestRecord``, as QuotaBroker's request log gives them):

- ``arrived_at``: when the client wrote the request (the proxy saw its last byte);
- ``taken_up_at``: when a request handler of the broker took it up (read from the socket, then queued):
  ``held_s`` is the time in between, the wait at the broker before it was read, a muted connection included;
- ``received_at``: when the controller took it up, after forwarding (it charges the quota then);
- mutations admitted (the partitions of each topic answered without error), ``throttle_time_ms``, per-topic
  error codes, the controller deadline ``timeout_ms``.

Times are ``time.monotonic()`` seconds, like QuotaBroker's; the broker's log and the proxy use the wall clock,
which is converted. Benchmarks keep their runs apart on one broker by a client id (the quota entity) and a topic
prefix each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from throttled_admin.testing import RequestRecord

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.real_kafka: the broker fixture, used here outside pytest

from tests.real_kafka import broker as real_broker  # noqa: E402
from tests.real_kafka.broker import KAFKA_HOME, BrokerSpec, KafkaCluster  # noqa: E402

CREATE_TOPICS = 19
REFERENCE = REPO / "benchmarks" / "java" / "Reference.java"


def java_available() -> bool:
    """Whether `make kafka` has fetched the jars the Java reference client runs from."""
    try:
        real_broker.classpath()
    except real_broker.KafkaNotFetchedError:
        return False
    return shutil.which("java") is not None


def java_command(*args: str) -> list[str]:
    """The Java reference client (benchmarks/java/Reference.java) as a single-file source launch."""
    real_broker.classpath()  # a clear error naming `make kafka` when the jars are not there
    return ["java", "-cp", f"{KAFKA_HOME / 'libs'}/*", str(REFERENCE), *args]


@dataclass
class KafkaRecord(RequestRecord):
    taken_up_at: float = 0.0
    port: int = 0  # the client's side of the connection (the proxy's port towards the broker)
    controller: int = 0  # the node whose controller took the request up (0: not seen)

    @property
    def held_s(self) -> float:
        """How long the request waited at the broker before a request handler took it up: unread in the
        socket (behind another request, or in a connection muted by a throttle), then in the request queue."""
        return self.taken_up_at - self.arrived_at


def _wall(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


class KafkaBench:
    """One broker (``controller.quota.window.num`` x ``window_size_s``: B = num x size x R) behind the proxy."""

    def __init__(self, *, window_num: int, window_size_s: int = 1, heap: str = "512m") -> None:
        self.window_num = window_num
        self.window_size_s = window_size_s
        self.heap = heap
        self._offset = time.monotonic() - time.time()
        self._dir = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
        self._log_pos = 0
        self._proxy_pos = 0
        # (client id, correlation id, topics) -> parsed lines, by listener side
        self._broker: dict[tuple[str, int, tuple[str, ...]], list[dict[str, Any]]] = defaultdict(list)
        self._controller: dict[tuple[str, int, tuple[str, ...]], list[dict[str, Any]]] = defaultdict(list)
        self._written: dict[tuple[int, int], list[float]] = defaultdict(list)  # (proxy port, corr) -> written at
        self._requests_seen: dict[str, list[tuple[int, int]]] = defaultdict(list)  # client id -> CreateTopics sent
        self._proxy: subprocess.Popen[str] | None = None
        self.cluster: KafkaCluster | None = None
        self.bootstrap_servers = ""
        self.start_seconds = 0.0

    # ------------------------------------------------------------------------------------------ lifecycle

    def __enter__(self) -> KafkaBench:
        root = self._dir / "cluster"
        proxy_script = Path(__file__).with_name("_proxy.py")
        target, log = root / "node-1" / "server.properties", self._dir / "proxy.log"
        self._proxy = subprocess.Popen(
            [sys.executable, str(proxy_script), "--port", "0", "--target-file", str(target), "--log", str(log)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proxy.stdout is not None
        line = self._proxy.stdout.readline()
        if not line.startswith("listening on "):
            self.__exit__()
            raise RuntimeError(f"the proxy did not start: {line!r}")
        port = int(line.split()[-1])
        extra = (
            ("advertised.listeners", f"PLAINTEXT://127.0.0.1:{port}"),  # every client through the proxy
            ("log.segment.delete.delay.ms", "1000"),  # deleted topics' files go soon: runs add up
        )
        spec = BrokerSpec(window_num=self.window_num, window_size_s=self.window_size_s, request_log=True, extra=extra)
        real_broker.HEAP_MAX = self.heap  # read by the fixture when it launches the JVM
        try:
            self.cluster = KafkaCluster.start(spec, root)
        except BaseException:
            self.__exit__()
            raise
        self.start_seconds = self.cluster.start_seconds
        self.bootstrap_servers = f"127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        if self._proxy is not None:
            self._proxy.terminate()
            self._proxy.wait()
            if self._proxy.stdout is not None:
                self._proxy.stdout.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    # --------------------------------------------------------------------------------------------- admin

    def set_quota(self, client_id: str, rate: float | None) -> None:
        assert self.cluster is not None
        self.cluster.set_quota(client_id=client_id, controller_mutation_rate=rate)

    def _observer(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap_servers, "client.id": "bench-observer", "log_level": 0})

    def topics(self, prefix: str) -> set[str]:
        """The broker's topics whose names start with ``prefix``."""
        return {name for name in self._observer().list_topics(timeout=30).topics if name.startswith(prefix)}

    def delete(self, prefix: str) -> None:
        """Delete every topic starting with ``prefix`` (no quota for the observer) and wait until none is listed."""
        admin = self._observer()
        deadline = time.monotonic() + 120
        while names := [n for n in admin.list_topics(timeout=30).topics if n.startswith(prefix)]:
            for future in admin.delete_topics(names, operation_timeout=60, request_timeout=90).values():
                future.exception()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(names)} topics of {prefix} still listed after 120 s")

    # -------------------------------------------------------------------------------------- request log

    def records(self, client_id: str, settle_s: float = 10.0) -> list[KafkaRecord]:
        """The CreateTopics requests of ``client_id``, by the time the controller took them up. Waits up to
        ``settle_s`` for the broker to log every request the proxy saw (one a client gave up on included)."""
        deadline = time.monotonic() + settle_s
        while True:
            self._read_proxy()
            self._read_log()
            records = self._join(client_id)
            if len(records) >= len(self._requests_seen[client_id]) or time.monotonic() > deadline:
                return sorted(records, key=lambda r: r.received_at)
            time.sleep(0.1)

    def requests_sent(self, client_id: str) -> list[tuple[int, int]]:
        """(connection port, correlation id) of each CreateTopics request ``client_id`` wrote, as the proxy saw."""
        self._read_proxy()
        return list(self._requests_seen[client_id])

    def _read_proxy(self) -> None:
        path = self._dir / "proxy.log"
        if not path.exists():
            return
        with path.open() as f:
            f.seek(self._proxy_pos)
            for line in f:
                if not line.endswith("\n"):
                    break
                self._proxy_pos += len(line.encode())
                entry = json.loads(line)
                if entry["kind"] != "request":
                    continue
                self._written[(entry["port"], entry["corr"])].append(entry["t"] + self._offset)
                if entry["api"] == CREATE_TOPICS:
                    self._requests_seen[entry["client_id"]].append((entry["port"], entry["corr"]))

    def _read_log(self) -> None:
        assert self.cluster is not None
        path = self.cluster.log_path(name="request.log")
        if not path.exists():
            return
        with path.open("rb") as f:
            f.seek(self._log_pos)
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                self._log_pos += len(raw)
                stamp, _, rest = raw.decode(errors="replace").partition("] Completed request:")
                if not rest or '"requestApiKey":19,' not in rest:
                    continue
                entry = json.loads(rest)
                entry["logged_at"] = _wall(stamp.lstrip("[")) + self._offset
                header = entry["requestHeader"]
                names = tuple(t["name"] for t in entry["request"]["topics"])
                key = (header["clientId"], header["correlationId"], names)
                (self._controller if entry.get("isForwarded") else self._broker)[key].append(entry)

    def _join(self, client_id: str) -> list[KafkaRecord]:
        out = []
        for key, entries in self._broker.items():
            if key[0] != client_id:
                continue
            controller = self._controller.get(key, [])
            for entry in entries:
                out.append(self._record(entry, controller))
        return out

    def _record(self, entry: dict[str, Any], controller: list[dict[str, Any]]) -> KafkaRecord:
        def started(e: dict[str, Any]) -> float:
            return float(e["logged_at"]) - float(e["totalTimeMs"]) / 1000

        read_at = started(entry)
        taken_up_at = read_at + entry["requestQueueTimeMs"] / 1000
        # The controller's line of the same request: the one that started after the broker read it, first.
        forwarded = [c for c in controller if started(c) >= read_at - 0.002]
        first = min(forwarded, key=lambda c: started(c) + c["requestQueueTimeMs"] / 1000, default=None)
        charged_at = started(first) + first["requestQueueTimeMs"] / 1000 if first is not None else taken_up_at
        header = entry["requestHeader"]
        port = int(entry["connection"].split("-")[1].rsplit(":", 1)[1])
        written = [t for t in self._written.get((port, header["correlationId"]), []) if t <= read_at + 0.002]
        request, response = entry["request"], entry["response"]
        wanted = {t["name"]: t for t in request["topics"]}
        errors, mutations = {}, 0
        for result in response.get("topics", []):
            errors[result["name"]] = result["errorCode"]
            if result["errorCode"] == 0 and not request.get("validateOnly"):
                mutations += _partitions(result, wanted.get(result["name"], {}))
        return KafkaRecord(
            node_id=int(entry.get("node", 1)),
            api_key=CREATE_TOPICS,
            api_version=header["requestApiVersion"],
            correlation_id=header["correlationId"],
            client_id=header["clientId"],
            principal=entry.get("principal", ""),
            arrived_at=max(written) if written else read_at,
            received_at=charged_at,
            responded_at=float(entry["logged_at"]),
            mutations=mutations,
            throttle_time_ms=int(response.get("throttleTimeMs", 0)),
            errors=errors,
            timeout_ms=request.get("timeoutMs"),
            validate_only=request.get("validateOnly"),
            taken_up_at=taken_up_at,
            port=port,
            controller=int(first.get("node", 1)) if first is not None else 0,
        )


def _partitions(result: dict[str, Any], request: dict[str, Any]) -> int:
    """A created topic's partitions: the response's count (v5+), else the request's, else its assignments."""
    for count in (result.get("numPartitions", -1), request.get("numPartitions", -1)):
        if count and count > 0:
            return int(count)
    return len(request.get("assignments") or []) or 1  # -1 and no assignments: num.partitions, 1 here


@contextmanager
def plain_kafka(heap: str = "512m", request_log: bool = False) -> Iterator[KafkaCluster]:
    """A single-node Kafka 4.4 broker with no quota and no proxy (for timing clients), and no request log unless
    asked (``forwarded_creates`` reads it), stopped and removed at the end."""
    root = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    real_broker.HEAP_MAX = heap
    spec = BrokerSpec(request_log=request_log, extra=(("log.segment.delete.delay.ms", "1000"),))
    cluster = KafkaCluster.start(spec, root / "cluster")
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def forwarded_creates(cluster: KafkaCluster, client_id: str) -> list[tuple[float, float]]:
    """The CreateTopics of ``client_id`` as the controller handled them, forwarded by the broker (a combined node's
    request log names both sides; ``plain_kafka(request_log=True)``): (start, end) in wall-clock seconds, in order."""
    spans = []
    with cluster.log_path(name="request.log").open("rb") as log:
        for raw in log:
            stamp, _, rest = raw.decode(errors="replace").partition("] Completed request:")
            if not rest or '"requestApiKey":19,' not in rest:
                continue
            entry = json.loads(rest)
            if entry.get("isForwarded") and entry["requestHeader"]["clientId"] == client_id:
                end = _wall(stamp.lstrip("["))
                spans.append((end - entry["totalTimeMs"] / 1000, end))
    return sorted(spans)


def load_average() -> float:
    return os.getloadavg()[0]


class QuorumBench(KafkaBench):
    """Three combined KRaft nodes (a quorum of three voters), Kafka's request log on in each, and no proxy: a
    request's ``arrived_at`` is when its broker read it. Each record also names the node whose controller took it up
    (``KafkaRecord.controller``): the active controller charges the quota, so each controller epoch has a bucket of
    its own. :meth:`roll` restarts every node in turn (SIGTERM, as a rolling upgrade does it)."""

    def __enter__(self) -> QuorumBench:
        spec = BrokerSpec(
            window_num=self.window_num,
            window_size_s=self.window_size_s,
            request_log=True,
            quorum=3,
            extra=(("log.segment.delete.delay.ms", "1000"),),
        )
        real_broker.HEAP_MAX = self.heap
        self._positions: dict[int, int] = {}
        try:
            self.cluster = KafkaCluster.start(spec, self._dir / "cluster")
        except BaseException:
            self.__exit__()
            raise
        self.start_seconds = self.cluster.start_seconds
        self.bootstrap_servers = self.cluster.bootstrap_servers
        return self

    def set_quota(self, client_id: str, rate: float | None) -> None:
        """As on one node, then until every node describes it: the active controller, which charges the quota, may
        have replayed the record after the node first asked (a learned run's first three requests, 92 mutations at
        R = B = 40, drew no throttle: the quota was not yet in force there)."""
        super().set_quota(client_id, rate)
        assert self.cluster is not None
        deadline = time.monotonic() + 30
        for node in self.cluster.brokers:
            while self.cluster.describe_quota(client_id=client_id, port=node.plaintext_port) != rate:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"quota of client-id={client_id} not described by node {node.node_id} in 30 s")
                time.sleep(0.02)

    def roll(self) -> None:
        assert self.cluster is not None
        self.cluster.roll()

    def has_created(self, client_id: str) -> bool:
        """Whether a node has logged a CreateTopics of ``client_id`` (the job has begun on the broker's side)."""
        self._read_log()
        return any(key[0] == client_id for key in self._broker)

    def topics(self, prefix: str) -> set[str]:
        """Every change committed so far, read from every node once it has replayed it (the fixture's barrier)."""
        assert self.cluster is not None
        return set(self.cluster.topics(prefix))

    def records(self, client_id: str, settle_s: float = 2.0) -> list[KafkaRecord]:
        """The CreateTopics requests of ``client_id`` from every node's request log, after ``settle_s`` for the
        last lines to be written (no proxy here counts the requests sent)."""
        time.sleep(settle_s)
        self._read_log()
        return sorted(self._join(client_id), key=lambda r: r.received_at)

    def _read_log(self) -> None:
        assert self.cluster is not None
        for node in self.cluster.nodes:
            path = self.cluster.log_path(node, "request.log")
            if not path.exists():
                continue
            position = self._positions.get(node.node_id, 0)
            with path.open("rb") as f:
                f.seek(position)
                for raw in f:
                    if not raw.endswith(b"\n"):
                        break
                    position += len(raw)
                    stamp, _, rest = raw.decode(errors="replace").partition("] Completed request:")
                    if not rest or '"requestApiKey":19,' not in rest:
                        continue
                    entry = json.loads(rest)
                    entry["logged_at"] = _wall(stamp.lstrip("[")) + self._offset
                    entry["node"] = node.node_id
                    header = entry["requestHeader"]
                    names = tuple(t["name"] for t in entry["request"]["topics"])
                    key = (header["clientId"], header["correlationId"], names)
                    (self._controller if entry.get("isForwarded") else self._broker)[key].append(entry)
            self._positions[node.node_id] = position
