"""The real-Kafka fixtures themselves: Apache Kafka 4.4 answers on both listeners, quotas are set the way
operators set them (kafka-configs.sh), the slow controller holds every mutation behind it, and missing jars are
an error that names the command to run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from tests.real_kafka import broker as real_broker
from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.real_kafka.tools import ToolServer
from tests.support import Conf, wait_until

pytestmark = pytest.mark.kafka


def _create(conf: Conf, *topics: NewTopic, **kwargs: float) -> dict[str, BaseException | None]:
    admin = AdminClient(conf)
    return {name: future.exception() for name, future in admin.create_topics(list(topics), **kwargs).items()}


def test_kafka_answers_on_plaintext_and_on_sasl_with_plain_and_scram(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    plain = _create({"bootstrap.servers": kafka_broker.bootstrap_servers}, NewTopic(kafka_ns.topic("p"), 2, 1))
    assert plain == {kafka_ns.topic("p"): None}
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        name = kafka_ns.topic(mechanism.lower())
        assert _create(kafka_broker.sasl_conf("alice", mechanism), NewTopic(name, 1, 1)) == {name: None}
    held = kafka_broker.topics(kafka_ns.prefix)
    assert held == {kafka_ns.topic(n): 1 for n in ("plain", "scram-sha-256", "scram-sha-512")} | {
        kafka_ns.topic("p"): 2
    }


def test_a_read_of_what_kafka_holds_leaves_no_barrier_topic(kafka_broker: KafkaCluster) -> None:
    """``topics()`` reads behind a barrier topic (Metadata lags the controller) and deletes it before it returns,
    awaited: a later read, behind its own barrier (created after the earlier one was deleted), never shows it.
    The delete was not awaited: the next read listed the barrier, and one whose AdminClient went with the request
    unsent stayed for good. Barriers of other workers' reads under way may show; this process's may not."""
    own = real_broker.barrier_prefix()
    kafka_broker.topics()
    for _ in range(10):
        assert kafka_broker.topics(own) == {}  # none of the reads before


def test_the_small_index_files_are_a_broker_config_kafka_takes(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    """Each partition maps two index files, so the fixture keeps them small: ``log.index.size.max.bytes``, the
    broker config (KafkaConfig; ``segment.index.bytes`` is its topic-level synonym, which a broker ignores in
    server.properties). The broker shows it as set statically, and a new topic inherits it."""
    size = real_broker.TOPIC_DEFAULTS["log.index.size.max.bytes"]
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    name = kafka_ns.topic("index")
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
    node = str(kafka_broker.brokers[0].node_id)
    broker = ConfigResource(ResourceType.BROKER, node)
    topic = ConfigResource(ResourceType.TOPIC, name)
    entry = admin.describe_configs([broker])[broker].result(timeout=30)["log.index.size.max.bytes"]
    assert (entry.value, entry.source) == (size, ConfigSource.STATIC_BROKER_CONFIG.value)
    assert name in kafka_broker.topics(kafka_ns.prefix)  # behind a barrier: the broker shows it from now on
    inherited = admin.describe_configs([topic])[topic].result(timeout=30)["segment.index.bytes"]
    assert (inherited.value, inherited.source) == (size, ConfigSource.STATIC_BROKER_CONFIG.value)


def test_a_wrong_password_is_refused_by_kafka(kafka_broker: KafkaCluster) -> None:
    errors: list[KafkaError] = []
    # a callback in the conf: confluent-kafka's stub types conf values as str | int | float | bool only
    admin = AdminClient(kafka_broker.sasl_conf("alice") | {"sasl.password": "wrong", "error_cb": errors.append})  # type: ignore[arg-type]
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(0)
    assert any("Authentication failed: Invalid username or password" in e.str() for e in errors), errors


def test_kafka_configs_sets_a_controller_mutation_quota_as_operators_do(
    kafka_broker: KafkaCluster, kafka_tools: ToolServer, kafka_ns: KafkaNamespace
) -> None:
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
) -> None:
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
) -> None:
    """A CreateTopicPolicy sleeps on the controller's own thread: a create of an ordinary topic sent on another
    connection while the slow one is being handled is answered only after it."""
    conf: Conf = {"bootstrap.servers": kafka_slow_broker.bootstrap_servers}
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


def test_missing_jars_are_an_error_naming_make_kafka(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(real_broker, "KAFKA_HOME", tmp_path)
    with pytest.raises(real_broker.KafkaNotFetchedError, match=r"run `make kafka`"):
        real_broker.classpath()


def test_a_cluster_that_fails_to_start_leaves_no_jvm_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A start that fails after a JVM was launched (not ready in time here; Ctrl-C or a crashed second node
    alike) stops what it launched: the cluster is not recorded yet, so nothing at the run's end would stop it, and
    its JVM (in a session of its own, out of reach of the terminal's Ctrl-C) would outlive the run."""
    monkeypatch.setattr(real_broker, "START_TIMEOUT_S", 1.0)
    # The broker runs but advertises a port nothing listens on: no request through it is ever answered.
    spec = real_broker.BrokerSpec(
        extra=(
            (
                "advertised.listeners",
                "PLAINTEXT://127.0.0.1:{},SASL_PLAINTEXT://127.0.0.1:{}".format(*real_broker.free_ports(2)),
            ),
        )
    )
    before = len(real_broker._STARTED)
    try:
        with pytest.raises(RuntimeError, match="Kafka did not answer within 1 s"):
            KafkaCluster.start(spec, tmp_path / "cluster")
        launched = real_broker._STARTED[before:]
        assert launched
        assert [proc.poll() is None for proc in launched] == [False] * len(launched)
        assert not (tmp_path / "cluster").exists()
    finally:
        for proc in real_broker._STARTED[before:]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_cluster_id_never_reads_as_an_option() -> None:
    """kafka-storage format takes ``-t ID``; an id that starts with '-' (1 in 64 of urlsafe base64 ids) is read as
    an option and the format fails ("argument --cluster-id/-t: expected one argument"): Kafka's own
    Uuid.randomUuid draws again for those."""
    ids = [real_broker._cluster_id() for _ in range(2000)]
    assert [i for i in ids if i.startswith("-")] == []
    assert all(len(i) == 22 for i in ids)


