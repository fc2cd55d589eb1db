"""``_driver/quorum_watch.py``: what a read of the controller quorum's leader epoch says (the controller changed since
the last read, or nothing known), and which answers are held for one (an "already done" for a change)."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from throttled_admin._driver.quorum_watch import REFRESH_S, QuorumWatch, asks_for_a_check
from throttled_admin._driver.quorum_wire import QuorumAnswer
from throttled_admin._engine import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS, RequestKind, Send, TopicRef
from throttled_admin._engine.work import Operation

CLUSTER_AUTHORIZATION_FAILED = 31


def test_an_epoch_grown_since_the_last_read_says_the_controller_changed() -> None:
    watch = QuorumWatch()
    assert not watch.read(None)  # nothing read: no baseline
    assert not watch.watching
    assert not watch.read(QuorumAnswer(0, 1, 3))  # the baseline
    assert watch.watching
    assert not watch.read(QuorumAnswer(0, 1, 3))
    assert watch.read(QuorumAnswer(0, 2, 4))  # an election since: and 4 is the next baseline
    assert not watch.read(QuorumAnswer(0, 2, 4))
    assert not watch.read(QuorumAnswer(0, 1, 3))  # a broker that forwards to a stale leader: nothing new
    assert watch.read(QuorumAnswer(0, 3, 5))
    assert not watch.read(None)  # a read that fails says nothing, and keeps the baseline
    assert watch.watching


def test_a_refused_read_is_logged_once_and_watches_nothing(caplog: pytest.LogCaptureFixture) -> None:
    watch = QuorumWatch()
    with caplog.at_level(logging.DEBUG, logger="throttled_admin"):
        for _ in range(3):
            assert not watch.read(QuorumAnswer(CLUSTER_AUTHORIZATION_FAILED))
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1, infos
    assert "DESCRIBE on CLUSTER" in infos[0]
    assert not watch.watching


def send(operation: Operation, validate_only: bool = False) -> Send:
    return Send(1, RequestKind(operation, validate_only), (TopicRef(1, "t"), TopicRef(1, "u")), ("t", "u"), 2, 30, 30)


def error(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


@pytest.mark.parametrize(
    ("operation", "code"),
    [
        (CREATE_TOPICS, KafkaError.TOPIC_ALREADY_EXISTS),
        (DELETE_TOPICS, KafkaError.UNKNOWN_TOPIC_OR_PART),
        (CREATE_PARTITIONS, KafkaError.INVALID_PARTITIONS),
    ],
)
def test_an_answer_is_held_for_a_read_when_a_result_says_already_done(operation: Operation, code: int) -> None:
    assert asks_for_a_check(send(operation), {"t": None, "u": error(code)})
    assert not asks_for_a_check(send(operation), {"t": None, "u": None})
    assert not asks_for_a_check(send(operation), {"t": error(KafkaError.POLICY_VIOLATION), "u": None})
    assert not asks_for_a_check(send(operation, validate_only=True), {"t": error(code), "u": None})


def test_another_operations_already_done_is_not_held() -> None:
    assert not asks_for_a_check(send(CREATE_TOPICS), {"t": error(KafkaError.UNKNOWN_TOPIC_OR_PART), "u": None})


def test_a_baseline_a_minute_old_is_read_again_once() -> None:
    now = [0.0]
    watch = QuorumWatch(lambda: now[0])
    assert not watch.due()  # no baseline: nothing to refresh
    watch.read(QuorumAnswer(0, 1, 3))
    now[0] = REFRESH_S - 1
    assert not watch.due()
    now[0] = REFRESH_S
    assert watch.due()
    assert not watch.due()  # under way: asked for once
    assert watch.read(QuorumAnswer(0, 2, 4))
    assert not watch.due()  # fresh again
    now[0] = 2 * REFRESH_S
    assert watch.due()
    assert not watch.read(None)  # a refresh that fails may be asked for again
    assert watch.due()


def test_a_read_the_cluster_refused_is_not_wanted_again_one_nobody_answered_is() -> None:
    watch = QuorumWatch()
    assert watch.wanted
    watch.read(None)  # not reachable yet, or not served
    assert watch.wanted
    watch.read(QuorumAnswer(CLUSTER_AUTHORIZATION_FAILED))
    assert not watch.wanted  # an authorizer logs every denial: asked once
    assert not watch.watching
