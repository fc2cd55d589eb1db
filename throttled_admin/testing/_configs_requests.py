"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs resource by resource, as a KRaft broker and its
controller answer them; ``_handlers.py`` only decodes the request and encodes these results.

- DescribeConfigs follows ``ConfigHelper.describeConfigs``: topics are validated (``Topic.validate``) and
  must exist; a broker resource is described only by that broker itself; '' is the cluster-default
  resource (the configs the controller writes itself: ELR's ``min.insync.replicas``).
- The alter APIs follow ``ConfigAdminManager.preprocess`` on the receiving broker (repeated resources and
  keys, null values, resource types) and then ``ConfigurationControlManager`` on the controller.
  Topic resources only: dynamic broker configs are not modelled and are refused with a message saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from kafka import errors as kerr

from throttled_admin._kafka.topic_names import topic_name_error
from throttled_admin.testing._cluster import ApiError, Cluster
from throttled_admin.testing._configs import (
    ConfigEntry,
    OpType,
    describe_broker,
    describe_cluster_defaults,
    describe_topic,
)

__all__ = ["AlterResource", "ResourceType", "alter_resources", "describe_resource"]

NONE = ApiError(0)


class ResourceType:
    """``ConfigResource.Type`` ids."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32
    NAMES: ClassVar[dict[int, str]] = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}


def _invalid_request(message: str) -> ApiError:
    return ApiError.of(kerr.InvalidRequestError, message)


def _java_int(text: str) -> int | None:
    """Scala's ``String.toInt`` (``Integer.parseInt``), None when it would throw."""
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -(2**31) <= value < 2**31 else None


def describe_resource(
    cluster: Cluster,
    node_id: int,
    resource_type: int,
    resource_name: str | None,
    keys: list[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
) -> tuple[ApiError, list[ConfigEntry]]:
    name = resource_name or ""
    if resource_type == ResourceType.TOPIC:
        name_error = topic_name_error(name)
        if name_error:
            return ApiError.of(kerr.InvalidTopicError, name_error), []
        with cluster.lock:
            topic = cluster.topics.get(name)
            if topic is None:
                return ApiError.of(kerr.UnknownTopicOrPartitionError), []  # Kafka sets no message here
            overrides = dict(topic.configs)
        entries = describe_topic(
            overrides,
            cluster.broker_configs,
            keys,
            include_synonyms=include_synonyms,
            include_documentation=include_documentation,
        )
        return NONE, entries
    if resource_type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        is_logger = resource_type == ResourceType.BROKER_LOGGER
        if not name and is_logger:
            return _invalid_request("Broker id must not be empty"), []
        if not name:  # '' is the cluster-wide dynamic default broker config
            entries = describe_cluster_defaults(
                cluster.broker_configs,
                keys,
                include_synonyms=include_synonyms,
                include_documentation=include_documentation,
            )
            return NONE, entries
        broker_id = _java_int(name)
        if broker_id is None:
            return _invalid_request(f"Broker id must be an integer, but it is: {name}"), []
        if broker_id != node_id:
            expected = f"{node_id}" if is_logger else f"{node_id} or empty string,"
            return _invalid_request(f"Unexpected broker id, expected {expected} but received {name}"), []
        if is_logger:
            return NONE, []  # no log4j loggers are modelled
        entries = describe_broker(
            cluster.node_configs(node_id),
            keys,
            include_synonyms=include_synonyms,
            include_documentation=include_documentation,
        )
        return NONE, entries
    type_name = ResourceType.NAMES.get(resource_type, "UNKNOWN")
    return _invalid_request(f"Unsupported resource type: {type_name}"), []


@dataclass(frozen=True)
class AlterResource:
    resource_type: int
    resource_name: str
    configs: Sequence[tuple[str, int, str | None]]  # (name, operation id (SET for AlterConfigs), value)


def alter_resources(
    cluster: Cluster, resources: Sequence[AlterResource], *, incremental: bool, validate_only: bool
) -> list[ApiError]:
    """One error per resource, in request order; applies the valid topic changes unless ``validate_only``."""
    seen: dict[tuple[int, str], int] = {}
    for resource in resources:
        key = (resource.resource_type, resource.resource_name)
        seen[key] = seen.get(key, 0) + 1
    return [
        _invalid_request("Each resource must appear at most once.")
        if seen[(r.resource_type, r.resource_name)] > 1
        else _alter_one(cluster, r, incremental=incremental, validate_only=validate_only)
        for r in resources
    ]


def _alter_one(cluster: Cluster, resource: AlterResource, *, incremental: bool, validate_only: bool) -> ApiError:
    names = [name for name, _, _ in resource.configs]
    if len(set(names)) != len(names):
        return _invalid_request("Error due to duplicate config keys")
    nulls = [name for name, op, value in resource.configs if value is None and op != OpType.DELETE]
    if nulls:
        return _invalid_request("Null value not supported for : " + ", ".join(nulls))
    if resource.resource_type in ResourceType.NAMES and resource.resource_type != ResourceType.TOPIC:
        # Kafka changes these too; QuotaBroker keeps no broker, logger, group or client-metrics configs.
        kind = ResourceType.NAMES[resource.resource_type]
        return _invalid_request(f"QuotaBroker does not model changes to {kind} configs")
    if resource.resource_type != ResourceType.TOPIC:
        return _invalid_request(f"Unknown resource type {resource.resource_type}")  # ConfigAdminManager
    if not incremental:
        replacement = {name: value for name, _, value in resource.configs}
        return cluster.alter_topic_configs(resource.resource_name, None, replacement, validate_only=validate_only)
    ops = []
    for name, op, value in resource.configs:
        if op not in OpType._value2member_map_:
            return _invalid_request(f"Unknown operations type {op}")
        ops.append((name, OpType(op), value))
    return cluster.alter_topic_configs(resource.resource_name, ops, validate_only=validate_only)
