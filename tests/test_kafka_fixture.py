"""The real-Kafka fixtures themselves: Apache Kafka 4.4 answers on both listeners, quotas are set the way
operators set them (kafka-configs.sh), the slow controller holds every mutation behind it, and missing jars are
an error that names the command to run."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import wait_until
from tests.real_kafka import broker as real_broker
from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.real_kafka.tools import ToolServer

pytestmark = pytest.mark.kafka


def _create(conf: dict[str, str], *topics: NewTopic, **kwargs: float) -> dict[str, BaseException | None]:
    admin = AdminClient(conf)
    return {name: future.exception() for name, future in admin.create_topics(list(topics), **kwargs).items()}


def test_kafka_answers_on_plaintext_and_on_sasl_with_plain_and_scram(kafka_broker: KafkaCluster, kafka_ns):
    plain = _create({"bootstrap.servers": kafka_broker.bootstrap_servers}, NewTopic(kafka_ns.topic("p"), 2, 1))
    assert plain == {kafka_ns.topic("p"): None}
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        name = kafka_ns.topic(mechanism.lower())
        assert _create(kafka_broker.sasl_conf("alice", mechanism), NewTopic(name, 1, 1)) == {name: None}
    held = kafka_broker.topics(kafka_ns.prefix)
    assert held == {kafka_ns.topic(n): 1 for n in ("plain", "scram-sha-256", "scram-sha-512")} | {
        kafka_ns.topic("p"): 2
    }


def test_a_wrong_password_is_refused_by_kafka(kafka_broker: KafkaCluster):
    errors: list[KafkaError] = []
    admin = AdminClient(kafka_broker.sasl_conf("alice") | {"sasl.password": "wrong", "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(0)
    assert any("Authentication failed: Invalid username or password" in e.str() for e in errors), errors


def test_kafka_configs_sets_a_controller_mutation_quota_as_operators_do(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace
):
    result = kafka_tools.kafka_configs(
        "--bootstrap-server", kafka_broker.bootstrap_servers, "--alter",
        "--add-config", "controller_mutation_rate=7",
        "--entity-type", "clients", "--entity-name", kafka_ns.client_id,
    )  # fmt: skip
    assert (result.exit_code, result.stdout.strip()) == (
        0,
        f"Completed updating config for client {kafka_ns.client_id}.",
    )
    # Kafka answers AlterClientQuotas once the controller has it; a broker lists it once it replayed it.
    assert wait_until(lambda: kafka_broker.describe_quota(client_id=kafka_ns.client_id) == 7.0)
    kafka_broker.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=None)
    assert kafka_broker.describe_quota(client_id=kafka_ns.client_id) is None


def test_kafka_topics_runs_in_the_long_lived_jvm_with_its_exit_codes(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace
):
    name = kafka_ns.topic("tool")
    created = kafka_tools.kafka_topics(
        "--bootstrap-server", kafka_broker.bootstrap_servers, "--create", "--topic", name
    )
    assert (created.exit_code, created.stdout) == (0, f"Created topic {name}.\n")
    again = kafka_tools.kafka_topics("--bootstrap-server", kafka_broker.bootstrap_servers, "--create", "--topic", name)
    assert again.exit_code == 1
    assert f"Topic '{name}' already exists." in again.stdout + again.stderr
    usage = kafka_tools.kafka_topics("--bootstrap-server", kafka_broker.bootstrap_servers)
    assert usage.exit_code == 1
    assert "Command must include exactly one action" in usage.stdout + usage.stderr


def test_the_slow_controller_holds_every_mutation_behind_a_slow_topic(
    kafka_slow_broker: KafkaCluster, kafka_ns: KafkaNamespace
):
    """A CreateTopicPolicy sleeps on the controller's own thread: a create of an ordinary topic sent on another
    connection while the slow one is being handled is answered only after it."""
    conf = {"bootstrap.servers": kafka_slow_broker.bootstrap_servers}
    order: list[str] = []
    slow_sent = threading.Event()

    def slow() -> None:
        admin = AdminClient(conf)
        future = admin.create_topics([NewTopic(kafka_ns.slow(3000, "a"), 1, 1)])[kafka_ns.slow(3000, "a")]
        slow_sent.set()
        future.result()
        order.append("slow")

    thread = threading.Thread(target=slow)
    thread.start()
    slow_sent.wait()
    # The ordinary create goes out on its own connection once the policy says it holds the controller.
    assert wait_for_policy(kafka_slow_broker, kafka_ns.slow(3000, "a"))
    fast = _create(conf, NewTopic(kafka_ns.topic("b"), 1, 1))
    order.append("fast")
    thread.join()
    assert fast == {kafka_ns.topic("b"): None}
    assert order == ["slow", "fast"]


def wait_for_policy(cluster: KafkaCluster, topic: str) -> bool:
    line = f"holding the controller for {topic.split('-')[1]} ms: {topic}"
    return wait_until(lambda: line in cluster.log_path(name="stdout.log").read_text(errors="replace"), timeout_s=30)


def test_missing_jars_are_an_error_naming_make_kafka(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setattr(real_broker, "KAFKA_HOME", tmp_path)
    with pytest.raises(real_broker.KafkaNotFetchedError, match=r"run `make kafka`"):
        real_broker.classpath()
