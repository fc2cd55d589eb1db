"""The cluster the test broker models: nodes, one controller, topics with partitions, replicas and configs.

Each mutation follows KRaft's ``ReplicationControlManager`` order: validate the topic (name, existence,
configs, then replication factor, then partitions), then charge the controller mutation quota (create: the
resolved partition count; delete: the current partition count; create-partitions: only the added
partitions), then apply unless ``validate_only``. Invalid topics fail before the quota and cost nothing;
validate-only requests are charged, as KRaft does. Config changes (IncrementalAlterConfigs/AlterConfigs) are
not KIP-599 mutations and are never charged.

Every lookup is a dict access (by name, by topic id, by '.'/'_' collision key), so a request of N topics
costs O(N) whatever the cluster size.
"""

from __future__ import annotations

import base64
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafka import errors as kerr

from throttled_admin._kafka.refusals import THROTTLING_QUOTA_MESSAGE
from throttled_admin._kafka.topic_names import collision_key, topic_name_error
from throttled_admin.testing._configs import (
    ConfigError,
    OpType,
    alter,
    validate_broker_configs,
    validate_topic_configs,
)
from throttled_admin.testing._metadata_lag import MetadataLog, TopicsView
from throttled_admin.testing._quotas import RequestQuota
from throttled_admin.testing._topic import Topic

__all__ = ["CLUSTER_METADATA_TOPIC", "ApiError", "Cluster", "CreateSpec", "Created", "Topic", "TopicsView"]

CLUSTER_METADATA_TOPIC = "__cluster_metadata"


@dataclass(frozen=True)
class ApiError:
    code: int
    message: str | None = None

    @classmethod
    def of(cls, error: type[kerr.BrokerResponseError], message: str | None = None) -> ApiError:
        return cls(int(error.errno), message)


NONE = ApiError(0)
THROTTLED = ApiError.of(kerr.ThrottlingQuotaExceededError, THROTTLING_QUOTA_MESSAGE)


def invalid_config(message: str) -> ApiError:
    return ApiError.of(kerr.InvalidConfigurationError, message)


@dataclass(frozen=True)
class CreateSpec:
    name: str
    num_partitions: int
    replication_factor: int
    # manual assignment: (partition index, broker ids) in request order
    assignments: Sequence[tuple[int, Sequence[int]]] = ()
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Created:
    """The outcome of one CreateTopics entry: its error, the mutations charged and, when valid, the
    resolved counts (also for validate-only requests) and the id of the topic created."""

    error: ApiError
    charged: int = 0
    partitions: int = -1
    replication_factor: int = -1
    topic_id: uuid.UUID | None = None


