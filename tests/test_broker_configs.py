"""QuotaBroker's topic and broker configs against Kafka 4.0: the config set as data, CreateTopics validation,
IncrementalAlterConfigs / AlterConfigs and DescribeConfigs, over loopback with confluent-kafka and a raw
wire client (for the fields and versions a full client does not expose)."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from kafka.protocol.admin.topics import CreateTopicsRequest

from tests.either_broker import EitherBroker
from tests.real_kafka.broker import TOPIC_DEFAULTS
from tests.support import BrokerFactory
from tests.wire import WireClient
from throttled_admin._kafka.config_schema import ConfigError, ConfigType, canonical
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS
from throttled_admin.testing import QuotaBroker
from throttled_admin.testing._configs import describe_topic, validate_topic_configs
from throttled_admin.testing._configs_broker import BROKER_CONFIGS, SYNONYM_GROUPS

AnyBroker = Callable[..., EitherBroker]
INVALID_CONFIG, INVALID_REQUEST, INVALID_TOPIC, UNKNOWN_TOPIC = 40, 42, 17, 3
CREATE_TOPICS, INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS = 19, 44, 33
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# Errors.INVALID_REQUEST's default message: what Kafka says for a request it cannot handle at all.
MALFORMED = (
    "This most likely occurs because of a request being malformed by the client library or the message was sent "
    "to an incompatible broker. See the broker logs for more details."
)


def confluent_admin(broker: QuotaBroker | EitherBroker) -> AdminClient:
    if isinstance(broker, EitherBroker):
        return AdminClient(broker.conf())
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def create_request(*topics: tuple[str, int, int, dict[str, str | None]], validate_only: bool = False) -> Any:
    T = CreateTopicsRequest.CreatableTopic
    C = T.CreatableTopicConfig
    return CreateTopicsRequest(
        version=7,
        topics=[
            T(
                name=name,
                num_partitions=partitions,
                replication_factor=replication,
                assignments=[],
                configs=[C(name=k, value=v) for k, v in configs.items()],
            )
            for name, partitions, replication, configs in topics
        ],
        timeout_ms=30000,
        validate_only=validate_only,
    )


def incremental(name: str, *ops: tuple[str, int, str | None], validate_only: bool = False) -> Any:
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    A = R.AlterableConfig
    configs = [A(name=k, config_operation=op, value=v) for k, op, v in ops]
    resource = R(resource_type=TOPIC, resource_name=name, configs=configs)
    return IncrementalAlterConfigsRequest(version=1, resources=[resource], validate_only=validate_only)


def describe(*resources: tuple[int, str, list[str] | None], version: int = 4, **flags: bool) -> Any:
    R = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(
        version=version,
        resources=[R(resource_type=t, resource_name=n, configuration_keys=k) for t, n, k in resources],
        include_synonyms=flags.get("include_synonyms", False),
        include_documentation=flags.get("include_documentation", False),
    )


def error_of(future: Any) -> tuple[int, str]:
    exc = future.exception(30)
    assert isinstance(exc, KafkaException)
    return exc.args[0].code(), exc.args[0].str()


# -- the data -------------------------------------------------------------------------------------


def test_kafka_4_topic_config_set_is_complete_and_typed() -> None:
    """LogConfig's ConfigDef in Kafka 4.4 (TopicConfig names, ServerTopicConfigSynonyms): the configs the
    issue found missing are there with their types and defaults, the ones 4.0 and 4.4 removed are unknown, and
    every broker synonym is itself a described broker config."""
    assert len(TOPIC_CONFIGS) == 37
    assert TOPIC_CONFIGS["leader.replication.throttled.replicas"].type is ConfigType.LIST
    assert TOPIC_CONFIGS["compression.zstd.level"].default == "3"
    assert TOPIC_CONFIGS["local.retention.ms"].default == "-2"
    assert TOPIC_CONFIGS["local.retention.bytes"].type is ConfigType.LONG
    assert TOPIC_CONFIGS["remote.storage.enable"].type is ConfigType.BOOLEAN
    assert TOPIC_CONFIGS["min.cleanable.dirty.ratio"].type is ConfigType.DOUBLE
    assert TOPIC_CONFIGS["message.timestamp.after.max.ms"].default == "3600000"  # KIP-1030, 4.0
    assert [s.name for s in TOPIC_CONFIGS["retention.ms"].synonyms] == [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ]
    assert "message.format.version" not in TOPIC_CONFIGS
    assert "message.downconversion.enable" not in TOPIC_CONFIGS  # removed in 4.4
    assert TOPIC_CONFIGS["max.decompressed.message.bytes"].default == "2147483639"  # new in 4.4
    assert [s.name for s in TOPIC_CONFIGS["remote.copy.lag.ms"].synonyms] == ["log.remote.copy.lag.ms"]
    assert "message.timestamp.difference.max.ms" not in TOPIC_CONFIGS
    assert all(key.documentation for key in TOPIC_CONFIGS.values())
    assert set(SYNONYM_GROUPS) <= set(BROKER_CONFIGS)
    for key in TOPIC_CONFIGS.values():  # every default passes its own validator
        validate_topic_configs({key.name: key.default or ""} if key.name != "remote.storage.enable" else {})


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"cleanup.policy": "delete,"}, "Configuration 'cleanup.policy' values must not be empty."),  # 4.4
        (
            {"cleanup.policy": "compact,bogus"},
            "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
        ({"retention.ms": "1_000"}, "Invalid value 1_000 for configuration retention.ms: Not a number of type LONG"),
        (
            {"segment.bytes": "10"},
            "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576",
        ),
        (
            {"min.insync.replicas": "0"},
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        ),
        (
            {"max.message.bytes": "2147483648"},
            "Invalid value 2147483648 for configuration max.message.bytes: Not a number of type INT",
        ),
        (
            {"min.cleanable.dirty.ratio": "1.5"},
            "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            {"preallocate": "yes"},
            "Invalid value yes for configuration preallocate: Expected value to be either true or false",
        ),
        (
            {"compression.gzip.level": "0"},
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            {"compression.type": "brotli"},
            "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, "
            "lz4, snappy, gzip, producer",
        ),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        (
            {"remote.storage.enable": "true"},
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log "
            "storage.",
        ),
        ({"a": None, "retention.ms": "1", "b": None}, "Null value not supported for topic configs: a,b"),
        ({"message.format.version": "3.0"}, "Unknown topic config name: message.format.version"),
    ],
)
def test_values_are_validated_with_kafkas_messages(configs: dict[str, str | None], message: str) -> None:
    """LogConfig.validate through ControllerConfigurationValidator: ConfigDef.parseType and its Range,
    ValidString, ValidList and level validators, then LogConfig.validateValues (compaction lags), then the
    tiered-storage check (disabled on this broker); null values and unknown names first."""
    with pytest.raises(ConfigError) as raised:
        validate_topic_configs(configs)
    assert str(raised.value) == message


def test_valid_values_are_accepted_as_java_parses_them() -> None:
    """ConfigDef.parseType trims values, reads booleans case-insensitively and splits lists on commas;
    ThrottledReplicaListValidator accepts '*' or partition:broker pairs. Each is shown as Java shows it."""
    configs = {
        "retention.ms": " -1 ",
        "cleanup.policy": "compact, delete",
        "preallocate": "TRUE",
        "min.cleanable.dirty.ratio": "1e-1",
        "compression.zstd.level": "-131072",
        "leader.replication.throttled.replicas": "0:1,1:2",
        "follower.replication.throttled.replicas": "*",
        "local.retention.ms": "1000",
    }
    assert _refusal(lambda: validate_topic_configs(configs)) is None
    assert {name: canonical(TOPIC_CONFIGS[name], value) for name, value in configs.items()} == {
        "retention.ms": "-1",
        "cleanup.policy": "compact,delete",
        "preallocate": "true",
        "min.cleanable.dirty.ratio": "0.1",
        "compression.zstd.level": "-131072",
        "leader.replication.throttled.replicas": "0:1,1:2",
        "follower.replication.throttled.replicas": "*",
        "local.retention.ms": "1000",
    }


# -- CreateTopics ---------------------------------------------------------------------------------


def test_create_topics_checks_configs_then_replication_factor_then_partitions(any_broker: AnyBroker) -> None:
    """ReplicationControlManager.createTopics: computeConfigChanges and the config validation run before
    createTopic checks the replication factor, which comes before the partition count; an invalid topic is
    not charged."""
    broker = any_broker(controller_mutation_rate=100)
    t = broker.t
    with broker.wire() as wire:
        response = wire.request(
            create_request(
                (t("all-wrong"), 0, 0, {"retention.ms": "abc"}),
                (t("rf-and-partitions"), 0, 0, {}),
                (t("partitions"), 0, 1, {}),
                (t("null"), 1, 1, {"retention.ms": None}),
                (t("fine"), 2, 1, {"leader.replication.throttled.replicas": "*", "compression.zstd.level": "9"}),
            )
        )
    by_name = {t.name.removeprefix(broker.ns.prefix): (t.error_code, t.error_message) for t in response.topics}
    assert by_name["all-wrong"] == (
        INVALID_CONFIG,
        "Invalid value abc for configuration retention.ms: Not a number of type LONG",
    )
    assert by_name["rf-and-partitions"] == (
        38,
        "Replication factor must be larger than 0, or -1 to use the default value.",
    )
    assert by_name["partitions"] == (37, "Number of partitions was set to an invalid non-positive value.")
    assert by_name["null"] == (INVALID_CONFIG, "Null value not supported for topic configs: retention.ms")
    assert by_name["fine"] == (0, None)
    assert broker.settled_topics({t("fine"): 2}) == {t("fine"): 2}
    if broker.quota is not None:
        assert broker.charged(CREATE_TOPICS) == [2]


def test_confluent_create_topics_rejects_bad_values(any_broker: AnyBroker) -> None:
    """The issue's examples through librdkafka: each is INVALID_CONFIG (40) with LogConfig's message."""
    broker = any_broker()
    t = broker.t
    admin = confluent_admin(broker)
    futures = admin.create_topics(
        [
            NewTopic(t("policy"), 1, 1, config={"cleanup.policy": "bogus"}),
            NewTopic(t("segment"), 1, 1, config={"segment.bytes": "10"}),
            NewTopic(t("lag"), 1, 1, config={"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "10"}),
            NewTopic(t("ok"), 1, 1, config={"local.retention.ms": "1000", "compression.zstd.level": "5"}),
        ]
    )
    assert futures[t("ok")].result(30) is None
    assert error_of(futures[t("policy")]) == (
        KafkaError.INVALID_CONFIG,
        "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete",
    )
    assert error_of(futures[t("segment")]) == (
        KafkaError.INVALID_CONFIG,
        "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576",
    )
    assert error_of(futures[t("lag")]) == (
        KafkaError.INVALID_CONFIG,
        "conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms (10)",
    )
    assert broker.settled_topics({t("ok"): 1}) == {t("ok"): 1}


# -- IncrementalAlterConfigs / AlterConfigs -------------------------------------------------------


def test_incremental_alter_configs_end_to_end_with_confluent(any_broker: AnyBroker) -> None:
    """ConfigurationControlManager.incrementalAlterConfigResource: SET, DELETE, APPEND and SUBTRACT (list
    configs only, starting from the default), validate-only changes nothing, and a config change is not a
    KIP-599 mutation: after seven of them the test's whole burst (11 x 1 mutation/s) is still there, so 11
    partitions are admitted without a throttle."""
    broker = any_broker(controller_mutation_rate=1)
    topic = broker.t("t")
    broker.create_topic(topic, 1)
    admin = confluent_admin(broker)

    def alter(*entries: ConfigEntry, validate_only: bool = False) -> Any:
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=list(entries))
        [future] = admin.incremental_alter_configs([resource], validate_only=validate_only).values()
        return future

    S, D, A, U = (AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT)
    assert alter(ConfigEntry("retention.ms", "1000", incremental_operation=S)).result(30) is None
    assert alter(ConfigEntry("cleanup.policy", "compact", incremental_operation=A)).result(30) is None
    assert alter(ConfigEntry("retention.ms", "5", incremental_operation=S), validate_only=True).result(30) is None
    broker.settle(lambda: described(admin, topic)["cleanup.policy"].value == "delete,compact")
    entries = described(admin, topic)
    assert entries["retention.ms"].value == "1000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["cleanup.policy"].value == "delete,compact"
    assert alter(ConfigEntry("cleanup.policy", "delete", incremental_operation=U)).result(30) is None
    assert alter(ConfigEntry("retention.ms", None, incremental_operation=D)).result(30) is None
    broker.settle(lambda: described(admin, topic)["retention.ms"].value == "604800000")
    entries = described(admin, topic)
    assert entries["cleanup.policy"].value == "compact"
    assert entries["retention.ms"].value == "604800000"
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    code, message = error_of(alter(ConfigEntry("retention.ms", "1", incremental_operation=A)))
    assert (code, message) == (
        KafkaError.INVALID_CONFIG,
        "Can't APPEND to key retention.ms because its type is not LIST.",
    )
    code, message = error_of(alter(ConfigEntry("min.insync.replicas", "0", incremental_operation=S)))
    assert (code, message) == (
        KafkaError.INVALID_CONFIG,
        "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
    )
    with broker.wire() as wire:
        burst = wire.request(create_request((broker.t("burst"), 11, 1, {})))
    assert ([t.error_code for t in burst.topics], burst.throttle_time_ms) == ([0], 0)
    if broker.quota is not None:
        assert broker.charged(INCREMENTAL_ALTER_CONFIGS) == [0] * 7


def test_incremental_alter_configs_errors_as_kafka(any_broker: AnyBroker) -> None:
    """ConfigAdminManager.preprocess on the receiving broker (repeated resources and keys, null values,
    resource types), then ConfigurationControlManager: values are validated before the topic's existence is
    checked (QuorumController.ConfigResourceExistenceChecker's message)."""
    broker = any_broker()
    topic, nope = broker.t("t"), broker.t("nope")
    broker.create_topic(topic, 1)
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    A = R.AlterableConfig
    SET, DELETE = 0, 1
    with broker.wire() as wire:
        missing = wire.request(incremental(nope, ("retention.ms", SET, "1")))
        missing_bad = wire.request(incremental(nope, ("retention.ms", SET, "x")))
        bad_name = wire.request(incremental("bad name", ("retention.ms", SET, "1")))
        keys = wire.request(incremental(topic, ("retention.ms", SET, "1"), ("retention.ms", DELETE, None)))
        null = wire.request(incremental(topic, ("retention.ms", SET, None), ("segment.ms", SET, None)))
        repeated = wire.request(
            IncrementalAlterConfigsRequest(
                version=1,
                resources=[
                    R(resource_type=TOPIC, resource_name=topic, configs=[A(name="x", config_operation=0, value="1")])
                ]
                * 2,
                validate_only=False,
            )
        )
    assert [(r.error_code, r.error_message) for r in missing.responses] == [
        (UNKNOWN_TOPIC, f"The topic '{nope}' does not exist.")
    ]
    assert [(r.error_code, r.error_message) for r in missing_bad.responses] == [
        (INVALID_CONFIG, "Invalid value x for configuration retention.ms: Not a number of type LONG")
    ]
    assert bad_name.responses[0].error_code == INVALID_TOPIC
    assert [(r.error_code, r.error_message) for r in keys.responses] == [
        (INVALID_REQUEST, "Error due to duplicate config keys")
    ]
    assert [(r.error_code, r.error_message) for r in null.responses] == [
        (INVALID_REQUEST, "Null value not supported for : retention.ms, segment.ms")
    ]
    assert [(r.error_code, r.error_message) for r in repeated.responses] == [
        (INVALID_REQUEST, "Each resource must appear at most once.")
    ] * 2


def test_alter_configs_replaces_every_override(any_broker: AnyBroker) -> None:
    """ConfigurationControlManager.legacyAlterConfigResource: AlterConfigs sets the listed configs and
    deletes every override not listed; validation as for IncrementalAlterConfigs."""
    broker = any_broker()
    topic = broker.t("t")
    admin = confluent_admin(broker)
    created = admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "1000", "segment.ms": "2000"})])
    created[topic].result(30)
    with pytest.warns(DeprecationWarning, match="alter_configs"):  # deprecated by confluent-kafka, still sent
        [future] = admin.alter_configs(
            [ConfigResource("topic", topic, set_config={"cleanup.policy": "compact"})]
        ).values()
    assert future.result(30) is None
    broker.settle(lambda: described(admin, topic)["cleanup.policy"].value == "compact")
    entries = described(admin, topic)
    assert entries["cleanup.policy"].value == "compact"
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert entries["segment.ms"].value == "604800000"
    with pytest.warns(DeprecationWarning, match="alter_configs"):
        [bad] = admin.alter_configs([ConfigResource("topic", topic, set_config={"segment.bytes": "10"})]).values()
    assert error_of(bad) == (
        KafkaError.INVALID_CONFIG,
        "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576",
    )
    assert described(admin, topic)["cleanup.policy"].value == "compact"  # a failed change changes nothing
    with broker.wire() as wire:
        R = AlterConfigsRequest.AlterConfigsResource
        A = R.AlterableConfig
        response = wire.request(
            AlterConfigsRequest(
                version=2,
                resources=[R(resource_type=TOPIC, resource_name=topic, configs=[A(name="retention.ms", value=None)])],
                validate_only=False,
            )
        )
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (INVALID_REQUEST, "Null value not supported for : retention.ms")
    ]
    if broker.quota is not None:
        assert broker.charged(ALTER_CONFIGS) == [0, 0, 0]


