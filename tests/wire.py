"""A minimal Kafka wire client for tests: kafka-python's protocol classes over a plain socket.

It lets a test choose the exact API version and client-id of each request, read the raw response, and send
malformed bytes, none of which a full client allows."""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka.protocol.api_header import ResponseClassRegistry


def parse_bootstrap(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


class WireClient:
    def __init__(self, bootstrap: str, client_id: str = "wire-test", timeout_s: float = 30.0):
        self.sock = socket.create_connection(parse_bootstrap(bootstrap), timeout=timeout_s)
        self.client_id = client_id
        self._correlation_id = 0

    def send(self, request: Any) -> int:
        """Send ``request`` (built with its version) and return its correlation id."""
        self._correlation_id += 1
        request.with_header(correlation_id=self._correlation_id, client_id=self.client_id)
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        return self._correlation_id

    def receive(self, request: Any) -> Any:
        size = struct.unpack(">i", self._read(4))[0]
        payload = self._read(size)
        response_class = ResponseClassRegistry.get_response_class(request.header)
        return response_class.decode(payload, version=request.API_VERSION, header=True)

    def request(self, request: Any) -> Any:
        self.send(request)
        return self.receive(request)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def is_closed_by_peer(self) -> bool:
        """True when the broker has closed this connection."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _read(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def create_topics_request(
    version: int, *topics: tuple[str, int], validate_only: bool = False, timeout_ms: int = 30000
) -> Any:
    from kafka.protocol.admin.topics import CreateTopicsRequest

    T = CreateTopicsRequest.CreatableTopic
    return CreateTopicsRequest(
        version=version,
        topics=[T(name=n, num_partitions=p, replication_factor=1, assignments=[], configs=[]) for n, p in topics],
        timeout_ms=timeout_ms,
        validate_only=validate_only,
    )


@contextmanager
def standalone_broker(*args: str) -> Iterator[list[int]]:
    """``python -m throttled_admin.testing ARGS`` in a process of its own; yields the ports its banner names
    (bound before the banner: with ``--port 0`` there is no race with other processes). Stopped with Ctrl-C,
    which must end it cleanly."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "throttled_admin.testing", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert proc.stdout is not None
        yield [int(port) for port in re.findall(r"127\.0\.0\.1:(\d+)", proc.stdout.readline())]
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
    assert code == 0
