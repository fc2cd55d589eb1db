"""QuotaBroker as a Kafka 4 (KRaft) cluster: the controller's deadline, a slow controller, mutations handled
off the event loop one at a time, and forwarding (every node accepts mutations; one quota for the cluster).
Tests taking ``any_broker`` run on QuotaBroker and on the shared Apache Kafka 4.4."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka.protocol.admin.topics import CreatePartitionsRequest, DeleteTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.either_broker import EitherBroker
from tests.support import BrokerFactory
from tests.wire import WireClient
from throttled_admin.testing import QuotaBroker, RequestRecord

AnyBroker = Callable[..., EitherBroker]
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, METADATA = 19, 20, 37, 3
REQUEST_TIMED_OUT, NOT_CONTROLLER = 7, 41


def create_request(version: int, *topics: tuple[str, int], timeout_ms: int = 30000) -> object:
    from kafka.protocol.admin.topics import CreateTopicsRequest

    T = CreateTopicsRequest.CreatableTopic
    return CreateTopicsRequest(
        version=version,
        topics=[T(name=n, num_partitions=p, replication_factor=1, assignments=[], configs=[]) for n, p in topics],
        timeout_ms=timeout_ms,
        validate_only=False,
    )


def log_of(broker: QuotaBroker, api_key: int) -> list[RequestRecord]:
    return [r for r in broker.request_log() if r.api_key == api_key]


def node(broker: QuotaBroker, node_id: int) -> str:
    return f"127.0.0.1:{broker.ports[node_id]}"


# -- the controller's deadline ------------------------------------------------------------------


@pytest.mark.parametrize("timeout_ms", [0, -1])
def test_a_deadline_already_passed_fails_every_topic_and_changes_nothing(
    any_broker: AnyBroker, timeout_ms: int
) -> None:
    """ControllerApis turns timeout_ms into a deadline with ControllerRequestContext.requestTimeoutMsToDeadlineNs
    (now + timeout_ms, no special case for 0 or negative values); KafkaEventQueue times the event out before
    it runs, so every topic gets REQUEST_TIMED_OUT with a null message, nothing is created, nothing charged
    (the test's whole burst is still there afterwards)."""
    broker = any_broker(controller_mutation_rate=1)  # B = 11
    grow, gone, a, b = broker.t("grow"), broker.t("gone"), broker.t("a"), broker.t("b")
    broker.create_topic(grow, 1)
    broker.create_topic(gone, 1)
    with broker.wire() as wire:
        created = wire.request(create_request(7, (a, 1), (b, 2), (a, 1), timeout_ms=timeout_ms))
        deleted = wire.request(DeleteTopicsRequest(version=4, topic_names=[gone], timeout_ms=timeout_ms))
        grown = wire.request(
            CreatePartitionsRequest(
                version=3,
                topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=grow, count=3, assignments=None)],
                timeout_ms=timeout_ms,
                validate_only=False,
            )
        )
        burst = wire.request(create_request(7, (broker.t("burst"), 11)))
    assert {(t.name, t.error_code, t.error_message) for t in created.topics} == {
        (a, REQUEST_TIMED_OUT, None),
        (b, REQUEST_TIMED_OUT, None),
    }
    assert [(r.name, r.error_code) for r in deleted.responses] == [(gone, REQUEST_TIMED_OUT)]
    assert [(r.name, r.error_code) for r in grown.results] == [(grow, REQUEST_TIMED_OUT)]
    assert created.throttle_time_ms == 0
    assert ([t.error_code for t in burst.topics], burst.throttle_time_ms) == ([0], 0)  # nothing was charged
    expected = {grow: 1, gone: 1, broker.t("burst"): 11}
    assert broker.settled_topics(expected) == expected
    if broker.quota is not None:
        assert [r.mutations for r in broker.quota.request_log()] == [0, 0, 0, 11]


