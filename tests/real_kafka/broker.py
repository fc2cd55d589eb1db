"""Apache Kafka 4.4 itself, started from Maven Central's jars (``make kafka`` fetches them into ``.kafka/``).

A :class:`KafkaCluster` is one KRaft cluster on 127.0.0.1 and free ports: a single combined node (broker and
controller in one JVM), or one controller and N brokers. Every broker has a PLAINTEXT listener and a
SASL_PLAINTEXT listener with PLAIN and SCRAM-SHA-256/512 users (:data:`USERS`). Each JVM gets its own temporary
log directory and a heap of at most 512 MiB, and is stopped by :meth:`KafkaCluster.stop`. A cluster is ready when
it answers real requests (a validate-only CreateTopics that needs every broker registered, then ApiVersions on
every broker's listeners), not after a sleep.

A quorum (``BrokerSpec(quorum=3)``) is three combined nodes, each a broker and one of three controller voters, as
production runs KRaft: the tests that use it stop, kill -9 and restart its nodes on the same ports and data
(:meth:`KafkaCluster.stop_node`, :meth:`KafkaCluster.start_node`, :meth:`KafkaCluster.restart_node`), roll them in
turn (:meth:`KafkaCluster.roll`), and ask which node is the active controller (:meth:`KafkaCluster.active_controller`,
DescribeQuorum). Such a cluster is a test module's own, never shared: each destructive test leaves all its nodes up.

What the tests may change, by :class:`BrokerSpec`: the quota windows (static broker configs, so each costs a JVM),
``num.partitions``, a slow controller (``SlowCreatePolicy``, tests/real_kafka/java/, which sleeps on the
controller's thread for topics named ``slow-<ms>-...``, with session timeouts raised so that a blocked controller
does not fence its broker), and Kafka's request log (``kafka.request.logger`` at DEBUG: each request's queue and
throttle times, for the benchmarks).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.support import Conf

REPO = Path(__file__).resolve().parents[2]
KAFKA_VERSION = "4.4.0"
KAFKA_HOME = Path(os.environ.get("THROTTLED_ADMIN_KAFKA_HOME", REPO / ".kafka" / KAFKA_VERSION))
HEAP_MAX = "512m"
# PLAIN and SCRAM users of every SASL_PLAINTEXT listener. Test credentials only: nothing secret.
USERS: Mapping[str, str] = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
START_TIMEOUT_S = 120.0
# The pid of the process whose death ends every JVM (share.py sets it to the run's main process; unset: the
# process that starts the cluster).
OWNER_ENV = "THROTTLED_ADMIN_KAFKA_OWNER"


class KafkaNotFetchedError(RuntimeError):
    """The jars are not in .kafka/: a clear error naming the command, never a skip."""


def classpath() -> str:
    """The broker's and tools' classpath, or an error naming what to run."""
    libs = KAFKA_HOME / "libs"
    if not (KAFKA_HOME / ".fetched").is_file() or not any(libs.glob("kafka_2.13-*.jar")):
        raise KafkaNotFetchedError(
            f"Apache Kafka {KAFKA_VERSION}'s jars are not in {KAFKA_HOME}: run `make kafka` "
            "(it needs Java 17, javac and Maven, and reaches Maven Central once)"
        )
    return f"{libs}/*{os.pathsep}{KAFKA_HOME / 'classes'}"


# The static broker configs of every set-up that topics inherit through their synonyms: a QuotaBroker standing in
# for the fixture's Kafka is given them too. Each partition maps two index files: small ones keep a machine's map
# count (vm.max_map_count) for many partitions.
TOPIC_DEFAULTS = {"log.index.size.max.bytes": "65536"}


# Kafka syncs every new partition's files to disk (its partition.metadata, its leader-epoch checkpoint): on CI's
# loaded disk, 5,000 new partitions kept a broker's Metadata more than 60 s behind its controller (the shared
# broker's barrier and quota reads timed out, CI of cd8e2f3). In memory those syncs cost nothing: 5,000 partitions
# took 9 s there against 40 s on this disk, and a file's clusters held 72 MB at most.
MEMORY_ROOT = Path("/dev/shm")
MEMORY_ROOT_MIN_FREE = 2 << 30


def scratch_root() -> Path | None:
    """The folder to make clusters' folders in: /dev/shm when it is writable with 2 GiB free (a container's
    64 MiB one is not), else None (the temp folder)."""
    try:
        free = os.statvfs(MEMORY_ROOT)
    except OSError:
        return None
    if not os.access(MEMORY_ROOT, os.W_OK) or free.f_bavail * free.f_frsize < MEMORY_ROOT_MIN_FREE:
        return None
    return MEMORY_ROOT


@contextlib.contextmanager
def running_cluster(spec: BrokerSpec, prefix: str) -> Iterator[KafkaCluster]:
    """A cluster of ``spec`` in a new folder under ``scratch_root()``, stopped afterwards and its folder removed with
    everything in it (even when the cluster never started)."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_root()))
    try:
        cluster = KafkaCluster.start(spec, root)
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def barrier_prefix() -> str:
    """The names of this process's barrier topics (``KafkaCluster.topics``) start with this: a pytest worker tells
    its own from those of reads under way on other workers."""
    return f"barrier-{os.getpid()}-"


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1: each socket held until all are bound (a port freed and asked for
    again came back twice once, and Kafka refused its two listeners on one port)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]


