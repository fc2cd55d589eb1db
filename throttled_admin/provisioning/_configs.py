"""Topic config values compared as Kafka compares them, and checked as Kafka checks them.

Kafka parses a value by its config's type and shows it as ``ConfigDef.convertToString`` renders the parsed
value: ``compact, delete`` is the LIST ``compact,delete``, ``TRUE`` the BOOLEAN ``true``, ``0.50`` the DOUBLE
``0.5``, `` 86400000`` the LONG ``86400000``. A plan written in any of those spellings is as planned when the
cluster shows the other. The types are Kafka 4.4's topic configs (``throttled_admin._kafka.topic_configs``);
a name that table does not know is compared as given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from throttled_admin._kafka.config_schema import ConfigError, canonical, parse
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS, unknown_config_message

__all__ = ["config_problem", "normalized", "same_value"]


def normalized(name: str, value: str) -> str:
    """``value`` as the cluster would show it; a value Kafka would refuse is left as given (it then differs,
    and Kafka's answer to the change says why)."""
    key = TOPIC_CONFIGS.get(name)
    if key is None:
        return value
    try:
        return canonical(key, value)
    except ConfigError:
        return value


def same_value(name: str, planned: str, current: str | None) -> bool:
    return current is not None and normalized(name, planned) == normalized(name, current)


def config_problem(configs: Mapping[str, str], known_names: Iterable[str]) -> str | None:
    """Kafka's message for the first config of ``configs`` the cluster would refuse: a name not among
    ``known_names`` (the names the cluster's DescribeConfigs lists for a topic), or a value its type or
    validator refuses. None when Kafka would take them all."""
    known = set(known_names)
    for name in sorted(configs):
        if name not in known:
            return unknown_config_message(name)
    for name in sorted(configs):
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            continue
        try:
            parse(key, configs[name])
        except ConfigError as exc:
            return str(exc)
    return None
