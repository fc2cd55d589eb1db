"""The CLI's parsers in process: properties files, client settings, secrets, kafka-topics.sh's arguments."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.cli_helpers import REPO, cli_env, topics
from tests.support import BrokerFactory
from throttled_admin._errors import after_failover_refusal
from throttled_admin.cli import main
from throttled_admin.cli._args import (
    UsageError,
    build_parser,
    command_timeout,
    parse_replica_assignment,
    parse_topic_configs,
    read_command_config,
    topic_pattern,
)
from throttled_admin.cli._conf import Redactor, build_conf, credentials_twice, jaas_problem, java_only
from throttled_admin.cli._java_settings import java_refusal, left_out, notice
from throttled_admin.cli._output import QUOTA_MESSAGE, _between_words, describe_error
from throttled_admin.cli._properties import PropertiesError, load_properties, parse_properties
from throttled_admin.provisioning import PlanError
from throttled_admin.provisioning._settings_check import _hidden, check_settings


def test_properties_as_java_reads_them() -> None:
    text = (
        "# comment\n"
        "  ! another comment\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d=spaces kept inside  \n"
        "long = first \\\n"
        "       second\\\n"
        "  third\n"
        "esc\\=key=tab\\there\\u0041\n"
        "path=C:\\\\dir\n"
        "empty=\n"
        "a=overridden\n"
    )
    assert parse_properties(text) == {
        "a": "overridden",
        "b": "2",
        "c": "3",
        "d": "spaces kept inside  ",
        "long": "first secondthird",
        "esc=key": "tab\thereA",
        "path": "C:\\dir",
        "empty": "",
    }


def test_a_surrogate_pair_escape_is_one_character_as_in_java() -> None:
    """helper 125: native2ascii writes a character beyond the first plane as two escapes, which stayed two halves
    (confluent-kafka then failed with a traceback on the password); a lone half is no character."""
    assert parse_properties("sasl.password=pw\\uD83D\\uDE00!") == {"sasl.password": "pw\U0001f600!"}
    with pytest.raises(PropertiesError, match=r"<properties>:1: a \\uXXXX escape of half a character"):
        parse_properties("sasl.password=pw\\uD83D!")


def test_properties_lines_end_where_javas_do() -> None:
    """review 123: str.splitlines() also broke at \\x85, \\f and U+2028, cutting a password in two (its tail read as
    a key, named in an error); Java's LineReader ends a line at \\n, \\r or \\r\\n only."""
    assert parse_properties("sasl.password=Pass\x85word\x0cTail\u2028 99\r\nb=2\rc=3") == {
        "sasl.password": "Pass\x85word\x0cTail\u2028 99",
        "b": "2",
        "c": "3",
    }


@pytest.mark.parametrize(
    ("text", "swallowed"),
    [
        ("sasl.mechanism=PLAIN\\\nsasl.jaas.config=x;\n", "3: sasl.jaas.config is read as the end of sasl.mechanism"),
        ("sasl.mechanism=PLAIN\\\n#sasl.jaas.config=x;\n", "3: sasl.jaas.config (commented out) is read as the end"),
        ("sasl.mechanism=PLAIN\\\n  # sasl.jaas.config=x;\n", "3: sasl.jaas.config (commented out) is read as"),
        ("sasl.mechanism=PLAIN\\\r\nssl.key.password: secret\r\n", "3: ssl.key.password is read as the end of"),
        ("security.protocol=SASL_SSL\\\nssl.key.password:9secret\n", "3: ssl.key.password is read as the end of"),
        ("sasl.jaas.config=x.LoginModule required;\\\nsasl.oauthbearer.method=oidc\n", "3: sasl.oauthbearer.method "
         "is read as the end of sasl.jaas.config's value"),  # (the JAAS line ended at its ';')
        ("bootstrap.servers=a.example.com:9092,\\\n    b.example.com:9092\\\n    ,c.example.com:9092\n", None),
        ("sasl.jaas.config=x.LoginModule required \\\n    ssl.truststore.location=\"/t.jks\";\n", None),  # (OIDC)
        ("sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
         "    username=\"alice\" \\\n    password=\"s\";\n", None),
        ("sasl.oauthbearer.scope=kafka.read \\\n    kafka.write kafka.admin\n", None),
        ("sasl.mechanism=PLAIN\\\nsasl.password  secret\n", "3: sasl.password is read as the end of"),
        ("debug=broker,\\\n# an old password: secret\n", "3: a comment is read as the end of the value above it"),
    ],
    ids=["setting", "commented", "commented-spaced", "crlf", "colon-digit", "jaas-ended", "host-list", "jaas-option",
         "jaas-lines", "scope-list", "secret-space-separated", "comment"],
)  # fmt: skip
def test_a_line_continued_into_a_setting_is_refused_and_a_continued_value_is_not(
    tmp_path: Path, text: str, swallowed: str | None
) -> None:
    """helper 122 and reviews 123, 124: Java joins the next line to the value, which then held a password librdkafka's
    refusal printed; a value continued as values are (a broker list, a JAAS line's options, a scope list) reads as
    Java reads it, and is known to be continued."""
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\n" + text, newline="")
    if swallowed is None:
        assert set(load_properties(path).continued) == {re.split(r"[=:]", text, maxsplit=1)[0]}
    else:
        with pytest.raises(PropertiesError, match=re.escape(f"{path}:{swallowed}")):
            load_properties(path)


