"""The examples and the demo job run as a user runs them, against the embedded QuotaBroker."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from tests.conftest import REPO, free_port, wait_until


def run(*args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s, cwd=REPO)


def test_application_example_creates_every_topic_through_the_quota() -> None:
    result = run("examples/application.py")
    assert result.returncode == 0, result.stderr
    assert "created 90 of 90 topics" in result.stdout
    throttled = int(result.stdout.split("topics; ")[1].split(" throttled")[0])
    assert throttled > 0


def test_script_with_retry_off_fails_like_kafka_topics_sh() -> None:
    result = run("examples/script_retry_off.py")
    assert result.returncode == 1
    assert "Error while executing topic command : The throttling quota has been exceeded." in result.stderr


def test_console_metrics_example() -> None:
    result = run("examples/metrics_console.py")
    assert result.returncode == 0, result.stderr
    for name in (
        "throttled_admin.throttle.duration",
        "throttled_admin.throttle.time.max",
        "messaging.client.operation.duration",
    ):
        assert name in result.stdout


def test_prometheus_metrics_example_prints_and_serves() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "examples/metrics_prometheus.py", "--serve-port", str(port), "--serve-seconds", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        url = f"http://127.0.0.1:{port}/metrics"

        def scrape() -> str:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    return str(response.read().decode())
            except OSError:
                return ""

        assert wait_until(lambda: "throttled_admin_throttle_duration_seconds_bucket" in scrape(), timeout_s=120)
        body = scrape()
        assert 'messaging_operation_name="CreateTopics"' in body
        assert "throttled_admin_backoff_time_seconds_total" in body
    finally:
        proc.terminate()
        out, _err = proc.communicate(timeout=30)
    assert "throttled_admin_throttle_time_max_seconds" in out


def test_demo_provisions_every_topic() -> None:
    started = time.monotonic()
    result = run(
        "-m", "throttled_admin.demo", "--topics", "60", "--batch-size", "20", "--controller-mutation-rate", "20"
    )
    assert result.returncode == 0, result.stderr
    assert "{'created': 60}" in result.stdout
    assert "broker has 60 topics" in result.stdout
    assert time.monotonic() - started < 180