# -- DescribeConfigs ------------------------------------------------------------------------------


def described(admin: AdminClient, topic: str) -> dict[str, Any]:
    [future] = admin.describe_configs([ConfigResource("topic", topic)]).values()
    return dict(future.result(30))


def test_settling_on_kafka_waits_out_a_broker_that_does_not_know_the_topic_yet() -> None:
    """CI of 03d3c76: right after a create and an AlterConfigs, Kafka's broker answered DescribeConfigs
    UNKNOWN_TOPIC_OR_PART (it had not replayed the topic yet), and ``settle`` let that out instead of asking again."""
    answers: list[bool | KafkaException] = [KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)), True]

    def shows() -> bool:
        answer = answers.pop(0)
        if isinstance(answer, KafkaException):
            raise answer
        return answer

    EitherBroker.settle(SimpleNamespace(quota=None), shows)  # type: ignore[arg-type]  # as on Kafka
    assert answers == []  # asked again after the unknown topic


def test_describe_configs_all_types_sources_synonyms_and_documentation(any_broker: AnyBroker) -> None:
    """ConfigHelper.describeConfigs / createTopicConfigEntry: a null or empty key list means every config;
    config_type from the ConfigDef type; the source is DYNAMIC_TOPIC_CONFIG for an override, else the first
    broker synonym's (DEFAULT_CONFIG); synonyms only when asked, documentation only when asked (v3+)."""
    broker = any_broker()
    topic = broker.t("t")
    broker.create_topic(topic, 1)
    with broker.wire() as wire:
        wire.request(incremental(topic, ("retention.ms", 0, " 1000 "), ("cleanup.policy", 0, "compact, delete")))

        def rich() -> Any:
            keys = ["retention.ms", "segment.bytes", "cleanup.policy", "min.cleanable.dirty.ratio"]
            return wire.request(describe((TOPIC, topic, keys), include_synonyms=True, include_documentation=True))

        broker.settle(lambda: {c.name: c.value for c in rich().results[0].configs}["retention.ms"] == "1000")
        plain = wire.request(describe((TOPIC, topic, []), (TOPIC, topic, None)))
        described = rich()
        v1 = wire.request(describe((TOPIC, topic, ["retention.ms", "segment.bytes"]), version=1))
    for result in plain.results:
        assert result.error_code == 0
        assert sorted(c.name for c in result.configs) == sorted(TOPIC_CONFIGS)
        assert all(c.synonyms == [] and c.documentation is None for c in result.configs)
    by_name = {c.name: c for c in described.results[0].configs}
    retention = by_name["retention.ms"]
    assert (retention.value, retention.config_source, retention.config_type) == ("1000", 1, int(ConfigType.LONG))
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [("retention.ms", "1000", 1)]
    assert by_name["cleanup.policy"].value == "compact,delete"
    assert by_name["cleanup.policy"].config_type == int(ConfigType.LIST)
    segment = by_name["segment.bytes"]
    assert (segment.value, segment.config_source, segment.config_type) == ("1073741824", 5, int(ConfigType.INT))
    assert [(s.name, s.value, s.source) for s in segment.synonyms] == [("log.segment.bytes", "1073741824", 5)]
    assert segment.documentation == TOPIC_CONFIGS["segment.bytes"].documentation
    assert by_name["min.cleanable.dirty.ratio"].config_type == int(ConfigType.DOUBLE)
    assert {c.name: (c.config_source, c.config_type) for c in v1.results[0].configs} == {  # no type before v3
        "retention.ms": (1, 0),
        "segment.bytes": (5, 0),
    }


