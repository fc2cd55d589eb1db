"""DescribeConfigs of a BROKER resource answers Kafka 4.4's whole broker config set (KafkaConfig.configDef) as
data: names, types, defaults, sources, read-only flags and sensitivity, with the static broker_configs= in
force; over loopback with confluent-kafka and kafka-python's protocol classes. The data file is what a running
Kafka 4.4.0 describes (checked against the shared real broker, tests/real_kafka/broker_configs.py writes it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kafka.protocol.admin.configs import DescribeConfigsRequest

from tests.either_broker import EitherBroker
from tests.support import BrokerFactory
from tests.wire import WireClient
from throttled_admin._kafka.config_schema import AnyOf, ConfigType, LevelRange, Range, ReplicaList, Validator
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS
from throttled_admin.testing import QuotaBroker
from throttled_admin.testing._configs_broker import BROKER_CONFIGS, VALIDATORS
from throttled_admin.testing._configs_broker_set import broker_config_set, kafka_version

BROKER = 4
STATIC, DEFAULT = ConfigSource.STATIC_BROKER_CONFIG.value, ConfigSource.DEFAULT_CONFIG.value


def test_the_set_is_kafka_44s() -> None:
    names = {key.name for key in broker_config_set()}
    assert kafka_version() == "4.4.0"
    assert len(names) == len(broker_config_set()) == 350
    assert {"zookeeper.connect", "inter.broker.protocol.version", "log.message.format.version"}.isdisjoint(names)
    assert {"log.message.downconversion.enable", "group.share.max.groups"}.isdisjoint(names)  # gone in 4.4
    assert {
        "group.consumer.migration.policy",
        "share.coordinator.threads",
        "remote.list.offsets.request.timeout.ms",
        "group.streams.num.standby.replicas",  # new since 4.0
        "max.decompressed.message.bytes",
    } <= names
    assert names == set(BROKER_CONFIGS)
    assert set(VALIDATORS) <= names
    by_name = {key.name: key for key in broker_config_set()}
    assert (by_name["group.coordinator.threads"].default, by_name["ssl.protocol"].default) == ("4", "TLSv1.3")
    assert by_name["group.coordinator.rebalance.protocols"].default == "classic,consumer,streams"
    assert by_name["log.message.timestamp.after.max.ms"].default == "3600000"  # KIP-1030
    assert by_name["node.id"].default is None  # required, no default
    assert (by_name["listeners"].type, by_name["advertised.listeners"].read_only) == (ConfigType.LIST, True)
    assert all(key.sensitive == (key.type is ConfigType.PASSWORD) for key in broker_config_set())


@pytest.mark.kafka
def test_the_data_file_is_what_kafka_describes(kafka_broker: Any) -> None:
    """tests/real_kafka/broker_configs.py (make broker-configs) wrote the file from this broker's DescribeConfigs:
    asking the run's shared Kafka 4.4 again gives the same rows, so the file is neither stale nor hand-edited."""
    from tests.real_kafka import broker_configs

    entries = broker_configs.describe_broker(kafka_broker.bootstrap_servers, kafka_broker.brokers[0].node_id)
    shipped = json.loads(broker_configs.DATA_FILE.read_text(encoding="utf-8"))
    assert broker_configs.differences(shipped, broker_configs.data_of(entries)) == []
    assert shipped == broker_configs.data_of(entries)


def java_string(validator: Validator | None) -> str:
    """How the validator's Java counterpart prints itself (ConfigDef.Range, ValidList/ValidString, ...)."""
    if validator is None:
        return ""
    if isinstance(validator, Range):
        return f"[{validator.min},...]" if validator.max is None else f"[{validator.min},...,{validator.max}]"
    if isinstance(validator, AnyOf):
        return "[" + ", ".join(validator.values) + "]"
    if isinstance(validator, LevelRange):
        return f"[{validator.min},...,{validator.max}] or {validator.or_equal}"
    assert isinstance(validator, ReplicaList)
    return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


@pytest.mark.kafka
def test_validators_and_topic_configs_are_kafka_44s() -> None:
    """What DescribeConfigs does not send, read from the 4.4.0 jars themselves (KafkaConfig.configDef() and
    LogConfig's ConfigDef, tests/real_kafka/java/ConfigDefDump.java): each broker config QuotaBroker validates has
    Kafka's validator, and the topic config table has LogConfig's configs in its definition order (the order
    ConfigDef.parse reports the first bad value in), with their types, defaults and validators."""
    from tests.real_kafka.broker_configs import config_definitions

    definitions = config_definitions()
    broker = {d.name: d for d in definitions if d.kind == "BROKER"}
    assert {name: java_string(v) for name, v in VALIDATORS.items()} == {
        name: broker[name].validator for name in VALIDATORS
    }
    topic = [d for d in definitions if d.kind == "TOPIC" and not d.name.startswith("internal.")]
    assert list(TOPIC_CONFIGS) == [d.name for d in topic]
    assert [(k.type.name, k.default, java_string(k.validator)) for k in TOPIC_CONFIGS.values()] == [
        (d.type, d.default, d.validator) for d in topic
    ]


