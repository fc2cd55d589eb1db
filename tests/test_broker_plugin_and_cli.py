"""The pytest plugin (registered through the package's pytest11 entry point) and the standalone CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from tests.conftest import REPO, free_port
from tests.wire import WireClient, create_topics_request

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
    assert "pip install 'throttled_admin[testing]'" in result.stdout


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
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_standalone_broker_cli() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "throttled_admin.testing",
            "--port",
            str(port),
            "--controller-mutation-rate",
            "1",
            "--quota-window-num",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"127.0.0.1:{port}" in line
        with WireClient(f"127.0.0.1:{port}") as wire:
            first = wire.request(create_topics_request(7, ("cli-a", 3)))
        with WireClient(f"127.0.0.1:{port}") as wire:
            second = wire.request(create_topics_request(7, ("cli-b", 1)))
        assert first.topics[0].error_code == 0  # burst 2 x 1 s x 1/s = 2: admitted, K = -1
        assert second.topics[0].error_code == 89
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
    assert code == 0
