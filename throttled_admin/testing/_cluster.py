"""The cluster the test broker models: nodes, one controller, topics with partitions, replicas and configs.

Each mutation follows KRaft's ``ReplicationControlManager`` order: validate the topic, then charge the
controller mutation quota (create: the resolved partition count; delete: the current partition count;
create-partitions: only the added partitions), then apply unless ``validate_only``. Invalid topics fail
before the quota and cost nothing; validate-only requests are charged, as KRaft does.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from kafka import errors as kerr

from throttled_admin._topic_names import collision_key, topic_name_error
from throttled_admin.testing._quotas import RequestQuota

__all__ = ["TOPIC_CONFIG_DEFAULTS", "ApiError", "Cluster", "Topic"]

# The topic configs Kafka accepts (LogConfig), with their defaults for DescribeConfigs.
TOPIC_CONFIG_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.type": "producer",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "index.interval.bytes": "4096",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.timestamp.after.max.ms": "9223372036854775807",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}


@dataclass(frozen=True)
class ApiError:
    code: int
    message: str | None = None

    @classmethod
    def of(cls, error: type[kerr.BrokerResponseError], message: str | None = None) -> ApiError:
        return cls(int(error.errno), message)


NONE = ApiError(0)
THROTTLED = ApiError.of(kerr.ThrottlingQuotaExceededError, "The throttling quota has been exceeded.")


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    replicas: list[list[int]]  # partition index -> replica node ids, leader first
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def partition_count(self) -> int:
        return len(self.replicas)


@dataclass(frozen=True)
class CreateSpec:
    name: str
    num_partitions: int
    replication_factor: int
    assignments: Sequence[Sequence[int]] = ()  # manual assignment, partition order
    configs: dict[str, str | None] = field(default_factory=dict)


class Cluster:
    """Topics and nodes. All methods are thread-safe."""

    def __init__(self, node_ids: Sequence[int], *, default_partitions: int = 1, default_replication: int = 1):
        self.node_ids = list(node_ids)
        self.controller_id = self.node_ids[0]
        self.cluster_id = "throttled-admin-quota-broker"
        self.default_partitions = default_partitions
        self.default_replication = default_replication
        self.topics: dict[str, Topic] = {}
        self.lock = threading.RLock()
        self._placement = itertools.count()

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {name: t.partition_count for name, t in self.topics.items()}

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        with self.lock:
            return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    # -- placement -------------------------------------------------------------------------------

    def _place(self, partitions: int, replication: int) -> list[list[int]]:
        nodes = self.node_ids
        out = []
        for _ in range(partitions):
            start = next(self._placement)
            out.append([nodes[(start + r) % len(nodes)] for r in range(replication)])
        return out

    def _check_assignment(self, assignments: Sequence[Sequence[int]], replication: int | None) -> ApiError | None:
        for index, brokers in enumerate(assignments):
            if not brokers:
                return ApiError.of(kerr.InvalidReplicationAssignmentError, f"Partition {index} has no replicas.")
            if len(set(brokers)) != len(brokers):
                return ApiError.of(
                    kerr.InvalidReplicationAssignmentError,
                    f"Duplicate brokers not allowed in replica assignment: {list(brokers)} for partition {index}.",
                )
            unknown = [b for b in brokers if b not in self.node_ids]
            if unknown:
                return ApiError.of(
                    kerr.InvalidReplicationAssignmentError,
                    f"The manual partition assignment includes broker {unknown[0]}, but no such broker is registered.",
                )
            if replication is not None and len(brokers) != replication:
                return ApiError.of(
                    kerr.InvalidReplicationAssignmentError,
                    f"The manual partition assignment includes a partition with {len(brokers)} replica(s), "
                    f"but this is not consistent with previous partitions, which have {replication} replica(s).",
                )
            replication = len(brokers)
        return None

    # -- CreateTopics ----------------------------------------------------------------------------

    def create_topic(self, spec: CreateSpec, quota: RequestQuota, *, validate_only: bool) -> tuple[ApiError, int]:
        """Create one topic; returns its error and the mutations charged."""
        with self.lock:
            resolved = self._validate_create(spec)
            if isinstance(resolved, ApiError):
                return resolved, 0
            partitions, replication = resolved
            if not quota.record(partitions):
                return THROTTLED, 0
            if not validate_only:
                replicas = (
                    [list(b) for b in spec.assignments] if spec.assignments else self._place(partitions, replication)
                )
                configs = {k: v for k, v in spec.configs.items() if v is not None}
                self.topics[spec.name] = Topic(spec.name, uuid.uuid4(), replicas, configs)
            return NONE, partitions

    def _validate_create(self, spec: CreateSpec) -> ApiError | tuple[int, int]:
        """Kafka's error for an invalid topic, else its resolved (partitions, replication factor)."""
        name_error = topic_name_error(spec.name)
        if name_error:
            return ApiError.of(kerr.InvalidTopicError, name_error)
        if spec.name in self.topics:
            return ApiError.of(kerr.TopicAlreadyExistsError, f"Topic '{spec.name}' already exists.")
        key = collision_key(spec.name)
        for existing in self.topics:
            if collision_key(existing) == key:
                message = f"Topic '{spec.name}' collides with existing topic: {existing}"
                return ApiError.of(kerr.InvalidTopicError, message)
        if spec.assignments:
            if spec.num_partitions != -1 or spec.replication_factor != -1:
                return ApiError.of(
                    kerr.InvalidRequestError,
                    "A manual partition assignment was specified, but numPartitions or replicationFactor "
                    "was not set to -1.",
                )
            error = self._check_assignment(spec.assignments, None)
            if error:
                return error
            partitions, replication = len(spec.assignments), len(spec.assignments[0])
        else:
            partitions = self.default_partitions if spec.num_partitions == -1 else spec.num_partitions
            replication = self.default_replication if spec.replication_factor == -1 else spec.replication_factor
            if partitions <= 0:
                return ApiError.of(
                    kerr.InvalidPartitionsError, "Number of partitions was set to an invalid non-positive value."
                )
            if replication <= 0:
                return ApiError.of(
                    kerr.InvalidReplicationFactorError,
                    "Replication factor must be larger than 0, or -1 to use the default value.",
                )
            if replication > len(self.node_ids):
                return ApiError.of(
                    kerr.InvalidReplicationFactorError,
                    f"Unable to replicate the partition {replication} time(s): The target replication factor "
                    f"of {replication} cannot be reached because only {len(self.node_ids)} broker(s) "
                    "are registered.",
                )
        unknown = sorted(k for k in spec.configs if k not in TOPIC_CONFIG_DEFAULTS)
        if unknown:
            return ApiError.of(kerr.InvalidConfigurationError, f"Unknown topic config name: {unknown[0]}")
        return partitions, replication

    # -- DeleteTopics ----------------------------------------------------------------------------

    def delete_topic(self, topic: Topic | None, quota: RequestQuota, *, missing: ApiError) -> tuple[ApiError, int]:
        with self.lock:
            if topic is None or self.topics.get(topic.name) is not topic:
                return missing, 0
            if not quota.record(topic.partition_count):
                return THROTTLED, 0
            del self.topics[topic.name]
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
        with self.lock:
            topic = self.topics.get(name)
            if topic is None:
                return ApiError.of(kerr.UnknownTopicOrPartitionError), 0  # KRaft sends no message here
            current = topic.partition_count
            if count < current:
                return ApiError.of(
                    kerr.InvalidPartitionsError,
                    f"The topic {name} currently has {current} partition(s); {count} would not be an increase.",
                ), 0
            if count == current:
                return ApiError.of(kerr.InvalidPartitionsError, f"Topic already has {current} partition(s)."), 0
            added = count - current
            replication = len(topic.replicas[0])
            if assignments is not None:
                if len(assignments) != added:
                    return ApiError.of(
                        kerr.InvalidReplicationAssignmentError,
                        f"Attempted to add {added} additional partition(s), but only {len(assignments)} "
                        "assignment(s) were specified.",
                    ), 0
                error = self._check_assignment(assignments, replication)
                if error:
                    return error, 0
            if not quota.record(added):
                return THROTTLED, 0
            if not validate_only:
                new = [list(b) for b in assignments] if assignments is not None else self._place(added, replication)
                topic.replicas.extend(new)
            return NONE, added
