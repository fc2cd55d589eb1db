"""Telling a listener that wants authentication from a flaky broker, from librdkafka's log.

A Kafka SASL listener answers ApiVersions to anyone, then closes the connection on the first other request of a
client that has not authenticated (the broker's SaslServerAuthenticator raises IllegalSaslStateException, an
AuthenticationException, and logs "Failed authentication"). The client is never told why: librdkafka logs
``FAIL "...: Disconnected ... (after 0ms in state UP)"`` at level 6 (not an error_cb event) and reconnects
forever; its request fails with "Failed while waiting for controller" at the deadline, and Java's AdminClient
likewise waits for its deadline. A broker that is only restarting or dropping connections answers requests in
between, or refuses connections while it is down.

So a client that does not use SASL reads this as an authentication failure: the same broker closed the
connection within half a second of the handshake, ``DROPS`` times in a row within ``WINDOW_S``, while no
mutation request got through. The scheduler clears the count whenever a request gets through: answered, or
written and then lost with its connection (librdkafka had learned the controller, so the connection carried
more than the handshake; this is what dropped connections and restarts look like).
"""

from __future__ import annotations

import re
from collections import deque

from confluent_kafka import KafkaError

__all__ = ["DROPS", "HandshakeDrops", "uses_sasl"]

DROPS = 3
WINDOW_S = 30.0
_SOON_AFTER_HANDSHAKE_MS = 500  # the first request after ApiVersions was refused within this time of UP
_THREAD = re.compile(r"^\[thrd:[^\]]*\]: ")
_DISCONNECTED = re.compile(r"^(?P<broker>\S+): Disconnected\b.*\(after (?P<ms>\d+)ms in state UP\b")


def uses_sasl(security_protocol: object) -> bool:
    """True for SASL_PLAINTEXT and SASL_SSL (librdkafka's values are case-insensitive)."""
    return str(security_protocol).lower().startswith("sasl")


class HandshakeDrops:
    """Counts, per broker, connections closed right after the handshake (not thread-safe: the scheduler holds
    its lock around every call)."""

    def __init__(self, security_protocol: str) -> None:
        self._security_protocol = security_protocol
        self._drops: dict[str, deque[float]] = {}

    def observe(self, line: str, now: float) -> KafkaError | None:
        """Feed one librdkafka ``FAIL`` log line; returns the authentication error to report once the pattern is
        seen."""
        line = _THREAD.sub("", line, count=1)
        match = _DISCONNECTED.match(line)
        if match is None:
            self._drops.pop(line.split(": ", 1)[0], None)  # refused, timed out: a broker down, not refusing us
            return None
        broker = match["broker"]
        if int(match["ms"]) > _SOON_AFTER_HANDSHAKE_MS:
            self._drops.pop(broker, None)  # the connection served requests before it was closed
            return None
        drops = self._drops.setdefault(broker, deque(maxlen=DROPS))
        drops.append(now)
        if len(drops) < DROPS or now - drops[0] > WINDOW_S:
            return None
        return KafkaError(
            KafkaError._AUTHENTICATION,
            f"{broker}: the broker closed the connection on the first request after the handshake {DROPS} times "
            f"in a row and answered nothing. A SASL listener does this to a client that does not authenticate: "
            f"check security.protocol (it is {self._security_protocol!r}) and the sasl.* settings.",
            fatal=False,
        )

    def answered(self) -> None:
        """A request got through: the brokers are serving this client."""
        self._drops.clear()
