"""Metadata v10 to v13, written and read by the client itself: topic ids (v10+), for the topics named only.

The broker-views reader (``broker_views``) asks each broker, on a connection of its own (``broker_connection``),
about the names ``wait_for_metadata`` waits for, never every topic of the cluster, and never creating one
(``allow_auto_topic_creation`` false). An answer gives the brokers the cluster lists and, for each name asked
about, what that broker shows: partitions, whether each has a leader and no error, and the topic id (which tells
one incarnation of a name from another: ``_engine/visibility.py``).

All four versions are flexible (KIP-482): request header v2, response header v1, compact strings and arrays,
tagged fields. They differ in little: v10 has ``include_cluster_authorized_operations`` in the request and
``cluster_authorized_operations`` in the answer (dropped in v11); v13 adds a top-level ``error_code``.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from throttled_admin._driver.wire_codec import NO_UUID, Reader, Writer
from throttled_admin._engine.visibility import TopicView

__all__ = ["API_KEY", "MAX_VERSION", "MIN_VERSION", "MetadataAnswer", "decode", "encode"]

API_KEY = 3
MIN_VERSION = 10  # topic ids in the answer (Kafka 2.8, KIP-516)
MAX_VERSION = 13
_UNKNOWN_TOPIC_OR_PARTITION = 3
_PARTITION = struct.Struct(">hiii")  # a partition's error code, index, leader and leader epoch
_ID_AND_INTERNAL = struct.Struct(">16s?")  # a topic's id and is_internal


@dataclass
class MetadataAnswer:
    """One broker's answer: the brokers it lists (node id -> "host:port"), and what it shows of the names asked
    about (absent: not listed)."""

    brokers: dict[int, str] = field(default_factory=dict)
    topics: dict[str, TopicView] = field(default_factory=dict)
    error_code: int = 0  # v13's top-level error (e.g. REBOOTSTRAP_REQUIRED)


def encode(version: int, names: list[str]) -> bytes:
    """The request body: the topics named (none: the brokers only), never auto-created."""
    body = Writer().uvarint(len(names) + 1)
    for name in names:
        body.uuid(None).compact_string(name).no_tags()
    body.int8(0)  # allow_auto_topic_creation
    if version == 10:
        body.int8(0)  # include_cluster_authorized_operations (v8-v10)
    body.int8(0)  # include_topic_authorized_operations
    return body.no_tags().build()


def decode(version: int, reader: Reader, names: set[str]) -> MetadataAnswer:
    """The answer (its body, after the response header) for the topics in ``names``."""
    answer = MetadataAnswer()
    reader.int32()  # throttle_time_ms
    for _ in range(reader.compact_array_length()):
        node_id = reader.int32()
        host = reader.compact_string()
        port = reader.int32()
        reader.compact_string()  # rack
        reader.skip_tags()
        answer.brokers[node_id] = f"{host}:{port}"
    reader.compact_string()  # cluster id
    reader.int32()  # controller id
    for _ in range(reader.compact_array_length()):
        error = reader.int16()
        name = reader.compact_string()
        raw_id, _ = reader.fields(_ID_AND_INTERNAL)  # topic id, is_internal
        # each partition: error, index, leader and leader epoch; replicas, in-sync and offline replicas skipped
        partitions = reader.structs(reader.compact_array_length(), _PARTITION, 3)
        reader.int32()  # topic_authorized_operations
        reader.skip_tags()
        if name is not None and name in names and error != _UNKNOWN_TOPIC_OR_PARTITION:
            led = error == 0 and all(fields[0] == 0 and fields[2] >= 0 for fields in partitions)
            topic_id = None if raw_id == NO_UUID else uuid.UUID(bytes=raw_id)
            answer.topics[name] = TopicView(len(partitions), led, topic_id)
    if version == 10:
        reader.int32()  # cluster_authorized_operations
    if version >= 13:
        answer.error_code = reader.int16()
    reader.skip_tags()
    return answer
