"""QuotaBroker's topic handling against Kafka 4 (KRaft): CreateTopics results, the internal metadata topic,
manual assignments, Metadata auto-creation and the topic indexes, over loopback with a raw wire client (it
chooses versions and reads fields a full client hides) and kafka-python. Tests taking ``any_broker`` run on
QuotaBroker and on the shared Apache Kafka 4.4."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicCollection
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin.topics import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.either_broker import EitherBroker
from tests.support import BrokerFactory, raised
from tests.wire import WireClient
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS
from throttled_admin.testing import QuotaBroker
from throttled_admin.testing._cluster import Cluster, CreateSpec
from throttled_admin.testing._quotas import QuotaManager

AnyBroker = Callable[..., EitherBroker]
CREATE_TOPICS, CREATE_PARTITIONS, METADATA = 19, 37, 3
INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC, INVALID_TOPIC = 42, 39, 3, 17


def topic(
    name: str,
    partitions: int = 1,
    replication: int = 1,
    configs: dict[str, str] | None = None,
    assignments: list[tuple[int, list[int]]] | None = None,
) -> Any:
    T = CreateTopicsRequest.CreatableTopic
    return T(
        name=name,
        num_partitions=partitions,
        replication_factor=replication,
        assignments=[T.CreatableReplicaAssignment(partition_index=i, broker_ids=b) for i, b in assignments or []],
        configs=[T.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
    )


def create(*topics: Any, version: int = 7, validate_only: bool = False) -> Any:
    return CreateTopicsRequest(version=version, topics=list(topics), timeout_ms=30000, validate_only=validate_only)


def metadata(*names: str, allow_auto_topic_creation: bool, version: int = 12) -> Any:
    T = MetadataRequest.MetadataRequestTopic
    return MetadataRequest(
        version=version,
        topics=[T(name=n, topic_id=uuid.UUID(int=0)) for n in names],
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_topic_authorized_operations=False,
    )


def charged(broker: QuotaBroker, api_key: int) -> list[int]:
    return [r.mutations for r in broker.request_log() if r.api_key == api_key]


# -- CreateTopics results -------------------------------------------------------------------------


def test_create_topics_v5_results_carry_configs_and_counts(any_broker: AnyBroker) -> None:
    """ReplicationControlManager.createTopic: a created topic's result carries its id, partition count,
    replication factor and every effective config (overrides as sent, DYNAMIC_TOPIC_CONFIG; the rest
    DEFAULT_CONFIG), sorted by name (KafkaConfigSchema.resolveEffectiveTopicConfigs)."""
    broker = any_broker(num_brokers=3)
    replicas = len(broker.node_ids)
    with broker.wire() as wire:
        response = wire.request(
            create(topic(broker.t("t"), 4, replicas, {"retention.ms": "1000"}), topic(broker.t("bad"), 0, 1))
        )
    ok, bad = sorted(response.topics, key=lambda t: t.name != broker.t("t"))
    assert (ok.error_code, ok.num_partitions, ok.replication_factor) == (0, 4, replicas)
    assert ok.topic_id.int != 0
    assert [c.name for c in ok.configs] == sorted(TOPIC_CONFIGS)
    by_name = {c.name: c for c in ok.configs}
    assert (by_name["retention.ms"].value, by_name["retention.ms"].config_source) == ("1000", 1)
    assert (by_name["cleanup.policy"].value, by_name["cleanup.policy"].config_source) == ("delete", 5)
    assert by_name["message.timestamp.after.max.ms"].value == "3600000"
    assert (bad.error_code, bad.num_partitions, bad.replication_factor, bad.configs) == (37, -1, -1, [])


def test_validate_only_results_report_the_real_counts(any_broker: AnyBroker) -> None:
    """ReplicationControlManager.createTopics with validateOnly: the same successful results (counts from
    the broker defaults when -1 is sent, configs) and no records, so nothing is created."""
    broker = any_broker(num_brokers=2, controller_mutation_rate=100)
    ids = broker.node_ids
    with broker.wire() as wire:
        response = wire.request(
            create(
                topic(broker.t("v"), -1, -1),
                topic(broker.t("m"), -1, -1, assignments=[(0, ids[::-1]), (1, ids)]),
                validate_only=True,
            )
        )
    counts = {t.name: (t.error_code, t.num_partitions, t.replication_factor) for t in response.topics}
    assert counts == {broker.t("v"): (0, 1, 1), broker.t("m"): (0, 2, len(ids))}
    assert all(len(t.configs) == len(TOPIC_CONFIGS) for t in response.topics)
    assert broker.topics() == {}
    if broker.quota is not None:
        assert broker.charged(CREATE_TOPICS) == [3]


# -- small departures -----------------------------------------------------------------------------


def test_cluster_metadata_topic_cannot_be_created(any_broker: AnyBroker) -> None:
    """ControllerApis.createTopics removes __cluster_metadata before the controller and answers
    INVALID_REQUEST "Creation of internal topic __cluster_metadata is prohibited.", uncharged."""
    broker = any_broker(controller_mutation_rate=100)
    fine = broker.t("fine")
    with broker.wire() as wire:
        response = wire.request(create(topic("__cluster_metadata"), topic(fine)))
    results = {t.name: (t.error_code, t.error_message) for t in response.topics}
    assert results == {
        "__cluster_metadata": (INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited."),
        fine: (0, None),
    }
    assert broker.settled_topics({fine: 1}) == {fine: 1}
    if broker.quota is not None:
        assert broker.charged(CREATE_TOPICS) == [1]


def test_manual_assignment_errors_as_replication_control_manager(any_broker: AnyBroker) -> None:
    """ReplicationControlManager.createTopic and validateManualPartitionAssignment: replication factor and
    partition count must be -1 (checked in that order), no partition twice, brokers checked in ascending
    order (unregistered, then repeated), consistent replica counts (given two brokers), consecutive partition
    indexes."""
    broker = any_broker(num_brokers=3)
    ids = broker.node_ids
    a, b = ids[0], ids[-1]
    t = broker.t
    cases = {
        "rf": topic(t("rf"), 2, 2, assignments=[(0, [a])]),
        "np": topic(t("np"), 2, -1, assignments=[(0, [a])]),
        "twice": topic(t("twice"), -1, -1, assignments=[(0, [a]), (0, [b])]),
        "empty": topic(t("empty"), -1, -1, assignments=[(0, [])]),
        "unknown": topic(t("unknown"), -1, -1, assignments=[(0, [7, a])]),
        "repeated": topic(t("repeated"), -1, -1, assignments=[(0, [b, a, b])]),
        "gap": topic(t("gap"), -1, -1, assignments=[(0, [a]), (2, [b])]),
        "good": topic(t("good"), -1, -1, assignments=[(1, ids[::-1]), (0, ids)]),
    }
    if len(ids) > 1:
        cases["ragged"] = topic(t("ragged"), -1, -1, assignments=[(0, [a, b]), (1, [b])])
    with broker.wire() as wire:
        response = wire.request(create(*cases.values()))
    results = {r.name.removeprefix(broker.ns.prefix): (r.error_code, r.error_message) for r in response.topics}
    prefix = "The manual partition assignment includes"
    expected = {
        "rf": (
            INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        ),
        "np": (INVALID_REQUEST, "A manual partition assignment was specified, but numPartitions was not set to -1."),
        "twice": (INVALID_REPLICA_ASSIGNMENT, "Found multiple manual partition assignments for partition 0"),
        "empty": (INVALID_REPLICA_ASSIGNMENT, f"{prefix} an empty replica list."),
        "unknown": (INVALID_REPLICA_ASSIGNMENT, f"{prefix} broker 7, but no such broker is registered."),
        "repeated": (INVALID_REPLICA_ASSIGNMENT, f"{prefix} the broker {b} more than once."),
        "ragged": (
            INVALID_REPLICA_ASSIGNMENT,
            f"{prefix} a partition with 1 replica(s), but this is not consistent with previous partitions, "
            "which have 2 replica(s).",
        ),
        "gap": (INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"),
        "good": (0, None),
    }
    assert results == {name: expected[name] for name in cases}
    broker.settle(lambda: t("good") in broker.topics())
    with broker.wire() as wire:
        described = wire.request(metadata(t("good"), allow_auto_topic_creation=False))
    [good] = described.topics
    assert [(p.partition_index, p.replica_nodes) for p in good.partitions] == [(0, ids), (1, ids[::-1])]


def test_create_partitions_charges_before_checking_manual_brokers(any_broker: AnyBroker) -> None:
    """ReplicationControlManager.createPartitions applies the partition-change quota before
    validateManualPartitionAssignment, so an assignment naming an unregistered broker fails but is charged;
    a wrong number of assignments fails before the quota."""
    broker = any_broker(controller_mutation_rate=100)
    name = broker.t("t")
    own = broker.node_ids[0]
    broker.create_topic(name, 1)
    P = CreatePartitionsRequest.CreatePartitionsTopic
    A = P.CreatePartitionsAssignment
    with broker.wire() as wire:
        unknown = wire.request(
            CreatePartitionsRequest(
                version=3,
                topics=[P(name=name, count=3, assignments=[A(broker_ids=[own]), A(broker_ids=[5])])],
                timeout_ms=1000,
                validate_only=False,
            )
        )
        short = wire.request(
            CreatePartitionsRequest(
                version=3,
                topics=[P(name=name, count=3, assignments=[A(broker_ids=[own])])],
                timeout_ms=1000,
                validate_only=False,
            )
        )
    assert [(r.error_code, r.error_message) for r in unknown.results] == [
        (
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 5, but no such broker is registered.",
        )
    ]
    assert [(r.error_code, r.error_message) for r in short.results] == [
        (
            INVALID_REPLICA_ASSIGNMENT,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        )
    ]
    if broker.quota is not None:
        assert broker.charged(CREATE_PARTITIONS) == [2, 0]
    assert broker.topics() == {name: 1}


def test_metadata_auto_creates_topics_when_allowed(any_broker: AnyBroker) -> None:
    """KafkaApis.getTopicMetadata with auto.create.topics.enable=true (Kafka's default) and
    AutoTopicCreationManager: a missing topic named in a Metadata request that allows auto-creation is
    created with the broker defaults and reported UNKNOWN_TOPIC_OR_PARTITION in that response (KRaft creates
    it through the controller); an illegal name gets INVALID_TOPIC_EXCEPTION; a request that does not allow
    it, or asks for all topics, creates nothing. Metadata v0-v3 have no flag and always allow it."""
    broker = any_broker(controller_mutation_rate=100)
    auto, manual, old = broker.t("auto"), broker.t("manual"), broker.t("old")
    with broker.wire() as wire:
        first = wire.request(metadata(auto, "bad name", allow_auto_topic_creation=True))
        refused = wire.request(metadata(manual, allow_auto_topic_creation=False))
        broker.settle(lambda: auto in broker.topics())
        second = wire.request(metadata(auto, allow_auto_topic_creation=True))
        older = wire.request(MetadataRequest(version=1, topics=[MetadataRequest.MetadataRequestTopic(name=old)]))
    # Kafka lists the missing topics it cannot create first (AutoTopicCreationManager), QuotaBroker in request order
    assert {t.name: t.error_code for t in first.topics} == {auto: UNKNOWN_TOPIC, "bad name": INVALID_TOPIC}
    assert [(t.name, t.error_code) for t in refused.topics] == [(manual, UNKNOWN_TOPIC)]
    [created] = second.topics
    assert (created.error_code, len(created.partitions)) == (0, 1)
    assert [(t.name, t.error_code) for t in older.topics] == [(old, UNKNOWN_TOPIC)]
    assert broker.settled_topics({auto: 1, old: 1}) == {auto: 1, old: 1}
    if broker.quota is not None:
        assert broker.charged(METADATA)[0] == 1  # the forwarded CreateTopics charges the client's quota


def test_kafka_python_describe_topics_does_not_auto_create(any_broker: AnyBroker) -> None:
    """KafkaAdminClient.describe_topics asks Metadata without auto-creation: a missing topic stays missing."""
    broker = any_broker()
    ghost = broker.t("ghost")
    admin = broker.kafka_python()
    try:
        described = admin.describe_topics([ghost])
    finally:
        admin.close()
    assert [(t["name"], t["error_code"]) for t in described] == [(ghost, UNKNOWN_TOPIC)]
    assert broker.topics() == {}


# -- indexes ----------------------------------------------------------------------------------------


def test_collision_and_id_indexes_follow_deletes(any_broker: AnyBroker) -> None:
    """ReplicationControlManager keeps topicsWithCollisionChars and the id map in step with deletes: once
    'a.b' is deleted, 'a_b' no longer collides and the old topic id is unknown."""
    broker = any_broker()
    dotted, underscored = broker.t("a.b"), broker.t("a_b")
    with broker.wire() as wire:
        [created] = wire.request(create(topic(dotted))).topics
        collides = wire.request(create(topic(underscored))).topics[0]
        wire.request(
            DeleteTopicsRequest(
                version=6,
                topics=[DeleteTopicsRequest.DeleteTopicState(name=dotted, topic_id=uuid.UUID(int=0))],
                timeout_ms=1000,
            )
        )
        recreated = wire.request(create(topic(underscored))).topics[0]
        by_old_id = wire.request(
            DeleteTopicsRequest(
                version=6,
                topics=[DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=created.topic_id)],
                timeout_ms=1000,
            )
        )
    assert (collides.error_code, collides.error_message) == (
        INVALID_TOPIC,
        f"Topic '{underscored}' collides with existing topic: {dotted}",
    )
    assert recreated.error_code == 0
    assert [r.error_code for r in by_old_id.responses] == [100]
    assert broker.settled_topics({underscored: 1}) == {underscored: 1}


def test_the_largest_request_kafka_takes_is_answered_in_full_and_a_larger_one_refused(
    quota_broker: BrokerFactory,
) -> None:
    """QuorumController.MAX_RECORDS_PER_USER_OP: 4,999 one-partition topics make 9,998 records (a TopicRecord
    and a PartitionRecord each) and are created, each answered (no timing is asserted: the linear cost is
    measured in the report, not here); 5,001 more make 10,002 and the whole request fails with
    POLICY_VIOLATION "Unable to perform excessively large batch operation.", applying and charging nothing."""
    broker = quota_broker()
    names = [f"bulk.{i:05d}" for i in range(4_999)]
    more = [f"more.{i:05d}" for i in range(5_001)]
    with WireClient(broker.bootstrap_servers, timeout_s=120) as wire:
        response = wire.request(create(*(topic(n) for n in names), version=5))
        refused = wire.request(create(*(topic(n) for n in more), version=5))
    assert len(response.topics) == len(names)
    assert all(t.error_code == 0 for t in response.topics)
    assert len(refused.topics) == len(more)
    assert {(t.error_code, t.error_message) for t in refused.topics} == {
        (44, "Unable to perform excessively large batch operation.")
    }
    assert len(broker.topics()) == len(names)


def test_static_broker_configs_drive_defaults_and_auto_creation() -> None:
    """KafkaConfig's num.partitions, default.replication.factor and auto.create.topics.enable (server.properties)
    give CreateTopics its -1 defaults and gate Metadata auto-creation; a value the broker's ConfigDef refuses
    stops the broker from starting (QuotaBroker raises ValueError)."""
    cluster = Cluster(
        [0, 1],
        broker_configs={"num.partitions": "3", "default.replication.factor": "2", "auto.create.topics.enable": "false"},
    )
    quota = QuotaManager(window_num=11, window_size_s=1.0).request_quota("ANONYMOUS", "", strict=False)
    created = cluster.create(CreateSpec("t", -1, -1), quota, validate_only=False)
    assert (created.error.code, created.partitions, created.replication_factor) == (0, 3, 2)
    assert not cluster.auto_create_topics
    with pytest.raises(ValueError, match=r"num\.partitions: Value must be at least 1"):
        Cluster([0], broker_configs={"num.partitions": "0"})
    with pytest.raises(ValueError, match=r"no\.such\.broker\.config"):
        Cluster([0], broker_configs={"no.such.broker.config": "1"})


def test_confluent_list_topics_of_a_missing_topic_creates_it_as_kafka_does(any_broker: AnyBroker) -> None:
    """KafkaApis.handleTopicMetadataRequest with auto.create.topics.enable=true: librdkafka's AdminClient is a
    producer handle (allow.auto.create.topics=true), so list_topics(topic=...) creates the topic, while
    describe_topics asks without auto-creation and gets UNKNOWN_TOPIC_OR_PARTITION."""
    broker = any_broker()
    listed, missing = broker.t("listed"), broker.t("described")
    admin = AdminClient(broker.conf())
    admin.list_topics(topic=listed, timeout=30)
    [described] = admin.describe_topics(TopicCollection([missing])).values()
    assert raised(described, 30).args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert broker.settled_topics({listed: 1}) == {listed: 1}


def test_static_broker_configs_set_the_defaults_and_can_turn_auto_creation_off() -> None:
    """KafkaConfig / ServerLogConfigs: num.partitions is the default partition count, auto.create.topics.enable
    turns Metadata auto-creation off, and a bad value is refused with Kafka's ConfigException message."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from throttled_admin.testing import QuotaBroker

    with pytest.raises(ValueError, match=r"Invalid value abc for configuration num\.partitions"):
        QuotaBroker(broker_configs={"num.partitions": "abc"})
    configs = {"num.partitions": "3", "auto.create.topics.enable": "false"}
    with QuotaBroker(broker_configs=configs) as broker:
        broker.create_topic("set.up", 2, {"retention.ms": "1000"})
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        [future] = admin.create_topics([NewTopic("defaulted")]).values()
        future.result(30)
        admin.list_topics(topic="not.created", timeout=10)
        assert broker.topics() == {"set.up": 2, "defaulted": 3}
