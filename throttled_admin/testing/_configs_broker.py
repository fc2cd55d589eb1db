"""The broker configs QuotaBroker describes for a BROKER resource: Kafka 4.0's whole broker config set
(``broker_configs.json``, read by ``_configs_broker_set.py``), refined here, with their validators, for the
configs the model acts on or validates: every broker config a topic config falls back to
(``ServerTopicConfigSynonyms``, with ``LogConfig.SERVER_CONFIG_DEF``'s types, defaults and
``ServerLogConfigs``' documentation), ``num.partitions``, ``default.replication.factor``,
``auto.create.topics.enable``, ``node.id`` and ``process.roles``.

``read_only`` is False exactly for the configs Kafka can change dynamically (per-broker or cluster-wide).
"""

from __future__ import annotations

from throttled_admin._kafka.config_schema import AnyOf, ConfigKey, ConfigType, LevelRange, Range, Validator
from throttled_admin._kafka.topic_configs import LONG_MAX, TOPIC_CONFIGS
from throttled_admin.testing._configs_broker_set import broker_config_set

__all__ = ["BROKER_CONFIGS", "SYNONYM_GROUPS"]

INT, LONG, DOUBLE = ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE
BOOLEAN, STRING, LIST = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.LIST


def _dynamic(
    name: str, type_: ConfigType, default: str | None, doc: str, validator: Validator | None = None
) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, validator, read_only=False)


def _static(
    name: str, type_: ConfigType, default: str | None, doc: str, validator: Validator | None = None
) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, validator, read_only=True)


_LEVEL_DOC = "The compression level to use if compression.type is set to <code>{codec}</code>."

