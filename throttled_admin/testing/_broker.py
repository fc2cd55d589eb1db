"""``QuotaBroker``: a Kafka-compatible broker that enforces the controller mutation quota (KIP-599) and the
request quota (KIP-124) as Apache Kafka 4 (KRaft) does, for tests and demos without a cluster."""

from __future__ import annotations

import math
import ssl
import sys
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal

from kafka.protocol.api_key import ApiKey

from throttled_admin._kafka.refusals import MAX_RECORDS_PER_USER_OP
from throttled_admin.testing._cluster import Cluster, CreateSpec
from throttled_admin.testing._handlers import ANONYMOUS, BrokerContext
from throttled_admin.testing._quotas import QUOTA_KEY, REQUEST_PERCENTAGE, QuotaEntity, QuotaManager, RequestQuota
from throttled_admin.testing._sasl import MECHANISMS as SASL_MECHANISMS
from throttled_admin.testing._sasl import ScramCredentials
from throttled_admin.testing._server import DEFAULT_REQUEST_LOG_LIMIT, Faults, RequestRecord, Server

__all__ = ["Enforcement", "QuotaBroker", "cluster_or_quota_broker"]

Enforcement = Literal["by-version", "strict", "permissive", "redpanda"]
_ENFORCEMENTS = ("by-version", "strict", "permissive", "redpanda")


def _api_key(api: int | str) -> int:
    """An API by number (19) or by Kafka's name ("CreateTopics")."""
    try:
        return int(ApiKey[api]) if isinstance(api, str) else int(ApiKey(api))
    except (KeyError, ValueError):
        raise ValueError(f"unknown Kafka API {api!r}: pass its name (e.g. 'CreateTopics') or key (19)") from None


def _seconds(name: str, value: float, unit: str = "seconds") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of {unit} >= 0, got {value!r}")
    return float(value)


_UNSET: Any = object()


