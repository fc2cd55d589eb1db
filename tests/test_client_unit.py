"""Every branch of ThrottledAdminClient against a scripted inner AdminClient (pytest-mock)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import pickle
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from pytest_mock import MockerFixture

from tests.conftest import wait_until
from tests.fake_admin import HANG, FakeAdmin, Step, install
from throttled_admin import (
    CreatePartitionsOptions,
    CreateTopicsOptions,
    DeleteTopicsOptions,
    NewPartitions,
    NewTopic,
    ThrottledAdminClient,
    ThrottlingQuotaExceededException,
)

QUOTA = KafkaError.THROTTLING_QUOTA_EXCEEDED
SECRET = "s3cr3t-pa55word"


@pytest.fixture
def fake(mocker: MockerFixture) -> None:
    """The client as it is, with the scheduler's transport replaced by a scripted FakeAdmin."""
    install(mocker)


def make_client(**kwargs: Any) -> tuple[ThrottledAdminClient, FakeAdmin]:
    conf = {"bootstrap.servers": "fake:9092", "client.id": "unit", "retry.backoff.ms": 10}
    conf.update(kwargs.pop("conf", {}))
    client = ThrottledAdminClient(conf, **kwargs)
    return client, FakeAdmin.instances[-1]


def outcome(futures: dict[str, Future[None]], timeout_s: float = 30) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, future in futures.items():
        exc = future.exception(timeout_s)
        out[name] = None if exc is None else exc
    return out


def topics(*names: str) -> list[NewTopic]:
    return [NewTopic(n, 1, 1) for n in names]


pytestmark = pytest.mark.usefixtures("fake")


# -- KIP-599 retries -------------------------------------------------------------------------------


def test_only_throttled_topics_are_resent_until_all_succeed() -> None:
    client, admin = make_client()
    admin.script.extend([Step({"b": QUOTA, "c": QUOTA}, throttle_s=0.05), Step({"c": QUOTA}, throttle_s=0.05), Step()])
    with client:
        result = outcome(client.create_topics(topics("a", "b", "c")))
        assert result == {"a": None, "b": None, "c": None}
        assert [s.topics for s in admin.sent] == [["a", "b", "c"], ["b", "c"], ["c"]]
        metrics = client.metrics()
    assert metrics["retry-total"] == 2
    assert metrics["quota-violation-total"] == 3
    assert metrics["backoff-time-ms-total"] >= 90  # two waits of the broker's 50 ms throttle


def test_other_errors_fail_only_their_own_topic_and_are_not_retried() -> None:
    client, admin = make_client()
    admin.script.extend([Step({"b": KafkaError.TOPIC_ALREADY_EXISTS, "c": QUOTA}, throttle_s=0.02), Step()])
    with client:
        result = outcome(client.create_topics(topics("a", "b", "c")))
    assert result["a"] is None
    assert result["c"] is None
    assert result["b"].args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert [s.topics for s in admin.sent] == [["a", "b", "c"], ["c"]]


def test_the_wait_before_a_resend_is_the_brokers_throttle() -> None:
    client, admin = make_client()
    admin.script.extend([Step({"a": QUOTA}, throttle_s=0.3), Step()])
    with client:
        assert outcome(client.create_topics(topics("a"))) == {"a": None}
    first, second = admin.sent
    assert second.at - first.at >= 0.29


def test_deadline_fails_still_throttled_topics_with_the_remaining_throttle() -> None:
    client, admin = make_client()
    admin.script.extend([Step({"a": QUOTA}, throttle_s=0.2)] * 10)
    with client:
        started = time.monotonic()
        [error] = outcome(client.create_topics(topics("a"), timeout_ms=500)).values()
        elapsed = time.monotonic() - started
    assert isinstance(error, ThrottlingQuotaExceededException)
    assert error.topic == "a"
    assert 0 < error.throttle_time_ms <= 200
    # stop *before* a sleep that would pass the deadline: never sleeps to 500 ms and beyond for nothing
    assert len(admin.sent) in (2, 3)
    assert elapsed < 5


