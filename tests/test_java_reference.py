"""benchmarks/java/Reference.java, the Java AdminClient the benchmarks and docs/semantics.md compare against, runs
from the fetched jars and reports every topic's outcome (so that it cannot rot between benchmark runs)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.real_kafka.broker import KAFKA_HOME, KafkaCluster, classpath
from tests.real_kafka.namespace import KafkaNamespace

pytestmark = pytest.mark.kafka

REFERENCE = Path(__file__).resolve().parents[1] / "benchmarks" / "java" / "Reference.java"


def test_the_java_reference_retries_the_throttled_topic_and_reports_each_outcome(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    classpath()  # the jars, or an error naming `make kafka`
    # R = 2/s and 11 one-second windows: B = 22. Strict versions (Java sends CreateTopics v7): a (20) and b (4) are
    # admitted while the bucket is not negative (it ends at -2), c is refused with error 89 and a throttle of 1 s,
    # which Java waits out and then re-sends c alone (retryOnQuotaViolation's default). The bucket is then at about
    # -10, so d, with retry off, is refused at once.
    kafka_broker.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=2)
    a, b, c, d = (kafka_ns.topic(n) for n in "abcd")
    done = subprocess.run(
        [
            # C1 only and the serial collector: the JVM compiles the source and starts in a third of the CPU time.
            "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{KAFKA_HOME / 'libs'}/*", str(REFERENCE),
            "--bootstrap", kafka_broker.bootstrap_servers, "--client-id", kafka_ns.client_id,
            "--names", f"{a}:20,{b}:4,{c}:10",
            "--then", "--names", f"{d}:1", "--no-retry",
        ],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    events = [line["event"] for line in lines if "event" in line]
    assert events == ["connected", "start", "done", "start", "done", "metrics", "closed"]
    outcomes = {line["topic"]: line for line in lines if "topic" in line}
    assert {name: outcomes[name]["ok"] for name in (a, b, c)} == {a: True, b: True, c: True}
    refused = outcomes[d]
    assert (refused["ok"], refused["error"], refused["retriable"], refused["message"]) == (
        False,
        "ThrottlingQuotaExceededException",
        True,
        "The throttling quota has been exceeded.",
    )
    assert refused["throttle_time_ms"] > 0
    # The Java AdminClient records no throttle metric (docs/semantics.md).
    assert next(line for line in lines if line.get("event") == "metrics")["throttle_metrics"] == []
    held = kafka_broker.topics(kafka_ns.prefix)  # behind a barrier: a broker's Metadata lags the controller
    assert {a, b, c} <= set(held)
    assert d not in held
