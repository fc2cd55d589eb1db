"""The differential harness: the same requests against Apache Kafka 4.4 and against QuotaBroker, compared.

A :class:`Scenario` is a function of a :class:`Run`: it opens connections and sends requests through the Run,
which records what came back as :class:`Observation` s (per topic: error code and message; the response's
``throttle_time_ms``; where a scenario asks, how long the answer took, which is how muting shows). The same
function runs once against the real broker and once against a QuotaBroker configured the same way (quota
windows, ``num.partitions``, the scenario's controller mutation rate on its own client id, SASL users), both
at once, each on its own thread. Then the two records and the two resulting cluster states are compared:
codes, messages and states exactly, times within :data:`TOLERANCE_MS` (the gap comes from scheduling jitter,
whatever the rate). A throttle is compared as when it ends, counted from the request's send
(:func:`throttle_ends`): Kafka reports what is left of it when it answers, after its controller's work, and
QuotaBroker answers at once, so the raw values differ by however long Kafka's controller took.

Keeping scenarios apart on a shared real broker: each gets its own topic prefix and client id (its quota
entity), from :class:`~tests.real_kafka.namespace.KafkaNamespace`; the QuotaBroker is started for the scenario
and stopped after it. Topic names in messages are compared without the prefix.

A quorum (:data:`QUORUM`: Kafka's three combined nodes, the ``kafka_quorum`` fixture, and a QuotaBroker of three
nodes): a scenario asks which broker is the active controller (:meth:`Run.controller`) and stops, kills and starts
brokers (:meth:`Run.stop`, :meth:`Run.start`). Kafka takes seconds over each, QuotaBroker none, so what is compared
after one is what does not depend on the time it took (``coarse``: whether an answer was throttled, not by how
much), unless the bucket started fresh (then both count from the same request).

A slow controller: a topic named by :meth:`Run.slow` holds Kafka's controller (``SlowCreatePolicy``, the
``slow_controller`` spec) and QuotaBroker's (``hold_controller_next``) for the time it names.

``python -m tests.real_kafka.differential [--markdown] [--write docs/testing-broker.md] [ID ...]`` runs every
scenario (or those whose id contains an ID) outside pytest, on clusters of its own, and prints each outcome, or
the table of both brokers' answers (``--markdown``). ``--write`` puts the short table (each scenario's verdict)
between the table's markers in docs/testing-broker.md.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import re
import struct
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.real_kafka.broker import SCRAM_MECHANISMS, TOPIC_DEFAULTS, USERS, BrokerSpec, KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.wire import WireClient

TOLERANCE_MS = 250
BARRIER = "barrier-"  # topics outside every scenario's prefix, created last to read a settled state
STRICT = {"create": 7, "delete": 6, "grow": 3}  # what kafka-python 3 and the Java AdminClient send
PERMISSIVE = {"create": 4, "delete": 4, "grow": 2}  # what librdkafka sends
ERROR_NAMES = {
    0: "NONE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    7: "REQUEST_TIMED_OUT",
    17: "INVALID_TOPIC_EXCEPTION",
    33: "UNSUPPORTED_SASL_MECHANISM",
    34: "ILLEGAL_SASL_STATE",
    35: "UNSUPPORTED_VERSION",
    36: "TOPIC_ALREADY_EXISTS",
    37: "INVALID_PARTITIONS",
    38: "INVALID_REPLICATION_FACTOR",
    39: "INVALID_REPLICA_ASSIGNMENT",
    40: "INVALID_CONFIG",
    42: "INVALID_REQUEST",
    44: "POLICY_VIOLATION",
    58: "SASL_AUTHENTICATION_FAILED",
    89: "THROTTLING_QUOTA_EXCEEDED",
    100: "UNKNOWN_TOPIC_ID",
}


# -- set-ups ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """How both brokers are configured. Each different Setup is a Kafka JVM of its own (shared by the run)."""

    window_num: int = 11
    window_size_s: int = 1
    num_partitions: int = 1
    slow: bool = False
    brokers: int = 1  # Kafka: one combined node, or a controller and N brokers; QuotaBroker: N nodes
    quorum: int = 1  # Kafka: N combined broker+controller nodes (the kafka_quorum fixture); QuotaBroker: N nodes

    def broker_spec(self) -> BrokerSpec:
        return BrokerSpec(
            window_num=self.window_num,
            window_size_s=self.window_size_s,
            num_partitions=self.num_partitions,
            slow_controller=self.slow,
            brokers=self.brokers,
            quorum=self.quorum,
        )

    def quota_broker(self, *, sasl: bool) -> Any:
        """A QuotaBroker configured as the Kafka of this Setup (its static configs as the fixture sets them)."""
        from throttled_admin.testing import QuotaBroker

        return QuotaBroker(
            num_brokers=max(self.brokers, self.quorum),
            quota_window_num=self.window_num,
            quota_window_size_s=self.window_size_s,
            users=dict(USERS) if sasl else None,
            sasl_mechanisms=("PLAIN", *SCRAM_MECHANISMS),  # as the fixture's SASL_PLAINTEXT listener
            broker_configs={
                "num.partitions": str(self.num_partitions),
                "controller.quota.window.num": str(self.window_num),
                "controller.quota.window.size.seconds": str(self.window_size_s),
                **TOPIC_DEFAULTS,
            },
        )


DEFAULT = Setup()  # Kafka's defaults: the kafka_broker fixture's JVM
SMALL = Setup(window_num=2, num_partitions=3)  # quota windows of 2 x 1 s (burst = 2 R), num.partitions=3
SLOW = Setup(slow=True)  # the kafka_slow_broker fixture's JVM
SLOW_CLUSTER = Setup(slow=True, brokers=2)  # a slow controller behind two brokers (three JVMs)
QUORUM = Setup(quorum=3)  # three combined nodes, three voters: the kafka_quorum fixture's JVMs


# -- what a run sees -------------------------------------------------------------------------------------


@dataclass
class Observation:
    """One answer: ``exact`` values are compared with ==, ``timed`` ones (milliseconds) within TOLERANCE_MS."""

    step: str
    exact: dict[str, Any] = field(default_factory=dict)
    timed: dict[str, int] = field(default_factory=dict)
    round_trip_ms: int | None = None  # from the send until the answer was read (a throttle ends this much later)

    def summary(self) -> str:
        parts = [f"{k}={_show(v)}" for k, v in self.exact.items()]
        parts += [f"{k}={v}" for k, v in self.timed.items()]
        return f"{self.step}: " + ", ".join(parts)


def _show(value: Any) -> str:
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return "[" + "; ".join(" ".join(_show(v) for v in item) for item in value) + "]"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None:
        return "null"
    return str(value) if not isinstance(value, str) else repr(value)


@dataclass(frozen=True)
class Exact:
    """A topic name used as is, without the scenario's prefix (for names a prefix would make legal)."""

    name: str