@dataclass(frozen=True)
class BrokerSpec:
    """What makes one broker set-up differ from another (each different spec is a JVM of its own)."""

    window_num: int = 11
    window_size_s: int = 1
    num_partitions: int = 1
    slow_controller: bool = False
    request_log: bool = False
    brokers: int = 1  # 1: one combined node; N > 1: one controller and N brokers
    quorum: int = 1  # N > 1: N combined broker+controller nodes, N controller voters (``brokers`` must be 1)
    extra: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.quorum > 1 and self.brokers != 1:
            raise ValueError("a quorum is of combined nodes: give quorum or brokers, not both")

    @property
    def key(self) -> str:
        parts = [f"w{self.window_num}x{self.window_size_s}", f"p{self.num_partitions}", f"b{self.brokers}"]
        if self.slow_controller:
            parts.append("slow")
        if self.request_log:
            parts.append("reqlog")
        if self.quorum > 1:
            parts.append(f"q{self.quorum}")
        parts += [f"{k}={v}" for k, v in self.extra]
        return "-".join(parts).replace("/", "_").replace(".", "_")


@dataclass
class Node:
    node_id: int
    roles: str  # "broker,controller", "broker" or "controller"
    directory: str
    plaintext_port: int = 0
    sasl_port: int = 0
    controller_port: int = 0
    pid: int = 0
    # The JVM's start time (/proc/PID/stat, field 22): tells it from a later process given the same pid (pid_max
    # can be 32768). A node without one is never signalled.
    started: int = 0

    @property
    def process(self) -> tuple[int, int]:
        return (self.pid, self.started)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles


@dataclass
class KafkaCluster:
    spec: BrokerSpec
    root: str
    cluster_id: str
    nodes: list[Node] = field(default_factory=list)
    start_seconds: float = 0.0
    _procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False, compare=False)

    # ----------------------------------------------------------------------------------------- addresses

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.is_broker]

    @property
    def bootstrap_servers(self) -> str:
        """PLAINTEXT bootstrap of every broker."""
        return ",".join(f"127.0.0.1:{n.plaintext_port}" for n in self.brokers)

    @property
    def sasl_bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.sasl_port}" for n in self.brokers)

    def sasl_conf(self, user: str = "alice", mechanism: str = "PLAIN") -> Conf:
        """A confluent-kafka conf for the SASL_PLAINTEXT listener as ``user``."""
        return {
            "bootstrap.servers": self.sasl_bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": USERS[user],
        }

    def log_path(self, node: Node | None = None, name: str = "server.log") -> Path:
        return Path((node or self.nodes[0]).directory) / name

    # ---------------------------------------------------------------------------------------- lifecycle

    @classmethod
    def start(cls, spec: BrokerSpec, root: Path) -> KafkaCluster:
        """Format and start the cluster under ``root`` and return once it answers a CreateTopics."""
        cp = classpath()
        t0 = time.monotonic()
        root.mkdir(parents=True, exist_ok=True)
        cluster = cls(spec=spec, root=str(root), cluster_id=_cluster_id())
        if spec.quorum > 1:
            cluster.nodes = [Node(i + 1, "broker,controller", str(root / f"node-{i + 1}")) for i in range(spec.quorum)]
        elif spec.brokers == 1:
            cluster.nodes = [Node(1, "broker,controller", str(root / "node-1"))]
        else:
            cluster.nodes = [Node(1, "controller", str(root / "node-1"))] + [
                Node(i + 2, "broker", str(root / f"node-{i + 2}")) for i in range(spec.brokers)
            ]
        for attempt in range(3):  # a free port can be taken between choosing it and the JVM binding it
            cluster._choose_ports()
            try:
                for node in cluster.nodes:
                    cluster._format(cp, node)
                for node in cluster.nodes:
                    cluster._launch(cp, node)
                cluster._wait_ready()
                break
            except _PortTaken:
                cluster.stop()
                if attempt == 2:
                    raise
            except BaseException:
                # Not ready in time, a node that exited, Ctrl-C: the cluster is not recorded yet, so nothing at the
                # run's end would stop the JVMs already launched (in sessions of their own, out of Ctrl-C's reach).
                cluster.stop()
                raise
        cluster.start_seconds = time.monotonic() - t0
        return cluster

    def stop(self) -> None:
        """SIGTERM every JVM, SIGKILL what is still up after 10 s, and remove the log directories."""
        stop_pids([n.process for n in self.nodes if n.pid])
        for proc in self._procs.values():
            proc.wait()
        self._procs.clear()
        for node in self.nodes:
            node.pid = 0
        shutil.rmtree(self.root, ignore_errors=True)

    def pause(self, node: Node) -> None:
        """SIGSTOP one JVM (a broker that stops replaying the metadata log: metadata lag). Returns once every
        thread of it has stopped: the signal is only queued when ``kill`` returns, and a network thread still
        running for a moment would read what the test writes next."""
        os.kill(node.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not _all_threads_stopped(node.pid):
            if time.monotonic() > deadline:
                raise AssertionError(f"node {node.node_id} (pid {node.pid}) did not stop within 10 s of SIGSTOP")
            time.sleep(0.005)

    def resume(self, node: Node) -> None:
        os.kill(node.pid, signal.SIGCONT)

    def alive(self) -> bool:
        return all(n.pid and _pid_alive(*n.process) for n in self.nodes)

    # ------------------------------------------------------------------------------ one node at a time

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    def stop_node(self, node: Node, *, kill: bool = False) -> None:
        """Stop one JVM and keep its data: SIGTERM (a controlled shutdown, as a rolling upgrade does it; SIGKILL
        after 30 s) or, with ``kill``, SIGKILL at once (kill -9: a crash). Returns once the process is gone."""
        if not node.pid:
            return
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.pid, signal.SIGKILL)
        stop_pids([node.process], grace_s=0.0 if kill else 30.0)
        proc = self._procs.pop(node.node_id, None)
        if proc is not None:
            proc.wait()
        node.pid = node.started = 0

    def start_node(self, node: Node) -> None:
        """Start a stopped node again on its ports and data, and return once the cluster has it back: every broker
        registered and unfenced (a create of replication factor = brokers validates) and its listeners answer."""
        if node.pid:
            return
        self._launch(classpath(), node)
        self._wait_ready()

    def restart_node(self, node: Node, *, kill: bool = False) -> None:
        self.stop_node(node, kill=kill)
        self.start_node(node)

    def roll(self, between: Callable[[Node], None] | None = None) -> None:
        """A rolling restart: each node in turn stopped (controlled), started again, and waited for. ``between``
        runs while each node is down."""
        for node in self.nodes:
            self.stop_node(node)
            if between is not None:
                between(node)
            self.start_node(node)

    def active_controller(self, timeout_s: float = 60.0) -> int:
        """The node id of the active controller (the raft leader of ``__cluster_metadata``), from DescribeQuorum
        as ``kafka-metadata-quorum.sh describe --status`` asks it; waits while an election is under way."""
        from kafka.protocol.admin.cluster import DescribeQuorumRequest

        topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(
            version=0,
            topics=[topic(topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)])],
        )
        deadline = time.monotonic() + timeout_s
        while True:
            for node in self.brokers:
                if not node.pid:
                    continue
                with contextlib.suppress(OSError):  # a broker still forwarding to a dead controller: ask another
                    response = self._wire_request(request, node.plaintext_port, timeout_s=3.0)
                    leader = response.topics[0].partitions[0].leader_id if not response.error_code else -1
                    if leader >= 0 and self.node(leader).pid:
                        return int(leader)
            if time.monotonic() > deadline:
                raise RuntimeError(f"no active controller within {timeout_s:.0f} s")
            time.sleep(0.1)  # an election is under way: ask again shortly

    def to_json(self) -> str:
        return json.dumps(
            {
                "spec": asdict(self.spec),
                "root": self.root,
                "cluster_id": self.cluster_id,
                "nodes": [asdict(n) for n in self.nodes],
                "start_seconds": self.start_seconds,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> KafkaCluster:
        data = json.loads(text)
        spec = data["spec"]
        spec["extra"] = tuple(tuple(kv) for kv in spec["extra"])
        return cls(
            spec=BrokerSpec(**spec),
            root=data["root"],
            cluster_id=data["cluster_id"],
            nodes=[Node(**n) for n in data["nodes"]],
            start_seconds=data["start_seconds"],
        )

    # ----------------------------------------------------------------------------------- what it holds

    def topics(self, prefix: str = "") -> dict[str, int]:
        """Topic -> partition count as the cluster holds it now, every change committed so far included.

        A broker's Metadata lags the controller (even in one combined JVM: the broker replays the metadata log),
        so a read right after a CreateTopics answer may miss the topic. The controller applies mutations in
        order, so this first creates a barrier topic and waits until every broker's Metadata lists it: from then
        on, Metadata shows everything committed before the barrier. No sleep: the barrier is the signal. The
        barrier is deleted before this returns (or raises), the delete awaited: no read shows an earlier one."""
        from confluent_kafka.admin import AdminClient, NewTopic

        barrier = f"{barrier_prefix()}{uuid.uuid4().hex}"
        conf: Conf = {"client.id": "kafka-fixture", "log_level": 0}
        live = [n for n in self.brokers if n.pid]
        admin = AdminClient({"bootstrap.servers": ",".join(f"127.0.0.1:{n.plaintext_port}" for n in live), **conf})
        admin.create_topics([NewTopic(barrier, 1, 1)])[barrier].result(timeout=60)
        deadline = time.monotonic() + 60
        held: dict[str, int] = {}
        try:
            for node in live:
                # Each node asked on its own connection (Metadata over the wire, as kafka-python sends it):
                # librdkafka would send a listing to whichever broker it likes.
                while barrier not in (listed := self.metadata(node)):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"node {node.node_id} did not list {barrier} within 60 s")
                    time.sleep(0.02)
                held = {n: count for n, count in listed.items() if n.startswith(prefix) and n != barrier}
        finally:
            # Awaited, and a failure raises: unawaited, the next read could list the barrier, and one whose
            # AdminClient went with the request unsent stayed for good.
            admin.delete_topics([barrier])[barrier].result(timeout=60)
        return held

    def metadata(self, node: Node) -> dict[str, int]:
        """Topic -> partition count as ``node``'s own Metadata lists them now (it may trail the controller)."""
        return {t.name: len(t.partitions) for t in self._listed(node)}

    def _listed(self, node: Node, timeout_s: float = 30.0) -> list[Any]:
        """The topics ``node``'s own Metadata lists now, each with its partitions (those it lists with an error
        left out)."""
        from kafka.protocol.metadata import MetadataRequest

        response = self._wire_request(MetadataRequest(version=12, topics=None), node.plaintext_port, timeout_s)
        return [t for t in response.topics if not t.error_code and t.name]

    def wait_in_sync(self, timeout_s: float = 180.0) -> None:
        """Return once the nodes have caught up: every broker's Metadata lists the same topics, and every partition
        has all of its replicas in sync. A node started again fetches what it missed in the background (after the
        9,000-topic quorum test, thousands of partitions and then their deletes): a test that stops a node meanwhile
        waits on a catch-up that is not its own (a CI run of 2e85521: a grow's node did not start within 120 s).
        Polled: Kafka signals none of it."""
        deadline = time.monotonic() + timeout_s
        said = ""
        while True:
            try:
                left_s = max(1.0, min(30.0, deadline - time.monotonic()))
                views = {node.node_id: self._replicas(node, left_s) for node in self.brokers}
            except OSError as exc:  # a node not answering yet (a socket timeout, a refused connection): ask again
                said = f"a node did not answer Metadata: {exc!r}"
            else:
                lagging = {node_id: sum(r != isr for r, isr in view.values()) for node_id, view in views.items()}
                listed = {node_id: len(view) for node_id, view in views.items()}
                if not any(lagging.values()) and len({frozenset(view) for view in views.values()}) == 1:
                    return
                said = f"partitions out of sync by node {lagging}; partitions listed by node {listed}"
            if time.monotonic() > deadline:
                raise AssertionError(f"the quorum was not in sync within {timeout_s:.0f} s: {said}")
            time.sleep(0.5)

    def _replicas(self, node: Node, timeout_s: float) -> dict[tuple[str, int], tuple[frozenset[int], frozenset[int]]]:
        """(topic, partition) -> (replicas, in-sync replicas) as ``node``'s Metadata lists them."""
        return {
            (t.name, p.partition_index): (frozenset(p.replica_nodes), frozenset(p.isr_nodes))
            for t in self._listed(node, timeout_s)
            for p in t.partitions
        }

    # ------------------------------------------------------------------------------------------- quotas

    def set_quota(
        self, *, user: str | None = None, client_id: str | None = None, controller_mutation_rate: float | None
    ) -> None:
        """AlterClientQuotas, as kafka-configs.sh sends it, then wait until DescribeClientQuotas shows it
        (the record is committed: the controller's quota manager has it too). None removes the quota."""
        from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest

        entity = [
            AlterClientQuotasRequest.EntryData.EntityData(entity_type=t, entity_name=n)
            for t, n in (("user", user), ("client-id", client_id))
            if n is not None
        ]
        request = AlterClientQuotasRequest(
            version=1,
            entries=[
                AlterClientQuotasRequest.EntryData(
                    entity=entity,
                    ops=[
                        AlterClientQuotasRequest.EntryData.OpData(
                            key="controller_mutation_rate",
                            value=controller_mutation_rate or 0.0,
                            remove=controller_mutation_rate is None,
                        )
                    ],
                )
            ],
            validate_only=False,
        )
        response = self._wire_request(request)
        for entry in response.entries:
            if entry.error_code:
                raise RuntimeError(f"AlterClientQuotas failed: error {entry.error_code} {entry.error_message}")
        deadline = time.monotonic() + 60  # as long as a barrier's wait (topics): the same replay shows both
        while self.describe_quota(user=user, client_id=client_id) != controller_mutation_rate:
            if time.monotonic() > deadline:
                raise RuntimeError(f"quota of user={user} client-id={client_id} not visible after 60 s")
            time.sleep(0.02)

    def describe_quota(
        self, *, user: str | None = None, client_id: str | None = None, port: int | None = None
    ) -> float | None:
        """The quota as one broker (``port``, by default the first) describes it."""
        from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest

        C = DescribeClientQuotasRequest.ComponentData
        components = [
            C(entity_type=t, match_type=0, match=n) for t, n in (("user", user), ("client-id", client_id)) if n
        ]
        request = DescribeClientQuotasRequest(version=1, components=components, strict=True)
        response = self._wire_request(request, port)
        for entry in response.entries or []:
            for value in entry.values:
                if value.key == "controller_mutation_rate":
                    return float(value.value)
        return None

    def _wire_request(self, request: Any, port: int | None = None, timeout_s: float = 30.0) -> Any:
        from kafka.protocol.api_header import ResponseClassRegistry

        with socket.create_connection(("127.0.0.1", port or self.brokers[0].plaintext_port), timeout=timeout_s) as sock:
            request.with_header(correlation_id=1, client_id="kafka-fixture")
            sock.sendall(bytes(request.encode(header=True, framed=True)))
            size = struct.unpack(">i", _read(sock, 4))[0]
            payload = _read(sock, size)
        response_class = ResponseClassRegistry.get_response_class(request.header)
        return response_class.decode(payload, version=request.API_VERSION, header=True)

    # ---------------------------------------------------------------------------------------- internals

    def _choose_ports(self) -> None:
        ports = iter(free_ports(3 * len(self.nodes)))  # (all distinct)
        for node in self.nodes:
            controller, plaintext, sasl = next(ports), next(ports), next(ports)
            node.controller_port = controller if node.is_controller else 0
            node.plaintext_port = plaintext if node.is_broker else 0
            node.sasl_port = sasl if node.is_broker else 0

    def _voters(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes if n.is_controller)

    def _properties(self, node: Node) -> dict[str, str]:
        listeners, advertised = [], []
        if node.is_broker:
            listeners += [
                f"PLAINTEXT://127.0.0.1:{node.plaintext_port}",
                f"SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}",
            ]
            advertised = list(listeners)
        if node.is_controller:
            listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        props = {
            "process.roles": node.roles,
            "node.id": str(node.node_id),
            "controller.quorum.voters": self._voters(),
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(Path(node.directory) / "data"),
            "num.partitions": str(self.spec.num_partitions),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "controller.quota.window.num": str(self.spec.window_num),
            "controller.quota.window.size.seconds": str(self.spec.window_size_s),
        } | TOPIC_DEFAULTS
        if node.is_broker:
            props |= {
                "advertised.listeners": ",".join(advertised),
                "inter.broker.listener.name": "PLAINTEXT",
                "sasl.enabled.mechanisms": ",".join(("PLAIN", *SCRAM_MECHANISMS)),
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                    f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
                ),
            }
            for mechanism in SCRAM_MECHANISMS:
                props[f"listener.name.sasl_plaintext.{mechanism.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
        if self.spec.slow_controller:
            if node.is_controller:
                props["create.topic.policy.class.name"] = "SlowCreatePolicy"
            # A controller held by the policy answers no heartbeat: raise the timeouts that would fence its
            # brokers or unseat it meanwhile.
            props |= {
                "broker.session.timeout.ms": "120000",
                "controller.quorum.fetch.timeout.ms": "120000",
                "controller.quorum.election.timeout.ms": "60000",
            }
        props |= dict(self.spec.extra)
        return props

    def _format(self, cp: str, node: Node) -> None:
        directory = Path(node.directory)
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        (directory / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in self._properties(node).items()))
        (directory / "log4j2.properties").write_text(_log4j2(directory, self.spec.request_log))
        scram = [
            arg
            for mechanism in SCRAM_MECHANISMS
            for user, password in USERS.items()
            for arg in ("--add-scram", f"{mechanism}=[name={user},password={password}]")
        ]
        result = subprocess.run(
            [
                *_java(cp, directory, heap="256m"),
                "kafka.tools.StorageTool",
                "format",
                "--ignore-formatted",
                "-t",
                self.cluster_id,
                "-c",
                str(directory / "server.properties"),
                *scram,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({result.returncode}): {result.stdout}{result.stderr}")

    def _launch(self, cp: str, node: Node) -> None:
        directory = Path(node.directory)
        out = (directory / "stdout.log").open("wb")
        proc = subprocess.Popen(
            [*_java(cp, directory, heap=HEAP_MAX), "kafka.Kafka", str(directory / "server.properties")],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in a terminal reaches pytest, which stops the broker in order
        )
        out.close()
        node.pid = proc.pid
        node.started = _start_time(proc.pid) or 0
        self._procs[node.node_id] = proc
        _STARTED.append(proc)
        # The JVM must not outlive its owner (the run's main process, or this one) if that is killed without
        # stopping it: a watchdog per JVM, also out of Ctrl-C's reach, stops it then (tests/real_kafka/watchdog.py).
        owner = os.environ.get(OWNER_ENV) or str(os.getpid())
        _WATCHDOGS.append(
            subprocess.Popen(
                [sys.executable, "-m", "tests.real_kafka.watchdog", owner, *map(str, node.process), str(directory)],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        )

    def _wait_ready(self) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        deadline = time.monotonic() + START_TIMEOUT_S
        bootstrap = ",".join(f"127.0.0.1:{n.plaintext_port}" for n in self.brokers if n.pid)
        admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "kafka-fixture", "log_level": 0})
        try:
            while True:
                self._check_running()
                # Needs every broker registered and unfenced: replication factor = number of brokers.
                topic = NewTopic("fixture-ready-check", 1, len(self.brokers))
                future = admin.create_topics([topic], validate_only=True, request_timeout=5)["fixture-ready-check"]
                try:
                    future.result(timeout=10)
                    if self._listeners_answer():
                        return
                except KafkaException:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kafka did not answer within {START_TIMEOUT_S:.0f} s: {self._tail()}")
                time.sleep(0.2)  # the broker answered "not yet": ask again shortly
        finally:
            del admin

    def _listeners_answer(self) -> bool:
        """Every broker's two listeners answer ApiVersions: a broker can be registered (and counted by the
        create above) a moment before its own listeners accept connections."""
        from kafka.protocol.metadata.api_versions import ApiVersionsRequest

        for node in self.brokers:
            for port in (node.plaintext_port, node.sasl_port):
                try:
                    self._wire_request(ApiVersionsRequest(version=0), port)
                except OSError:
                    return False
        return True

    def _check_running(self) -> None:
        for node in self.nodes:
            proc = self._procs.get(node.node_id)
            if proc is None:
                raise RuntimeError(f"Kafka node {node.node_id} is not running")
            if proc.poll() is not None:
                tail = self._tail(node)
                if "Address already in use" in tail:
                    raise _PortTaken(tail)
                raise RuntimeError(f"Kafka node {node.node_id} exited with {proc.returncode}: {tail}")

    def _tail(self, node: Node | None = None) -> str:
        lines: list[str] = []
        for name in ("stdout.log", "server.log"):
            path = self.log_path(node, name)
            if path.exists():
                lines += path.read_text(errors="replace").splitlines()[-15:]
        return "\n".join(lines)


class _PortTaken(RuntimeError):
    pass


# The JVMs this process started. A shared cluster outlives the KafkaCluster object that started it (other workers
# attach to it by its record; the run's main process stops it), so its Popen objects are kept here, not dropped
# while their process runs.
_STARTED: list[subprocess.Popen[bytes]] = []
_WATCHDOGS: list[subprocess.Popen[bytes]] = []  # one per JVM: each exits when its JVM does


def _java(cp: str, directory: Path, heap: str) -> list[str]:
    return [
        "java",
        f"-Xmx{heap}",
        "-Xms64m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",  # a test broker starts faster with C1 only
        "-Xss512k",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={directory}",
        "-cp",
        cp,
    ]


def _log4j2(directory: Path, request_log: bool) -> str:
    return f"""status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {directory / "server.log"}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.req.type = File
appender.req.name = REQUESTS
appender.req.fileName = {directory / "request.log"}
appender.req.layout.type = PatternLayout
appender.req.layout.pattern = [%d] %m%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = {"DEBUG" if request_log else "WARN"}
logger.request.additivity = false
logger.request.appenderRef.req.ref = REQUESTS
"""


def _cluster_id() -> str:
    """A random id as ``kafka-storage random-uuid`` makes it: one that starts with '-' would be read by the
    storage tool as an option (Kafka's Uuid.randomUuid draws again for those too)."""
    import base64

    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _read(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed by Kafka")
        data += chunk
    return bytes(data)


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None when no such process (or it is a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


def _all_threads_stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped by a signal (state T in /proc; the kernel has no event for it)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
        if state not in ("T", "t", "Z", "X"):  # stopped, traced; a thread already gone
            return False
    return True


def _pid_alive(pid: int, started: int) -> bool:
    """Whether the process that started at ``started`` with ``pid`` still runs (not a later one with its pid)."""
    return started != 0 and _start_time(pid) == started


def stop_pids(processes: list[tuple[int, int]], grace_s: float = 10.0) -> None:
    """SIGCONT (a paused JVM cannot stop) and SIGTERM each (pid, start time) still running, then SIGKILL whatever
    is still up after ``grace_s``. A pid now held by another process is left alone."""
    processes = [p for p in processes if _pid_alive(*p)]
    for pid, _ in processes:
        for sig in (signal.SIGCONT, signal.SIGTERM):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
    deadline = time.monotonic() + grace_s
    for process in processes:
        while _pid_alive(*process) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_alive(*process):
            with contextlib.suppress(ProcessLookupError):
                os.kill(process[0], signal.SIGKILL)
