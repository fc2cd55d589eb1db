"""The command line as a person meets it (issue 20): each finding, run as a subprocess against QuotaBroker.

Times are measured and printed (``pytest -s`` shows them), never asserted: the assertions are on what the
person reads.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.cli_helpers import REPO, Run, broker_banner, run_cli, topics
from tests.support import BrokerFactory
from throttled_admin import ThrottledAdminClient

if TYPE_CHECKING:
    from throttled_admin.provisioning import Progress

SECRET = "Pw-issue20-771"


def _records(run: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]


def _report(what: str, run: Run) -> None:
    print(f"[timing] {what}: {run.elapsed_s:.2f} s, exit {run.returncode}")


def _plan(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(rows))
    return path


# -- 1. a wrong address: fast, and says which address and why -------------------------------------------------


@pytest.mark.parametrize("action", [["--create", "--topic", "x", "--partitions", "1"], ["--list"]])
def test_topics_with_nothing_listening_says_cannot_connect(action: list[str], refused_address: str) -> None:
    address = refused_address
    run = topics(address, *action)
    _report(f"topics {action[0]} refused", run)
    assert run.returncode == 1
    assert "Error while executing topic command : " in run.stdout
    assert f"cannot connect to {address} (" in run.stdout
    assert "Connection refused" in run.stdout
    assert "outcome unknown" not in run.output


def test_topics_with_an_unresolvable_host_says_cannot_connect() -> None:
    run = topics("nosuchhost.invalid:9092", "--describe")
    _report("topics --describe unresolvable", run)
    assert run.returncode == 1
    assert "cannot connect to nosuchhost.invalid:9092 (Failed to resolve" in run.stdout


def test_a_malformed_bootstrap_server_is_a_usage_error() -> None:
    for command in (["topics", "--list"], ["apply", "plan.json"]):
        run = run_cli(command[0], "--bootstrap-server", "localhost9092", *command[1:])
        assert run.returncode == 2, run.output
        assert "Invalid url in bootstrap.servers: localhost9092 (expected HOST:PORT)" in run.stderr
        assert f"usage: throttled-admin {command[0]}" in run.stderr


def test_a_bootstrap_entry_of_another_protocol_than_security_protocol_fails_at_once_saying_so(
    tmp_path: Path,
) -> None:
    """Found by a new user's run (helper 104): `--bootstrap-server SSL://HOST:PORT` (a listener's string, copied) with
    security.protocol plaintext waited out --timeout-ms (60 s) and said "no broker had answered this client":
    librdkafka drops an entry whose protocol is not security.protocol's, saying so only in its log. The client refuses
    such conf, naming the entry and the setting, before anything is sent; `topics`, `apply` and its rows alike."""
    told = "bootstrap.servers: 'SSL://127.0.0.1:9' names SSL, but security.protocol is plaintext"
    run = topics("SSL://127.0.0.1:9", "--list", "--timeout-ms", "60000")
    assert run.returncode == 1, run.output
    assert f"Error while executing topic command : {told}" in run.stdout, run.output
    web = topics("http://127.0.0.1:9", "--create", "--topic", "x", "--timeout-ms", "60000")
    assert "bootstrap.servers: 'http://127.0.0.1:9': 'http' is not a Kafka protocol" in web.stdout, web.output
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "create", "topic": "t"}])
    applied = run_cli("apply", str(plan), "--bootstrap-server", "SSL://127.0.0.1:9", "--output", "json")
    *rows, _ = _records(applied)
    assert [r["status"] for r in rows] == ["failed"], rows
    assert told in rows[0]["error_message"], rows
    with_tls = ThrottledAdminClient({"bootstrap.servers": "ssl://127.0.0.1:9", "security.protocol": "SSL"})
    with_tls.close()  # the protocol it names: accepted, whatever its case


def test_apply_with_nothing_listening_fails_each_row_with_the_reason_and_stays_quiet(
    tmp_path: Path, refused_address: str
) -> None:
    address = refused_address
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "create", "topic": f"t{i}"} for i in range(3)])
    run = run_cli("apply", str(plan), "--bootstrap-server", address, "--output", "json")
    _report("apply refused", run)
    assert run.returncode == 1
    *rows, summary = _records(run)
    assert [r["status"] for r in rows] == ["failed"] * 3
    assert all(r["error_message"].startswith(f"not sent: cannot connect to {address} (") for r in rows), rows
    assert {r["error_code"] for r in rows} == {-195}, rows  # librdkafka's _TRANSPORT, as the client core says
    assert {r["error_name"] for r in rows} == {"_TRANSPORT"}, rows  # its name, as apply_plan's rows (was UNKNOWN_ERROR)
    assert summary["connection_problems"]["dev"].startswith(f"cannot connect to {address}")
    # Quiet as `topics`: no librdkafka log lines, one summary line of the connection problems.
    assert "%3|" not in run.stderr, run.stderr
    assert "FAIL|rdkafka" not in run.stderr, run.stderr
    problems = [line for line in run.stderr.splitlines() if "connection problems" in line]
    assert problems == [
        f"throttled-admin apply: connection problems: dev: cannot connect to {address} "
        f"(Connect to ipv4#{address} failed: Connection refused) (3 rows not sent)"
    ], run.stderr


# -- 2. a wrong password in apply: as fast and as clear as in topics ------------------------------------------


def test_apply_with_a_wrong_password_says_authentication_failed(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = quota_broker(users={"alice": SECRET})
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "create", "topic": "t1"}])
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(
        yaml.safe_dump(
            {
                "dev": {
                    "bootstrap.servers": broker.bootstrap_servers,
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.username": "alice",
                    "sasl.password": "not-" + SECRET,
                }
            }
        )
    )
    run = run_cli("apply", str(plan), "--profiles", str(profiles))
    _report("apply wrong password", run)
    assert run.returncode == 1
    assert "Authentication failed: Invalid username or password" in run.output
    assert "not sent: " in run.stdout
    assert "transport failure" not in run.output
    assert SECRET not in run.output
    assert "%3|" not in run.stderr


# -- 3. throttles shown ---------------------------------------------------------------------------------------


def test_a_create_admitted_over_the_quota_reports_the_throttle(quota_broker: BrokerFactory) -> None:
    # Apache's rules: librdkafka's CreateTopics v4 is admitted over the quota and throttled, never refused.
    broker = quota_broker(controller_mutation_rate=1, enforcement="by-version")
    first = topics(broker.bootstrap_servers, "--create", "--topic", "big", "--partitions", "20", "--output", "json")
    assert first.returncode == 0, first.output
    (record,) = _records(first)
    assert record["status"] == "created"
    assert record["throttle_time_ms"] > 0, record  # 20 mutations against a burst of 11 at 1/s
    second = topics(broker.bootstrap_servers, "--create", "--topic", "more", "--partitions", "5")
    assert second.returncode == 0, second.output
    assert second.stdout.startswith("Created topic more.\nWARNING: ")
    throttle = re.search(r"Retry after (\d+) ms\.$", second.stdout.strip())
    assert throttle is not None, second.stdout
    assert int(throttle.group(1)) > 0, second.stdout


def test_a_create_within_the_quota_reports_no_throttle(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=100)
    run = topics(broker.bootstrap_servers, "--create", "--topic", "small", "--partitions", "1", "--output", "json")
    assert _records(run)[0]["throttle_time_ms"] == 0
    text = topics(broker.bootstrap_servers, "--create", "--topic", "small2", "--partitions", "1")
    assert text.stdout == "Created topic small2.\n"


def test_retry_that_cannot_outlast_the_throttle_says_so(quota_broker: BrokerFactory) -> None:
    # A 189 s throttle: both runs below come long before it ends, however loaded the machine (a 9 s one had run out
    # by the second run, to the last token: refused with a throttle of 0 ms, as a strict Kafka refuses too).
    broker = quota_broker(controller_mutation_rate=1, enforcement="strict")
    assert topics(broker.bootstrap_servers, "--create", "--topic", "fill", "--partitions", "200").returncode == 0
    args = ("--create", "--topic", "late", "--partitions", "1", "--retry-on-quota-violation", "--timeout-ms", "2000")
    run = topics(broker.bootstrap_servers, *args)
    assert run.returncode == 1
    assert "Error while executing topic command : The throttling quota has been exceeded." in run.stdout
    assert "outlasts --timeout-ms 2000" in run.stdout
    json_run = topics(broker.bootstrap_servers, *args, "--output", "json")
    (record,) = _records(json_run)
    assert record["error_name"] == "THROTTLING_QUOTA_EXCEEDED"
    assert record["throttle_time_ms"] > 2000
    assert "outlasts --timeout-ms 2000" in record["hint"]


# -- 5. the dry run ---------------------------------------------------------------------------------------------


def test_the_dry_run_table_shows_the_predicted_duration_and_the_configs(
    quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    broker = quota_broker(controller_mutation_rate=5)
    rows = [
        {"cluster": "dev", "action": "create", "topic": f"t{i}", "partitions": 10, "configs": {"retention.ms": 1000}}
        for i in range(8)
    ]
    plan = _plan(tmp_path / "plan.json", rows)
    args = ("apply", str(plan), "--bootstrap-server", broker.bootstrap_servers, "--mutation-rate", "5", "--dry-run")
    run = run_cli(*args)
    assert run.returncode == 0, run.output
    # 80 mutations at 5/s from a full burst of 55: the last is admitted at (80 - 55) / 5 = 5 s.
    cells = run.stdout.replace("│", " ")
    assert re.search(r"^\s*dev\s+80\s+5\.0\s*$", cells, re.M), run.stdout
    assert re.search(r"^\s*total \(clusters in parallel\)\s+80\s+5\.0\s*$", cells, re.M), run.stdout
    assert "configs retention.ms=1000" in run.stdout, run.stdout
    json_run = run_cli(*args, "--output", "json")
    *records, summary = _records(json_run)
    assert summary["predicted_s"] == {"clusters": {"dev": 5.0}, "total": 5.0}
    assert records[0]["detail"] == (
        "create with 10 partitions, replication factor the broker's default; configs retention.ms=1000"
    )


def test_the_dry_run_names_one_partition_in_the_singular(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = quota_broker()
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "create", "topic": "one", "partitions": 1}])
    run = run_cli("apply", str(plan), "--bootstrap-server", broker.bootstrap_servers, "--dry-run", "--output", "json")
    assert _records(run)[0]["detail"].startswith("create with 1 partition, replication factor the broker's default")


def test_the_dry_run_flags_an_unknown_config(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = quota_broker()
    rows = [{"cluster": "dev", "action": "create", "topic": "typo", "configs": {"retention.msx": "1000"}}]
    plan = _plan(tmp_path / "plan.json", rows)
    base = ("apply", str(plan), "--bootstrap-server", broker.bootstrap_servers, "--dry-run")
    run = run_cli(*base, "--output", "json")
    (record,) = _records(run)[:-1]
    assert record["status"] == "failed", record
    assert "retention.msx" in record["error_message"], record
    table = run_cli(*base)
    assert table.returncode == 1
    assert "Failed rows" in table.stdout
    assert "retention.msx" in table.stdout


# -- 6. the final table's rate is over the time the rows took, not a burst ------------------------------------


def test_a_small_run_reads_as_within_the_quota(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = quota_broker(controller_mutation_rate=5)
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "create", "topic": f"s{i}"} for i in range(5)])
    run = run_cli("apply", str(plan), "--bootstrap-server", broker.bootstrap_servers, "--output", "json")
    assert run.returncode == 0, run.output
    (throttle,) = _records(run)[-1]["throttle"]
    # 5 mutations fit in the burst: over the quota's 11 s window that is at most 5/11 per second, not 57/s.
    assert throttle["mutations_admitted"] == 5
    assert throttle["mutations_per_s"] <= 5 / 11 + 1e-9, throttle


# -- 7. messages in the command line's own terms --------------------------------------------------------------


def test_a_refused_delete_names_the_flag(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = quota_broker()
    assert topics(broker.bootstrap_servers, "--create", "--topic", "keep", "--partitions", "1").returncode == 0
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "delete", "topic": "keep"}])
    run = run_cli("apply", str(plan), "--bootstrap-server", broker.bootstrap_servers)
    assert run.returncode == 1
    assert "--allow-delete" in run.stdout
    assert "allow_delete" not in run.output


def test_a_failed_delete_is_one_json_object_in_kafka_topics_words(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    text = topics(broker.bootstrap_servers, "--delete", "--topic", "nosuch")
    assert text.returncode == 1
    assert text.stdout == "Error while executing topic command : Topic 'nosuch' does not exist as expected\n"
    run = topics(broker.bootstrap_servers, "--delete", "--topic", "nosuch", "--output", "json")
    assert run.returncode == 1
    assert _records(run) == [
        {
            "topic": "nosuch",
            "operation": "delete",
            "status": "failed",
            "error_code": 3,
            "error_name": "UNKNOWN_TOPIC_OR_PART",
            "error_message": "Topic 'nosuch' does not exist as expected",
            "throttle_time_ms": None,
        }
    ]


def test_partitions_below_one_is_a_usage_error_for_create() -> None:
    """As kafka-topics.sh's own check (its --alter sends the count, and Kafka refuses it: test_cli_topics)."""
    run = topics("127.0.0.1:9", "--create", "--topic", "x", "--partitions", "-1")
    assert run.returncode == 2
    assert "throttled-admin topics: error: The partitions must be greater than 0" in run.stderr


