"""The examples and the demo job run as a user runs them: against the embedded QuotaBroker, and against a cluster
given with --bootstrap-servers in an environment without the ``testing`` extra."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable

import pytest

from tests.support import REPO, free_port, wait_until
from throttled_admin.testing import QuotaBroker


def run(*args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s, cwd=REPO)


# Runs a script as ``python script.py ...`` would, in an interpreter where kafka-python (the ``testing`` extra)
# and throttled_admin.testing cannot be imported: what a user without the extra has.
WITHOUT_TESTING_EXTRA = """
import importlib.abc, runpy, sys

class NoTestingExtra(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "kafka" or name.startswith("kafka.") or name.startswith("throttled_admin.testing"):
            raise ModuleNotFoundError(f"No module named {name!r} (the testing extra is not installed)", name=name)
        return None

sys.meta_path.insert(0, NoTestingExtra())
script, *sys.argv[1:] = sys.argv[1:]
sys.argv[0] = script
sys.path.insert(0, script.rsplit("/", 1)[0])
runpy.run_path(script, run_name="__main__")
"""


def run_without_testing_extra(*args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return run("-c", WITHOUT_TESTING_EXTRA, *args, timeout_s=timeout_s)


def test_application_example_creates_every_topic_through_the_quota() -> None:
    result = run("examples/application.py")
    assert result.returncode == 0, result.stderr
    assert "created 90 of 90 topics" in result.stdout
    assert printed_summary(result.stdout)["refused"] > 0  # the embedded broker refuses with error 89 (strict)


def test_asyncio_example_creates_every_topic_through_the_quota() -> None:
    result = run("examples/asyncio_application.py")
    assert result.returncode == 0, result.stderr
    assert "created 90 of 90 topics (0 withdrawn, 0 failed)" in result.stdout
    assert printed_summary(result.stdout)["refused"] > 0


def test_asyncio_example_deadline_withdraws_unsent_topics() -> None:
    # 150 topics of 3 partitions against a burst of 220 mutations: about half wait out a throttle of seconds,
    # and the 0.5 s deadline withdraws them.
    result = run("examples/asyncio_application.py", "--topics", "150", "--deadline-s", "0.5")
    assert result.returncode == 1, result.stderr
    assert "deadline of 0.5 s passed" in result.stdout
    withdrawn = int(result.stdout.split("(")[1].split(" withdrawn")[0])
    assert withdrawn > 0


def test_script_with_retry_off_fails_like_kafka_topics_sh() -> None:
    result = run("examples/script_retry_off.py")
    assert result.returncode == 1
    assert "Error while executing topic command : The throttling quota has been exceeded." in result.stdout


def test_script_with_retry_off_in_a_loop_on_a_given_cluster(quota_broker: Callable[..., QuotaBroker]) -> None:
    """As a shell loop of kafka-topics.sh --create meets it (found by a new user: the script used to create a
    second topic and crash with a traceback when rerun)."""
    broker = quota_broker(controller_mutation_rate=1, enforcement="strict")
    given = ["--bootstrap-servers", broker.bootstrap_servers]
    first = run("examples/script_retry_off.py", *given, "--topic", "audit.x", "--partitions", "3")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "Created topic audit.x."
    again = run("examples/script_retry_off.py", *given, "--topic", "audit.x", "--partitions", "3")
    assert again.returncode == 1
    assert again.stdout.strip() == "Error while executing topic command : Topic 'audit.x' already exists."
    # 40 mutations put the principal 32 s in debt (1/s, burst 11): the next run is refused however slowly the
    # processes start on a loaded machine (12 owed 4 s, and a run 4 s later was admitted).
    over = run("examples/script_retry_off.py", *given, "--topic", "audit.y", "--partitions", "40")
    over_quota = run("examples/script_retry_off.py", *given, "--topic", "audit.z", "--partitions", "3")
    assert over.returncode == 0, over.stderr  # admitted while the bucket was not in debt (Kafka's strict rule)
    assert over_quota.returncode == 1
    # One wording of the retry hint, the command line's (issue 28: the example said "(retry in N ms)").
    message, hint = over_quota.stdout.strip().splitlines()
    assert message == "Error while executing topic command : The throttling quota has been exceeded."
    assert re.fullmatch(r"Retry after \d+ ms\.", hint), hint
    assert set(broker.topics()) == {"audit.x", "audit.y"}


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
    """As docs/metrics.md runs it: no --serve-seconds, it serves until stopped (helper 106: it died at once with
    OverflowError, time.sleep of its default, infinity; this test gave --serve-seconds 60)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "examples/metrics_prometheus.py", "--serve-port", str(port)],
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
        proc.send_signal(signal.SIGINT)  # Ctrl-C ends it
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "throttled_admin_throttle_time_max_seconds" in out
    assert out.endswith("stopped\n"), out[-300:]