Name = str | Exact


@dataclass(frozen=True)
class T:
    """One CreateTopics entry. ``assignments``: (partition, replica node *indexes*: 0 is the first broker)."""

    name: Name
    partitions: int = 1
    rf: int = 1
    configs: Mapping[str, str | None] = field(default_factory=dict)
    assignments: Sequence[tuple[int, Sequence[int]]] = ()


def _coarse(reader: Callable[[Any], Observation]) -> Callable[[Any], Observation]:
    """``reader`` with ``throttle_time_ms`` recorded as ``throttled`` (whether it is > 0), compared exactly: for
    an answer after a broker restart, which takes Kafka seconds and QuotaBroker none."""

    def read(response: Any) -> Observation:
        observation = reader(response)
        observation.exact["throttled"] = observation.timed.pop("throttle_time_ms", 0) > 0
        return observation

    return read


def _spec(topic: T | tuple[Any, ...]) -> T:
    return topic if isinstance(topic, T) else T(*topic)


@dataclass
class Pending:
    """A request sent and not yet read (pipelining behind a slow or muted one)."""

    conn: Conn
    request: Any
    step: str
    sent_at: float
    reader: Callable[[Any], Observation]
    timed: bool


class Conn:
    """One connection to the side's broker, as ``client_id`` (and a SASL user, once authenticated)."""

    def __init__(self, run: Run, bootstrap: str, client_id: str):
        self.run = run
        try:
            self.wire = WireClient(bootstrap, client_id=client_id, timeout_s=60)
        except OSError as exc:
            raise ConnectionError(f"{bootstrap}: {exc}") from exc

    def closed_by_broker(self, timeout_s: float = 5.0) -> bool:
        """True when the broker closes this connection within ``timeout_s`` (nothing else arrives)."""
        self.wire.sock.settimeout(timeout_s)
        try:
            return self.wire.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        finally:
            self.wire.sock.settimeout(60)


# -- the two sides ---------------------------------------------------------------------------------------


class Side:
    """One broker under test. ``kind`` is "kafka" or "quota-broker"."""

    kind: str
    node_id: int

    def bootstrap(self, sasl: bool, broker: int = 0) -> str:
        """The address of broker ``broker`` (0: the first) on the PLAINTEXT or SASL_PLAINTEXT listener."""
        raise NotImplementedError

    def set_quota(self, client_id: str, rate: float) -> None:
        raise NotImplementedError

    def hold_next(self, topic: str, millis: int) -> Callable[[], bool]:
        """Prepare the controller to hold the next mutation (``topic``, a slow name) for ``millis``; returns
        a wait that is True once the controller holds it."""
        raise NotImplementedError

    def controller(self) -> int:
        """The index (0: the first broker) of the active controller."""
        raise NotImplementedError

    def stop(self, broker: int, kill: bool) -> None:
        """Stop broker ``broker`` (a controlled shutdown, or with ``kill`` a kill -9), keeping its port."""
        raise NotImplementedError

    def start(self, broker: int) -> None:
        """Start a stopped broker again; returns once it is registered and answers."""
        raise NotImplementedError


class KafkaSide(Side):
    kind = "kafka"

    def __init__(self, cluster: KafkaCluster):
        self.cluster = cluster
        self.node_id = cluster.brokers[0].node_id

    def bootstrap(self, sasl: bool, broker: int = 0) -> str:
        node = self.cluster.brokers[broker]
        return f"127.0.0.1:{node.sasl_port if sasl else node.plaintext_port}"

    def set_quota(self, client_id: str, rate: float) -> None:
        self.cluster.set_quota(client_id=client_id, controller_mutation_rate=rate)

    def hold_next(self, topic: str, millis: int) -> Callable[[], bool]:
        # SlowCreatePolicy holds the controller for topics named slow-<ms>-...; it says so in the JVM's stdout.
        line = f"holding the controller for {millis} ms: {topic}"
        log = self.cluster.log_path(name="stdout.log")
        return lambda: _wait(lambda: line in log.read_text(errors="replace"), 30)

    def controller(self) -> int:
        active = self.cluster.active_controller()
        return next(i for i, node in enumerate(self.cluster.brokers) if node.node_id == active)

    def stop(self, broker: int, kill: bool) -> None:
        self.cluster.stop_node(self.cluster.brokers[broker], kill=kill)

    def start(self, broker: int) -> None:
        self.cluster.start_node(self.cluster.brokers[broker])


class QuotaBrokerSide(Side):
    kind = "quota-broker"
    node_id = 0

    def __init__(self, broker: Any):
        self.broker = broker

    def bootstrap(self, sasl: bool, broker: int = 0) -> str:
        return f"127.0.0.1:{self.broker.ports[broker]}"

    def set_quota(self, client_id: str, rate: float) -> None:
        self.broker.set_quota(client_id=client_id, controller_mutation_rate=rate)

    def hold_next(self, topic: str, millis: int) -> Callable[[], bool]:
        held = self.broker.hold_controller_next(millis / 1000)
        return lambda: bool(held.wait(30))

    def controller(self) -> int:
        return int(self.broker.controller_id)  # QuotaBroker's node ids are the indexes

    def stop(self, broker: int, kill: bool) -> None:
        self.broker.stop_node(broker, kill=kill)

    def start(self, broker: int) -> None:
        self.broker.start_node(broker)


