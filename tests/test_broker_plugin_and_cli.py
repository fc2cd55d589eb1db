"""The pytest plugin (registered through the package's pytest11 entry point) and the standalone CLI."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

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
    assert "needs kafka-python, the 'testing' extra: pip install -e '.[testing]'" in result.stdout


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


def test_standalone_broker_refuses_bad_settings_without_echoing_secrets() -> None:
    for args, expected in (
        (["--controller-mutation-rate", "nan"], "controller_mutation_rate"),
        (["--user", "no-colon-s3cret"], "expected NAME:PASSWORD"),
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
