"""Topic config values compared as Kafka compares them (checked as Kafka checks them: ``_kafka.topic_configs``).

Kafka parses a value by its config's type and shows it as ``ConfigDef.convertToString`` renders the parsed
value: ``compact, delete`` is the LIST ``compact,delete``, ``TRUE`` the BOOLEAN ``true``, ``0.50`` the DOUBLE
``0.5``, `` 86400000`` the LONG ``86400000``. A plan written in any of those spellings is as planned when the
cluster shows the other. The types are Kafka 4.4's topic configs (``throttled_admin._kafka.topic_configs``);
a name that table does not know is compared as given.
"""

from __future__ import annotations

from throttled_admin._kafka.config_schema import ConfigError, canonical
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS

__all__ = ["normalized", "same_value"]


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