def test_throttle_longer_than_the_deadline_fails_at_once_without_sleeping() -> None:
    client, admin = make_client()
    admin.script.append(Step({"a": QUOTA, "b": QUOTA}, throttle_s=30))
    with client:
        started = time.monotonic()
        result = outcome(client.create_topics(topics("a", "b"), timeout_ms=2000))
        elapsed = time.monotonic() - started
    assert len(admin.sent) == 1
    assert all(isinstance(e, ThrottlingQuotaExceededException) for e in result.values())
    assert {e.topic for e in result.values()} == {"a", "b"}
    assert all(29000 <= e.throttle_time_ms <= 30000 for e in result.values())
    assert elapsed < 10  # the call did not sleep the 30 s throttle


def test_retry_off_fails_the_throttled_topic_at_once_with_the_responses_throttle() -> None:
    client, admin = make_client(retry_on_quota_violation=False)
    admin.script.append(Step({"b": QUOTA}, throttle_s=1.0))
    with client:
        result = outcome(client.create_topics(topics("a", "b")))
    assert result["a"] is None
    error = result["b"]
    assert isinstance(error, ThrottlingQuotaExceededException)
    assert 900 <= error.throttle_time_ms <= 1000
    assert len(admin.sent) == 1
    assert error.args[0].code() == QUOTA
    assert error.args[0].retriable()


def test_per_call_option_overrides_the_clients_retry_setting() -> None:
    client, admin = make_client(retry_on_quota_violation=False)
    admin.script.extend([Step({"a": QUOTA}, throttle_s=0.02), Step()])
    with client:
        assert outcome(client.create_topics(topics("a"), retry_on_quota_violation=True)) == {"a": None}
    assert len(admin.sent) == 2


def test_error_89_without_a_throttle_still_backs_off() -> None:
    client, admin = make_client(conf={"retry.backoff.ms": 100})
    admin.script.extend([Step({"a": QUOTA}), Step()])
    with client:
        assert outcome(client.create_topics(topics("a"))) == {"a": None}
    assert admin.sent[1].at - admin.sent[0].at >= 0.004  # about one round trip (at least 5 ms +- 20 %)


# -- KIP-219 back-off ------------------------------------------------------------------------------


def test_throttle_is_applied_before_the_result_so_the_next_call_sees_it() -> None:
    client, admin = make_client()
    admin.script.append(Step(throttle_s=0.4))  # permissive: admitted, but throttled
    with client:
        assert outcome(client.create_topics(topics("a"))) == {"a": None}
        admin.script.append(Step())
        assert outcome(client.create_topics(topics("b"))) == {"b": None}
    first, second = admin.sent
    assert second.at - first.at >= 0.39  # waited locally instead of sending into a muted connection


def test_retry_off_while_throttled_fails_at_once_and_sends_nothing() -> None:
    client, admin = make_client(retry_on_quota_violation=False)
    admin.script.append(Step(throttle_s=5))
    with client:
        outcome(client.create_topics(topics("a")))
        [error] = outcome(client.delete_topics(["a"])).values()
    assert isinstance(error, ThrottlingQuotaExceededException)
    assert 4000 <= error.throttle_time_ms <= 5000
    assert [s.operation for s in admin.sent] == ["create_topics"]
    assert client.metrics()["quota-violation-total"] == 1


def test_gate_longer_than_the_deadline_fails_fast_with_retry_on() -> None:
    client, admin = make_client()
    admin.script.append(Step(throttle_s=10))
    with client:
        outcome(client.create_topics(topics("a")))
        started = time.monotonic()
        [error] = outcome(client.create_partitions([NewPartitions("a", 3)], timeout_ms=1000)).values()
        assert time.monotonic() - started < 5
    assert isinstance(error, ThrottlingQuotaExceededException)
    assert len(admin.sent) == 1


def test_throttle_end_never_moves_backwards() -> None:
    client, admin = make_client()
    admin.script.append(Step(throttle_s=0.5))
    with client:
        outcome(client.create_topics(topics("a")))
        admin.conf["throttle_cb"](type("E", (), {"broker_id": 1, "throttle_time": 0.0, "broker_name": "b"})())
        admin.script.append(Step())
        outcome(client.create_topics(topics("b")))
    assert admin.sent[1].at - admin.sent[0].at >= 0.49