def test_librdkafkas_words_are_left_out_where_they_may_quote_a_value_continued_over_a_line() -> None:
    """reviews 123 and 124: a value continued into a line no rule reads as a setting still reaches librdkafka, whose
    refusal quotes it (or another value, where it names no setting: a provider's name); a long one it cuts short,
    past what a whole value's hiding finds. A refused value that went on over no line keeps librdkafka's words."""
    sasl, tls = {"security.protocol": "SASL_PLAINTEXT"}, {"security.protocol": "SSL"}
    swallowed = 'PLAIN# sasl_jaas password="S3cret-77";'
    with pytest.raises(PlanError) as caught:
        check_settings(
            {**sasl, "sasl.mechanism": swallowed}, where="f", fields=(), continued={"sasl.mechanism": (swallowed,)}
        )
    said = "f: field 'sasl.mechanism': librdkafka refuses its value, which goes on over a continued line"
    assert str(caught.value) == said
    with pytest.raises(PlanError) as caught:
        check_settings(
            {**tls, "ssl.providers": 'x# p="OldSecret-1";'},
            where="f",
            fields=(),
            continued={"ssl.providers": ('x# p="OldSecret-1";',)},
        )
    assert "OldSecret-1" not in str(caught.value)
    assert str(caught.value).startswith("f: librdkafka refuses the settings (its words left out"), caught.value
    with pytest.raises(PlanError, match='Invalid value ""SASL_SSL"" for configuration property'):
        check_settings({"security.protocol": '"SASL_SSL"'}, where="f", fields=())  # (the quotes shown: the mistake)
    long_value = "S" + "3cret" * 100  # (librdkafka's words end within it, at about 256 bytes)
    assert _hidden(f'Invalid value "{long_value[:230]}', [long_value]) == 'Invalid value "***'
    assert _hidden("value x refused", ["x"]) == "value *** refused"


def test_properties_errors_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("ok=1\nx=\\u12G4\n")
    with pytest.raises(PropertiesError, match=r"bad.properties:2: malformed"):
        load_properties(bad)
    with pytest.raises(PropertiesError, match="cannot read"):
        load_properties(tmp_path / "missing.properties")


def test_jaas_config_becomes_librdkafka_settings_and_is_hidden() -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" '
        'password="p@ss \\"q\\"";',
    }
    conf = build_conf(props, "b1:9092")
    assert conf == {
        "security.protocol": "SASL_SSL",
        "sasl.username": "bob",
        "sasl.password": 'p@ss "q"',
        "bootstrap.servers": "b1:9092",
    }
    redact = Redactor([props, conf])
    assert redact('failed for p@ss "q" and for jaas p@ss \\"q\\"') == "failed for [hidden] and for jaas [hidden]"
    assert redact("nothing secret: bob") == "nothing secret: bob"


def test_kafka_topics_argument_syntax() -> None:
    assert parse_replica_assignment("0:1, 1:2 ,2:0") == [[0, 1], [1, 2], [2, 0]]
    with pytest.raises(UsageError, match="duplicate entries: 1"):
        parse_replica_assignment("1:1")
    assert parse_topic_configs(["retention.ms = 1000", "cleanup.policy=compact"]) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact",
    }
    with pytest.raises(UsageError, match='"key=val"'):
        parse_topic_configs(["a=b=c"])
    # TopicFilter.IncludeList: ',' is '|', quotes and spaces dropped, whole-name match.
    pattern = topic_pattern("'orders.*, payments'")
    assert [t for t in ["orders.eu", "payments", "xpayments", "orders"] if pattern.fullmatch(t)] == [
        "orders.eu",
        "payments",
        "orders",
    ]


def test_main_returns_exit_codes_without_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    """Also: ``main`` runs ``topics`` more than once in one process (the second raised TypeError: the package's
    function was shadowed by its submodule ``_topics`` once imported)."""
    assert main(["--version"]) == 0
    assert re.match(r"throttled-admin \S+", capsys.readouterr().out)
    assert main(["topics", "--version"]) == 0  # as kafka-topics.sh --version (docs/cli.md's options)
    assert re.match(r"throttled-admin \S+", capsys.readouterr().out)
    assert main(["topics", "--help"]) == 0
    assert "--bootstrap-server" in capsys.readouterr().out
    for _ in range(2):
        assert main(["topics", "--bootstrap-server", "x:1", "--list", "--partitions", "3"]) == 2
        assert 'Option "[partitions]" can\'t be used with option "[list]"' in capsys.readouterr().err


