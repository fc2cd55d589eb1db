"""What the Java AdminClient (Apache Kafka 4.4.0's kafka-clients) really does, for docs/semantics.md's comparison.

Each check runs benchmarks/java/Reference.java against Apache Kafka 4.4.0 (benchmarks/_kafka.py: one broker with
one-second quota windows, B = R, Kafka's request log and the timestamping proxy), with a client-id quota entity
of its own, and prints what the client reported (each topic's exception, its message and throttle, when it came)
beside what the broker logged (each CreateTopics request: its topics, when it was written and taken up, its
controller deadline ``timeoutMs``, its answer's throttle and error codes). A claim of docs/semantics.md is
confirmed or corrected from this output; the command is in docs/semantics.md.

    .venv/bin/python benchmarks/java_semantics.py            # every check, ~3 min
    .venv/bin/python benchmarks/java_semantics.py --check deadline --check no-retry
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from typing import Any

from _kafka import KafkaBench, KafkaRecord, java_command, load_average


class Probe:
    """One check's client: a client id (its own quota entity) and what Reference.java printed."""

    def __init__(self, kafka: KafkaBench, rate: float | None) -> None:
        self.kafka = kafka
        self.client_id = f"sem-{uuid.uuid4().hex[:8]}"
        self.prefix = f"{self.client_id}."
        if rate is not None:
            kafka.set_quota(self.client_id, rate)
        self.lines: list[dict[str, Any]] = []
        self.offset = time.monotonic() - time.time()

    def run(self, *args: str, bootstrap: str | None = None) -> list[dict[str, Any]]:
        command = java_command("--bootstrap", bootstrap or self.kafka.bootstrap_servers, "--client-id", self.client_id)
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=300, check=False)
        self.lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0:
            raise RuntimeError(f"Reference.java exited {done.returncode}: {done.stderr[-2000:]}")
        return self.lines

    def name(self, suffix: str) -> str:
        return f"{self.prefix}{suffix}"

    def topics(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if "topic" in line]

    def start(self, job: int = 0) -> float:
        return float(next(line["at"] for line in self.lines if line.get("event") == "start" and line["job"] == job))

    def requests(self) -> list[KafkaRecord]:
        return self.kafka.records(self.client_id) if self.kafka.cluster else []

    def describe(self) -> str:
        """Every topic's outcome and every request, times in seconds since the first job started."""
        t0 = self.start()
        out = []
        for line in self.topics():
            name = line["topic"].removeprefix(self.prefix)
            if line["ok"]:
                out.append(f"    {name}: created at {line['at'] - t0:.2f} s")
            else:
                throttle = f", throttle_time_ms={line['throttle_time_ms']}" if "throttle_time_ms" in line else ""
                out.append(
                    f"    {name}: {line['error']} (retriable={line['retriable']}{throttle}) at {line['at'] - t0:.2f} s:"
                    f" {line['message']!r}"
                )
        t0_mono = t0 + self.offset
        for r in self.requests():
            topics = ",".join(n.removeprefix(self.prefix) for n in r.errors)
            codes = ",".join(str(c) for c in r.errors.values())
            out.append(
                f"    CreateTopics v{r.api_version} on :{r.port} [{topics}] written {r.arrived_at - t0_mono:.2f} s, "
                f"taken up {r.received_at - t0_mono:.2f} s, answered {(r.responded_at or 0) - t0_mono:.2f} s, "
                f"timeoutMs={r.timeout_ms}, throttle {r.throttle_time_ms} ms, errors [{codes}]"
            )
        return "\n".join(out)


def check_subset(kafka: KafkaBench) -> str:
    """Only the throttled topics are re-sent, after the response's throttle (KIP-219), not retry.backoff.ms."""
    probe = Probe(kafka, rate=10)  # B = 10
    probe.run("--names", ",".join(probe.name(f"s{i}:5") for i in range(4)))
    return probe.describe()


def check_deadline(kafka: KafkaBench) -> str:
    """A throttle (19 s) longer than the call's deadline (3 s): when does the call end, and with what?"""
    probe = Probe(kafka, rate=1)  # B = 1
    probe.run("--names", f"{probe.name('big:20')},{probe.name('small:1')}", "--timeout-ms", "3000")
    return probe.describe()


def check_fresh_call_while_throttled(kafka: KafkaBench) -> str:
    """A call made while the node is throttled (19 s: the first call's answer said so), with a 3 s deadline."""
    probe = Probe(kafka, rate=1)
    probe.run(
        "--names", f"{probe.name('big:20')},{probe.name('small:1')}", "--no-retry",
        "--then", "--names", probe.name("later:1"), "--timeout-ms", "3000",
    )  # fmt: skip
    return probe.describe()


def check_strict_overdraw(kafka: KafkaBench) -> str:
    """A strict request that overdraws the bucket (20 mutations, B = 1) with no topic refused: its throttle?"""
    probe = Probe(kafka, rate=1)
    probe.run("--names", probe.name("big:20"), "--then", "--names", probe.name("next:1"), "--no-retry")
    return probe.describe()


def check_no_retry(kafka: KafkaBench) -> str:
    """retryOnQuotaViolation(false): the throttled topic fails at once, with the response's throttle."""
    probe = Probe(kafka, rate=1)
    probe.run("--names", f"{probe.name('big:20')},{probe.name('small:1')}", "--no-retry")
    return probe.describe()