def test_usage_errors_are_json_objects_under_output_json() -> None:
    run = topics("127.0.0.1:9", "--create", "--topic", "x", "--partitions", "0", "--output", "json")
    assert run.returncode == 2
    assert _records(run) == [
        {
            "status": "failed",
            "error_code": None,
            "error_name": "USAGE",
            "error_message": "The partitions must be greater than 0",
        }
    ]
    # Found by a new user's run (helper 104): a value of the wrong type printed nothing on stdout (argparse's own
    # check, before the arguments had parsed); either spelling of --output, topics and apply alike.
    for command in (
        ["topics", "--bootstrap-server", "127.0.0.1:9", "--create", "--topic", "x", "--partitions", "abc"],
        ["apply", "plan.json", "--bootstrap-server", "127.0.0.1:9", "--timeout", "soon"],
    ):
        for output in (["--output", "json"], ["--output=json"], ["--out", "json"]):  # (argparse takes --out too)
            run = run_cli(*command, *output)
            assert run.returncode == 2, run.output
            [record] = _records(run)
            assert record["error_name"] == "USAGE", record
            assert f"'{command[-1]}'" in record["error_message"], record  # the value it could not read
        last = run_cli(*command, "--output", "json", "--output", "table" if command[0] == "apply" else "text")
        assert last.returncode == 2, last.output
        assert last.stdout == "", last.output  # the last --output is the one argparse keeps