def _wait(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- a run: one scenario on one side ---------------------------------------------------------------------


class Run:
    """What a scenario does on one side. Every request helper records an Observation and returns the decoded
    response. Names are relative to the scenario's prefix unless given as :class:`Exact`."""

    def __init__(self, side: Side, ns: KafkaNamespace, sasl: bool):
        self.side = side
        self.ns = ns
        self.sasl = sasl
        self.client_id = ns.client_id
        self.observations: list[Observation] = []
        self._conns: list[Conn] = []

    # names ----------------------------------------------------------------------------------------------

    def name(self, name: Name) -> str:
        return name.name if isinstance(name, Exact) else self.ns.topic(name)

    def slow(self, millis: int, name: str) -> Exact:
        """A topic whose creation holds the controller for ``millis`` once :meth:`hold` has prepared it:
        ``slow-<ms>-<prefix><name>`` (Kafka's SlowCreatePolicy reads the time from the name)."""
        return Exact(self.ns.slow(millis, name))

    def hold(self, slow: Exact) -> Callable[[], bool]:
        """Prepare the controller to hold the next mutation, the creation of ``slow`` (from :meth:`slow`);
        returns a wait that is True once the controller holds it."""
        millis = int(slow.name.split("-")[1])
        return self.side.hold_next(slow.name, millis)

    def relative(self, text: Any) -> Any:
        """``text`` without the scenario's prefix (messages name topics)."""
        if isinstance(text, str):
            return text.replace(self.ns.prefix, "")
        return text

    def node(self, index: int = 0) -> int:
        """The node id of broker ``index`` on this side (Kafka's fixture numbers from 1, QuotaBroker from 0);
        an index of 100 or more is an id as is, of a broker no side has."""
        return index if index >= 100 else self.side.node_id + index

    def no_node(self, text: Any) -> Any:
        """``text`` with this side's node id written ``<node>`` (the sides number their nodes differently)."""
        if isinstance(text, str):
            return re.sub(rf"(?<![-\w]){self.side.node_id}(?![-\w])", "<node>", text)
        return text

    # connections ----------------------------------------------------------------------------------------

    def connect(
        self, client_id: str | None = None, *, user: str | None = None, mechanism: str = "PLAIN", broker: int = 0
    ) -> Conn:
        """A new connection to broker ``broker`` as ``client_id`` (default: the scenario's own); on a SASL
        scenario authenticated as ``user`` (default alice) unless ``user=""`` (then the caller does the
        exchange)."""
        conn = Conn(self, self.side.bootstrap(self.sasl, broker), client_id or self.client_id)
        self._conns.append(conn)
        if self.sasl and user != "":
            self.authenticate(conn, user or "alice", USERS[user or "alice"], mechanism=mechanism, record=False)
        return conn

    def close(self) -> None:
        for conn in self._conns:
            conn.wire.close()

    # brokers of a quorum --------------------------------------------------------------------------------

    def controller(self) -> int:
        """The index of the broker that is the active controller now."""
        return self.side.controller()

    def others(self) -> list[int]:
        """The indexes of the brokers that are not the active controller, in order."""
        active = self.controller()
        return [i for i in range(3) if i != active]

    def stop(self, broker: int, *, kill: bool = False) -> None:
        """Stop broker ``broker`` (SIGTERM, or kill -9) and wait until it is gone (Kafka: seconds)."""
        self.side.stop(broker, kill)

    def start(self, broker: int) -> None:
        """Start broker ``broker`` again and wait until the cluster has it back."""
        self.side.start(broker)

    # requests -------------------------------------------------------------------------------------------

    def request(self, conn: Conn, request: Any, step: str, reader: Callable[[Any], Observation], timed: bool) -> Any:
        pending = self.send(conn, request, step, reader, timed)
        return self.receive(pending)

    def send(self, conn: Conn, request: Any, step: str, reader: Callable[[Any], Observation], timed: bool) -> Pending:
        conn.wire.send(request)
        return Pending(conn, request, step, time.monotonic(), reader, timed)

    def receive_or_closed(self, pending: Pending) -> Any:
        """:meth:`receive`, or, when the broker closes the connection with no answer, a note that it did."""
        try:
            return self.receive(pending)
        except OSError:  # ConnectionError: closed by the broker; a reset
            self.note(pending.step, closed=True)
            return None

    def send_probe(self, conn: Conn, step: str) -> Pending:
        """A Metadata v12 of no topic on ``conn``, to learn whether the connection is muted (:meth:`muted`)."""
        return self.send_metadata(conn, 12, [], step=step, timed=True)

    def muted(self, pending: Pending, over_ms: int = 1000) -> None:
        """Receive a probe and record whether it waited more than ``over_ms`` (a muted connection) instead of how
        long: coarse, for throttles of seconds on a loaded machine, where answer times vary by hundreds of ms."""
        self.receive(pending)
        observation = self.observations[-1]
        observation.exact["muted"] = observation.timed.pop("answered_after_ms") > over_ms

    def receive(self, pending: Pending) -> Any:
        response = pending.conn.wire.receive(pending.request)
        waited_ms = round((time.monotonic() - pending.sent_at) * 1000)
        observation = pending.reader(response)
        observation.step = pending.step
        observation.round_trip_ms = waited_ms
        if pending.timed:
            observation.timed["answered_after_ms"] = waited_ms
        self.observations.append(observation)
        return response

    def note(self, step: str, **exact: Any) -> None:
        """Record something the scenario established itself (for example that a connection was closed)."""
        self.observations.append(Observation(step, dict(exact)))

    # the three mutations --------------------------------------------------------------------------------

    def create_request(self, version: int, topics: Sequence[T | tuple[Any, ...]], **kw: Any) -> Any:
        from kafka.protocol.admin.topics import CreateTopicsRequest

        C = CreateTopicsRequest.CreatableTopic
        entries = []
        for t in topics:
            spec = _spec(t)
            entries.append(
                C(
                    name=self.name(spec.name),
                    num_partitions=spec.partitions,
                    replication_factor=spec.rf,
                    assignments=[
                        C.CreatableReplicaAssignment(partition_index=p, broker_ids=[self.node(i) for i in nodes])
                        for p, nodes in spec.assignments
                    ],
                    configs=[C.CreatableTopicConfig(name=k, value=v) for k, v in spec.configs.items()],
                )
            )
        return CreateTopicsRequest(
            version=version,
            topics=entries,
            timeout_ms=kw.get("timeout_ms", 30000),
            validate_only=kw.get("validate_only", False),
        )

    def create(
        self, conn: Conn, version: int, *topics: T | tuple[Any, ...], step: str = "", timed: bool = False, **kw: Any
    ) -> Any:
        """CreateTopics at ``version``; ``kw``: ``validate_only``, ``timeout_ms``, ``nodes`` and ``configs`` (see
        :meth:`_read_create`), ``coarse`` (record whether the answer was throttled, not by how much)."""
        nodes, configs, coarse = kw.pop("nodes", False), kw.pop("configs", False), kw.pop("coarse", False)
        request = self.create_request(version, topics, **kw)
        label = step or f"CreateTopics v{version}" + (" validate_only" if kw.get("validate_only") else "")
        reader = self._read_create(version, nodes, configs)
        return self.request(conn, request, label, _coarse(reader) if coarse else reader, timed)

    def send_create(
        self, conn: Conn, version: int, *topics: T | tuple[Any, ...], step: str = "", timed: bool = False, **kw: Any
    ) -> Pending:
        request = self.create_request(version, topics, **kw)
        return self.send(conn, request, step or f"CreateTopics v{version}", self._read_create(version), timed)

    def _read_create(self, version: int, nodes: bool = False, configs: bool = False) -> Callable[[Any], Observation]:
        """CreateTopics results in the order Kafka answers them: the controller's in request order, then the
        ones ControllerApis answers itself (a repeated name). ``nodes``: node ids in messages as <node>;
        ``configs``: each topic's effective configs (v5+) too."""

        def read(response: Any) -> Observation:
            topics = [self._result(t.name, t.error_code, t.error_message, nodes) for t in response.topics]
            exact: dict[str, Any] = {"topics": topics}
            if version >= 5:
                exact["counts"] = [
                    (self.relative(t.name), t.num_partitions, t.replication_factor) for t in response.topics
                ]
                if configs:
                    exact["configs"] = [
                        (self.relative(t.name), sorted((c.name, c.value, c.config_source) for c in t.configs))
                        for t in response.topics
                    ]
            return Observation("", exact, {"throttle_time_ms": response.throttle_time_ms})

        return read

    def delete_request(self, version: int, names: Sequence[Name | tuple[Name | None, Any]], **kw: Any) -> Any:
        """``names``: topic names, or (name, topic id) pairs for v6 (None for either part)."""
        from kafka.protocol.admin.topics import DeleteTopicsRequest

        timeout_ms = kw.get("timeout_ms", 30000)
        if version >= 6:
            S = DeleteTopicsRequest.DeleteTopicState
            states = []
            for entry in names:
                name, topic_id = entry if isinstance(entry, tuple) else (entry, None)
                states.append(S(name=None if name is None else self.name(name), topic_id=topic_id))
            return DeleteTopicsRequest(version=version, topics=states, timeout_ms=timeout_ms)
        plain = [self.name(n) for n in names if not isinstance(n, tuple)]
        return DeleteTopicsRequest(version=version, topic_names=plain, timeout_ms=timeout_ms)

    def delete(
        self, conn: Conn, version: int, *names: Name | tuple[Name | None, Any], step: str = "", timed: bool = False,
        **kw: Any,
    ) -> Any:  # fmt: skip
        request = self.delete_request(version, names, **kw)
        return self.request(conn, request, step or f"DeleteTopics v{version}", self._read_delete(), timed)

    def send_delete(self, conn: Conn, version: int, *names: Name, step: str = "", **kw: Any) -> Pending:
        request = self.delete_request(version, names, **kw)
        return self.send(conn, request, step or f"DeleteTopics v{version}", self._read_delete(), False)

    def _read_delete(self) -> Callable[[Any], Observation]:
        """DeleteTopics results sorted: ControllerApis shuffles them (``Collections.shuffle``), so that their
        positions tell nothing."""

        def read(response: Any) -> Observation:
            topics = sorted(
                (self._result(r.name, r.error_code, getattr(r, "error_message", None)) for r in response.responses),
                key=repr,
            )
            return Observation("", {"topics": topics}, {"throttle_time_ms": response.throttle_time_ms})

        return read

    def grow_request(self, version: int, grows: Sequence[tuple[Any, ...]], **kw: Any) -> Any:
        """``grows``: (name, new count) or (name, new count, [replica node indexes per new partition])."""
        from kafka.protocol.admin.topics import CreatePartitionsRequest

        P = CreatePartitionsRequest.CreatePartitionsTopic
        entries = []
        for grow in grows:
            name, count = grow[0], grow[1]
            assignments = None
            if len(grow) > 2:
                assignments = [
                    P.CreatePartitionsAssignment(broker_ids=[self.node(i) for i in nodes]) for nodes in grow[2]
                ]
            entries.append(P(name=self.name(name), count=count, assignments=assignments))
        return CreatePartitionsRequest(
            version=version,
            topics=entries,
            timeout_ms=kw.get("timeout_ms", 30000),
            validate_only=kw.get("validate_only", False),
        )

    def grow(
        self, conn: Conn, version: int, *grows: tuple[Any, ...], step: str = "", timed: bool = False, **kw: Any
    ) -> Any:
        """CreatePartitions at ``version``; ``kw``: ``validate_only``, ``timeout_ms``."""
        nodes = kw.pop("nodes", False)
        request = self.grow_request(version, grows, **kw)
        label = step or f"CreatePartitions v{version}" + (" validate_only" if kw.get("validate_only") else "")
        return self.request(conn, request, label, self._read_grow(nodes), timed)

    def send_grow(self, conn: Conn, version: int, *grows: tuple[Any, ...], step: str = "", **kw: Any) -> Pending:
        request = self.grow_request(version, grows, **kw)
        return self.send(conn, request, step or f"CreatePartitions v{version}", self._read_grow(), False)

    def _read_grow(self, nodes: bool = False) -> Callable[[Any], Observation]:
        """CreatePartitions results sorted: ControllerApis answers repeated names first and hands the others to
        the controller in a HashSet's order."""

        def read(response: Any) -> Observation:
            topics = sorted(
                (self._result(r.name, r.error_code, r.error_message, nodes) for r in response.results), key=repr
            )
            return Observation("", {"topics": topics}, {"throttle_time_ms": response.throttle_time_ms})

        return read

    def _result(self, name: str | None, code: int, message: str | None, nodes: bool = False) -> tuple[Any, ...]:
        text = self.relative(message)
        return (self.relative(name), ERROR_NAMES.get(code, code), self.no_node(text) if nodes else text)

    # reads ----------------------------------------------------------------------------------------------

    def metadata_request(self, version: int, names: Sequence[Name] | None, auto_create: bool = False) -> Any:
        from kafka.protocol.metadata.metadata import MetadataRequest

        M = MetadataRequest.MetadataRequestTopic
        topics = None if names is None else [M(name=self.name(n), topic_id=None) for n in names]
        kwargs: dict[str, Any] = {}
        if version >= 4:
            kwargs["allow_auto_topic_creation"] = auto_create
        if 8 <= version <= 10:
            kwargs["include_cluster_authorized_operations"] = False
        if version >= 8:
            kwargs["include_topic_authorized_operations"] = False
        if version == 0 and topics is None:
            topics = []
        return MetadataRequest(version=version, topics=topics, **kwargs)

    def _read_metadata(self, every: bool) -> Callable[[Any], Observation]:
        def read(response: Any) -> Observation:
            rows = sorted(
                (self.relative(t.name), ERROR_NAMES.get(t.error_code, t.error_code), len(t.partitions))
                for t in response.topics
                if not every or self.ns.prefix in t.name
            )
            return Observation("", {"topics": rows})

        return read

    def metadata(
        self,
        conn: Conn,
        version: int,
        names: Sequence[Name] | None,
        *,
        auto_create: bool = False,
        step: str = "",
        timed: bool = False,
    ) -> Any:
        """Metadata at ``version`` for ``names`` (None: every topic, of which the scenario's are recorded)."""
        request = self.metadata_request(version, names, auto_create)
        return self.request(conn, request, step or f"Metadata v{version}", self._read_metadata(names is None), timed)

    def send_metadata(
        self, conn: Conn, version: int, names: Sequence[Name] | None, *, step: str = "", timed: bool = False
    ) -> Pending:
        request = self.metadata_request(version, names)
        return self.send(conn, request, step or f"Metadata v{version}", self._read_metadata(names is None), timed)

    def wait_visible(self, conn: Conn, names: Sequence[Name], *, gone: bool = False, step: str = "") -> None:
        """Metadata v12 until every name is listed (``gone``: none is), then that answer is recorded: a KRaft
        broker learns the controller's decisions by replaying the metadata log, a moment after the answer."""
        self._settle(conn, names, lambda rows: all((row[1] == "NONE") != gone for row in rows), step)

    def wait_partitions(self, conn: Conn, name: Name, count: int, *, step: str = "") -> None:
        """Metadata v12 until ``name`` shows ``count`` partitions, then that answer is recorded."""
        self._settle(conn, [name], lambda rows: rows[0][2] == count, step)

    def _settle(
        self, conn: Conn, names: Sequence[Name], done: Callable[[list[tuple[Any, ...]]], bool], step: str
    ) -> None:
        request = self.metadata_request(12, names)
        read = self._read_metadata(False)
        deadline = time.monotonic() + 10
        while True:
            conn.wire.send(request)
            observation = read(conn.wire.receive(request))
            if done(observation.exact["topics"]) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        observation.step = step or "Metadata v12 once settled"
        self.observations.append(observation)

    def describe_configs(
        self,
        conn: Conn,
        version: int,
        resources: Sequence[tuple[int, Name, Sequence[str] | None]],
        *,
        synonyms: bool = False,
        documentation: bool = False,
        fields: Sequence[str] = ("value", "source", "read_only", "sensitive", "type"),
        step: str = "",
    ) -> Any:
        """DescribeConfigs of (resource type, name, keys or None) resources; 2 = TOPIC (relative name), 4 =
        BROKER (name as given). Records per resource its error and message and, per config, ``fields``."""
        from kafka.protocol.admin.configs import DescribeConfigsRequest

        R = DescribeConfigsRequest.DescribeConfigsResource
        wanted = [
            R(resource_type=kind, resource_name=self.name(name) if kind == 2 else name, configuration_keys=keys)
            for kind, name, keys in resources
        ]
        kwargs: dict[str, Any] = {"include_synonyms": synonyms}
        if version >= 3:
            kwargs["include_documentation"] = documentation
        request = DescribeConfigsRequest(version=version, resources=wanted, **kwargs)

        def read(response: Any) -> Observation:
            results = []
            for r in response.results:
                configs = []
                for c in sorted(r.configs, key=lambda c: c.name):
                    values = {
                        "value": self.no_node(c.value) if c.name in ("node.id", "broker.id") else c.value,
                        "source": c.config_source,
                        "read_only": c.read_only,
                        "sensitive": c.is_sensitive,
                        "type": getattr(c, "config_type", None),
                        "synonyms": [(s.name, s.value, s.source) for s in c.synonyms],
                        "documentation": (getattr(c, "documentation", None) or "")[:60],
                    }
                    configs.append((c.name, *(values[f] for f in fields)))
                results.append(
                    (
                        self.relative(r.resource_name if r.resource_type == 2 else self.no_node(r.resource_name)),
                        ERROR_NAMES.get(r.error_code, r.error_code),
                        self.no_node(self.relative(r.error_message)),
                        configs,
                    )
                )
            return Observation("", {"resources": results})

        return self.request(conn, request, step or f"DescribeConfigs v{version}", read, False)

    def api_versions(self, conn: Conn, version: int, keys: Sequence[int], *, step: str = "") -> Any:
        """ApiVersions at ``version``; records the error and the ranges of ``keys`` (absent: None)."""
        from kafka.protocol.metadata.api_versions import ApiVersionsRequest

        kwargs = {"client_software_name": "differential", "client_software_version": "1"} if version >= 3 else {}
        request = ApiVersionsRequest(version=version, **kwargs)

        def read(response: Any) -> Observation:
            ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
            return Observation(
                "",
                {
                    "error": ERROR_NAMES.get(response.error_code, response.error_code),
                    "ranges": [(key, *ranges.get(key, (None, None))) for key in keys],
                },
            )

        return self.request(conn, request, step or f"ApiVersions v{version}", read, False)

    def raw_api_versions(self, conn: Conn, version: int, *, step: str = "") -> None:
        """An ApiVersions request at a version no broker knows, written by hand: brokers answer it with a v0
        body (KIP-511). Records the error and the API keys listed."""
        from kafka.protocol.metadata.api_versions import ApiVersionsResponse

        header = struct.pack(">hhih", 18, version, 1, len("differential")) + b"differential"
        frame = header + b"\x00" + b"\x00"  # empty tagged fields: a flexible header's, then the body's
        conn.wire.send_raw(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", conn.wire._read(4))[0]
        payload = conn.wire._read(size)
        response = ApiVersionsResponse.decode(payload[4:], version=0)
        self.note(
            step or f"ApiVersions v{version}",
            error=ERROR_NAMES.get(response.error_code, response.error_code),
            listed=sorted(k.api_key for k in response.api_keys),
        )

    # SASL -----------------------------------------------------------------------------------------------

    def handshake(
        self, conn: Conn, mechanism: str, *, version: int = 1, step: str = "", mechanisms: bool = False
    ) -> Any:
        """SaslHandshake; ``mechanisms``: record the mechanisms the broker lists, too."""
        from kafka.protocol.sasl import SaslHandshakeRequest

        def read(response: Any) -> Observation:
            exact: dict[str, Any] = {"error": ERROR_NAMES.get(response.error_code, response.error_code)}
            if mechanisms:
                exact["mechanisms"] = sorted(response.mechanisms or [])
            return Observation("", exact)

        request = SaslHandshakeRequest(version=version, mechanism=mechanism)
        return self.request(conn, request, step or f"SaslHandshake {mechanism}", read, False)

    def sasl_authenticate(self, conn: Conn, token: bytes, *, version: int = 2, step: str = "") -> Any:
        from kafka.protocol.sasl import SaslAuthenticateRequest

        def read(response: Any) -> Observation:
            return Observation(
                "",
                {"error": ERROR_NAMES.get(response.error_code, response.error_code), "message": response.error_message},
            )

        request = SaslAuthenticateRequest(version=version, auth_bytes=token)
        return self.request(conn, request, step or f"SaslAuthenticate v{version}", read, False)

    def authenticate(
        self, conn: Conn, user: str, password: str, *, mechanism: str = "PLAIN", record: bool = True
    ) -> None:
        """SaslHandshake and one PLAIN SaslAuthenticate (``record``: keep both answers)."""
        before = len(self.observations)
        self.handshake(conn, mechanism)
        self.sasl_authenticate(conn, f"\0{user}\0{password}".encode())
        if not record:
            errors = [o.exact.get("error") for o in self.observations[before:]]
            del self.observations[before:]
            if errors != ["NONE", "NONE"]:
                raise AssertionError(f"{self.side.kind}: SASL as {user} failed: {errors}")

    # waiting --------------------------------------------------------------------------------------------

    def sleep(self, seconds: float) -> None:
        """Let the quota refill (a bucket has no signal of its own)."""
        time.sleep(seconds)

    # set-up and state -----------------------------------------------------------------------------------

    def setup(self, *topics: T | tuple[Any, ...]) -> None:
        """Create topics for the scenario on a connection of its own, outside any quota, unrecorded, and wait
        until the broker's Metadata lists them (a KRaft broker answers DescribeConfigs and Metadata from the
        metadata log it replays, a moment after the controller's answer)."""
        conn = self._setup_conn()
        request = self.create_request(7, topics)
        conn.wire.send(request)
        response = conn.wire.receive(request)
        failed = [(t.name, t.error_code, t.error_message) for t in response.topics if t.error_code]
        if failed:
            raise AssertionError(f"{self.side.kind}: set-up create failed: {failed}")
        listed = self.metadata_request(12, [t.name for t in map(_spec, topics)])
        deadline = time.monotonic() + 30
        while True:
            conn.wire.send(listed)
            if all(t.error_code == 0 for t in conn.wire.receive(listed).topics):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.side.kind}: set-up topics not listed after 30 s")
            time.sleep(0.01)

    def _setup_conn(self) -> Conn:
        conn = Conn(self, self.side.bootstrap(self.sasl, 0), f"{self.client_id}-setup")
        self._conns.append(conn)
        if self.sasl:
            self.authenticate(conn, "admin", USERS["admin"], record=False)
        return conn

    def state(self) -> dict[str, int]:
        """The scenario's topics and their partition counts, once the broker has replayed every change made
        so far: a barrier topic, created last, is listed (the metadata log is replayed in order)."""
        conn = self._setup_conn()
        barrier = Exact(f"{BARRIER}{self.client_id}-{len(self.observations)}")
        from kafka.protocol.admin.topics import CreateTopicsRequest
        from kafka.protocol.metadata.metadata import MetadataRequest

        request = self.create_request(7, [T(barrier)])
        conn.wire.send(request)
        conn.wire.receive(request)
        assert isinstance(request, CreateTopicsRequest)
        metadata = MetadataRequest(
            version=12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )
        deadline = time.monotonic() + 30
        while True:
            conn.wire.send(metadata)
            response = conn.wire.receive(metadata)
            names = {t.name for t in response.topics if t.error_code == 0}
            if barrier.name in names or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        return {self.relative(t.name): len(t.partitions) for t in response.topics if self.ns.prefix in t.name}


# -- scenarios -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A sequence of requests, run against both brokers. ``rate``: the controller mutation quota of the
    scenario's client id (None: unbounded). ``deliberate``: fields (an observation's key, or "state") where
    QuotaBroker differs on purpose, with the reason; ``departs``: a known departure not yet fixed."""

    group: str
    name: str
    run: Callable[[Run], None]
    setup: Setup = DEFAULT
    rate: float | None = None
    sasl: bool = False
    deliberate: Mapping[str, str] = field(default_factory=dict)
    departs: str | None = None

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"

    @property
    def module(self) -> str:
        """The scenario module it is written in (``scenarios_quota``, ...)."""
        return self.run.__module__.rsplit(".", 1)[-1]


SCENARIOS: list[Scenario] = []


def scenario(
    group: str,
    name: str,
    *,
    setup: Setup = DEFAULT,
    rate: float | None = None,
    sasl: bool = False,
    deliberate: Mapping[str, str] | None = None,
    departs: str | None = None,
) -> Callable[[Callable[[Run], None]], Callable[[Run], None]]:
    def register(fn: Callable[[Run], None]) -> Callable[[Run], None]:
        if any(s.group == group and s.name == name for s in SCENARIOS):
            raise ValueError(f"scenario {group}/{name} registered twice")
        SCENARIOS.append(Scenario(group, name, fn, setup, rate, sasl, dict(deliberate or {}), departs))
        return fn

    return register


def all_scenarios() -> list[Scenario]:
    """Every scenario, registered by importing the scenario modules."""
    from tests.real_kafka import scenarios_errors, scenarios_quorum, scenarios_quota, scenarios_reads  # noqa: F401

    return list(SCENARIOS)


# -- running and comparing -------------------------------------------------------------------------------


@dataclass
class SideResult:
    observations: list[Observation]
    state: dict[str, int]
    error: str | None = None


@dataclass
class Outcome:
    scenario: Scenario
    kafka: SideResult
    quota_broker: SideResult
    differences: list[str]  # departures that fail the scenario
    deliberate: list[str]  # departures kept on purpose

    @property
    def agree(self) -> bool:
        return not self.differences


def _run_side(scenario: Scenario, side: Side, ns: KafkaNamespace) -> SideResult:
    run = Run(side, ns, scenario.sasl)
    try:
        if scenario.rate is not None:
            side.set_quota(ns.client_id, scenario.rate)
        scenario.run(run)
        return SideResult(run.observations, run.state())
    except Exception as exc:  # recorded, so that the other side's answers are still shown
        return SideResult(run.observations, {}, f"{type(exc).__name__}: {exc}{_where(exc)}")
    finally:
        run.close()


def _where(exc: BaseException) -> str:
    """Where a scenario failed: its own line, and the harness call it was in."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if "/scenarios_" in f.filename]
    if not own:
        return ""
    line = f" (at {own[-1].filename.rsplit('/', 1)[-1]}:{own[-1].lineno}"
    inner = frames[frames.index(own[-1]) + 1 :]
    return line + (f", in {inner[0].name})" if inner else ")")


