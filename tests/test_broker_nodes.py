"""QuotaBroker's nodes one at a time, as Kafka 4.4's do: a restart starts the quota sensors fresh, a stopped
controller fails over with the principal's bucket (fresh on the new controller), a forwarded throttle mutes only
the connection that carried it, and a stopped node stays registered (an unregistered one is not counted: creates
whose replication factor it was needed for are refused, uncharged). The same questions asked of Kafka:
tests/real_kafka/scenarios_quorum.py."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaException
from kafka.protocol.admin.cluster import DescribeQuorumRequest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support import BrokerFactory, wait_until
from tests.wire import WireClient, create_topics_request
from throttled_admin import NewTopic, PossiblyAppliedError, ThrottledAdminClient

THROTTLED = 89
INVALID_REPLICATION_FACTOR = 38
TOPIC_ALREADY_EXISTS = 36


def address(broker: Any, node: int) -> str:
    return f"127.0.0.1:{broker.ports[node]}"


def create_rf(version: int, name: str, rf: int) -> Any:
    T = CreateTopicsRequest.CreatableTopic
    topic = T(name=name, num_partitions=1, replication_factor=rf, assignments=[], configs=[])
    return CreateTopicsRequest(version=version, topics=[topic], timeout_ms=30000, validate_only=False)


def metadata(wire: WireClient) -> Any:
    return wire.request(MetadataRequest(version=12, topics=[], allow_auto_topic_creation=False))


def test_a_restart_starts_the_quota_buckets_fresh(quota_broker: BrokerFactory) -> None:
    """Kafka 4.4.0: after a SIGTERM restart of a one-node cluster, a principal that owed 30 s was admitted at once
    (throttle 0), and a 30-partition create drew a full bucket's throttle."""
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)
    with WireClient(broker.bootstrap_servers) as wire:
        assert wire.request(create_topics_request(7, ("owed", 30))).throttle_time_ms == 0
    assert broker.tokens() == pytest.approx(-20, abs=2)
    broker.restart()
    assert broker.tokens() == pytest.approx(10)
    with WireClient(broker.bootstrap_servers) as wire:
        answer = wire.request(create_topics_request(7, ("at-once", 1)))
    assert (answer.topics[0].error_code, answer.throttle_time_ms) == (0, 0)
    assert broker.topics() == {"owed": 30, "at-once": 1}


def test_a_forwarded_throttle_mutes_only_the_connection_that_carried_it(quota_broker: BrokerFactory) -> None:
    """Kafka 4.4.0, three nodes: after a throttled create through a node that is not the controller, a fresh
    connection to that node, one to the controller and one to the third node were answered at once; the throttled
    connection alone waited out the throttle."""
    broker = quota_broker(num_brokers=3, controller_mutation_rate=2)
    assert broker.controller_id == 0
    throttled = WireClient(address(broker, 1))
    assert throttled.request(create_topics_request(4, ("big", 32))).throttle_time_ms > 0
    for node in (1, 0, 2):
        with WireClient(address(broker, node)) as fresh:
            metadata(fresh)
    metadata(throttled)
    throttled.close()
    held = [(r.node_id, r.held_s > 1.0) for r in broker.request_log() if r.api_key == 3]  # the throttle: ~5 s
    assert held == [(1, False), (0, False), (2, False), (1, True)]


def test_a_stopped_non_controller_keeps_the_debt_and_a_stopped_controller_forgives_it(
    quota_broker: BrokerFactory,
) -> None:
    """Kafka 4.4.0, three nodes: a restart of a node that is not the active controller kept the debt (a strict
    create through it was refused with the rest of the throttle); a stop of the active controller moved it and the
    debt was forgiven (a strict create admitted with throttle 0, then a full bucket's throttle)."""
    broker = quota_broker(num_brokers=3, controller_mutation_rate=2)  # burst 22
    with WireClient(address(broker, 1)) as wire:
        assert wire.request(create_topics_request(4, ("owed", 40))).throttle_time_ms > 0
    broker.restart_node(1)
    assert broker.controller_id == 0
    with WireClient(address(broker, 1)) as wire:
        assert wire.request(create_topics_request(7, ("refused", 1))).topics[0].error_code == THROTTLED
    broker.stop_node(0)
    assert broker.controller_id == 1
    with WireClient(address(broker, 2)) as wire:
        assert metadata(wire).controller_id == 1
        assert sorted(b.node_id for b in metadata(wire).brokers) == [1, 2]
        answer = wire.request(create_topics_request(7, ("forgiven", 1)))
        assert (answer.topics[0].error_code, answer.throttle_time_ms) == (0, 0)
    assert broker.tokens() == pytest.approx(21, abs=0.5)
    broker.start_node(0)
    assert broker.controller_id == 1  # the quorum keeps its new leader
    with WireClient(address(broker, 0)) as wire:
        assert sorted(b.node_id for b in metadata(wire).brokers) == [0, 1, 2]
    assert broker.topics() == {"owed": 40, "forgiven": 1}


