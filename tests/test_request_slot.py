"""The one mutation request in flight, end to end over loopback against QuotaBroker: sharing a request never hurts a
call, and the slot follows the connection (issue 27, findings 1 and 8). docs/semantics.md, rules b and c."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future

from tests.conftest import wait_until
from throttled_admin import NewTopic, OutcomeUnknownError, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker

BrokerFactory = Callable[..., QuotaBroker]


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