def test_a_throttle_reported_during_the_wait_extends_it() -> None:
    client, admin = make_client()
    admin.script.append(Step(throttle_s=0.3))
    with client:
        outcome(client.create_topics(topics("a")))
        futures = client.create_topics(topics("b"))  # waits for the 0.3 s throttle
        time.sleep(0.1)
        extended_at = time.monotonic()
        admin.conf["throttle_cb"](type("E", (), {"broker_id": 2, "throttle_time": 0.6, "broker_name": "b2"})())
        assert outcome(futures) == {"b": None}
    assert admin.sent[1].at >= extended_at + 0.59


def test_users_throttle_cb_is_still_called(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[float] = []

    def user_cb(event: Any) -> None:
        seen.append(event.throttle_time)
        raise RuntimeError("a bug in the user's callback")

    client, admin = make_client(conf={"throttle_cb": user_cb})
    admin.script.append(Step(throttle_s=0.01))
    with client:
        assert outcome(client.create_topics(topics("a"))) == {"a": None}
    assert seen == [0.01]
    assert "throttle_cb from conf raised" in caplog.text


# -- deadlines, close, threads ---------------------------------------------------------------------


def test_close_with_calls_in_flight_fails_them_and_nothing_hangs() -> None:
    client, admin = make_client()
    admin.script.append(Step(HANG))
    futures = client.create_topics(topics("a", "b"))
    assert wait_until(lambda: bool(admin.sent), timeout_s=10)
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 5
    for error in outcome(futures, timeout_s=1).values():
        assert isinstance(error, KafkaException)
        assert error.args[0].code() == KafkaError._DESTROY
        assert "closed" in str(error)
    with pytest.raises(RuntimeError, match="closed"):
        client.create_topics(topics("c"))
    client.close()  # idempotent


def test_close_interrupts_a_throttle_wait() -> None:
    client, admin = make_client()
    admin.script.append(Step({"a": QUOTA}, throttle_s=30))
    futures = client.create_topics(topics("a"), timeout_ms=60000)
    assert wait_until(lambda: bool(admin.sent), timeout_s=10)
    time.sleep(0.1)
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 5
    [error] = outcome(futures, timeout_s=1).values()
    assert error.args[0].code() == KafkaError._DESTROY


def test_a_response_that_never_comes_times_out_at_the_deadline() -> None:
    client, admin = make_client()
    admin.script.append(Step(HANG))
    with client:
        [error] = outcome(client.delete_topics(["a"], timeout_ms=200)).values()
    assert error.args[0].code() == KafkaError._TIMED_OUT
    assert "outcome unknown" in str(error)
    assert admin.sent[0].kwargs["request_timeout"] <= 0.2  # librdkafka's own request ends at the deadline


def test_one_client_shared_by_many_threads() -> None:
    client, admin = make_client()
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        result = outcome(client.create_topics(topics(f"t{i}-a", f"t{i}-b")))
        with lock:
            results.append(result)

    with client:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert len(results) == 40
    assert all(v is None for r in results for v in r.values())
    assert sorted(n for s in admin.sent for n in s.topics) == sorted(f"t{i}-{x}" for i in range(40) for x in "ab")


def test_confluent_kwargs_pass_through_and_request_timeout_is_capped() -> None:
    client, admin = make_client()
    with client:
        outcome(
            client.create_topics(
                topics("a"), validate_only=True, operation_timeout=5.0, request_timeout=99.0, timeout_ms=3000
            )
        )
        outcome(client.delete_topics(["a"], options=DeleteTopicsOptions(request_timeout=1.5, operation_timeout=0.5)))
    create, delete = admin.sent
    assert create.kwargs["validate_only"] is True
    assert create.kwargs["operation_timeout"] <= 3.0  # neither librdkafka timeout outlives the call's deadline
    assert create.kwargs["request_timeout"] <= 3.0
    assert delete.kwargs["operation_timeout"] == 0.5
    assert "validate_only" not in delete.kwargs
    assert delete.kwargs["request_timeout"] == 1.5


def test_it_is_an_admin_client_and_inherits_every_other_method_unchanged() -> None:
    from confluent_kafka.admin import AdminClient

    client, _ = make_client()
    with client:
        assert isinstance(client, AdminClient)
        for name in ("list_topics", "describe_configs", "incremental_alter_configs", "describe_topics"):
            ours = getattr(ThrottledAdminClient, name)
            assert ours.__wrapped__ is getattr(AdminClient, name)  # a fork check in front, its futures tracked
            assert inspect.signature(ours) == inspect.signature(getattr(AdminClient, name))
        assert "describe_cluster" in dir(client)
    with pytest.raises(RuntimeError, match="closed"):
        client.list_topics(timeout=1)  # librdkafka's handle is released by close()


def test_inherited_futures_resolve_once_whichever_of_librdkafka_and_close_comes_first() -> None:
    """The futures of inherited methods are chained to librdkafka's: its outcome passes through unchanged until
    close(), which fails those still pending; librdkafka completing one later changes nothing and raises
    nowhere. Ours are settled on the client's callback pool, never on librdkafka's thread."""
    from throttled_admin._client import _fail_inherited, _InheritedFutures
    from throttled_admin._driver.user_code import CallbackRunner

    runner = CallbackRunner()
    inherited = _InheritedFutures(runner)
    theirs: dict[str, Future[Any]] = {name: Future() for name in ("ok", "failed", "late")}
    for future in theirs.values():
        future.set_running_or_notify_cancel()
    ours = inherited.chain("describe_configs", theirs)
    assert type(ours) is dict
    assert list(ours) == list(theirs)
    assert all(type(f) is Future and f.running() and not f.cancel() for f in ours.values())
    single = inherited.chain("describe_cluster", Future())
    assert type(single) is Future
    assert inherited.chain("list_topics", "metadata") == "metadata"  # anything else as it is
    assert inherited.chain("poll", {}) == {}

    theirs["ok"].set_result({"retention.ms": "1"})
    theirs["failed"].set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
    assert ours["ok"].result(5) == {"retention.ms": "1"}
    assert ours["failed"].exception(5).args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    failing = _fail_inherited(inherited)
    assert failing is not None
    failing.join(5)
    for name, future in (("describe_configs", ours["late"]), ("describe_cluster", single)):
        error = future.exception(0).args[0]
        assert error.code() == KafkaError._DESTROY
        assert f"before {name} completed" in error.str()
    theirs["late"].set_result({"retention.ms": "2"})  # librdkafka, after close(): no InvalidStateError
    assert ours["late"].exception(0).args[0].code() == KafkaError._DESTROY

    late_call = inherited.chain("describe_topics", {"t": Future()})  # a call that raced close()
    assert late_call["t"].exception(0).args[0].code() == KafkaError._DESTROY
    assert _fail_inherited(inherited) is None  # nothing left to fail, no thread
    runner.close(time.monotonic() + 5)


# -- bad input: a clear error before anything is sent ----------------------------------------------

BAD_CREATES: list[tuple[Any, type[Exception], str]] = [
    ("a-topic", TypeError, "must be a list of NewTopic, got str"),
    ([], ValueError, "non-empty list"),
    ([NewTopic("ok", 1, 1), "x"], TypeError, r"new_topics\[1\] must be NewTopic"),
    (topics("bad name"), ValueError, "topic 'bad name'.*illegal"),
    (topics("."), ValueError, "cannot be"),
    (topics("x" * 250), ValueError, "longer than 249"),
    (topics("dup", "dup"), ValueError, "'dup' appears more than once"),
    (topics("a.b", "a_b"), ValueError, "'a.b' and 'a_b' collide"),
    ([NewTopic("zero", 0, 1)], ValueError, "topic 'zero': num_partitions must be >= 1"),
    ([NewTopic("neg", -2, 1)], ValueError, "topic 'neg': num_partitions"),
    ([NewTopic("rf", 1, 0)], ValueError, "topic 'rf': replication_factor"),
    ([NewTopic("both", replication_factor=2, replica_assignment=[[1, 2]])], ValueError, "'both'.*not both"),
    ([NewTopic("twice", replica_assignment=[[1, 1]])], ValueError, "'twice'.*broker twice"),
    ([NewTopic("ragged", replica_assignment=[[1], [1, 2]])], ValueError, "'ragged'.*same number"),
]


@pytest.mark.parametrize(("new_topics", "error", "message"), BAD_CREATES)
def test_bad_create_input_is_refused_before_sending(new_topics: Any, error: type[Exception], message: str) -> None:
    client, admin = make_client()
    with client, pytest.raises(error, match=message):
        client.create_topics(new_topics)
    assert admin.sent == []


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda c: c.delete_topics(["ok", 5]), TypeError, r"topics\[1\] must be topic name"),
        (lambda c: c.delete_topics(["a", "a"]), ValueError, "'a' appears more than once"),
        (lambda c: c.delete_topics([]), ValueError, "non-empty"),
        (lambda c: c.create_partitions([NewPartitions("p", 0)]), ValueError, "topic 'p': new_total_count"),
        (lambda c: c.create_partitions([NewTopic("p", 1, 1)]), TypeError, "must be NewPartitions"),
        (lambda c: c.create_topics(topics("a"), timeout_ms=0), ValueError, "timeout_ms must be a positive int"),
        (lambda c: c.create_topics(topics("a"), colour="red"), TypeError, "unexpected keyword argument.*colour"),
        (lambda c: c.delete_topics(["a"], validate_only=True), TypeError, "validate_only"),
        (lambda c: c.create_topics(topics("a"), options=DeleteTopicsOptions()), TypeError, "CreateTopicsOptions"),
    ],
)
def test_bad_input_of_every_call_is_refused_before_sending(call: Any, error: type[Exception], message: str) -> None:
    client, admin = make_client()
    with client, pytest.raises(error, match=message):
        call(client)
    assert admin.sent == []