def test_in_a_narrow_terminal_stderr_breaks_between_words_and_stdout_stays_kafka_topics_lines(
    quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    """helper 118's tmux run: long lines broke where the terminal's edge fell ("the p" / "eriod"). A line for the
    person (stderr) is broken between words; stdout's are kafka-topics.sh's lines, whole in a terminal too (review
    123: what captures a terminal, as ``script`` or ``expect``, reads them)."""
    broker = quota_broker(controller_mutation_rate=1, quota_window_num=1)  # 3 partitions: admitted and throttled
    config = tmp_path / "client.properties"
    config.write_text("metrics.num.samples=2\nreceive.buffer.bytes=65536\n")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "throttled_admin", "topics", "--bootstrap-server", broker.bootstrap_servers, "--command-config",
         str(config), "--create", "--topic", "orders.a", "--partitions", "3"],
        env=cli_env(), cwd=str(REPO), encoding="utf-8", timeout=60, dimensions=(40, 60),
    )  # fmt: skip
    child.expect(pexpect.EOF)
    child.close()
    lines = child.before.replace("\r\n", "\n").splitlines()
    assert child.exitstatus == 0, lines
    stdout_from = next(i for i, line in enumerate(lines) if line.startswith("WARNING: Due to limitations"))
    warning = lines[:stdout_from]  # stderr's line, then stdout's
    assert warning[0].startswith("WARNING: --command-config"), lines
    assert all(len(line) <= 60 or " " not in line for line in warning), lines  # (a word wider stays whole: a path)
    assert lines[stdout_from].endswith("could collide. To avoid issues it is best to use either, but not both."), lines
    assert "receive.buffer.bytes (librdkafka's is socket.receive.buffer.bytes)" in " ".join(warning), lines
    assert any(
        line.startswith("WARNING: The broker applied this change over the principal's controller mutation quota and "
                        "throttled the connection: ") for line in lines
    ), lines  # fmt: skip


def test_a_terminal_of_no_size_takes_lines_whole() -> None:
    """review 123: a pseudo-terminal whose size was never set reports 0 columns, and breaking lines at 0 raised."""
    main_fd, terminal_fd = os.openpty()
    try:
        with os.fdopen(terminal_fd, "w", closefd=False) as terminal:
            assert os.get_terminal_size(terminal.fileno()).columns == 0
            assert _between_words("a line wider than nothing", terminal) == "a line wider than nothing"
    finally:
        os.close(main_fd)
        os.close(terminal_fd)


def test_apply_without_rich_in_a_terminal_hints_at_the_extra(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    """A pseudo-terminal (pexpect) with rich made unimportable: the hint, then plain progress and tables."""
    broker = quota_broker()
    hide_rich = tmp_path / "hide_rich" / "rich"
    hide_rich.mkdir(parents=True)
    (hide_rich / "__init__.py").write_text("raise ImportError('rich is hidden for this test')\n")
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps([{"cluster": "k", "action": "ensure", "topic": f"t{i}", "partitions": 1} for i in range(3)])
    )
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(hide_rich.parent), env["PYTHONPATH"]])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "throttled_admin", "apply", str(plan), "--bootstrap-server", broker.bootstrap_servers],
        env=env,
        cwd=str(REPO),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before.replace("\r\n", "\n")
    assert child.exitstatus == 0, screen
    hint = "pip install 'rich>=13' (throttled_admin's 'cli' extra; in a checkout: pip install -e '.[cli]')"
    assert hint in " ".join(screen.split()), screen  # (a line wider than the terminal is broken between words)
    assert re.search(r"^\[k\] 3/3 rows, ", screen, re.M), screen
    assert re.search(r"^k\s+3\s+3$", screen, re.M), screen  # the plain summary table: cluster, created, rows
    assert broker.topics() == {"t0": 1, "t1": 1, "t2": 1}


def test_console_script_and_module_entry_points() -> None:
    script = Path(sys.executable).parent / "throttled-admin"
    if not script.exists():
        pytest.skip("the package is not installed in this interpreter's environment (no console script)")
    for command in ([str(script)], [sys.executable, "-m", "throttled_admin"]):
        run = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, env=cli_env(), timeout=60, check=False
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("throttled-admin ")


def test_a_quota_refusal_that_may_follow_an_applied_attempt_keeps_its_hedge() -> None:
    """A 89 after an attempt that may have been applied (its answer lost, or refused as a failover refuses) is a
    PossiblyAppliedError: the CLI prints its words, not kafka-topics.sh's bare quota message."""
    refusal = KafkaError(KafkaError.NOT_CONTROLLER)
    hedged = after_failover_refusal(KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED), "CreateTopics", refusal)
    info = describe_error(hedged)
    assert info.code == KafkaError.THROTTLING_QUOTA_EXCEEDED
    assert "may have applied it" in info.message, info
    plain = describe_error(KafkaException(KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED, "x")))
    assert plain.message == QUOTA_MESSAGE