def test_controller_latency_delays_the_handling_before_the_deadline_check(quota_broker: BrokerFactory) -> None:
    """QuorumController handles an event when it reaches the head of its queue; a deadline passed while it
    waited (KafkaEventQueue's deadline map) fails it with REQUEST_TIMED_OUT and nothing is applied. The
    same request with a longer timeout_ms is applied after the delay."""
    broker = quota_broker()
    broker.set_controller_latency(0.4)
    with WireClient(broker.bootstrap_servers) as wire:
        late = wire.request(create_request(7, ("late", 1), timeout_ms=100))
        in_time = wire.request(create_request(7, ("in-time", 1), timeout_ms=10_000))
    assert [(t.name, t.error_code) for t in late.topics] == [("late", REQUEST_TIMED_OUT)]
    assert [(t.name, t.error_code) for t in in_time.topics] == [("in-time", 0)]
    assert broker.topics() == {"in-time": 1}
    for record in log_of(broker, CREATE_TOPICS):
        assert record.responded_at is not None
        assert record.responded_at - record.received_at >= 0.39
    broker.set_controller_latency(0)
    with pytest.raises(ValueError, match="controller latency"):
        broker.set_controller_latency(-1)
    with pytest.raises(ValueError, match="controller latency"):
        broker.set_controller_latency(float("nan"))


def test_stopping_during_controller_latency_applies_nothing_and_is_prompt(quota_broker: BrokerFactory) -> None:
    """A KRaft controller shutting down rejects its queued events (KafkaEventQueue: "The event queue is
    shutting down"): a mutation still waiting is not applied, and stop() does not wait out the latency."""
    broker = quota_broker()
    broker.set_controller_latency(30)
    with WireClient(broker.bootstrap_servers) as wire:
        wire.send(create_request(7, ("never", 1)))
        time.sleep(0.3)
        started = time.monotonic()
        broker.stop()
        assert time.monotonic() - started < 10
    assert broker.topics() == {}


def test_response_latency_does_not_count_against_the_controller_deadline(quota_broker: BrokerFactory) -> None:
    """set_latency delays the response after the controller has applied the mutation: the deadline
    (ControllerRequestContext) only bounds when the controller starts handling it."""
    broker = quota_broker()
    broker.set_latency(0.3)
    with WireClient(broker.bootstrap_servers) as wire:
        response = wire.request(create_request(7, ("applied", 1), timeout_ms=50))
    assert response.topics[0].error_code == 0
    assert broker.topics() == {"applied": 1}


def test_a_held_controller_times_out_a_mutation_that_waits_behind_it(quota_broker: BrokerFactory) -> None:
    """hold_controller_next holds the controller's handling of the next mutation, as a slow CreateTopicPolicy
    holds Kafka's controller thread; its event says when the hold starts. A mutation sent meanwhile through
    another node waits in the controller's queue past its deadline: REQUEST_TIMED_OUT, not applied."""
    broker = quota_broker(num_brokers=2)
    held = broker.hold_controller_next(1.0)
    slow, other = WireClient(node(broker, 0)), WireClient(node(broker, 1))
    slow_request, other_request = create_request(7, ("slow", 1)), create_request(7, ("other", 1), timeout_ms=200)
    with slow, other:
        slow.send(slow_request)
        assert held.wait(10)
        started = time.monotonic()
        timed_out = other.request(other_request)
        waited_s = time.monotonic() - started
        assert slow.receive(slow_request).topics[0].error_code == 0
    assert [(t.name, t.error_code) for t in timed_out.topics] == [("other", REQUEST_TIMED_OUT)]
    assert waited_s >= 0.5  # answered once the controller got to it, after the hold
    assert broker.topics() == {"slow": 1}
    with pytest.raises(ValueError, match="hold"):
        broker.hold_controller_next(-1)


def test_a_mutation_behind_a_held_one_on_the_same_node_is_applied_whatever_its_timeout(
    quota_broker: BrokerFactory,
) -> None:
    """A KRaft broker forwards one mutation at a time, so one sent to the same node (on another connection)
    while the controller holds the first reaches the controller only after it: its deadline starts then, and
    it is applied although its timeout_ms (200) is far shorter than the hold (as Kafka 4.4.0 does)."""
    broker = quota_broker(num_brokers=2)
    held = broker.hold_controller_next(1.0)
    slow, same = WireClient(node(broker, 0)), WireClient(node(broker, 0))
    slow_request, same_request = create_request(7, ("slow", 1)), create_request(7, ("behind", 1), timeout_ms=200)
    with slow, same:
        slow.send(slow_request)
        assert held.wait(10)
        behind = same.request(same_request)
        assert slow.receive(slow_request).topics[0].error_code == 0
    assert [(t.name, t.error_code) for t in behind.topics] == [("behind", 0)]
    assert broker.topics() == {"slow": 1, "behind": 1}


