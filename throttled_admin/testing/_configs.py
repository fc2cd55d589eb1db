"""What Kafka does with topic and broker configs, driven by the tables in ``throttled_admin/_kafka/topic_configs.py``
and ``_configs_broker.py``:

- ``validate_topic_configs``: ``ControllerConfigurationValidator`` + ``LogConfig.validate`` (null values,
  unknown names, each value's type and range in definition order, min <= max compaction lag, tiered
  storage refused because the broker has it disabled), with Kafka's INVALID_CONFIG messages;
- ``alter``: ``ConfigurationControlManager.incrementalAlterConfigResource`` (SET/DELETE/APPEND/SUBTRACT);
- ``describe_topic`` / ``describe_broker`` / ``describe_cluster_defaults``: ``ConfigHelper`` (values, sources,
  synonyms, documentation);
- ``cluster_defaults``: the cluster-level dynamic configs a KRaft controller writes itself (ELR's
  ``min.insync.replicas``);
- ``effective_topic_configs``: ``KafkaConfigSchema.resolveEffectiveTopicConfigs`` (CreateTopics v5+ results).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from throttled_admin._kafka.config_schema import ConfigError, ConfigKey, ConfigType, Parsed, canonical, parse
from throttled_admin._kafka.java_order import hash_map_order
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS, lags_conflict_message, unknown_config_message
from throttled_admin.testing._configs_broker import BROKER_CONFIGS, SYNONYM_GROUPS

__all__ = [
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "OpType",
    "alter",
    "cluster_defaults",
    "describe_broker",
    "describe_cluster_defaults",
    "describe_topic",
    "effective_topic_configs",
    "validate_broker_configs",
    "validate_topic_configs",
]


class ConfigSource(IntEnum):
    """``DescribeConfigsResponse.ConfigSource`` ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class OpType(IntEnum):
    """``AlterConfigOp.OpType`` ids (IncrementalAlterConfigs)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    config_type: ConfigType
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[Synonym, ...] = field(default=())
    documentation: str | None = None


_DEFINITION_ORDER = {name: index for index, name in enumerate(TOPIC_CONFIGS)}
# The order a Kafka 4.4 broker describes a topic's configs in: its HashMap's, put in LogConfig's definition order.
_KAFKA_ORDER = hash_map_order(TOPIC_CONFIGS)

TIERED_STORAGE_DISABLED = (
    "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
)


def validate_topic_configs(configs: Mapping[str, str | None], static_broker: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError with Kafka's message when ``configs`` (the topic's complete overrides) are not a
    valid topic config; Kafka answers INVALID_CONFIG (40) with that message."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise ConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    unknown = [name for name in configs if name not in TOPIC_CONFIGS]
    if unknown:
        raise ConfigError(unknown_config_message(unknown[0]))
    # ConfigDef.parse walks the definitions in order over the broker's values overlaid with the topic's;
    # the broker's values are parsed once per broker config, so a topic costs only its own overrides.
    parsed = dict(_parsed_defaults(tuple(sorted((static_broker or {}).items()))))
    for name in sorted(configs, key=_DEFINITION_ORDER.__getitem__):
        parsed[name] = parse(TOPIC_CONFIGS[name], configs[name] or "")
    min_lag, max_lag = parsed["min.compaction.lag.ms"], parsed["max.compaction.lag.ms"]
    assert isinstance(min_lag, int)
    assert isinstance(max_lag, int)
    if min_lag > max_lag:
        raise ConfigError(lags_conflict_message(min_lag, max_lag))
    if parsed["remote.storage.enable"] is True:
        raise ConfigError(TIERED_STORAGE_DISABLED)


def validate_broker_configs(configs: Mapping[str, str]) -> None:
    """Check static broker configs (a QuotaBroker's server.properties) against the broker config table."""
    for name, value in configs.items():
        key = BROKER_CONFIGS.get(name)
        if key is None:
            raise ConfigError(f"QuotaBroker does not model the broker config {name!r}")
        parse(key, value)


def alter(current: Mapping[str, str], ops: Iterable[tuple[str, OpType, str | None]]) -> dict[str, str | None]:
    """The topic's overrides after IncrementalAlterConfigs ``ops`` (name, op, value), unvalidated: a
    value of None means the override is removed. ConfigError for APPEND/SUBTRACT on a non-list config."""
    result: dict[str, str | None] = dict(current)
    for name, op, value in ops:
        if op is OpType.SET:
            result[name] = value
        elif op is OpType.DELETE:
            result.pop(name, None)
        else:
            key = TOPIC_CONFIGS.get(name)
            if key is None or key.type is not ConfigType.LIST:
                raise ConfigError(f"Can't {op.name} to key {name} because its type is not LIST.")
            old = result.get(name)
            if old is None:
                old = key.default
            parts = [p for p in (old or "").split(",") if p]
            for item in (value or "").split(","):
                if op is OpType.APPEND and item not in parts:
                    parts.append(item)
                elif op is OpType.SUBTRACT and item in parts:
                    parts.remove(item)
            result[name] = ",".join(parts)
    return result


@functools.lru_cache(maxsize=8)
def _parsed_defaults(static_items: tuple[tuple[str, str], ...]) -> dict[str, Parsed]:
    defaults = topic_defaults(dict(static_items))
    return {name: parse(key, defaults[name] or "") for name, key in TOPIC_CONFIGS.items()}


def topic_defaults(static_broker: Mapping[str, str]) -> dict[str, str | None]:
    """Each topic config's value when the topic does not set it: its first synonym the broker sets
    (converted to the topic's unit), else LogConfig's default."""
    return {name: _resolve(key, static_broker)[0] for name, key in TOPIC_CONFIGS.items()}


def cluster_defaults(static_broker: Mapping[str, str]) -> dict[str, str]:
    """The cluster-level dynamic broker configs (DYNAMIC_DEFAULT_BROKER_CONFIG) of a new KRaft cluster: with
    Eligible Leader Replicas enabled (a 4.4 cluster's default), the controller writes ``min.insync.replicas``
    for the whole cluster, its own static value or the default 1
    (``ConfigurationControlManager.maybeGenerateElrSafetyRecords``, ``getStaticallyConfiguredMinInsyncReplicas``).
    QuotaBroker changes no dynamic broker config, so this is all of them."""
    key = BROKER_CONFIGS["min.insync.replicas"]
    return {key.name: canonical(key, static_broker.get(key.name, key.default or ""))}


def _resolve(key: ConfigKey, static_broker: Mapping[str, str]) -> tuple[str | None, ConfigSource]:
    dynamic = cluster_defaults(static_broker)
    for synonym in key.synonyms:
        if synonym.name in dynamic:
            return dynamic[synonym.name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    for synonym in key.synonyms:
        if synonym.name in static_broker:
            raw = static_broker[synonym.name].strip()
            if synonym.to_ms != 1:
                raw = str(int(raw) * synonym.to_ms)
            return raw, ConfigSource.STATIC_BROKER_CONFIG
    return key.default, ConfigSource.DEFAULT_CONFIG


def effective_topic_configs(overrides: Mapping[str, str], static_broker: Mapping[str, str]) -> list[ConfigEntry]:
    """CreateTopics v5+ result configs: every topic config by name, overrides as sent."""
    defaults = _default_entries(tuple(sorted(static_broker.items())))
    if not overrides:
        return list(defaults)
    return [
        ConfigEntry(e.name, overrides[e.name], ConfigSource.DYNAMIC_TOPIC_CONFIG, e.config_type)
        if e.name in overrides
        else e
        for e in defaults
    ]


@functools.lru_cache(maxsize=8)
def _default_entries(static_items: tuple[tuple[str, str], ...]) -> tuple[ConfigEntry, ...]:
    static = dict(static_items)
    return tuple(ConfigEntry(name, *_resolve(key, static), key.type) for name, key in sorted(TOPIC_CONFIGS.items()))


def _broker_synonyms(name: str, static_broker: Mapping[str, str]) -> list[Synonym]:
    """``ConfigHelper.configSynonyms``: the cluster-level dynamic settings, then the static ones, then the
    defaults, of the config's synonym group; then Kafka drops every synonym before ``name`` itself (so
    retention.ms shows none: log.retention.ms has no default and its fallbacks are dropped)."""
    group = SYNONYM_GROUPS.get(name, (name,))
    dynamic = cluster_defaults(static_broker)
    found = [Synonym(n, dynamic[n], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) for n in group if n in dynamic]
    found += [Synonym(n, static_broker[n], ConfigSource.STATIC_BROKER_CONFIG) for n in group if n in static_broker]
    for n in group:
        default = BROKER_CONFIGS[n].default if n in BROKER_CONFIGS else None
        if default is not None:
            found.append(Synonym(n, default, ConfigSource.DEFAULT_CONFIG))
    while found and found[0].name != name:
        found.pop(0)
    return found


def _wanted(names: Iterable[str], keys: list[str] | None) -> list[str]:
    # ConfigHelper: a null or empty key list means every config.
    return sorted(names) if not keys else sorted(n for n in names if n in keys)


def describe_topic(
    overrides: Mapping[str, str],
    static_broker: Mapping[str, str],
    keys: list[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
) -> list[ConfigEntry]:
    """``ConfigHelper.createTopicConfigEntry`` for each wanted topic config."""
    entries = []
    for name in (n for n in _KAFKA_ORDER if not keys or n in keys):  # ConfigHelper filters its HashMap in order
        key = TOPIC_CONFIGS[name]
        primary = key.synonyms[0].name if key.synonyms else None
        synonyms = _broker_synonyms(primary, static_broker) if primary else []
        if name in overrides:
            value: str | None = canonical(key, overrides[name])
            synonyms.insert(0, Synonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        else:
            value = _resolve(key, static_broker)[0]
        entries.append(_entry(name, key, value, synonyms, include_synonyms, include_documentation))
    return entries


def describe_broker(
    static_broker: Mapping[str, str],
    keys: list[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
) -> list[ConfigEntry]:
    """``ConfigHelper.createBrokerConfigEntry`` (per-broker resource) for each wanted broker config."""
    entries = []
    for name in _wanted(BROKER_CONFIGS, keys):
        key = BROKER_CONFIGS[name]
        synonyms = _broker_synonyms(name, static_broker)
        value = synonyms[0].value if synonyms and synonyms[0].name == name else static_broker.get(name, key.default)
        entries.append(_entry(name, key, value, synonyms, include_synonyms, include_documentation))
    return entries


def describe_cluster_defaults(
    static_broker: Mapping[str, str],
    keys: list[str] | None,
    *,
    include_synonyms: bool,
    include_documentation: bool,
) -> list[ConfigEntry]:
    """``ConfigHelper.createBrokerConfigEntry(perBrokerConfig = false)`` for the '' BROKER resource: the
    cluster-level dynamic configs only, with only their DYNAMIC_DEFAULT_BROKER_CONFIG synonyms."""
    dynamic = cluster_defaults(static_broker)
    entries = []
    for name in _wanted(dynamic, keys):
        synonyms = [
            s for s in _broker_synonyms(name, static_broker) if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        ]
        entries.append(
            _entry(name, BROKER_CONFIGS[name], dynamic[name], synonyms, include_synonyms, include_documentation)
        )
    return entries


def _entry(
    name: str,
    key: ConfigKey,
    value: str | None,
    synonyms: list[Synonym],
    include_synonyms: bool,
    include_documentation: bool,
) -> ConfigEntry:
    """One described config: its source is that of the synonym in force (the first), else the default."""
    if key.sensitive:  # KafkaConfig.maybeSensitive: a PASSWORD's value is never sent, nor its synonyms'
        value = None
        synonyms = [Synonym(s.name, None, s.source) for s in synonyms]
    return ConfigEntry(
        name,
        value,
        synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        key.type,
        read_only=key.read_only,
        sensitive=key.sensitive,
        synonyms=tuple(synonyms) if include_synonyms else (),
        documentation=key.documentation if include_documentation else None,
    )