@contextmanager
def quota_broker_for(scenario: Scenario) -> Iterator[QuotaBrokerSide]:
    """A QuotaBroker for one scenario, configured as its Setup, stopped after it."""
    broker = scenario.setup.quota_broker(sasl=scenario.sasl).start()
    try:
        yield QuotaBrokerSide(broker)
    finally:
        broker.stop()


def run_scenario(scenario: Scenario, kafka: KafkaCluster, ns: KafkaNamespace) -> Outcome:
    """Both sides at once, each on a thread of its own: ``kafka`` (shared, kept apart by ``ns``) and a
    QuotaBroker started for the scenario."""
    with quota_broker_for(scenario) as qb, concurrent.futures.ThreadPoolExecutor(2) as pool:
        real = pool.submit(_run_side, scenario, KafkaSide(kafka), ns)
        model = pool.submit(_run_side, scenario, qb, ns)
        kafka_result, qb_result = real.result(), model.result()
    differences, deliberate = compare(kafka_result, qb_result, scenario.deliberate)
    return Outcome(scenario, kafka_result, qb_result, differences, deliberate)


def throttle_ends(throttle_ms: int, round_trip_ms: int | None) -> tuple[int, int]:
    """When a reported throttle ends, in ms from the request's send, as (earliest, latest). A broker reports what
    is left of the throttle when it answers: Kafka after its controller's work (a DeleteTopics of 10 partitions
    took 290 ms on a loaded machine, and its throttle was 290 ms shorter than QuotaBroker's, which answers at
    once); so a throttle t ends about the answer's round trip after t. A throttle of 0 ended (or never began) by the
    answer: anywhere up to the round trip."""
    round_trip = round_trip_ms or 0
    return (throttle_ms + round_trip, throttle_ms + round_trip) if throttle_ms > 0 else (0, round_trip)