def test_mutations_are_applied_one_at_a_time_in_arrival_order(quota_broker: BrokerFactory) -> None:
    """KRaft's QuorumController is single-threaded: concurrent mutations from different connections queue
    behind each other, so with a controller latency L the second request is answered at least 2L after the
    first arrived."""
    broker = quota_broker(num_brokers=2)
    broker.set_controller_latency(0.3)
    first, second = WireClient(node(broker, 0)), WireClient(node(broker, 1))
    one_request, two_request = create_request(7, ("one", 1)), create_request(7, ("two", 1))
    with first, second:
        first.send(one_request)
        time.sleep(0.05)
        second.send(two_request)
        assert second.receive(two_request).topics[0].error_code == 0
        assert first.receive(one_request).topics[0].error_code == 0
    one, two = sorted(log_of(broker, CREATE_TOPICS), key=lambda r: r.received_at)
    assert one.errors == {"one": 0}
    assert two.errors == {"two": 0}
    assert one.responded_at is not None
    assert two.responded_at is not None
    assert two.responded_at - one.received_at >= 0.59  # two latencies: the second waited for the first


def test_other_connections_are_answered_while_a_huge_mutation_is_handled(quota_broker: BrokerFactory) -> None:
    """Kafka handles requests on request-handler threads and the controller on its own thread, never on the
    network threads: a 4,900-topic CreateTopics (near Kafka's 10,000-record limit for one operation), held
    on the controller a further 0.5 s, must not stall a Metadata request on another connection. The request
    log proves the order: the Metadata request arrived after the CreateTopics and was answered before it."""
    broker = quota_broker()
    broker.set_controller_latency(0.5)
    names = [f"bulk-{i:05d}" for i in range(4_900)]
    request = create_request(4, *[(name, 1) for name in names])  # v4: results carry no configs
    with WireClient(broker.bootstrap_servers, timeout_s=300) as bulk, WireClient(broker.bootstrap_servers) as probe:
        bulk.send(request)
        time.sleep(0.1)  # the frame (about 100 kB) is read and handed to the controller, which takes a while
        started = time.monotonic()
        probe.request(MetadataRequest(version=12, topics=[], allow_auto_topic_creation=False))
        probe_s = time.monotonic() - started
        response = bulk.receive(request)
    assert len(response.topics) == 4_900
    assert all(t.error_code == 0 for t in response.topics)
    [create] = log_of(broker, CREATE_TOPICS)
    [metadata] = log_of(broker, METADATA)
    assert create.responded_at is not None
    assert metadata.responded_at is not None
    assert metadata.arrived_at > create.arrived_at
    assert metadata.responded_at < create.responded_at, f"Metadata waited {probe_s:.2f} s for the bulk create"
    assert len(broker.topics()) == 4_900


# -- KRaft forwarding -----------------------------------------------------------------------------


def test_every_node_accepts_mutations_and_metadata_names_the_controller(quota_broker: BrokerFactory) -> None:
    """KRaft brokers forward CreateTopics/DeleteTopics/CreatePartitions to the active controller
    (ForwardingManager), so no node answers NOT_CONTROLLER; MetadataResponse still names the controller."""
    broker = quota_broker(num_brokers=3)
    for node_id in (1, 2):
        with WireClient(node(broker, node_id)) as wire:
            metadata = wire.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False))
            assert metadata.controller_id == 0
            assert wire.request(create_request(7, (f"via-{node_id}", 1))).topics[0].error_code == 0
    assert set(broker.topics()) == {"via-1", "via-2"}
    assert {r.node_id for r in log_of(broker, CREATE_TOPICS)} == {1, 2}


def test_not_controller_is_an_injected_fault_only(quota_broker: BrokerFactory) -> None:
    """NOT_CONTROLLER (41) is a ZooKeeper-era answer; QuotaBroker sends it only when injected."""
    broker = quota_broker(num_brokers=3)
    broker.fail_next("CreateTopics", NOT_CONTROLLER)
    with WireClient(node(broker, 1)) as wire:
        refused = wire.request(create_request(7, ("x", 1)))
        accepted = wire.request(create_request(7, ("x", 1)))
    assert refused.topics[0].error_code == NOT_CONTROLLER
    assert accepted.topics[0].error_code == 0
    assert broker.topics() == {"x": 1}