def test_delete_of_colliding_names_is_fine() -> None:
    client, _admin = make_client()
    with client:
        assert outcome(client.delete_topics(["a.b", "a_b"])) == {"a.b": None, "a_b": None}


def test_bad_client_settings() -> None:
    with pytest.raises(TypeError, match="conf must be a dict"):
        ThrottledAdminClient("bootstrap")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout_ms"):
        ThrottledAdminClient({}, default_api_timeout_ms=-1)
    with pytest.raises(TypeError, match="retry_on_quota_violation"):
        ThrottledAdminClient({}, retry_on_quota_violation="yes")  # type: ignore[arg-type]


# -- secrets, exceptions, options ------------------------------------------------------------------


def test_no_secret_in_repr_logs_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client, admin = make_client(conf={"sasl.password": SECRET, "sasl.username": "u"})
    admin.script.extend([Step({"a": QUOTA}, throttle_s=0.01), Step({"a": KafkaError.POLICY_VIOLATION})])
    with client:
        result = outcome(client.create_topics(topics("a")))
        text = repr(client) + str(result) + repr(result) + caplog.text + str(client.metrics())
    assert SECRET not in text
    assert "fake:9092" in repr(client)


def test_exception_is_a_kafka_exception_with_throttle_and_topic() -> None:
    error = ThrottlingQuotaExceededException(1234, "t")
    assert isinstance(error, KafkaException)
    assert error.args[0].code() == QUOTA
    assert error.args[0].retriable()
    assert "The throttling quota has been exceeded." in str(error)
    assert "1234" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.throttle_time_ms, copy.topic) == (1234, "t")
    assert str(ThrottlingQuotaExceededException(0).args[0].str()) == "The throttling quota has been exceeded."


def test_options_are_frozen_values_changed_by_copying() -> None:
    options = CreateTopicsOptions(timeout_ms=1000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.timeout_ms = 5  # type: ignore[misc]
    assert dataclasses.replace(options, validate_only=True) == CreateTopicsOptions(timeout_ms=1000, validate_only=True)
    assert CreatePartitionsOptions().retry_on_quota_violation is None
    assert "timeout_ms=1000" in repr(options)
    with pytest.raises(ValueError, match="request_timeout"):
        CreateTopicsOptions(request_timeout=-1)
