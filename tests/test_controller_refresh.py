"""After the node librdkafka sends mutations to goes away, the driver reads Metadata until one names another controller
(``_driver/controller_refresh.py``; issue 37's stranded queue, found on the three-node Kafka 4.4 quorum).

librdkafka waits for the controller the latest Metadata named, and a KRaft broker names a stopped node until its
session times out; QuotaBroker's ``stop_node(fenced_after_s=)`` names it so. Was: the topics of a call made after
the kill ended "outcome unknown: no response by the deadline", never sent, the cluster never having received them."""

from __future__ import annotations

import threading

import pytest

from tests.reliability_helpers import outcomes
from tests.support import BrokerFactory
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin._driver.controller_refresh import ControllerRefresh


def test_after_the_controller_node_is_killed_the_next_call_goes_to_the_next_controller(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(num_brokers=3)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0}) as admin:
        assert outcomes(admin.create_topics([NewTopic("warm", 1, 1)])) == {"warm": None}
        killed = broker.controller_id
        broker.stop_node(killed, kill=True, fenced_after_s=3.0)  # Metadata names the killed node for 3 s more
        names = [f"after-{i}" for i in range(3)]
        results = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names], timeout_ms=15_000), 30)
    assert results == dict.fromkeys(names), results
    assert broker.controller_id != killed
    assert set(broker.topics()) == {"warm", *names}


class _Reads:
    """Metadata from node 3 that names the lost node 1 ``stale`` times, then ``then`` (answered by ``then_by``)."""

    def __init__(self, stale: int, then: int = 2, then_by: int = 3) -> None:
        self.stale, self.then, self.then_by = stale, then, then_by
        self.count = 0
        self.done = threading.Event()

    def __call__(self, timeout_s: float) -> tuple[int, int]:
        self.count += 1
        if self.count > self.stale:
            self.done.set()
            return self.then, self.then_by
        return 1, 3


@pytest.mark.parametrize(
    ("reads", "expected"),
    [
        pytest.param(_Reads(stale=2), 3, id="until it names a node not lost"),
        # the node is back (a restart): librdkafka's controller is up
        pytest.param(_Reads(stale=1, then=1, then_by=1), 2, id="until the lost node it names answers it itself"),
    ],
)
def test_metadata_is_read_until_it_names_a_controller_that_answers(reads: _Reads, expected: int) -> None:
    refresh = ControllerRefresh(reads, LookupError)
    refresh.lost(1)
    assert reads.done.wait(10)
    refresh.close(10)
    assert reads.count == expected


def test_no_metadata_is_read_after_close() -> None:
    reads = _Reads(stale=0)
    refresh = ControllerRefresh(reads, LookupError)
    refresh.close()
    refresh.lost(1)
    assert reads.count == 0