def test_the_harness_really_hides_the_testing_extra() -> None:
    probe = REPO / "examples" / "application.py"  # any script: the harness must fail the import below
    result = run("-c", WITHOUT_TESTING_EXTRA.replace("runpy.run_path", "import throttled_admin.testing  #"), str(probe))
    assert result.returncode != 0
    assert "testing extra is not installed" in result.stderr


# (example, arguments, the embedded broker's settings, what the output must contain)
GIVEN_CLUSTER = [
    ("application.py", ["--topics", "10"], {}, "created 10 of 10 topics"),
    ("asyncio_application.py", ["--topics", "10"], {}, "created 10 of 10 topics"),
    ("metrics_console.py", [], {"controller_mutation_rate": 10, "quota_window_num": 2}, "throttle.duration"),
    ("metrics_prometheus.py", [], {"controller_mutation_rate": 10, "quota_window_num": 2}, "throttle_time_max"),
    ("script_retry_off.py", [], {"controller_mutation_rate": 1, "enforcement": "strict"}, "Created topic audit.log."),
]


@pytest.mark.parametrize(("example", "arguments", "broker_settings", "expected"), GIVEN_CLUSTER, ids=lambda v: str(v))
def test_example_with_a_given_cluster_needs_no_testing_extra(
    quota_broker: Callable[..., QuotaBroker],
    example: str,
    arguments: list[str],
    broker_settings: dict[str, object],
    expected: str,
) -> None:
    broker = quota_broker(**broker_settings)
    result = run_without_testing_extra(
        str(REPO / "examples" / example), "--bootstrap-servers", broker.bootstrap_servers, *arguments
    )
    assert "ModuleNotFoundError" not in result.stderr, result.stderr
    assert expected in result.stdout + result.stderr
    assert broker.topics(), "nothing reached the given cluster"


# -- the figures an example prints are the broker's (issue 38) ----------------------------------------------------


def broker_figures(broker: QuotaBroker) -> dict[str, int]:
    """What the broker's request log says of the mutation requests it served."""
    creates = [r for r in broker.request_log() if r.api_name in ("CreateTopics", "DeleteTopics", "CreatePartitions")]
    return {
        "requests": len(creates),
        "admitted": sum(r.mutations for r in creates),
        "refused": sum(1 for r in creates for code in r.errors.values() if code == 89),
        "throttled": sum(1 for r in creates if r.throttle_time_ms > 0),
        "longest": max((r.throttle_time_ms for r in creates), default=0),
    }


SUMMARY = re.compile(
    r"(?P<requests>\d+) requests, (?P<admitted>\d+) partitions admitted; (?P<refused>\d+) topics refused by the "
    r"quota \(error 89\), (?P<throttled>\d+) responses throttled \(longest (?P<longest>\d+) ms\)"
)


def printed_summary(stdout: str) -> dict[str, int]:
    found = SUMMARY.search(stdout)
    assert found is not None, stdout
    return {name: int(value) for name, value in found.groupdict().items()}


