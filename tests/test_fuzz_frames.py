"""QuotaBroker's frame decoder, fuzzed over real sockets.

Random bytes, frames cut short, length prefixes out of range, and well-formed requests with bytes flipped: each
on its own connection, while a bystander connection stays open. Whatever the broker makes of the fuzzed
connection (an answer, or closing it), it must keep serving: the bystander's next request is answered on the
same connection, a new connection is answered, and the broker's own thread is still running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.wire import WireClient, create_topics_request
from throttled_admin.testing import QuotaBroker

FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


class _Errors(logging.Handler):
    """The broker's handler tracebacks (log.exception), kept for the report."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fuzz_target() -> Iterator[tuple[QuotaBroker, WireClient]]:
    errors = _Errors()
    logging.getLogger("throttled_admin.testing").addHandler(errors)
    broker = QuotaBroker().start()
    bystander = WireClient(broker.bootstrap_servers, client_id="bystander", timeout_s=10)
    try:
        yield broker, bystander
    finally:
        bystander.close()
        broker.stop()
        logging.getLogger("throttled_admin.testing").removeHandler(errors)
    # A handler that raised on a request it could decode closed the connection with a traceback instead of
    # answering with an error: still contained, but Kafka answers such requests.
    crashes = [r.getMessage() for r in errors.records]
    assert crashes == [], crashes


def _metadata() -> Any:
    return MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)


def _framed(request: Any, correlation_id: int = 7) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="fuzz")
    return bytes(request.encode(header=True, framed=True))


def _templates() -> list[bytes]:
    """Well-formed requests to damage. No mutations: a flipped count could ask for a billion partitions."""
    return [
        _framed(ApiVersionsRequest(version=3, client_software_name="fuzz", client_software_version="1")),
        _framed(_metadata()),
        _framed(MetadataRequest(version=1, topics=[MetadataRequest.MetadataRequestTopic(name="t")])),
        _framed(DescribeClientQuotasRequest(version=1, components=[], strict=False)),
    ]


TEMPLATES = _templates()


def _deliver(broker: QuotaBroker, payload: bytes) -> None:
    """Send ``payload`` on a new connection, then half-close it and read until the broker answers or closes."""
    host, port = broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        with contextlib.suppress(OSError):  # the broker may close as soon as it sees the length prefix
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + 10
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline and sock.recv(65536):
                pass


def _assert_still_serving(broker: QuotaBroker, bystander: WireClient) -> None:
    assert broker.running
    assert any(t.name == "quota-broker" and t.is_alive() for t in threading.enumerate())
    response = bystander.request(_metadata())  # the connection that was open all along
    assert [b.node_id for b in response.brokers] == [0]
    with WireClient(broker.bootstrap_servers, client_id="after-fuzz", timeout_s=10) as fresh:
        assert fresh.request(_metadata()).brokers


payloads = st.one_of(
    st.binary(max_size=300),  # anything at all
    st.builds(  # a plausible length prefix with junk behind it
        lambda body, extra: struct.pack(">i", len(body) + extra) + body,
        st.binary(min_size=0, max_size=200),
        st.integers(min_value=-4, max_value=4),
    ),
    st.builds(  # a frame whose header names a real API and version, and a junk body
        lambda key, version, body: struct.pack(">ihhi", 8 + len(body), key, version, 1) + body,
        st.integers(min_value=-1, max_value=80),
        st.integers(min_value=-1, max_value=20),
        st.binary(max_size=120),
    ),
    st.builds(  # a well-formed request cut short
        lambda template, cut: template[: max(1, int(len(template) * cut))],
        st.sampled_from(TEMPLATES),
        st.floats(min_value=0, max_value=0.999),
    ),
    st.builds(  # a well-formed request with bytes flipped after the length prefix
        lambda template, flips: _flip(template, flips),
        st.sampled_from(TEMPLATES),
        st.lists(st.tuples(st.integers(min_value=4, max_value=10_000), st.integers(1, 255)), min_size=1, max_size=6),
    ),
    st.sampled_from(  # length prefixes out of range
        [struct.pack(">i", size) for size in (-1, 0, 7, 2**31 - 1, 100 * 1024 * 1024 + 1)]
    ),
)


def _flip(template: bytes, flips: list[tuple[int, int]]) -> bytes:
    data = bytearray(template)
    for position, mask in flips:
        index = 4 + position % (len(data) - 4)
        data[index] ^= mask
    return bytes(data)


@FUZZ_SETTINGS
@given(payload=payloads)
def test_malformed_frames_cost_only_their_connection(
    fuzz_target: tuple[QuotaBroker, WireClient], payload: bytes
) -> None:
    broker, bystander = fuzz_target
    _deliver(broker, payload)
    _assert_still_serving(broker, bystander)


def test_many_bad_connections_at_once(fuzz_target: tuple[QuotaBroker, WireClient]) -> None:
    broker, bystander = fuzz_target
    bad = [b"\xff" * 64, struct.pack(">i", 2**31 - 1), TEMPLATES[1][:9], struct.pack(">ihhi", 8, 999, 0, 1)]
    threads = [threading.Thread(target=_deliver, args=(broker, bad[i % len(bad)])) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    _assert_still_serving(broker, bystander)


def test_a_request_split_into_single_bytes_is_answered(fuzz_target: tuple[QuotaBroker, WireClient]) -> None:
    """TCP may deliver a frame in pieces: the decoder must wait for the rest, not reject the first piece."""
    broker, _ = fuzz_target
    with WireClient(broker.bootstrap_servers, timeout_s=10) as wire:
        request = _metadata()
        request.with_header(correlation_id=1, client_id="trickle")
        for byte in bytes(request.encode(header=True, framed=True)):
            wire.send_raw(bytes([byte]))
        response = wire.receive(request)
    assert response.brokers


def test_two_requests_in_one_segment_are_both_answered(fuzz_target: tuple[QuotaBroker, WireClient]) -> None:
    broker, _ = fuzz_target
    with WireClient(broker.bootstrap_servers, timeout_s=10) as wire:
        first, second = _metadata(), _metadata()
        wire.send_raw(_framed(first, 1) + _framed(second, 2))
        assert wire.receive(first).brokers
        assert wire.receive(second).brokers


def test_an_oversized_create_is_refused_as_kafka_refuses_it() -> None:
    with QuotaBroker() as broker, WireClient(broker.bootstrap_servers, timeout_s=30) as wire:
        response = wire.request(create_topics_request(5, ("huge", 200_000)))
        assert response.topics[0].error_code == 44  # POLICY_VIOLATION
        assert broker.topics() == {}
