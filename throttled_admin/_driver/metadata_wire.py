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

import functools
import re
import struct
import uuid
from dataclasses import dataclass, field

from throttled_admin._driver.wire_codec import NO_UUID, Reader, Writer
from throttled_admin._engine.visibility import TopicView, topic_view

__all__ = ["API_KEY", "MAX_VERSION", "MIN_VERSION", "MetadataAnswer", "decode", "encode"]

API_KEY = 3
MIN_VERSION = 10  # topic ids in the answer (Kafka 2.8, KIP-516)
MAX_VERSION = 13
_UNKNOWN_TOPIC_OR_PARTITION = 3
_PARTITION = struct.Struct(">hiii").unpack_from  # a partition's error code, index, leader and leader epoch
_INT16, _INT32 = struct.Struct(">h").unpack_from, struct.Struct(">i").unpack_from
_ARRAYS = range(3)  # a partition's replicas, in-sync and offline replicas: compact int32 arrays
# A partition with no error and a leader, its arrays of at most 14 nodes and no tagged field (every partition of a
# topic that is usable: what wait_for_metadata waits for): error 0, index, leader (its first byte under 0x80: not
# negative), leader epoch; each array's one-byte length (0: null) and its nodes; an empty tagged-field section. A
# topic's partitions in one match, in C (issue 40: decoding was a third of a views read's CPU); any other partition is
# read one at a time, from the topic's first. At least 18 bytes each (``_MIN_PARTITION``).
_ARRAY = b"(?:" + b"|".join(rb"\x%02x.{%d}" % (n, 4 * max(0, n - 1)) for n in range(16)) + b")"
_LED = rb"\x00\x00.{4}[\x00-\x7f].{7}" + _ARRAY * 3 + rb"\x00"
_MIN_PARTITION = 14 + 3 + 1
_NONE: frozenset[int] = frozenset()


@dataclass
class MetadataAnswer:
    """One broker's answer: the brokers it lists (node id -> "host:port"), and what it shows of the names asked
    about (absent: not listed)."""

    brokers: dict[int, str] = field(default_factory=dict)
    topics: dict[str, TopicView] = field(default_factory=dict)
    error_code: int = 0  # v13's top-level error (e.g. REBOOTSTRAP_REQUIRED)
    controller_id: int = -1  # the node the broker names as the controller (KRaft: any broker it believes alive)


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
    """The answer (its body, after the response header) for the topics in ``names``. Read in place, without a method
    call a field (issue 40: a paced fleet's ``wait_for_metadata`` reads decode thousands of these a second); ValueError
    when it ends early or does not parse."""
    data, offset = reader.rest()
    try:
        answer, offset = _decode(version, data, offset, names)
    except (IndexError, struct.error):  # (a field read past the end)
        raise ValueError("the answer ends early") from None
    reader.skip_to(offset)
    return answer


def _decode(version: int, data: bytes, pos: int, names: set[str]) -> tuple[MetadataAnswer, int]:
    answer = MetadataAnswer()
    size = len(data)
    pos = _brokers(data, pos + 4, size, answer.brokers)  # (after throttle_time_ms)
    _, pos = _string(data, pos, size)  # cluster id
    (answer.controller_id,) = _INT32(data, pos)
    count, pos = _length(data, pos + 4)
    for _ in range(count):  # topics
        (error,) = _INT16(data, pos)
        length = data[pos + 2]
        if 1 < length < 0x80:  # (a name of at most 126 bytes: its length in one byte, read inline)
            pos += length + 2
            if pos > size:
                raise ValueError("the answer ends early")
            name: str | None = data[pos - length + 1 : pos].decode()
        else:
            name, pos = _string(data, pos + 2, size)
        raw_id = data[pos : pos + 16]  # topic id; then is_internal
        partitions = data[pos + 17] - 1
        if 0 <= partitions < 0x7F:
            pos += 18
        else:
            partitions, pos = _length(data, pos + 17)
        leaderless, pos = _partitions(data, pos, partitions)
        pos = _tags(data, pos + 4)  # (after topic_authorized_operations)
        if name is not None and name in names and error != _UNKNOWN_TOPIC_OR_PARTITION:
            topic_id = None if raw_id == NO_UUID else uuid.UUID(bytes=raw_id)
            answer.topics[name] = topic_view(partitions, error != 0, topic_id, leaderless)
    if version == 10:
        pos += 4  # cluster_authorized_operations
    if version >= 13:
        (answer.error_code,) = _INT16(data, pos)
        pos += 2
    pos = _tags(data, pos)
    if pos > size:
        raise ValueError("the answer ends early")
    return answer, pos