def compare(
    kafka: SideResult, qb: SideResult, deliberate: Mapping[str, str] = {}
) -> tuple[list[str], list[str]]:  # fmt: skip
    """(departures, deliberate departures) between the two sides' records."""
    out: list[str] = []
    kept: list[str] = []

    def differ(key: str, text: str) -> None:
        (kept if key in deliberate else out).append(text)

    for label, result in (("Kafka", kafka), ("QuotaBroker", qb)):
        if result.error:
            out.append(f"{label} raised {result.error}")
    steps_k = [o.step for o in kafka.observations]
    steps_q = [o.step for o in qb.observations]
    if steps_k != steps_q:
        out.append(f"steps: Kafka {steps_k} != QuotaBroker {steps_q}")
    for index, (k, q) in enumerate(zip(kafka.observations, qb.observations, strict=False)):
        for key in sorted(set(k.exact) | set(q.exact)):
            if k.exact.get(key) != q.exact.get(key):
                differ(key, f"step {index + 1} ({k.step}) {key}: Kafka {k.exact.get(key)!r} != "
                       f"QuotaBroker {q.exact.get(key)!r}")  # fmt: skip
        for key in sorted(set(k.timed) | set(q.timed)):
            a, b = k.timed.get(key), q.timed.get(key)
            gap: float
            if a is None or b is None:
                gap = math.inf
            elif key == "throttle_time_ms":
                (a_from, a_to), (b_from, b_to) = throttle_ends(a, k.round_trip_ms), throttle_ends(b, q.round_trip_ms)
                gap = max(0, max(a_from, b_from) - min(a_to, b_to))
            else:
                gap = abs(a - b)
            if gap > TOLERANCE_MS:
                at = f" answered after {k.round_trip_ms} and {q.round_trip_ms} ms," if key == "throttle_time_ms" else ""
                differ(key, f"step {index + 1} ({k.step}) {key}: Kafka {a} vs QuotaBroker {b} ({at}> ±{TOLERANCE_MS})")
    if kafka.state != qb.state and not (kafka.error or qb.error):
        differ("state", f"state: Kafka {kafka.state} != QuotaBroker {qb.state}")
    return out, kept


