"""The command line's words: every message the CLI (and the Spark example) prints names its options, never the
Python parameters they set; the shared checks say which field and which limit (``TopicValueError``, a plan row's
``error_name``) and each front end words them in its own terms; a create the controller applied while brokers lag
is reported created with a warning, and a retry on a quota refusal says what it waits for and how long."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import Run, run_cli, topics
from tests.support import BrokerFactory
from throttled_admin import NewPartitions, NewTopic, NotSentError, NotSentReason, ThrottledAdminClient, TopicValueError
from throttled_admin._errors import not_sent_error
from throttled_admin._validation import check_new_partitions, check_new_topics

PYTHON_NAMES = re.compile(
    r"\b(num_partitions|new_total_count|replication_factor|replica_assignment|allow_delete|timeout_ms|"
    r"retry_on_quota_violation|wait_for_metadata|new_topics|new_partitions)\b"
)


def _assert_cli_words(run: Run) -> None:
    assert not PYTHON_NAMES.search(run.output), run.output


def test_alter_partitions_beyond_the_limit_names_the_option(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.create_topic("orders", 1)
    run = topics(broker.bootstrap_servers, "--alter", "--topic", "orders", "--partitions", "200000")
    assert run.returncode == 1, run.output
    assert run.stdout.strip() == (
        "Error while executing topic command : --partitions must be between 1 and 100000 (librdkafka's limit), "
        "got 200000"
    )
    _assert_cli_words(run)


def test_create_partitions_beyond_the_limit_names_the_option_and_how_to_get_the_default(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker()
    run = topics(broker.bootstrap_servers, "--create", "--topic", "orders", "--partitions", "200000")
    assert run.returncode == 1, run.output
    assert "--partitions must be between 1 and 100000 (librdkafka's limit), got 200000" in run.stdout
    assert "leave it out for the broker's default" in run.stdout
    assert "-1" not in run.stdout  # the API's spelling of the default, meaningless on the command line
    _assert_cli_words(run)
    as_json = topics(
        broker.bootstrap_servers, "--create", "--topic", "orders", "--replication-factor", "20000", "--output", "json"
    )
    [record] = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert record["error_name"] == "INVALID_REPLICATION_FACTOR"
    assert record["error_code"] is None  # refused before anything was sent
    assert record["error_message"].startswith("--replication-factor must be between 1 and 10000")
    _assert_cli_words(as_json)
    assert broker.request_log() == [] or all(r.api_name != "CreateTopics" for r in broker.request_log())


def test_a_replica_assignment_the_client_refuses_names_the_option(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.create_topic("orders", 1)
    # Three partitions listed, the topic has one: two new ones, but --partitions 2 adds only one.
    run = topics(
        broker.bootstrap_servers, "--alter", "--topic", "orders", "--partitions", "2", "--replica-assignment", "0,0,0"
    )
    assert run.returncode == 1, run.output
    assert "--replica-assignment has 2 entries, but growing to 2 partitions adds at most 1" in run.stdout
    _assert_cli_words(run)


def test_the_shared_check_says_which_field_and_which_limit() -> None:
    with pytest.raises(TopicValueError) as raised:
        check_new_topics([NewTopic("orders", 200000, 1)])
    exc = raised.value
    assert isinstance(exc, ValueError)  # callers catching ValueError still do
    limit = (exc.topic, exc.field, exc.value, exc.minimum, exc.maximum)
    assert limit == ("orders", "num_partitions", 200000, 1, 100000)
    assert str(exc).startswith("topic 'orders': num_partitions must be >= 1 (at most 100000)")  # the API's words
    copy = pickle.loads(pickle.dumps(exc))  # Spark ships exceptions between processes
    assert (type(copy), str(copy), copy.field, copy.maximum) == (TopicValueError, str(exc), "num_partitions", 100000)
    with pytest.raises(TopicValueError) as grown:
        check_new_partitions([NewPartitions("orders", 0)])
    assert (grown.value.field, grown.value.value) == ("new_total_count", 0)


def _plan(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps(rows))
    return path


def test_apply_json_rows_all_carry_error_name(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = quota_broker()
    broker.create_topic("old", 3)
    broker.create_topic("shrink", 4)
    rows: list[dict[str, object]] = [
        {"cluster": "dev", "action": "create", "topic": "new", "partitions": 1},
        {"cluster": "dev", "action": "delete", "topic": "old"},
        {"cluster": "dev", "action": "ensure", "topic": "shrink", "partitions": 2},
    ]
    run = run_cli(
        "apply", str(_plan(tmp_path / "plan.json", rows)), "--bootstrap-server", broker.bootstrap_servers,
        "--output", "json",
    )  # fmt: skip
    assert run.returncode == 1, run.output
    records = [json.loads(line) for line in run.stdout.splitlines()]
    by_topic = {r["topic"]: r for r in records if "topic" in r}
    assert all("error_name" in r for r in by_topic.values()), records
    assert by_topic["new"]["status"] == "created"
    assert by_topic["new"]["error_name"] is None
    assert by_topic["old"]["error_name"] == "DELETE_NOT_ALLOWED"
    assert by_topic["old"]["error_message"] == "refused: pass --allow-delete to delete topics"
    assert by_topic["shrink"]["error_name"] == "PLAN_CONFLICT"
    _assert_cli_words(run)


def test_a_plan_row_beyond_the_client_limit_is_a_plan_error_in_the_plan_terms(tmp_path: Path) -> None:
    plan = _plan(tmp_path / "plan.json", [{"cluster": "dev", "action": "create", "topic": "t", "partitions": 200000}])
    run = run_cli("apply", str(plan), "--bootstrap-server", "127.0.0.1:1")
    assert run.returncode == 2, run.output
    assert "field 'partitions': must be at most 100000 (librdkafka's limit), got 200000" in run.stderr
    _assert_cli_words(run)


def test_a_create_the_controller_applied_is_created_with_a_warning_while_brokers_lag(
    quota_broker: BrokerFactory,
) -> None:
    """Finding 6: on a 3-node cluster with metadata lag, --timeout-ms 800 printed "status": "failed" and exited 1
    although the topic existed, and a shell loop retrying on failure then met "already exists"."""
    broker = quota_broker(num_brokers=3, metadata_lag_ms=5_000)
    run = topics(broker.bootstrap_servers, "--create", "--topic", "lagged", "--partitions", "1", "--timeout-ms", "800")
    assert run.returncode == 0, run.output
    created, warning = run.stdout.splitlines()
    assert created == "Created topic lagged."  # kafka-topics.sh's words once the controller accepts
    assert warning == (
        "WARNING: Topic lagged was created, but brokers 1, 2 do not list it yet (within --timeout-ms 800); "
        "it is usable on every broker once they list it."
    )
    assert "lagged" in broker.topics()
    as_json = topics(
        broker.bootstrap_servers, "--create", "--topic", "lagged2", "--partitions", "1", "--timeout-ms", "800",
        "--output", "json",
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.output
    [record] = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert record["status"] == "created"
    assert record["visible"] is False
    assert record["not_visible_on"] == [1, 2]
    assert record["error_code"] is None
    visible = topics(broker.bootstrap_servers, "--create", "--topic", "plain", "--partitions", "1", "--output", "json")
    [record] = [json.loads(line) for line in visible.stdout.splitlines()]
    assert (record["status"], record["visible"]) == ("created", True)


def test_an_alter_waits_until_every_broker_shows_the_new_partitions(quota_broker: BrokerFactory) -> None:
    """The clean-clone CI (stop 82): on Kafka, `--alter --partitions 5` returned as the controller answered, and the
    next command's read of the topic (`--alter --partitions 0`, refused in Kafka's words with the current count)
    said 3 from a broker that did not show the 5 yet, where kafka-topics.sh said 5. An alter now returns once every
    broker shows the new count, as a create does, or warns which broker does not."""
    broker = quota_broker(num_brokers=3, metadata_lag_ms=1_500)
    broker.create_topic("grown", 3)
    run = topics(broker.bootstrap_servers, "--alter", "--topic", "grown", "--partitions", "5", "--output", "json")
    assert run.returncode == 0, run.output
    [record] = [json.loads(line) for line in run.stdout.splitlines()]
    assert (record["status"], record["visible"]) == ("altered", True)
    again = topics(broker.bootstrap_servers, "--alter", "--topic", "grown", "--partitions", "0")
    assert again.returncode == 1, again.output
    assert "The topic grown currently has 5 partition(s); 0 would not be an increase." in again.stdout
    lagged = topics(broker.bootstrap_servers, "--alter", "--topic", "grown", "--partitions", "7", "--timeout-ms", "800")
    assert lagged.returncode == 0, lagged.output
    assert lagged.stdout == (
        "WARNING: Topic grown was altered, but brokers 1, 2 do not show its new partitions yet (within --timeout-ms "
        "800); it is usable on every broker once they show them.\n"
    )


def test_a_call_that_runs_out_of_time_names_the_option(quota_broker: BrokerFactory) -> None:
    """The client's "not sent within timeout_ms=1" reached the command line as it was."""
    broker = quota_broker()
    text = topics(broker.bootstrap_servers, "--create", "--topic", "t", "--timeout-ms", "1")
    as_json = topics(broker.bootstrap_servers, "--create", "--topic", "t", "--timeout-ms", "1", "--output", "json")
    assert text.returncode == 1, text.output
    assert text.stdout.startswith("Error while executing topic command : CreateTopics not sent within --timeout-ms 1: ")
    [record] = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert record["error_name"] == "_TIMED_OUT"
    assert record["error_message"].startswith("CreateTopics not sent within --timeout-ms 1: ")
    for run in (text, as_json):
        _assert_cli_words(run)
    assert broker.topics() == {}
    exc = pickle.loads(pickle.dumps(not_sent_error("CreateTopics", 5, "why", why=NotSentReason.DEADLINE)))  # in parts
    assert (type(exc), exc.operation, exc.timeout_ms, exc.reason) == (NotSentError, "CreateTopics", 5, "why")
    assert exc.why is NotSentReason.DEADLINE