_CONFIGS = (
    _static(
        "node.id",
        INT,
        None,
        "The node ID associated with the roles this process is playing when <code>process.roles</code> is "
        "non-empty. This is required configuration when running in KRaft mode.",
    ),
    _static(
        "process.roles",
        LIST,
        None,
        "The roles that this process plays: 'broker', 'controller', or 'broker,controller' if it is both. ",
        AnyOf(("broker", "controller")),
    ),
    _static("num.partitions", INT, "1", "The default number of log partitions per topic", Range(1)),
    _static(
        "default.replication.factor",
        INT,
        "1",
        "The replication factor for automatically created topics, and for topics created with -1 as the "
        "replication factor",
    ),
    _static("auto.create.topics.enable", BOOLEAN, "true", "Enable auto creation of topic on the server."),
    _dynamic("log.segment.bytes", INT, "1073741824", "The maximum size of a single log file", Range(1024 * 1024)),
    _dynamic(
        "log.roll.ms",
        LONG,
        None,
        "The maximum time before a new log segment is rolled out (in milliseconds). If not set, the value in "
        "log.roll.hours is used",
    ),
    _static(
        "log.roll.hours",
        INT,
        "168",
        "The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms property",
        Range(1),
    ),
    _dynamic(
        "log.roll.jitter.ms",
        LONG,
        None,
        "The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not set, the value in "
        "log.roll.jitter.hours is used",
    ),
    _static(
        "log.roll.jitter.hours",
        INT,
        "0",
        "The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms property",
        Range(0),
    ),
    _dynamic("log.index.size.max.bytes", INT, "10485760", "The maximum size in bytes of the offset index", Range(4)),
    _dynamic(
        "log.flush.interval.messages",
        LONG,
        LONG_MAX,
        "The number of messages accumulated on a log partition before messages are flushed to disk.",
        Range(1),
    ),
    _dynamic(
        "log.flush.interval.ms",
        LONG,
        None,
        "The maximum time in ms that a message in any topic is kept in memory before flushed to disk. If not "
        "set, the value in log.flush.scheduler.interval.ms is used",
    ),
    _static(
        "log.flush.scheduler.interval.ms",
        LONG,
        LONG_MAX,
        "The frequency in ms that the log flusher checks whether any log needs to be flushed to disk",
    ),
    _dynamic("log.retention.bytes", LONG, "-1", "The maximum size of the log before deleting it"),
    _dynamic(
        "log.retention.ms",
        LONG,
        None,
        "The number of milliseconds to keep a log file before deleting it (in milliseconds), If not set, the "
        "value in log.retention.minutes is used. If set to -1, no time limit is applied.",
    ),
    _static(
        "log.retention.minutes",
        INT,
        None,
        "The number of minutes to keep a log file before deleting it (in minutes), secondary to "
        "log.retention.ms property. If not set, the value in log.retention.hours is used",
    ),
    _static(
        "log.retention.hours",
        INT,
        "168",
        "The number of hours to keep a log file before deleting it (in hours), tertiary to log.retention.ms property",
    ),
    _dynamic(
        "message.max.bytes",
        INT,
        "1048588",
        "The largest record batch size allowed by Kafka (after compression if compression is enabled). If this "
        "is increased and there are consumers older than 0.10.2, the consumers' fetch size must also be "
        "increased so that they can fetch record batches this large. In the latest message format version, "
        "records are always grouped into batches for efficiency. In previous message format versions, "
        "uncompressed records are not grouped into batches and this limit only applies to a single record in "
        "that case.This can be set per topic with the topic level <code>max.message.bytes</code> config.",
        Range(0),
    ),
    _dynamic(
        "log.index.interval.bytes",
        INT,
        "4096",
        "The interval with which we add an entry to the offset index.",
        Range(0),
    ),
    _dynamic(
        "log.cleaner.delete.retention.ms",
        LONG,
        "86400000",
        "The amount of time to retain tombstone message markers for log compacted topics. This setting also "
        "gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to "
        "ensure that they get a valid snapshot of the final stage (otherwise tombstones messages may be "
        "collected before a consumer completes their scan).",
        Range(0),
    ),
    _dynamic(
        "log.cleaner.min.compaction.lag.ms",
        LONG,
        "0",
        "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being "
        "compacted.",
        Range(0),
    ),
    _dynamic(
        "log.cleaner.max.compaction.lag.ms",
        LONG,
        LONG_MAX,
        "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs "
        "that are being compacted.",
        Range(1),
    ),
    _dynamic(
        "log.segment.delete.delay.ms",
        LONG,
        "60000",
        "The amount of time to wait before deleting a file from the filesystem. If the value is 0 and there is "
        "no file to delete, the system will wait 1 millisecond. Low value will cause busy waiting",
        Range(0),
    ),
    _dynamic(
        "log.cleaner.min.cleanable.ratio",
        DOUBLE,
        "0.5",
        "The minimum ratio of dirty log to total log for a log to eligible for cleaning. If the "
        "log.cleaner.max.compaction.lag.ms or the log.cleaner.min.compaction.lag.ms configurations are also "
        "specified, then the log compactor considers the log eligible for compaction as soon as either: (i) the "
        "dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the "
        "log.cleaner.min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for "
        "at most the log.cleaner.max.compaction.lag.ms period.",
        Range(0, 1),
    ),
    _dynamic(
        "log.cleanup.policy",
        LIST,
        "delete",
        "The default cleanup policy for segments beyond the retention window. A comma separated list of valid "
        'policies. Valid policies are: "delete" and "compact"',
        AnyOf(("compact", "delete")),
    ),
    _dynamic(
        "unclean.leader.election.enable",
        BOOLEAN,
        "false",
        TOPIC_CONFIGS["unclean.leader.election.enable"].documentation,
    ),
    _dynamic(
        "min.insync.replicas",
        INT,
        "1",
        'When a producer sets acks to "all" (or "-1"), <code>min.insync.replicas</code> specifies the minimum '
        "number of replicas that must acknowledge a write for the write to be considered successful. If this "
        "minimum cannot be met, then the producer will raise an exception (either <code>NotEnoughReplicas</code> "
        "or <code>NotEnoughReplicasAfterAppend</code>).<br>When used together, <code>min.insync.replicas</code> "
        "and acks allow you to enforce greater durability guarantees. A typical scenario would be to create a "
        "topic with a replication factor of 3, set <code>min.insync.replicas</code> to 2, and produce with acks "
        'of "all". This will ensure that the producer raises an exception if a majority of replicas do not '
        "receive a write.",
        Range(1),
    ),
    _dynamic(
        "compression.type",
        STRING,
        "producer",
        TOPIC_CONFIGS["compression.type"].documentation,
        TOPIC_CONFIGS["compression.type"].validator,
    ),
    _dynamic("compression.gzip.level", INT, "-1", _LEVEL_DOC.format(codec="gzip"), LevelRange(1, 9, -1)),
    _dynamic("compression.lz4.level", INT, "9", _LEVEL_DOC.format(codec="lz4"), Range(1, 17)),
    _dynamic("compression.zstd.level", INT, "3", _LEVEL_DOC.format(codec="zstd"), Range(-131072, 22)),
    _dynamic(
        "log.preallocate",
        BOOLEAN,
        "false",
        "Should pre allocate file when create new segment? If you are using Kafka on Windows, you probably need "
        "to set it to true.",
    ),
    _dynamic(
        "log.message.timestamp.type",
        STRING,
        "CreateTime",
        "Define whether the timestamp in the message is message create time or log append time. The value "
        "should be either <code>CreateTime</code> or <code>LogAppendTime</code>.",
        AnyOf(("CreateTime", "LogAppendTime")),
    ),
    _dynamic(
        "log.message.timestamp.before.max.ms",
        LONG,
        LONG_MAX,
        "This configuration sets the allowable timestamp difference between the broker's timestamp and the "
        "message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with "
        "the maximum allowable difference determined by the value set in this configuration. If "
        "log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if "
        "log.message.timestamp.type=LogAppendTime.",
        Range(0),
    ),
    _dynamic(
        "log.message.timestamp.after.max.ms",
        LONG,
        "3600000",
        "This configuration sets the allowable timestamp difference between the message timestamp and the "
        "broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with "
        "the maximum allowable difference determined by the value set in this configuration. If "
        "log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if "
        "log.message.timestamp.type=LogAppendTime.",
        Range(0),
    ),
    _dynamic(
        "log.message.downconversion.enable",
        BOOLEAN,
        "true",
        "Down-conversion is not possible in Apache Kafka 4.0 and newer, hence this configuration is no-op and "
        "it is deprecated for removal in Apache Kafka 5.0.",
    ),
    _dynamic(
        "log.local.retention.ms",
        LONG,
        "-2",
        "The number of milliseconds to keep the local log segments before it gets eligible for deletion. "
        "Default value is -2, it represents `log.retention.ms` value is to be used. The effective value should "
        "always be less than or equal to `log.retention.ms` value.",
        Range(-2),
    ),
    _dynamic(
        "log.local.retention.bytes",
        LONG,
        "-2",
        "The maximum size of local log segments that can grow for a partition before it gets eligible for "
        "deletion. Default value is -2, it represents `log.retention.bytes` value to be used. The effective "
        "value should always be less than or equal to `log.retention.bytes` value.",
        Range(-2),
    ),
)

BROKER_CONFIGS: dict[str, ConfigKey] = {key.name: key for key in (*broker_config_set(), *_CONFIGS)}

# DynamicBrokerConfig.brokerConfigSynonyms: a broker config and the ones it falls back to, in order
# (log.retention.ms -> .minutes -> .hours); each name maps to its whole group.
SYNONYM_GROUPS: dict[str, tuple[str, ...]] = {
    synonym.name: tuple(s.name for s in key.synonyms) for key in TOPIC_CONFIGS.values() for synonym in key.synonyms
}
