"""``QuotaBroker``: a Kafka-compatible broker that enforces the controller mutation quota (KIP-599)
exactly as Apache Kafka does, for tests and demos without a cluster."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal

from kafka.protocol.api_key import ApiKey

from throttled_admin.testing._cluster import Cluster, CreateSpec
from throttled_admin.testing._handlers import ANONYMOUS, BrokerContext
from throttled_admin.testing._quotas import QuotaEntity, QuotaManager, RequestQuota
from throttled_admin.testing._server import Faults, RequestRecord, Server

__all__ = ["Enforcement", "QuotaBroker", "cluster_or_quota_broker"]

Enforcement = Literal["by-version", "strict", "permissive"]
_ENFORCEMENTS = ("by-version", "strict", "permissive")


def _api_key(api: int | str) -> int:
    """An API by number (19) or by Kafka's name ("CreateTopics")."""
    return int(ApiKey[api]) if isinstance(api, str) else int(ApiKey(api))


class QuotaBroker:
    """A quota-enforcing Kafka broker on 127.0.0.1, served from a background thread.

    ``controller_mutation_rate`` is the quota of the default user entity: every principal gets its own
    bucket of that rate, shared by all its client-ids (without SASL every client is ``ANONYMOUS``).
    ``enforcement``: ``"by-version"`` is Apache Kafka (error 89 only for CreateTopics >= v6,
    DeleteTopics >= v5, CreatePartitions >= v3); ``"strict"`` rejects whatever the version, as some
    Kafka-compatible services do; ``"permissive"`` never rejects, only throttles.
    ``users`` (name -> password) turns on SASL/PLAIN: every client must authenticate.
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
    ) -> None:
        if num_brokers < 1:
            raise ValueError(f"num_brokers must be >= 1, got {num_brokers}")
        if enforcement not in _ENFORCEMENTS:
            raise ValueError(f"enforcement must be one of {_ENFORCEMENTS}, got {enforcement!r}")
        if quota_window_num < 1 or quota_window_size_s <= 0:
            raise ValueError("quota_window_num must be >= 1 and quota_window_size_s > 0")
        if not 0 <= port <= 65535 or (port and port + num_brokers - 1 > 65535):
            raise ValueError(f"port {port} does not leave room for {num_brokers} broker(s)")
        self._quotas = QuotaManager(window_num=quota_window_num, window_size_s=quota_window_size_s)
        if controller_mutation_rate is not None:
            self._quotas.set_quota(QuotaEntity(user=QuotaEntity.DEFAULT), controller_mutation_rate)
        node_ids = list(range(num_brokers))
        self._cluster = Cluster(node_ids)
        self._ports = {node: (port + node if port else 0) for node in node_ids}
        self._faults = Faults()
        self._context = BrokerContext(
            cluster=self._cluster,
            quotas=self._quotas,
            enforcement=enforcement,
            users=dict(users) if users is not None else None,
            addresses={},
        )
        self._server: Server | None = None
        self._records: list[RequestRecord] = []  # kept across restarts

    def __repr__(self) -> str:
        state = f"bootstrap_servers={self.bootstrap_servers!r}" if self._server else "stopped"
        return f"QuotaBroker({state}, enforcement={self._context.enforcement!r})"

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> QuotaBroker:
        if self._server is not None:
            raise RuntimeError("QuotaBroker is already running")
        server = Server(self._context, self._faults)
        self._ports = server.start(self._ports)  # later starts reuse the bound ports
        self._context.addresses = {node: ("127.0.0.1", port) for node, port in self._ports.items()}
        self._server = server
        return self

    def stop(self) -> None:
        """Stop serving; topics, quotas and the request log are kept for a later ``start()``."""
        server, self._server = self._server, None
        if server is not None:
            self._records.extend(server.records())
            server.stop()

    def restart(self) -> None:
        """Stop and start again on the same ports, keeping all state (a broker bounce)."""
        self.stop()
        self.start()

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
    def controller_id(self) -> int:
        return self._cluster.controller_id

    # -- state -----------------------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        return self._cluster.snapshot()

    def create_topic(self, name: str, num_partitions: int = 1) -> None:
        """Create a topic directly (no request, no quota), to set up a test."""
        error, _ = self._cluster.create_topic(
            CreateSpec(name, num_partitions, -1), RequestQuota(self._quotas, None, strict=False), validate_only=False
        )
        if error.code:
            raise ValueError(f"cannot create topic {name!r}: {error.message}")

    def tokens(self, user: str | None = None, client_id: str | None = None) -> float | None:
        """Tokens left in the bucket that ``user`` (default ANONYMOUS) with ``client_id`` charges; None
        when no quota applies to them."""
        return self._quotas.tokens(user if user is not None else ANONYMOUS, client_id or "")

    def set_quota(
        self, *, user: str | None = None, client_id: str | None = None, controller_mutation_rate: float | None
    ) -> None:
        """Set the quota of an entity at any level of Kafka's precedence. ``user`` and ``client_id`` take
        a name or ``QuotaEntity.DEFAULT`` (``"<default>"``); leave one out for a single-part entity.
        ``controller_mutation_rate=None`` removes the quota."""
        self._quotas.set_quota(QuotaEntity(user=user, client_id=client_id), controller_mutation_rate)

    def quotas(self) -> dict[QuotaEntity, float]:
        return self._quotas.quotas()

    def request_log(self) -> list[RequestRecord]:
        """Every request served so far, across restarts, in the order they were received."""
        current = self._server.records() if self._server else []
        return sorted(self._records + current, key=lambda r: r.received_at)

    def clear_request_log(self) -> None:
        self._records.clear()
        if self._server:
            self._server.clear_records()

    # -- fault injection -------------------------------------------------------------------------

    def drop_connections(self) -> None:
        """Close every open client connection (the listeners stay up)."""
        if self._server:
            self._server.drop_connections()

    def fail_next(self, api: int | str, error_code: int, count: int = 1) -> None:
        """The next ``count`` requests of ``api`` fail every topic (or resource) with ``error_code``,
        charging nothing."""
        self._faults.fail_next(_api_key(api), error_code, count)

    def blackhole_next(self, api: int | str, count: int = 1) -> None:
        """The next ``count`` requests of ``api`` are processed but never answered."""
        self._faults.blackhole_next(_api_key(api), count)

    def set_latency(self, seconds: float) -> None:
        """Delay every response by ``seconds`` (0 to stop)."""
        if seconds < 0:
            raise ValueError("latency must be >= 0")
        self._faults.latency_s = seconds


@contextmanager
def cluster_or_quota_broker(bootstrap_servers: str | None = None, **broker_kwargs: Any) -> Iterator[str]:
    """Yield ``bootstrap_servers`` when given; otherwise start a QuotaBroker with ``broker_kwargs`` for the
    duration and yield its address. Lets one script run against a real cluster or the embedded broker."""
    if bootstrap_servers:
        yield bootstrap_servers
        return
    with QuotaBroker(**broker_kwargs) as broker:
        yield broker.bootstrap_servers