class QuotaBroker:
    """A quota-enforcing Kafka broker on 127.0.0.1, served from a background thread.

    ``controller_mutation_rate`` is the quota of the default user entity: every principal gets its own
    bucket of that rate, shared by all its client-ids (without SASL every client is ``ANONYMOUS``).
    ``enforcement``: ``"by-version"`` is Apache Kafka (error 89 only for CreateTopics >= v6,
    DeleteTopics >= v5, CreatePartitions >= v3); ``"strict"`` rejects whatever the version, as some
    Kafka-compatible services do; ``"permissive"`` never rejects, only throttles; ``"redpanda"`` answers as
    Redpanda does (UNKNOWN_SERVER_ERROR "Too many partition mutations requested" below those versions, 89 with
    that message from them on; a burst of one second of the rate whatever ``quota_window_*`` say; refused
    topics charged; the connection not muted; see docs/testing-broker.md).
    ``users`` (name -> password) turns on SASL: every client must authenticate, with one of ``sasl_mechanisms``
    (Kafka's ``sasl.enabled.mechanisms``: ``PLAIN`` by default; ``SCRAM-SHA-256`` and ``SCRAM-SHA-512`` too, their
    credentials made from the same passwords). ``ssl_context`` (a server-side ``ssl.SSLContext``) makes every
    listener TLS (SSL, or SASL_SSL with ``users``).
    ``request_percentage`` is the request quota (KIP-124) of the default user entity, in percent of one
    thread's time per second over ``request_quota_window_num`` windows of ``request_quota_window_size_s``
    (Kafka's ``quota.window.*``); ``request_time_cost_ms`` makes every request cost that fixed time instead of
    its measured handling time (deterministic tests). ``request_log_limit`` caps the request log (the oldest
    records are dropped). ``broker_configs`` are static broker configs, validated as Kafka does: for example
    ``num.partitions``, ``default.replication.factor``, ``auto.create.topics.enable`` (default ``true``, as Kafka)
    and ``log.retention.hours``, which topics then show as STATIC_BROKER_CONFIG defaults.
    ``max_records_per_op`` is KRaft's cap (10,000, a constant in Kafka 4.4.0; other values model clusters that
    use another): a CreateTopics whose partitions add up to more is refused whole with POLICY_VIOLATION
    "Excessively large number of partitions per request.", a CreatePartitions adding more partitions with
    "Excessively large number of additional partitions per request.", and a CreateTopics making more metadata
    records with "Unable to perform excessively large batch operation."; ``cap_message`` replaces all three
    (a cluster whose words differ, as Kafka 4.5's may: KAFKA-20976). ``metadata_lag_ms``: every node but
    the controller (node 0) shows a topic change (create, grow, delete) that much later in its Metadata
    answers, as a KRaft broker replaying the metadata log; mutations themselves are decided by the controller
    at once.
    ``ssl_context`` (a server-side ``ssl.SSLContext`` holding the broker's certificate) makes every listener a
    TLS listener (``SSL``, or ``SASL_SSL`` with ``users``), as Kafka's: the handshake comes first, and a client
    that does not speak TLS is disconnected. Python 3.11 or later.
    ``owns_process``: the broker is all its process runs (``python -m throttled_admin.testing`` says so): its
    controller turns Python's garbage collector off while it handles a mutation, so that a request's topics cost the
    same whatever its size; a collector already off when a mutation starts is left off. Leave it False in a process
    that runs anything else: the switch is process-wide. A ThrottledAdminClient's own hold during a bulk call (which
    leaves a collector it finds off alone) could find it off and skip its own, and a hold of the client's that ends
    during a mutation turns the collector on under it.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        num_brokers: int = 1,
        controller_mutation_rate: float | None = None,
        quota_window_num: int = 11,
        quota_window_size_s: float = 1.0,
        enforcement: Enforcement = "by-version",
        users: dict[str, str] | None = None,
        request_percentage: float | None = None,
        request_time_cost_ms: float | None = None,
        request_quota_window_num: int = 11,
        request_quota_window_size_s: float = 1.0,
        request_log_limit: int = DEFAULT_REQUEST_LOG_LIMIT,
        broker_configs: Mapping[str, str] | None = None,
        max_records_per_op: int = MAX_RECORDS_PER_USER_OP,
        cap_message: str | None = None,
        metadata_lag_ms: float = 0,
        sasl_mechanisms: Sequence[str] = ("PLAIN",),
        ssl_context: ssl.SSLContext | None = None,
        owns_process: bool = False,
    ) -> None:
        _positive_int("num_brokers", num_brokers)
        if enforcement not in _ENFORCEMENTS:
            raise ValueError(f"enforcement must be one of {_ENFORCEMENTS}, got {enforcement!r}")
        _positive_int("quota_window_num", quota_window_num)
        if not quota_window_size_s > 0:
            raise ValueError(f"quota_window_size_s must be > 0, got {quota_window_size_s}")
        if not 0 <= port <= 65535 or (port and port + num_brokers - 1 > 65535):
            raise ValueError(f"port {port} does not leave room for {num_brokers} broker(s)")
        _positive_int("request_log_limit", request_log_limit)
        _positive_int("max_records_per_op", max_records_per_op)
        if cap_message is not None and (not isinstance(cap_message, str) or not cap_message):
            raise ValueError(f"cap_message must be a non-empty str or None, got {cap_message!r}")
        lag_ms = _seconds("metadata_lag_ms", metadata_lag_ms, "milliseconds")
        mechanisms = tuple(sasl_mechanisms) if not isinstance(sasl_mechanisms, str) else (sasl_mechanisms,)
        if not mechanisms or any(m not in SASL_MECHANISMS for m in mechanisms):
            raise ValueError(f"sasl_mechanisms must be some of {SASL_MECHANISMS}, got {sasl_mechanisms!r}")
        if request_time_cost_ms is not None:
            _seconds("request_time_cost_ms", request_time_cost_ms, "milliseconds")
        _positive_int("request_quota_window_num", request_quota_window_num)
        if not request_quota_window_size_s >= 0.001:
            raise ValueError(f"request_quota_window_size_s must be >= 0.001, got {request_quota_window_size_s}")
        for user, password in (users or {}).items():  # (Kafka's PLAIN and SCRAM refuse either empty; librdkafka too)
            if not user or not password:
                named = f"user {user!r}" if user else "a user with no name"
                raise ValueError(
                    f"users: {named} needs a name and a password (Kafka's SASL logins refuse an empty one)"
                )
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise TypeError(f"ssl_context must be an ssl.SSLContext, got {type(ssl_context).__name__}")
        if ssl_context is not None and sys.version_info < (3, 11):
            raise ValueError("QuotaBroker's TLS listener needs Python 3.11 or later (asyncio's StreamWriter.start_tls)")
        redpanda = enforcement == "redpanda"  # Redpanda's bucket holds one second of the rate
        self._quotas = QuotaManager(
            window_num=1 if redpanda else quota_window_num,
            window_size_s=1.0 if redpanda else quota_window_size_s,
            request_window_num=request_quota_window_num,
            request_window_size_s=request_quota_window_size_s,
        )
        everyone = QuotaEntity(user=QuotaEntity.DEFAULT)
        if controller_mutation_rate is not None:
            self._quotas.set_quota(everyone, controller_mutation_rate, QUOTA_KEY)
        if request_percentage is not None:
            self._quotas.set_quota(everyone, request_percentage, REQUEST_PERCENTAGE)
        self._request_time_cost_ms = request_time_cost_ms
        self._request_log_limit = request_log_limit
        node_ids = list(range(num_brokers))
        self._cluster = Cluster(node_ids, broker_configs=broker_configs, metadata_lag_s=lag_ms / 1000)
        self._ports = {node: (port + node if port else 0) for node in node_ids}
        self._faults = Faults()
        self._context = BrokerContext(
            cluster=self._cluster,
            quotas=self._quotas,
            enforcement=enforcement,
            users=dict(users) if users is not None else None,
            addresses={},
            max_records_per_op=max_records_per_op,
            cap_message=cap_message,
            sasl_mechanisms=mechanisms,
            scram_credentials=ScramCredentials(dict(users or {})),
        )
        self._ssl_context = ssl_context
        self.owns_process = bool(owns_process)  # (the controller's collections: ``_server.collections_held``)
        self._server: Server | None = None
        self._records: deque[RequestRecord] = deque(maxlen=request_log_limit)  # kept across restarts

    def __repr__(self) -> str:
        state = f"bootstrap_servers={self.bootstrap_servers!r}" if self._server else "stopped"
        return f"QuotaBroker({state}, enforcement={self._context.enforcement!r})"

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> QuotaBroker:
        """Start serving (also from code running inside an asyncio event loop: the broker has its own)."""
        if self._server is not None:
            raise RuntimeError("QuotaBroker is already running")
        server = Server(
            self._context,
            self._faults,
            request_log_limit=self._request_log_limit,
            request_time_cost_ms=self._request_time_cost_ms,
            ssl_context=self._ssl_context,
            owns_process=self.owns_process,
        )
        self._ports = server.start(self._ports)  # later starts reuse the bound ports
        self._context.addresses = {node: ("127.0.0.1", port) for node, port in self._ports.items()}
        self._server = server
        return self

    def stop(self) -> None:
        """Stop serving every node; topics, quota settings and the request log are kept for a later ``start()``,
        which starts every node with fresh quota buckets and sensors, as Kafka's live in the process's memory.
        Safe to call from code running inside an asyncio event loop."""
        server, self._server = self._server, None
        if server is not None:
            self._records.extend(server.records())
            server.stop()
            for node in self._ports:
                self._quotas.forget_node(node)
            self._cluster.all_up()
            self._context.addresses = {}

    def restart(self) -> None:
        """Stop and start again on the same ports (a broker bounce): topics and quota settings are kept, the quota
        buckets and sensors start fresh (seen on Kafka 4.4.0: a principal that owed 30 s was admitted at once), and
        the controller quorum elects its leader again (DescribeQuorum's leader epoch grows by one)."""
        self.stop()
        with self._cluster.lock:
            self._cluster.controller_epoch += 1  # (before it serves: a forward re-sent meanwhile finds the new one)
        self.start()

    # -- one node at a time (a quorum's rolling restart, a crash, a controller failover) -------------

    def stop_node(
        self, node_id: int, *, kill: bool = False, unregister: bool = False, fenced_after_s: float = 0.0
    ) -> None:
        """Stop one node, keeping its port: its connections are cut (requests it had not answered get nothing), its
        request sensors and, were it the controller, its quota buckets are gone. A stopped controller fails over to
        the next live node, whose buckets are charged from then on (fresh: the principal's debt is forgiven, as on
        Kafka 4.4.0). ``kill`` (kill -9) behaves as a stop here: what Kafka 4.4.0 showed differs in neither. The node
        stays registered, so replicas are still placed on it (as Kafka 4.4.0 did); ``unregister`` also removes it
        from the brokers the controller counts until it starts again, so a create whose replication factor exceeds
        the rest fails with INVALID_REPLICATION_FACTOR ("... only N broker(s) are registered ...", uncharged), as
        issue 37's rolling restart saw on Kafka. ``fenced_after_s``: Metadata goes on naming the stopped controller
        as controller for that long (a KRaft broker names any unfenced broker, a stopped one until its session
        times out: ``broker.session.timeout.ms``, 9 s by default), as librdkafka was told after a kill -9 on Kafka
        4.4.0."""
        if self._server is None or node_id not in self._ports:
            raise ValueError(f"node {node_id} is not serving")
        live = self._cluster.live()
        if node_id not in live:
            return
        if live == [node_id]:
            raise ValueError("the last node serving: stop() stops the broker")
        self._server.stop_node(node_id)
        self._cluster.node_down(node_id, unregister=unregister)
        self._quotas.forget_node(node_id)
        self._context.addresses.pop(node_id, None)
        if node_id == self._cluster.controller_id:
            self._cluster.name_until_fenced(node_id, fenced_after_s)
            self.fail_over()

    def start_node(self, node_id: int) -> None:
        """Start a stopped node again on its port; it registers at once, with fresh sensors and buckets."""
        if self._server is None or node_id not in self._ports:
            raise ValueError(f"node {node_id} is not part of a running broker")
        if node_id in self._cluster.live():
            return
        self._server.start_node(node_id, self._ports[node_id])
        self._cluster.node_up(node_id)
        self._context.addresses[node_id] = ("127.0.0.1", self._ports[node_id])

    def restart_node(self, node_id: int, *, kill: bool = False) -> None:
        self.stop_node(node_id, kill=kill)
        self.start_node(node_id)

    def fail_over(self, to: int | None = None) -> int:
        """Move the active controller to node ``to`` (default: the next live node after it) and return its id.
        Metadata names it from then on, and the quota is charged to its buckets: fresh ones on a node that was never
        the controller since it started (Kafka's quota sensors are the active controller's)."""
        live = self._cluster.live()
        if to is None:
            current = self._cluster.controller_id
            to = next((n for n in live if n > current), live[0])
        if to not in live:
            raise ValueError(f"node {to} is not serving: it cannot become the controller")
        with self._cluster.lock, self._quotas.lock:
            self._cluster.controller_id = to
            self._cluster.controller_epoch += 1
            self._quotas.controller = to
        return to

    def __enter__(self) -> QuotaBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def ports(self) -> dict[int, int]:
        """Node id -> port (0 until first started with port=0)."""
        return dict(self._ports)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for _, port in sorted(self._ports.items()))

    @property
    def security_protocol(self) -> str:
        """What a client sets as ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
        sasl = "SASL_" if self._context.users is not None else ""
        return sasl + ("SSL" if self._ssl_context is not None else "PLAINTEXT")

    @property
    def controller_id(self) -> int:
        return self._cluster.controller_id

    @property
    def cluster_id(self) -> str:
        """The cluster id Metadata answers (what ``describe_cluster()`` reports): random per QuotaBroker, in Kafka's
        form."""
        return self._cluster.cluster_id

    # -- state -----------------------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        return self._cluster.snapshot()

    def create_topic(self, name: str, num_partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        """Create a topic directly (no request, no quota), to set up a test."""
        spec = CreateSpec(name, num_partitions, -1, configs=dict(configs or {}))
        error, _ = self._cluster.create_topic(spec, RequestQuota(self._quotas, None, strict=False), validate_only=False)
        if error.code:
            raise ValueError(f"cannot create topic {name!r}: {error.message}")

    def tokens(self, user: str | None = None, client_id: str | None = None) -> float | None:
        """Tokens left in the bucket that ``user`` (default ANONYMOUS) with ``client_id`` charges; None
        when no quota applies to them."""
        return self._quotas.tokens(user if user is not None else ANONYMOUS, client_id or "")

    def set_quota(
        self,
        *,
        user: str | None = None,
        client_id: str | None = None,
        controller_mutation_rate: float | None = _UNSET,
        request_percentage: float | None = _UNSET,
        producer_byte_rate: float | None = _UNSET,
        consumer_byte_rate: float | None = _UNSET,
    ) -> None:
        """Set quotas of an entity at any level of Kafka's precedence. ``user`` and ``client_id`` take
        a name or ``QuotaEntity.DEFAULT`` (``"<default>"``); leave one out for a single-part entity.
        Pass each quota key to change; None removes it. Values are validated as Kafka validates them
        (finite, > 0, whole numbers for the byte rates): ValueError, nothing changed.
        The byte-rate quotas are stored and described only (QuotaBroker has no data plane)."""
        entity = QuotaEntity(user=user, client_id=client_id)
        changes = {
            key: value
            for key, value in (
                (QUOTA_KEY, controller_mutation_rate),
                (REQUEST_PERCENTAGE, request_percentage),
                ("producer_byte_rate", producer_byte_rate),
                ("consumer_byte_rate", consumer_byte_rate),
            )
            if value is not _UNSET
        }
        if not changes:
            raise ValueError("set_quota needs at least one quota key, e.g. controller_mutation_rate=5")
        probe = QuotaManager(window_num=1, window_size_s=1.0)
        for key, value in changes.items():  # validate every key before changing any
            probe.set_quota(entity, value, key)
        for key, value in changes.items():
            self._quotas.set_quota(entity, value, key)

    def set_max_records_per_op(self, records: int) -> None:
        """Change the batch cap (``max_records_per_op``) from the next mutation on, as an operator changes Kafka
        4.5's setting (KAFKA-20976) or a controller of another version is elected."""
        self._context.max_records_per_op = _positive_int("max_records_per_op", records)

    def quotas(self, key: str = QUOTA_KEY) -> dict[QuotaEntity, float]:
        """Entity -> quota ``key`` (default ``controller_mutation_rate``), for the entities that set it."""
        return self._quotas.quotas(key)

    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        """Entity -> every quota key it sets, as DescribeClientQuotas reports them."""
        return self._quotas.entity_quotas()

    def request_rate(self, user: str | None = None, client_id: str | None = None, node_id: int = 0) -> float | None:
        """The request-time percentage (KIP-124) that ``user`` (default ANONYMOUS) with ``client_id`` has used
        on broker ``node_id`` over the quota window (request quotas are per broker, as in Kafka); None when no
        request quota applies to them."""
        return self._quotas.request_rate(user if user is not None else ANONYMOUS, client_id or "", node_id)

    def request_log(self) -> list[RequestRecord]:
        """The requests served so far (at most ``request_log_limit``, the newest), across restarts, in the
        order they were received."""
        current = self._server.records() if self._server else []
        return sorted([*self._records, *current], key=lambda r: r.received_at)[-self._request_log_limit :]

    def open_connections(self) -> int:
        """Client connections the broker is not yet done with: open, or closed by either side while the broker
        still handles a request that came on them. 0 once a client has closed its connections means every request
        it wrote has been handled (or dropped with its connection): a test reads the broker's final state then,
        instead of sleeping."""
        return self._server.open_connections() if self._server else 0

    def clear_request_log(self) -> None:
        self._records.clear()
        if self._server:
            self._server.clear_records()

    # -- fault injection -------------------------------------------------------------------------

    def drop_connections(self) -> None:
        """Close every open client connection (the listeners stay up)."""
        if self._server:
            self._server.drop_connections()

    def fail_next(
        self, api: int | str, error_code: int, count: int = 1, *, applied: bool = False, message: str | None = None
    ) -> None:
        """The next ``count`` (>= 1) requests of ``api`` fail every topic (or resource) with ``error_code``
        (non-zero), charging nothing. ``fail_next("CreateTopics", 41)`` injects NOT_CONTROLLER. ``applied``: a
        mutation is applied and charged as usual first, then answered so, as by a KRaft controller that resigns
        before it answers (it fails what it has not committed with NOT_CONTROLLER; its successor commits it).
        ``message``: the error message, as a broker words it (default: one saying QuotaBroker injected it). Calls
        queue in order: ``fail_next(api, 38, message=...)`` then ``fail_next(api, 41)`` fails the next request with
        38 and the one after with 41."""
        self._faults.fail_next(_api_key(api), error_code, count, applied, message)

    def fail_metadata_next(self, error_code: int, count: int = 1) -> None:
        """The next ``count`` (>= 1) Metadata requests of v13 or later (the first with a top-level ``error_code``)
        are answered with ``error_code`` (non-zero) at the top level, no brokers and no topics: the answer as a
        whole is refused. ``fail_metadata_next(129)`` asks the client to rebootstrap (REBOOTSTRAP_REQUIRED,
        KIP-1102). Requests of earlier versions are answered as usual and do not consume the fault."""
        self._faults.fail_metadata_next(error_code, count)

    def blackhole_next(self, api: int | str, count: int = 1) -> threading.Event:
        """The next ``count`` (>= 1) requests of ``api`` are processed but never answered. Returns an event set
        when the last of them has been processed (logged, a mutation applied) and left unanswered: a test waits on
        it to act while the request is in flight."""
        return self._faults.blackhole_next(_api_key(api), count)

    def garble_next(self, api: int | str, how: str, count: int = 1) -> None:
        """The responses to the next ``count`` (>= 1) requests of ``api`` (CreateTopics, DeleteTopics or
        CreatePartitions) are garbled; the requests themselves are applied and charged as usual. ``how``:
        ``"drop-last"`` omits the last topic's result, ``"add"`` adds a success for a topic the request did not
        name (``"garbled-unrequested"``), ``"double"`` repeats the last topic's result. (Omitting the first
        result is not offered: it crashes librdkafka's parser in confluent-kafka 2.16.)"""
        self._faults.garble_next(_api_key(api), how, count)

    def delay_next(self, api: int | str, seconds: float, count: int = 1) -> None:
        """The responses to the next ``count`` (>= 1) requests of ``api`` are sent ``seconds`` late (on top of
        ``set_latency``); the requests are handled, and mutations applied, at once. Later requests on the same
        connection wait behind the late answer, as Kafka serves one request per connection at a time."""
        self._faults.delay_next(_api_key(api), seconds, count)

    def set_unresponsive(self, unresponsive: bool = True) -> None:
        """Keep accepting connections and reading requests, but handle and answer none (a hung broker, or a
        listener that is not really serving): a client waits for its first ApiVersions answer forever. The
        requests are logged (``responded_at`` None). ``set_unresponsive(False)`` serves the requests that arrive
        from then on."""
        self._faults.unresponsive = bool(unresponsive)

    def hold_controller_next(self, seconds: float) -> threading.Event:
        """The controller holds the next CreateTopics, DeleteTopics or CreatePartitions for ``seconds`` before
        handling it, as a slow ``CreateTopicPolicy`` holds Kafka's controller thread: every mutation behind it
        waits, and one whose deadline passes meanwhile fails with REQUEST_TIMED_OUT. Returns an event set when
        the controller starts holding (once the held request has arrived)."""
        return self._faults.hold_controller_next(seconds)

    def set_latency(self, seconds: float) -> None:
        """Delay every response by ``seconds`` after it was handled (0 to stop)."""
        self._faults.latency_s = _seconds("latency", seconds)

    def slow_policy(self, prefix: str, seconds: float) -> None:
        """A slow CreateTopicPolicy: the controller takes ``seconds`` over each topic whose name starts with
        ``prefix`` (``seconds`` 0 to stop), inside its handling of the CreateTopics request, after the request's
        deadline (``timeout_ms``) was checked, as Kafka calls a policy's ``validate()``. The topic is created however
        long that takes, after the deadline too: KRaft times out an event still queued, never one it has begun.
        The controller handles one mutation at a time, so later mutations wait behind it, and so does the answer."""
        if not isinstance(prefix, str):
            raise ValueError(f"prefix must be a str, got {prefix!r}")
        seconds = _seconds("policy latency", seconds)
        self._faults.slow_policy = (prefix, seconds) if seconds > 0 else None

    def set_controller_latency(self, seconds: float) -> None:
        """Delay the controller's handling of every CreateTopics, DeleteTopics and CreatePartitions by
        ``seconds`` (0 to stop): the delay comes before the deadline check and the mutation, and mutations
        queue behind each other, as on a busy KRaft controller. A request whose ``timeout_ms`` has passed by
        then fails with REQUEST_TIMED_OUT and changes nothing."""
        self._faults.controller_latency_s = _seconds("controller latency", seconds)


def _positive_int(name: str, value: Any) -> int:
    """``value`` if an int >= 1 (not a bool), else ValueError naming the setting."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


@contextmanager
def cluster_or_quota_broker(bootstrap_servers: str | None = None, **broker_kwargs: Any) -> Iterator[str]:
    """Yield ``bootstrap_servers`` when given; otherwise start a QuotaBroker with ``broker_kwargs`` for the
    duration and yield its address. Lets one script run against a real cluster or the embedded broker."""
    if bootstrap_servers:
        yield bootstrap_servers
        return
    with QuotaBroker(**broker_kwargs) as broker:
        yield broker.bootstrap_servers