def test_apply_refuses_an_option_given_twice_before_reading_anything(tmp_path: Path) -> None:
    """Review 120: ``apply plan --bootstrap-server a:1 --bootstrap-server b:1`` applied the plan to b (argparse keeps
    the last), as ``topics --delete --topic a --topic b`` deleted b; both refuse it, in kafka-topics.sh's words."""
    for twice in (
        ["--bootstrap-server", "127.0.0.1:9", "--bootstrap-server", "127.0.0.1:10"],
        ["--bootstrap-server", "127.0.0.1:9", "--mutation-rate", "5", "--mutation-rate", "50"],
        ["--profiles", "a.yaml", "--profiles", "b.yaml"],
        ["--bootstrap-server", "127.0.0.1:9", "--timeout", "10", "--timeout", "20"],
    ):
        run = run_cli("apply", str(tmp_path / "missing-plan.json"), *twice)
        assert run.returncode == 2, run.output
        option = twice[-2].removeprefix("--")
        said = f"Found multiple arguments for option {option}, but you asked for only one"
        assert run.stderr.splitlines()[-1].endswith(said), run.stderr
    once = run_cli(
        "apply", str(tmp_path / "missing-plan.json"), "--bootstrap-server", "127.0.0.1:9", "--timeout", "1.5"
    )
    assert "multiple" not in once.stderr, once.output
    assert "missing-plan.json" in once.output, once.output  # the plan, read next


