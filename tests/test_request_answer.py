"""The future confluent-kafka's C methods resolve for one request (``_client._Answering``): the answer goes to the
scheduler in the same call, on librdkafka's thread, as AdminClient's own wrapper would make it, with no
``concurrent.futures.Future`` (its Condition, lock and callbacks list) in between (issue 39's latency)."""

from __future__ import annotations

import logging
import threading

import pytest
from confluent_kafka import KafkaError, KafkaException

from throttled_admin._client import _Answering
from throttled_admin._driver.scheduler import Answer
from throttled_admin._driver.secret_hider import SecretHider

_NONE = SecretHider({})  # (no secret to hide)


def test_a_result_reaches_the_scheduler_per_topic_in_the_same_call() -> None:
    answers: list[tuple[Answer, threading.Thread]] = []
    request = _Answering(lambda answer: answers.append((answer, threading.current_thread())), _NONE)
    assert not request.answered
    request.set_result({"a": None, "b": KafkaError(KafkaError.TOPIC_ALREADY_EXISTS)})
    assert request.answered
    ((answer, thread),) = answers
    assert thread is threading.current_thread()
    assert isinstance(answer, dict)
    assert answer["a"] is None
    refused = answer["b"]
    assert isinstance(refused, KafkaException)
    assert refused.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_an_answer_that_applied_every_topic_hands_over_none_for_each_in_order() -> None:
    answers: list[Answer] = []
    _Answering(answers.append, _NONE).set_result({"b": None, "a": None})
    assert answers == [{"b": None, "a": None}]
    assert isinstance(answers[0], dict)
    assert list(answers[0]) == ["b", "a"]


def test_a_failed_request_hands_over_its_one_exception() -> None:
    answers: list[Answer] = []
    request = _Answering(answers.append, _NONE)
    failure = KafkaException(KafkaError(KafkaError._TIMED_OUT))
    request.set_exception(failure)
    assert answers == [failure]
    assert request.answered


def test_a_failing_hand_over_is_logged_not_raised_into_librdkafka(caplog: pytest.LogCaptureFixture) -> None:
    def broken(answer: Answer) -> None:
        raise RuntimeError("a bug")

    with caplog.at_level(logging.ERROR, logger="throttled_admin"):
        _Answering(broken, _NONE).set_result({"a": None})
    assert "handing over a request's answer failed" in caplog.text
