"""``_driver/quorum_watch.py``: what a read of the controller quorum's leader epoch says (the controller changed since
the last read, or nothing known), and which answers are held for one (an "already done" for a change)."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from throttled_admin._driver.quorum_watch import REFRESH_S, RETRY_S, STUCK_S, QuorumWatch, asks_for_a_check
from throttled_admin._driver.quorum_wire import UNSUPPORTED_VERSION, QuorumAnswer
from throttled_admin._engine import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS, RequestKind, Send, TopicRef
from throttled_admin._engine.work import Operation

CLUSTER_AUTHORIZATION_FAILED, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT = 31, 6, 7


def test_the_baseline_is_the_latest_epoch_read() -> None:
    watch = QuorumWatch()
    assert watch.read(None) is None  # nothing read: no baseline
    assert watch.epoch is None
    assert watch.read(QuorumAnswer(0, 1, 3)) == 3
    assert watch.epoch == 3
    assert watch.read(QuorumAnswer(0, 2, 4)) == 4
    assert watch.read(QuorumAnswer(0, 1, 3)) == 3  # a broker that forwards to a stale leader: read, not the baseline
    assert watch.epoch == 4
    assert watch.read(QuorumAnswer(NOT_LEADER_OR_FOLLOWER)) is None  # a read that fails keeps the baseline
    assert watch.epoch == 4


def test_a_read_the_cluster_refuses_for_good_is_asked_once(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    watch = QuorumWatch(lambda: now[0])
    with caplog.at_level(logging.DEBUG, logger="throttled_admin"):
        assert watch.due()
        watch.read(QuorumAnswer(CLUSTER_AUTHORIZATION_FAILED))
        now[0] += 10 * REFRESH_S
        assert not watch.due()  # an authorizer logs every denial: asked once
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1, infos
    assert "DESCRIBE on CLUSTER" in infos[0]


@pytest.mark.parametrize("code", [None, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT])
def test_a_first_read_that_got_nothing_is_asked_again_later(code: int | None) -> None:
    """Found by review (helper 58): an election at start-up (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT) turned the
    watch off for the client's life; only a refusal that lasts does."""
    now = [0.0]
    watch = QuorumWatch(lambda: now[0])
    assert watch.due()
    assert not watch.due()  # asked for once until it ends
    watch.read(None if code is None else QuorumAnswer(code))
    now[0] += RETRY_S - 0.1
    assert not watch.due()
    now[0] += 0.1
    assert watch.due()


def test_a_read_as_the_client_is_made_that_got_nothing_is_asked_again_as_the_first_call_comes() -> None:
    """Review 137: the making's read that got nothing (a client made before its cluster answers) held the next one
    ``RETRY_S`` back, and the first call's requests went with no epoch known, their "already done" answers told
    unchecked. The first call reads it again at once; after that one, ``RETRY_S`` as before."""
    now = [0.0]
    watch = QuorumWatch(lambda: now[0])
    assert watch.due(making=True)
    assert watch.under_way
    assert not watch.due()
    watch.read(None)
    assert not watch.under_way
    now[0] += 1.0
    assert watch.due()  # the first call
    watch.read(None)
    now[0] += RETRY_S - 0.1
    assert not watch.due()
    now[0] += 0.1
    assert watch.due()
    watch.read(QuorumAnswer(0, 1, 3))
    assert not watch.due(making=True)  # (a baseline read: a minute, whoever asks)
    assert watch.epoch == 3


def test_a_baseline_a_minute_old_is_read_again_once() -> None:
    now = [0.0]
    watch = QuorumWatch(lambda: now[0])
    assert watch.due()
    watch.read(QuorumAnswer(0, 1, 3))
    now[0] = REFRESH_S - 1
    assert not watch.due()
    now[0] = REFRESH_S
    assert watch.due()
    assert not watch.due()  # under way: asked for once
    watch.read(QuorumAnswer(0, 2, 4))
    assert not watch.due()  # fresh again
    now[0] = 2 * REFRESH_S + 1
    assert watch.due()


def test_a_read_asked_for_that_never_ended_is_asked_for_again() -> None:
    """Found by review (helper 59): Ctrl-C between ``due`` and the reader taking the read left it asked for, and the
    watch never read again."""
    now = [0.0]
    watch = QuorumWatch(lambda: now[0])
    assert watch.due()  # asked for, and the read never handed to the reader
    now[0] = STUCK_S - 1
    assert not watch.due()
    now[0] = STUCK_S
    assert watch.due()


def test_a_broker_without_describe_quorum_turns_the_watch_off() -> None:
    watch = QuorumWatch()
    assert watch.due()
    watch.read(QuorumAnswer(UNSUPPORTED_VERSION))
    assert watch.epoch is None
    assert not watch.due()


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