# -- in pytest -------------------------------------------------------------------------------------------


def scenario_params(module: str) -> list[Any]:
    """pytest params of the scenarios written in ``module``, by id; a known departure is xfail (strict)."""
    import pytest

    return [
        pytest.param(s, id=s.id, marks=[pytest.mark.xfail(strict=True, reason=s.departs)] if s.departs else [])
        for s in all_scenarios()
        if s.module == module
    ]


def run_with(scenario: Scenario, kafka_cluster_of: Callable[..., KafkaCluster], ns: KafkaNamespace) -> Outcome:
    """Run ``scenario`` on the run's shared cluster of its Setup (the ``kafka_cluster_of`` fixture)."""
    spec = scenario.setup.broker_spec()
    cluster = kafka_cluster_of(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)})
    return run_scenario(scenario, cluster, ns)


def report(outcome: Outcome) -> str:
    """An assertion message: what departed, and both sides' answers."""
    lines = [f"{outcome.scenario.id}: QuotaBroker departs from Kafka 4.4.0"]
    lines += [f"  {d}" for d in outcome.differences]
    for label, result in (("Kafka", outcome.kafka), ("QuotaBroker", outcome.quota_broker)):
        lines.append(f"  {label}:")
        lines += [f"    {o.summary()}" for o in result.observations]
        lines.append(f"    state {result.state}")
    return "\n".join(lines)