def describe(*keys: str, version: int = 4) -> Any:
    R = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(
        version=version,
        resources=[R(resource_type=BROKER, resource_name="0", configuration_keys=list(keys) or None)],
        include_synonyms=True,
        include_documentation=True,
    )


def test_kafka_python_protocol_sees_every_config_typed_with_its_source(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(broker_configs={"background.threads": "20", "log.retention.hours": "24"})
    with WireClient(broker.bootstrap_servers) as wire:
        [result] = wire.request(describe()).results
    entries = {c.name: c for c in result.configs}
    assert result.error_code == 0
    assert len(entries) > 100
    assert set(entries) == set(BROKER_CONFIGS)
    threads = entries["background.threads"]
    assert (threads.value, threads.config_source, threads.read_only, threads.config_type) == ("20", STATIC, False, 3)
    assert [(s.name, s.value, s.source) for s in threads.synonyms] == [
        ("background.threads", "20", STATIC),
        ("background.threads", "10", DEFAULT),
    ]
    assert threads.documentation == "The number of threads to use for various background processing tasks"
    assert (entries["log.retention.hours"].value, entries["log.retention.hours"].config_source) == ("24", STATIC)
    assert (entries["broker.id"].value, entries["broker.id"].config_source) == ("0", STATIC)
    password = entries["ssl.keystore.password"]
    assert (password.value, password.is_sensitive, password.config_type) == (None, True, ConfigType.PASSWORD)
    assert (entries["num.partitions"].read_only, entries["log.cleaner.threads"].read_only) == (True, False)
    assert entries["listeners"].value == "PLAINTEXT://:9092"
    assert entries["metric.reporters"].value == "org.apache.kafka.common.metrics.JmxReporter"
    assert entries["group.share.max.size"].config_type == ConfigType.INT


def test_confluent_describes_the_whole_set_and_a_chosen_key(any_broker: Callable[..., EitherBroker]) -> None:
    broker = any_broker(num_brokers=2, broker_configs={"num.partitions": "1"})
    node = broker.node_ids[-1]
    admin = AdminClient(broker.conf())
    [future] = admin.describe_configs([ConfigResource("broker", str(node))]).values()
    entries = dict(future.result(30))
    assert len(entries) == len(BROKER_CONFIGS) + len(broker.static_non_configs) > 100
    assert (entries["node.id"].value, entries["num.partitions"].value) == (str(node), "1")
    assert entries["num.partitions"].source == STATIC
    assert entries["ssl.truststore.password"].is_sensitive
    assert entries["ssl.truststore.password"].value is None
    assert entries["compression.type"].value == "producer"
    assert not entries["compression.type"].is_read_only


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"background.threads": "many"}, "Invalid value many for configuration background.threads: Not a number"),
        ({"zookeeper.connect": "zk:2181"}, "does not model the broker config 'zookeeper.connect'"),
    ],
)
def test_static_broker_configs_are_checked_against_the_set(configs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QuotaBroker(broker_configs=configs)


@pytest.mark.kafka
def test_quota_broker_describes_a_broker_as_kafka_does_entry_by_entry(
    kafka_broker: Any, quota_broker: BrokerFactory
) -> None:
    """DescribeConfigs v4 of a BROKER resource, with synonyms and documentation: a QuotaBroker given the shared
    Kafka's server.properties (its lines that are broker configs; node.id and process.roles are QuotaBroker's
    own) answers every one of the 350 entries as the Kafka broker does (value, source, read-only, sensitive,
    type, synonyms, documentation), the Kafka node's id rewritten to QuotaBroker's node 0."""
    from tests.real_kafka.broker_configs import describe_broker

    node = kafka_broker.brokers[0]
    properties = kafka_broker._properties(node)
    static = {k: v for k, v in properties.items() if k in BROKER_CONFIGS and k not in ("node.id", "process.roles")}
    broker = quota_broker(broker_configs=static)
    own_id = {"node.id": str(node.node_id), "broker.id": str(node.node_id)}

    def shown(entry: Any, rewrite: bool) -> tuple[Any, ...]:
        def value(name: str, text: str | None) -> str | None:
            return "0" if rewrite and name in own_id and own_id[name] == text else text

        synonyms = tuple((s.name, value(s.name, s.value), s.source) for s in entry.synonyms)
        return (
            value(entry.name, entry.value),
            entry.config_source,
            entry.read_only,
            entry.is_sensitive,
            entry.config_type,
            synonyms,
            entry.documentation,
        )

    kafka = {e.name: shown(e, True) for e in describe_broker(kafka_broker.bootstrap_servers, node.node_id)}
    ours = {e.name: shown(e, False) for e in describe_broker(broker.bootstrap_servers, 0)}
    assert set(kafka) - set(ours) == set(properties) - set(BROKER_CONFIGS)  # server.properties lines, no config
    assert {n: e for n, e in ours.items() if e != kafka[n]} == {n: kafka[n] for n in ours if ours[n] != kafka[n]}
