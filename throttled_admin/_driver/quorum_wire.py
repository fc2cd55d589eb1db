"""DescribeQuorum v0 to v2 (API 55, KIP-595), written and read by the client itself: who leads the KRaft controller
quorum, and in which epoch.

A broker forwards the request to the active controller, which answers for the metadata log's one partition
(``__cluster_metadata``-0). The leader epoch grows by one at every election, so two reads that differ say the
controller changed between them, whether or not any connection of the client was lost (``quorum_watch``). The
request needs DESCRIBE on the cluster; a principal without it is answered CLUSTER_AUTHORIZATION_FAILED.

All three versions are flexible. Only the first partition's leader and epoch are read: what follows (the high
watermark, voters, observers, v2's nodes) is never needed, and never parsed.
"""

from __future__ import annotations

from typing import NamedTuple

from throttled_admin._driver.wire_codec import Reader, Writer

__all__ = ["API_KEY", "MAX_VERSION", "MIN_VERSION", "UNSUPPORTED_VERSION", "QuorumAnswer", "decode", "encode"]

API_KEY = 55
MIN_VERSION = 0
MAX_VERSION = 2
METADATA_TOPIC = "__cluster_metadata"
UNSUPPORTED_VERSION = 35  # Kafka's code; also the answer for a broker that does not serve DescribeQuorum at all


class QuorumAnswer(NamedTuple):
    """The answer's error (the top-level one, else the partition's: 0 when none), and the leader and its epoch."""

    error_code: int
    leader_id: int = -1
    leader_epoch: int = -1


def encode(version: int) -> bytes:
    """The request body: the metadata log's partition 0."""
    del version  # the request is the same in v0 to v2
    body = Writer().uvarint(2).compact_string(METADATA_TOPIC)  # one topic
    body.uvarint(2).int32(0).no_tags()  # one partition: index 0
    return body.no_tags().no_tags().build()


def decode(version: int, reader: Reader) -> QuorumAnswer:
    """The answer (its body, after the response header)."""
    error = reader.int16()
    if version >= 2:
        reader.compact_string()  # error_message
    if error:
        return QuorumAnswer(error)
    for _ in range(reader.compact_array_length()):
        reader.compact_string()  # topic_name
        for _ in range(reader.compact_array_length()):
            reader.int32()  # partition_index
            error = reader.int16()
            if version >= 2:
                reader.compact_string()  # error_message
            if error:
                return QuorumAnswer(error)
            return QuorumAnswer(0, reader.int32(), reader.int32())
    raise ValueError("the answer names no partition of the metadata log")