def test_the_command_line_prints_every_threads_python_frames_when_native_code_crashes() -> None:
    """``throttled-admin``'s entry point turns Python's fault handler on: a crash in native code (a rare SIGSEGV as
    the process exited, seen in CI) says where each thread was, not only exit code -11."""
    crash = "import ctypes, throttled_admin.cli as cli; cli.main = lambda: ctypes.string_at(0); cli.run()"
    proc = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in proc.stderr
    assert " in run" in proc.stderr  # (faulthandler's frame: File "...", line N in run)


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ("security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n", "ssl.truststore.location"),
        (
            "sasl.mechanism=OAUTHBEARER\nsasl.jaas.config=org.apache.kafka.common.security.oauthbearer."
            'OAuthBearerLoginModule required clientId="c" clientSecret="s3cr3t-9d";\n',
            "OAuthBearerLoginModule",
        ),
    ],
    ids=["truststore", "oauthbearer-jaas"],
)
def test_a_java_only_command_config_setting_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], properties: str, named: str
) -> None:
    """Found by a new user's run (helper 99): librdkafka's own words named neither ("Java TrustStores are not
    supported, ..."; for an OAuthBearer JAAS line, "sasl.username and sasl.password must be set")."""
    config = tmp_path / "client.properties"
    config.write_text(properties)
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert named in err, err
    assert "s3cr3t-9d" not in err


@pytest.mark.parametrize(
    ("lines", "named"),
    [
        ("bootstrap.controllers=127.0.0.1:9093", "bootstrap.controllers is the Java client's: librdkafka reaches"),
        ("config.providers=file", "config.providers is the Java client's: librdkafka would take a ${provider"),
        ("sasl.login.callback.handler.class=com.example.Login", "sasl.login.callback.handler.class is the Java "),
        ("ssl.enabled.protocols=TLSv1.3", "ssl.enabled.protocols is the Java client's: librdkafka's TLS is "
         "OpenSSL's, which offers TLS 1.2 and 1.3 and cannot be limited to a list without TLSv1.2"),
        ("ssl.keystore.type=JKS\nssl.keystore.location=/k.jks", "ssl.keystore.type is the Java client's: librdkafka "
         "reads a PKCS12 keystore only"),
        ("ssl.keystore.type=PEM\nssl.keystore.location=/k.pem", "ssl.keystore.type is the Java client's: librdkafka "
         "reads PKCS12 at ssl.keystore.location; give PEM in ssl.key.location and ssl.certificate.location"),
        ("ssl.keystore.key=-----BEGIN PRIVATE KEY----- s3cr3t-9d", "ssl.keystore.key is the Java client's: give the "
         "key in librdkafka's ssl.key.pem"),
        ("sasl.oauthbearer.header.urlencode=true", "sasl.oauthbearer.header.urlencode is the Java client's: librdkafka "
         "does not URL-encode"),
        ("default.api.timeout.ms=s3cr3t-9d", "default.api.timeout.ms is not a whole number"),
        ("default.api.timeout.ms=20000", "default.api.timeout.ms must be no smaller than request.timeout.ms (as the "
         "Java client requires)"),
        ("default.api.timeout.ms=50000\nrequest.timeout.ms=60000", "default.api.timeout.ms must be no smaller than "),
        ("sasl.mechanism=PLAIN\\\nsasl.jaas.config=x required password=\"s3cr3t-9d\";", "3: sasl.jaas.config is "
         "read as the end of sasl.mechanism's value, as the line before it ends with '\\' (a line continued): "
         "remove that '\\'"),  # (helper 122: librdkafka's refusal of the mechanism showed the password)
        ("retry.backoff.ms=0", "field 'retry.backoff.ms': librdkafka refuses it: Configuration property "
         "\"retry.backoff.ms\" value 0 is outside allowed range"),
    ],
    ids=["controllers", "config-providers", "login-class", "tls-1.3-only", "jks", "pem-file", "pem-key",
         "urlencode", "timeout-word", "timeout-below-request", "timeout-below-the-files-request", "stray-backslash",
         "librdkafka-refuses"],
)  # fmt: skip
@pytest.mark.parametrize("timeout_given", [False, True], ids=["", "--timeout-ms"])
def test_a_java_setting_librdkafka_cannot_honour_is_a_usage_error_naming_it_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: str, named: str, timeout_given: bool
) -> None:
    """Leaving it out would reach another cluster, prove another identity or trust otherwise than the file asks;
    a default.api.timeout.ms Java refuses is refused beside --timeout-ms too. No value of the file is shown."""
    config = tmp_path / "client.properties"
    config.write_text(f"security.protocol=SSL\n{lines}\n")
    timeout = ["--timeout-ms", "5000"] if timeout_given else []
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list", *timeout])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"throttled-admin topics: error: --command-config {config}" in err, err
    assert named in err, err
    assert "s3cr3t-9d" not in err
    assert "20000" not in err


_OAUTHBEARER = "org.apache.kafka.common.security.oauthbearer"