class Cluster:
    """Topics and nodes. All methods are thread-safe.

    ``broker_configs`` are the static broker configs (server.properties) of every node: they give the
    topic config defaults (``log.retention.ms`` for ``retention.ms``...), ``num.partitions``,
    ``default.replication.factor`` and ``auto.create.topics.enable`` (Kafka's default: true).
    """

    def __init__(
        self,
        node_ids: Sequence[int],
        *,
        default_partitions: int = 1,
        default_replication: int = 1,
        broker_configs: Mapping[str, str] | None = None,
        metadata_lag_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.node_ids = list(node_ids)
        self._nodes = set(self.node_ids)
        self.controller_id = self.node_ids[0]
        self.controller_epoch = 0  # one more at each failover
        self._down: set[int] = set()  # nodes stopped (they stay registered: see registered())
        self._named: tuple[int, float] | None = None  # a stopped node Metadata names as controller, until when
        self._clock = clock
        self._unregistered: set[int] = set()
        # Unique per cluster, in Kafka's form (Uuid.randomUuid().toString(): URL-safe base64, no padding), so that
        # clients of two test clusters tell them apart as they would two real ones (messaging.kafka.cluster.id).
        self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        static = dict(broker_configs or {})
        try:
            validate_broker_configs(static)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        self.broker_configs = static
        self.default_partitions = int(static.get("num.partitions", default_partitions))
        self.default_replication = int(static.get("default.replication.factor", default_replication))
        self.auto_create_topics = static.get("auto.create.topics.enable", "true").strip().lower() == "true"
        self.topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._by_collision_key: dict[str, str] = {}
        self.lock = threading.RLock()
        self._placement = itertools.count()
        self._log = MetadataLog(metadata_lag_s, clock)

    # -- nodes that stop -------------------------------------------------------------------------

    def node_down(self, node_id: int, *, unregister: bool = False) -> None:
        with self.lock:
            self._down.add(node_id)
            if unregister:
                self._unregistered.add(node_id)

    def name_until_fenced(self, node_id: int, seconds: float) -> None:
        """Metadata goes on naming the stopped node ``node_id`` as the controller for ``seconds``."""
        with self.lock:
            self._named = (node_id, self._clock() + seconds) if seconds > 0 else None

    def named_controller(self) -> int:
        """The controller Metadata names: the active one, or a stopped node not yet fenced (``name_until_fenced``)."""
        named = self._named
        if named is not None and named[0] in self._down and self._clock() < named[1]:
            return named[0]
        return self.controller_id

    def node_up(self, node_id: int) -> None:
        with self.lock:
            self._down.discard(node_id)
            self._unregistered.discard(node_id)

    def all_up(self) -> None:
        with self.lock:
            self._down.clear()
            self._unregistered.clear()

    def live(self) -> list[int]:
        """The nodes serving now, in id order."""
        with self.lock:
            return [n for n in self.node_ids if n not in self._down]

    def registered(self) -> list[int]:
        """The brokers the controller places replicas on: every node but those unregistered. A stopped node stays
        registered (seen on Kafka 4.4.0: with one of three nodes stopped by SIGTERM or kill -9, creates of replication
        factor 3 kept being admitted for the 20 s watched, and through its restart)."""
        with self.lock:
            return [n for n in self.node_ids if n not in self._unregistered]

    def metadata_view(self, node_id: int) -> TopicsView:
        """The topics node ``node_id``'s Metadata shows: the controller's at once, every other node's
        ``metadata_lag_s`` late (a KRaft broker replaying the metadata log). Call under ``lock``."""
        if node_id == self.controller_id:
            return TopicsView(self.topics, self._by_id, {})
        return self._log.view(self.topics, self._by_id)

    def node_configs(self, node_id: int) -> dict[str, str]:
        """The static configs of one node: the shared ones plus its own ``node.id`` (and ``broker.id``) and roles."""
        roles = "broker,controller" if node_id == self.controller_id else "broker"
        # KafkaConfig.populateSynonyms: in KRaft broker.id is node.id.
        return {**self.broker_configs, "node.id": str(node_id), "broker.id": str(node_id), "process.roles": roles}

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {name: t.partition_count for name, t in self.topics.items()}

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        with self.lock:
            return self._by_id.get(topic_id)

    def _add(self, topic: Topic, *, lagging: bool = True) -> None:
        if lagging:
            self._log.note(topic.name, None)
        self.topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self._by_collision_key[collision_key(topic.name)] = topic.name

    def _remove(self, topic: Topic) -> None:
        self._log.note(topic.name, topic)
        del self.topics[topic.name]
        del self._by_id[topic.topic_id]
        if self._by_collision_key.get(collision_key(topic.name)) == topic.name:
            del self._by_collision_key[collision_key(topic.name)]

    # -- placement -------------------------------------------------------------------------------

    def _place(self, partitions: int, replication: int) -> list[list[int]]:
        nodes = self.registered()
        out = []
        for _ in range(partitions):
            start = next(self._placement)
            out.append([nodes[(start + r) % len(nodes)] for r in range(replication)])
        return out

    def _check_assignment(self, brokers: Sequence[int], replication: int | None) -> ApiError | None:
        """``ReplicationControlManager.validateManualPartitionAssignment``: broker ids checked in
        ascending order, each for registration and then repetition."""
        if not brokers:
            return ApiError.of(
                kerr.InvalidReplicationAssignmentError,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for broker in sorted(brokers):
            if broker not in self._nodes:
                return ApiError.of(
                    kerr.InvalidReplicationAssignmentError,
                    f"The manual partition assignment includes broker {broker}, but no such broker is registered.",
                )
            if broker == previous:
                return ApiError.of(
                    kerr.InvalidReplicationAssignmentError,
                    f"The manual partition assignment includes the broker {broker} more than once.",
                )
            previous = broker
        if replication is not None and len(brokers) != replication:
            return ApiError.of(
                kerr.InvalidReplicationAssignmentError,
                f"The manual partition assignment includes a partition with {len(brokers)} replica(s), "
                f"but this is not consistent with previous partitions, which have {replication} replica(s).",
            )
        return None

    # -- CreateTopics ----------------------------------------------------------------------------

    def create_topic(self, spec: CreateSpec, quota: RequestQuota, *, validate_only: bool) -> tuple[ApiError, int]:
        """Create one topic, seen by every node at once (test set-up); returns its error and the mutations
        charged."""
        created = self.create(spec, quota, validate_only=validate_only, lagging=False)
        return created.error, created.charged

    def create(self, spec: CreateSpec, quota: RequestQuota, *, validate_only: bool, lagging: bool = True) -> Created:
        """Create one topic as ``ReplicationControlManager.createTopics`` does (``lagging``: the other nodes see
        it ``metadata_lag_s`` later)."""
        with self.lock:
            resolved = self._validate_create(spec)
            if isinstance(resolved, ApiError):
                return Created(resolved)
            partitions, manual = resolved
            if not quota.record(partitions):
                return Created(THROTTLED)
            replication = len(manual[0]) if manual else self._resolved_replication(spec)
            if validate_only:
                return Created(NONE, partitions, partitions, replication)
            configs = {k: v for k, v in spec.configs.items() if v is not None}
            topic = Topic(spec.name, uuid.uuid4(), manual or self._place(partitions, replication), configs)
            self._add(topic, lagging=lagging)
            return Created(NONE, partitions, partitions, replication, topic.topic_id)

    def _resolved_replication(self, spec: CreateSpec) -> int:
        return self.default_replication if spec.replication_factor == -1 else spec.replication_factor

    def _validate_create(self, spec: CreateSpec) -> ApiError | tuple[int, list[list[int]]]:
        """Kafka's error for an invalid topic, else its partition count and its manual replica lists
        (empty when the cluster places the replicas)."""
        name_error = topic_name_error(spec.name)
        if name_error:
            return ApiError.of(kerr.InvalidTopicError, name_error)
        if spec.name in self.topics:
            return ApiError.of(kerr.TopicAlreadyExistsError, f"Topic '{spec.name}' already exists.")
        existing = self._by_collision_key.get(collision_key(spec.name))
        if existing is not None:
            message = f"Topic '{spec.name}' collides with existing topic: {existing}"
            return ApiError.of(kerr.InvalidTopicError, message)
        try:
            validate_topic_configs(spec.configs, self.broker_configs)
        except ConfigError as exc:
            return invalid_config(str(exc))
        if spec.assignments:
            return self._validate_manual(spec)
        if spec.replication_factor < -1 or spec.replication_factor == 0:
            return ApiError.of(
                kerr.InvalidReplicationFactorError,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if spec.num_partitions < -1 or spec.num_partitions == 0:
            return ApiError.of(
                kerr.InvalidPartitionsError, "Number of partitions was set to an invalid non-positive value."
            )
        partitions = self.default_partitions if spec.num_partitions == -1 else spec.num_partitions
        replication = self._resolved_replication(spec)
        registered = len(self.registered())
        if replication > registered:
            return ApiError.of(
                kerr.InvalidReplicationFactorError,
                f"Unable to replicate the partition {replication} time(s): The target replication factor "
                f"of {replication} cannot be reached because only {registered} broker(s) "
                "are registered or some brokers have all their log directories cordoned.",  # Kafka 4.4's words
            )
        return partitions, []

    def _validate_manual(self, spec: CreateSpec) -> ApiError | tuple[int, list[list[int]]]:
        if spec.replication_factor != -1:
            return ApiError.of(
                kerr.InvalidRequestError,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            )
        if spec.num_partitions != -1:
            return ApiError.of(
                kerr.InvalidRequestError,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        by_index: dict[int, list[int]] = {}
        replication: int | None = None
        for index, brokers in spec.assignments:
            if index in by_index:
                return ApiError.of(
                    kerr.InvalidReplicationAssignmentError,
                    f"Found multiple manual partition assignments for partition {index}",
                )
            error = self._check_assignment(brokers, replication)
            if error:
                return error
            replication = len(brokers)
            by_index[index] = list(brokers)
        if any(i not in by_index for i in range(len(by_index))):
            return ApiError.of(
                kerr.InvalidReplicationAssignmentError, "partitions should be a consecutive 0-based integer sequence"
            )
        return len(by_index), [by_index[i] for i in range(len(by_index))]

    # -- DeleteTopics ----------------------------------------------------------------------------

    def delete_topic(self, topic: Topic | None, quota: RequestQuota, *, missing: ApiError) -> tuple[ApiError, int]:
        with self.lock:
            if topic is None or self.topics.get(topic.name) is not topic:
                return missing, 0
            if not quota.record(topic.partition_count):
                return THROTTLED, 0
            self._remove(topic)
            return NONE, topic.partition_count

    # -- CreatePartitions ------------------------------------------------------------------------

    def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None,
        quota: RequestQuota,
        *,
        validate_only: bool,
    ) -> tuple[ApiError, int]:
        """``ReplicationControlManager.createPartitions``: note that Kafka charges the quota before it checks
        the brokers of a manual assignment, so an assignment naming an unknown broker is charged."""
        with self.lock:
            topic = self.topics.get(name)
            if topic is None:
                return ApiError.of(kerr.UnknownTopicOrPartitionError), 0  # KRaft sends no message here
            current = topic.partition_count
            if count == current:
                return ApiError.of(kerr.InvalidPartitionsError, f"Topic already has {current} partition(s)."), 0
            if count < current:
                return ApiError.of(
                    kerr.InvalidPartitionsError,
                    f"The topic {name} currently has {current} partition(s); {count} would not be an increase.",
                ), 0
            added = count - current
            if assignments is not None and len(assignments) != added:
                return ApiError.of(
                    kerr.InvalidReplicationAssignmentError,
                    f"Attempted to add {added} additional partition(s), but only {len(assignments)} "
                    "assignment(s) were specified.",
                ), 0
            if not quota.record(added):
                return THROTTLED, 0
            if assignments is not None:
                for brokers in assignments:
                    error = self._check_assignment(brokers, topic.replication_factor)
                    if error:
                        return error, added
            if not validate_only:
                new = (
                    [list(b) for b in assignments]
                    if assignments is not None
                    else self._place(added, topic.replication_factor)
                )
                self._log.note(name, topic)
                topic.replicas.extend(new)
            return NONE, added

    # -- configs (not KIP-599 mutations: never charged) ------------------------------------------

    def alter_topic_configs(
        self,
        name: str,
        ops: Iterable[tuple[str, OpType, str | None]] | None,
        replacement: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool,
    ) -> ApiError:
        """IncrementalAlterConfigs (``ops``) or AlterConfigs (``replacement``: the complete new overrides)
        for one topic, as ``ConfigurationControlManager``: compute the new overrides (APPEND/SUBTRACT on a
        non-list config fails here), validate the name and then the values, and only then check that the
        topic exists; apply unless ``validate_only``."""
        with self.lock:
            topic = self.topics.get(name)
            current = topic.configs if topic is not None else {}
            try:
                new = alter(current, ops) if ops is not None else dict(replacement or {})
            except ConfigError as exc:
                return invalid_config(str(exc))
            if not name:
                return ApiError.of(kerr.InvalidRequestError, "Default topic resources are not allowed.")
            name_error = topic_name_error(name)
            if name_error:
                return ApiError.of(kerr.InvalidTopicError, name_error)
            try:
                validate_topic_configs({k: v for k, v in new.items() if v is not None}, self.broker_configs)
            except ConfigError as exc:
                return invalid_config(str(exc))
            if topic is None:
                return ApiError.of(kerr.UnknownTopicOrPartitionError, f"The topic '{name}' does not exist.")
            if not validate_only:
                topic.configs = {k: v for k, v in new.items() if v is not None}
            return NONE

    # -- Metadata auto-creation ------------------------------------------------------------------

    def auto_create(self, name: str, quota: RequestQuota) -> ApiError:
        """``AutoTopicCreationManager``: a Metadata request for a missing topic creates it with the broker
        defaults through the controller (charged to the client's quota, strictly, as the forwarded
        CreateTopics is the latest version); the Metadata response itself reports
        UNKNOWN_TOPIC_OR_PARTITION (the topic appears from the next Metadata on)."""
        if topic_name_error(name):
            return ApiError.of(kerr.InvalidTopicError)
        self.create(CreateSpec(name, -1, -1), quota, validate_only=False)
        return ApiError.of(kerr.UnknownTopicOrPartitionError)
