"""``throttled-admin topics`` against the real kafka-topics.sh (Kafka 4.4's TopicCommand), same arguments, same
Apache Kafka broker: stdout, stderr and the exit code compared.

Each tool works on topics of its own (``java-...`` and ``ours-...`` under the test's prefix), so that neither
sees the other's changes; the names are then written as ``NAME``. What differs on purpose is applied as a named
transform, one per row of docs/cli.md's "Side by side with kafka-topics.sh" table, and nothing else may differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_helpers import topics
from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.real_kafka.tools import ToolServer

pytestmark = pytest.mark.kafka

# kafka-topics.sh logs every failure once more on stderr through log4j (tools-log4j2.yaml: WARN and above), as
# `[date] ERROR <Java exception class>: <message> (org.apache.kafka.tools.TopicCommand)`, with a stack trace for
# some. We print the message once, on stdout as it does (docs/cli.md: "other Kafka errors").
_LOG_RECORD = re.compile(r"^\[\d{4}-\d\d-\d\d [^\]]*\] (ERROR|WARN) .*?\(org\.apache\.kafka\.[\w.]+\)\n", re.S | re.M)


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    stdout: str
    stderr: str


def _java(tools: ToolServer, bootstrap: str, args: list[str]) -> Outcome:
    result = tools.kafka_topics("--bootstrap-server", bootstrap, *args)
    return Outcome(result.exit_code, result.stdout, _LOG_RECORD.sub("", result.stderr))


def _ours(bootstrap: str, args: list[str]) -> Outcome:
    run = topics(bootstrap, *args)
    return Outcome(run.returncode, run.stdout, run.stderr)


def _side_by_side(
    tools: ToolServer, bootstrap: str, ns: KafkaNamespace, *args: str
) -> tuple[Outcome, Outcome, dict[str, str]]:
    """Run ``args`` with ``{t}`` standing for each tool's own topic name; both outcomes with names as NAME."""
    names = {"java": ns.topic("java"), "ours": ns.topic("ours")}
    outcomes = []
    for who in ("java", "ours"):
        concrete = [a.replace("{t}", names[who]) for a in args]
        outcome = _java(tools, bootstrap, concrete) if who == "java" else _ours(bootstrap, concrete)
        outcomes.append(_named(outcome, names[who]))
    return outcomes[0], outcomes[1], names


def _named(outcome: Outcome, name: str) -> Outcome:
    return Outcome(outcome.exit_code, outcome.stdout.replace(name, "NAME"), outcome.stderr.replace(name, "NAME"))


def _no_topic_id(text: str) -> str:
    return re.sub(r"TopicId: [\w-]{22}", "TopicId: ID", text)


# docs/cli.md "`--describe` layout": librdkafka does not report ELR, so we print N/A rather than a guess.
def _elr_as_na(text: str) -> str:
    return re.sub(r"Elr: [^\t\n]*\tLastKnownElr: [^\t\n]*", "Elr: N/A\tLastKnownElr: N/A", text)


CASES = [
    # (what, args run by both; {t} is each tool's own topic)
    ("create with partitions, replication factor and configs", ["--create", "--topic", "{t}", "--partitions", "3",
     "--replication-factor", "1", "--config", "retention.ms=60000", "--config", "cleanup.policy=compact"]),
    ("create again: already exists", ["--create", "--topic", "{t}"]),
    ("create --if-not-exists on an existing topic", ["--create", "--topic", "{t}", "--if-not-exists"]),
    # kafka-topics.sh checks configs before it sends: a misspelt name was hidden by --if-not-exists (helper 119)
    ("an unknown config, --if-not-exists, an existing topic", ["--create", "--topic", "{t}", "--if-not-exists",
     "--config", "no.such.config=1"]),
    ("a config value of the wrong type, an existing topic", ["--create", "--topic", "{t}", "--config",
     "retention.ms=abc"]),
    ("two bad values: LogConfig's order", ["--create", "--topic", "{t}", "--config", "segment.bytes=x", "--config",
     "retention.ms=y"]),
    ("conflicting compaction lags, --if-not-exists, an existing topic (review 120)", ["--create", "--topic", "{t}",
     "--if-not-exists", "--config", "min.compaction.lag.ms=10", "--config", "max.compaction.lag.ms=5"]),
    ("create with a dotted name warns about metric names", ["--create", "--topic", "{t}.eu"]),
    ("alter --partitions", ["--alter", "--topic", "{t}", "--partitions", "5"]),
    ("alter to fewer partitions", ["--alter", "--topic", "{t}", "--partitions", "2"]),
    ("alter --partitions 0: not an increase", ["--alter", "--topic", "{t}", "--partitions", "0"]),
    ("alter --partitions -1: not an increase", ["--alter", "--topic", "{t}.*", "--partitions", "-1"]),
    ("list by regex", ["--list", "--topic", "{t}.*"]),
    ("describe a missing topic", ["--describe", "--topic", "{t}-missing"]),
    ("describe a missing topic --if-exists", ["--describe", "--topic", "{t}-missing", "--if-exists"]),
    ("delete a missing topic", ["--delete", "--topic", "{t}-missing"]),
    ("delete a missing topic --if-exists", ["--delete", "--topic", "{t}-missing", "--if-exists"]),
    ("alter a missing topic", ["--alter", "--topic", "{t}-missing", "--partitions", "4"]),
    ("replication factor above the brokers", ["--create", "--topic", "{t}-rf", "--replication-factor", "3"]),
    # Java's String.split drops a trailing empty part (review 120: refused here)
    ("a replica assignment with a trailing comma", ["--create", "--topic", "{t}-ra", "--replica-assignment", "0:,"]),
    ("a config value of the wrong type", ["--create", "--topic", "{t}-cfg", "--config", "retention.ms=abc"]),
    ("an unknown config", ["--create", "--topic", "{t}-cfg", "--config", "no.such.config=1"]),
    ("an invalid topic name", ["--create", "--topic", "bad name!"]),
    ("delete", ["--delete", "--topic", "{t}"]),
    ("delete the dotted one", ["--delete", "--topic", "{t}.eu"]),
]  # fmt: skip