def test_the_java_clients_tuning_is_left_out_of_librdkafkas_conf_and_named() -> None:
    properties = {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": "/k.p12",
        "ssl.enabled.protocols": "TLSv1.2",
        "ssl.protocol": "TLSv1.3",
        "receive.buffer.bytes": "-1",
        "default.api.timeout.ms": "1000",
        "request.timeout.ms": "30000",  # (librdkafka's too)
    }
    assert java_only(properties) is None
    assert build_conf(properties, "b:9092") == {
        "security.protocol": "SSL",
        "ssl.keystore.location": "/k.p12",
        "request.timeout.ms": "30000",
        "bootstrap.servers": "b:9092",
    }
    said = notice("f.properties", properties, takes_timeout=False)
    assert said is not None
    assert re.findall(r"([\w.]+) \(", said) == [
        "ssl.keystore.type", "ssl.enabled.protocols", "ssl.protocol", "receive.buffer.bytes", "default.api.timeout.ms"
    ]  # fmt: skip
    assert "default.api.timeout.ms" not in str(notice("f.properties", properties, takes_timeout=True))
    assert notice("f.properties", {"security.protocol": "SSL"}, takes_timeout=True) is None
    # Moot, or what librdkafka does anyway: left out
    moot = {
        "ssl.keystore.type": "JKS",  # (Java's default; no keystore to read)
        "ssl.enabled.protocols": "TLSv1.3",  # (no TLS)
        "sasl.oauthbearer.header.urlencode": "false",
        "sasl.oauthbearer.method": "oidc",
        "sasl.login.callback.handler.class": f"{_OAUTHBEARER}.OAuthBearerLoginCallbackHandler",
    }
    assert java_refusal(moot) is None
    assert list(left_out(moot)) == [key for key in moot if key != "sasl.oauthbearer.method"]
    assert java_refusal(moot | {"sasl.oauthbearer.method": "default"}) == (
        "sasl.login.callback.handler.class is the Java client's: librdkafka cannot load a Java class"
    )
    # helper 122: each read as kafka-topics.sh reads it
    others = {
        "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",  # (a producer's, shared file)
        "enable.idempotence": "true",  # (librdkafka's too: its admin handle would ask for a producer id)
        "transactional.id": "tx-1",
        "sasl.login.class": "org.apache.kafka.common.security.authenticator.DefaultLogin",  # (Java's default)
        "ssl.truststore.location": "/t.jks",  # (no TLS: every ssl.* setting is moot, librdkafka's too)
        "ssl.keystore.location": "/k.p12",
        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
    }
    assert java_refusal(others) is None
    assert java_only(others) is None
    assert list(left_out(others)) == list(others)
    assert build_conf(others, None) == {}
    tls = {"security.protocol": "SSL", "ssl.ca.location": "/ca.pem", "ssl.endpoint.identification.algorithm": ""}
    assert build_conf(tls, None) == tls | {"ssl.endpoint.identification.algorithm": "none"}  # (Java's "no check")


@pytest.mark.parametrize(
    ("file", "given", "expected"),
    [
        ({}, None, (60000, "--timeout-ms 60000", None)),
        ({"request.timeout.ms": "120000"}, None, (120000, "--timeout-ms 120000", None)),  # (Java's deadline then)
        ({"default.api.timeout.ms": "+45000"}, None, (45000, "--command-config's default.api.timeout.ms 45000", None)),
        (
            {"default.api.timeout.ms": "2147483647"},
            None,
            (3600000, "--timeout-ms 3600000", "WARNING: --command-config c.properties: default.api.timeout.ms is over "
             "an hour, librdkafka's most: each call's deadline is --timeout-ms 3600000."),
        ),
        ({"default.api.timeout.ms": "2147483647"}, 5000, (5000, "--timeout-ms 5000", None)),
    ],
    ids=["java's", "request-timeout's", "file's", "over-an-hour", "given"],
)  # fmt: skip
def test_topics_deadline_is_the_option_the_files_or_javas(
    file: dict[str, str], given: int | None, expected: tuple[int, str, str | None]
) -> None:
    """helper 122: a file's default.api.timeout.ms over an hour (Integer.MAX_VALUE: "as long as it takes") was refused
    where Java runs, --timeout-ms given or not; a request.timeout.ms above 60000 is Java's deadline too."""
    args = argparse.Namespace(timeout_ms=given, command_config="c.properties")
    assert command_timeout(args, file, build_parser()) == expected


def test_librdkafkas_own_credentials_are_taken_as_written(tmp_path: Path) -> None:
    """review 124: Java never reads sasl.username or sasl.password (its are in sasl.jaas.config), so no trim of
    Java's applies to them: a password that ends with an escaped space keeps it."""
    config = tmp_path / "client.properties"
    config.write_text("sasl.username= alice\\ \nsasl.password=abc\\ \nclient.id= ops \n")
    values = read_command_config(str(config), build_parser()).values
    assert values == {"sasl.username": "alice ", "sasl.password": "abc ", "client.id": "ops"}


def test_left_out_settings_are_named_only_once_every_check_passed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """review 124: a file refused for another setting printed its WARNING first, as if it would run."""
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=BOGUS\nreceive.buffer.bytes=1\n")
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "field 'security.protocol': librdkafka refuses it" in err, err
    assert "WARNING" not in err, err


