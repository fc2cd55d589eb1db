"""The slot follows the connection: after librdkafka abandons a request, nothing more is written until the
connection is known to be free again.

librdkafka gives up on an admin request at its ``request_timeout`` ("Failed while waiting for response from
broker"), but the request stays on its connection until its answer arrives or the request's own timeout passes,
which is ``socket.timeout.ms`` (60 s by default; ``rd_kafka_buf_new_request0`` in ``rdkafka_buf.c``; CreateTopics
raises it to ``operation_timeout`` + 1 s only when that is longer, ``rdkafka_request.c``): only then does its
timeout scan (about once a second, ``rd_kafka_broker_timeout_scan``) tear the connection down (``socket.max.fails``
= 1). The late answer itself is dropped unread (``rd_kafka_admin_handle_response``: "Dropping outdated ...
Response"), so its throttle never reaches ``throttle_cb``. A request written meanwhile waits behind the abandoned
one, in the broker's socket, in its mute if the late answer carried a throttle, and the controller's deadline of
that request only starts when the broker reads it: it can be applied after its caller was told it failed.

So the engine writes no mutation while the connection may be busy. It asks the driver for a sentinel: a request
that can change nothing (``DeleteTopics`` of a name no topic can have), sent on the same connection, behind the
abandoned request. Kafka answers a connection's requests in order, after its mute, so:

- the sentinel answered: the abandoned request was answered before it, and the connection is not muted (the
  sentinel's own throttle, if any, reaches ``throttle_cb`` and the gate: a throttle the client never saw is
  believed from the next answer, never guessed);
- the sentinel written and not answered: librdkafka fails a written request only when its connection is torn down
  (a disconnect, or the timeout scan at ``socket.timeout.ms``), so the connection is known to be closed, and the
  next request goes out on a fresh one, which Kafka does not mute;
- the sentinel never written (librdkafka found no controller in time): ask again.

The sentinel's own ``request_timeout`` is ``socket.timeout.ms`` plus ``SCAN_S``, so that librdkafka's answer or
teardown comes first; should it never complete, the engine takes the connection as closed at that time plus a grace.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

__all__ = ["DRAIN_NAME", "SCAN_S", "Connection", "Drained"]

# A name Kafka refuses for a topic (':' is not a legal character), so no topic can have it: deleting it applies
# nothing. Kafka answers UNKNOWN_TOPIC_OR_PARTITION (or TOPIC_AUTHORIZATION_FAILED under ACLs); any answer will do.
DRAIN_NAME = "throttled-admin:drain"
# librdkafka scans for timed-out requests once a second; the sentinel waits this much past socket.timeout.ms.
SCAN_S = 2.0
_GRACE_S = 2.0  # past the sentinel's own timeout, the engine stops waiting for librdkafka to complete it
_LIBRDKAFKA_MAX_TIMEOUT_S = 3600.0


class Drained(enum.Enum):
    """What became of the sentinel."""

    ANSWERED = "answered"  # a broker answered it: the connection is free and not muted
    CLOSED = "closed"  # written, not answered: librdkafka tore the connection down
    NOT_SENT = "not sent"  # never written (no controller in time): the connection's state is unknown


@dataclass
class _Busy:
    since: float
    apply_s: float  # the controller deadline of the abandoned request(s): how long after being read it may apply
    asked_at: float | None = None  # when the sentinel was asked for


class Connection:
    """Whether the connection the mutations go over may still carry a request librdkafka abandoned."""

    def __init__(self, socket_timeout_s: float = 60.0) -> None:
        self._sentinel_timeout_s = min(_LIBRDKAFKA_MAX_TIMEOUT_S, socket_timeout_s + SCAN_S)
        self._busy: _Busy | None = None
        # whether ``_busy`` is set: an attribute, read by every step of the engine (a property was a call each)
        self.busy = False

    @property
    def sentinel_timeout_s(self) -> float:
        return self._sentinel_timeout_s

    def abandoned(self, now: float, apply_s: float) -> None:
        """A request may still be on the connection (librdkafka gave up on it, or its answer could not be read);
        ``apply_s``: its controller deadline (``timeout_ms``), which starts when the broker reads it."""
        if self._busy is None:
            self._busy, self.busy = _Busy(now, apply_s), True
        else:
            self._busy.apply_s = max(self._busy.apply_s, apply_s)

    def step(self, now: float) -> tuple[bool, float]:
        """(ask for a sentinel now, when to look again)."""
        busy = self._busy
        if busy is None:
            return False, math.inf
        if busy.asked_at is None:
            busy.asked_at = now
            return True, now + self._sentinel_timeout_s + _GRACE_S
        given_up_at = busy.asked_at + self._sentinel_timeout_s + _GRACE_S
        if now >= given_up_at:  # librdkafka never completed the sentinel: its connection is long gone
            self._busy, self.busy = None, False
            return False, now
        return False, given_up_at

    def drained(self, outcome: Drained) -> float:
        """The sentinel's outcome; returns how long the abandoned request may still be applied from now: 0 once
        answered (Kafka answered it before the sentinel), its controller deadline once the connection closed (the
        broker may have read it just before: a controller applies what it has begun)."""
        busy = self._busy
        if busy is None:
            return 0.0
        if outcome is Drained.NOT_SENT:
            busy.asked_at = None  # ask again
            return 0.0
        self._busy, self.busy = None, False
        return busy.apply_s if outcome is Drained.CLOSED else 0.0