_OWNER = """
import sys
from pathlib import Path
from tests.real_kafka.broker import BrokerSpec, KafkaCluster
cluster = KafkaCluster.start(BrokerSpec(), Path(sys.argv[1]))
print(" ".join(str(n.pid) for n in cluster.nodes), flush=True)
sys.stdin.read()  # held until killed
"""


def test_a_killed_owner_leaves_no_jvm_running(tmp_path: Path) -> None:
    """pytest killed (SIGTERM from CI's timeout, SIGKILL, an OOM kill) runs no teardown: the JVMs it started, in
    sessions of their own, must not outlive it (each was 300-500 MB left running on the shared machine)."""
    import contextlib
    import os
    import select
    import signal
    import subprocess
    import sys

    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(tmp_path / "cluster")],
        cwd=real_broker.REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=os.environ | {"THROTTLED_ADMIN_KAFKA_OWNER": ""},
    )
    assert owner.stdout is not None
    pids = [int(p) for p in owner.stdout.readline().split()]
    assert pids, "the cluster did not start"
    handles = [os.pidfd_open(pid) for pid in pids]
    try:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdin.close()  # type: ignore[union-attr]
        owner.stdout.close()
        for handle in handles:  # a pidfd becomes readable when its process exits: no polling, no sleep
            readable, _, _ = select.select([handle], [], [], 60)
            assert readable, "a JVM outlived its killed owner by 60 s"
    finally:
        for handle in handles:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(handle, signal.SIGKILL)
            os.close(handle)


def test_the_runs_end_signals_no_process_that_took_a_dead_jvms_pid(tmp_path: Path) -> None:
    """A recorded JVM that died during the run frees its pid, and this machine's pid_max is 32768: by the run's
    end another process (another developer's pytest, say) may have it. stop_all must stop the JVMs it started,
    not whatever holds their pids now. Here a stranger process holds the recorded pid."""
    import subprocess

    from tests.real_kafka.broker import Node
    from tests.real_kafka.share import stop_all

    stranger = subprocess.Popen(["sleep", "120"])
    try:
        cluster = KafkaCluster(real_broker.BrokerSpec(), str(tmp_path / "c"), "id")
        cluster.nodes = [Node(1, "broker,controller", str(tmp_path / "c" / "node-1"), pid=stranger.pid)]
        root = tmp_path / "share"
        root.mkdir()
        (root / "w11x1-p1-b1.json").write_text(cluster.to_json())
        stop_all(root)
        assert stranger.poll() is None, "stop_all signalled a process that is not the JVM it recorded"
    finally:
        stranger.kill()
        stranger.wait()


def test_the_ports_of_a_cluster_are_distinct() -> None:
    """A bulk benchmark's broker failed to start (12-07): ports taken one by one, each freed before the next was asked
    for, gave its PLAINTEXT and SASL_PLAINTEXT listeners one port, which Kafka refuses. They are now held until all are
    bound."""
    ports = real_broker.free_ports(64)
    assert len(set(ports)) == 64