def test_a_typo_in_a_flag_prints_the_subcommand_usage() -> None:
    run = run_cli("topics", "--bootstrap-sever", "127.0.0.1:9", "--list")
    assert run.returncode == 2
    assert run.stderr.startswith("usage: throttled-admin topics ")
    assert "(did you mean --bootstrap-server?)" in run.stderr
    apply = run_cli("apply", "plan.json", "--dry-rn")
    assert apply.returncode == 2
    assert apply.stderr.startswith("usage: throttled-admin apply ")


# -- 8. profile files ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "suggestion"), [("mutation_rte", "mutation_rate"), ("bootstrap.server", None)])
def test_an_unknown_profile_key_is_a_file_error(tmp_path: Path, key: str, suggestion: str | None) -> None:
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "create", "topic": "t"}])
    profiles = tmp_path / "profiles.yaml"
    conf = {"bootstrap.servers": "127.0.0.1:9", key: 5}
    if key == "bootstrap.server":
        conf = {key: "127.0.0.1:9"}
        suggestion = "bootstrap.servers"
    profiles.write_text(yaml.safe_dump({"dev": conf}))
    run = run_cli("apply", str(plan), "--profiles", str(profiles))
    assert run.returncode == 2, run.output
    assert f"{profiles}: profile 'dev': field '{key}': unknown key" in run.stderr
    assert f"did you mean '{suggestion}'?" in run.stderr


