"""The broker configs QuotaBroker describes for a BROKER resource: the whole broker config set of
``broker_configs.json`` (``_configs_broker_set.py``), with validators for the configs the model acts on or
validates: every broker config a topic config falls back to (``ServerTopicConfigSynonyms``), ``num.partitions``,
``default.replication.factor``, ``auto.create.topics.enable``, ``node.id`` and ``process.roles``. The other broker
configs are type-checked only.

The validators are Kafka 4.4.0's (``KafkaConfig.configDef()`` read from the 4.4.0 jars); a config listed here
without one has none in Kafka either. Everything else about a config (type, default, read-only, sensitive,
documentation) comes from the data file, as the broker described it.
"""

from __future__ import annotations

import dataclasses

from throttled_admin._kafka.config_schema import AnyOf, ConfigKey, Range, Validator
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS
from throttled_admin.testing._configs_broker_set import broker_config_set

__all__ = ["BROKER_CONFIGS", "SYNONYM_GROUPS", "VALIDATORS"]

_CHECKED_BY_TYPE_ONLY: dict[str, Validator | None] = dict.fromkeys(
    (
        "default.replication.factor",
        "auto.create.topics.enable",
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
        "log.retention.bytes",
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        "unclean.leader.election.enable",
        "log.preallocate",
    )
)

VALIDATORS: dict[str, Validator | None] = {
    **_CHECKED_BY_TYPE_ONLY,
    "node.id": Range(0),
    "process.roles": AnyOf(("broker", "controller")),
    "num.partitions": Range(1),
    "log.segment.bytes": Range(1024 * 1024),
    "log.roll.hours": Range(1),
    "log.roll.jitter.hours": Range(0),
    "log.index.size.max.bytes": Range(4),
    "log.flush.interval.messages": Range(1),
    "message.max.bytes": Range(0),
    "max.decompressed.message.bytes": Range(1, 2147483639),
    "log.index.interval.bytes": Range(0),
    "log.cleaner.delete.retention.ms": Range(0),
    "log.cleaner.min.compaction.lag.ms": Range(0),
    "log.cleaner.max.compaction.lag.ms": Range(1),
    "log.segment.delete.delay.ms": Range(0),
    "log.cleaner.min.cleanable.ratio": Range(0, 1),
    "log.cleanup.policy": AnyOf(("compact", "delete")),
    "min.insync.replicas": Range(1),
    "compression.type": TOPIC_CONFIGS["compression.type"].validator,
    "compression.gzip.level": TOPIC_CONFIGS["compression.gzip.level"].validator,
    "compression.lz4.level": Range(1, 17),
    "compression.zstd.level": Range(-131072, 22),
    "log.message.timestamp.type": AnyOf(("CreateTime", "LogAppendTime")),
    "log.message.timestamp.before.max.ms": Range(0),
    "log.message.timestamp.after.max.ms": Range(0),
    "log.local.retention.ms": Range(-2),
    "log.local.retention.bytes": Range(-2),
    "log.remote.copy.lag.ms": Range(-1),
    "log.remote.copy.lag.bytes": Range(-1),
}
"""The configs QuotaBroker validates with Kafka's validators (None: Kafka has none, only the type is checked)."""


def _validated(key: ConfigKey) -> ConfigKey:
    validator = VALIDATORS.get(key.name)
    return key if validator is None else dataclasses.replace(key, validator=validator)


BROKER_CONFIGS: dict[str, ConfigKey] = {key.name: _validated(key) for key in broker_config_set()}

# DynamicBrokerConfig.brokerConfigSynonyms: a broker config and the ones it falls back to, in order
# (log.retention.ms -> .minutes -> .hours); each name maps to its whole group.
SYNONYM_GROUPS: dict[str, tuple[str, ...]] = {
    synonym.name: tuple(s.name for s in key.synonyms) for key in TOPIC_CONFIGS.values() for synonym in key.synonyms
}
