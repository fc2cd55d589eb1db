"""Rule b's lanes: one request in flight per connection, and a second connection for bulk work (issue 40).

Every request may go on the first lane, the application client's own connection, one at a time (``slot``). The
second lane, a connection of its own (the driver's second librdkafka handle, made when first used), carries one
more request beside the first lane's, so that the broker takes up the next request while this client reads the
last answer: librdkafka's parse of a 2,000-topic answer (9-18 ms, quadratic in its size) and the write of the next
request (3-8 ms) were the client's alone, between two of the broker's requests.

A request goes on the second lane only while everything rule b asks of a request holds for it there:

- the first lane carries a bulk request (at least ``EngineConfig.second_lane_from`` topics) and more is queued;
- this client has never seen a throttle (no response throttled, no topic refused with 89, no Redpanda charge) and
  does not pace: no connection of its is muted, so each request is read by the broker as it arrives and its
  controller deadline starts then, as a request alone on its connection;
- a broker has answered this client (first contact), and the second connection carries no abandoned request;
- the second connection has reached the cluster: the first time all else holds, its handle is made and asked
  something light (``Probe`` of lane 1, a DescribeCluster that any broker answers at once); the lane goes once it is
  answered, and is retired if it is not (a handle that cannot connect never holds 4,000 topics until their deadline).
  The request beside the first one of a bulk call is then of full size, and the broker has it to take up while the
  caller makes the rest of the call ready (a request of one topic there, before, left it idle 10-48 ms, issue 40).

Whatever else happens (a throttle anywhere; on the second lane, a request no broker answered, a failing-over
controller's refusal, any error or failed connection of its handle) retires the second lane for the client's life:
the first goes on alone. A throttle answered on the second connection mutes it; the gate holds every send for it
all the same (the first connection's failure ends it, as for any throttle whose connection is gone: ``throttle``).
A request librdkafka abandons there is drained by a sentinel on that same connection (``connection``), as on the
first, before the second lane's ``final_at`` is known.

While the same holds (``direct``), a bulk request on either lane may go on a connection the driver writes and reads
itself instead of librdkafka's (``_driver/direct_creates``): an answer there is read without librdkafka's quadratic
parse, and a request that gets none is answered as on a connection that closed (outcome unknown, final once its
controller deadline has passed: ``slot``), so no sentinel is ever needed there.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from throttled_admin._engine.actions import Drain
from throttled_admin._engine.classify import Outcome
from throttled_admin._engine.request import Request
from throttled_admin._engine.slot import Slot
from throttled_admin._engine.throttle import ThrottleTracker

__all__ = ["FIRST", "SECOND", "Lanes"]

FIRST, SECOND = 0, 1  # the client's own connection, and the second lane's


class Lanes:
    """The slot of each connection. Not thread-safe: the engine's own state."""

    def __init__(self, socket_timeout_s: float, second_from: int | None) -> None:
        ids = itertools.count(1)  # request ids are unique across the lanes
        self.first = Slot(socket_timeout_s, ids, FIRST)
        self.second = Slot(socket_timeout_s, ids, SECOND)
        self.slots = (self.first, self.second)
        self._second_from = second_from
        self.retired = second_from is None  # the second lane is never used again
        # The lanes whose connection has answered (the first's is the client's first contact): the second carries a
        # request only once it has (its probe, ``probed``).
        self.reached = {FIRST}
        self.probing = False  # the second connection's probe is out (``probed``)
        self.probe_asked = False  # ... asked for by ``senders`` in this step: the engine says so (``Probe``)

    def of(self, request_id: int) -> Slot | None:
        """The slot whose request in flight is ``request_id``, if any."""
        for slot in self.slots:
            if slot.request is not None and slot.request.id == request_id:
                return slot
        return None

    def retire(self) -> None:
        """A throttle was seen, or a request on the second lane got no usable answer: the first lane goes alone."""
        self.retired = True

    def done(self, now: float) -> list[tuple[Request, Slot]]:
        """Each request in flight that is done (``Slot.done``), with its slot."""
        done = []
        for slot in self.slots:
            if slot.request is not None and (request := slot.done(now)) is not None:
                done.append((request, slot))
        return done

    def settles_at(self) -> float:
        """When a request in flight is done without more results (``Slot.settles_at``)."""
        return min(self.first.settles_at(), self.second.settles_at())

    def senders(self, reached: bool, paced: bool, gate: ThrottleTracker, now: float) -> Iterator[Slot]:
        """The slots a request may be composed for now, in turn: the first lane's if free; then the second's, if a
        second request may go beside the first's (looked at after the first's send). ``reached``: a broker has
        answered this client; ``paced``: the client paces (``pacer``)."""
        if self.first.request is None:
            yield self.first
        first, second = self.first.request, self.second
        if (
            not self.retired
            and first is not None
            and self._second_from is not None
            and len(first.topics) >= self._second_from
            and second.request is None
            and not second.busy
            and reached
            and not paced
            and gate.remaining_s(now) <= 0
        ):
            if SECOND in self.reached:
                yield second
            elif not self.probing:  # first, its connection is asked to answer something light
                self.probing = self.probe_asked = True

    def direct(self, topics: int, paced: bool) -> bool:
        """A request of ``topics`` may go on a connection the driver writes and reads itself, not librdkafka's, whose
        parse of an answer is quadratic in its size (``_driver/direct_creates``): a bulk request (at least
        ``second_from`` topics) of a client that does not pace and has never seen a throttle, as the second lane
        asks, on either lane. A throttle read there retires the lanes (``ended``), and the driver retires its
        connections itself: a muted connection never carries a request again."""
        return not self.retired and not paced and self._second_from is not None and topics >= self._second_from

    def probed(self, answered: bool) -> None:
        """The second connection's probe came back: answered, the lane carries full requests; not, it is retired."""
        self.probing = False
        if answered:
            self.reached.add(SECOND)
        else:
            self.retired = True

    def second_failed(self, lost: bool, now: float) -> None:
        """The second handle reported an error or a failed connection: not used again; ``lost``, a connection went
        away, and the request in flight there may have been forwarded to a node that went with it (``outcome``)."""
        self.retired = True
        if lost:
            self.second.node_lost(now)

    def ended(self, slot: Slot, answered: bool, throttle_s: float, outcomes: dict[str, Outcome]) -> None:
        """A request ended: a throttle (of the response, or a topic refused for the quota) retires the second lane,
        and so does a request of the second lane that no broker answered, or that a failing-over controller refused
        (NOT_CONTROLLER, REQUEST_TIMED_OUT: the driver refreshes the first handle's view of the controller only)."""
        if answered:
            self.reached.add(slot.lane)
        if self.retired:
            return
        values = outcomes.values()
        if (
            throttle_s > 0
            or Outcome.THROTTLED in values
            or (slot.lane != FIRST and (not answered or Outcome.NOT_APPLIED in values))
        ):
            self.retired = True

    @property
    def busy(self) -> bool:
        """A connection may still carry an abandoned request."""
        return self.first.busy or self.second.busy

    @property
    def final_at(self) -> float:
        """From when no request this client handed over, on either connection, can still be applied."""
        return max(self.first.final_at, self.second.final_at)

    def drain(self, now: float) -> tuple[tuple[Drain, ...], float]:
        """The sentinels to send now, if any, one per connection that may carry an abandoned request, and when to
        look again (``Slot.drain``)."""
        drains, drain_at = self.first.drain(now)
        if self.second.busy:  # (a second lane that met an abandoned request: rarely)
            more, more_at = self.second.drain(now)
            return drains + more, min(drain_at, more_at)
        return drains, drain_at

    def node_lost(self, now: float) -> None:
        """A node went away: each request in flight, or sent soon after, may have been forwarded to it as the
        controller (``Slot.node_lost``)."""
        self.first.node_lost(now)
        self.second.node_lost(now)