def test_describe_configs_v0_is_gone_as_in_kafka_4(any_broker: AnyBroker) -> None:
    """DescribeConfigsRequest.json: "Version 0 was removed in Apache Kafka 4.0": ApiVersions advertises 1-4
    and a v0 request is not served (the broker closes the connection, as for any unsupported version)."""
    broker = any_broker()
    topic = broker.t("t")
    broker.create_topic(topic, 1)
    with broker.wire() as wire:
        wire.send(describe((TOPIC, topic, None), version=0))
        assert wire.is_closed_by_peer()


def test_describe_configs_errors_as_kafka(any_broker: AnyBroker) -> None:
    """ConfigHelper.describeConfigs: Topic.validate's message for an illegal name, UNKNOWN_TOPIC_OR_PARTITION
    without a message for a missing topic, and a malformed broker resource ('abc') gets
    resourceNameToBrokerId's INVALID_REQUEST instead of crashing the handler; a broker resource is described by
    that broker only (another node's id, here or not); the connection keeps working."""
    broker = any_broker(num_brokers=2)
    own, *others = broker.node_ids
    other = others[0] if others else own + 1
    with broker.wire() as wire:
        response = wire.request(
            describe(
                (TOPIC, "bad name", None),
                (TOPIC, broker.t("missing"), None),
                (BROKER, "abc", None),
                (BROKER, str(other), None),
            )
        )
        after = wire.request(describe((BROKER, str(own), ["num.partitions"])))
    errors = [(r.error_code, r.error_message) for r in response.results]
    assert errors[0][0] == INVALID_TOPIC
    assert errors[0][1] == (
        "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, "
        "'.', '_' and '-'"
    )
    assert errors[1] == (UNKNOWN_TOPIC, "")  # DescribeConfigsResult's unset error message
    assert errors[2] == (INVALID_REQUEST, "Broker id must be an integer, but it is: abc")
    assert errors[3] == (
        INVALID_REQUEST,
        f"Unexpected broker id, expected {own} or empty string, but received {other}",
    )
    assert [(c.name, c.value) for c in after.results[0].configs] == [("num.partitions", "1")]