def test_a_command_configs_values_are_trimmed_as_java_trims_them(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    """helper 122: ``client.id=ops `` (a trailing space) was the client "ops ", another quota entity than
    kafka-topics.sh's "ops": created over ops's quota, unthrottled and unwarned."""
    broker = quota_broker()
    broker.set_quota(client_id="ops", controller_mutation_rate=1)
    config = tmp_path / "client.properties"
    config.write_text("client.id=ops \t\nsecurity.protocol= PLAINTEXT \n")
    run = topics(broker.bootstrap_servers, "--command-config", str(config), "--create", "--topic", "t", "--partitions",
                 "20")  # fmt: skip
    assert run.returncode == 0, run.output
    assert run.stdout.startswith("Created topic t.\nWARNING: The broker applied this change over the principal's "), run
    assert {entry.client_id for entry in broker.request_log() if entry.api_name == "CreateTopics"} == {"ops"}


_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.mark.parametrize(
    ("jaas", "problem"),
    [
        (
            f'{_PLAIN} required username="alice" password="s3cr3t-9d;',
            "option 'password': its value's quote is not closed",
        ),
        (f'{_PLAIN} required username="alice"; password="s3cr3t-9d";', "text after its ';'"),
        (f'{_PLAIN} required username="alice" password="s3cr3t-9d" extra;', "expected NAME=VALUE after option 'pass"),
        (f'{_PLAIN} required username="alice" password="s3cr3t-9d"', "it does not end with ';'"),
        (
            f'{_PLAIN} requird username="alice" password="s3cr3t-9d";',
            "the login module's control flag must be one of required",
        ),
        (
            f'{_PLAIN} required username="alice" password=s3cr3t-9d= @;',
            "expected NAME=VALUE after option 'password' (quote a value that holds anything but letters, digits",
        ),
        (f'{_PLAIN} required username="alice" password="czNjcjN0LTlk=" extra;', "expected NAME=VALUE after option"),
    ],
    ids=["unclosed-quote", "option-after-end", "stray-word", "no-end", "bad-flag", "odd-character", "base64-then-word"],
)
def test_a_jaas_line_java_would_refuse_is_a_usage_error_saying_why_without_its_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], jaas: str, problem: str
) -> None:
    """Found by a new user's run (helper 104): a missing closing quote after the right password was read leniently
    (the password's quote and ';' kept in it) and failed as "Invalid username or password", sending the user to their
    credentials; an option after the ';' or a stray word was taken without a word. Java's JAAS parser refuses each."""
    config = tmp_path / "client.properties"
    config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n")
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--command-config {config}: sasl.jaas.config: {problem}" in err, err
    assert "s3cr3t-9d" not in err
    assert "czNjcjN0LTlk" not in err  # (review 105: a base64 password's '=' once made it read as an option's name)
    assert "alice" not in err


def test_a_single_quoted_jaas_value_with_an_escaped_quote_is_taken_as_java_means_it() -> None:
    """Found on the reread: the check reads `password='it\\'s'` as Java does (it's), but the credentials were taken by a
    pattern that stopped at the escaped quote: the password sent was `it\\`."""
    jaas = f"{_PLAIN} required username='al\\'ice' password='it\\'s';"
    assert jaas_problem(jaas) is None
    conf = build_conf({"sasl.jaas.config": jaas}, None)
    assert (conf["sasl.username"], conf["sasl.password"]) == ("al'ice", "it's")
    assert Redactor([{"sasl.jaas.config": jaas}])("it's, written it\\'s") == "[hidden], written [hidden]"


@pytest.mark.parametrize(
    "rest",
    [' /* password="old" */;', '; // password="old"', " /* an old one: */ ;\n// password=old"],
    ids=["block-comment", "line-comment", "both"],
)
def test_a_password_in_a_jaas_comment_is_not_the_one_sent(rest: str) -> None:
    """The reread of stop 81: the check skipped comments as Java does, but the credentials were taken by a pattern
    that read every `password=` of the line, the last one winning: a password in a comment after the real one was
    the one sent."""
    jaas = f'{_PLAIN} required username="alice" password="real"{rest}'
    assert jaas_problem(jaas) is None, jaas
    assert build_conf({"sasl.jaas.config": jaas}, None)["sasl.password"] == "real"


def test_a_jaas_value_is_unescaped_as_javas_tokenizer_does() -> None:
    r"""Java's JAAS parser (a StreamTokenizer) reads a backslash in a quoted value as C does: \\ is one backslash,
    \t a tab, \101 the octal character A, any other escaped character itself. Only quotes were unescaped here."""
    jaas = f'{_PLAIN} required username="a\\\\b" password="\\t\\101\\q\\\\";'
    assert jaas_problem(jaas) is None
    conf = build_conf({"sasl.jaas.config": jaas}, None)
    assert (conf["sasl.username"], conf["sasl.password"]) == ("a\\b", "\tAq\\")
    assert Redactor([{"sasl.jaas.config": jaas}])("\tAq\\ and \\t\\101\\q\\\\") == "[hidden] and [hidden]"


def test_an_unquoted_jaas_value_that_java_reads_as_a_number_is_refused() -> None:
    """Java reads an unquoted value that starts with a digit, '.' or '-' as a number, and refuses it ("Value not
    specified for key"); the check took it as a word."""
    problem = jaas_problem(f"{_PLAIN} required username=alice password=2024secret;")
    assert problem == "option 'password': a value that starts with a digit, '.' or '-' must be quoted", problem


