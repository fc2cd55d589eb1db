"""Apache Kafka 4.4's topic configs, as data: ``LogConfig``'s ``ConfigDef`` (type, default, validator),
``TopicConfig``'s documentation and ``ServerTopicConfigSynonyms`` (the broker configs each falls back to).

Names, types, defaults, documentation and synonyms are what a Kafka 4.4.0 broker's DescribeConfigs of a topic
says (the ``kafka`` test ``tests/test_broker_configs.py`` compares them with the running broker), the validators
Kafka 4.4.0's ``LogConfig``. Since 3.x: ``message.format.version`` and ``message.timestamp.difference.max.ms``
are gone, ``segment.bytes`` is at least 1 MiB and ``message.timestamp.after.max.ms`` defaults to one hour
(KIP-1030), all in 4.0; 4.4 removed ``message.downconversion.enable`` (a no-op since 4.0) and added
``max.decompressed.message.bytes``, ``remote.copy.lag.ms``, ``remote.copy.lag.bytes`` and
``errors.deadletterqueue.group.enable``. Defaults are rendered as ``ConfigDef.convertToString`` does, which is
what DescribeConfigs and CreateTopics v5+ send.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from throttled_admin._kafka.config_schema import (
    AnyOf,
    ConfigError,
    ConfigKey,
    ConfigType,
    LevelRange,
    Range,
    ReplicaList,
    Synonym,
    parse,
)

__all__ = ["TOPIC_CONFIGS", "config_problem", "lags_conflict_message", "unknown_config_message"]

LONG_MAX = str(2**63 - 1)
HOUR_MS = 3_600_000
MINUTE_MS = 60_000

INT, LONG, DOUBLE = ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE
BOOLEAN, STRING, LIST = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.LIST


def _at_least(minimum: int) -> Range:
    return Range(min=minimum)


def _same(name: str) -> tuple[Synonym, ...]:
    return (Synonym(name),)


def _log(name: str) -> tuple[Synonym, ...]:
    return (Synonym("log." + name),)


def _cleaner(name: str) -> tuple[Synonym, ...]:
    return (Synonym("log.cleaner." + name),)


_REPLICAS_DOC = (
    "A list of replicas for which log replication should be throttled on the {side} side. The list should "
    "describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or "
    "alternatively the wildcard '*' can be used to throttle all replicas for this topic."
)

_CONFIGS = (
    ConfigKey(
        "segment.bytes",
        INT,
        "1073741824",
        "This configuration controls the segment file size for the log. Retention and cleaning is always done a "
        "file at a time so a larger segment size means fewer files but less granular control over retention. The "
        "active segment is rolled once it reaches this size.",
        _at_least(1024 * 1024),
        _log("segment.bytes"),
    ),
    ConfigKey(
        "segment.ms",
        LONG,
        "604800000",
        "This configuration controls the period of time after which Kafka will force the log to roll even if the "
        "segment file isn't full to ensure that retention can delete or compact old data. This forces active "
        "segment rolling by time, even if the active segment has not reached <code>segment.bytes</code>. For "
        "compacted topics, <code>max.compaction.lag.ms</code> can trigger active segment rolling sooner: the "
        "effective time-based roll threshold is the smaller of <code>segment.ms</code> and "
        "<code>max.compaction.lag.ms</code>.",
        _at_least(1),
        (Synonym("log.roll.ms"), Synonym("log.roll.hours", HOUR_MS)),
    ),
    ConfigKey(
        "segment.jitter.ms",
        LONG,
        "0",
        "The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds "
        "of segment rolling",
        _at_least(0),
        (Synonym("log.roll.jitter.ms"), Synonym("log.roll.jitter.hours", HOUR_MS)),
    ),
    ConfigKey(
        "segment.index.bytes",
        INT,
        "10485760",
        "This configuration controls the size of the index that maps offsets to file positions. We "
        "preallocate this index file and shrink it only after log rolls. You generally should not need to "
        "change this setting.",
        _at_least(4),
        _log("index.size.max.bytes"),
    ),
    ConfigKey(
        "flush.messages",
        LONG,
        LONG_MAX,
        "This setting allows specifying an interval at which we will force an fsync of data written to the log. For "
        "example if this was set to 1 we would fsync after every message; if it were 5 we would fsync after every "
        "five messages. In general we recommend you not set this and use replication for durability and allow the "
        "operating system's background flush capabilities as it is more efficient. This setting can be overridden "
        'on a per-topic basis (see <a href="https://kafka.apache.org/documentation/#topicconfigs">the per-topic '
        "configuration section</a>).",
        _at_least(1),
        _log("flush.interval.messages"),
    ),
    ConfigKey(
        "flush.ms",
        LONG,
        LONG_MAX,
        "This setting allows specifying a time interval at which we will force an fsync of data written to the log. "
        "For example if this was set to 1000 we would fsync after 1000 ms had passed. Note that this setting "
        "depends on the broker-level configuration <code>log.flush.scheduler.interval.ms</code>, which controls how "
        "frequently the flush check occurs. In general we recommend you not set this and use replication for "
        "durability and allow the operating system's background flush capabilities as it is more efficient.",
        _at_least(0),
        (Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms")),
    ),
    ConfigKey(
        "retention.bytes",
        LONG,
        "-1",
        "This configuration controls the maximum size a partition (which consists of log segments) can grow "
        'to before we will discard old log segments to free up space if we are using the "delete" retention '
        "policy. By default there is no size limit only a time limit. Since this limit is enforced at the "
        "partition level, multiply it by the number of partitions to compute the topic retention in bytes. "
        'Additionally, retention.bytes configuration operates independently of "segment.ms" and '
        '"segment.bytes" configurations. Moreover, it triggers the rolling of new segment if the '
        "retention.bytes is configured to zero.",
        None,  # may be negative (LogManager.cleanupSegmentsToMaintainSize)
        _log("retention.bytes"),
    ),
    ConfigKey(
        "retention.ms",
        LONG,
        "604800000",
        "This configuration controls the maximum time we will retain a log before we will discard old log "
        'segments to free up space if we are using the "delete" retention policy. This represents an SLA on '
        "how soon consumers must read their data. If set to -1, no time limit is applied. Additionally, "
        'retention.ms configuration operates independently of "segment.ms" and "segment.bytes" '
        "configurations. Moreover, it triggers the rolling of new segment if the retention.ms condition is "
        "satisfied.",
        _at_least(-1),
        (
            Synonym("log.retention.ms"),
            Synonym("log.retention.minutes", MINUTE_MS),
            Synonym("log.retention.hours", HOUR_MS),
        ),
    ),
    ConfigKey(
        "max.message.bytes",
        INT,
        "1048588",
        "The largest record batch size allowed by Kafka (after compression if compression is enabled).",
        _at_least(0),
        _same("message.max.bytes"),
    ),
    ConfigKey(
        "max.decompressed.message.bytes",
        INT,
        "2147483639",
        "The maximum decompressed size, in bytes, of a single record the broker will accept; larger records are "
        "rejected with an <code>InvalidRecordException</code>. It is enforced where the broker decompresses "
        "records: produce validation of compressed batches, log compaction, and offset lookups by timestamp or max "
        "timestamp against the local log or remote storage. Unlike <code>max.message.bytes</code>, which bounds the "
        "compressed batch on the wire, this bounds the decompressed size of an individual record. Lowering it below "
        "the size of already-stored records makes compaction and timestamp offset lookups of affected partitions "
        "fail until it is raised again. The default imposes no limit beyond the largest record the broker could "
        "allocate anyway; set a smaller value to enforce a per-record cap.",
        Range(1, 2147483639),
        _same("max.decompressed.message.bytes"),
    ),
    ConfigKey(
        "index.interval.bytes",
        INT,
        "4096",
        "This setting controls how frequently Kafka adds entries to its offset index and, conditionally, to its "
        "time index. The default setting ensures that we index a message roughly every 4096 bytes. More frequent "
        "indexing allows reads to jump closer to the exact position in the log but results in larger index files. "
        "You probably don't need to change this.<p> Note: the time index will be inserted only when the timestamp "
        "is greater than the last indexed timestamp.</p>",
        _at_least(0),
        _log("index.interval.bytes"),
    ),
    ConfigKey(
        "delete.retention.ms",
        LONG,
        "86400000",
        "The amount of time to retain delete tombstone markers for <a "
        'href="https://kafka.apache.org/documentation/#compaction">log compacted</a> topics. This setting also '
        "gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure "
        "that they get a valid snapshot of the final stage (otherwise delete tombstones may be collected before "
        "they complete their scan).",
        _at_least(0),
        _cleaner("delete.retention.ms"),
    ),
    ConfigKey(
        "min.compaction.lag.ms",
        LONG,
        "0",
        "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are "
        "being compacted.",
        _at_least(0),
        _cleaner("min.compaction.lag.ms"),
    ),
    ConfigKey(
        "max.compaction.lag.ms",
        LONG,
        LONG_MAX,
        "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that "
        "are being compacted. Because the active segment is never compacted, for compacted topics this value also "
        "drives active segment rolling: the effective time-based roll threshold is the smaller of "
        "<code>segment.ms</code> and <code>max.compaction.lag.ms</code>. Active segment rolling moves records out "
        "of the active segment, after which <code>max.compaction.lag.ms</code> makes them eligible for compaction "
        "even if <code>min.cleanable.dirty.ratio</code> is not met. See <a "
        'href="https://kafka.apache.org/documentation/#compaction">log compaction</a>.',
        _at_least(1),
        _cleaner("max.compaction.lag.ms"),
    ),
    ConfigKey(
        "file.delete.delay.ms",
        LONG,
        "60000",
        "The time to wait before deleting a file from the filesystem",
        _at_least(0),
        _log("segment.delete.delay.ms"),
    ),
    ConfigKey(
        "min.cleanable.dirty.ratio",
        DOUBLE,
        "0.5",
        "This configuration controls how frequently the log compactor will attempt to clean the log (assuming <a "
        'href="https://kafka.apache.org/documentation/#compaction">log compaction</a> is enabled). By default we '
        "will avoid cleaning a log where more than 50% of the log has been compacted. This ratio bounds the maximum "
        "space wasted in the log by duplicates (at 50% at most 50% of the log could be duplicates). A higher ratio "
        "will mean fewer, more efficient cleanings but will mean more wasted space in the log. If the "
        "max.compaction.lag.ms or the min.compaction.lag.ms configurations are also specified, then the log "
        "compactor considers the log to be eligible for compaction as soon as either: (i) the dirty ratio threshold "
        "has been met and the log has had dirty (uncompacted) records for at least the min.compaction.lag.ms "
        "duration, or (ii) if the log has had dirty (uncompacted) records for at most the max.compaction.lag.ms "
        "period.",
        Range(0, 1),
        _cleaner("min.cleanable.ratio"),
    ),
    ConfigKey(
        "cleanup.policy",
        LIST,
        "delete",
        'This config designates the retention policy to use on log segments. The "delete" policy (which is the '
        'default) will discard old segments when their retention time or size limit has been reached. The "compact" '
        'policy will enable <a href="https://kafka.apache.org/documentation/#compaction">log compaction</a>, which '
        "retains the latest value for each key. It is also possible to specify both policies in a comma-separated "
        'list (e.g. "delete,compact"). In this case, old segments will be discarded per the retention time and size '
        "configuration, while retained segments will be compacted. An empty list means infinite retention - no "
        "cleanup policies will be applied and log segments will be retained indefinitely. Note that with remote "
        "storage enabled, local retention limits (log.local.retention.ms and log.local.retention.bytes) are still "
        "applied to local segments.",
        AnyOf(("compact", "delete")),
        _log("cleanup.policy"),
    ),
    ConfigKey(
        "unclean.leader.election.enable",
        BOOLEAN,
        "false",
        "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even "
        "though doing so may result in data loss.<p>Note: In KRaft mode, when enabling this config dynamically, it "
        "needs to wait for the unclean leader electionthread to trigger election periodically (default is 5 "
        "minutes). Please run <code>kafka-leader-election.sh</code> with <code>unclean</code> option to trigger the "
        "unclean leader election immediately if needed.</p>",
        None,
        _same("unclean.leader.election.enable"),
    ),
    ConfigKey(
        "min.insync.replicas",
        INT,
        "1",
        "Specifies the <i>minimum</i> number of in-sync replicas (including the leader) required for a write to "
        'succeed when a producer sets <code>acks</code> to "all" (or "-1"). In the <code>acks=all</code> case, '
        "every in-sync replica must acknowledge a write for it to be considered successful. E.g., if a topic has "
        "<code>replication.factor</code> of 3 and the ISR set includes all three replicas, then all three replicas "
        "must acknowledge an <code>acks=all</code> write for it to succeed, even if "
        "<code>min.insync.replicas</code> happens to be less than 3. If <code>acks=all</code> and the current ISR "
        "set contains fewer than <code>min.insync.replicas</code> members, then the producer will raise an "
        "exception (either <code>NotEnoughReplicas</code> or <code>NotEnoughReplicasAfterAppend</code>).<br> "
        "Regardless of the <code>acks</code> setting, the messages will not be visible to the consumers until they "
        "are replicated to all in-sync replicas and the <code>min.insync.replicas</code> condition is met.<br> When "
        "used together, <code>min.insync.replicas</code> and <code>acks</code> allow you to enforce greater "
        "durability guarantees. A typical scenario would be to create a topic with a replication factor of 3, set "
        '<code>min.insync.replicas</code> to 2, and produce with <code>acks</code> of "all". This ensures that a '
        "majority of replicas must persist a write before it's considered successful by the producer and it's "
        "visible to consumers.<p>Note that when the Eligible Leader Replicas feature is enabled, the semantics of "
        "this config changes. Please refer to <a "
        'href="https://kafka.apache.org/documentation/#eligible_leader_replicas">the ELR section</a> for more '
        "info.</p>",
        _at_least(1),
        _same("min.insync.replicas"),
    ),
    ConfigKey(
        "compression.type",
        STRING,
        "producer",
        "Specify the final compression type for a given topic. This configuration accepts the standard "
        "compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is "
        "equivalent to no compression; and 'producer' which means retain the original compression codec set by "
        "the producer.",
        AnyOf(("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),  # BrokerCompressionType
        _same("compression.type"),
    ),
    ConfigKey(
        "compression.gzip.level",
        INT,
        "-1",
        "The compression level to use if compression.type is set to <code>gzip</code>.",
        LevelRange(1, 9, -1),  # Deflater.BEST_SPEED..BEST_COMPRESSION, or DEFAULT_COMPRESSION
        _same("compression.gzip.level"),
    ),
    ConfigKey(
        "compression.lz4.level",
        INT,
        "9",
        "The compression level to use if compression.type is set to <code>lz4</code>.",
        Range(1, 17),
        _same("compression.lz4.level"),
    ),
    ConfigKey(
        "compression.zstd.level",
        INT,
        "3",
        "The compression level to use if compression.type is set to <code>zstd</code>.",
        Range(-131072, 22),  # ZSTD_minCLevel .. ZSTD_MAX_CLEVEL
        _same("compression.zstd.level"),
    ),
    ConfigKey(
        "preallocate",
        BOOLEAN,
        "false",
        "True if we should preallocate the file on disk when creating a new log segment.",
        None,
        _log("preallocate"),
    ),
    ConfigKey(
        "message.timestamp.type",
        STRING,
        "CreateTime",
        "Define whether the timestamp in the message is message create time or log append time.",
        AnyOf(("CreateTime", "LogAppendTime")),
        _log("message.timestamp.type"),
    ),
    ConfigKey(
        "message.timestamp.before.max.ms",
        LONG,
        LONG_MAX,
        "This configuration sets the allowable timestamp difference between the broker's timestamp and the "
        "message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with "
        "the maximum allowable difference determined by the value set in this configuration. If "
        "message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if "
        "message.timestamp.type=LogAppendTime.",
        _at_least(0),
        _log("message.timestamp.before.max.ms"),
    ),
    ConfigKey(
        "message.timestamp.after.max.ms",
        LONG,
        "3600000",
        "This configuration sets the allowable timestamp difference between the message timestamp and the "
        "broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with "
        "the maximum allowable difference determined by the value set in this configuration. If "
        "message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if "
        "message.timestamp.type=LogAppendTime.",
        _at_least(0),
        _log("message.timestamp.after.max.ms"),
    ),
    ConfigKey(
        "leader.replication.throttled.replicas",
        LIST,
        "",
        _REPLICAS_DOC.format(side="leader"),
        ReplicaList(),
    ),
    ConfigKey(
        "follower.replication.throttled.replicas",
        LIST,
        "",
        _REPLICAS_DOC.format(side="follower"),
        ReplicaList(),
    ),
    ConfigKey(
        "remote.storage.enable",
        BOOLEAN,
        "false",
        "To enable tiered storage for a topic, set this configuration to true. To disable tiered storage for a "
        "topic that has it enabled, set this configuration to false. When disabling, you must also set "
        "<code>remote.log.delete.on.disable</code> to true.",
    ),
    ConfigKey(
        "local.retention.ms",
        LONG,
        "-2",
        "The number of milliseconds to keep the local log segment before it gets deleted. Default value is -2, it "
        "represents <code>retention.ms</code> value is to be used. The effective value should always be less than "
        "or equal to <code>retention.ms</code> value.",
        _at_least(-2),
        _log("local.retention.ms"),
    ),
    ConfigKey(
        "local.retention.bytes",
        LONG,
        "-2",
        "The maximum size of local log segments that can grow for a partition before it deletes the old segments. "
        "Default value is -2, it represents <code>retention.bytes</code> value to be used. The effective value "
        "should always be less than or equal to <code>retention.bytes</code> value.",
        _at_least(-2),
        _log("local.retention.bytes"),
    ),
    ConfigKey(
        "remote.log.copy.disable",
        BOOLEAN,
        "false",
        "Determines whether tiered data for a topic should become read only, and no more data uploading on a "
        "topic. Once this config is set to true, the local retention configuration (i.e. "
        "local.retention.ms/bytes) becomes irrelevant, and all data expiration follows the topic-wide retention "
        "configuration(i.e. retention.ms/bytes).",
    ),
    ConfigKey(
        "remote.copy.lag.ms",
        LONG,
        "0",
        "Controls one of the two upload eligibility checks (time and size) for copying segments to remote storage. "
        "A non-active segment is upload-eligible when either this time-based check or "
        "<code>remote.copy.lag.bytes</code> is satisfied. When set to 0, uploads are immediately eligible "
        "regardless of lag checks. When set to a positive value (ms), the segment is time-eligible once elapsed "
        "time since its latest record reaches this value. When set to -1, this value is derived from effective "
        "local retention time (<code>local.retention.ms</code>). If that effective local retention time is "
        "unlimited (-1), this time-based check is not applied. A positive value should not exceed effective local "
        "retention time unless local retention is unlimited (-1).",
        _at_least(-1),
        _log("remote.copy.lag.ms"),
    ),
    ConfigKey(
        "remote.copy.lag.bytes",
        LONG,
        "-1",
        "Controls one of the two upload eligibility checks (time and size) for copying segments to remote storage. "
        "A non-active segment is upload-eligible when either this size-based check or "
        "<code>remote.copy.lag.ms</code> is satisfied. When set to 0, uploads are immediately eligible regardless "
        "of lag checks. When set to a positive value (bytes), the segment is size-eligible once bytes of newer "
        "local log data after that segment reaches this value. When set to -1, this value is derived from effective "
        "local retention size (<code>local.retention.bytes</code>). If that effective local retention size is "
        "unlimited (-1), this size-based check is not applied. A positive value should not exceed effective local "
        "retention size unless local retention is unlimited (-1).",
        _at_least(-1),
        _log("remote.copy.lag.bytes"),
    ),
    ConfigKey(
        "remote.log.delete.on.disable",
        BOOLEAN,
        "false",
        "Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a topic. "
        "This configuration should be enabled when trying to set <code>remote.storage.enable</code> from true to "
        "false",
    ),
    ConfigKey(
        "errors.deadletterqueue.group.enable",
        BOOLEAN,
        "false",
        "Enable this topic to be used as a dead-letter queue for share groups. When set to <code>true</code>, share "
        "groups can write undeliverable records to this topic. When set to <code>false</code> (the default), "
        "attempts to use this topic as a DLQ will be rejected.",
    ),
)

# In LogConfig's definition order: ConfigDef.parse reports the first invalid value in this order.
TOPIC_CONFIGS: dict[str, ConfigKey] = {key.name: key for key in _CONFIGS}


def unknown_config_message(name: str) -> str:
    """Kafka's message for a topic config name it does not know (``LogConfig.validateNames``, INVALID_CONFIG)."""
    return f"Unknown topic config name: {name}"