def test_broker_resources_describe_broker_configs_with_confluent(any_broker: AnyBroker) -> None:
    """ConfigHelper.createBrokerConfigEntry: a broker describes itself (librdkafka sends a broker resource
    to that broker): node.id is a static broker config, log defaults come from the ConfigDef, configs with
    no default have a null value, and only dynamically changeable configs are writable."""
    broker = any_broker(num_brokers=2)
    node = broker.node_ids[-1]
    admin = confluent_admin(broker)
    [future] = admin.describe_configs([ConfigResource("broker", str(node))]).values()
    entries = dict(future.result(30))
    assert set(entries) == set(BROKER_CONFIGS) | broker.static_non_configs
    assert entries["node.id"].value == str(node)
    assert entries["node.id"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert entries["node.id"].is_read_only
    assert entries["log.retention.hours"].value == "168"
    assert entries["log.retention.ms"].value is None
    assert not entries["log.retention.ms"].is_read_only
    assert entries["log.segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_static_broker_configs_become_topic_defaults_with_kafkas_synonym_quirk() -> None:
    """ConfigHelper.configSynonyms drops every synonym before the topic config's first synonym: a broker
    with log.retention.hours=24 gives retention.ms=86400000 but no synonyms (log.retention.ms is unset),
    while log.segment.bytes shows as STATIC_BROKER_CONFIG then DEFAULT_CONFIG
    (KafkaConfigSchema.resolveEffectiveTopicConfig for the value)."""
    static = {"log.retention.hours": "24", "log.segment.bytes": "2097152"}
    entries = {
        e.name: e
        for e in describe_topic(
            {}, static, ["retention.ms", "segment.bytes"], include_synonyms=True, include_documentation=False
        )
    }
    assert (entries["retention.ms"].value, entries["retention.ms"].synonyms) == ("86400000", ())
    assert entries["segment.bytes"].value == "2097152"
    assert [(s.value, int(s.source)) for s in entries["segment.bytes"].synonyms] == [("2097152", 4), ("1073741824", 5)]


def test_alter_configs_on_other_resources_is_refused_with_a_reason(quota_broker: BrokerFactory) -> None:
    """ConfigAdminManager.preprocess: an unknown resource type gets "Unknown resource type N"; the types Kafka
    can change but QuotaBroker does not model (dynamic broker configs, loggers, groups) are refused with a
    message that says so, never silently accepted."""
    broker = quota_broker()
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    A = R.AlterableConfig
    resources = [
        R(resource_type=t, resource_name=n, configs=[A(name="log.retention.ms", config_operation=0, value="1")])
        for t, n in ((BROKER, "0"), (99, "x"))
    ]
    with WireClient(broker.bootstrap_servers) as wire:
        response = wire.request(IncrementalAlterConfigsRequest(version=1, resources=resources, validate_only=False))
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (INVALID_REQUEST, "QuotaBroker does not model changes to BROKER configs"),
        (INVALID_REQUEST, "Unknown resource type 99"),
    ]


def test_described_values_are_printed_as_java_prints_them() -> None:
    """ConfigHelper renders a parsed value with ConfigDef.convertToString: trimmed numbers, lower-case
    booleans, lists joined by ',' and doubles as Double.toString (0.5, 1.0, 1.0E-4)."""
    ratio = TOPIC_CONFIGS["min.cleanable.dirty.ratio"]
    assert [canonical(ratio, v) for v in ("0.50", "1", "1e-4", ".001")] == ["0.5", "1.0", "1.0E-4", "0.001"]
    assert canonical(TOPIC_CONFIGS["preallocate"], " TRUE ") == "true"
    assert canonical(TOPIC_CONFIGS["cleanup.policy"], "compact , delete") == "compact,delete"
    assert canonical(TOPIC_CONFIGS["retention.ms"], "+1000") == "1000"


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(sorted(TOPIC_CONFIGS)) | st.text(max_size=20),
    value=st.text(max_size=30) | st.from_regex(r"[ +-]?[0-9.eE]{1,25}[dDfF]?", fullmatch=True),
)
def test_any_config_value_is_accepted_or_refused_with_a_config_error(name: str, value: str) -> None:
    """Whatever a client sends, validation ends in a value or ConfigException's INVALID_CONFIG, never in
    another error (a crashed handler would close the client's connection instead of answering): an unknown name
    is refused by name; a value that does not parse is refused with the same message by validation and by
    DescribeConfigs' rendering; a value that parses is shown in a form that sets the same value again."""
    refused = _refusal(lambda: validate_topic_configs({name: value}))
    if name not in TOPIC_CONFIGS:
        assert refused is not None
        assert str(refused) == f"Unknown topic config name: {name}"
        return
    key = TOPIC_CONFIGS[name]
    unparsed = _refusal(lambda: canonical(key, value))
    if unparsed is not None:
        assert refused is not None, f"{value!r} does not parse, yet validation accepted it"
        assert str(refused) == str(unparsed)
        assert name in str(refused)
        return
    shown = canonical(key, value)
    assert canonical(key, shown) == shown
    if refused is None:
        assert _refusal(lambda: validate_topic_configs({name: shown})) is None
    else:  # the value parses: refused only by a rule across configs
        assert name in ("min.compaction.lag.ms", "max.compaction.lag.ms", "remote.storage.enable"), str(refused)