# -- docs/testing-broker.md's table ----------------------------------------------------------------------


def _describe(result: SideResult, limit: int = 400) -> str:
    parts = [_cut(o.summary(), limit) for o in result.observations]
    if result.error:
        parts.append(f"raised {result.error}")
    parts.append("state " + ("{" + ", ".join(f"{k}: {v}" for k, v in sorted(result.state.items())) + "}"))
    return "; ".join(parts)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown_row(outcome: Outcome) -> str:
    kafka = _describe(outcome.kafka)
    qb = _describe(outcome.quota_broker) if outcome.differences or outcome.deliberate else _timed_deltas(outcome)
    return _row([outcome.scenario.id, kafka, qb, _verdict(outcome)])


def verdict_row(outcome: Outcome) -> str:
    """docs/testing-broker.md's row: the scenario and whether the brokers agree (``--markdown`` shows the answers)."""
    return _row([outcome.scenario.id, _verdict(outcome)])


def _verdict(outcome: Outcome) -> str:
    if outcome.differences:
        return "**no**: " + "; ".join(_cut(d, 400) for d in outcome.differences)
    if outcome.deliberate:
        return "no, on purpose: " + "; ".join(sorted(set(outcome.scenario.deliberate.values())))
    return "yes"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _timed_deltas(outcome: Outcome) -> str:
    deltas = [
        f"{key} {q.timed[key]}"
        for k, q in zip(outcome.kafka.observations, outcome.quota_broker.observations, strict=False)
        for key in q.timed
        if key in k.timed and (k.timed[key] or q.timed[key])
    ]
    return "the same" + (" (" + ", ".join(deltas) + ")" if deltas else "")


