"""First contact: how far a client's connections got, read from librdkafka's own words.

librdkafka reports every connection attempt that fails, as ``NAME: REASON (after Nms in state STATE)``
(``rd_kafka_broker_set_error`` in rdkafka_broker.c), where STATE is how far that connection got:

- ``CONNECT``: the TCP connection, or resolving the name ("Connect to ipv4#127.0.0.1:19999 failed: Connection
  refused", "Failed to resolve 'nosuchhost:9092': ...");
- ``SSL_HANDSHAKE``: the TLS handshake ("SSL handshake failed: Disconnected: ... connecting to a PLAINTEXT broker
  listener?" when the listener closed the connection on the ClientHello; a certificate problem);
- ``APIVERSION_QUERY``: connected, waiting for the broker's first answer, to ApiVersions ("Disconnected: connection
  closed by peer" when a TLS listener closed it on a plaintext request, "ApiVersionRequest failed: Local: Timed
  out" when nothing answered within ``api.version.request.timeout.ms``);
- ``AUTH_LEGACY``, ``AUTH_HANDSHAKE``, ``AUTH_REQ``: SASL (a refused password);
- ``UP``: the handshake was complete; only then does librdkafka write a request of the application's
  (``rd_kafka_send`` holds everything else back until the broker is UP).

The failures librdkafka logs at level 3 also reach ``error_cb``; the others (a connection closed during
ApiVersions at level 6, an ApiVersions timeout at level 4) only its log, as ``FAIL`` lines, which the client reads
(``_driver.librdkafka_log``). A failure before ``UP`` says that connection wrote nothing; which stage it reached
is what a client that was never answered can say about why ("cannot connect to HOST:PORT (REASON)").

``NAME`` is librdkafka's broker name: ``HOST:PORT/bootstrap`` or ``HOST:PORT/NODEID``, prefixed with the
protocol for every protocol but plaintext (``sasl_plaintext://HOST:PORT/bootstrap``, ``ssl://...``); messages
say ``HOST:PORT``.

A listener that speaks the other protocol (TLS or not) is asked by the driver on a connection of its own
(``_driver.handshake_drops``); what it finds is a ``wrong_listener`` error, which ``contact_failure`` reads back as
a *definite* failure: no connection attempt can succeed, so nothing waits for one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from confluent_kafka import KafkaError

__all__ = ["ContactFailure", "broker_address", "contact_failure", "wrong_listener"]

# librdkafka's broker states before UP, and what each means for a connection that failed in it.
_STAGES = {
    "CONNECT": "tcp",
    "TRY_CONNECT": "tcp",
    "SSL_HANDSHAKE": "tls",
    "APIVERSION_QUERY": "apiversions",
    "AUTH_LEGACY": "sasl",
    "AUTH_HANDSHAKE": "sasl",
    "AUTH_REQ": "sasl",
}
_FAILED = re.compile(
    r"^(?P<broker>\S+): (?P<reason>.*?) \(after \d+ms in state (?P<state>[A-Z_]+)"
    r"(?:, \d+ identical error\(s\) suppressed)?\)$",
    re.DOTALL,
)
_RESOLVE = re.compile(r"^(?P<broker>\S+): (?P<reason>Failed to resolve .*)$", re.DOTALL)
_THREAD = re.compile(r"^\[thrd:[^\]]*\]: ")
_CHECK = "; check security.protocol"
_WRONG_LISTENER = re.compile(r"^(?P<broker>\S+): (?P<reason>the listener at \S+ (?:does not speak|requires) TLS; .*)$")


@dataclass(frozen=True)
class ContactFailure:
    """A connection attempt that failed before its handshake completed: to ``address`` (HOST:PORT), why, and how
    far it got (``stage``: "tcp", "tls", "apiversions", "sasl"; "listener" for a listener found to speak the
    other protocol, which no retry can get past)."""

    address: str
    reason: str
    stage: str

    @property
    def definite(self) -> bool:
        return self.stage == "listener"


def broker_address(name: str) -> str:
    """HOST:PORT of librdkafka's broker name: ``sasl_ssl://h:9093/bootstrap``, ``h:9092/0``, ``[::1]:9092/0``."""
    name = name.split("://", 1)[-1]
    return name.rsplit("/", 1)[0] if "/" in name else name


def contact_failure(message: str) -> ContactFailure | None:
    """The failure an ``error_cb`` message or a ``FAIL`` log line reports, when its connection failed before the
    handshake completed (or its listener speaks the other protocol); None for anything else (a failure in state UP,
    "N/N brokers are down", ...)."""
    message = _THREAD.sub("", message, count=1)
    match = _WRONG_LISTENER.match(message)
    if match is not None:
        return ContactFailure(broker_address(match["broker"]), match["reason"], "listener")
    match = _FAILED.match(message)
    if match is not None:
        stage = _STAGES.get(match["state"])
        return None if stage is None else ContactFailure(broker_address(match["broker"]), match["reason"], stage)
    match = _RESOLVE.match(message)  # in case a version leaves out the state
    return None if match is None else ContactFailure(broker_address(match["broker"]), match["reason"], "tcp")


def wrong_listener(broker: str, security_protocol: str, *, requires_tls: bool) -> KafkaError:
    """The error a client reports when the listener at ``broker`` was found to speak the other protocol: it
    ``requires_tls`` and the client does not use TLS, or the client uses TLS and it does not speak it."""
    address = broker_address(broker)
    what = "requires TLS" if requires_tls else "does not speak TLS"
    text = f"{broker}: the listener at {address} {what}{_CHECK}, which is {security_protocol.upper()}"
    return KafkaError(KafkaError._TRANSPORT, text, fatal=False)
