"""The pytest plugin (registered through the package's pytest11 entry point) and the standalone CLI."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.cli_helpers import broker_banner, cli_env
from tests.support import REPO, free_port
from tests.wire import WireClient, create_topics_request, standalone_broker
from throttled_admin.testing import QuotaBroker

pytest_plugins = ["pytester"]


def test_plugin_is_registered_by_entry_point() -> None:
    names = {ep.value for ep in entry_points(group="pytest11")}
    assert "throttled_admin.pytest_plugin" in names


def test_core_and_plugin_import_without_the_testing_extra() -> None:
    # pytest loads every installed plugin at start-up: without kafka-python it must still load.
    code = (
        "import sys; sys.modules['kafka'] = None\n"
        "import throttled_admin, throttled_admin.pytest_plugin\n"
        "try:\n    import throttled_admin.testing\nexcept ImportError as e:\n    print(e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "needs kafka-python: pip install 'kafka-python>=3.0.12,<4' (throttled_admin's" in result.stdout


def test_fixture_starts_brokers_and_stops_them_after_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import socket
        started = []

        def test_uses_factory(quota_broker):
            broker = quota_broker(controller_mutation_rate=5)
            started.append(broker)
            assert broker.running
            socket.create_connection(("127.0.0.1", broker.ports[0]), timeout=5).close()

        def test_it_was_stopped():
            assert started and not started[0].running
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=2)


def test_standalone_broker_cli() -> None:
    port = free_port()
    args = ["--port", str(port), "--controller-mutation-rate", "1", "--quota-window-num", "2"]
    with standalone_broker(*args) as ports:
        assert ports[0] == port
        with WireClient(f"127.0.0.1:{port}") as wire:
            first = wire.request(create_topics_request(7, ("cli-a", 3)))
        with WireClient(f"127.0.0.1:{port}") as wire:
            second = wire.request(create_topics_request(7, ("cli-b", 1)))
    assert first.topics[0].error_code == 0  # burst 2 x 1 s x 1/s = 2: admitted, K = -1
    assert second.topics[0].error_code == 89


def test_standalone_broker_reports_a_port_in_use_in_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "throttled_admin.testing", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in lines[0]
    assert "address already in use" in lines[0]
    assert "Traceback" not in result.stderr


def test_a_port_in_use_among_several_nodes_ports_names_them_all_and_the_one_in_use() -> None:
    """A new user's run (helper 106): with node 1's port taken, "cannot listen on 127.0.0.1:9091: ... ('127.0.0.1',
    9092): address already in use" named node 0's port as the one that could not be listened on."""
    for _ in range(5):  # (node 0's port is free when chosen, but another process may take it first: CI of 68f559f)
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1] - 1
            result = subprocess.run(
                [sys.executable, "-m", "throttled_admin.testing", "--port", str(port), "--num-brokers", "2"],
                capture_output=True, text=True, timeout=60, cwd=REPO,
            )  # fmt: skip
        said = result.stderr.partition(": error: cannot listen on")[2].partition(": ")[2]
        if f"'127.0.0.1', {port})" not in said:
            break
    assert result.returncode == 2, result.stderr
    assert f"cannot listen on 127.0.0.1:{port}-{port + 1}: " in result.stderr, result.stderr
    assert str(port + 1) in said, result.stderr


def test_standalone_broker_refuses_bad_settings_without_echoing_secrets() -> None:
    for args, expected in (
        (["--controller-mutation-rate", "nan"], "--controller-mutation-rate must be a finite number"),
        (["--user", "no-colon-s3cret"], "expected NAME:PASSWORD"),
        # a new user's run (helper 106): an empty password started a broker no client could log in to, and a bad
        # window was said by the constructor's names, both at once ("quota_window_num must be >= 1 and ...")
        (["--user", "alice:"], "argument --user: expected NAME:PASSWORD, neither empty"),
        (["--quota-window-num", "0"], "error: --quota-window-num must be an int >= 1, got 0"),
        (["--quota-window-size-s", "0"], "error: --quota-window-size-s must be > 0, got 0"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "throttled_admin.testing", *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
        assert result.returncode == 2
        assert expected in result.stderr
        assert "s3cret" not in result.stderr
        assert "Traceback" not in result.stderr


def test_stop_and_start_from_code_running_in_an_event_loop() -> None:
    """Async test suites start and stop the broker from a coroutine; the broker runs its own loop on its own
    thread, so neither call may touch the caller's running loop."""

    async def scenario() -> tuple[int, int]:
        broker = QuotaBroker().start()
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", broker.ports[0])
            writer.close()
            await writer.wait_closed()
            broker.stop()
            broker.start()  # same ports, from inside the loop too
            with WireClient(broker.bootstrap_servers) as wire:
                code = wire.request(create_topics_request(7, ("async", 1))).topics[0].error_code
            return code, len(broker.topics())
        finally:
            broker.stop()

    assert asyncio.run(scenario()) == (0, 1)


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
        "python -m throttled_admin.testing: error: throttled_admin.testing needs kafka-python: pip install "
        "'kafka-python>=3.0.12,<4' (throttled_admin's 'testing' extra; in a checkout: pip install -e '.[testing]')"
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
        "ImportError: throttled_admin.testing needs kafka-python: pip install 'kafka-python>=3.0.12,<4' "
        "(throttled_admin's 'testing' extra; in a checkout: pip install -e '.[testing]')"
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
    banner = broker_banner("--num-brokers", "2", "--metadata-lag-ms", "1500")
    assert "QuotaBroker listening on 127.0.0.1:" in banner
    assert "2 brokers, controller node 0; metadata lag 1500 ms on the brokers but the controller" in banner