def _brokers(data: bytes, pos: int, size: int, brokers: dict[int, str]) -> int:
    """The brokers listed (node id -> "host:port", into ``brokers``); where the next field starts."""
    count, pos = _length(data, pos)
    for _ in range(count):
        (node_id,) = _INT32(data, pos)
        host, pos = _string(data, pos + 4, size)
        (port,) = _INT32(data, pos)
        _, pos = _string(data, pos + 4, size)  # rack
        pos = _tags(data, pos)
        brokers[node_id] = f"{host}:{port}"
    return pos


def _partitions(data: bytes, pos: int, count: int) -> tuple[frozenset[int], int]:
    """Those of ``count`` partitions without a leader or with an error (their indexes; none: every one led); where the
    next field starts. Each partition: error, index, leader, leader epoch, then its replicas, in-sync and offline
    replicas (skipped) and tagged fields."""
    if count * _MIN_PARTITION <= len(data) - pos:  # (a count the rest cannot hold: cut short, read one at a time)
        matched = _all_led(count).match(data, pos)
        if matched is not None:
            return _NONE, matched.end()
    return _partitions_one_by_one(data, pos, count)


@functools.lru_cache(maxsize=64)
def _all_led(count: int) -> re.Pattern[bytes]:
    """``count`` partitions that each have a leader and no error (``_LED``), in one match."""
    return re.compile(b"(?:%s){%d}" % (_LED, count), re.DOTALL)


def _partitions_one_by_one(data: bytes, pos: int, count: int) -> tuple[frozenset[int], int]:
    """``_partitions`` in Python, a partition at a time: any partition, any length, any tagged field."""
    leaderless: list[int] = []
    for _ in range(count):
        partition_error, index, leader, _ = _PARTITION(data, pos)
        if partition_error or leader < 0:
            leaderless.append(index)
        pos += 14
        for _ in _ARRAYS:
            length = data[pos]
            if 0 < length < 0x80:  # a one-byte length, not null: skipped in place
                pos += 4 * length - 3
            else:
                length, pos = _length(data, pos)
                pos += 4 * length
        pos = pos + 1 if data[pos] == 0 else _tags(data, pos)
    return frozenset(leaderless), pos


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at ``pos``, and where the next field starts."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError("a varint longer than 5 bytes")


def _length(data: bytes, pos: int) -> tuple[int, int]:
    """A compact array's length (null read as empty)."""
    length = data[pos]
    if length < 0x80:
        return max(0, length - 1), pos + 1
    length, pos = _uvarint(data, pos)
    return max(0, length - 1), pos


def _string(data: bytes, pos: int, size: int) -> tuple[str | None, int]:
    """A compact nullable string."""
    length = data[pos]
    pos += 1
    if length >= 0x80:
        length, pos = _uvarint(data, pos - 1)
    if length == 0:
        return None, pos
    end = pos + length - 1
    if end > size:
        raise ValueError("the answer ends early")
    return data[pos:end].decode(), end


def _tags(data: bytes, pos: int) -> int:
    """Past a tagged-field section."""
    if data[pos] == 0:  # none (almost every section)
        return pos + 1
    count, pos = _uvarint(data, pos)
    for _ in range(count):
        _, pos = _uvarint(data, pos)  # tag
        length, pos = _uvarint(data, pos)
        pos += length
    return pos
