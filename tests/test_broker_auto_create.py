"""Metadata auto-creation as Kafka 4 (KRaft) does it: KafkaApis.getTopicMetadata hands a missing topic to
AutoTopicCreationManager.sendCreateTopicRequest when the request allows it (every Metadata version: v0-v3
always, v4+ by allow_auto_topic_creation) and auto.create.topics.enable is true; that answer says
UNKNOWN_TOPIC_OR_PARTITION and the topic, created with num.partitions and default.replication.factor, is there
from the next Metadata on. Checked with KafkaJS from npm (its producer asks with auto-creation, its admin client's
fetchTopicMetadata without), kafka-python's protocol classes at every version, and librdkafka."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicCollection
from confluent_kafka.admin import AdminClient
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.either_broker import EitherBroker
from tests.support import BrokerFactory, raised
from tests.test_broker_kraft import kafkajs  # noqa: F401  (the session fixture installing KafkaJS)
from throttled_admin.testing import QuotaBroker

AnyBroker = Callable[..., EitherBroker]
UNKNOWN_TOPIC = 3
METADATA = 3

KAFKAJS_SCRIPT = r"""
const { Kafka, logLevel } = require("kafkajs");
const [bootstrap, topic, role] = process.argv.slice(2);
(async () => {
  const kafka = new Kafka({ clientId: "kafkajs-auto", brokers: [bootstrap], logLevel: logLevel.NOTHING,
                            retry: { retries: 3, initialRetryTime: 50 } });
  const out = {};
  if (role === "admin") {
    // KafkaJS 2's admin client asks Metadata with allowAutoTopicCreation: false (src/index.js admin()).
    const admin = kafka.admin();
    await admin.connect();
    try {
      const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
      out.partitions = metadata.topics[0].partitions.length;
    } catch (error) {
      out.error = error.type || error.name;
    }
    await admin.disconnect();
  } else {
    // A producer asks with allowAutoTopicCreation: true (the default) and retries UNKNOWN_TOPIC_OR_PARTITION;
    // its Produce then fails here, as QuotaBroker serves no data plane.
    const producer = kafka.producer({ retry: { retries: 3, initialRetryTime: 50 } });
    await producer.connect();
    try {
      await producer.send({ topic, messages: [{ value: "x" }], acks: 1, timeout: 2000 });
      out.sent = true;
    } catch (error) {
      out.sent = false;
    }
    await producer.disconnect().catch(() => {});
  }
  console.log(JSON.stringify(out));
})().catch((error) => { console.error(String(error && error.stack || error)); process.exit(1); });
"""


def run_kafkajs(directory: Path, bootstrap: str, topic: str, role: str) -> dict[str, Any]:
    script = directory / "auto_create.js"
    script.write_text(KAFKAJS_SCRIPT)
    result = subprocess.run(
        ["node", str(script), bootstrap, topic, role], cwd=directory, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


def metadata_errors(broker: QuotaBroker, topic: str) -> list[tuple[int, int]]:
    """(Metadata version, error) of each Metadata request that named ``topic``, in order."""
    log = broker.request_log()
    return [(r.api_version, r.errors[topic]) for r in log if r.api_key == METADATA and topic in r.errors]


def test_kafkajs_metadata_with_auto_creation_creates_the_topic_and_answers_as_kraft(
    quota_broker: BrokerFactory,
    kafkajs: Path,  # noqa: F811
) -> None:
    """KafkaJS's producer asks Metadata v6 with allow_auto_topic_creation: the first answer is
    UNKNOWN_TOPIC_OR_PARTITION (AutoTopicCreationManager.sendCreateTopicRequest), KafkaJS retries, and the
    next answer lists the topic with num.partitions partitions."""
    broker = quota_broker(broker_configs={"num.partitions": "3"})
    out = run_kafkajs(kafkajs, broker.bootstrap_servers, "kjs-auto", "producer")
    assert out == {"sent": False}  # Produce is not served
    assert broker.topics() == {"kjs-auto": 3}
    answers = metadata_errors(broker, "kjs-auto")
    assert answers[0] == (6, UNKNOWN_TOPIC)
    assert (6, 0) in answers[1:]


def test_kafkajs_fetch_topic_metadata_asks_without_auto_creation(
    quota_broker: BrokerFactory,
    kafkajs: Path,  # noqa: F811
) -> None:
    """KafkaJS 2's admin client sends allow_auto_topic_creation=false, so fetchTopicMetadata of a missing topic
    fails with UNKNOWN_TOPIC_OR_PARTITION and creates nothing, as against Kafka 4 with default settings; once
    the topic exists it is listed."""
    broker = quota_broker(broker_configs={"num.partitions": "3"})
    assert run_kafkajs(kafkajs, broker.bootstrap_servers, "kjs-missing", "admin") == {
        "error": "UNKNOWN_TOPIC_OR_PARTITION"
    }
    assert broker.topics() == {}
    assert metadata_errors(broker, "kjs-missing") == [(6, UNKNOWN_TOPIC)]
    broker.create_topic("kjs-there", 2)
    assert run_kafkajs(kafkajs, broker.bootstrap_servers, "kjs-there", "admin") == {"partitions": 2}


def test_kafkajs_producer_does_not_create_when_the_broker_does_not_auto_create(
    quota_broker: BrokerFactory,
    kafkajs: Path,  # noqa: F811
) -> None:
    broker = quota_broker(broker_configs={"auto.create.topics.enable": "false"})
    assert run_kafkajs(kafkajs, broker.bootstrap_servers, "kjs-none", "producer") == {"sent": False}
    assert broker.topics() == {}
    assert {error for _, error in metadata_errors(broker, "kjs-none")} == {UNKNOWN_TOPIC}


def metadata_request(version: int, name: str, allow: bool) -> Any:
    T = MetadataRequest.MetadataRequestTopic
    fields: dict[str, Any] = {"version": version, "topics": [T(name=name)]}
    if version >= 4:
        fields["allow_auto_topic_creation"] = allow
    if version >= 8:
        fields["include_topic_authorized_operations"] = False
    if version >= 8 and version <= 10:
        fields["include_cluster_authorized_operations"] = False
    if version >= 10:
        fields["topics"] = [T(name=name, topic_id=uuid.UUID(int=0))]
    return MetadataRequest(**fields)


@pytest.mark.parametrize("version", range(13))
def test_every_metadata_version_auto_creates_when_allowed(any_broker: AnyBroker, version: int) -> None:
    """Every Metadata version asks for auto-creation (v0-v3 always, v4+ when allowed); the first answer says
    UNKNOWN_TOPIC_OR_PARTITION, the next lists the topic with num.partitions partitions, each with
    default.replication.factor replicas (here 1 and 1, the shared Kafka's settings; test_static_broker_configs_*
    and the KafkaJS tests use others on QuotaBroker)."""
    broker = any_broker(num_brokers=2, broker_configs={"num.partitions": "1"})
    kept_out, auto = broker.t("kept-out"), broker.t("auto")
    with broker.wire() as wire:
        refused = wire.request(metadata_request(version, kept_out, allow=False)) if version >= 4 else None
        first = wire.request(metadata_request(version, auto, allow=True))
        broker.settle(lambda: auto in broker.topics())
        second = wire.request(metadata_request(version, auto, allow=True))
    if refused is not None:
        assert [t.error_code for t in refused.topics] == [UNKNOWN_TOPIC]
    assert [t.error_code for t in first.topics] == [UNKNOWN_TOPIC]
    [topic] = second.topics
    assert (topic.error_code, len(topic.partitions), len(topic.partitions[0].replica_nodes)) == (0, 1, 1)
    assert broker.topics() == {auto: 1}


def test_librdkafka_admin_reads_never_create_but_list_topics_of_one_topic_does(any_broker: AnyBroker) -> None:
    """What a client that checks a topic is gone must not use: librdkafka's AdminClient is a producer handle
    (allow.auto.create.topics=true), so list_topics(topic=...) asks with auto-creation and re-creates a deleted
    topic on Kafka with default settings (and here); describe_topics and list_topics() of all topics do not."""
    broker = any_broker()
    gone = broker.t("gone")
    broker.create_topic(gone, 1)
    admin = AdminClient(broker.conf())
    assert admin.delete_topics([gone], operation_timeout=30)[gone].exception(30) is None
    broker.settle(lambda: broker.topics() == {})
    [described] = admin.describe_topics(TopicCollection([gone])).values()
    assert raised(described, 30).args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert gone not in admin.list_topics(timeout=30).topics
    assert broker.topics() == {}
    admin.list_topics(topic=gone, timeout=30)
    assert broker.settled_topics({gone: 1}) == {gone: 1}  # re-created
