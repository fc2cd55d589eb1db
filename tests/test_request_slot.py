"""The one mutation request in flight, end to end over loopback against QuotaBroker: sharing a request never hurts a
call, and the slot follows the connection (issue 27, findings 1 and 8). docs/semantics.md, rules b and c."""

from __future__ import annotations

import time
from concurrent.futures import Future

from tests.support import BrokerFactory, wait_until
from throttled_admin import NewTopic, NotSentError, OutcomeUnknownError, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker, RequestRecord


def _client(broker: QuotaBroker, **kwargs: object) -> ThrottledAdminClient:
    conf = {"bootstrap.servers": broker.bootstrap_servers, "client.id": "slot", "log_level": 0}
    return ThrottledAdminClient(conf, **kwargs)  # type: ignore[arg-type]


def _outcome(futures: dict[str, Future[None]], name: str) -> BaseException | None:
    return futures[name].exception(60)


# Was (finding 8): a 15 s call and an 8 s call shared a request whose librdkafka timeout was the short call's 8 s; the
# controller took 9 s (a slow CreateTopicPolicy) and the 15 s call ended "outcome unknown" at 15 s. Sent alone it
# succeeded at 9.7 s. Here the same at a third of the time: calls of 4.2 s and 2.5 s (a factor of 1.8 when sent, so they
# share), the controller taking 3 s over the long call's topic.
def test_a_call_sharing_a_request_with_a_shorter_one_gets_the_answer_it_would_get_alone(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker()
    with _client(broker) as admin:
        assert _outcome(admin.create_topics([NewTopic("warm", 1, 1)]), "warm") is None
        broker.delay_next("CreateTopics", 0.3)  # holds the slot, so that the next two calls queue together
        first = admin.create_topics([NewTopic("first", 1, 1)], timeout_ms=30000)
        assert wait_until(lambda: "first" in broker.topics(), 10)
        broker.slow_policy("slow-", 3.0)
        short = admin.create_topics([NewTopic("short", 1, 1)], timeout_ms=2500)
        started = time.monotonic()
        long = admin.create_topics([NewTopic("slow-long", 1, 1)], timeout_ms=4200)
        long_exc = _outcome(long, "slow-long")
        took_s = time.monotonic() - started
        short_exc = _outcome(short, "short")
        assert _outcome(first, "first") is None
    shared = [r for r in broker.request_log() if r.api_name == "CreateTopics" and "slow-long" in r.errors]
    assert shared
    assert "short" in shared[0].errors, "the two calls did not share a request"
    assert long_exc is None, f"the 4.2 s call failed after {took_s:.1f} s: {long_exc!r}"
    assert isinstance(short_exc, OutcomeUnknownError) or short_exc is None, repr(short_exc)
    assert {"short", "slow-long"} <= set(broker.topics())


def _mutations(broker: QuotaBroker, name: str) -> list[RequestRecord]:
    return [r for r in broker.request_log() if r.api_name == "CreateTopics" and name in r.errors]


def _sentinel_answered(broker: QuotaBroker) -> bool:
    return any(r.api_name == "DeleteTopics" and r.responded_at is not None for r in broker.request_log())


# Was (finding 1): call a (2 s deadline) got its answer 6 s late, after librdkafka had given up on it; librdkafka keeps
# the abandoned request on its connection for socket.timeout.ms (60 s), and the next call, b (3 s deadline), was
# written behind it: b was told OutcomeUnknownError at 5 s, and the broker applied b at 6 s, when it read it.
def test_nothing_is_written_behind_a_request_librdkafka_abandoned(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with _client(broker) as admin:
        assert _outcome(admin.create_topics([NewTopic("warm", 1, 1)]), "warm") is None
        broker.delay_next("CreateTopics", 6.0)
        a_exc = _outcome(admin.create_topics([NewTopic("a", 1, 1)], timeout_ms=2000), "a")
        assert isinstance(a_exc, OutcomeUnknownError), repr(a_exc)
        b_exc = _outcome(admin.create_topics([NewTopic("b", 1, 1)], timeout_ms=3000), "b")
        assert isinstance(b_exc, NotSentError), repr(b_exc)
        assert "an earlier request that got no answer" in str(b_exc)
        assert wait_until(lambda: _sentinel_answered(broker), 30)  # a's answer came, then the sentinel's
        assert not _mutations(broker, "b"), "b was written behind the abandoned request"
        # The connection is free again: the next call goes through at once.
        assert _outcome(admin.create_topics([NewTopic("c", 1, 1)], timeout_ms=3000), "c") is None
    assert set(broker.topics()) == {"warm", "a", "c"}


# Was (finding 1): when a's lost answer carried a throttle (a 300-partition create over a 10/s quota: 19 s), b waited
# 19 s unread in the muted connection, and throttle-time-max stayed 0. Here: 40 partitions over 10/s, a 3 s throttle.
def test_nothing_is_written_into_the_mute_of_an_answer_the_client_never_saw(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)
    with _client(broker) as admin:
        assert _outcome(admin.create_topics([NewTopic("warm", 1, 1)]), "warm") is None
        broker.delay_next("CreateTopics", 2.0)
        a_exc = _outcome(admin.create_topics([NewTopic("a", 40, 1)], timeout_ms=1500), "a")
        assert isinstance(a_exc, OutcomeUnknownError), repr(a_exc)
        b_exc = _outcome(admin.create_topics([NewTopic("b", 1, 1)], timeout_ms=10000), "b")
    assert b_exc is None or isinstance(b_exc, NotSentError), repr(b_exc)
    for record in _mutations(broker, "b"):
        assert record.held_s < 0.05, f"b waited {record.held_s:.1f} s in a muted connection"
    assert _mutations(broker, "a")[0].throttle_time_ms > 2000


def test_wait_until_final_returns_once_a_lost_request_can_no_longer_be_applied(quota_broker: BrokerFactory) -> None:
    """An 'outcome unknown' whose request is still at the controller (a slow CreateTopicPolicy) cannot be settled by
    a read: wait_until_final() says when one can (the sentinel behind the request was answered)."""
    broker = quota_broker()
    with _client(broker) as admin:
        assert _outcome(admin.create_topics([NewTopic("warm", 1, 1)]), "warm") is None
        assert admin.wait_until_final(0)
        broker.slow_policy("slow-", 2.0)
        exc = _outcome(admin.create_topics([NewTopic("slow-a", 1, 1)], timeout_ms=800), "slow-a")
        assert isinstance(exc, OutcomeUnknownError), repr(exc)
        assert "wait_until_final()" in str(exc)
        assert "slow-a" not in broker.topics()  # a read now would say "missing"
        assert not admin.wait_until_final(0.05)
        assert admin.wait_until_final(30)
        assert "slow-a" in broker.topics()  # a read now settles it
