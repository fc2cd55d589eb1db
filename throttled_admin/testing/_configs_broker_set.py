"""Apache Kafka's whole broker config set (``KafkaConfig.configDef``) as data: ``broker_configs.json``, shipped
with the package and read once. Each row is a config a broker describes for a BROKER resource: its name, its
type, its default (as ``ConfigDef.convertToString`` renders it; null: no default), whether it is read-only
(per-broker and cluster-wide configs can be changed dynamically), whether it is sensitive, and its
documentation. The file says which Kafka version it is and where its rows came from.

The configs QuotaBroker acts on or validates get their validators in ``_configs_broker.py``.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from throttled_admin._kafka.config_schema import ConfigKey, ConfigType

__all__ = ["DATA_FILE", "broker_config_set", "kafka_version"]

DATA_FILE = "broker_configs.json"


@functools.cache
def _data() -> dict[str, Any]:
    text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def kafka_version() -> str:
    """The Kafka version whose broker config set ``broker_configs.json`` holds."""
    return str(_data()["kafka_version"])


@functools.cache
def broker_config_set() -> tuple[ConfigKey, ...]:
    """Every broker config of ``broker_configs.json``, in the file's order (by name)."""
    return tuple(
        ConfigKey(
            row["name"],
            ConfigType[row["type"]],
            row["default"],
            row["documentation"],
            read_only=row["read_only"],
            sensitive=row["sensitive"],
        )
        for row in _data()["configs"]
    )
