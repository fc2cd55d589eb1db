"""``throttled-admin topics`` end to end: subprocesses against QuotaBroker over loopback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli, topics
from tests.support import REPO, BrokerFactory
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.cli._args import UNSUPPORTED
from throttled_admin.testing import QuotaBroker

QUOTA_LINE = "Error while executing topic command : The throttling quota has been exceeded."


def _exhaust(broker: QuotaBroker, partitions: int) -> None:
    """Spend the default user's bucket with one create (admitted while tokens >= 0, as KIP-599 strict)."""
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        for future in admin.create_topics([NewTopic("exhaust", partitions, 1)]).values():
            future.result(timeout=30)


def _quota_rejections(broker: QuotaBroker, topic: str) -> int:
    return sum(1 for r in broker.request_log() if r.errors.get(topic) == 89)


def test_create_describe_list_alter_delete(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    bootstrap = broker.bootstrap_servers

    created = topics(
        bootstrap,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=60000",
        "--config",
        "cleanup.policy = compact",
    )
    assert created.returncode == 0, created.output
    assert created.stdout == "Created topic orders.\n"
    assert broker.topics()["orders"] == 3

    dotted = topics(bootstrap, "--create", "--topic", "orders.eu", "--partitions", "1")
    assert dotted.returncode == 0, dotted.output
    assert dotted.stdout.startswith("WARNING: Due to limitations in metric names")
    assert dotted.stdout.endswith("Created topic orders.eu.\n")
    broker.create_topic("payments", 2)

    listed = topics(bootstrap, "--list")
    assert listed.returncode == 0, listed.output
    assert listed.stdout.splitlines() == ["orders", "orders.eu", "payments"]
    assert topics(bootstrap, "--list", "--topic", "orders.*").stdout.splitlines() == ["orders", "orders.eu"]

    described = topics(bootstrap, "--describe", "--topic", "orders")
    assert described.returncode == 0, described.output
    lines = described.stdout.splitlines()
    assert re.fullmatch(
        r"Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\tReplicationFactor: 1\t"
        r"Configs: min.insync.replicas=1,cleanup.policy=compact,retention.ms=60000",  # kafka-topics.sh's order
        lines[0],
    ), lines[0]
    assert lines[1:] == [
        f"\tTopic: orders\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A\tLastKnownElr: N/A"
        for p in range(3)
    ]

    # kafka-topics.sh sends a count below 1 and Kafka refuses it; librdkafka cannot send it: the same words
    not_more = topics(bootstrap, "--alter", "--topic", "orders.*", "--partitions", "0")
    assert (not_more.returncode, not_more.stderr) == (1, "")
    assert not_more.stdout == (
        "Error while executing topic command : The topic orders currently has 3 partition(s); 0 would not be an "
        "increase.\n"
    )
    not_more_json = topics(bootstrap, "--alter", "--topic", "orders.*", "--partitions", "-1", "--output", "json")
    refusal = "The topic {} currently has {} partition(s); -1 would not be an increase."
    assert [json.loads(line) for line in not_more_json.stdout.splitlines()] == [
        {"topic": name, "operation": "alter", "status": "failed", "error_code": None,
         "error_name": "INVALID_PARTITIONS", "error_message": refusal.format(name, count), "throttle_time_ms": None}
        for name, count in (("orders", 3), ("orders.eu", 1))
    ]  # fmt: skip
    altered = topics(bootstrap, "--alter", "--topic", "orders", "--partitions", "5")
    assert altered.returncode == 0, altered.output
    assert altered.stdout == ""  # kafka-topics.sh prints nothing on a successful alter
    assert broker.topics()["orders"] == 5
    as_json = topics(bootstrap, "--describe", "--topic", "orders", "--output", "json")
    record = json.loads(as_json.stdout)
    assert record["partition_count"] == 5
    assert record["configs"] == {"cleanup.policy": "compact", "min.insync.replicas": "1", "retention.ms": "60000"}
    assert [p["partition"] for p in record["partitions"]] == [0, 1, 2, 3, 4]

    # --topic is a regex for delete, matched against the whole name.
    deleted = topics(bootstrap, "--delete", "--topic", "orders.*", "--output", "json")
    assert deleted.returncode == 0, deleted.output
    records = [json.loads(line) for line in deleted.stdout.splitlines()]
    assert [(r["topic"], r["status"]) for r in records] == [("orders", "deleted"), ("orders.eu", "deleted")]
    assert set(broker.topics()) == {"payments"}


def test_missing_topic_fails_unless_if_exists(quota_broker: BrokerFactory) -> None:
    bootstrap = quota_broker().bootstrap_servers
    missing = topics(bootstrap, "--delete", "--topic", "nope")
    assert missing.returncode == 1
    assert "Error while executing topic command : Topic 'nope' does not exist as expected" in missing.stdout
    assert topics(bootstrap, "--delete", "--topic", "nope", "--if-exists").returncode == 0
    assert topics(bootstrap, "--alter", "--topic", "nope", "--partitions", "3", "--if-exists").returncode == 0


def test_if_not_exists_on_an_existing_topic_exits_0(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.create_topic("events", 1)
    plain = topics(broker.bootstrap_servers, "--create", "--topic", "events", "--partitions", "1")
    assert plain.returncode == 1
    assert plain.stdout == "Error while executing topic command : Topic 'events' already exists.\n"
    tolerant = topics(broker.bootstrap_servers, "--create", "--topic", "events", "--partitions", "1", "--if-not-exists")
    assert tolerant.returncode == 0, tolerant.output
    assert tolerant.stdout == ""
    # As kafka-topics.sh: the request is still sent.
    assert sum(1 for r in broker.request_log() if r.api_name == "CreateTopics") == 2


def test_exhausted_quota_fails_at_once_with_the_throttle_time(quota_broker: BrokerFactory) -> None:
    # Burst 1 x 1 s x 0.5/s = 0.5 tokens: a 6-partition create leaves -5.5, an 11000 ms throttle (ample
    # time for the command to start, however loaded the machine).
    broker = quota_broker(enforcement="strict", controller_mutation_rate=0.5, quota_window_num=1)
    _exhaust(broker, 6)
    run = topics(broker.bootstrap_servers, "--create", "--topic", "late", "--partitions", "1")
    assert run.returncode == 1, run.output
    lines = run.stdout.splitlines()
    assert lines[0] == QUOTA_LINE
    retry_after = re.fullmatch(r"Retry after (\d+) ms\.", lines[1])
    assert retry_after, lines
    assert 0 < int(retry_after.group(1)) <= 11000
    assert _quota_rejections(broker, "late") == 1
    assert "late" not in broker.topics()

    as_json = topics(broker.bootstrap_servers, "--create", "--topic", "late", "--partitions", "1", "--output", "json")
    record = json.loads(as_json.stdout)
    assert as_json.returncode == 1
    assert record["status"] == "failed"
    assert record["error_name"] == "THROTTLING_QUOTA_EXCEEDED"
    assert record["error_code"] == 89
    assert 0 < record["throttle_time_ms"] <= 11000


def test_retry_on_quota_violation_waits_and_succeeds(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(enforcement="strict", controller_mutation_rate=0.5, quota_window_num=1)
    _exhaust(broker, 3)
    run = topics(
        broker.bootstrap_servers, "--create", "--topic", "late", "--partitions", "1", "--retry-on-quota-violation"
    )
    assert run.returncode == 0, run.output
    assert run.stdout == "Created topic late.\n"
    assert broker.topics()["late"] == 1
    # It was rejected first and re-sent after the throttle, not lucky with a refilled bucket.
    assert _quota_rejections(broker, "late") >= 1


def test_retry_gives_up_at_timeout_ms_with_the_remaining_throttle(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(enforcement="strict", controller_mutation_rate=0.5, quota_window_num=1)
    _exhaust(broker, 11)  # -10.5 tokens: a 21 s throttle, far past the 2 s deadline
    run = topics(
        broker.bootstrap_servers,
        "--create",
        "--topic",
        "late",
        "--partitions",
        "1",
        "--retry-on-quota-violation",
        "--timeout-ms",
        "2000",
    )
    assert run.returncode == 1, run.output
    assert run.stdout.splitlines()[0] == QUOTA_LINE
    assert re.fullmatch(r"Retry after \d+ ms\.", run.stdout.splitlines()[1])
    assert run.elapsed_s < 20  # it did not sleep out the 21 s throttle


@pytest.mark.parametrize("given", [False, True], ids=["file's", "--timeout-ms over the file's"])
def test_the_command_configs_default_api_timeout_is_the_deadline_unless_timeout_ms_is_given(
    quota_broker: BrokerFactory, tmp_path: Path, given: bool
) -> None:
    """kafka-topics.sh's calls end at the Admin client's default.api.timeout.ms, which a --command-config file may
    set; librdkafka refused it ("No such configuration property") and the command failed before sending."""
    broker = quota_broker(enforcement="strict", controller_mutation_rate=0.5, quota_window_num=1)
    _exhaust(broker, 21)  # -20.5 tokens: a 41 s throttle
    config = tmp_path / "client.properties"
    config.write_text(f"default.api.timeout.ms={600000 if given else 30000}\n")  # (Java's least: request.timeout.ms)
    timeout = ["--timeout-ms", "30000"] if given else []
    run = topics(broker.bootstrap_servers, "--command-config", str(config), "--create", "--topic", "late",
                 "--partitions", "1", "--retry-on-quota-violation", *timeout)  # fmt: skip
    assert run.returncode == 1, run.output
    assert run.stdout.splitlines()[0] == QUOTA_LINE  # the throttle outlasts the deadline: not waited out
    deadline = "--timeout-ms 30000" if given else "--command-config's default.api.timeout.ms 30000"
    assert re.search(rf"The broker's throttle \(\d+ ms\) outlasts {deadline}:", run.stdout), run.stdout
    assert run.stderr == ""  # nothing of the file left out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "exactly one action"),
        (["--list", "--describe"], "exactly one action"),
        (["--create"], 'Missing required argument "[topic]"'),
        (["--list", "--config", "a=b"], 'Option "[config]" can\'t be used with option "[list]"'),
        (["--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"], "kafka-configs"),
        (["--alter", "--topic", "t"], 'Missing required argument "[partitions]"'),
        (["--create", "--topic", "t", "--partitions", "x"], "Cannot parse argument 'x' of option partitions"),
        # An adversarial run against kafka-topics.sh (helper 119): argparse kept the last of a repeated option (a
        # delete of a, b deleted b), int() took 1_0 for 10 and ' 3', and 2**31 ended in a traceback (OverflowError).
        (["--delete", "--topic", "a", "--topic", "b"], "Found multiple arguments for option topic, but you asked for"),
        (["--create", "--topic", "t", "--partitions", "1", "--partitions", "2"], "option partitions, but you asked"),
        (["--list", "--bootstrap-server", "127.0.0.1:9"], "for option bootstrap-server, but you asked for only one"),
        (["--create", "--topic", "t", "--partitions", "1_0"], "Cannot parse argument '1_0' of option partitions"),
        (["--create", "--topic", "t", "--partitions", " 3"], "Cannot parse argument ' 3' of option partitions"),
        (["--create", "--topic", "t", "--replication-factor", "2147483648"], "of option replication-factor"),
        (["--alter", "--topic", "t", "--partitions", str(10**20)], f"Cannot parse argument '{10**20}' of option"),
        (["--list", "--timeout-ms", "2147483648"], "must be > 0 and at most 3600000 (an hour), got 2147483648"),
        (["--describe", "--timeout-ms", "3600001"], "at most 3600000 (an hour), got 3600001"),  # (describe's limit)
        (["--create", "--topic", "t", "--replica-assignment", "0:1,-1:-1"], "may not contain duplicate entries: -1"),
        # a broker id librdkafka cannot send, of the partition it is for (was "replica_assignment[0] has a broker id
        # outside 0..2147483647", counting the new partitions of an alter only, helper 119)
        (
            ["--alter", "--topic", "t", "--partitions", "3", "--replica-assignment", "0,0,-5"],
            "partition 2: broker id -5",
        ),
        (["--create", "--topic", "t", "--replica-assignment", "0:1_0"], "partition 0: broker ids must be integers"),
        (
            ["--create", "--topic", "t", "--replica-assignment", "0:1,1", "--if-not-exists"],
            "Partition 1 has different replication factor",
        ),
        (["--create", "--topic", "t", "--replica-assignment", "0:1", "--partitions", "2"], "can't be used"),
        (["--create", "--topic", "t", "--config", "retention.ms="], 'format "key=val"'),
        (["--describe", "--topic", "a(b"], "invalid regex"),
        (["--create", "--topic", "t", "--output", "yaml"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_usage(args: list[str], message: str) -> None:
    # No broker: argument errors are found before anything is sent (127.0.0.1:9 would refuse).
    run = topics("127.0.0.1:9", *args, timeout_s=60)
    assert run.returncode == 2, run.output
    assert run.stderr.startswith("usage: throttled-admin topics"), run.stderr
    assert message in run.stderr
    assert run.stdout == ""


def test_kafka_topics_options_not_supported_are_named_so_not_matched_to_a_near_one() -> None:
    """An adversarial run against kafka-topics.sh (helper 119): --delete-config was "did you mean --delete?", an
    option that deletes the topic. docs/cli.md's list of them is the code's."""
    run = topics("127.0.0.1:9", "--alter", "--topic", "t", "--partitions", "3", "--delete-config", "retention.ms")
    assert run.returncode == 2, run.output
    said = "(--delete-config: kafka-topics.sh's, not supported by throttled-admin)"
    assert run.stderr.splitlines()[-1].endswith(said), run.stderr
    assert "did you mean" not in run.stderr
    [row] = [line for line in (REPO / "docs" / "cli.md").read_text().splitlines() if line.startswith("| not supported")]
    assert tuple(re.findall(r"`(--[\w-]+)`", row)) == UNSUPPORTED
    typo = topics("127.0.0.1:9", "--list", "--exclude-internl")
    assert "(did you mean --exclude-internal?)" in typo.stderr, typo.stderr


def test_missing_bootstrap_server_and_command_exit_2() -> None:
    no_bootstrap = run_cli("topics", "--list")
    assert no_bootstrap.returncode == 2
    assert "--bootstrap-server must be specified" in no_bootstrap.stderr
    no_command = run_cli()
    assert no_command.returncode == 2
    assert no_command.stderr.startswith("usage: throttled-admin")
    unreadable = run_cli("topics", "--bootstrap-server", "127.0.0.1:9", "--list", "--command-config", "/nonexistent")
    assert unreadable.returncode == 2
    assert "/nonexistent: cannot read" in unreadable.stderr


def _sasl_properties(tmp_path: Path, password: str, *, jaas: bool) -> str:
    path = tmp_path / "client.properties"
    if jaas:
        body = (
            "# kafka-topics.sh's own client config works unchanged\n"
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
            f'    username="alice" password="{password}";\n'
        )
    else:
        body = (
            f"! librdkafka names\nsecurity.protocol: SASL_PLAINTEXT\nsasl.mechanism PLAIN\n"
            f"sasl.username=alice\nsasl.password={password}\n"
        )
    path.write_text(body)
    return str(path)


@pytest.mark.parametrize("jaas", [False, True], ids=["librdkafka-keys", "jaas-config"])
def test_command_config_authenticates(quota_broker: BrokerFactory, tmp_path: Path, jaas: bool) -> None:
    broker = quota_broker(users={"alice": "right"})
    config = _sasl_properties(tmp_path, "right", jaas=jaas)
    run = topics(broker.bootstrap_servers, "--command-config", config, "--create", "--topic", "t", "--partitions", "1")
    assert run.returncode == 0, run.output
    assert broker.topics() == {"t": 1}
    assert {r.principal for r in broker.request_log() if r.api_name == "CreateTopics"} == {"alice"}


@pytest.mark.parametrize(
    ("jaas", "output", "command"),
    [
        (False, "text", ["--list"]),
        (True, "text", ["--create", "--topic", "t", "--partitions", "1"]),
        (False, "json", ["--create", "--topic", "t", "--partitions", "1"]),
        (True, "json", ["--describe"]),
    ],
)
def test_wrong_password_fails_within_seconds_without_the_password(
    quota_broker: BrokerFactory, tmp_path: Path, jaas: bool, output: str, command: list[str]
) -> None:
    broker = quota_broker(users={"alice": "right"})
    secret = "Wr0ng-Secret-7781"
    config = _sasl_properties(tmp_path, secret, jaas=jaas)
    run = topics(broker.bootstrap_servers, "--command-config", config, *command, "--output", output)
    assert run.returncode == 1, run.output
    assert "Authentication failed" in run.stdout, run.output
    assert secret not in run.output
    # The default timeout is 60 s; the authentication failure ends the command long before.
    assert run.elapsed_s < 30, run.elapsed_s
    assert broker.topics() == {}
    if output == "json":
        record = json.loads(run.stdout)
        assert record["status"] == "failed"
        assert record["error_name"] == "_AUTHENTICATION"
    else:
        assert run.stdout.startswith("Error while executing topic command : ")


@pytest.mark.parametrize("command", [["--list"], ["--create", "--topic", "t", "--partitions", "1"]])
def test_no_sasl_on_a_sasl_listener_fails_within_seconds_naming_security_protocol(
    quota_broker: BrokerFactory, command: list[str]
) -> None:
    """librdkafka only logs these disconnects; the client reads its log and the command stops at once."""
    broker = quota_broker(users={"alice": "right"})
    run = topics(broker.bootstrap_servers, *command)
    assert run.returncode == 1, run.output
    assert run.stdout.startswith("Error while executing topic command : "), run.output
    assert "the listener requires SASL authentication (it offers PLAIN)" in run.stdout, run.output
    assert "security.protocol is 'plaintext'" in run.stdout, run.output
    assert run.elapsed_s < 30, run.elapsed_s
    assert broker.topics() == {}


def test_replica_assignment_on_create_and_alter(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(num_brokers=3)
    bootstrap = broker.bootstrap_servers
    created = topics(bootstrap, "--create", "--topic", "placed", "--replica-assignment", "0:1,1:2")
    assert created.returncode == 0, created.output
    # kafka-topics.sh's alter syntax lists every partition; only the new one (partition 2) is sent.
    altered = topics(
        bootstrap, "--alter", "--topic", "placed", "--partitions", "3", "--replica-assignment", "0:1,1:2,2:0"
    )
    assert altered.returncode == 0, altered.output
    described = topics(bootstrap, "--describe", "--topic", "placed", "--output", "json")
    record = json.loads(described.stdout)
    assert record["replication_factor"] == 2
    assert [p["replicas"] for p in record["partitions"]] == [[0, 1], [1, 2], [2, 0]]
    assert [p["leader"] for p in record["partitions"]] == [0, 1, 2]
