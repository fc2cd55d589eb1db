"""ThrottledAdminClient end to end against QuotaBroker over loopback, checked against the broker's request log.

``strict``: error 89 whatever the version (some Kafka-compatible services; future librdkafka).
``by-version``: Apache Kafka with librdkafka's v4 requests: admitted, throttled, and (without us) muted.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError

from tests.support import BrokerFactory
from throttled_admin import (
    CreateTopicsOptions,
    DeleteTopicsOptions,
    NewPartitions,
    NewTopic,
    NotSentError,
    ThrottledAdminClient,
    ThrottlingQuotaExceededException,
    _client,
    _validation,
)
from throttled_admin.testing import QuotaBroker, RequestRecord

API = {"create_topics": 19, "delete_topics": 20, "create_partitions": 37}
SLACK_S = 0.02  # the broker stamps times around its own socket writes


@pytest.fixture
def client_for() -> Iterator[Callable[..., ThrottledAdminClient]]:
    clients: list[ThrottledAdminClient] = []

    def make(broker: QuotaBroker, **kwargs: Any) -> ThrottledAdminClient:
        client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "client.id": "e2e"}, **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def results(futures: Mapping[str, Future[Any]], timeout_s: float = 60) -> dict[str, BaseException | None]:
    return {name: f.exception(timeout_s) for name, f in futures.items()}


def records(broker: QuotaBroker, api_key: int) -> list[RequestRecord]:
    return [r for r in broker.request_log() if r.api_key == api_key]


def assert_java_semantics(log: list[RequestRecord], expected_topics: set[str]) -> None:
    """Only throttled topics are re-sent, nothing reaches a throttled broker, each topic succeeds once."""
    for before, after in itertools.pairwise(log):
        throttled = {t for t, code in before.errors.items() if code == KafkaError.THROTTLING_QUOTA_EXCEEDED}
        if throttled:
            assert set(after.errors) == throttled
        assert before.responded_at is not None
        # KIP-219 on the client side: the request was not even *sent* before the throttle ended...
        assert after.arrived_at >= before.responded_at + before.throttle_time_ms / 1000 - SLACK_S
    # ...so no request ever sat in a muted connection.
    assert all(r.held_s < SLACK_S for r in log)
    for api_key in {r.api_key for r in log}:
        successes = Counter(t for r in log if r.api_key == api_key for t, code in r.errors.items() if code == 0)
        assert successes == Counter(dict.fromkeys(expected_topics, 1))
    assert not any(code == KafkaError.TOPIC_ALREADY_EXISTS for r in log for code in r.errors.values())


# -- strict: error 89, subset retries ----------------------------------------------------------


def test_strict_create_retries_only_throttled_topics(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=2, enforcement="strict")  # burst 20
    client = client_for(broker)
    names = [f"s{i}" for i in range(6)]
    assert results(client.create_topics([NewTopic(n, 8, 1) for n in names])) == dict.fromkeys(names)
    log = records(broker, API["create_topics"])
    assert len(log) >= 3
    assert log[0].errors == {"s0": 0, "s1": 0, "s2": 0, "s3": 89, "s4": 89, "s5": 89}
    assert_java_semantics(log, set(names))
    assert broker.topics() == dict.fromkeys(names, 8)
    assert client.metrics()["retry-total"] == len(log) - 1


def test_strict_delete_and_create_partitions(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=2, enforcement="strict")
    for name in ("d0", "d1", "d2", "d3"):
        broker.create_topic(name, 8)
    for name in ("p0", "p1", "p2", "p3"):
        broker.create_topic(name, 1)
    client = client_for(broker)
    grown = client.create_partitions([NewPartitions(n, 9) for n in ("p0", "p1", "p2", "p3")])
    assert results(grown) == dict.fromkeys(["p0", "p1", "p2", "p3"])
    assert_java_semantics(records(broker, API["create_partitions"]), {"p0", "p1", "p2", "p3"})
    deleted = client.delete_topics(["d0", "d1", "d2", "d3"])
    assert results(deleted) == dict.fromkeys(["d0", "d1", "d2", "d3"])
    assert_java_semantics(records(broker, API["delete_topics"]), {"d0", "d1", "d2", "d3"})
    assert broker.topics() == dict.fromkeys(["p0", "p1", "p2", "p3"], 9)


def test_strict_retry_off_fails_the_throttled_topic_with_its_throttle(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1, enforcement="strict")
    client = client_for(broker, retry_on_quota_violation=False)
    outcome = results(client.create_topics([NewTopic("a", 15, 1), NewTopic("b", 1, 1)]))
    assert outcome["a"] is None
    error = outcome["b"]
    assert isinstance(error, ThrottlingQuotaExceededException)
    assert error.topic == "b"
    assert 300 <= error.throttle_time_ms <= 500
    assert len(records(broker, API["create_topics"])) == 1
    assert broker.topics() == {"a": 15}


def test_deadline_shorter_than_the_throttle_fails_fast_and_sends_nothing(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=1, quota_window_num=1)  # burst 1
    client = client_for(broker)
    # librdkafka's v4 is admitted and answered with its throttle (a strict quota answers 0 for an admitted one)
    assert results(client.create_topics([NewTopic("first", 5, 1)])) == {"first": None}  # K = -4: 4 s
    [error] = results(client.create_topics([NewTopic("second", 1, 1)], timeout_ms=1000)).values()
    assert isinstance(error, ThrottlingQuotaExceededException)
    assert 3000 <= error.throttle_time_ms <= 4000
    assert len(records(broker, API["create_topics"])) == 1


def test_a_call_turns_quota_retries_on_for_itself_when_the_client_has_them_off(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker()
    client = client_for(broker, retry_on_quota_violation=False)
    broker.fail_next("CreateTopics", KafkaError.THROTTLING_QUOTA_EXCEEDED)
    assert results(client.create_topics([NewTopic("a", 1, 1)], retry_on_quota_violation=True)) == {"a": None}
    broker.fail_next("CreateTopics", KafkaError.THROTTLING_QUOTA_EXCEEDED)
    options = CreateTopicsOptions(retry_on_quota_violation=True)
    assert results(client.create_topics([NewTopic("b", 1, 1)], options=options)) == {"b": None}
    assert [r.errors for r in records(broker, API["create_topics"])] == [{"a": 89}, {"a": 0}, {"b": 89}, {"b": 0}]


# -- by-version: librdkafka's permissive path plus our KIP-219 back-off -------------------------


def test_by_version_admitted_and_the_next_call_waits_instead_of_being_muted(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=2)  # burst 20
    client = client_for(broker)
    batches = [[f"b{i}a", f"b{i}b"] for i in range(3)]
    for batch in batches:
        assert results(client.create_topics([NewTopic(n, 8, 1) for n in batch])) == dict.fromkeys(batch)
    log = records(broker, API["create_topics"])
    assert [r.api_version for r in log] == [4, 4, 4]
    assert [set(r.errors) for r in log] == [set(b) for b in batches]
    assert log[0].throttle_time_ms == 0
    assert log[1].throttle_time_ms > 0
    assert log[2].throttle_time_ms > 0
    assert_java_semantics(log, {n for b in batches for n in b})
    metrics = client.metrics()
    assert metrics["backoff-time-ms-total"] >= log[1].throttle_time_ms - 50
    assert metrics["quota-violation-total"] == 0  # admitted: throttled, never rejected


def test_by_version_all_three_operations(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=20, quota_window_num=1)  # burst 20
    client = client_for(broker)
    assert results(client.create_topics([NewTopic("x", 25, 1)])) == {"x": None}  # K = -5: 250 ms
    assert results(client.create_partitions([NewPartitions("x", 30)])) == {"x": None}
    assert results(client.delete_topics(["x"])) == {"x": None}
    log = [r for r in broker.request_log() if r.api_key in API.values()]
    assert [r.api_key for r in log] == [19, 37, 20]
    assert [r.api_version for r in log] == [4, 2, 4]
    assert_java_semantics(log, {"x"})
    assert broker.topics() == {}


def test_mixed_outcomes_each_topic_gets_its_own(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1, enforcement="strict")
    broker.create_topic("exists", 1)
    client = client_for(broker)
    outcome = results(client.create_topics([NewTopic("new", 12, 1), NewTopic("exists", 1, 1), NewTopic("later", 1, 1)]))
    assert outcome["new"] is None
    assert outcome["later"] is None
    error = outcome["exists"]
    assert error is not None
    assert error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    log = records(broker, API["create_topics"])
    assert log[0].errors == {"new": 0, "exists": 36, "later": 89}
    assert set(log[1].errors) == {"later"}


def test_confluent_kafkas_settings_reach_the_broker_and_no_controller_deadline_outlives_the_call(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient]
) -> None:
    """validate_only and operation_timeout pass through to the request (the controller's timeout_ms), capped by the
    call's deadline. librdkafka's request_timeout is capped too (tests/test_engine_rules.py), and a caller's own
    reaches librdkafka (tests/test_reliability_faults.py: a lost response re-sent after request_timeout)."""
    broker = quota_broker()
    broker.create_topic("b", 1)
    client = client_for(broker)
    checked = client.create_topics(
        [NewTopic("a", 1, 1)], validate_only=True, operation_timeout=5.0, request_timeout=99.0, timeout_ms=3000
    )
    assert results(checked) == {"a": None}
    deleted = client.delete_topics(["b"], options=DeleteTopicsOptions(request_timeout=1.5, operation_timeout=0.5))
    assert results(deleted) == {"b": None}
    create, delete = [r for r in broker.request_log() if r.api_key in API.values()]
    assert create.validate_only is True
    assert create.timeout_ms is not None
    assert 0 < create.timeout_ms < 3000  # the controller's deadline ends before the call's, not the 5 s asked
    assert (delete.validate_only, delete.timeout_ms) == (None, 500)
    assert broker.topics() == {}  # "a" validated only, "b" deleted


EXITS_WHILE_THROTTLED = """
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker
broker = QuotaBroker(controller_mutation_rate=1, quota_window_num=1).start()
client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
client.create_topics([NewTopic("first", 51, 1)])["first"].result()  # throttled for about 50 s
client.create_topics([NewTopic("second", 1, 1)], timeout_ms=55000)  # waits out the throttle...
print("exiting", flush=True)                                            # ...as the script ends
"""


def test_interpreter_exit_does_not_wait_out_a_throttle() -> None:
    import subprocess
    import sys
    import time

    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", EXITS_WHILE_THROTTLED], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "exiting" in result.stdout
    assert time.monotonic() - started < 30  # the throttle was ~50 s: the exit did not wait for it


def test_sasl_secret_never_leaks(
    quota_broker: BrokerFactory,
    caplog: pytest.LogCaptureFixture,
    meter_provider: Any,
    metric_reader: Any,
) -> None:
    secret = "pa55-w0rd-never-shown"
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1, enforcement="strict", users={"svc": secret})
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "svc",
        "sasl.password": secret,
    }
    caplog.set_level(logging.DEBUG)
    with ThrottledAdminClient(conf, retry_on_quota_violation=False, meter_provider=meter_provider) as client:
        outcome = results(client.create_topics([NewTopic("ok", 12, 1), NewTopic("no", 1, 1)]))
        text = [repr(client), str(client.metrics()), repr(metric_reader.get_metrics_data())]
    text += [str(e) for e in outcome.values()] + [repr(e) for e in outcome.values()] + [caplog.text]
    assert outcome["ok"] is None
    assert isinstance(outcome["no"], ThrottlingQuotaExceededException)
    assert [r.principal for r in records(broker, API["create_topics"])] == ["svc"]
    assert not any(secret in t for t in text)
    assert broker.bootstrap_servers in text[0]  # the repr shows where it connects, and only that of conf


def test_a_calls_deadline_counts_from_the_call_its_checks_included(
    quota_broker: BrokerFactory, client_for: Callable[..., ThrottledAdminClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``timeout_ms`` counts from the call, as its caller counts, not from the end of the call's checks: those of
    50,000 topics take 20-30 ms, which the deadline left out (``benchmarks/deadline.py``: every future 30 ms later).
    Here the checks take longer than the call's timeout: no time is left, so nothing is sent and the topic is told
    "not sent"."""
    broker = quota_broker()
    client = client_for(broker)
    assert results(client.create_topics([NewTopic("reached", 1, 1)])) == {"reached": None}
    check = _validation.check_new_topics  # (what the client calls by the name it imported)

    def slow_check(items: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # (the checks' own time: a call of many topics)
        return check(items, **kwargs)

    monkeypatch.setattr(_client, "check_new_topics", slow_check)
    [error] = results(client.create_topics([NewTopic("late", 1, 1)], timeout_ms=100)).values()
    assert isinstance(error, NotSentError), error
    assert all("late" not in r.errors for r in records(broker, API["create_topics"]))
    assert "late" not in broker.topics()