# Each example's own broker settings (what it starts when no cluster is given): the by-version rows are Apache
# Kafka's answer to librdkafka (admitted, then throttled), the strict rows refuse with error 89.
APPLICATIONS = [
    ("application.py", {"controller_mutation_rate": 20, "enforcement": "strict"}),
    ("application.py", {"controller_mutation_rate": 20}),
    ("asyncio_application.py", {"controller_mutation_rate": 20, "enforcement": "strict"}),
    ("asyncio_application.py", {"controller_mutation_rate": 20}),
]


@pytest.mark.parametrize(("example", "broker_settings"), APPLICATIONS, ids=lambda v: str(v))
def test_application_examples_print_the_brokers_figures(
    quota_broker: Callable[..., QuotaBroker], example: str, broker_settings: dict[str, object]
) -> None:
    broker = quota_broker(**broker_settings)
    result = run(f"examples/{example}", "--bootstrap-servers", broker.bootstrap_servers, "--topics", "90")
    assert result.returncode == 0, result.stderr
    assert "created 90 of 90 topics" in result.stdout
    figures = broker_figures(broker)
    assert printed_summary(result.stdout) == figures
    assert figures["throttled"] > 0  # "0 throttled" was printed while the broker throttled for seconds
    if broker_settings.get("enforcement") != "strict":
        assert figures["refused"] == 0  # admitted whole and throttled afterwards: no error 89, and said apart


EXPOSITION = re.compile(r"^(?P<name>throttled_admin_[a-z_]+_total)\{[^}]*\} (?P<value>[0-9.e+]+)$", re.MULTILINE)


def test_prometheus_example_prints_the_brokers_figures(quota_broker: Callable[..., QuotaBroker]) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=2)
    result = run("examples/metrics_prometheus.py", "--bootstrap-servers", broker.bootstrap_servers)
    assert result.returncode == 0, result.stderr
    printed: dict[str, float] = {}
    for found in EXPOSITION.finditer(result.stdout):
        printed[found["name"]] = printed.get(found["name"], 0) + float(found["value"])
    figures = broker_figures(broker)
    assert printed["throttled_admin_requests_total"] == figures["requests"] == 3  # 2.0 was printed (issue 38)
    assert printed["throttled_admin_mutations_admitted_total"] == figures["admitted"] == 36
    assert printed["throttled_admin_mutations_total"] == figures["admitted"]  # none refused
    assert printed["throttled_admin_throttled_responses_total"] == figures["throttled"] > 0
    assert printed.get("throttled_admin_quota_violations_total", 0) == figures["refused"]


def console_sums(stdout: str) -> dict[str, float]:
    """The counters' values (a histogram's count) summed over their series, as ConsoleMetricExporter's last JSON
    document that has each shows them (cumulative: every export repeats the totals)."""
    decoder, latest, at = json.JSONDecoder(), {}, 0
    while (start := stdout.find("{", at)) >= 0:
        document, at = decoder.raw_decode(stdout, start)
        sums: dict[str, float] = {}
        for resource in document["resource_metrics"]:
            for scope in resource["scope_metrics"]:
                for metric in scope["metrics"]:
                    for point in metric["data"]["data_points"]:
                        value = point.get("value", point.get("count", 0))
                        sums[metric["name"]] = sums.get(metric["name"], 0) + value
        latest.update(sums)
    return latest


def test_console_example_prints_the_brokers_figures(quota_broker: Callable[..., QuotaBroker]) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=2)
    result = run("examples/metrics_console.py", "--bootstrap-servers", broker.bootstrap_servers)
    assert result.returncode == 0, result.stderr
    printed = console_sums(result.stdout)
    figures = broker_figures(broker)
    assert printed["throttled_admin.requests"] == figures["requests"] == 3
    assert printed["throttled_admin.mutations.admitted"] == figures["admitted"] == 36
    assert printed["throttled_admin.throttled_responses"] == figures["throttled"] > 0
    assert printed["throttled_admin.throttle.duration"] == figures["throttled"]  # one point per throttled response
    assert printed["messaging.client.operation.duration"] == 3