MARKDOWN_HEADER = "| scenario | what Kafka 4.4.0 did | what QuotaBroker did | agree |\n|---|---|---|---|"
VERDICT_HEADER = "| scenario | agree |\n|---|---|"
TABLE_START = "<!-- differential table: python -m tests.real_kafka.differential --write docs/testing-broker.md -->"
TABLE_END = "<!-- end of the differential table -->"


def write_table(path: str, table: str) -> None:
    """Replace the table between TABLE_START and TABLE_END in ``path``."""
    from pathlib import Path

    doc = Path(path)
    text = doc.read_text()
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    doc.write_text(text[:start] + "\n" + table + "\n" + text[end:])


def main(argv: Sequence[str] | None = None) -> int:
    """Run every scenario (or those whose id contains an argument) against Kafka 4.4 and QuotaBroker."""
    import argparse

    from tests.real_kafka.share import make_share_dir, shared_cluster, stop_all

    parser = argparse.ArgumentParser(prog="python -m tests.real_kafka.differential")
    parser.add_argument("--markdown", action="store_true", help="print docs/testing-broker.md's table")
    parser.add_argument("--write", metavar="PATH", help="write the table into PATH between its markers")
    parser.add_argument("only", nargs="*", help="run the scenarios whose id contains one of these")
    args = parser.parse_args(argv)
    root = make_share_dir()
    failures = 0
    rows, verdicts = [], []
    quorums: dict[BrokerSpec, KafkaCluster] = {}  # started here: their scenarios stop and start this process's JVMs
    try:
        for sc in all_scenarios():
            if args.only and not any(o in sc.id for o in args.only):
                continue
            spec = sc.setup.broker_spec()
            if spec.quorum > 1 and spec not in quorums:
                quorums[spec] = KafkaCluster.start(spec, root / f"own-{spec.key}")
            cluster = quorums[spec] if spec.quorum > 1 else shared_cluster(spec)
            outcome = run_scenario(sc, cluster, KafkaNamespace.for_test(f"differential::{sc.id}::{time.time()}"))
            failures += not outcome.agree
            rows.append(markdown_row(outcome))
            verdicts.append(verdict_row(outcome))
            if not args.markdown:
                print(f"{'agree' if outcome.agree else 'DIFFER'} {sc.id}", flush=True)
                for line in outcome.differences + outcome.deliberate:
                    print(f"    {line}")
    finally:
        for quorum in quorums.values():
            quorum.stop()
        stop_all(root)
    table = MARKDOWN_HEADER + "\n" + "\n".join(rows)
    if args.markdown:
        print(table)
    if args.write:
        write_table(args.write, VERDICT_HEADER + "\n" + "\n".join(verdicts))
    return 1 if failures else 0


if __name__ == "__main__":
    # Run the imported module's main: the scenario modules register into it, not into this __main__ copy.
    from tests.real_kafka import differential

    raise SystemExit(differential.main())
