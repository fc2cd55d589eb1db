"""A connection of the client's own to one chosen broker, with the application's security settings: PLAINTEXT,
TLS (PEM files) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), for the broker-views reader (``broker_views``) and
bulk creates (``direct_creates``).

confluent-kafka cannot send a request to a broker of the caller's choosing, so the reader speaks to each broker
itself, as librdkafka would with the same settings:

- TLS: ``ssl.ca.location`` (a file, a directory, or ``probe``: the system's), ``ssl.certificate.location``,
  ``ssl.key.location``, ``ssl.key.password``, ``enable.ssl.certificate.verification`` and
  ``ssl.endpoint.identification.algorithm`` (``https``, librdkafka's default: the broker's name is checked);
- SASL: ``sasl.mechanism`` (or ``sasl.mechanisms``) PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with ``sasl.username``
  and ``sasl.password``: ApiVersions, SaslHandshake v1, then SaslAuthenticate (KIP-152), as Kafka's clients do. A
  session lifetime the broker gives (KIP-368) ends the connection's use before it expires.

Any other set-up (GSSAPI, OAUTHBEARER, other ``ssl.*`` settings such as PKCS#12 keystores or PEM strings) is
refused by ``ConnectionSettings.from_conf`` with ``Unsupported``, and the reader falls back on librdkafka
(``librdkafka_views``). The password is held only by the settings and a SASL exchange, neither of which shows it
(repr, exceptions, logs).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from throttled_admin._driver import metadata_wire, quorum_wire
from throttled_admin._driver.sasl_client import SUPPORTED_MECHANISMS, exchange_for
from throttled_admin._driver.wire_codec import Reader, Writer, read_frame, request_frame, response_body

__all__ = [
    "BrokerConnection",
    "BrokerRefused",
    "ConnectionSettings",
    "NoTopicIds",
    "Unsupported",
    "bootstrap_addresses",
]

_API_VERSIONS, _SASL_HANDSHAKE, _SASL_AUTHENTICATE = 18, 17, 36
_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_SESSION_MARGIN = 0.8  # a KIP-368 session is used for this share of its lifetime, then a new connection is made
_TLS_SETTINGS = frozenset(
    {
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
    }
)


class Unsupported(Exception):
    """Settings the client's own connections do not speak (the reader falls back on librdkafka); says which."""


class NoTopicIds(Exception):
    """The broker has no Metadata v10 (Kafka before 2.8): its answers carry no topic ids."""


class BrokerRefused(Exception):
    """The broker refused the connection's handshake (SASL); the broker's own message, which holds no secret."""