def check_long_throttle(kafka: KafkaBench) -> str:
    """A throttle (9 s) longer than request.timeout.ms (5 s here), within the deadline (20 s): disconnect?"""
    probe = Probe(kafka, rate=1)
    probe.run(
        "--config", "request.timeout.ms=5000", "--config", "default.api.timeout.ms=20000",
        "--names", f"{probe.name('big:10')},{probe.name('small:1')}",
    )  # fmt: skip
    return probe.describe() + "\n" + _connections(kafka, probe.client_id)


def check_defaults(kafka: KafkaBench) -> str:
    """Java's defaults: the controller deadline (timeoutMs) of a call with default.api.timeout.ms = 60 s."""
    probe = Probe(kafka, rate=None)
    probe.run("--names", probe.name("d:1"))
    return probe.describe()


def check_duplicates(kafka: KafkaBench) -> str:
    """A call naming a topic twice."""
    probe = Probe(kafka, rate=None)
    probe.run("--names", ",".join(probe.name(n) for n in ("x", "x", "y")))
    return probe.describe()


def check_concurrent(kafka: KafkaBench) -> str:
    """Five calls made at once under a quota: one request in flight per node? each call its own request?"""
    probe = Probe(kafka, rate=10)
    probe.run("--names", ",".join(probe.name(f"c{i}:4") for i in range(5)), "--batch-size", "1")
    return probe.describe()


def check_unreachable(kafka: KafkaBench) -> str:
    """No broker at the bootstrap address, a 3 s deadline."""
    probe = Probe(kafka, rate=None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    probe.run("--no-connect", "--names", probe.name("u:1"), "--timeout-ms", "3000", bootstrap=f"127.0.0.1:{port}")
    return probe.describe()


def check_close(kafka: KafkaBench) -> str:
    """close(1 s) while a throttled topic waits for its retry."""
    probe = Probe(kafka, rate=1)
    probe.run("--names", f"{probe.name('big:20')},{probe.name('small:1')}", "--close-after-ms", "1000")
    return probe.describe()


def check_blocking_callback(kafka: KafkaBench) -> str:
    """A done-callback that sleeps 3 s on the first topic: do the other topics of the same answer wait?"""
    probe = Probe(kafka, rate=None)
    probe.run("--names", ",".join(probe.name(f"b{i}:1") for i in range(3)), "--block-callback-ms", "3000")
    return probe.describe()


def check_close_waiting(kafka: KafkaBench) -> str:
    """close(1 s) while a call waits for a throttled node (19 s), with the default deadline."""
    probe = Probe(kafka, rate=1)
    probe.run(
        "--names", f"{probe.name('big:20')},{probe.name('small:1')}", "--no-retry",
        "--then", "--names", probe.name("later:1"), "--close-after-ms", "1000",
    )  # fmt: skip
    return probe.describe()


def check_batch_cap(kafka: KafkaBench) -> str:
    """One call of 5,001 one-partition topics (10,002 metadata records, over Kafka 4's 10,000)."""
    probe = Probe(kafka, rate=None)
    probe.run("--prefix", probe.prefix + "cap.", "--topics", "5001")
    failed = [line for line in probe.topics() if not line["ok"]]
    kinds = {(line["error"], line["message"]) for line in failed}
    requests = probe.requests()
    return (
        f"    {len(failed)} of {len(probe.topics())} failed: {sorted(kinds)}\n"
        f"    {len(requests)} CreateTopics request(s) of {[len(r.errors) for r in requests]} topics"
    )


def check_metrics(kafka: KafkaBench) -> str:
    """Does the admin client record any throttle metric?"""
    probe = Probe(kafka, rate=1)
    probe.run("--names", probe.name("m:5"))
    metrics = next(line for line in probe.lines if line.get("event") == "metrics")
    return probe.describe() + f"\n    metrics mentioning throttle: {metrics['throttle_metrics']}"


def _connections(kafka: KafkaBench, client_id: str) -> str:
    """The client's connections to the broker (the proxy's ports), from the proxy's log."""
    ports = sorted({port for port, _ in kafka.requests_sent(client_id)})
    return f"    CreateTopics went out on {len(ports)} connection(s)"


CHECKS: dict[str, Callable[[KafkaBench], str]] = {
    "subset": check_subset,
    "deadline": check_deadline,
    "fresh-call-while-throttled": check_fresh_call_while_throttled,
    "strict-overdraw": check_strict_overdraw,
    "no-retry": check_no_retry,
    "long-throttle": check_long_throttle,
    "defaults": check_defaults,
    "duplicates": check_duplicates,
    "concurrent": check_concurrent,
    "unreachable": check_unreachable,
    "close": check_close,
    "close-waiting": check_close_waiting,
    "blocking-callback": check_blocking_callback,
    "batch-cap": check_batch_cap,
    "metrics": check_metrics,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", choices=list(CHECKS), action="append", help="default: all")
    args = parser.parse_args()
    with KafkaBench(window_num=1) as kafka:
        print(f"Apache Kafka 4.4.0 started in {kafka.start_seconds:.1f} s; load average {load_average():.1f}\n")
        for name in args.check or CHECKS:
            check = CHECKS[name]
            print(f"{name}: {(check.__doc__ or '').strip()}", flush=True)
            print(check(kafka), flush=True)
            print(flush=True)


if __name__ == "__main__":
    main()