def test_fail_over_moves_the_bucket_to_the_new_controller(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(num_brokers=3, controller_mutation_rate=2)
    with WireClient(address(broker, 0)) as wire:
        wire.request(create_topics_request(4, ("owed", 40)))
    assert broker.tokens() == pytest.approx(-18, abs=1)
    assert broker.fail_over() == 1
    assert broker.tokens() == pytest.approx(22)
    assert broker.fail_over(to=0) == 0  # the old controller never restarted: its sensors are still there
    assert broker.tokens() == pytest.approx(-18, abs=1)
    broker.stop_node(2)
    with pytest.raises(ValueError, match="not serving"):
        broker.fail_over(to=2)


@pytest.mark.parametrize("how", ["stop", "fail over"])
def test_a_create_forwarded_to_a_controller_that_went_away_is_re_sent_and_answered_already_exists(
    quota_broker: BrokerFactory, how: str
) -> None:
    """Kafka 4.4.0, three nodes, a rolling restart: creates forwarded to a controller that stopped before answering
    were re-sent by their broker to the next controller (``NodeToControllerRequestThread``), which answered
    TOPIC_ALREADY_EXISTS: the old one had applied them (issue 37)."""
    broker = quota_broker(num_brokers=3, controller_mutation_rate=2)
    held = broker.hold_controller_next(1.0)
    with WireClient(address(broker, 1)) as wire:
        request = create_topics_request(4, ("t", 3))
        wire.send(request)
        assert held.wait(10)
        if how == "stop":
            broker.stop_node(0)
        else:
            broker.fail_over()
        answer = wire.receive(request)
    assert answer.topics[0].error_code == TOPIC_ALREADY_EXISTS
    assert broker.topics() == {"t": 3}
    assert broker.tokens() == pytest.approx(22 - 3, abs=0.5)  # charged once: the re-send found it, charging nothing


def test_describe_quorum_names_the_active_controller_and_an_epoch_each_election_grows(
    quota_broker: BrokerFactory,
) -> None:
    """Kafka 4.4.0 answers DescribeQuorum on any node, forwarded to the active controller: the metadata log's
    leader, and an epoch that grows by one at each election (a failover, a controller stopped, a restart)."""
    broker = quota_broker(num_brokers=3)

    def quorum(node: int) -> tuple[int, int]:
        P = DescribeQuorumRequest.TopicData.PartitionData
        topic = DescribeQuorumRequest.TopicData(topic_name="__cluster_metadata", partitions=[P(partition_index=0)])
        with WireClient(address(broker, node)) as wire:
            answer = wire.request(DescribeQuorumRequest(version=2, topics=[topic])).topics[0].partitions[0]
        assert answer.error_code == 0
        return answer.leader_id, answer.leader_epoch

    assert quorum(2) == quorum(0) == (0, 1)
    broker.fail_over()
    assert quorum(0) == (1, 2)
    broker.stop_node(1)
    assert quorum(0) == (2, 3)
    broker.restart()
    assert quorum(0) == (2, 4)


def _quorum_read(admin: ThrottledAdminClient) -> bool:
    """The client's baseline of the quorum's epoch, read as it was made (a test of that read: nothing else says it is
    done)."""
    scheduler = admin._scheduler
    assert scheduler is not None
    return wait_until(lambda: scheduler._quorum.epoch == 1, 10)


def test_a_create_re_sent_after_a_failover_that_lost_no_connection_is_possibly_applied(
    quota_broker: BrokerFactory,
) -> None:
    """The client's own create reaches node 0 (QuotaBroker's Metadata names the controller), which applies it; the
    controller moves to node 1 before it answers (a leadership change: no node stops, no connection drops), so node 0
    re-sends it there, and node 1 answers "already exists". The client read the quorum's leader epoch as it was
    made, and reads it again before it tells that answer: grown since the create was sent, so the answer may
    be the re-send's, and the topic's outcome unknown (``_driver/quorum_watch``)."""
    broker = quota_broker(num_brokers=3)
    conf = {"bootstrap.servers": address(broker, 1), "client.id": "failover"}
    with ThrottledAdminClient(conf) as admin:
        admin.create_topics([NewTopic("first", 1, 1)])["first"].result(30)
        assert _quorum_read(admin)
        held = broker.hold_controller_next(5.0)  # (the failover ends the hold: the old controller applies, re-sends)
        future = admin.create_topics([NewTopic("t", 3, 1)])["t"]
        assert held.wait(10)
        assert broker.fail_over() == 1
        exc = future.exception(30)
    assert broker.topics() == {"first": 1, "t": 3}
    assert isinstance(exc, PossiblyAppliedError), exc
    assert exc.args[0].code() == TOPIC_ALREADY_EXISTS
    said = "The cluster's controller changed since the client last read it, before or while this CreateTopics was"
    assert said in str(exc)


def test_the_quorum_is_read_as_the_client_is_made_and_its_first_create_knows_the_epoch(
    quota_broker: BrokerFactory,
) -> None:
    """Issue 40: the client read the quorum's leader epoch as its first call came, and its DescribeQuorum went beside
    that call's first request (a Kafka broker forwards its requests to the controller one at a time: a 10,000-topic
    call took 7 % longer). It is read as the client is made, no call made, so the client's very first create, re-sent
    after a failover that lost no connection, is told possibly applied, and the call reads nothing."""
    broker = quota_broker(num_brokers=3)
    conf = {"bootstrap.servers": address(broker, 1), "client.id": "made"}
    with ThrottledAdminClient(conf) as admin:
        assert _quorum_read(admin)  # no call made
        held = broker.hold_controller_next(5.0)
        future = admin.create_topics([NewTopic("t", 3, 1)])["t"]
        assert held.wait(10)
        assert broker.fail_over() == 1
        exc = future.exception(30)
    assert isinstance(exc, PossiblyAppliedError), exc
    assert exc.args[0].code() == TOPIC_ALREADY_EXISTS
    asked = [r.api_name for r in broker.request_log() if r.api_name in ("DescribeQuorum", "CreateTopics")]
    assert asked == ["DescribeQuorum", "CreateTopics", "DescribeQuorum"], asked  # the baseline, the create, its check


def test_an_already_exists_with_the_controller_unchanged_is_the_brokers_word(quota_broker: BrokerFactory) -> None:
    """The same create of a topic that exists, no election since the client read the quorum: the broker's word."""
    broker = quota_broker(num_brokers=3)
    conf = {"bootstrap.servers": address(broker, 1), "client.id": "unchanged"}
    with ThrottledAdminClient(conf) as admin:
        admin.create_topics([NewTopic("t", 3, 1)])["t"].result(30)
        assert _quorum_read(admin)
        exc = admin.create_topics([NewTopic("t", 3, 1)])["t"].exception(30)
    assert type(exc) is KafkaException, exc
    assert exc.args[0].code() == TOPIC_ALREADY_EXISTS


def test_a_stopped_node_stays_registered_and_an_unregistered_one_is_not_counted(
    quota_broker: BrokerFactory,
) -> None:
    """Kafka 4.4.0, three nodes: with one stopped (SIGTERM or kill -9), creates of replication factor 3 were still
    admitted (20 s watched); a replication factor above the registered brokers fails with INVALID_REPLICATION_FACTOR
    and Kafka's words, uncharged."""
    broker = quota_broker(num_brokers=3, controller_mutation_rate=2)
    broker.stop_node(2, kill=True)
    with WireClient(address(broker, 1)) as wire:
        assert wire.request(create_rf(7, "rf3-stopped", 3)).topics[0].error_code == 0
    broker.start_node(2)
    broker.stop_node(2, unregister=True)
    with WireClient(address(broker, 1)) as wire:
        refused = wire.request(create_rf(7, "rf3", 3)).topics[0]
        assert wire.request(create_rf(7, "rf2", 2)).topics[0].error_code == 0
    assert (refused.error_code, refused.error_message) == (
        INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached "
        "because only 2 broker(s) are registered or some brokers have all their log directories cordoned.",
    )
    assert broker.tokens() == pytest.approx(20, abs=0.5)  # rf3-stopped and rf2 were charged, rf3 not
    broker.start_node(2)
    with WireClient(address(broker, 1)) as wire:
        assert wire.request(create_rf(7, "rf3-back", 3)).topics[0].error_code == 0
    assert broker.topics() == {"rf3-stopped": 1, "rf2": 1, "rf3-back": 1}


def test_a_request_in_a_muted_connection_is_never_handled_when_its_node_stops(quota_broker: BrokerFactory) -> None:
    """A request written into a muted connection waits unread in the node; when the node stops, the connection is
    closed with no answer and the request was never applied."""
    broker = quota_broker(num_brokers=3, controller_mutation_rate=2)
    wire = WireClient(address(broker, 1))
    assert wire.request(create_topics_request(4, ("big", 40))).throttle_time_ms > 0
    wire.send(create_topics_request(4, ("behind", 1)))
    assert wait_until(lambda: broker.open_connections() == 1, 10)
    broker.stop_node(1)
    with pytest.raises(ConnectionError):
        wire.receive(create_topics_request(4, ("behind", 1)))
    wire.close()
    assert wait_until(lambda: broker.open_connections() == 0, 10)
    assert broker.topics() == {"big": 40}
    with pytest.raises(ConnectionRefusedError):
        WireClient(address(broker, 1), timeout_s=2)
    broker.start_node(1)
    with WireClient(address(broker, 1)) as again:
        assert metadata(again).controller_id == 0


def test_the_last_node_is_stopped_by_stop(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(num_brokers=2)
    broker.stop_node(0)
    with pytest.raises(ValueError, match="last node"):
        broker.stop_node(1)
    with pytest.raises(ValueError, match="not serving"):
        broker.fail_over(to=0)
    broker.stop()
    broker.start()
    with WireClient(address(broker, 0)) as wire:
        assert sorted(b.node_id for b in metadata(wire).brokers) == [0, 1]