def test_retry_on_quota_violation_says_what_it_waits_for_and_how_long(quota_broker: Any) -> None:
    """--retry-on-quota-violation waited 9 s in silence."""
    from tests.cli_helpers import topics

    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1, enforcement="strict")  # burst 10
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        # 100 mutations: 9 s of debt, however long the command below takes to start
        assert admin.create_topics([NewTopic("debt", 100, 1)])["debt"].exception(30) is None
    run = topics(
        broker.bootstrap_servers, "--create", "--topic", "next", "--partitions", "1", "--retry-on-quota-violation"
    )
    assert run.returncode == 0, run.output
    assert run.stdout.strip() == "Created topic next."
    waiting = re.fullmatch(
        r"The broker refused the change over the principal's controller mutation quota \(THROTTLING_QUOTA_EXCEEDED\): "
        r"waiting (\d+) ms for its throttle to end, then sending it again \(--retry-on-quota-violation, within "
        r"--timeout-ms 60000\)\.",
        run.stderr.strip(),
    )
    assert waiting is not None, run.stderr
    [refused] = [r for r in broker.request_log() if 89 in r.errors.values()]  # THROTTLING_QUOTA_EXCEEDED
    assert int(waiting.group(1)) == refused.throttle_time_ms  # the refusal's throttle, as the broker sent it
    assert refused.throttle_time_ms > 1000
