"""Plan and profiles files: JSON, YAML and CSV in, ``PlanRow`` and ``Profile`` out. Every problem is a
``PlanError`` naming the file, the row and the field, in one format: ``plan.yaml: row 3: field 'topic': ...``
(a CSV row is named by its line: ``plan.csv: line 4: ...``); a misspelt field gets the closest one. A row is never
skipped."""

from __future__ import annotations

import codecs
import csv
import difflib
import io
import json
import re
from pathlib import Path
from typing import Any

import yaml

from throttled_admin.provisioning._plan import PlanError, PlanRow, row_problem
from throttled_admin.provisioning._profile import Profile, conf_value, profile_from_conf

__all__ = ["parse_configs_text", "read_plan", "read_profiles"]

FIELDS = ("cluster", "action", "topic", "partitions", "replication_factor", "configs")
REQUIRED = ("cluster", "action", "topic")


def _load_document(path: Path, kinds: tuple[str, ...]) -> Any:
    suffix = path.suffix.lower()
    if suffix not in kinds:
        raise PlanError(f"{path}: unsupported file type {suffix or '(none)'!r}; expected one of {', '.join(kinds)}")
    text = _read_text(path)
    try:
        return json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:  # (its message quotes nothing of the file: where, and what was expected)
        raise PlanError(f"{path}: not valid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        raise PlanError(f"{path}: not valid YAML{_yaml_problem(exc)}") from None
    except (ValueError, TypeError, AttributeError):  # a tag whose value does not parse (``!!int x``): PyYAML's own
        # message quotes the value, and names no place
        raise PlanError(
            f"{path}: not valid YAML: a tagged value (!!int, !!float, !!timestamp, ...) does not parse as its tag"
        ) from None


def _read_text(path: Path) -> str:
    """The file's text, read whole: UTF-8, with or without the byte order mark a spreadsheet's "CSV UTF-8" writes."""
    try:
        data = path.read_bytes()
    except OSError as exc:  # (EIO on a failing disk)
        raise PlanError(f"{path}: cannot read: {exc.strerror or exc}") from None
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:  # where, never what: the byte may be a profile's password's
        at = start + exc.start
        line_start = data.rfind(b"\n", start, at) + 1 or start
        column = len(data[line_start:at].decode("utf-8")) + 1  # in characters, as an editor counts them
        line = data.count(b"\n", start, at) + 1
        raise PlanError(f"{path}: not UTF-8 text at line {line}, column {column} (save it as UTF-8)") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where and what, without the file's text: PyYAML's message quotes the line (a profile's ``sasl.password``) and
    some problems quote a token (an alias named by a value that starts with ``*``), so neither is shown."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow anywhere (a control character)
        return (
            f" at character {exc.position + 1}: a character YAML does not allow (#x{exc.character:04x})"
            if isinstance(exc.character, int)
            else f" at character {exc.position + 1}: the file's bytes are not text YAML reads"
        )
    problem = _unquoted(str(getattr(exc, "problem", "") or "")) or "cannot parse"
    context = _unquoted(str(getattr(exc, "context", "") or ""))  # PyYAML's own words: "while parsing a flow mapping"
    if context and (mark := getattr(exc, "context_mark", None)) is not None:
        problem += f" ({context} from line {mark.line + 1}, column {mark.column + 1})"
    mark = getattr(exc, "problem_mark", None)
    where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
    return f"{where}: {problem} ({_FLOW_HINT if 'flow' in context else _YAML_HINT})"


def _unquoted(text: str) -> str:
    """PyYAML's words with what they quote of the file hidden ("..."); its own tokens' names kept: '<scalar>', and
    the one-character ones ('}', ',') where it says what it expected (elsewhere one may be a password's: "found
    unknown escape character '-'")."""
    token = _TOKEN if text.startswith(("expected", "did not find expected")) else _TOKEN_NAME
    return _QUOTED.sub(lambda quoted: quoted[0] if token.fullmatch(quoted[0]) else "...", text)


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_TOKEN_NAME = re.compile(r"'<[a-z ]+>'")  # a token's kind, as PyYAML names it: never the file's text
_TOKEN = re.compile(r"'(?:<[a-z ]+>|[,{}\[\]:?-])'")
_YAML_HINT = "quote a value that starts with @, `, *, &, !, |, >, %, {, [ or a quote, or that holds ': '"
_FLOW_HINT = "close each { and [, and quote a value inside them that holds a comma, ': ', a bracket or a brace"


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


def _unknown_field(name: str) -> str:
    close = difflib.get_close_matches(name, FIELDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown field (a row has {', '.join(FIELDS)}){hint}"


def _row(raw: dict[str, Any], *, source: str, from_text: bool) -> PlanRow:
    """``source`` says where the row is (``plan.yaml: row 3``), in every problem found and in the row itself."""

    def fail(field: str, message: str) -> PlanError:
        return PlanError(f"{source}: field {field!r}: {message}")

    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise fail(unknown[0], _unknown_field(unknown[0]))
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
            text = conf_value(value)
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
            source = f"{file}: row {index}"
            if not isinstance(raw, dict):
                raise PlanError(f"{source}: expected an object with fields {', '.join(FIELDS)}, got {raw!r}")
            rows.append(_row(raw, source=source, from_text=False))
    seen: dict[tuple[str, str], PlanRow] = {}
    for row in rows:
        key = (row.cluster, row.topic)
        if key in seen:
            first = seen[key].source.removeprefix(f"{file}: ")
            raise PlanError(
                f"{row.source}: field 'topic': {row.topic!r} on cluster {row.cluster!r} is already planned by {first}"
            )
        seen[key] = row
    return rows


def _read_csv(file: Path) -> list[PlanRow]:
    rows: list[PlanRow] = []
    with io.StringIO(_read_text(file), newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [name for name in REQUIRED if name not in header]
        if missing:
            raise PlanError(f"{file}: line 1: header lacks the column {missing[0]!r}; expected {', '.join(FIELDS)}")
        unknown = [name for name in header if name not in FIELDS]
        if unknown:
            raise PlanError(f"{file}: line 1: field {unknown[0]!r}: {_unknown_field(unknown[0])}")
        try:
            for raw in reader:
                source = f"{file}: line {reader.line_num}"
                if None in raw:  # more cells than header columns
                    raise PlanError(f"{source}: more cells than the header's {len(header)} columns")
                cells = {k: v for k, v in raw.items() if v is not None}
                if len(cells) < len(header):
                    raise PlanError(f"{source}: fewer cells than the header's {len(header)} columns")
                rows.append(_row(cells, source=source, from_text=True))
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
        if not isinstance(name, str) or not name:
            raise PlanError(f"{file}: profile names must be non-empty strings, got {name!r}")
        if not isinstance(raw, dict):
            raise PlanError(f"{file}: profile {name!r}: expected a map of librdkafka settings")
        profiles[name] = profile_from_conf(name, raw, where=f"{file}: ")
    return profiles
