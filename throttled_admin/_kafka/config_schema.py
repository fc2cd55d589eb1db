"""Kafka's ``ConfigDef`` as data: a config's type, default, validator and documentation, and the one
generic routine that parses and checks a value the way ``ConfigDef.parseType`` and its validators do,
with their exact messages (``ConfigException``: "Invalid value V for configuration N: ...").

The topic config table lives in ``topic_configs.py``; the test broker's broker configs in
``throttled_admin/testing/_configs_broker.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from enum import IntEnum

__all__ = [
    "AnyOf",
    "ConfigError",
    "ConfigKey",
    "ConfigType",
    "LevelRange",
    "Parsed",
    "Range",
    "ReplicaList",
    "Synonym",
    "Validator",
    "canonical",
    "parse",
]


class ConfigType(IntEnum):
    """``DescribeConfigsResponse.ConfigType``: the ids sent as ``config_type`` (DescribeConfigs v3+)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


@dataclass(frozen=True)
class Range:
    """``ConfigDef.Range``: ``atLeast(min)`` or ``between(min, max)``."""

    min: int | float | None = None
    max: int | float | None = None


@dataclass(frozen=True)
class AnyOf:
    """``ConfigDef.ValidString.in(...)`` for a STRING, ``ConfigDef.ValidList.in(...)`` for a LIST."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class LevelRange:
    """``CompressionType.GZIP.levelValidator()``: a range, or exactly the 'default level' value."""

    min: int
    max: int
    or_equal: int


@dataclass(frozen=True)
class ReplicaList:
    """``ThrottledReplicaListValidator``: '*' or 'partition:broker' entries."""


Validator = Range | AnyOf | LevelRange | ReplicaList


@dataclass(frozen=True)
class Synonym:
    """A broker config a topic config falls back to (``ServerTopicConfigSynonyms``); ``to_ms`` converts
    its unit (``ConfigSynonym.HOURS_TO_MILLISECONDS`` and friends)."""

    name: str
    to_ms: int = 1


@dataclass(frozen=True)
class ConfigKey:
    """One ``ConfigDef.define(...)``; ``default`` is rendered as ``ConfigDef.convertToString`` would
    (None: no default)."""

    name: str
    type: ConfigType
    default: str | None
    documentation: str
    validator: Validator | None = None
    synonyms: tuple[Synonym, ...] = field(default=())
    read_only: bool = False
    sensitive: bool = False


class ConfigError(ValueError):
    """``org.apache.kafka.common.config.ConfigException``: reported as INVALID_CONFIG with this message."""


Parsed = bool | int | float | str | list[str] | None

_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")
_BOUNDS = {ConfigType.INT: 2**31, ConfigType.SHORT: 2**15, ConfigType.LONG: 2**63}


def _invalid(key: ConfigKey, shown: object, message: str) -> ConfigError:
    return ConfigError(f"Invalid value {shown} for configuration {key.name}: {message}")


def _java(value: Parsed) -> str:
    """How Java's ``toString`` shows a parsed value inside an error message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    if isinstance(value, float):
        return _java_double(value)
    return str(value)


def _java_double(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)  # Python's shortest repr is Java's in this range, but for the trailing ".0"
        return text if "." in text else text + ".0"
    # Double.toString switches to computerized scientific notation outside [1e-3, 1e7): 1.0E7, 1.25E-4
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    power = exponent + len(text) - 1
    mantissa = text[0] + "." + (text[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{power}"


def _parse_type(key: ConfigKey, raw: str) -> Parsed:
    trimmed = raw.strip()
    if key.type is ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise _invalid(key, raw, "Expected value to be either true or false")
    if key.type in _BOUNDS:
        bound = _BOUNDS[key.type]
        if not _JAVA_INT.fullmatch(trimmed) or not -bound <= int(trimmed) < bound:
            raise _invalid(key, raw, f"Not a number of type {key.type.name}")
        return int(trimmed)
    if key.type is ConfigType.DOUBLE:
        if not _JAVA_DOUBLE.fullmatch(trimmed):
            raise _invalid(key, raw, "Not a number of type DOUBLE")
        return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
    if key.type is ConfigType.LIST:
        return [] if not trimmed else _LIST_SPLIT.split(trimmed)
    return trimmed


def _bound(number: int | float) -> str:
    return str(number) if isinstance(number, int) else _java_double(number)


def _ensure_valid(key: ConfigKey, value: Parsed) -> None:
    check = key.validator
    if check is None or value is None:
        return
    if isinstance(check, Range):
        assert isinstance(value, (int, float))
        if check.min is not None and value < check.min:
            raise _invalid(key, _java(value), f"Value must be at least {_bound(check.min)}")
        if check.max is not None and value > check.max:
            raise _invalid(key, _java(value), f"Value must be no more than {_bound(check.max)}")
    elif isinstance(check, LevelRange):
        assert isinstance(value, int)
        if value > check.max or (value < check.min and value != check.or_equal):
            message = f"Value must be between {check.min} and {check.max} or equal to {check.or_equal}"
            raise _invalid(key, _java(value), message)
    elif isinstance(check, AnyOf):
        for item in value if isinstance(value, list) else [str(value)]:
            if isinstance(value, list) and not item:  # Kafka 4.4's ValidList refuses an empty element
                raise ConfigError(f"Configuration '{key.name}' values must not be empty.")
            if item not in check.values:
                raise _invalid(key, item, "String must be one of: " + ", ".join(check.values))
    elif isinstance(check, ReplicaList):
        assert isinstance(value, list)
        entries = [v.strip() for v in value]
        if not (all(_REPLICA.fullmatch(e) for e in entries) or "".join(entries) == "*"):
            raise _invalid(
                key,
                _java(value),
                f"{key.name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
            )


def parse(key: ConfigKey, raw: str) -> Parsed:
    """``ConfigDef.parseValue``: the typed value of ``raw``, or ConfigError with Kafka's message."""
    value = _parse_type(key, raw)
    _ensure_valid(key, value)
    return value


def canonical(key: ConfigKey, raw: str) -> str:
    """The value as DescribeConfigs shows it: parsed, then ``ConfigDef.convertToString`` (trimmed,
    booleans lower-case, lists joined with ',', doubles as Java prints them)."""
    value = parse(key, raw)
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    return "" if value is None else str(value)
