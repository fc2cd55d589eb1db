"""CreateTopics v4, written and read by the client itself for its bulk creates (``direct_creates``), exactly as
librdkafka 2.16 writes it and reads it (``rd_kafka_CreateTopicsRequest``, ``rd_kafka_CreateTopicsResponse_parse``):
the version librdkafka sends to Kafka 2.4 and later (KIP-464's -1 defaults), not flexible.

- A topic with a replica assignment carries -1 partitions and replication factor -1 and its assignment; its
  configs in the order given; the request's ``timeout_ms`` is the operation timeout in whole milliseconds.
- A topic's error is KafkaError(code, the broker's message), or librdkafka's own text for the code when the broker
  gave none; REQUEST_TIMED_OUT is no error when the operation timeout was 0 (the broker was told not to wait).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.cimpl import NewTopic

from throttled_admin._driver.wire_codec import Reader, Writer

__all__ = ["API_KEY", "VERSION", "CreateAnswer", "decode", "encode"]

API_KEY, VERSION = 19, 4
_REQUEST_TIMED_OUT = 7
_FLOAT32 = struct.Struct("f")
_MESSAGE_BYTES = 511  # confluent-kafka formats an error's text into 512 bytes (KafkaError_new0)


def encode(topics: Sequence[NewTopic], operation_timeout_s: float, validate_only: bool) -> bytes:
    body = Writer().int32(len(topics))
    for topic in topics:
        assignment = topic.replica_assignment or []
        body.string(topic.topic)
        if assignment:
            body.int32(-1).int16(-1)
        else:
            body.int32(topic.num_partitions).int16(topic.replication_factor)
        body.int32(len(assignment))
        for partition, replicas in enumerate(assignment):
            body.int32(partition).int32(len(replicas))
            for broker in replicas:
                body.int32(broker)
        config = topic.config or {}
        body.int32(len(config))
        for name, value in config.items():
            body.string(name).string(value)
    return body.int32(_milliseconds(operation_timeout_s)).int8(1 if validate_only else 0).build()


def _float32(value: float) -> float:
    return float(_FLOAT32.unpack(_FLOAT32.pack(value))[0])


def _milliseconds(seconds: float) -> int:
    """confluent-kafka's ``(int)((float)seconds * 1000.0f)`` (Admin.c), in single precision as it is."""
    return int(_float32(_float32(seconds) * 1000.0))


@dataclass(frozen=True)
class CreateAnswer:
    """One response: its throttle, and each topic's result (None: created) in the order the broker gave them."""

    throttle_ms: int
    results: dict[str, BaseException | None]


def decode(reader: Reader, operation_timeout_s: float, asked: Sequence[str]) -> CreateAnswer:
    """The response body (after its header). ValueError when it does not parse, names a topic not asked for, or
    names one twice (librdkafka fails such an answer whole)."""
    throttle_ms = reader.int32()
    results: dict[str, BaseException | None] = {}
    wanted = set(asked)
    for _ in range(reader.array_length()):
        name, code, message = reader.string(), reader.int16(), reader.string()
        if name is None or name not in wanted or name in results:
            raise ValueError(f"the answer names {name!r}, which was not asked for or is named twice")
        if code == _REQUEST_TIMED_OUT and operation_timeout_s <= 0:
            code = 0
        if message and len(message) > _MESSAGE_BYTES // 4:  # (at most 4 bytes a character)
            message = message.encode()[:_MESSAGE_BYTES].decode(errors="ignore")
        results[name] = (
            None if code == 0 else KafkaException(KafkaError(code, message) if message else KafkaError(code))
        )
    return CreateAnswer(throttle_ms, results)
