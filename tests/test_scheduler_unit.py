"""The scheduler's own rules against a scripted transport: one request in flight, queued deadlines, exact
throttle attribution, transient retries, unknown outcomes, withdrawal, authentication errors."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from pytest_mock import MockerFixture

from tests.conftest import wait_until
from tests.fake_admin import HANG, FakeAdmin, Step, install
from throttled_admin import NewTopic, ThrottledAdminClient, ThrottlingQuotaExceededException


@pytest.fixture(autouse=True)
def fake(mocker: MockerFixture) -> None:
    install(mocker)


def make_client(**kwargs: Any) -> tuple[ThrottledAdminClient, FakeAdmin]:
    conf = {"bootstrap.servers": "127.0.0.1:1", "client.id": "unit", "retry.backoff.ms": 10}
    conf.update(kwargs.pop("conf", {}))
    client = ThrottledAdminClient(conf, **kwargs)
    return client, FakeAdmin.instances[-1]


def topics(*names: str) -> list[NewTopic]:
    return [NewTopic(n, 1, 1) for n in names]


def errors(futures: dict[str, Future[None]], timeout_s: float = 30) -> dict[str, BaseException | None]:
    return {name: future.exception(timeout_s) for name, future in futures.items()}


def code(exc: BaseException | None) -> int:
    assert isinstance(exc, KafkaException)
    return int(exc.args[0].code())


def test_a_call_queued_behind_a_hung_request_still_resolves_by_its_deadline() -> None:
    client, admin = make_client()
    admin.script.append(Step(HANG))
    with client:
        client.create_topics(topics("stuck"), timeout_ms=30000)
        queued = client.delete_topics(["other"], timeout_ms=300)
        started = time.monotonic()
        [error] = errors(queued, timeout_s=10).values()
        assert time.monotonic() - started < 5
    assert code(error) == KafkaError._TIMED_OUT
    assert "not sent" in str(error)  # certainly not applied
    assert [s.operation for s in admin.sent] == ["create_topics"]  # one request in flight: never sent


def test_concurrent_calls_of_one_kind_share_a_request_and_others_wait_their_turn() -> None:
    client, admin = make_client()
    admin.script.append(Step(HANG))  # holds the slot while the other calls queue up
    with client:
        client.create_topics(topics("first"), timeout_ms=1500)
        assert wait_until(lambda: bool(admin.sent), timeout_s=10)
        a = client.create_topics(topics("a1", "a2"))
        b = client.create_topics(topics("b1"))
        c = client.delete_topics(["gone"])
        for futures in (a, b, c):
            assert set(errors(futures).values()) == {None}
    assert [(s.operation, s.topics) for s in admin.sent[1:]] == [
        ("create_topics", ["a1", "a2", "b1"]),
        ("delete_topics", ["gone"]),
    ]


def test_each_response_throttle_is_recorded_once_for_its_own_request() -> None:
    client, admin = make_client()
    admin.script.extend([Step(throttle_s=0.05), Step(), Step(throttle_s=0.02)])
    with client:
        for name in ("x", "y", "z"):
            assert errors(client.create_topics(topics(name))) == {name: None}
        metrics = client.metrics()
    assert metrics["throttle-time-max"] == pytest.approx(50)
    assert metrics["throttle-time-avg"] == pytest.approx((50 + 0 + 20) / 3)


def test_a_request_that_got_no_response_records_no_throttle() -> None:
    client, admin = make_client()
    admin.script.append(Step(HANG))
    with client:
        errors(client.create_topics(topics("lost"), timeout_ms=200))
        metrics = client.metrics()
    assert metrics["throttle-time-avg"] != metrics["throttle-time-avg"]  # NaN: no response, nothing recorded


@pytest.mark.parametrize("transient", [KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT])
def test_nothing_applied_errors_are_retried_within_the_deadline(transient: int) -> None:
    client, admin = make_client()
    admin.script.extend([Step({"t": transient}), Step({"t": transient}), Step()])
    with client:
        assert errors(client.create_topics(topics("t"))) == {"t": None}
        assert client.metrics()["retry-total"] == 2
    assert len(admin.sent) == 3


def test_a_lost_response_is_retried_and_already_exists_says_an_earlier_attempt_may_have_applied_it() -> None:
    client, admin = make_client()
    admin.script.extend([Step({"t": KafkaError._TRANSPORT}), Step({"t": KafkaError.TOPIC_ALREADY_EXISTS})])
    with client:
        [error] = errors(client.create_topics(topics("t"))).values()
    assert code(error) == KafkaError.TOPIC_ALREADY_EXISTS
    assert "earlier attempt" in str(error)


def test_a_lost_response_at_the_deadline_is_reported_as_an_unknown_outcome() -> None:
    client, admin = make_client()
    admin.script.extend([Step({"t": KafkaError._TRANSPORT})] * 50)
    with client:
        [error] = errors(client.create_topics(topics("t"), timeout_ms=300)).values()
    assert code(error) == KafkaError._TIMED_OUT
    assert "outcome unknown" in str(error)


def test_cancel_withdraws_a_topic_not_yet_sent_and_it_is_never_sent() -> None:
    client, admin = make_client()
    admin.script.append(Step(HANG))
    with client:
        client.create_topics(topics("first"), timeout_ms=1500)
        assert wait_until(lambda: bool(admin.sent), timeout_s=10)
        futures = client.create_topics(topics("keep", "drop"))
        assert futures["drop"].cancel()
        assert futures["drop"].cancelled()
        assert errors({"keep": futures["keep"]}) == {"keep": None}
        assert not futures["keep"].cancel()  # resolved: too late
    assert all("drop" not in s.topics for s in admin.sent)


def test_an_authentication_failure_fails_pending_work_at_once() -> None:
    client, admin = make_client()
    admin.script.append(Step(HANG))
    with client:
        futures = client.create_topics(topics("a", "b"), timeout_ms=60000)
        assert wait_until(lambda: bool(admin.sent), timeout_s=10)
        admin.conf["error_cb"](KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: bad password"))
        started = time.monotonic()
        results = errors(futures, timeout_s=10)
        assert time.monotonic() - started < 5
    assert {code(e) for e in results.values()} == {KafkaError._AUTHENTICATION}


def _error_after_handshake_drops(timeout_ms: int, **kwargs: Any) -> BaseException | None:
    """A create in flight (never answered) while librdkafka logs, five times, what it logs when a SASL listener
    closes a PLAINTEXT client's connection on its first request; the create's outcome."""
    line = "[thrd:b:9092/bootstrap]: b:9092/bootstrap: Disconnected: connection closed by peer (after 0ms in state UP)"
    client, admin = make_client(**kwargs)
    admin.script.append(Step(HANG))
    with client:
        futures = client.create_topics(topics("a"), timeout_ms=timeout_ms)
        assert wait_until(lambda: bool(admin.sent), timeout_s=10)
        for _ in range(5):
            admin.conf["logger"].log(20, "%s [%s] %s", "FAIL", "rdkafka#producer-1", line)
        [error] = errors(futures, timeout_s=10).values()
    return error


def test_a_sasl_listener_dropping_every_connection_after_the_handshake_fails_pending_work_at_once(
    mocker: MockerFixture,
) -> None:
    mocker.patch("throttled_admin._driver.handshake_drops.required_sasl_mechanisms", return_value=["PLAIN"])
    error = _error_after_handshake_drops(60000)
    assert code(error) == KafkaError._AUTHENTICATION
    assert "requires SASL authentication (it offers PLAIN)" in str(error)
    assert "security.protocol is 'plaintext'" in str(error)


def test_a_listener_without_sasl_dropping_connections_is_left_to_the_deadline(mocker: MockerFixture) -> None:
    ask = mocker.patch("throttled_admin._driver.handshake_drops.required_sasl_mechanisms", return_value=None)
    assert code(_error_after_handshake_drops(1500)) == KafkaError._TIMED_OUT
    ask.assert_called_once_with("b:9092")


def test_with_sasl_configured_drops_after_the_handshake_are_not_taken_for_an_authentication_failure(
    mocker: MockerFixture,
) -> None:
    ask = mocker.patch("throttled_admin._driver.handshake_drops.required_sasl_mechanisms", return_value=["PLAIN"])
    sasl = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "p",
    }
    assert code(_error_after_handshake_drops(1500, conf=sasl)) == KafkaError._TIMED_OUT
    ask.assert_not_called()


def test_an_authentication_failure_after_a_request_got_through_says_the_topic_in_flight_may_be_applied() -> None:
    client, admin = make_client()
    admin.script.extend([Step({"t": KafkaError._TRANSPORT}), Step(HANG)])
    with client:
        futures = client.create_topics(topics("t"), timeout_ms=60000)
        assert wait_until(lambda: len(admin.sent) == 2, timeout_s=10)
        admin.conf["error_cb"](KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: bad password"))
        [error] = errors(futures, timeout_s=10).values()
    assert code(error) == KafkaError._AUTHENTICATION
    assert "outcome unknown" in str(error)


def test_close_from_a_done_callback_works() -> None:
    client, _ = make_client()
    closed = threading.Event()

    def close_it(_: Future[None]) -> None:
        client.close()
        closed.set()

    futures = client.create_topics(topics("a"))
    futures["a"].add_done_callback(close_it)
    assert closed.wait(10)
    assert client.closed


def test_a_throttle_of_zero_with_error_89_backs_off_exponentially_from_about_a_round_trip() -> None:
    client, admin = make_client(conf={"retry.backoff.ms": 100, "retry.backoff.max.ms": 1000})
    admin.script.extend([Step({"t": KafkaError.THROTTLING_QUOTA_EXCEEDED})] * 3 + [Step()])
    with client:
        assert errors(client.create_topics(topics("t"))) == {"t": None}
    gaps = [later.at - earlier.at for earlier, later in zip(admin.sent, admin.sent[1:], strict=False)]
    assert gaps[0] >= 0.004  # starts at about one round trip (at least 5 ms, +- 20 %), not retry.backoff.ms
    assert gaps[2] >= 0.016  # 20 ms +- 20 %: doubled each time without progress
    assert gaps[2] > gaps[0]


def test_progress_resets_the_back_off_of_error_89_without_a_throttle() -> None:
    client, admin = make_client()
    quota = KafkaError.THROTTLING_QUOTA_EXCEEDED
    admin.script.extend([Step({"b": quota, "c": quota}), Step({"c": quota}), Step()])  # "b" made progress
    with client:
        assert errors(client.create_topics(topics("a", "b", "c"))) == dict.fromkeys("abc")
    second_gap = admin.sent[2].at - admin.sent[1].at
    assert second_gap < 0.5  # back at the start of the sequence, not doubling on


def test_retry_off_throttled_topics_fail_with_the_responses_throttle_and_are_not_resent() -> None:
    client, admin = make_client(retry_on_quota_violation=False)
    admin.script.append(Step({"t": KafkaError.THROTTLING_QUOTA_EXCEEDED}, throttle_s=0.7))
    with client:
        [error] = errors(client.create_topics(topics("t"))).values()
    assert isinstance(error, ThrottlingQuotaExceededException)
    assert error.throttle_time_ms == 700
    assert len(admin.sent) == 1


def test_topics_refused_together_with_error_89_and_no_throttle_are_resent_together() -> None:
    client, admin = make_client()
    quota = KafkaError.THROTTLING_QUOTA_EXCEEDED
    admin.script.extend([Step({"a": quota, "b": quota, "c": quota}), Step()])
    with client:
        assert errors(client.create_topics(topics("a", "b", "c"))) == dict.fromkeys("abc")
    assert [s.topics for s in admin.sent] == [["a", "b", "c"], ["a", "b", "c"]]  # one back-off for the call


def test_requests_stay_under_kafkas_ten_thousand_records_per_operation() -> None:
    """QuorumController refuses a whole CreateTopics that makes more than MAX_RECORDS_PER_USER_OP = 10,000
    metadata records (one TopicRecord, one PartitionRecord per partition, one ConfigRecord per override)."""
    client, admin = make_client()
    with client:
        futures = client.create_topics(
            [NewTopic(f"wide{i}", 500, 1, config={"retention.ms": "1000"}) for i in range(30)]
        )
        assert set(errors(futures).values()) == {None}
    assert [len(s.topics) for s in admin.sent] == [19, 11]  # 19 x 502 = 9538 records, a 20th would pass 10,000
