"""``hash_map_order`` against what Java itself printed: the order kafka-topics.sh lists a topic's configs in
(its Config's HashMap), and a Kafka 4.4 broker's order of a topic's configs in DescribeConfigs."""

from __future__ import annotations

import pytest

from throttled_admin._kafka.java_order import hash_map_order
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS

# Java 17: `new HashMap<>()`, put "k<i>.é😀" for i < n in order, keySet() printed as the i's. Past 12, 24 and 48
# keys the table doubles, and a key with a character outside the BMP hashes over its two UTF-16 units.
JAVA_HASHMAP = {
    12: "4,9,8,11,1,10,7,6,5,0,3,2",
    13: "4,9,12,6,0,2,8,11,1,10,7,5,3",
    24: "4,9,20,14,23,12,22,16,6,0,2,18,13,8,11,1,10,7,21,15,5,17,3,19",
    25: "14,23,22,6,2,18,8,24,11,10,7,15,3,19,4,9,20,12,16,0,13,1,21,5,17",
    48: "31,36,14,23,22,27,6,35,40,2,44,18,37,8,24,11,10,7,28,41,15,32,3,19,45,4,9,20,38,12,25,46,16,33,0,42,43,13,29,"
    "26,39,1,34,21,5,17,47,30",
    49: "31,14,23,22,6,40,8,24,7,41,15,32,9,38,12,25,0,42,43,13,26,39,1,30,36,27,35,2,44,18,37,11,10,28,3,19,45,4,20,"
    "46,16,33,48,29,34,21,5,17,47",
}

# A Kafka 4.4.0 broker's DescribeConfigs of a topic, all configs, as librdkafka received them (2026-11-29).
KAFKA_44_DESCRIBE_ORDER = [
    "compression.type", "errors.deadletterqueue.group.enable", "remote.copy.lag.bytes", "remote.log.delete.on.disable",
    "leader.replication.throttled.replicas", "remote.storage.enable", "min.insync.replicas", "segment.jitter.ms",
    "remote.log.copy.disable", "local.retention.ms", "cleanup.policy", "flush.ms",
    "follower.replication.throttled.replicas", "compression.lz4.level", "segment.bytes", "retention.ms",
    "compression.gzip.level", "remote.copy.lag.ms", "flush.messages", "compression.zstd.level", "max.compaction.lag.ms",
    "file.delete.delay.ms", "max.message.bytes", "min.compaction.lag.ms", "message.timestamp.type",
    "local.retention.bytes", "preallocate", "index.interval.bytes", "min.cleanable.dirty.ratio",
    "unclean.leader.election.enable", "retention.bytes", "delete.retention.ms", "message.timestamp.after.max.ms",
    "max.decompressed.message.bytes", "message.timestamp.before.max.ms", "segment.ms", "segment.index.bytes",
]  # fmt: skip


@pytest.mark.parametrize("count", sorted(JAVA_HASHMAP))
def test_the_order_javas_hash_map_iterates_in(count: int) -> None:
    keys = [f"k{i}.\u00e9\U0001f600" for i in range(count)]
    assert ",".join(str(keys.index(key)) for key in hash_map_order(keys)) == JAVA_HASHMAP[count]


def test_kafkas_describe_order_is_its_hash_map_of_the_configs_in_definition_order() -> None:
    assert hash_map_order(TOPIC_CONFIGS) == KAFKA_44_DESCRIBE_ORDER
    # kafka-topics.sh puts them in a HashMap of its own again, which changes nothing
    assert hash_map_order(KAFKA_44_DESCRIBE_ORDER) == KAFKA_44_DESCRIBE_ORDER
    # and from a broker that sends them by name (only keys that share a bucket keep the sender's order)
    by_name = hash_map_order(sorted(TOPIC_CONFIGS))
    assert [k for k in by_name if k in ("min.insync.replicas", "cleanup.policy", "retention.ms")] == [
        "min.insync.replicas",
        "cleanup.policy",
        "retention.ms",
    ]
