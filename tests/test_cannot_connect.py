"""Finding 8 of the scheduler issue: a client that never reached a broker says so within seconds ("not sent:
cannot connect to HOST:PORT (librdkafka's reason)"), not "outcome unknown" at its deadline; and a broker that
comes up while a call waits still gets the call (nothing is reported "not sent" that librdkafka could still
send)."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaError

from tests.support import free_port
from throttled_admin import CannotConnectError, NewTopic, NotSentError, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("address", "reason"),
    [("127.0.0.1:{port}", "Connection refused"), ("localhost{port}", "Failed to resolve")],
)
def test_no_reachable_broker_is_reported_as_not_sent_long_before_the_deadline(
    address: str, reason: str, refused_address: str
) -> None:
    address = address.format(port=refused_address.rsplit(":", 1)[1])
    with ThrottledAdminClient({"bootstrap.servers": address}) as admin:
        futures = admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)], timeout_ms=120_000)
        for future in futures.values():
            error = future.exception(timeout=60)  # the deadline is 120 s away: resolved by the first contact's 5 s
            assert isinstance(error, CannotConnectError)
            assert isinstance(error, NotSentError)
            assert error.args[0].code() == KafkaError._TRANSPORT
            assert "CreateTopics not sent: cannot connect to " in str(error)
            assert reason in str(error)


def test_a_broker_that_comes_up_while_the_call_waits_gets_the_call() -> None:
    port = free_port()
    refused = threading.Event()

    def error_cb(error: KafkaError) -> None:
        if error.code() == KafkaError._TRANSPORT:
            refused.set()

    with ThrottledAdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "error_cb": error_cb}) as admin:
        futures = admin.create_topics([NewTopic("late", 1, 1)], timeout_ms=60_000)
        assert refused.wait(30)  # the client has tried and been refused
        with QuotaBroker(port=port) as broker:
            error = futures["late"].exception(timeout=60)
            if error is None:
                assert "late" in broker.topics()
            else:  # the first contact's 5 s ran out before the broker answered: then it was never sent
                assert isinstance(error, NotSentError), error
                assert "late" not in broker.topics()
