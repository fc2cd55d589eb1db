"""Plan and profiles files: JSON, YAML and CSV in, ``PlanRow`` and ``Profile`` out. Every problem is a
``PlanError`` naming the file, the row and the field; a row is never skipped."""

from __future__ import annotations

import csv
import difflib
import json
import math
import re
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import KafkaError, KafkaException, Producer

from throttled_admin.provisioning._plan import PlanError, PlanRow, row_problem
from throttled_admin.provisioning._profile import Profile

__all__ = ["parse_configs_text", "read_plan", "read_profiles"]

FIELDS = ("cluster", "action", "topic", "partitions", "replication_factor", "configs")
REQUIRED = ("cluster", "action", "topic")
PROFILE_FIELDS = ("mutation_rate", "request_timeout_s")
#: Candidates for "did you mean" besides PROFILE_FIELDS: the librdkafka settings a profile usually holds.
_COMMON_SETTINGS = (
    "bootstrap.servers",
    "client.id",
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "sasl.oauthbearer.method",
    "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.scope",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "enable.ssl.certificate.verification",
    "request.timeout.ms",
    "socket.timeout.ms",
    "socket.connection.setup.timeout.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "retry.backoff.ms",
    "metadata.max.age.ms",
    "broker.address.family",
    "client.dns.lookup",
    "log_level",
    "debug",
)
_UNKNOWN_SETTING = re.compile(r'No such configuration property: "([^"]*)"')
_BAD_VALUE = re.compile(r'configuration property "([^"]*)"')