# -- 9. the docs and the banner ---------------------------------------------------------------------------------


def test_docs_cli_names_every_flag_of_the_help() -> None:
    from throttled_admin.cli._args import build_parser

    docs = (REPO / "docs" / "cli.md").read_text()
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    assert isinstance(commands, argparse._SubParsersAction)
    for name, sub in commands.choices.items():
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in docs, f"docs/cli.md does not describe {name} {option}"
    assert "pip install throttled_admin" not in docs
    assert "pip install 'throttled_admin" not in docs


def test_the_standalone_broker_echoes_its_settings() -> None:
    banner = broker_banner("--controller-mutation-rate", "5")
    assert "QuotaBroker listening on 127.0.0.1:" in banner
    assert "controller mutation quota 5/s per principal" in banner
    assert "burst 55 mutations" in banner
    assert "enforcement by-version" in banner


# -- the live bar's numbers, on simulated time ---------------------------------------------------------------


def _progress(done: int, admitted: int, throttle_ms: int, throttled: int = 0, last_ms: int | None = None) -> Progress:
    """``throttle_ms``: the largest throttle of the client's metrics window; ``last_ms`` the newest (None: the same)."""
    from throttled_admin.provisioning import Progress

    last = throttle_ms if last_ms is None else last_ms
    return Progress(
        "dev", done, 40, admitted, 0.0, 2.0, throttle_ms, throttled_responses=throttled, last_throttle_ms=last
    )


def test_the_bar_rate_decays_and_the_throttle_counts_down() -> None:
    from throttled_admin.cli._progress import ClusterStats

    stats = ClusterStats("dev", 40, started=0.0)
    stats.update(_progress(16, 32, 0), now=1.0)
    assert stats.recent_rate(1.0) == pytest.approx(32 / 11)
    assert stats.throttle_text(1.0) == "no throttle"
    stats.update(_progress(20, 40, 16000, throttled=1), now=2.0)
    assert stats.throttle_text(2.0) == "waiting out throttle: 16 s left"
    assert stats.throttle_text(12.5) == "waiting out throttle: 6 s left"
    # The same throttle reported again (the client's metrics window) does not restart the countdown.
    stats.update(_progress(20, 40, 16000, throttled=1), now=5.0)
    assert stats.throttle_text(12.5) == "waiting out throttle: 6 s left"
    assert stats.recent_rate(12.5) == pytest.approx(8 / 11)  # the first 32 left the 11 s window
    assert stats.recent_rate(13.5) == 0.0  # nothing admitted for 11 s
    assert stats.throttle_text(18.5) == "last throttle 16000 ms"
    # The windowed max stepping down with no new throttled answer (an older, smaller throttle left in the window) is
    # no new throttle: it started a 1.5 s countdown (review 117).
    stats.update(_progress(24, 48, 1500, throttled=1, last_ms=16000), now=20.0)
    assert stats.throttle_text(20.0) == "last throttle 16000 ms"
    stats.update(_progress(24, 48, 2500, throttled=2), now=21.0)  # a new one
    assert stats.throttle_text(21.0) == "waiting out throttle: 3 s left"
    # A new throttle smaller than the window's largest: its own is waited out, not the largest (a new user's tmux
    # run: "waiting out throttle: 16 s left" after each throttle of 1 s the broker sent, helper 118).
    stats.update(_progress(26, 52, 16000, throttled=3, last_ms=998), now=40.0)
    assert stats.throttle_text(40.0) == "waiting out throttle: 1 s left"
    assert stats.throttle_text(41.0) == "last throttle 998 ms"