def test_the_same_commands_print_the_same_and_exit_the_same(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace
) -> None:
    """One sequence of commands over the topics' whole life: every step identical on both tools."""
    bootstrap = kafka_broker.bootstrap_servers
    for what, args in CASES:
        java, ours, _ = _side_by_side(kafka_tools, bootstrap, kafka_ns, *args)
        assert ours == java, what


def test_describe_prints_kafka_topics_layout(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace
) -> None:
    """Configs in TopicCommand's order (its Config's HashMap), not by name; segment.bytes, retention.ms and
    compression.gzip.level share a bucket of that map."""
    bootstrap = kafka_broker.bootstrap_servers
    overrides = ["retention.ms=60000", "cleanup.policy=compact", "segment.index.bytes=65536", "segment.bytes=1048576",
                 "compression.gzip.level=5", "max.message.bytes=2000000"]  # fmt: skip
    create = ["--create", "--topic", "{t}", "--partitions", "3", *(a for c in overrides for a in ("--config", c))]
    _side_by_side(kafka_tools, bootstrap, kafka_ns, *create)
    java, ours, _ = _side_by_side(kafka_tools, bootstrap, kafka_ns, "--describe", "--topic", "{t}")
    assert java.exit_code == ours.exit_code == 0
    assert java.stdout.startswith("Topic: NAME\tTopicId: ")
    order = "min.insync.replicas=1,cleanup.policy=compact,segment.bytes=1048576,retention.ms=60000,"
    assert f"\tConfigs: {order}" in java.stdout
    assert _no_topic_id(ours.stdout) == _elr_as_na(_no_topic_id(java.stdout))
    assert ours.stderr == java.stderr == ""


def test_bad_arguments_say_the_same_but_exit_2(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace
) -> None:
    """docs/cli.md "bad arguments": the same message; we exit 2 with our usage on stderr (argparse's convention),
    where kafka-topics.sh exits 1 (a value it checks itself is printed on stdout, an option clash on stderr
    with its usage)."""
    bootstrap = kafka_broker.bootstrap_servers
    for args, message in (
        (["--create", "--topic", "{t}", "--partitions", "0"], "The partitions must be greater than 0"),
        (["--list", "--config", "a=b"], 'Option "[config]" can\'t be used with option "[list]"'),
        # helper 119: argparse kept the last of a repeated option (a delete of two topics deleted the second), and
        # read 1_0 as 10 and 2**31 as a value that ended in a traceback
        (
            ["--delete", "--topic", "{t}", "--topic", "{t}.b"],
            "Found multiple arguments for option topic, but you asked for only one",
        ),
        (["--create", "--topic", "{t}", "--partitions", "1_0"], "Cannot parse argument '1_0' of option partitions"),
        (
            ["--create", "--topic", "{t}", "--partitions", "2147483648"],
            "Cannot parse argument '2147483648' of option partitions",
        ),
    ):
        java, ours, _ = _side_by_side(kafka_tools, bootstrap, kafka_ns, *args)
        assert (java.exit_code, ours.exit_code) == (1, 2)
        assert message in java.stdout + java.stderr
        assert ours.stdout == ""
        assert ours.stderr.splitlines()[-1] == f"throttled-admin topics: error: {message}"


def _command_config(tmp_path: Path, who: str, client_id: str, **props: str) -> str:
    path = tmp_path / f"{who}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in {"client.id": client_id, **props}.items()))
    return str(path)