def _load_document(path: Path, kinds: tuple[str, ...]) -> Any:
    suffix = path.suffix.lower()
    if suffix not in kinds:
        raise PlanError(f"{path}: unsupported file type {suffix or '(none)'!r}; expected one of {', '.join(kinds)}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise PlanError(f"{path}: not valid {suffix[1:].upper()}: {exc}") from None


def _config_value(value: Any) -> str | None:
    """A YAML/JSON scalar as Kafka spells it: YAML reads ``retention.ms: 1000`` as an int and
    ``preallocate: false`` as a bool; Kafka wants "1000" and "false"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return None


def _count(value: Any, *, from_text: bool) -> int | str | None:
    """An int, None for empty, or the problem as a string."""
    if value is None or (from_text and value.strip() == ""):
        return None
    if from_text:
        text = value.strip()
        return int(text) if text.lstrip("-").isdigit() else f"must be an integer >= 1, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer >= 1, got {value!r}"
    return value


def parse_configs_text(text: str) -> dict[str, str] | None:
    """``k=v;k=v`` (the CSV spelling of a configs map) as a dict; empty text is None. ValueError says
    what is wrong."""
    if not text.strip():
        return None
    configs: dict[str, str] = {}
    for item in text.split(";"):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected k=v;k=v, got {item.strip()!r}")
        if key.strip() in configs:
            raise ValueError(f"{key.strip()} is set twice")
        configs[key.strip()] = value.strip()
    return configs


def _row(raw: dict[str, Any], *, source: str, from_text: bool, file: Path, label: str) -> PlanRow:
    def fail(field: str, message: str) -> PlanError:
        return PlanError(f"{file}: {label}: field {field!r}: {message}")

    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise fail(unknown[0], f"unknown field; a row has {', '.join(FIELDS)}")
    for name in REQUIRED:
        value = raw.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise fail(name, "missing")
        if not isinstance(value, str):
            raise fail(name, f"must be a string, got {value!r}")
    counts: dict[str, int | None] = {}
    for name in ("partitions", "replication_factor"):
        parsed = _count(raw.get(name), from_text=from_text)
        if isinstance(parsed, str):
            raise fail(name, parsed)
        counts[name] = parsed
    raw_configs = raw.get("configs")
    configs: dict[str, str] | None
    if from_text:
        try:
            configs = parse_configs_text(raw_configs or "")
        except ValueError as exc:
            raise fail("configs", str(exc)) from None
    elif raw_configs is None:
        configs = None
    elif not isinstance(raw_configs, dict):
        raise fail("configs", f"must be a map of config name to value, got {raw_configs!r}")
    else:
        configs = {}
        for key, value in raw_configs.items():
            text = _config_value(value)
            if not isinstance(key, str) or text is None:
                raise fail("configs", f"{key!r}: values must be strings, numbers or booleans, got {value!r}")
            configs[key] = text
    row = PlanRow(
        cluster=raw["cluster"].strip(),
        action=raw["action"].strip(),
        topic=raw["topic"].strip() if from_text else raw["topic"],
        partitions=counts["partitions"],
        replication_factor=counts["replication_factor"],
        configs=configs,
        source=source,
    )
    problem = row_problem(row)
    if problem is not None:
        raise fail(*problem)
    return row


def read_plan(path: str | Path) -> list[PlanRow]:
    """Read a plan: a JSON or YAML list of row objects, or a CSV with a header of the row fields and
    configs as ``k=v;k=v``. Raises ``PlanError`` for the first problem, naming file, row and field."""
    file = Path(path)
    if file.suffix.lower() == ".csv":
        rows = _read_csv(file)
    else:
        document = _load_document(file, (".json", ".yaml", ".yml", ".csv"))
        if not isinstance(document, list):
            raise PlanError(f"{file}: a plan is a list of rows, got {type(document).__name__}")
        rows = []
        for index, raw in enumerate(document, start=1):
            label = f"row {index}"
            if not isinstance(raw, dict):
                raise PlanError(f"{file}: {label}: expected an object with fields {', '.join(FIELDS)}, got {raw!r}")
            rows.append(_row(raw, source=f"{file.name}#{index}", from_text=False, file=file, label=label))
    seen: dict[tuple[str, str], PlanRow] = {}
    for row in rows:
        key = (row.cluster, row.topic)
        if key in seen:
            raise PlanError(
                f"{file}: {row.source}: field 'topic': {row.topic!r} on cluster {row.cluster!r} "
                f"is already planned by {seen[key].source}"
            )
        seen[key] = row
    return rows


def _read_csv(file: Path) -> list[PlanRow]:
    try:
        handle = file.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise PlanError(f"{file}: cannot read: {exc.strerror or exc}") from None
    rows: list[PlanRow] = []
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [name for name in REQUIRED if name not in header]
        if missing:
            raise PlanError(f"{file}: line 1: header lacks the column {missing[0]!r}; expected {', '.join(FIELDS)}")
        try:
            for raw in reader:
                label = f"line {reader.line_num}"
                if None in raw:  # more cells than header columns
                    raise PlanError(f"{file}: {label}: more cells than the header's {len(header)} columns")
                cells = {k: v for k, v in raw.items() if v is not None}
                if len(cells) < len(header):
                    raise PlanError(f"{file}: {label}: fewer cells than the header's {len(header)} columns")
                rows.append(
                    _row(cells, source=f"{file.name}:{reader.line_num}", from_text=True, file=file, label=label)
                )
        except csv.Error as exc:
            raise PlanError(f"{file}: line {reader.line_num}: not valid CSV: {exc}") from None
    return rows


def read_profiles(path: str | Path) -> dict[str, Profile]:
    """Read a profiles file: JSON or YAML mapping each cluster name to its librdkafka conf, plus optional
    ``mutation_rate`` (mutations/s) and ``request_timeout_s``. Secrets never appear in its errors."""
    file = Path(path)
    document = _load_document(file, (".json", ".yaml", ".yml"))
    if not isinstance(document, dict) or not document:
        raise PlanError(f"{file}: profiles are a non-empty map of cluster name to librdkafka conf")
    profiles: dict[str, Profile] = {}
    for name, raw in document.items():
        label = f"profile {name!r}"
        if not isinstance(name, str) or not name:
            raise PlanError(f"{file}: profile names must be non-empty strings, got {name!r}")
        if not isinstance(raw, dict):
            raise PlanError(f"{file}: {label}: expected a map of librdkafka settings")
        conf: dict[str, str] = {}
        mutation_rate: float | None = None
        request_timeout_s = 30.0
        for key, value in raw.items():
            if key == "mutation_rate":
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
                ):
                    raise PlanError(f"{file}: {label}: field 'mutation_rate': must be a number > 0, got {value!r}")
                mutation_rate = None if value is None else float(value)
            elif key == "request_timeout_s":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                    raise PlanError(f"{file}: {label}: field 'request_timeout_s': must be a number > 0, got {value!r}")
                request_timeout_s = float(value)
            else:
                text = _config_value(value)
                if not isinstance(key, str) or text is None:
                    # The value is not echoed: it may be a secret.
                    raise PlanError(f"{file}: {label}: field {key!r}: must be a string, number or boolean")
                conf[key] = text
        _check_settings(conf, where=f"{file}: {label}")
        if not conf.get("bootstrap.servers"):
            raise PlanError(f"{file}: {label}: field 'bootstrap.servers': missing")
        profiles[name] = Profile(name, conf, mutation_rate, request_timeout_s)
    return profiles


def _check_settings(conf: dict[str, str], *, where: str) -> None:
    """librdkafka's own check of a profile's settings (an unconnected client is built and dropped), so a
    misspelt key is a file error naming it, with the closest known key, and not a failure of every row."""
    check = {key: value for key, value in conf.items() if key != "bootstrap.servers"}
    check["log_level"] = "0"
    try:
        Producer(check)
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        message = error.str() if error is not None else str(exc)
        unknown = _UNKNOWN_SETTING.search(message)
        if unknown is not None:
            key = unknown.group(1)
            close = difflib.get_close_matches(key, [*PROFILE_FIELDS, *_COMMON_SETTINGS], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise PlanError(
                f"{where}: field {key!r}: unknown key (a profile holds librdkafka settings, "
                f"{' and '.join(PROFILE_FIELDS)}){hint}"
            ) from None
        bad = _BAD_VALUE.search(message)
        if bad is not None:  # the value is not echoed: it may be a secret
            raise PlanError(f"{where}: field {bad.group(1)!r}: librdkafka refuses its value") from None
        raise PlanError(f"{where}: librdkafka refuses the settings") from None