def test_a_jaas_line_as_java_writes_it_reads() -> None:
    for jaas in (
        f'{_PLAIN} required username="alice" password="p;w \\"q\\"";',
        f"{_PLAIN} required username=alice password='p w';",
        'org.apache.kafka.common.security.scram.ScramLoginModule required\n  username="bob"\n  password="x";  ',
        "x.OAuthBearerLoginModule required;",
        # review 105: Java upper-cases the flag; escapes in single quotes; comments; a module the CLI does not read
        # (Strimzi's OAuth line, dotted names) is Java's to read
        f'{_PLAIN} REQUIRED username="a" password="b";',
        f"{_PLAIN} required username='it\\'s' password=\"x\"; // a comment",
        f'{_PLAIN} required /* a comment */ username="a"\n  password="x";',
        'x.OAuthBearerLoginModule required oauth.client.id="c" oauth.client.secret="s" oauth.token.endpoint.uri="u";',
    ):
        assert jaas_problem(jaas) is None, jaas


def test_a_java_only_setting_beside_librdkafkas_own_is_left_to_java() -> None:
    """One file for both tools: a TrustStore beside ssl.ca.location, or an OAuthBearer JAAS line beside librdkafka's
    sasl.oauthbearer settings, is the Java client's and is left out of librdkafka's conf."""
    properties = {
        "ssl.truststore.location": "/etc/kafka/truststore.jks",
        "ssl.truststore.password": "x",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "sasl.oauthbearer.method": "oidc",
    }
    assert java_only(properties) is None
    conf = build_conf(properties, "b:9092")
    assert not any(key.startswith("ssl.truststore.") or key == "sasl.jaas.config" for key in conf), conf


@pytest.mark.parametrize(
    ("properties", "refused"),
    [
        ({"ssl.truststore.location": "t.jks", "ssl.ca.pem": "-----BEGIN CERTIFICATE-----"}, False),
        ({"ssl.truststore.location": "t.jks", "ssl.ca.certificate.stores": "Root"}, False),
        (
            {"sasl.jaas.config": "x.OAuthBearerLoginModule required;", "enable.sasl.oauthbearer.unsecure.jwt": "true"},
            False,
        ),
        ({"sasl.jaas.config": "x.Krb5LoginModule required;", "sasl.kerberos.keytab": "k.keytab"}, False),
        # Java reads sasl.kerberos.service.name too: not librdkafka's own
        ({"sasl.jaas.config": "x.Krb5LoginModule required;", "sasl.kerberos.service.name": "kafka"}, True),
        ({"ssl.keystore.location": "client.p12", "ssl.keystore.password": "x"}, False),  # librdkafka's PKCS#12 too
    ],
)
def test_librdkafkas_own_settings_for_the_same_thing_count_and_javas_shared_ones_do_not(
    properties: dict[str, str], refused: bool
) -> None:
    """Found by review (helper 101): only ssl.ca.location counted beside a TrustStore, and any sasl.kerberos.* key
    beside a Krb5 JAAS line, one Java reads as well."""
    assert (java_only(properties) is not None) is refused


def test_a_jaas_problem_names_no_word_of_an_unquoted_password() -> None:
    """On the reread: an unquoted password with a space (``password=s3cr3t xk9=...``) read as a second option, whose
    name, a word of the password, the problem quoted. Only the Plain and Scram modules' own option names are."""
    problem = jaas_problem(f"{_PLAIN} required username=alice password=s3cr3t xk9=;")
    assert problem == "an option: its value is not one word or a quote", problem
    problem = jaas_problem(f"{_PLAIN} required username=alice password=s3cr3t xk9=q w;")
    assert problem is not None
    assert "xk9" not in problem


