"""A bulk call's second request in flight, on a connection of its own (``_engine/lanes.py``, issue 40), end to end on
QuotaBroker over loopback: the broker takes the second request up while the first is still unanswered, every topic
is created once, and once a throttle is seen the client goes back to one request at a time."""

from __future__ import annotations

import itertools

import pytest

from tests.reliability_helpers import mutation_requests, outcomes
from tests.support import BrokerFactory
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin._engine.config import MAX_TOPICS_PER_REQUEST

CREATE_TOPICS = 19


@pytest.mark.slow
def test_the_broker_takes_up_a_bulk_calls_second_request_while_the_first_is_unanswered(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker()
    broker.delay_next("CreateTopics", 3.0)  # the first answer is held: the second goes meanwhile, or never
    names = [f"bulk-{i:05d}" for i in range(3 * MAX_TOPICS_PER_REQUEST)]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.list_topics(timeout=30)  # first contact
        assert outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names])) == dict.fromkeys(names)
    first, second, *rest = mutation_requests(broker, CREATE_TOPICS)
    assert first.responded_at is not None
    assert second.responded_at is not None
    # handled before the first was answered: not behind it on its connection (Kafka serves one request per
    # connection at a time), so on a connection of its own, and its controller deadline started as it arrived
    assert second.received_at < first.responded_at
    assert second.held_s == 0.0 or second.received_at < first.responded_at
    assert sorted(t for r in (first, second, *rest) for t in r.errors) == names  # each name sent once
    assert broker.topics() == dict.fromkeys(names, 1)


@pytest.mark.slow
def test_once_the_quota_speaks_a_bulk_call_goes_one_request_at_a_time(quota_broker: BrokerFactory) -> None:
    """The first request's topics refused with 89 (THROTTLING_QUOTA_EXCEEDED): once the client has read that answer,
    no request waits beside another (the second lane is retired), and every topic is still created. (The second
    connection's answer may be read first, and its next request written, while the refusal is on its way: one
    request at most overlaps after the broker sent it.)"""
    broker = quota_broker()
    broker.fail_next("CreateTopics", 89)
    names = [f"paced-{i:05d}" for i in range(6 * MAX_TOPICS_PER_REQUEST)]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.list_topics(timeout=30)
        assert outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names])) == dict.fromkeys(names)
    log = mutation_requests(broker, CREATE_TOPICS)
    refused = log[0]
    assert set(refused.errors.values()) == {89}
    assert refused.responded_at is not None
    after = sorted((r for r in log if r.received_at > refused.responded_at), key=lambda r: r.received_at)
    assert len(after) >= 5  # the refused topics again, and what was still queued
    overlapping = [
        (earlier, later)
        for earlier, later in itertools.pairwise(after)
        if earlier.responded_at is None or later.received_at < earlier.responded_at
    ]
    assert len(overlapping) <= 1, f"{len(overlapping)} requests in flight beside another after the quota spoke"
    assert broker.topics() == dict.fromkeys(names, 1)


@pytest.mark.slow
def test_the_applications_throttle_cb_hears_a_throttle_the_second_connection_carried(
    quota_broker: BrokerFactory,
) -> None:
    """The second handle is the client's own, but a throttle is what the broker said to the application's principal:
    ``throttle_cb`` from conf hears every throttled response, whichever connection carried it (the second handle's
    errors stay the engine's). The first answer is held, so the second connection's first request (the last topic)
    is charged after the first's 4,000 mutations, within the 12.3 s of debt they leave, and answered throttled."""
    broker = quota_broker(controller_mutation_rate=300, quota_window_num=1)  # librdkafka's v4: admitted, throttled
    broker.delay_next("CreateTopics", 5.0)  # the first answer is held: the second goes meanwhile
    heard: list[float] = []
    names = [f"lane-{i:05d}" for i in range(MAX_TOPICS_PER_REQUEST + 1)]
    conf = {"bootstrap.servers": broker.bootstrap_servers, "throttle_cb": lambda e: heard.append(e.throttle_time)}
    with ThrottledAdminClient(conf) as admin:
        admin.list_topics(timeout=30)  # first contact
        assert outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names])) == dict.fromkeys(names)
        admin.poll(0)  # (conf callbacks run on the client's user-code thread: poll() waits for those handed over)
    log = mutation_requests(broker, CREATE_TOPICS)
    [second] = [r for r in log if len(r.errors) == 1]  # the second connection's first request: one topic
    assert second.received_at < log[0].responded_at  # beside the first, unanswered: on the second connection
    assert second.throttle_time_ms > 0
    throttled = sorted(r.throttle_time_ms / 1000 for r in log if r.throttle_time_ms > 0)
    assert sorted(t for t in heard if t > 0) == pytest.approx(throttled, abs=0.001)
    assert broker.topics() == dict.fromkeys(names, 1)
