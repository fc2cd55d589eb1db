"""The few pieces of Kafka's wire format the client writes itself (the broker-views reader, ``broker_connection`` and
``metadata_wire``): primitive types, classic and compact (flexible versions, KIP-482), request and response headers,
and reading one frame from a socket. confluent-kafka has no API to send a request to one chosen broker, and the
client's core has no Kafka codec of its own.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid

__all__ = ["NO_UUID", "Reader", "Writer", "read_exactly", "read_frame", "request_frame", "response_body"]

NO_UUID = bytes(16)  # Kafka's zero UUID: no id


class Writer:
    def __init__(self) -> None:
        self._data = bytearray()

    def build(self) -> bytes:
        return bytes(self._data)

    def int8(self, value: int) -> Writer:
        self._data += struct.pack(">b", value)
        return self

    def int16(self, value: int) -> Writer:
        self._data += struct.pack(">h", value)
        return self

    def int32(self, value: int) -> Writer:
        self._data += struct.pack(">i", value)
        return self

    def uvarint(self, value: int) -> Writer:
        while value > 0x7F:
            self._data.append((value & 0x7F) | 0x80)
            value >>= 7
        self._data.append(value)
        return self

    def string(self, value: str | None) -> Writer:
        """A classic (nullable) string: int16 length, -1 for null."""
        if value is None:
            return self.int16(-1)
        data = value.encode()
        self.int16(len(data))
        self._data += data
        return self

    def compact_string(self, value: str | None) -> Writer:
        """A compact (nullable) string: uvarint length + 1, 0 for null."""
        if value is None:
            return self.uvarint(0)
        data = value.encode()
        self.uvarint(len(data) + 1)
        self._data += data
        return self

    def blob(self, value: bytes) -> Writer:
        """Classic bytes: int32 length."""
        self.int32(len(value))
        self._data += value
        return self

    def uuid(self, value: uuid.UUID | None) -> Writer:
        self._data += NO_UUID if value is None else value.bytes
        return self

    def no_tags(self) -> Writer:
        """An empty tagged-field section (flexible versions)."""
        return self.uvarint(0)


_INT8, _INT16, _INT32, _INT64 = (struct.Struct(layout) for layout in (">b", ">h", ">i", ">q"))


class Reader:
    """Reads a response body; raises ValueError (or struct.error) when it ends early or does not parse."""

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self._data = data
        self._offset = offset

    def _at(self, size: int) -> int:
        """Where the next ``size`` bytes start; the reader moves past them."""
        offset = self._offset
        end = offset + size
        if size < 0 or end > len(self._data):
            raise ValueError("the answer ends early")
        self._offset = end
        return offset

    def _take(self, size: int) -> bytes:
        offset = self._at(size)
        return self._data[offset : offset + size]

    def rest(self) -> tuple[bytes, int]:
        """The bytes read and where the reader stands in them: for a decoder that reads in place itself
        (``metadata_wire``), then tells the reader where it stopped (``skip_to``)."""
        return self._data, self._offset

    def skip_to(self, offset: int) -> None:
        """Move on to ``offset`` (at most the end), as a decoder that read in place stopped there."""
        if not self._offset <= offset <= len(self._data):
            raise ValueError("the answer ends early")
        self._offset = offset

    def int8(self) -> int:
        return int(_INT8.unpack_from(self._data, self._at(1))[0])

    def boolean(self) -> bool:
        return self.int8() != 0

    def int16(self) -> int:
        return int(_INT16.unpack_from(self._data, self._at(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack_from(self._data, self._at(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack_from(self._data, self._at(8))[0])

    def uvarint(self) -> int:
        offset, data = self._offset, self._data
        if offset < len(data) and not data[offset] & 0x80:  # one byte: lengths, counts, empty tag sections
            self._offset = offset + 1
            return data[offset]
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError("a varint longer than 5 bytes")

    def string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self._take(size).decode()

    def compact_string(self) -> str | None:
        size = self.uvarint() - 1
        return None if size < 0 else self._take(size).decode()

    def blob(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else self._take(size)

    def array_length(self) -> int:
        """A classic array's length (-1: null, read as empty)."""
        return max(0, self.int32())

    def compact_array_length(self) -> int:
        """A compact array's length (null read as empty)."""
        return max(0, self.uvarint() - 1)

    def skip_tags(self) -> None:
        offset = self._offset
        if offset < len(self._data) and self._data[offset] == 0:  # none (almost every section)
            self._offset = offset + 1
            return
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


def request_frame(
    api_key: int, version: int, correlation_id: int, client_id: str, body: bytes, *, flexible: bool
) -> bytes:
    """A whole request: size, request header (v1, or v2 with its tagged fields for a flexible version), body."""
    header = Writer().int16(api_key).int16(version).int32(correlation_id).string(client_id)
    if flexible:
        header.no_tags()
    payload = header.build() + body
    return struct.pack(">i", len(payload)) + payload


def response_body(frame: bytes, correlation_id: int, *, flexible: bool) -> Reader:
    """The body of a response frame (after its size), its header checked: the answer to ``correlation_id``."""
    reader = Reader(frame)
    if reader.int32() != correlation_id:
        raise ValueError("not the answer to the request sent")
    if flexible:
        reader.skip_tags()
    return reader


def read_exactly(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < size:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the broker did not answer in time")
        sock.settimeout(remaining)
        chunk = sock.recv(min(size - len(data), 65536))
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket, deadline: float, max_bytes: int) -> bytes:
    """One response frame's bytes after its size; ValueError for a size no Kafka response has."""
    (size,) = struct.unpack(">i", read_exactly(sock, 4, deadline))
    if not 4 <= size <= max_bytes:
        raise ValueError(f"not a Kafka response: {size} bytes")
    return read_exactly(sock, size, deadline)