def _refusal(attempt: Callable[[], object]) -> ConfigError | None:
    """The ConfigError ``attempt`` raised, or None when it returned."""
    try:
        attempt()
    except ConfigError as exc:
        return exc
    return None


def test_odd_resources_are_answered_not_crashed(any_broker: AnyBroker) -> None:
    """ConfigHelper.describeConfigs answers every resource of a known type, whatever its name (a resource that
    fails gets its own error; the others and the connection are unaffected): Integer.parseInt's rules for broker
    ids, Topic.validate for topic names. A resource of an unknown type fails the whole request
    (ConfigResource.Type.UNKNOWN: every resource gets INVALID_REQUEST with the error's default message)."""
    broker = any_broker()
    own = str(broker.node_ids[0])
    names = ("", "abc", "-1", "2147483648", " " + own, own)
    odd = [(t, n) for t in (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP) for n in names]
    with broker.wire() as wire:
        response = wire.request(describe(*[(t, n, None) for t, n in odd]))
        unknown = [wire.request(describe((BROKER, own, None), (t, "abc", None))) for t in (-1, 0, 1, 64, 127)]
        still = wire.request(describe((BROKER, own, ["node.id"])))
    assert len(response.results) == len(odd)
    by_resource = {(r.resource_type, r.resource_name): (r.error_code, len(r.configs)) for r in response.results}
    assert by_resource[(BROKER, own)] == (0, len(BROKER_CONFIGS) + len(broker.static_non_configs))
    assert by_resource[(BROKER, "")] == (0, 1)  # the cluster-default resource: min.insync.replicas (ELR)
    assert by_resource[(BROKER, "2147483648")][0] == INVALID_REQUEST
    assert by_resource[(BROKER, " " + own)][0] == INVALID_REQUEST
    assert by_resource[(BROKER_LOGGER, "")][0] == INVALID_REQUEST
    assert by_resource[(TOPIC, own)] == (UNKNOWN_TOPIC, 0)
    assert by_resource[(TOPIC, "")][0] == INVALID_TOPIC
    for response in unknown:
        assert [(r.error_code, r.error_message, r.configs) for r in response.results] == [
            (INVALID_REQUEST, MALFORMED, [])
        ] * 2
    assert [(c.name, c.value) for c in still.results[0].configs] == [("node.id", own)]