def test_over_the_quota_kafka_topics_is_refused_and_we_are_admitted_and_warned(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace, tmp_path: Path
) -> None:
    """docs/cli.md "quota violation": TopicCommand sends CreateTopics v7, which Kafka refuses with error 89
    once the principal's bucket is below zero; librdkafka sends v4, which Kafka admits and throttles. Each tool
    has its own client-id entity at 1 mutation/s (burst 11)."""
    bootstrap = kafka_broker.bootstrap_servers
    outcomes: dict[str, list[Outcome]] = {}
    for who in ("java", "ours"):
        client_id = f"{kafka_ns.client_id}-{who}"
        kafka_broker.set_quota(client_id=client_id, controller_mutation_rate=1)
        config = _command_config(tmp_path, who, client_id)
        runs = []
        for name, partitions in ((f"{who}-a", "20"), (f"{who}-b", "1")):
            args = ["--command-config", config, "--create", "--topic", kafka_ns.topic(name), "--partitions", partitions]
            outcome = _java(kafka_tools, bootstrap, args) if who == "java" else _ours(bootstrap, args)
            runs.append(_named(outcome, kafka_ns.topic(name)))
        outcomes[who] = runs
    java, ours = outcomes["java"], outcomes["ours"]
    # The first create fits the burst's check (tokens >= 0 before it) on both, and drives the bucket to -9.
    assert java[0] == Outcome(0, "Created topic NAME.\n", "")
    assert ours[0].exit_code == 0
    assert ours[0].stdout.startswith("Created topic NAME.\n")
    assert re.fullmatch(r"WARNING: The broker applied this change over the principal's controller mutation quota "
                        r"and throttled the connection: .* Retry after \d+ ms\.\n",
                        ours[0].stdout.split("\n", 1)[1])  # fmt: skip
    # The second: refused with error 89 to the strict client, admitted and throttled for ours.
    assert java[1] == Outcome(1, "Error while executing topic command : The throttling quota has been exceeded.\n", "")
    assert ours[1].exit_code == 0
    assert ours[1].stdout.startswith("Created topic NAME.\nWARNING: ")
    admin_topics = set(kafka_broker.topics(kafka_ns.prefix))  # behind a barrier: Metadata lags the controller
    assert kafka_ns.topic("java-b") not in admin_topics
    assert kafka_ns.topic("ours-b") in admin_topics


def test_sasl_command_config_works_the_same_and_a_wrong_password_fails_on_both(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace, tmp_path: Path
) -> None:
    sasl = kafka_broker.sasl_bootstrap_servers
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="{}";'
    good = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": jaas.format("alice-secret"),
    }
    bad = good | {"sasl.jaas.config": jaas.format("not-the-password")}
    for who, props, expect_exit in (("good", good, 0), ("bad", bad, 1)):
        config_java = _command_config(tmp_path, f"java-{who}", kafka_ns.client_id, **props)
        config_ours = _command_config(tmp_path, f"ours-{who}", kafka_ns.client_id, **props)
        java = _named(
            _java(
                kafka_tools,
                sasl,
                ["--command-config", config_java, "--create", "--topic", kafka_ns.topic(f"java-{who}")],
            ),
            kafka_ns.topic(f"java-{who}"),
        )
        ours = _named(_ours(sasl, ["--command-config", config_ours, "--create", "--topic",
                                   kafka_ns.topic(f"ours-{who}")]), kafka_ns.topic(f"ours-{who}"))  # fmt: skip
        assert (java.exit_code, ours.exit_code) == (expect_exit, expect_exit), (java, ours)
        if expect_exit == 0:
            assert ours == java
        else:
            # Both name the authentication failure; neither prints the password.
            assert "Authentication failed" in java.stdout
            assert "Authentication failed" in ours.stdout
            assert "not-the-password" not in java.stdout + java.stderr + ours.stdout + ours.stderr


# A kafka-topics.sh command-config file with the Java Admin client's own tuning (helper 119's finding: librdkafka
# refused the first such setting, "No such configuration property", where TopicCommand ran).
_JAVA_TUNING = {
    "default.api.timeout.ms": "120000",
    "receive.buffer.bytes": "65536",
    "send.buffer.bytes": "-1",
    "metrics.num.samples": "2",
    "metrics.recording.level": "INFO",
    "socket.connection.setup.timeout.max.ms": "30000",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "sasl.login.refresh.buffer.seconds": "300",
}


def test_a_command_config_with_the_java_clients_tuning_works_on_both_and_we_name_what_we_leave_out(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    outcomes = {}
    for who in ("java", "ours"):
        config = _command_config(tmp_path, who, kafka_ns.client_id, **_JAVA_TUNING)
        args = ["--command-config", config, "--create", "--topic", kafka_ns.topic(who), "--partitions", "2"]
        outcome = _java(kafka_tools, bootstrap, args) if who == "java" else _ours(bootstrap, args)
        outcomes[who] = _named(outcome, kafka_ns.topic(who))
    java, ours = outcomes["java"], outcomes["ours"]
    assert java == Outcome(0, "Created topic NAME.\n", ""), java
    assert (ours.exit_code, ours.stdout) == (0, "Created topic NAME.\n"), ours
    left_out = [key for key in _JAVA_TUNING if key != "default.api.timeout.ms"]  # (that one is --timeout-ms)
    warning = ours.stderr.splitlines()
    assert len(warning) == 1, ours.stderr
    assert warning[0].startswith("WARNING: --command-config "), ours.stderr
    assert re.findall(r"([\w.]+) \(", warning[0].split("not passed to librdkafka: ", 1)[1]) == left_out, warning
    assert kafka_broker.topics(kafka_ns.prefix) == {kafka_ns.topic("java"): 2, kafka_ns.topic("ours"): 2}
