"""Telling a client without SASL that the listener requires it, which librdkafka never does.

A Kafka SASL listener answers ApiVersions to anyone, then closes the connection on the first other request of a
client that has not authenticated (the broker's SaslServerAuthenticator raises IllegalSaslStateException, an
AuthenticationException, and logs "Failed authentication"). The client is never told why: librdkafka logs
``FAIL "...: Disconnected ... (after 0ms in state UP)"`` (not an error_cb event) and reconnects forever; its
request fails with "Failed while waiting for controller" at the deadline, and Java's AdminClient likewise waits
for its deadline.

The pattern is only a suspicion: a broker dropping connections looks the same. So when the same broker has
closed the connection within half a second of the handshake ``DROPS`` times in a row within ``WINDOW_S``
(counting the repeats librdkafka leaves out of its log), with no mutation request getting through in between,
the listener is asked (``_driver.sasl_probe``, on connections of its own: does it serve a request without
authentication, and does it speak SASL). Only a listener that requires SASL makes this an authentication
failure, reported through ``on_found``; from then on it holds (``found``) until a request gets through or the
broker refuses connections (a restart may have changed its listeners). Plaintext clients only: asking a TLS
listener would need the client's TLS settings.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable

from confluent_kafka import KafkaError

from throttled_admin._driver.sasl_probe import required_sasl_mechanisms

__all__ = ["DROPS", "WINDOW_S", "HandshakeDrops", "diagnoses"]

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


def diagnoses(security_protocol: object) -> bool:
    """True for a client that can be told this: one without SASL and without TLS (librdkafka's values are
    case-insensitive)."""
    return str(security_protocol).lower() == "plaintext"


class HandshakeDrops:
    """Counts, per broker, connections closed right after the handshake, and asks the listener when the count
    is reached. ``observe`` and ``answered`` are called under the scheduler's lock; ``on_found`` is called
    without it, from the thread that asked the listener or from ``observe``'s caller."""

    def __init__(
        self,
        security_protocol: str,
        on_found: Callable[[KafkaError], None],
        ask: Callable[[str], list[str] | None] | None = None,
    ) -> None:
        self._security_protocol = security_protocol
        self._on_found = on_found
        self._ask = ask or required_sasl_mechanisms
        self._drops: dict[str, deque[float]] = {}
        self._found: dict[str, KafkaError] = {}
        self._asked_at: dict[str, float] = {}
        self._asking: set[str] = set()
        self._generation = 0  # changes whenever what was found may no longer hold: a late answer is dropped
        self._lock = threading.Lock()  # all but _drops is also used by the asking thread

    def observe(self, line: str, now: float) -> KafkaError | None:
        """Feed one librdkafka ``FAIL`` log line. Returns the error when the broker is known to require SASL
        (the caller reports it); may start asking the listener, which reports through ``on_found``."""
        line = _THREAD.sub("", line, count=1)
        match = _DISCONNECTED.match(line)
        broker = match["broker"] if match is not None else line.split(": ", 1)[0]
        if match is None or int(match["ms"]) > _SOON_AFTER_HANDSHAKE_MS:
            # Refused or timed out (a broker down, perhaps restarting with other listeners), or a connection
            # that served requests before it was closed.
            self._forget(broker)
            return None
        with self._lock:
            if broker in self._found:
                return self._found[broker]
        drops = self._drops.setdefault(broker, deque(maxlen=DROPS))
        drops.extend([now] * min(DROPS, 1 + int(match["suppressed"] or 0)))
        if len(drops) == DROPS and now - drops[0] <= WINDOW_S:
            self._ask_listener(broker)
        return None

    def found(self) -> KafkaError | None:
        """The error of a broker known to require SASL, while that still holds."""
        with self._lock:
            return next(iter(self._found.values()), None)

    def answered(self) -> None:
        """A request got through: the brokers are serving this client."""
        self._drops.clear()
        with self._lock:
            self._found.clear()
            self._generation += 1

    def _forget(self, broker: str) -> None:
        self._drops.pop(broker, None)
        with self._lock:
            if self._found.pop(broker, None) is not None or broker in self._asking:
                self._generation += 1

    def _ask_listener(self, broker: str) -> None:
        with self._lock:
            asked_at = self._asked_at.get(broker)
            if broker in self._asking or (asked_at is not None and time.monotonic() - asked_at < PROBE_INTERVAL_S):
                return
            self._asked_at[broker] = time.monotonic()
            self._asking.add(broker)
            generation = self._generation
        thread = threading.Thread(
            target=self._ask_and_report, args=(broker, generation), name="throttled-admin-sasl-probe"
        )
        thread.daemon = True
        thread.start()

    def _ask_and_report(self, broker: str, generation: int) -> None:
        try:
            mechanisms = self._ask(broker.rsplit("/", 1)[0])
        finally:
            with self._lock:
                self._asking.discard(broker)
        if mechanisms is None:
            return  # not a SASL listener, or it could not be asked: the drops are something else
        error = KafkaError(
            KafkaError._AUTHENTICATION,
            f"{broker}: the listener requires SASL authentication (it offers {', '.join(mechanisms)}) "
            f"and this client does not authenticate (security.protocol is {self._security_protocol!r}), so the "
            "broker closes each connection at its first request. Set security.protocol=SASL_PLAINTEXT (or "
            "SASL_SSL), sasl.mechanism and the sasl.* credentials.",
            fatal=False,
        )
        with self._lock:
            if generation != self._generation:
                return  # a request got through, or the broker went down, while it was being asked
            self._found[broker] = error
        self._on_found(error)
