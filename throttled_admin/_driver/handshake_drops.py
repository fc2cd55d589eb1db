"""Telling a client that its listener speaks another protocol, which librdkafka never does: one that requires SASL
from a client without it, one that requires TLS from a client without it, one without TLS to a TLS client.

Each shows in librdkafka's log as a connection closed during its handshake, then reconnected forever; librdkafka
fails the client's requests only at their timeouts, "waiting for controller", and Java's AdminClient likewise
waits for its deadline:

- **SASL required, client without SASL.** A Kafka SASL listener answers ApiVersions to anyone, then closes the
  connection on the first other request of a client that has not authenticated (the broker's
  SaslServerAuthenticator raises IllegalSaslStateException and logs "Failed authentication"): librdkafka logs
  ``FAIL "...: Disconnected ... (after 0ms in state UP)"`` (not an error_cb event). Only a suspicion: a broker
  dropping connections looks the same. So when the same broker has closed the connection within half a second of
  the handshake ``DROPS`` times in a row within ``WINDOW_S`` (counting the repeats librdkafka leaves out of its
  log), with no mutation request getting through in between, the listener is asked whether it serves a request
  without authentication and whether it speaks SASL (``sasl_probe.required_sasl_mechanisms``).
- **TLS required, client without TLS** (PLAINTEXT, SASL_PLAINTEXT). A TLS listener closes the connection on the
  client's first bytes (an ApiVersions request, which is no TLS record; Kafka sends a 7-byte alert first):
  librdkafka logs ``FAIL "...: Disconnected: ... (after 1ms in state APIVERSION_QUERY)"`` at level 6 (not an
  error_cb event). The listener is asked whether it completes a TLS handshake (``sasl_probe.speaks_tls``).
- **No SASL, SASL client** (SASL_PLAINTEXT, SASL_SSL). A listener without SASL answers the SASL handshake with
  ILLEGAL_SASL_STATE and no mechanism (Kafka's ``KafkaApis.handleSaslHandshakeRequest``; a SASL listener names its
  own): librdkafka reports ``"...: SASL PLAIN mechanism handshake failed: Broker: Request not valid in current SASL
  state: broker's supported mechanisms:  (after 0ms in state AUTH_HANDSHAKE)"`` (error_cb, an authentication
  failure). Nothing needs asking: ``said_plainly`` says so, to the client and to the error_cb from conf.
- **No TLS, TLS client** (SSL, SASL_SSL). A plaintext Kafka listener reads the ClientHello as a frame too large to
  take and closes the connection: librdkafka reports ``"...: SSL handshake failed: Disconnected: ... connecting to
  a PLAINTEXT broker listener? (after 1ms in state SSL_HANDSHAKE)"`` (error_cb, and the log). The listener is asked
  whether it answers an ApiVersions request sent without TLS (``sasl_probe.serves_plaintext``).

Each question runs on connections of its own, on a thread of its own, at most every ``PROBE_INTERVAL_S`` per
broker and one at a time. Only the listener's answer makes the finding, reported through ``on_found`` (an
authentication failure for SASL; ``contact.wrong_listener``, a connection failure no retry gets past, for TLS);
from then on it holds (``found``) until a request gets through or the broker refuses connections (a restart may
have changed its listeners).
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from confluent_kafka import KafkaError

from throttled_admin._driver.sasl_probe import required_sasl_mechanisms, serves_plaintext, speaks_tls
from throttled_admin._engine import broker_address, contact_failure, wrong_listener

__all__ = ["DROPS", "WINDOW_S", "HandshakeDrops", "questions", "said_plainly"]

DROPS = 3
WINDOW_S = 30.0
PROBE_INTERVAL_S = 10.0  # a listener is asked at most this often
_SOON_AFTER_HANDSHAKE_MS = 500  # the first request after ApiVersions was refused within this time of UP
_THREAD = re.compile(r"^\[thrd:[^\]]*\]: ")
# librdkafka logs a repeated identical error once per 30 s per broker, then with how many it left out.
_DISCONNECTED = re.compile(
    r"^(?P<broker>\S+): Disconnected\b.*\(after (?P<ms>\d+)ms in state UP"
    r"(?:, (?P<suppressed>\d+) identical error\(s\) suppressed)?\)"
)
_CLOSED_AT_APIVERSIONS = re.compile(r"^(?P<broker>\S+): Disconnected\b.*\(after \d+ms in state APIVERSION_QUERY\b")
# ILLEGAL_SASL_STATE with no mechanism (librdkafka's rd_kafka_broker_handle_SaslHandshake), and nothing else: an
# empty list also follows other refusals (UNSUPPORTED_SASL_MECHANISM from a listener offering none) and a bad frame.
_NO_SASL = re.compile(
    r"^(?P<broker>\S+): (?P<said>SASL \S+ mechanism handshake failed: Broker: Request not valid in current SASL state: "
    r"broker's supported mechanisms: *\(after .*)$",
    re.DOTALL,
)
_CLOSED_AT_TLS = re.compile(r"^(?P<broker>\S+): (?:SSL handshake failed: )?Disconnected\b.*in state SSL_HANDSHAKE\b")


def questions(security_protocol: object) -> frozenset[str]:
    """What a client can be told about its listener: "sasl" (it requires SASL) for a client with neither SASL nor
    TLS, "tls" (it requires TLS) for one without TLS, "plaintext" (it does not speak TLS) for one with TLS
    (librdkafka's values are case-insensitive)."""
    protocol = str(security_protocol).lower()
    if protocol == "plaintext":
        return frozenset({"sasl", "tls"})
    if protocol == "sasl_plaintext":
        return frozenset({"tls"})
    if protocol in ("ssl", "sasl_ssl"):
        return frozenset({"plaintext"})
    return frozenset()


def said_plainly(error: KafkaError, security_protocol: object) -> KafkaError:
    """An error_cb event said plainly when it shows a listener without SASL to a SASL client (it answered the SASL
    handshake with ILLEGAL_SASL_STATE and no mechanism), librdkafka's words kept after it (they still end with the
    state the connection failed in: ``contact``); otherwise ``error`` itself."""
    match = _NO_SASL.match(_THREAD.sub("", error.str(), count=1))
    if match is None or error.code() != KafkaError._AUTHENTICATION:
        return error
    broker, protocol = match["broker"], str(security_protocol).upper()
    fits = "PLAINTEXT" if protocol == "SASL_PLAINTEXT" else "SSL"
    text = (
        f"{broker}: the listener at {broker_address(broker)} does not use SASL; check security.protocol, which is "
        f"{protocol} ({fits} for this listener). librdkafka: {match['said']}"
    )
    return KafkaError(KafkaError._AUTHENTICATION, text, fatal=False)


class HandshakeDrops:
    """Reads librdkafka's ``FAIL`` lines for a listener of another protocol, and asks it. ``observe`` and
    ``answered`` are called under the scheduler's lock; ``on_found`` is called without it, from the thread that
    asked the listener or from ``observe``'s caller. ``ask``, ``ask_tls`` and ``ask_plaintext`` stand in for the
    questions (tests)."""

    def __init__(
        self,
        security_protocol: str,
        on_found: Callable[[KafkaError], None],
        ask: Callable[[str], list[str] | None] | None = None,
        *,
        ask_tls: Callable[[str], bool] | None = None,
        ask_plaintext: Callable[[str], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._security_protocol = security_protocol
        self._clock = clock  # the driver's
        self._questions = questions(security_protocol)
        self._on_found = on_found
        self._ask_sasl = ask or required_sasl_mechanisms
        self._ask_tls = ask_tls or speaks_tls
        self._ask_plaintext = ask_plaintext or serves_plaintext
        self._drops: dict[str, deque[float]] = {}
        self._found: dict[str, KafkaError] = {}
        # Whether anything was found (``found()`` may say more): the dict itself, whose truth needs no lock, read by
        # the scheduler before every step (issue 39)
        self.found_any: Mapping[str, KafkaError] = self._found
        self._asked_at: dict[str, float] = {}
        self._asking: set[str] = set()
        self._generation = 0  # changes whenever what was found may no longer hold: a late answer is dropped
        self._lock = threading.Lock()  # all but _drops is also used by the asking thread

    def observe(self, line: str, now: float) -> KafkaError | None:
        """Feed one librdkafka ``FAIL`` log line. Returns the error when the listener is known to speak another
        protocol (the caller reports it); may start asking the listener, which reports through ``on_found``."""
        line = _THREAD.sub("", line, count=1)
        for question, pattern in (("tls", _CLOSED_AT_APIVERSIONS), ("plaintext", _CLOSED_AT_TLS)):
            match = pattern.match(line)
            if match is not None and question in self._questions:
                known = self._known(match["broker"])
                if known is None:
                    self._ask_listener(match["broker"], question)
                return known
        match = _DISCONNECTED.match(line)
        if match is None:
            failure = contact_failure(line)
            if failure is not None and failure.stage == "tcp":  # refused: the broker is down, perhaps restarting
                self._forget(line.split(": ", 1)[0])  # with other listeners
            return None
        broker = match["broker"]
        if int(match["ms"]) > _SOON_AFTER_HANDSHAKE_MS or "sasl" not in self._questions:
            self._forget(broker)  # a connection that served requests before it was closed
            return None
        known = self._known(broker)
        if known is not None:
            return known
        drops = self._drops.setdefault(broker, deque(maxlen=DROPS))
        drops.extend([now] * min(DROPS, 1 + int(match["suppressed"] or 0)))
        if len(drops) == DROPS and now - drops[0] <= WINDOW_S:
            self._ask_listener(broker, "sasl")
        return None

    def found(self) -> KafkaError | None:
        """The error of a listener known to speak another protocol, while that still holds."""
        with self._lock:
            return next(iter(self._found.values()), None)

    def answered(self) -> None:
        """A request got through: the brokers are serving this client."""
        self._drops.clear()
        with self._lock:
            self._found.clear()
            self._generation += 1

    def _known(self, broker: str) -> KafkaError | None:
        with self._lock:
            return self._found.get(broker)

    def _forget(self, broker: str) -> None:
        self._drops.pop(broker, None)
        with self._lock:
            if self._found.pop(broker, None) is not None or broker in self._asking:
                self._generation += 1

    def _ask_listener(self, broker: str, question: str) -> None:
        with self._lock:
            asked_at = self._asked_at.get(broker)
            if broker in self._asking or (asked_at is not None and self._clock() - asked_at < PROBE_INTERVAL_S):
                return
            self._asked_at[broker] = self._clock()
            self._asking.add(broker)
            generation = self._generation
        thread = threading.Thread(
            target=self._ask_and_report, args=(broker, question, generation), name="throttled-admin-listener-probe"
        )
        thread.daemon = True
        thread.start()

    def _ask_and_report(self, broker: str, question: str, generation: int) -> None:
        try:
            error = self._answer(broker, question)
        finally:
            with self._lock:
                self._asking.discard(broker)
        if error is None:
            return  # the listener speaks the client's protocol, or could not be asked: the drops are something else
        with self._lock:
            if generation != self._generation:
                return  # a request got through, or the broker went down, while it was being asked
            self._found[broker] = error
        self._on_found(error)

    def _answer(self, broker: str, question: str) -> KafkaError | None:
        """Ask the listener ``question``; the error to report when it speaks another protocol, else None."""
        address = broker_address(broker)
        if question in ("tls", "plaintext"):
            requires_tls = question == "tls"
            other = self._ask_tls(address) if requires_tls else self._ask_plaintext(address)
            return wrong_listener(broker, self._security_protocol, requires_tls=requires_tls) if other else None
        mechanisms = self._ask_sasl(address)
        if mechanisms is None:
            return None
        return KafkaError(
            KafkaError._AUTHENTICATION,
            f"{broker}: the listener requires SASL authentication (it offers {', '.join(mechanisms)}) "
            f"and this client does not authenticate (security.protocol is {self._security_protocol!r}), so the "
            "broker closes each connection at its first request. Set security.protocol=SASL_PLAINTEXT (or "
            "SASL_SSL), sasl.mechanism and the sasl.* credentials.",
            fatal=False,
        )
