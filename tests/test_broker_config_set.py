"""DescribeConfigs of a BROKER resource answers Kafka 4.0's whole broker config set (KafkaConfig.configDef) as
data: names, types, defaults, sources, read-only flags and sensitivity, with the static broker_configs= in
force; over loopback with confluent-kafka and kafka-python's protocol classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kafka.protocol.admin.configs import DescribeConfigsRequest

from tests.wire import WireClient
from throttled_admin._kafka.config_schema import ConfigType
from throttled_admin.testing import QuotaBroker
from throttled_admin.testing._configs_broker import BROKER_CONFIGS
from throttled_admin.testing._configs_broker_set import broker_config_set

BrokerFactory = Callable[..., QuotaBroker]
BROKER = 4
STATIC, DEFAULT = ConfigSource.STATIC_BROKER_CONFIG.value, ConfigSource.DEFAULT_CONFIG.value


def test_the_set_is_kafka_40s() -> None:
    names = {key.name for key in broker_config_set()}
    assert len(names) == len(broker_config_set()) == 289
    assert {"zookeeper.connect", "inter.broker.protocol.version", "log.message.format.version"}.isdisjoint(names)
    assert {
        "group.consumer.migration.policy",
        "share.coordinator.threads",
        "remote.list.offsets.request.timeout.ms",
    } <= names
    assert names <= set(BROKER_CONFIGS)
    by_name = {key.name: key for key in broker_config_set()}
    assert (by_name["group.coordinator.threads"].default, by_name["ssl.protocol"].default) == ("4", "TLSv1.3")
    assert by_name["log.message.timestamp.after.max.ms"].default == "3600000"  # KIP-1030
    assert by_name["node.id"].default is None  # required, no default
    assert all(key.sensitive == (key.type is ConfigType.PASSWORD) for key in broker_config_set())


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


def test_confluent_describes_the_whole_set_and_a_chosen_key(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(num_brokers=2, broker_configs={"num.partitions": "3"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    [future] = admin.describe_configs([ConfigResource("broker", "1")]).values()
    entries = dict(future.result(30))
    assert len(entries) == len(BROKER_CONFIGS) > 100
    assert (entries["node.id"].value, entries["num.partitions"].value) == ("1", "3")
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
