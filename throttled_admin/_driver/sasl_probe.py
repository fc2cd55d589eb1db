"""Asking a listener whether it requires SASL, on connections of its own, as a fact rather than a guess.

1. A Metadata request (v1, no topics: cheap on any cluster) sent without authenticating: a listener that
   serves it does not require SASL. Kafka's SaslServerAuthenticator closes the connection instead ("Unexpected
   Kafka request of type METADATA during SASL handshake").
2. Only then, a SaslHandshake: a SASL listener answers NONE, or UNSUPPORTED_SASL_MECHANISM, with the mechanisms
   it has enabled; a Kafka listener without SASL answers ILLEGAL_SASL_STATE (KafkaApis). Some Kafka-compatible
   brokers accept SASL where it is optional; step 1 keeps them from being taken for one that requires it.

The requests are written with the driver's few wire pieces (``wire_codec``: request header v1, versions that are
not flexible). Plaintext only: this asks a listener the client cannot authenticate to, before any TLS settings
are known to fit.
"""

from __future__ import annotations

import socket
import struct
import time

from throttled_admin._driver.wire_codec import Writer, read_exactly, request_frame

__all__ = ["required_sasl_mechanisms"]

_METADATA = 3
_SASL_HANDSHAKE = 17
_CORRELATION_ID = 1
_NONE = 0
_UNSUPPORTED_SASL_MECHANISM = 33
_MAX_RESPONSE_BYTES = 64 * 1024


def _frame(api_key: int, client_id: str, body: bytes) -> bytes:
    return request_frame(api_key, 1, _CORRELATION_ID, client_id, body, flexible=False)  # version 1 of both APIs


def _exchange(address: str, request: bytes, deadline: float) -> bytes | None:
    """The response frame (after its size), or None when the broker closed the connection without one."""
    host, _, port = address.rpartition(":")
    timeout_s = deadline - time.monotonic()
    if timeout_s <= 0:
        raise TimeoutError("no time left to ask the broker")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as sock:
        sock.sendall(request)
        try:
            (size,) = struct.unpack(">i", read_exactly(sock, 4, deadline))
        except ConnectionError:
            return None
        if not 4 <= size <= _MAX_RESPONSE_BYTES:
            raise ValueError(f"not a Kafka response: {size} bytes")
        return read_exactly(sock, size, deadline)


def _mechanisms(frame: bytes) -> list[str] | None:
    """The SaslHandshake response (correlation id, error code, mechanisms): the mechanisms of a SASL listener's
    answer, None for any other answer or one that does not parse."""
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
    if correlation_id != _CORRELATION_ID or error_code not in (_NONE, _UNSUPPORTED_SASL_MECHANISM):
        return None
    if not 0 < count <= (len(frame) - 10) // 2:
        return None
    mechanisms, offset = [], 10
    for _ in range(count):
        (size,) = struct.unpack_from(">h", frame, offset)
        if not 0 < size <= len(frame) - offset - 2:
            return None
        mechanisms.append(frame[offset + 2 : offset + 2 + size].decode())
        offset += 2 + size
    return mechanisms


def required_sasl_mechanisms(
    address: str, *, client_id: str = "throttled-admin", timeout_s: float = 2.0
) -> list[str] | None:
    """The SASL mechanisms of the plaintext listener at ``address`` ("host:port", "[v6]:port") when it requires
    SASL; None when it does not, or when that cannot be told within ``timeout_s`` in all (unreachable, silent,
    not Kafka)."""
    deadline = time.monotonic() + timeout_s
    try:
        if _exchange(address, _frame(_METADATA, client_id, struct.pack(">i", 0)), deadline) is not None:
            return None  # served without authentication
        answer = _exchange(address, _frame(_SASL_HANDSHAKE, client_id, Writer().string("PLAIN").build()), deadline)
        return None if answer is None else _mechanisms(answer)
    except (OSError, ValueError, struct.error, UnicodeError):
        return None