def test_the_plain_progress_lines_count_the_throttle_down(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    # Windows of 0.1 s: a burst of 22 mutations at 20/s. The first row goes alone (5 mutations, no throttle), the
    # learned rate's slow start then sends 64 more, throttled about 2 s while 11 rows wait.
    broker = quota_broker(controller_mutation_rate=20, quota_window_size_s=0.1, enforcement="by-version")
    rows = [{"cluster": "dev", "action": "create", "topic": f"w{i}", "partitions": 5} for i in range(24)]
    run = run_cli("apply", str(_plan(tmp_path / "plan.json", rows)), "--bootstrap-server", broker.bootstrap_servers)
    assert run.returncode == 0, run.output
    lines = [line for line in run.stdout.splitlines() if line.startswith("[dev] ")]
    waiting = [line for line in lines if re.search(r"waiting out throttle: \d+ s left$", line)]
    assert waiting, lines
    assert all(not line.startswith("[dev] 24/24 ") for line in waiting), lines  # done: nothing waits


def test_the_rows_done_say_how_many_were_not_applied() -> None:
    from throttled_admin.cli._progress import ClusterStats
    from throttled_admin.provisioning import Progress

    stats = ClusterStats("dev", 40, started=0.0)
    stats.update(_progress(40, 32, 0), now=1.0)
    assert stats.rows_text() == "rows"
    stats.update(Progress("dev", 40, 40, 32, 0.0, 2.0, 0, rows_not_sent=2, rows_failed=1), now=2.0)
    assert stats.rows_text() == "rows (2 not sent, 1 failed)"


def test_output_that_cannot_be_written_is_said_in_a_line_not_a_traceback(quota_broker: BrokerFactory) -> None:
    """Helper 111: ``--describe > /dev/full`` ended in a Python traceback ("OSError: [Errno 28] No space left on
    device")."""
    import subprocess
    import sys

    from tests.cli_helpers import cli_env

    broker = quota_broker()
    broker.create_topic("full", 1)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "throttled_admin", "topics", "--bootstrap-server", broker.bootstrap_servers,
             "--describe", "--topic", "full"],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=90, env=cli_env(), cwd=REPO, check=False,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "throttled-admin: cannot write the output: No space left on device\n", proc.stderr


def test_ctrl_c_while_a_create_is_in_flight_says_it_may_have_been_applied(quota_broker: BrokerFactory) -> None:
    """Helper 111: Ctrl-C while ``--create`` waited (for an answer, or for every broker to list the topic) said only
    "Interrupted.", though the topic was created."""
    import signal
    import sys

    import pexpect

    from tests.cli_helpers import cli_env

    broker = quota_broker()
    swallowed = broker.blackhole_next("CreateTopics")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "throttled_admin", "topics", "--bootstrap-server", broker.bootstrap_servers, "--create", "--topic", "t"],
        env=cli_env(), cwd=str(REPO), encoding="utf-8", timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # (a test run in the background ignores it)
    )  # fmt: skip
    assert swallowed.wait(timeout=60), child.before
    child.sendintr()
    child.expect("Interrupted: a change already sent may have been applied; see --describe")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "t" in broker.topics()  # it was: the broker applied it and never answered


