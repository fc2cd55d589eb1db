"""``collect_outcomes``: a call's topics with their outcomes in one object (issue 30: a public helper that collects a
call's outcomes, like franz-go kadm's results). Unit tests on concurrent.futures' own Future, then a real call on
QuotaBroker."""

from __future__ import annotations

from concurrent.futures import CancelledError, Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.support import BrokerFactory
from throttled_admin import (
    CallOutcomes,
    NewTopic,
    ThrottledAdminClient,
    ThrottlingQuotaExceededException,
    TopicOutcome,
    collect_outcomes,
)


def _settled(error: BaseException | None = None) -> Future[None]:
    future: Future[None] = Future()
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
    return future


def test_outcomes_keep_the_calls_order_and_say_which_applied() -> None:
    throttled = ThrottlingQuotaExceededException(1500, "b")
    exists = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists"))
    futures = {"c": _settled(), "b": _settled(throttled), "a": _settled(exists), "d": _settled()}
    outcomes = collect_outcomes(futures)
    assert [o.topic for o in outcomes] == ["c", "b", "a", "d"]
    assert len(outcomes) == 4
    assert outcomes.applied == ["c", "d"]
    assert outcomes.failed == {"b": throttled, "a": exists}
    assert outcomes.by_error() == {"ThrottlingQuotaExceededException": ["b"], "KafkaException": ["a"]}
    assert outcomes["a"] == TopicOutcome("a", exists)
    assert outcomes["c"].applied
    assert outcomes.first_error() is throttled
    with pytest.raises(ThrottlingQuotaExceededException) as raised:
        outcomes.raise_first()
    assert raised.value is throttled
    with pytest.raises(KeyError):
        outcomes["nope"]


def test_a_call_where_every_topic_applied_raises_nothing() -> None:
    outcomes = collect_outcomes({"a": _settled(), "b": _settled()})
    assert outcomes == CallOutcomes((TopicOutcome("a"), TopicOutcome("b")))
    assert outcomes.first_error() is None
    assert outcomes.failed == {}
    assert outcomes.by_error() == {}
    outcomes.raise_first()


def test_a_cancelled_future_is_a_failed_topic_with_cancelled_error() -> None:
    cancelled: Future[None] = Future()
    assert cancelled.cancel()
    outcomes = collect_outcomes({"a": cancelled})
    assert isinstance(outcomes.failed["a"], CancelledError)


def test_a_timeout_names_the_topics_still_pending() -> None:
    pending: Future[None] = Future()
    with pytest.raises(TimeoutError, match=r"1 of 2 topics still pending after 0\.01 s: late"):
        collect_outcomes({"done": _settled(), "late": pending}, timeout=0.01)
    with pytest.raises(ValueError, match="timeout: expected None or seconds >= 0, got -1"):
        collect_outcomes({"done": _settled()}, timeout=-1)


def test_a_real_calls_outcomes_on_a_throttling_broker(quota_broker: BrokerFactory) -> None:
    """One topic exists already, one fits the quota, one is throttled (retry off): each says so, in order."""
    broker = quota_broker(controller_mutation_rate=1, quota_window_num=1, enforcement="strict")
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert collect_outcomes(admin.create_topics([NewTopic("old", 1, 1)])).applied == ["old"]
        topics = [NewTopic("old", 1, 1), NewTopic("new", 5, 1), NewTopic("later", 1, 1)]
        outcomes = collect_outcomes(admin.create_topics(topics, retry_on_quota_violation=False))
    assert [o.topic for o in outcomes] == ["old", "new", "later"]
    assert outcomes.applied == ["new"]
    old = outcomes.failed["old"]
    assert isinstance(old, KafkaException)
    assert old.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert isinstance(outcomes.failed["later"], ThrottlingQuotaExceededException)
    assert broker.topics().keys() >= {"old", "new"}
    assert "later" not in broker.topics()
