"""One broker's Metadata, asked of that broker itself on a connection of our own (plaintext listeners).

librdkafka sends an application's Metadata request to whichever broker it has a connection to, even on a handle
bootstrapped with one broker's address alone (it connects to the brokers it learns of), so it cannot say what one
given broker knows. This asks the broker directly: a Metadata v1 request for all topics (a null topic array:
nothing is auto-created), written here as ``sasl_probe`` writes its requests (request header v1, a version that is
not flexible), and the answer read for the topics asked about: partition count, and whether every partition has
a leader and no error.
"""

from __future__ import annotations

import socket
import struct
import time

from throttled_admin._driver.sasl_probe import _read_exactly

__all__ = ["read_cluster"]

_METADATA = 3
_VERSION = 1
_CORRELATION_ID = 7
_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
_UNKNOWN_TOPIC_OR_PARTITION = 3


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def _take(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self._data, self._offset)
        self._offset += struct.calcsize(fmt)
        return values

    def int8(self) -> int:
        return self._take(">b")[0]

    def int16(self) -> int:
        return self._take(">h")[0]

    def int32(self) -> int:
        return self._take(">i")[0]

    def string(self) -> str | None:
        size = self.int16()
        if size < 0:
            return None
        value = self._data[self._offset : self._offset + size].decode()
        self._offset += size
        return value

    def skip_int32_array(self) -> None:
        count = self.int32()
        self._offset += 4 * max(0, count)


def _request(client_id: str) -> bytes:
    client = client_id.encode()
    header = struct.pack(">hhih", _METADATA, _VERSION, _CORRELATION_ID, len(client)) + client
    body = struct.pack(">i", -1)  # null: every topic, none auto-created
    return struct.pack(">i", len(header) + len(body)) + header + body


def _parse(frame: bytes, names: set[str]) -> tuple[dict[int, str], dict[str, tuple[int, bool]]]:
    reader = _Reader(frame)
    if reader.int32() != _CORRELATION_ID:
        raise ValueError("not the answer to our Metadata request")
    brokers: dict[int, str] = {}
    for _ in range(reader.int32()):
        node_id = reader.int32()
        host = reader.string()
        port = reader.int32()
        reader.string()  # rack (v1)
        brokers[node_id] = f"{host}:{port}"
    reader.int32()  # controller id (v1)
    view: dict[str, tuple[int, bool]] = {}
    for _ in range(reader.int32()):  # topics
        error = reader.int16()
        name = reader.string()
        reader.int8()  # is_internal (v1)
        partitions = reader.int32()
        led = error == 0
        for _ in range(max(0, partitions)):
            partition_error = reader.int16()
            reader.int32()  # partition index
            leader = reader.int32()
            reader.skip_int32_array()  # replicas
            reader.skip_int32_array()  # in-sync replicas
            led = led and partition_error == 0 and leader >= 0
        if name in names and error != _UNKNOWN_TOPIC_OR_PARTITION:
            view[name] = (max(0, partitions), led)
    return brokers, view


def read_cluster(
    address: str, names: list[str], *, client_id: str, timeout_s: float
) -> tuple[dict[int, str], dict[str, tuple[int, bool]]]:
    """The brokers the broker at ``address`` ("host:port") lists (node id -> "host:port"), and what it lists of
    ``names``: topic -> (partitions, all led). Raises OSError, ValueError or struct.error when it cannot be asked
    or its answer cannot be read."""
    deadline = time.monotonic() + timeout_s
    host, _, port = address.rpartition(":")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as sock:
        sock.sendall(_request(client_id))
        (size,) = struct.unpack(">i", _read_exactly(sock, 4, deadline))
        if not 4 <= size <= _MAX_RESPONSE_BYTES:
            raise ValueError(f"not a Kafka response: {size} bytes")
        return _parse(_read_exactly(sock, size, deadline), set(names))