def test_a_command_config_naming_two_principals_is_refused_naming_the_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Helper 111: a file with bob's JAAS line and alice's sasl.username/sasl.password logged in as alice, where
    kafka-topics.sh (Java reads the line) is bob: the principal depended on the tool. Both naming the same is fine."""
    jaas = f'{_PLAIN} required username="bob" password="HUNTER2xyz";'
    config = tmp_path / "client.properties"
    config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n"
                      "sasl.username=alice\nsasl.password=alice-secret\n")  # fmt: skip
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "sasl.username and sasl.password differ from sasl.jaas.config's (Java reads the JAAS line" in err, err
    assert "HUNTER2xyz" not in err
    assert "alice-secret" not in err
    assert credentials_twice({"sasl.jaas.config": jaas, "sasl.username": "bob"}) is None
    assert credentials_twice({"sasl.jaas.config": jaas, "sasl.password": "other"}) == (
        "sasl.password differs from sasl.jaas.config's (Java reads the JAAS line, librdkafka its own settings): "
        "keep one"
    )


# helpers 125 and 126's files: a secret reached the output through each before (a password after a stray '\', on a
# line of its own, after a no-break space or an escaped '='; a commented-out JAAS line; a comment whose words read as
# librdkafka's; our own message quoting a value with its '\' doubled; librdkafka's quoting a continued value's tail;
# a passphrase of dotted words on its own line; a password equal to a word of a setting's name; an OAuth config)
_RED_TEAM = {
    "space-separated": ("retry.backoff.ms=500\\\nsasl.password Hunter2Sekr1t\n", "Hunter2"),
    "commented-jaas": ('socket.timeout.ms=30000 \\\n#sasl.jaas.config org.apache.kafka.common.security.plain.'
                       'PlainLoginModule required username="bob" password="Hunter2Sekr1t";\n', "Hunter2"),
    "own-line": ("ssl.keystore.password=\nHunter2Sekr1t\n", "Hunter2"),
    "key-continued": ("ssl.key.password\\\n    Hunter2Sekr1t\n", "Hunter2"),
    "comment-as-words": ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=alice\n"
                         "sasl.password=alicepass\ndebug=broker,\\\n# SASL mechanism PLAIN: old password "
                         "Hunter2Sekr1t\n",
                         "Hunter2"),
    "no-break-space": ("sasl.password\u00a0Hunter2Sekr1t\n", "Hunter2"),
    "escaped-separator": ("sasl.password\\=Hunter2Sekr1t\n", "Hunter2"),
    "bare-tail": ("retry.backoff.ms=500\\\n   Hunter2Sekr1t\n", "Hunter2"),
    "truststore-no-break-space": ("security.protocol=SSL\nssl.truststore.password\u00a0Hunter2Sekr1t\n", "Hunter2"),
    "ssl-no-tls-no-break-space": ("ssl.truststore.password\u00a0Hunter2Sekr1t\n", "Hunter2"),
    "repr-doubled": ("socket.timeout.ms=60000\\\n  Tr0ub\\\\4dor&3x\n", "Tr0ub"),
    "colon-digits": ("retry.backoff.ms=100\\\nsasl.password:20240917\n", "20240917"),
    "continued-tail": ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                       "enable.sasl.oauthbearer.unsecure.jwt=true\nsasl.oauthbearer.config=principal=admin \\\n"
                       "  scope=x Hunter2Sekr1t\n", "Hunter2"),
    "dotted-passphrase": ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=alice\n"
                          "sasl.password=\ncorrect.horse.battery.staple\n", "horse"),
    "word-of-a-name": ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nssl.ca.location=/etc/hosts\n"
                       "ssl.key.password=password\n", "sasl.***"),
    "oauthbearer-config": ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                           "enable.sasl.oauthbearer.unsecure.jwt=true\nsasl.oauthbearer.config=bogus=Hunter2xyz\n",
                           "Hunter2"),
}  # fmt: skip


@pytest.mark.parametrize(("text", "secret"), list(_RED_TEAM.values()), ids=list(_RED_TEAM))
def test_no_secret_of_a_command_config_reaches_the_output_however_the_file_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, secret: str
) -> None:
    config = tmp_path / "client.properties"
    config.write_text(text)
    plan = tmp_path / "plan.csv"
    plan.write_text("cluster,action,topic,partitions,replication_factor,configs\nmain,ensure,t1,1,1,\n")
    for command in (
        ["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list"],
        ["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list", "--output", "json"],
        ["apply", str(plan), "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--dry-run",
         "--timeout", "5"],
    ):  # fmt: skip
        code = main(command)
        out, err = capsys.readouterr()
        assert code != 0, (command, out, err)
        assert secret not in out + err, (command, out, err)


def test_javas_defaults_and_shared_producer_settings_are_left_out_named_and_python_objects_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """helper 126: Java's own defaults for settings refused otherwise were refused; acks went unnamed; a key of
    confluent-kafka's for a Python object (stats_cb) ended in a traceback."""
    defaults = {
        "config.providers": "",
        "bootstrap.controllers": "",
        "sasl.oauthbearer.jwt.retriever.class": "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
        "acks": "all",
    }
    assert java_refusal(defaults) is None
    said = notice("f", defaults, takes_timeout=True)
    assert said is not None
    assert re.findall(r"([\w.]+) \(", said) == list(defaults), said
    config = tmp_path / "client.properties"
    config.write_text("stats_cb=x\n")
    code = main(["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.splitlines()[-1].endswith(": stats_cb is confluent-kafka's for a Python object, which a properties "
                                         "file cannot give"), err  # fmt: skip


def test_an_oidc_urls_credentials_and_the_basic_header_of_the_client_secret_are_hidden() -> None:
    """helper 127: the token endpoint's reply, quoted by librdkafka, held the URL's query and the HTTP Basic header of
    client id and secret, pieces the whole URL's hiding does not find. A URL's host carries no credential: shown."""
    redact = Redactor(
        [
            {
                "sasl.oauthbearer.token.endpoint.url": "http://bob:UrlPassw0rd@idp.invalid/tok?k=UrlTok3nXYZ",
                "sasl.oauthbearer.client.id": "alice",
                "sasl.oauthbearer.client.secret": "Hunter2Sekr1t",
            }
        ]
    )
    said = redact(
        "/tok?k=UrlTok3nXYZ Basic YWxpY2U6SHVudGVyMlNla3IxdA== UrlPassw0rd; Could not resolve host: idp.invalid"
    )
    assert said == "/tok?[hidden] Basic [hidden] [hidden]; Could not resolve host: idp.invalid"
