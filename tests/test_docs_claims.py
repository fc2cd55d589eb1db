"""Issue 28, findings 7-9: the small things a person running the product meets (each test failed before its fix)."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import throttled_admin
from tests.cli_helpers import cli_env
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker


def _public_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_a_topic_pending_at_close_raises_a_public_error_class() -> None:
    """Finding 8: the closed-and-not-sent error was ``throttled_admin._errors._ClosedNotSentError``."""
    with QuotaBroker(controller_mutation_rate=1, quota_window_num=1, enforcement="strict") as broker:
        client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert client.create_topics([NewTopic("first", 5, 1)])["first"].exception(30) is None  # 4 s of debt
        # A strict quota reports the debt only when it refuses (as Kafka 4.4): one refusal shows the throttle.
        refused = client.create_topics([NewTopic("refused", 1, 1)], retry_on_quota_violation=False)["refused"]
        assert isinstance(refused.exception(30), throttled_admin.ThrottlingQuotaExceededException)
        pending = client.create_topics([NewTopic("second", 1, 1)], timeout_ms=60_000)  # queued behind the throttle
        client.close()
        exc = pending["second"].exception(5)
    assert isinstance(exc, throttled_admin.ClientClosedError)
    assert isinstance(exc, throttled_admin.NotSentError)
    shown = _public_path(type(exc))
    assert "._" not in shown, shown
    assert getattr(throttled_admin, type(exc).__name__) is type(exc)


def test_every_exception_class_a_caller_can_meet_is_public_and_exported() -> None:
    from throttled_admin import _errors

    for name, cls in vars(_errors).items():
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == _errors.__name__:
            assert not name.startswith("_"), name
            assert getattr(throttled_admin, name) is cls, name
    for name in throttled_admin.__all__:
        value = getattr(throttled_admin, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            assert value.__module__ == "throttled_admin", (name, value.__module__)  # tracebacks show the public path


def test_the_pytest_plugin_works_in_a_strict_user_project(tmp_path: Path) -> None:
    """Finding 7: a user's test with the quota_broker fixture errored under ``filterwarnings = error``, from
    kafka-python's deprecated ``importlib.resources.read_text``; the project hid it only in its own pyproject."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "strict-user"\nversion = "0"\n\n'
        '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\nasyncio_default_fixture_loop_scope = "function"\n'
    )
    (tmp_path / "test_topics.py").write_text(
        "from confluent_kafka.admin import AdminClient, NewTopic\n\n\n"
        "def test_create(quota_broker):\n"
        "    broker = quota_broker(controller_mutation_rate=5)\n"
        '    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})\n'
        '    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)\n'
        '    assert broker.topics() == {"orders": 1}\n'
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "error"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=cli_env(),
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert re.search(r"\b1 passed\b", result.stdout), result.stdout
    assert "warning" not in result.stdout.lower(), result.stdout


def _without_kafka_python(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import kafka`` fails as it does without the testing extra."""
    shadow = tmp_path / "no-extra"
    shadow.mkdir()
    (shadow / "kafka.py").write_text('raise ModuleNotFoundError("No module named \'kafka\'", name="kafka")\n')
    env = cli_env()
    env["PYTHONPATH"] = f"{shadow}{os.pathsep}{env['PYTHONPATH']}"
    return env


def test_the_test_broker_without_its_extra_says_so_in_one_line(tmp_path: Path) -> None:
    """``python -m throttled_admin.testing`` without the testing extra ended in a traceback."""
    env = _without_kafka_python(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "throttled_admin.testing", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.splitlines() == [
        "python -m throttled_admin.testing: error: throttled_admin.testing needs kafka-python, the 'testing' extra: "
        "pip install -e '.[testing]' in a checkout"
    ]
    # Code importing it still gets an ImportError naming the extra.
    imported = subprocess.run(
        [sys.executable, "-c", "import throttled_admin.testing"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert imported.returncode == 1
    assert imported.stderr.splitlines()[-1] == (
        "ImportError: throttled_admin.testing needs kafka-python, the 'testing' extra: "
        "pip install -e '.[testing]' in a checkout"
    )


# Each option of ``python -m throttled_admin.testing`` with a value other than its default (the port is in the
# banner's address).
_BROKER_OPTIONS = {
    "--num-brokers": ["--num-brokers", "3"],
    "--controller-mutation-rate": ["--controller-mutation-rate", "5"],
    "--quota-window-num": ["--controller-mutation-rate", "5", "--quota-window-num", "3"],
    "--quota-window-size-s": ["--controller-mutation-rate", "5", "--quota-window-size-s", "0.5"],
    "--request-percentage": ["--request-percentage", "20"],
    "--request-time-cost-ms": ["--request-time-cost-ms", "7"],
    "--enforcement": ["--enforcement", "strict"],
    "--max-records-per-op": ["--max-records-per-op", "500"],
    "--metadata-lag-ms": ["--metadata-lag-ms", "1500"],
    "--user": ["--user", "alice:secret-pw"],
    "--broker-config": ["--broker-config", "num.partitions=3"],
}


def test_the_broker_banner_lists_every_option_that_changes_behaviour() -> None:
    """The banner omitted --metadata-lag-ms (and --max-records-per-op, --request-time-cost-ms, --num-brokers)."""
    from throttled_admin.testing.__main__ import build_parser, settings_text

    parser = build_parser()
    options = {o for action in parser._actions for o in action.option_strings} - {"-h", "--help", "--port"}
    assert options == set(_BROKER_OPTIONS)
    for option, argv in _BROKER_OPTIONS.items():
        base = argv[:2] if option in ("--quota-window-num", "--quota-window-size-s") else []
        assert settings_text(parser.parse_args(argv)) != settings_text(parser.parse_args(base)), option
    banner = settings_text(parser.parse_args(["--num-brokers", "3", "--metadata-lag-ms", "1500", "--user", "a:pw"]))
    assert "3 brokers, controller node 0" in banner
    assert "metadata lag 1500 ms on the brokers but the controller" in banner
    assert "at most 10000 records per operation" in banner
    assert "pw" not in banner  # never a password


def test_the_running_broker_banner_names_its_metadata_lag() -> None:
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "throttled_admin.testing",
            "--port",
            "0",
            "--num-brokers",
            "2",
            "--metadata-lag-ms",
            "1500",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=cli_env(),
    ) as proc:
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert "QuotaBroker listening on 127.0.0.1:" in banner
    assert "2 brokers, controller node 0; metadata lag 1500 ms on the brokers but the controller" in banner


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


def test_one_wording_for_the_retry_hint() -> None:
    """The retry hint read ``(retry in 999 ms)`` in the example and ``Retry after N ms.`` in the CLI: the
    example now prints the CLI's (tests/test_examples_and_demo.py runs it), and no other wording is left."""
    from tests.conftest import REPO

    other = re.compile(r"retry in \{|\(retry in |retry in \d+ ?ms", re.IGNORECASE)
    for folder in ("throttled_admin", "examples", "docs"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".md") and other.search(path.read_text(encoding="utf-8")):
                pytest.fail(f"{path.relative_to(REPO)} words the retry hint otherwise")
    assert "Retry after" in (REPO / "examples" / "script_retry_off.py").read_text()


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


def _readme_tight_quota() -> tuple[str, str]:
    """README's quick-start paragraph on a tight quota, and its code."""
    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text()
    start = readme.find("**Under a tight quota.**")
    assert start >= 0, "README's quick start does not say what happens under a tight quota"
    section = readme[start : readme.index("The same with asyncio", start)]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    return section, code.group(1)


def test_the_readme_quick_start_says_what_a_tight_quota_does_and_how_to_give_a_job_time() -> None:
    """README's quick start (500 x 6 partitions, 60 s deadline) failed against a 5/s strict quota with no hint."""
    section, code = _readme_tight_quota()
    for words in ("ThrottlingQuotaExceededException", "timeout_ms=", "MutationQuota(rate=", "(3000 - 55) / 5"):
        assert words in section, words
    # What it says happens, scaled down: 20 x 6 partitions against a strict 5/s quota (burst 55) with a 3 s deadline
    # create what the quota admits; every other topic fails with ThrottlingQuotaExceededException.
    with QuotaBroker(controller_mutation_rate=5, enforcement="strict") as broker:
        with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            futures = admin.create_topics([NewTopic(f"orders.{i}", 6, 1) for i in range(20)], timeout_ms=3000)
            outcomes = [future.exception(30) for future in futures.values()]
        created = [exc for exc in outcomes if exc is None]
        assert 0 < len(created) < 20
        assert all(isinstance(exc, throttled_admin.ThrottlingQuotaExceededException) for exc in outcomes if exc)
    # Its code, scaled down (12 topics, replication factor 1), runs paced: every topic created, never refused.
    scaled = code.replace("range(500)", "range(12)").replace("6, 3)", "6, 1)")
    with QuotaBroker(controller_mutation_rate=5, enforcement="strict") as broker:
        exec(scaled.replace("broker:9092", broker.bootstrap_servers), {})  # the README's own code
        assert len(broker.topics()) == 12
        assert not any(89 in r.errors.values() for r in broker.request_log())


_APPLY_UNREACHABLE = """
import sys
from throttled_admin.provisioning import PlanRow, apply_plan
conf = {"bootstrap.servers": "127.0.0.1:%d", **dict(a.split("=", 1) for a in sys.argv[1:])}
[result] = apply_plan([PlanRow("east", "ensure", "orders", 1)], {"east": conf})
print(result.status, result.error_message)
"""


def test_the_pipeline_docs_say_how_to_quiet_librdkafkas_log(tmp_path: Path) -> None:
    """The pipeline docs never said how to quiet librdkafka's log in executor logs; what they say works."""
    from tests.conftest import REPO, free_port

    docs = (REPO / "docs" / "pipeline.md").read_text()
    section = docs[docs.index("### Quieting librdkafka's log") :]
    assert "log_level: 0" in section[: section.index("## What each action does")]
    script = _APPLY_UNREACHABLE % free_port()  # nothing listens there

    def run(*settings: str) -> subprocess.CompletedProcess[str]:
        args = [sys.executable, "-c", script, *settings]
        return subprocess.run(args, capture_output=True, text=True, timeout=120, env=cli_env(), check=False)

    loud, quiet = run(), run("log_level=0")
    assert "|FAIL|" in loud.stderr  # librdkafka's connection failures, as an executor's log shows them
    assert quiet.stderr == "", quiet.stderr
    for done in (loud, quiet):
        assert done.stdout.startswith("failed not sent: cannot connect to 127.0.0.1:"), done.stdout