def _true(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1")


@dataclass(frozen=True)
class _Tls:
    ca_location: str | None
    certificate: str | None
    key: str | None
    key_password: str | None = field(repr=False)
    verify: bool
    check_hostname: bool

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = self.check_hostname
        if not self.verify:
            context.verify_mode = ssl.CERT_NONE
        if self.ca_location in (None, "probe"):
            context.load_default_certs()
        elif os.path.isdir(self.ca_location):
            context.load_verify_locations(capath=self.ca_location)
        else:
            context.load_verify_locations(cafile=self.ca_location)
        if self.certificate:
            context.load_cert_chain(self.certificate, self.key or None, password=self.key_password)
        return context


@dataclass(frozen=True)
class ConnectionSettings:
    """How to reach a broker as the application's client does. Its repr shows no password."""

    client_id: str
    tls: _Tls | None = None
    mechanism: str | None = None  # SASL
    username: str = ""
    password: str = field(default="", repr=False)

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ConnectionSettings:
        """The settings of a librdkafka configuration; ``Unsupported`` for what the client's connections do not
        speak."""
        protocol = str(conf.get("security.protocol", "plaintext")).strip().lower()
        if protocol not in ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl"):
            raise Unsupported(f"security.protocol {protocol!r}")
        client_id = str(conf.get("client.id", "rdkafka"))
        tls = None
        if protocol in ("ssl", "sasl_ssl"):
            other = sorted(k for k in conf if k.startswith(("ssl.", "ssl_")) and k not in _TLS_SETTINGS)
            if other:
                raise Unsupported(f"TLS setting {other[0]}")
            ca = conf.get("ssl.ca.location")
            verify = _true(conf.get("enable.ssl.certificate.verification", "true"))
            algorithm = str(conf.get("ssl.endpoint.identification.algorithm", "https")).strip().lower()
            tls = _Tls(
                None if ca is None else str(ca),
                _optional(conf, "ssl.certificate.location"),
                _optional(conf, "ssl.key.location"),
                _optional(conf, "ssl.key.password"),
                verify,
                verify and algorithm == "https",
            )
        if not protocol.startswith("sasl_"):
            return cls(client_id, tls)
        mechanism = str(conf.get("sasl.mechanism", conf.get("sasl.mechanisms", "GSSAPI"))).strip().upper()
        if mechanism not in SUPPORTED_MECHANISMS:
            raise Unsupported(f"SASL mechanism {mechanism}")
        return cls(client_id, tls, mechanism, str(conf.get("sasl.username", "")), str(conf.get("sasl.password", "")))


def bootstrap_addresses(conf: Mapping[str, Any]) -> list[str]:
    """``bootstrap.servers`` as "host:port" addresses (a ``SASL_SSL://`` prefix dropped)."""
    servers = str(conf.get("bootstrap.servers", "")).split(",")
    return [a.strip().rpartition("://")[2] for a in servers if a.strip()]


def _optional(conf: Mapping[str, Any], key: str) -> str | None:
    value = conf.get(key)
    return None if value is None else str(value)


class BrokerConnection:
    """An open, authenticated connection to one broker; ``metadata`` asks it about topics. Not thread-safe.

    Raises OSError (unreachable, TLS, closed, timed out), ValueError (an answer that does not parse),
    ``BrokerRefused`` (SASL), ``SaslError`` (a SCRAM server that does not check out) or ``NoTopicIds``."""

    _sock: socket.socket  # the socket of the moment: connecting, then shaking hands (TLS wraps it), then open

    def __init__(
        self,
        address: str,
        settings: ConnectionSettings,
        context: ssl.SSLContext | None,
        deadline: float,
        opened: Callable[[BrokerConnection], None] | None = None,
    ):
        """Connects and shakes hands by ``deadline``. ``opened``: told of the connection as soon as its socket
        exists, before it connects, so that another thread can ``close`` it meanwhile, its TCP connect too (a broker
        whose host drops the connection's SYN); it may raise OSError to stop it there."""
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
        self.address = address
        self._settings = settings
        self._correlation_id = 0
        self._expires_at: float | None = None
        self._closed = False
        sock = self._connect(host, int(port), deadline, opened)
        try:
            if context is not None:
                sock.settimeout(_remaining(deadline))
                # (wrapped before its handshake, so that a close meanwhile shuts the socket the handshake reads)
                sock = self._sock = context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
                if self._closed:
                    raise OSError("the connection was closed")
                sock.do_handshake()
            versions = self._api_versions(deadline)
            if settings.mechanism is not None:
                self._authenticate(settings.mechanism, versions, deadline)
        except BaseException:
            sock.close()
            raise
        self._versions = versions
        highest = versions.get(metadata_wire.API_KEY, (0, -1))[1]
        if highest < metadata_wire.MIN_VERSION:
            self.close()
            raise NoTopicIds(f"{address} answers Metadata up to v{highest}, without topic ids")
        self.metadata_version = min(highest, metadata_wire.MAX_VERSION)

    def __repr__(self) -> str:
        return f"BrokerConnection({self.address!r}, {self._settings!r})"

    @property
    def expired(self) -> bool:
        """The broker's session lifetime (KIP-368) is nearly over: a new connection is due."""
        return self._expires_at is not None and time.monotonic() >= self._expires_at

    def metadata(self, names: list[str], deadline: float) -> metadata_wire.MetadataAnswer:
        version = self.metadata_version
        body = self._exchange(metadata_wire.API_KEY, version, metadata_wire.encode(version, names), True, deadline)
        return metadata_wire.decode(version, body, set(names))

    def quorum(self, deadline: float) -> quorum_wire.QuorumAnswer:
        """Who leads the controller quorum, and in which epoch (DescribeQuorum); UNSUPPORTED_VERSION when the broker
        serves no version of it that the client speaks (Kafka before 3.3, ZooKeeper mode, Redpanda)."""
        low, high = self._versions.get(quorum_wire.API_KEY, (0, -1))
        if high < max(low, quorum_wire.MIN_VERSION) or low > quorum_wire.MAX_VERSION:
            return quorum_wire.QuorumAnswer(quorum_wire.UNSUPPORTED_VERSION)
        version = min(high, quorum_wire.MAX_VERSION)
        body = self._exchange(quorum_wire.API_KEY, version, quorum_wire.encode(version), True, deadline)
        return quorum_wire.decode(version, body)

    def supports(self, api_key: int, version: int) -> bool:
        """The broker serves ``version`` of ``api_key`` (its ApiVersions answer)."""
        low, high = self._versions.get(api_key, (0, -1))
        return low <= version <= high

    def exchange(self, api_key: int, version: int, body: bytes, deadline: float) -> Reader:
        """One request of a version that is not flexible, and the body of its answer (one at a time)."""
        return self._exchange(api_key, version, body, False, deadline)

    def _connect(
        self, host: str, port: int, deadline: float, opened: Callable[[BrokerConnection], None] | None
    ) -> socket.socket:
        """``socket.create_connection``, each socket ``self._sock`` before it connects (``close`` shuts a connect
        under way: Linux aborts it), and ``opened`` told before the first."""
        error: OSError = OSError(f"{host}:{port} resolves to no address")
        for family, kind, proto, _, address in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
            try:
                sock = socket.socket(family, kind, proto)
            except OSError as exc:  # (an address family this host lacks: IPv6's, say)
                error = exc
                continue
            self._sock = sock
            try:
                if opened is not None:  # (its OSError stops the connection)
                    opened(self)
                    opened = None
                if self._closed:
                    raise OSError("the connection was closed")
                sock.settimeout(_remaining(deadline))
                sock.connect(address)
                if family in (socket.AF_INET, socket.AF_INET6):  # (a request's last bytes go at once)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except BaseException as exc:
                sock.close()
                if opened is not None or self._closed or not isinstance(exc, OSError):
                    raise
                error = exc  # the next address, if any
                continue
            return sock
        raise error

    def close(self, shut: bool = True) -> None:
        """Shut, then close: an exchange under way on another thread ends at once (closing alone leaves its wait for
        the answer blocked until the deadline), a TLS handshake and a TCP connect too. Not ``shut``: only this
        process's descriptor is closed (a forked child's copy of its parent's connection)."""
        self._closed = True
        if shut:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def closed_by_peer(self) -> bool:
        """Between exchanges: the broker closed it, or sent what no request asked for (it reads as readable)."""
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):  # (closed here)
            return True
        return bool(readable)

    def _exchange(self, api_key: int, version: int, body: bytes, flexible: bool, deadline: float) -> Reader:
        self._correlation_id += 1
        frame = request_frame(api_key, version, self._correlation_id, self._settings.client_id, body, flexible=flexible)
        self._sock.settimeout(_remaining(deadline))
        self._sock.sendall(frame)
        # ApiVersions answers with response header v0 whatever its version (KIP-511); the others here are not
        # flexible, but Metadata v10+ is.
        return response_body(
            read_frame(self._sock, deadline, _MAX_RESPONSE_BYTES), self._correlation_id, flexible=flexible
        )

    def _api_versions(self, deadline: float) -> dict[int, tuple[int, int]]:
        reader = self._exchange(_API_VERSIONS, 0, b"", False, deadline)
        error = reader.int16()
        versions = {}
        for _ in range(reader.array_length()):
            api_key, low, high = reader.int16(), reader.int16(), reader.int16()
            versions[api_key] = (low, high)
        if error:
            raise ValueError(f"ApiVersions failed with error {error}")
        return versions

    def _authenticate(self, mechanism: str, versions: dict[int, tuple[int, int]], deadline: float) -> None:
        reader = self._exchange(_SASL_HANDSHAKE, 1, Writer().string(mechanism).build(), False, deadline)
        error = reader.int16()
        enabled = [reader.string() for _ in range(reader.array_length())]
        if error:
            offered = ", ".join(m for m in enabled if m) or "none"
            raise BrokerRefused(f"the broker does not enable SASL mechanism {mechanism} (it enables {offered})")
        version = 1 if versions.get(_SASL_AUTHENTICATE, (0, 0))[1] >= 1 else 0
        exchange = exchange_for(mechanism, self._settings.username, self._settings.password)
        token: bytes | None = exchange.first()
        lifetime_ms = 0
        while token is not None:
            reader = self._exchange(_SASL_AUTHENTICATE, version, Writer().blob(token).build(), False, deadline)
            error, message, challenge = reader.int16(), reader.string(), reader.blob() or b""
            lifetime_ms = reader.int64() if version >= 1 else 0
            if error:
                raise BrokerRefused(message or f"SASL authentication failed (error {error})")
            token = exchange.respond(challenge)
        if lifetime_ms > 0:
            self._expires_at = time.monotonic() + _SESSION_MARGIN * lifetime_ms / 1000


def _remaining(deadline: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no time left to ask the broker")
    return remaining
