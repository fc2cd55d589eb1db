"""First contact: how far a client's connections got, read from librdkafka's own words.

librdkafka reports every connection attempt that fails, as ``NAME: REASON (after Nms in state STATE)``
(``rd_kafka_broker_set_error`` in rdkafka_broker.c), where STATE is how far that connection got:

- ``CONNECT``: the TCP connection, or resolving the name ("Connect to ipv4#127.0.0.1:19999 failed: Connection
  refused", "Failed to resolve 'nosuchhost:9092': ...");
- ``SSL_HANDSHAKE``: the TLS handshake ("SSL handshake failed: Disconnected: ... connecting to a PLAINTEXT broker
  listener?" when the listener closed the connection on the ClientHello; a certificate problem);
- ``APIVERSION_QUERY``: connected, waiting for the broker's first answer, to ApiVersions ("Disconnected: connection
  closed by peer" when a TLS listener closed it on a plaintext request, "ApiVersionRequest failed: Local: Timed
  out: probably due to broker version < 0.10" when nothing answered within ``api.version.request.timeout.ms``,
  "Invalid response size N ...: increase receive.message.max.bytes" when something not Kafka answered, a web
  server's "HTTP/1.1 400": each said as what it means instead);
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

import enum
import math
import re
from dataclasses import dataclass

from confluent_kafka import KafkaError

__all__ = ["Contact", "ContactFailure", "ProbeState", "broker_address", "contact_failure", "wrong_listener"]

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
    r"^(?P<broker>\S+): (?P<reason>.*?) \(after (?P<ms>\d+)ms in state (?P<state>[A-Z_]+)"
    r"(?:, \d+ identical error\(s\) suppressed)?\)$",
    re.DOTALL,
)
_RESOLVE = re.compile(r"^(?P<broker>\S+): (?P<reason>Failed to resolve .*)$", re.DOTALL)
_THREAD = re.compile(r"^\[thrd:[^\]]*\]: ")
_CHECK = "; check security.protocol"
# nothing answered in ``api.version.request.timeout.ms`` (not "Local: Timed out in queue")
_SILENT = re.compile(r"ApiVersionRequest failed: Local: Timed out(?::|$)")
# librdkafka's words for an answer larger than ``receive.message.max.bytes`` (rdkafka_broker.c)
_TOO_LARGE = re.compile(r"Invalid response size (?P<size>-?\d+) \(")
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
        if stage is None:
            return None
        address, reason = broker_address(match["broker"]), match["reason"]
        if stage == "apiversions" and (size := _TOO_LARGE.search(reason)) is not None:
            reason = _not_kafka(address, int(size["size"])) or reason
        elif stage == "apiversions" and _SILENT.match(reason):  # (librdkafka: "probably ... version < 0.10")
            reason = f"the listener at {address} did not answer the Kafka handshake (ApiVersions) in {match['ms']} ms"
        return ContactFailure(address, reason, stage)
    match = _RESOLVE.match(message)  # in case a version leaves out the state
    return None if match is None else ContactFailure(broker_address(match["broker"]), match["reason"], "tcp")


def _not_kafka(address: str, size: int) -> str | None:
    """The reason for a first answer too large for Kafka's (librdkafka's "Invalid response size N ...: increase
    receive.message.max.bytes"): ApiVersions' answer is about a kilobyte, so the listener speaks another protocol;
    its first four bytes, read as the answer's size, say which ('HTTP': a web server). None for a size a Kafka frame
    may have (its first byte 0: up to 16 MiB), over a ``receive.message.max.bytes`` set low: librdkafka's advice
    stands."""
    head = (size & 0xFFFFFFFF).to_bytes(4, "big")
    if head[0] == 0:
        return None
    began = f"'{head.decode()}'" if all(32 <= b < 127 for b in head) else "bytes " + " ".join(f"{b:02x}" for b in head)
    return f"the listener at {address} does not speak Kafka's protocol: its answer began with {began}"


def wrong_listener(broker: str, security_protocol: str, *, requires_tls: bool) -> KafkaError:
    """The error a client reports when the listener at ``broker`` was found to speak the other protocol: it
    ``requires_tls`` and the client does not use TLS, or the client uses TLS and it does not speak it."""
    address = broker_address(broker)
    what = "requires TLS" if requires_tls else "does not speak TLS"
    text = f"{broker}: the listener at {address} {what}{_CHECK}, which is {security_protocol.upper()}"
    return KafkaError(KafkaError._TRANSPORT, text, fatal=False)


class ProbeState(enum.Enum):
    """The contact probe (the driver's light request that tells whether any broker answers this client)."""

    NOT_ASKED = "not asked"
    ASKED = "asked"
    UNANSWERED = "unanswered"  # librdkafka gave up on it


@dataclass
class Contact:
    """The engine's first contact: whether a broker has answered this client, how the last connection failed
    before its handshake while none has, and the contact probe."""

    reached: bool = False  # a broker has answered this client
    failure: ContactFailure | None = None  # the last connection failed before its handshake (until reached)
    probe: ProbeState = ProbeState.NOT_ASKED
    probe_asked_at: float = -math.inf
    auth: tuple[KafkaError, float] | None = None  # an authentication failure, and when it was reported
    new_credentials_at: float = -math.inf  # when the application last gave new SASL credentials

    def answered(self) -> None:
        """A broker has answered this client: no first-contact rule, no 'cannot connect' from now on."""
        self.reached = True
        self.failure = None

    def failed(self, failure: ContactFailure | None) -> None:
        """A connection failed (``failure``: before its handshake, None: otherwise), while no broker had answered.
        What was found of the listener holds until it is seen down (a restart may change it)."""
        if self.reached or failure is None:
            return
        known = self.failure
        if known is not None and known.definite and not failure.definite and failure.stage != "tcp":
            return
        self.failure = failure

    def probed(self, answered: bool) -> None:
        """The probe's outcome: a broker answered it (even with an error), or not."""
        if answered:
            self.answered()
        elif self.probe is ProbeState.ASKED:
            self.probe = ProbeState.UNANSWERED

    def probe_at(self, calls_waiting: bool, interval_s: float) -> float | None:
        """When to ask the probe (at the start, and again every ``interval_s`` while connections fail and calls
        wait: a broker that comes up is noticed); None: not now."""
        again = self.probe is ProbeState.UNANSWERED and self.failure is not None and calls_waiting
        if self.probe is ProbeState.NOT_ASKED or again:
            return self.probe_asked_at + interval_s
        return None

    def asked(self, now: float) -> None:
        self.probe, self.probe_asked_at = ProbeState.ASKED, now

    def hold(self, started_at: float, now: float, wait_s: float) -> float | None:
        """Until a broker has answered, hand over only what librdkafka may be able to write: when to look again
        for a call started at ``started_at`` (None: send now). While connections fail before their handshake,
        nothing goes (woken by an answer, or when the calls give up); while the probe is out, a call waits for it
        ``wait_s`` at most."""
        if self.reached:
            return None
        if self.failure is not None:
            return math.inf
        wait_until = started_at + wait_s
        if self.probe is ProbeState.ASKED and now < wait_until:
            return wait_until  # or by the probe's answer
        return None

    def auth_error(self, now: float, ttl_s: float) -> KafkaError | None:
        """The authentication failure that fails the work now: reported within ``ttl_s`` (librdkafka reports it
        again while it lasts); None once it has lapsed."""
        if self.auth is None:
            return None
        error, reported_at = self.auth
        if now - reported_at > ttl_s:
            self.auth = None
            return None
        return error