def config_problem(configs: Mapping[str, str], known_names: Iterable[str] = TOPIC_CONFIGS) -> str | None:
    """Kafka's message for the first config of ``configs`` the cluster would refuse: a name not among
    ``known_names`` (the names the cluster's DescribeConfigs lists for a topic; by default Kafka 4.4's, as
    kafka-topics.sh's ``LogConfig.validate`` knows its own version's), a value its type or validator refuses (in
    ``LogConfig``'s order, as ``ConfigDef.parse`` walks them), or a min.compaction.lag.ms above the
    max.compaction.lag.ms (``validateValues``). None when Kafka would take them all."""
    known = set(known_names)
    for name in sorted(configs):
        if name not in known:
            return unknown_config_message(name)
    parsed: dict[str, object] = {}
    for name, key in TOPIC_CONFIGS.items():
        if name in configs:
            try:
                parsed[name] = parse(key, configs[name])
            except ConfigError as exc:
                return str(exc)
    low, high = parsed.get("min.compaction.lag.ms"), parsed.get("max.compaction.lag.ms")
    if isinstance(low, int) and isinstance(high, int) and low > high:  # (the defaults, 0 and Long.MAX, never conflict)
        return lags_conflict_message(low, high)
    return None


def lags_conflict_message(low: int, high: int) -> str:
    """``LogConfig.validateValues``'s refusal of a min.compaction.lag.ms above the max.compaction.lag.ms."""
    return f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
