"""Plan and profiles readers: the three file shapes agree, and every malformed file is rejected with the
file, the row and the field named."""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path

import pytest

from throttled_admin.provisioning import PlanError, PlanRow, Profile, read_plan, read_profiles
from throttled_admin.testing import QuotaBroker

ROWS: list[dict[str, object]] = [
    {
        "cluster": "east",
        "action": "ensure",
        "topic": "orders",
        "partitions": 6,
        "replication_factor": 1,
        "configs": {"retention.ms": "86400000", "cleanup.policy": "compact"},
    },
    {"cluster": "east", "action": "grow", "topic": "payments", "partitions": 12},
    {"cluster": "west", "action": "delete", "topic": "old.events"},
]
CSV = (
    "cluster,action,topic,partitions,replication_factor,configs\n"
    "east,ensure,orders,6,1,retention.ms=86400000;cleanup.policy=compact\n"
    "east,grow,payments,12,,\n"
    "west,delete,old.events,,,\n"
)
YAML = """
- cluster: east
  action: ensure
  topic: orders
  partitions: 6
  replication_factor: 1
  configs: {retention.ms: 86400000, cleanup.policy: compact}
- {cluster: east, action: grow, topic: payments, partitions: 12}
- {cluster: west, action: delete, topic: old.events}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def essentials(rows: list[PlanRow]) -> list[tuple[object, ...]]:
    return [(r.cluster, r.action, r.topic, r.partitions, r.replication_factor, r.configs) for r in rows]


def test_json_yaml_and_csv_plans_read_the_same(tmp_path: Path) -> None:
    from_json = read_plan(write(tmp_path, "plan.json", json.dumps(ROWS)))
    from_yaml = read_plan(write(tmp_path, "plan.yaml", YAML))
    from_csv = read_plan(write(tmp_path, "plan.csv", CSV))
    assert essentials(from_json) == essentials(from_yaml) == essentials(from_csv)
    assert from_json[0] == PlanRow(
        "east",
        "ensure",
        "orders",
        6,
        1,
        {"retention.ms": "86400000", "cleanup.policy": "compact"},
        f"{tmp_path / 'plan.json'}: row 1",
    )
    assert [r.source for r in from_csv] == [f"{tmp_path / 'plan.csv'}: line {n}" for n in (2, 3, 4)]
    assert [r.source for r in from_yaml] == [f"{tmp_path / 'plan.yaml'}: row {n}" for n in (1, 2, 3)]


def test_yaml_scalars_become_kafka_config_strings(tmp_path: Path) -> None:
    rows = read_plan(
        write(
            tmp_path,
            "p.yml",
            "- {cluster: a, action: create, topic: t, configs: {preallocate: false, "
            "min.cleanable.dirty.ratio: 0.25, retention.bytes: -1}}\n",
        )
    )
    assert rows[0].configs == {"preallocate": "false", "min.cleanable.dirty.ratio": "0.25", "retention.bytes": "-1"}


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "p.json",
            json.dumps([ROWS[0], {"cluster": "east", "action": "ensure"}]),
            "p.json: row 2: field 'topic': missing",
        ),
        ("p.json", json.dumps([{**ROWS[1], "partitions": "twelve"}]), "row 1: field 'partitions': must be an integer"),
        ("p.json", json.dumps([{**ROWS[1], "partitions": True}]), "row 1: field 'partitions': must be an integer"),
        ("p.json", json.dumps([{**ROWS[1], "partitions": 0}]), "row 1: field 'partitions': must be an integer >= 1"),
        ("p.json", json.dumps([{**ROWS[0], "replication_factor": -1}]), "row 1: field 'replication_factor'"),
        (
            "p.json",
            json.dumps([{**ROWS[0], "partiton": 3}]),
            "p.json: row 1: field 'partiton': unknown field (a row has cluster, action, topic, partitions, "
            "replication_factor, configs); did you mean 'partitions'?",
        ),
        ("p.json", json.dumps([{**ROWS[0], "action": "upsert"}]), "row 1: field 'action': must be one of ensure"),
        (
            "p.json",
            json.dumps([{**ROWS[0], "topic": "bad name"}]),
            "row 1: field 'topic': Topic name is invalid: 'bad name'",
        ),
        ("p.json", json.dumps([{**ROWS[0], "configs": ["a=b"]}]), "row 1: field 'configs': must be a map"),
        ("p.json", json.dumps([{**ROWS[0], "configs": {"a": None}}]), "row 1: field 'configs': 'a'"),
        ("p.json", json.dumps([{**ROWS[2], "configs": {"a": "b"}}]), "row 1: field 'configs': only ensure and create"),
        ("p.json", json.dumps([{"cluster": "e", "action": "grow", "topic": "t"}]), "row 1: field 'partitions': a grow"),
        (
            "p.json",
            json.dumps([ROWS[0], ROWS[1], ROWS[0]]),
            "p.json: row 3: field 'topic': 'orders' on cluster 'east' is already planned by row 1",
        ),
        ("p.json", json.dumps({"rows": ROWS}), "p.json: a plan is a list of rows, got dict"),
        ("p.json", json.dumps([ROWS[0], "orders"]), "p.json: row 2: expected an object"),
        ("p.json", "[{", "p.json: not valid JSON"),
        ("p.yaml", "- {cluster: east, action: ensure, topic: [a]}\n", "p.yaml: row 1: field 'topic': must be a string"),
        ("p.yaml", "- cluster: [\n", "p.yaml: not valid YAML"),
        ("p.yaml", "", "p.yaml: a plan is a list of rows, got NoneType"),
        ("p.csv", CSV + "east,ensure,x,1,1,retention.ms\n", "p.csv: line 5: field 'configs': expected k=v;k=v"),
        ("p.csv", CSV + "east,ensure,x,six,,\n", "p.csv: line 5: field 'partitions': must be an integer"),
        ("p.csv", CSV + "east,ensure,x,-2,,\n", "p.csv: line 5: field 'partitions': must be an integer >= 1"),
        ("p.csv", CSV + "east,ensure,x,1\n", "p.csv: line 5: fewer cells than the header's 6 columns"),
        ("p.csv", CSV + "east,ensure,x,1,1,,extra\n", "p.csv: line 5: more cells than the header's 6 columns"),
        ("p.csv", CSV + ",ensure,x,1,1,\n", "p.csv: line 5: field 'cluster': missing"),
        ("p.csv", "cluster,action,partitions\n", "p.csv: line 1: header lacks the column 'topic'"),
        ("p.csv", "cluster,action,topic,colour\ne,ensure,t,red\n", "p.csv: line 1: field 'colour': unknown field"),
        (
            "p.csv",
            "cluster,action,topic,replicaton_factor\ne,ensure,t,3\n",
            "p.csv: line 1: field 'replicaton_factor': unknown field (a row has cluster, action, topic, partitions, "
            "replication_factor, configs); did you mean 'replication_factor'?",
        ),
        (
            "p.csv",
            CSV + "east,ensure,orders,1,1,\n",
            "p.csv: line 5: field 'topic': 'orders' on cluster 'east' is already planned by line 2",
        ),
        ("p.toml", "", "unsupported file type '.toml'"),
    ],
)
def test_malformed_plans_name_file_row_and_field(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(PlanError) as info:
        read_plan(path)
    assert expected in str(info.value)
    assert str(path.parent) in str(info.value) or name.endswith(".toml")


def test_missing_plan_file_is_a_plan_error(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="cannot read"):
        read_plan(tmp_path / "absent.yaml")


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("plan.csv", b"cluster,action,topic\ndev,create,ok\ndev,create,caf\xe9\n", "line 3, column 15"),
        ("plan.json", b'[{"cluster": "dev", "action": "create", "topic": "caf\xe9"}]', "line 1, column 54"),
        ("plan.yaml", b"- {cluster: dev, action: create, topic: caf\xe9}\n", "line 1, column 44"),
    ],
)
def test_a_plan_that_is_not_utf8_is_a_plan_error(tmp_path: Path, name: str, text: bytes, where: str) -> None:
    """A plan saved in Latin-1 (``caf\\xe9``) ended ``apply`` in a UnicodeDecodeError traceback."""
    path = tmp_path / name
    path.write_bytes(text)
    with pytest.raises(PlanError) as info:
        read_plan(path)
    assert str(info.value) == f"{path}: not UTF-8 text at {where} (save it as UTF-8)"


def test_a_byte_not_utf8_is_placed_in_characters_after_a_byte_order_mark(tmp_path: Path) -> None:
    """Review 114: after a byte order mark the place was the decoder's, 3 bytes off (``byte 0x2d at ... column 17``),
    and a column counted bytes, not the characters an editor shows."""
    path = tmp_path / "plan.csv"
    path.write_bytes(codecs.BOM_UTF8 + "cluster,action,topic\ndev,create,café-é".encode() + b"\xe9\n")
    with pytest.raises(PlanError) as info:
        read_plan(path)
    assert str(info.value) == f"{path}: not UTF-8 text at line 2, column 18 (save it as UTF-8)"
    path.write_bytes(codecs.BOM_UTF8 + b"\xe9cluster,action,topic\n")
    with pytest.raises(PlanError, match="not UTF-8 text at line 1, column 1 "):
        read_plan(path)


def test_a_csv_plan_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    """A spreadsheet's "CSV UTF-8" starts with a byte order mark: its header's first column read as "\\ufeffcluster",
    and the plan was refused for want of the column 'cluster'."""
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(CSV, encoding="utf-8")
    marked.write_text(CSV, encoding="utf-8-sig")
    assert (
        [r.topic for r in read_plan(marked)]
        == [r.topic for r in read_plan(plain)]
        == ["orders", "payments", "old.events"]
    )


def test_a_plan_that_cannot_be_read_says_so(tmp_path: Path) -> None:
    """Helper 111: an I/O error while a CSV plan was read (its rows read after the open) was reported by the command
    line as "cannot write the output"; here /proc/self/mem, whose first page is unmapped: EIO on read."""
    mem = Path("/proc/self/mem")
    if not mem.exists():
        pytest.skip("needs Linux's /proc")
    for name in ("plan.csv", "plan.json"):
        (tmp_path / name).symlink_to(mem)
        with pytest.raises(PlanError, match=re.escape(f"{tmp_path / name}: cannot read: Input/output error")):
            read_plan(tmp_path / name)


def test_profiles_that_are_not_utf8_are_a_file_error_without_their_text(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_bytes(b"dev:\n  bootstrap.servers: 127.0.0.1:9092\n  sasl.password: s\xe9cret-value\n")
    with pytest.raises(PlanError) as info:
        read_profiles(path)
    assert str(info.value) == f"{path}: not UTF-8 text at line 3, column 19 (save it as UTF-8)"  # not the byte


PROFILES = {
    "east": {"bootstrap.servers": "127.0.0.1:9092", "mutation_rate": 5, "request_timeout_s": 10},
    "tenant-a": {
        "bootstrap.servers": "127.0.0.1:9093",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "hunter2-secret-value",
        "socket.timeout.ms": 10000,
    },
}


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_profiles_read_and_never_show_secrets(tmp_path: Path, suffix: str) -> None:
    text = json.dumps(PROFILES)  # JSON is YAML too
    profiles = read_profiles(write(tmp_path, f"profiles{suffix}", text))
    assert profiles["east"] == Profile("east", {"bootstrap.servers": "127.0.0.1:9092"}, 5.0, 10.0)
    tenant = profiles["tenant-a"]
    assert tenant.mutation_rate is None
    assert tenant.conf["socket.timeout.ms"] == "10000"
    assert tenant.conf["sasl.password"] == "hunter2-secret-value"
    assert tenant.group_key == ("127.0.0.1:9093", "alice")
    for shown in (repr(tenant), str(tenant), repr(profiles), f"{tenant}"):
        assert "hunter2" not in shown
    assert "sasl.password" in repr(tenant)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"east": {"mutation_rate": 5}}, "profile 'east': field 'bootstrap.servers': missing"),
        ({"east": {"bootstrap.servers": "h:1", "mutation_rate": -1}}, "field 'mutation_rate': must be a number > 0"),
        ({"east": {"bootstrap.servers": "h:1", "mutation_rate": "fast"}}, "field 'mutation_rate'"),
        ({"east": {"bootstrap.servers": "h:1", "request_timeout_s": 0}}, "field 'request_timeout_s'"),
        ({"east": "h:1"}, "profile 'east': expected a map"),
        ([], "profiles are a non-empty map"),
        (
            {"east": {"bootstrap.servers": "h:1", "sasl.password": ["hunter2-secret-value"]}},
            "field 'sasl.password': must be a string",
        ),
    ],
)
def test_malformed_profiles_are_rejected_without_echoing_values(
    tmp_path: Path, document: object, expected: str
) -> None:
    path = write(tmp_path, "profiles.json", json.dumps(document))
    with pytest.raises(PlanError) as info:
        read_profiles(path)
    assert expected in str(info.value)
    assert "hunter2" not in str(info.value)


_LOCATION = re.compile(r"^\S*plan\.(json|csv): (row|line) \d+: field '\w+': ")


def test_plan_errors_have_one_location_format_and_suggest_field_names(tmp_path: Path) -> None:
    """Plan errors located rows in three formats (``file: row 1: field ...``, ``file: file:3: ...`` with the name
    twice, ``file#1: ...``), and a misspelt field got no "did you mean" though a misspelt profile key did."""
    from throttled_admin.provisioning import PlanError, apply_plan, read_plan

    typo = tmp_path / "plan.json"
    typo.write_text('[{"cluster": "dev", "action": "ensure", "topic": "t", "partitons": 3}]')
    with pytest.raises(PlanError) as misspelt:
        read_plan(typo)
    assert _LOCATION.match(str(misspelt.value)), misspelt.value
    assert str(misspelt.value).endswith("did you mean 'partitions'?")

    twice = tmp_path / "plan.csv"
    twice.write_text("cluster,action,topic\ndev,ensure,t\ndev,ensure,t\n")
    with pytest.raises(PlanError) as duplicate:
        read_plan(twice)
    assert str(duplicate.value) == f"{twice}: line 3: field 'topic': 't' on cluster 'dev' is already planned by line 2"

    colliding = tmp_path / "plan.json"
    colliding.write_text(json.dumps([{"cluster": "dev", "action": "ensure", "topic": t} for t in ("a.b", "a_b")]))
    with QuotaBroker() as broker:
        results = apply_plan(read_plan(colliding), {"dev": {"bootstrap.servers": broker.bootstrap_servers}})
    assert [r.status for r in results] == ["created", "failed"]
    message = results[1].error_message or ""
    assert _LOCATION.match(message), message
    assert message.startswith(f"{colliding}: row 2: field 'topic': 'a_b' collides with 'a.b'")
    assert results[1].error_name == "PLAN_ERROR"


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("@Xk9-hunter2", "line 3, column 18: found character ... that cannot start any token"),
        ("*Xk9-hunter2", "line 3, column 18: found undefined alias ..."),
        ("Xk9: hunter2", "line 3, column 21: mapping values are not allowed here"),
        ("'Xk9-hunter2", "line 4, column 1: found unexpected end of stream"),
        # review 105: a tag whose value does not parse raised ValueError with the value in it (a traceback in apply)
        ("!!int Xk9-hunter2", ": a tagged value (!!int, !!float, !!timestamp, ...) does not parse as its tag"),
        ("!!timestamp 20x-hunter2", ": a tagged value (!!int, !!float, !!timestamp, ...) does not parse as its tag"),
        ("\x01Xk9-hunter2", "character 46: a character YAML does not allow (#x0001)"),
        ("!Xk9-hunter2 x", "line 3, column 18: could not determine a constructor for the tag ..."),
        ("{a: Xk9-hunter2", "line 4, column 1: expected ',' or '}', but got '<stream end>' (while parsing a flow"),
        # review 108: a one-character token kept showed a password's character
        ('"Xk9\\-hunter2"', "line 3, column 23: found unknown escape character ... (while scanning a double-quoted"),
    ],
)
def test_a_profiles_file_that_is_not_valid_yaml_says_where_without_its_text(
    tmp_path: Path, value: str, where: str
) -> None:
    """Found by a new user's run (helper 104): an unquoted password starting with '@' printed the file's line, the
    password in it, in `apply`'s error, its JSON and ``read_profiles``' PlanError (PyYAML quotes the line, and some
    problems a token of it)."""
    path = tmp_path / "profiles.yaml"
    path.write_text(f"dev:\n  sasl.username: alice\n  sasl.password: {value}\n")
    with pytest.raises(PlanError) as info:
        read_profiles(path)
    message = str(info.value)
    assert "hunter2" not in message, message
    assert message.startswith(f"{path}: not valid YAML{'' if where.startswith(':') else ' at '}{where}"), message


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        # librdkafka's range error begins "Configuration property" (capital C): no key was named
        (
            {"socket.timeout.ms": -5},
            "field 'socket.timeout.ms': librdkafka refuses it: Configuration property \"socket.timeout.ms\" value -5 "
            "is outside allowed range 10..300000",
        ),
        # named by the key written, not librdkafka's alias (queue.buffering.max.ms)
        (
            {"linger.ms": "x"},
            "field 'linger.ms': librdkafka refuses it: Invalid value for configuration property "
            '"queue.buffering.max.ms"',
        ),
        # its own words, which name the setting by its meaning
        ({"sasl.jaas.config": "x"}, "field 'sasl.jaas.config': librdkafka refuses it: Java JAAS configuration is not"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAN"},
            "field 'sasl.mechanisms': librdkafka refuses it: Unsupported SASL mechanism: PLAN",
        ),
        # the check set its own log_level over the profile's: a bad one went to the run, every row failed
        # review 108: the key a dependency refusal is about, the first the message names (not the longest)
        (
            {"enable.idempotence": "true", "max.in.flight": "10"},
            "field 'max.in.flight': librdkafka refuses it: `max.in.flight` must be set <= 5 when `enable.idempotence`",
        ),
        (
            {"log_level": "Hunter2Secret"},
            "field 'log_level': librdkafka refuses it: Invalid value for configuration property \"log_level\"",
        ),
        # a number is a host called "19092" on port 9092 to librdkafka: every row failed to connect
        ({"bootstrap.servers": 19092}, "field 'bootstrap.servers': must be a string of HOST:PORT entries"),
    ],
    ids=["range", "alias", "jaas", "sasl-mechanism", "dependency", "log-level", "bootstrap-number"],
)
def test_a_setting_librdkafka_refuses_is_named_with_its_reason(
    tmp_path: Path, settings: dict[str, object], expected: str
) -> None:
    """Found by a new user's run (helper 107): each of these was "profile 'east': librdkafka refuses the settings",
    naming no key, or no error at all before the run."""
    conf = {"bootstrap.servers": "127.0.0.1:9092", "sasl.password": "Hunter2Secret", **settings}
    path = write(tmp_path, "profiles.json", json.dumps({"east": conf}))
    with pytest.raises(PlanError) as info:
        read_profiles(path)
    message = str(info.value)
    assert f"{path}: profile 'east': {expected}" in message, message
    assert "Hunter2Secret" not in message


def test_an_unclosed_brace_in_a_plan_says_which_and_where_it_opened(tmp_path: Path) -> None:
    """Found by a new user's run (helper 107): a row without its closing '}' read "expected ... or ..., but got ..."
    (PyYAML's names of its own tokens hidden with the file's text), with a hint about quoting a value."""
    path = write(tmp_path, "plan.yaml", "- {cluster: east, action: ensure, topic: a\n- {cluster: east, topic: b}\n")
    with pytest.raises(PlanError) as info:
        read_plan(path)
    assert str(info.value) == (
        f"{path}: not valid YAML at line 2, column 3: expected ',' or '}}', but got '{{' (while parsing a flow mapping "
        "from line 1, column 3) (close each { and [, and quote a value inside them that holds a comma, ': ', a "
        "bracket or a brace)"
    )
