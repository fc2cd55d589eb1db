"""Asking a listener what it speaks, on connections of its own, as a fact rather than a guess: whether it requires
SASL (``required_sasl_mechanisms``), whether it serves Kafka without TLS (``serves_plaintext``), whether it speaks
TLS (``speaks_tls``).

Whether it requires SASL:

1. A Metadata request (v1, no topics: cheap on any cluster) sent without authenticating: a listener that
   serves it does not require SASL. Kafka's SaslServerAuthenticator closes the connection instead ("Unexpected
   Kafka request of type METADATA during SASL handshake").
2. Only then, a SaslHandshake: a SASL listener answers NONE, or UNSUPPORTED_SASL_MECHANISM, with the mechanisms
   it has enabled; a Kafka listener without SASL answers ILLEGAL_SASL_STATE (KafkaApis). Some Kafka-compatible
   brokers accept SASL where it is optional; step 1 keeps them from being taken for one that requires it.

Whether it serves Kafka without TLS: an ApiVersions request (v1), which any Kafka listener answers before
authentication; a TLS listener closes the connection (or answers with a TLS alert, which is no Kafka response).

Whether it speaks TLS: a TLS handshake that completes, or that the listener ends with a TLS alert (a listener that
wants a client certificate, or other ciphers, still speaks TLS); no certificate is checked, nothing else is sent.
A plaintext Kafka listener closes the connection on the ClientHello (too large a frame).

The requests are written here (request header v1, versions that are not flexible): the client's core has no
Kafka codec of its own and needs only these few fields. The Kafka requests go without TLS: asking a TLS listener
whether it requires SASL would need the client's TLS settings.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time

from throttled_admin._driver.wire_codec import read_exactly as _read_exactly

__all__ = ["required_sasl_mechanisms", "serves_plaintext", "speaks_tls"]

_METADATA = 3
_SASL_HANDSHAKE = 17
_API_VERSIONS = 18
_CORRELATION_ID = 1
_NONE = 0
_UNSUPPORTED_SASL_MECHANISM = 33
_MAX_RESPONSE_BYTES = 64 * 1024


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _frame(api_key: int, client_id: str, body: bytes) -> bytes:
    header = struct.pack(">hhi", api_key, 1, _CORRELATION_ID) + _string(client_id)  # version 1 of both APIs
    return struct.pack(">i", len(header) + len(body)) + header + body


def _connect(address: str, deadline: float) -> socket.socket:
    host, _, port = address.rpartition(":")
    timeout_s = deadline - time.monotonic()
    if timeout_s <= 0:
        raise TimeoutError("no time left to ask the broker")
    return socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)


def _exchange(address: str, request: bytes, deadline: float) -> bytes | None:
    """The response frame (after its size), or None when the broker closed the connection without one."""
    with _connect(address, deadline) as sock:
        sock.sendall(request)
        try:
            (size,) = struct.unpack(">i", _read_exactly(sock, 4, deadline))
        except ConnectionError:
            return None
        if not 4 <= size <= _MAX_RESPONSE_BYTES:
            raise ValueError(f"not a Kafka response: {size} bytes")
        return _read_exactly(sock, size, deadline)


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
        answer = _exchange(address, _frame(_SASL_HANDSHAKE, client_id, _string("PLAIN")), deadline)
        return None if answer is None else _mechanisms(answer)
    except (OSError, ValueError, struct.error, UnicodeError):
        return None


def serves_plaintext(address: str, *, client_id: str = "throttled-admin", timeout_s: float = 2.0) -> bool:
    """True when the listener at ``address`` answers a Kafka request sent without TLS (an ApiVersions, which
    every Kafka listener serves before authentication); False otherwise, or when that cannot be told in time."""
    deadline = time.monotonic() + timeout_s
    try:
        answer = _exchange(address, _frame(_API_VERSIONS, client_id, b""), deadline)
    except (OSError, ValueError, struct.error):
        return False
    return answer is not None and len(answer) >= 6 and struct.unpack_from(">i", answer)[0] == _CORRELATION_ID


def speaks_tls(address: str, *, timeout_s: float = 2.0) -> bool:
    """True when the listener at ``address`` completes a TLS handshake, or ends it with a TLS alert; False
    otherwise (it closed the connection, answered something else, or could not be asked in time)."""
    deadline = time.monotonic() + timeout_s
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a question about the protocol, not about whom to trust
    try:
        with _connect(address, deadline) as sock, context.wrap_socket(sock, do_handshake_on_connect=False) as tls:
            tls.settimeout(max(0.001, deadline - time.monotonic()))
            tls.do_handshake()
    except ssl.SSLError as exc:
        return "ALERT" in str(exc.reason)  # e.g. SSLV3_ALERT_HANDSHAKE_FAILURE; WRONG_VERSION_NUMBER is not TLS
    except (OSError, ValueError):
        return False
    return True