def _reader_gone(*args: str) -> tuple[int, str]:
    """``throttled-admin ARGS`` with stdout a pipe whose reader has already gone (``| head -1`` after its line):
    every write fails with EPIPE. (exit code, stderr)."""
    import os
    import subprocess
    import sys

    from tests.cli_helpers import cli_env

    read_end, write_end = os.pipe()
    os.close(read_end)  # before the command writes anything: its first write is refused, every time
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "throttled_admin", *args],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=90, env=cli_env(), cwd=REPO, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_reader_gone_leaves_the_exit_code_to_what_the_command_did(
    quota_broker: BrokerFactory, tmp_path: Path, output: str
) -> None:
    """Helper 111: ``--describe | head -1`` exited 1 (kafka-topics.sh 0): the reader going away ended the command
    as a failure. As kafka-topics.sh, the command goes on to its end and its exit code says what it did: 0 for a
    describe, a list or a change done, 1 for a change or a read that failed."""
    broker = quota_broker()
    broker.create_topic("seen", 3)
    server = ("--bootstrap-server", broker.bootstrap_servers, "--output", output)
    for args, code in [
        (("--describe", "--topic", "seen"), 0),
        (("--list",), 0),
        (("--describe", "--topic", "missing"), 1),
        (("--create", "--topic", "made", "--partitions", "2"), 0),
        (("--create", "--topic", "seen", "--partitions", "2"), 1),  # exists
    ]:
        assert _reader_gone("topics", *server, *args) == (code, ""), args
    assert broker.topics().get("made") == 2
    server = ("--bootstrap-server", broker.bootstrap_servers, "--output", "table" if output == "text" else output)
    ok = _plan(tmp_path / "ok.json", [{"cluster": "dev", "action": "create", "topic": "planned", "partitions": 1}])
    assert _reader_gone("apply", str(ok), *server) == (0, "")
    bad = _plan(tmp_path / "bad.json", [{"cluster": "dev", "action": "delete", "topic": "seen"}])  # no --allow-delete
    assert _reader_gone("apply", str(bad), *server)[0] == 1


def test_lines_that_stderr_cannot_take_leave_the_command_to_finish(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    """Review 114: a line for stderr that could not be written ended the command: ``--retry-on-quota-violation``'s
    "waiting" line into ``2>&1 | head -1`` (exit 1 at once, the topic never created), a usage error into
    ``2>/dev/full`` (exit 1, not 2), every command with stderr closed (``2>&-``: faulthandler refused to start, exit 1,
    nothing listed). As kafka-topics.sh's log lines, they are dropped, and the command goes on."""
    import os
    import subprocess
    import sys

    from tests.cli_helpers import cli_env

    command = [sys.executable, "-m", "throttled_admin"]
    broker = quota_broker(controller_mutation_rate=2, quota_window_num=2, enforcement="strict")
    server = ("topics", "--bootstrap-server", broker.bootstrap_servers)
    for name in ("first", "second"):  # the quota used up: the next create is refused, and waits out the throttle
        topics(broker.bootstrap_servers, "--create", "--topic", name, "--partitions", "4")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        retried = subprocess.run(
            [*command, *server, "--create", "--topic", "retried", "--partitions", "4", "--retry-on-quota-violation",
             "--timeout-ms", "60000"],
            stdout=subprocess.PIPE, stderr=write_end, text=True, timeout=90, env=cli_env(), cwd=REPO, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert (retried.returncode, retried.stdout) == (0, "Created topic retried.\n")
    assert broker.topics()["retried"] == 4
    with open("/dev/full", "w") as full:
        usage = subprocess.run(
            [*command, *server, "--bogus"], stderr=full, env=cli_env(), cwd=REPO, timeout=90, check=False
        )
    assert usage.returncode == 2
    closed = subprocess.run(
        ["bash", "-c", '"$0" "$@" 2>&-', *command, *server, "--list"],
        capture_output=True, text=True, env=cli_env(), cwd=REPO, timeout=90, check=False,
    )  # fmt: skip
    assert (closed.returncode, closed.stdout) == (0, "first\nretried\nsecond\n")


def test_apply_output_that_cannot_be_written_is_one_line_not_a_traceback_a_progress_line(
    quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    """Review 114: ``apply > /dev/full`` logged a traceback for every progress line (the callback's ENOSPC, logged as a
    raising callback) before its one line."""
    import subprocess
    import sys

    from tests.cli_helpers import cli_env

    broker = quota_broker()
    rows = [{"cluster": "dev", "action": "create", "topic": f"full.{i}", "partitions": 1} for i in range(3)]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "throttled_admin", "apply", str(_plan(tmp_path / "plan.json", rows)),
             "--bootstrap-server", broker.bootstrap_servers],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=90, env=cli_env(), cwd=REPO, check=False,
        )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (1, "throttled-admin: cannot write the output: No space left on device\n")
    assert len(broker.topics()) == 3