def test_one_cluster_wide_bucket_and_the_receiving_node_mutes(quota_broker: BrokerFactory) -> None:
    """The controller enforces the quota with one bucket per entity for the whole cluster
    (ControllerMutationQuotaManager on the active controller); the broker that received the request mutes
    the client's connection for the throttle (RequestHandlerHelper / ForwardingManager's
    sendForwardedResponse)."""
    broker = quota_broker(num_brokers=3, controller_mutation_rate=10, quota_window_num=1)  # burst 10
    with WireClient(node(broker, 1)) as one, WireClient(node(broker, 2)) as two:
        first = one.request(create_request(4, ("first", 15)))  # permissive: admitted, K = -5: 500 ms
        second = two.request(create_request(7, ("second", 1)))  # same bucket, although another node
        one.request(MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False))
    assert first.topics[0].error_code == 0
    assert 300 <= first.throttle_time_ms <= 500
    assert second.topics[0].error_code == 89
    held = [r for r in log_of(broker, METADATA) if r.node_id == 1]
    assert held[0].held_s > 0.2  # the connection to node 1 was muted


@pytest.mark.parametrize("bootstrap_node", [1, 2])
def test_kafka_python_admin_flow_bootstrapped_from_a_non_controller(
    quota_broker: BrokerFactory, bootstrap_node: int
) -> None:
    """kafka-python 3 sends mutations to the controller id from Metadata; the cluster is bootstrapped from a
    non-controller node."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions as KNewPartitions
    from kafka.admin import NewTopic as KNewTopic

    broker = quota_broker(num_brokers=3)
    admin = KafkaAdminClient(bootstrap_servers=node(broker, bootstrap_node), request_timeout_ms=30000)
    try:
        admin.create_topics([KNewTopic("kp", 2, 3)])
        admin.create_partitions({"kp": KNewPartitions(5)})
        assert broker.topics() == {"kp": 5}
        admin.delete_topics(["kp"])
    finally:
        admin.close()
    assert broker.topics() == {}


def test_confluent_kafka_admin_flow_bootstrapped_from_a_non_controller(quota_broker: BrokerFactory) -> None:
    """librdkafka sends admin requests to the controller it learns from Metadata, or any broker."""
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    broker = quota_broker(num_brokers=3)
    admin = AdminClient({"bootstrap.servers": node(broker, 2)})
    assert admin.create_topics([NewTopic("ck", 2, 3)])["ck"].exception(30) is None
    assert admin.create_partitions([NewPartitions("ck", 4)])["ck"].exception(30) is None
    assert broker.topics() == {"ck": 4}
    assert admin.delete_topics(["ck"])["ck"].exception(30) is None
    assert broker.topics() == {}


def test_throttled_admin_client_flow_on_a_three_node_cluster_under_quota(quota_broker: BrokerFactory) -> None:
    """Our client against a 3-node KRaft-like cluster bootstrapped from node 1, under a strict quota: every
    topic is created (retrying error 89 as Java's KafkaAdminClient does), grown and deleted."""
    from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient

    broker = quota_broker(num_brokers=3, controller_mutation_rate=20, quota_window_num=1, enforcement="strict")
    with ThrottledAdminClient({"bootstrap.servers": node(broker, 1)}) as admin:
        created = admin.create_topics([NewTopic(f"ours-{i}", 3, 3) for i in range(10)], timeout_ms=30000)
        assert {name: f.exception(60) for name, f in created.items()} == {f"ours-{i}": None for i in range(10)}
        grown = admin.create_partitions([NewPartitions("ours-0", 6)], timeout_ms=30000)
        assert grown["ours-0"].exception(60) is None
        deleted = admin.delete_topics([f"ours-{i}" for i in range(10)], timeout_ms=30000)
        assert all(f.exception(60) is None for f in deleted.values())
    assert broker.topics() == {}
    assert any(89 in r.errors.values() for r in log_of(broker, CREATE_TOPICS))


def test_mutations_from_many_threads_keep_every_topic(any_broker: AnyBroker) -> None:
    """Concurrent connections to different nodes all reach the one controller: nothing is lost or doubled."""
    broker = any_broker(num_brokers=3)
    errors: list[BaseException] = []
    addresses = broker.bootstrap_servers.split(",")
    if broker.quota is not None:
        addresses = [node(broker.quota, n) for n in broker.node_ids]

    def worker(index: int) -> None:
        try:
            with WireClient(addresses[index % len(addresses)], client_id=broker.client_id) as wire:
                for round_ in range(5):
                    name = broker.t(f"t-{index}-{round_}-{uuid.uuid4().hex[:6]}")
                    assert wire.request(create_request(7, (name, 1))).topics[0].error_code == 0
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    broker.settle(lambda: len(broker.topics()) == 45)
    assert len(broker.topics()) == 45


# -- KafkaJS (an independent client from npm) ----------------------------------------------------

KAFKAJS_FLOW = r"""
const { Kafka, logLevel } = require("kafkajs");
const [bootstrap] = process.argv.slice(2);
(async () => {
  const kafka = new Kafka({ clientId: "kafkajs-flow", brokers: [bootstrap], logLevel: logLevel.NOTHING,
                            retry: { retries: 3 } });
  const admin = kafka.admin();
  await admin.connect();
  const out = {};
  const cluster = await admin.describeCluster();
  out.controller = cluster.controller;
  out.created = await admin.createTopics({ topics: [{ topic: "kjs-a", numPartitions: 2, replicationFactor: 3 },
                                                     { topic: "kjs-b", numPartitions: 1, replicationFactor: 1 }],
                                           waitForLeaders: false, timeout: 20000 });
  await admin.createPartitions({ topicPartitions: [{ topic: "kjs-a", count: 5 }], timeout: 20000 });
  const metadata = await admin.fetchTopicMetadata({ topics: ["kjs-a"] });
  out.partitions = metadata.topics[0].partitions.length;
  await admin.deleteTopics({ topics: ["kjs-b"], timeout: 20000 });
  out.topics = (await admin.listTopics()).sort();
  await admin.disconnect();
  console.log(JSON.stringify(out));
})().catch((error) => { console.error(String(error && error.stack || error)); process.exit(1); });
"""


@pytest.fixture(scope="session")
def kafkajs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with KafkaJS installed from npm; skipped (with the reason) without node/npm or the package."""
    node_bin, npm_bin = shutil.which("node"), shutil.which("npm")
    if node_bin is None or npm_bin is None:
        pytest.skip("KafkaJS test needs node and npm on PATH")
    directory = tmp_path_factory.mktemp("kafkajs")
    try:
        result = subprocess.run(
            [npm_bin, "install", "kafkajs@2", "--no-audit", "--no-fund", "--silent"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("npm install kafkajs timed out")
    if result.returncode != 0 or not (directory / "node_modules" / "kafkajs").is_dir():
        pytest.skip(f"npm install kafkajs failed: {result.stderr.strip()[-300:]}")
    (directory / "flow.js").write_text(KAFKAJS_FLOW)
    return directory


def test_kafkajs_admin_flow_bootstrapped_from_a_non_controller(quota_broker: BrokerFactory, kafkajs: Path) -> None:
    """KafkaJS's admin client against a 3-node cluster bootstrapped from node 1: it finds the controller from
    Metadata and sends CreateTopics, CreatePartitions and DeleteTopics there; every node accepts them anyway
    (KRaft ForwardingManager). Under a quota that throttles every step, KafkaJS honours the throttle (it
    backs off, KIP-219) and nothing waits in a muted connection."""
    broker = quota_broker(num_brokers=3, controller_mutation_rate=4, quota_window_num=1)  # burst 4
    result = subprocess.run(
        ["node", str(kafkajs / "flow.js"), node(broker, 1)],
        cwd=kafkajs,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["controller"] == 0
    assert out["created"] is True
    assert out["partitions"] == 5
    assert out["topics"] == ["kjs-a"]
    assert broker.topics() == {"kjs-a": 5}
    mutations = [r for r in broker.request_log() if r.api_key in (CREATE_TOPICS, CREATE_PARTITIONS, DELETE_TOPICS)]
    assert [r.api_key for r in mutations] == [CREATE_TOPICS, CREATE_PARTITIONS, DELETE_TOPICS]
    assert mutations[1].throttle_time_ms > 0  # 3 + 3 partitions against a burst of 4: K = -2, 500 ms
    assert all(r.held_s < 0.2 for r in broker.request_log())  # KafkaJS waited out the throttle itself