@pytest.mark.kafka
def test_quota_broker_describes_topics_as_kafka_does_entry_by_entry(
    kafka_broker: Any, kafka_ns: Any, quota_broker: BrokerFactory
) -> None:
    """The same CreateTopics v7 (one topic with overrides, one without) and DescribeConfigs v4 with synonyms
    and documentation on the shared Kafka 4.4 and on a QuotaBroker: every config entry of the CreateTopics
    results and of the descriptions is the same (value, source, read-only, sensitive, type, synonyms,
    documentation), in the same order."""
    overrides = {"retention.ms": " 1000 ", "cleanup.policy": "compact, delete", "max.decompressed.message.bytes": "7"}
    names = [kafka_ns.topic("plain"), kafka_ns.topic("custom")]
    request = create_request((names[0], 1, 1, {}), (names[1], 2, 1, dict(overrides)))
    keys = [(TOPIC, name, None) for name in names]

    def answers(bootstrap: str) -> tuple[Any, Any]:
        with WireClient(bootstrap) as wire:
            created = wire.request(request)
            deadline = time.monotonic() + 30
            while True:  # Kafka's broker shows the topics a few milliseconds after its controller made them
                described = wire.request(describe(*keys, include_synonyms=True, include_documentation=True))
                if all(r.error_code == 0 for r in described.results) or time.monotonic() > deadline:
                    return created, described

    def entries(configs: Any) -> dict[str, tuple[Any, ...]]:
        return {
            c.name: (
                c.value,
                c.config_source,
                c.read_only,
                c.is_sensitive,
                getattr(c, "config_type", None),
                tuple((s.name, s.value, s.source) for s in getattr(c, "synonyms", ())),
                getattr(c, "documentation", None),
            )
            for c in configs
        }

    kafka_created, kafka_described = answers(kafka_broker.bootstrap_servers)
    # configured as the fixture's Kafka: its static configs that topics inherit (log.index.size.max.bytes)
    ours_created, ours_described = answers(quota_broker(broker_configs=TOPIC_DEFAULTS).bootstrap_servers)
    for kafka, ours in ((kafka_created.topics, ours_created.topics), (kafka_described.results, ours_described.results)):
        assert [(r.error_code, len(r.configs)) for r in ours] == [(r.error_code, len(r.configs)) for r in kafka]
        for mine, theirs in zip(ours, kafka, strict=True):
            assert entries(mine.configs) == entries(theirs.configs)
            # in Kafka's order too: by name for CreateTopics, its HashMap's for DescribeConfigs
            assert [c.name for c in mine.configs] == [c.name for c in theirs.configs]


def test_the_elr_cluster_config_takes_the_controllers_static_min_insync_replicas() -> None:
    """ConfigurationControlManager.getStaticallyConfiguredMinInsyncReplicas: a controller whose
    server.properties sets min.insync.replicas=2 writes 2 for the cluster, which then comes before the static
    setting and the default among the synonyms, for a broker and for a topic's fallback."""
    from throttled_admin.testing._configs import describe_broker, describe_cluster_defaults

    static = {"min.insync.replicas": "2"}
    flags = {"include_synonyms": True, "include_documentation": False}
    [cluster] = describe_cluster_defaults(static, None, **flags)
    [broker] = describe_broker(static, ["min.insync.replicas"], **flags)
    [topic] = describe_topic({}, static, ["min.insync.replicas"], **flags)
    assert (cluster.value, int(cluster.source), [(s.value, int(s.source)) for s in cluster.synonyms]) == (
        "2",
        3,
        [("2", 3)],
    )
    for entry in (broker, topic):
        assert (entry.value, int(entry.source)) == ("2", 3)
        assert [(s.value, int(s.source)) for s in entry.synonyms] == [("2", 3), ("2", 4), ("1", 5)]
