"""A bulk call's second request in flight, on a connection of its own (``_engine/lanes.py``, issue 40), end to end on
QuotaBroker over loopback: the broker takes the second request up while the first is still unanswered, every topic
is created once, and once a throttle is seen the client goes back to one request at a time."""

from __future__ import annotations

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
    broker.delay_next("CreateTopics", 1.0)  # the first answer is held: the second goes meanwhile, or never
    names = [f"bulk-{i:05d}" for i in range(3 * MAX_TOPICS_PER_REQUEST)]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.list_topics(timeout=30)  # first contact
        assert outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names])) == dict.fromkeys(names)
    first, second, *rest = mutation_requests(broker, CREATE_TOPICS)
    assert first.responded_at is not None and second.responded_at is not None
    # handled before the first was answered: not behind it on its connection (Kafka serves one request per
    # connection at a time), so on a connection of its own, and its controller deadline started as it arrived
    assert second.received_at < first.responded_at
    assert second.held_s == 0.0 or second.received_at < first.responded_at
    assert sorted(t for r in (first, second, *rest) for t in r.errors) == names  # each name sent once
    assert broker.topics() == dict.fromkeys(names, 1)


@pytest.mark.slow
def test_after_a_throttle_a_bulk_call_goes_one_request_at_a_time(quota_broker: BrokerFactory) -> None:
    """Strict KIP-599 enforcement: the first requests overdraw the bucket and the broker throttles (and refuses
    what comes while it is overdrawn); from the first throttled answer on, no request waits beside another."""
    broker = quota_broker(controller_mutation_rate=2000, quota_window_num=1, enforcement="strict")
    names = [f"paced-{i:05d}" for i in range(4 * MAX_TOPICS_PER_REQUEST)]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.list_topics(timeout=30)
        assert outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names]), timeout_s=60) == dict.fromkeys(
            names
        )
    log = mutation_requests(broker, CREATE_TOPICS)
    throttled = [r for r in log if r.throttle_time_ms > 0]
    assert throttled, "the quota never spoke"
    first_throttle = min(r.responded_at for r in throttled if r.responded_at is not None)
    after = sorted((r for r in log if r.received_at > first_throttle), key=lambda r: r.received_at)
    for earlier, later in zip(after, after[1:], strict=False):
        assert earlier.responded_at is not None
        assert later.received_at >= earlier.responded_at, "two requests in flight after a throttle"
    assert broker.topics() == dict.fromkeys(names, 1)
