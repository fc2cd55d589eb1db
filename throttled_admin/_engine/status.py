"""What the driver reads of the engine between steps, as one frozen value (``Engine.status``)."""

from __future__ import annotations

from typing import NamedTuple

from throttled_admin._engine.contact import ContactFailure

__all__ = ["Status"]


class Status(NamedTuple):
    """A snapshot of the engine's state the driver acts on (a NamedTuple: read up to three times a call, and
    cheaper to make than a frozen dataclass)."""

    in_flight: int | None  # the id of the request in flight (its ``Send``'s ``request_id``), if one is
    closed: bool
    idle: bool  # no call pending, no request in flight, and the connection free
    reached: bool  # a broker has answered this client (first contact)
    # From when no request this client handed over can still be applied: every one was answered, or its connection
    # is known closed and its controller deadline (counted from the close: the broker may have read it just
    # before) has passed. ``math.inf`` while a request is in flight or the connection may be busy.
    final_at: float
    rate: float | None  # the pacer's rate (learned, or the quota's), if the client paces
    auth_failing: bool  # an authentication failure is failing the work (reported again once it lapsed)
    wants_default_partitions: bool  # a metadata read should also read the cluster's ``num.partitions``
    max_records_per_request: int  # the batch cap as learned so far (``batch_cap``)
    second_in_flight: int | None = None  # the id of the request in flight on the second lane's connection (``lanes``)
    cap_probe: int | None = None  # the id of the request in flight as a batch cap probe, if one is (``batch_cap``)
    # While no broker has answered this client: how its last connection failed before its handshake (``contact``;
    # some failures librdkafka tells only in a log line), for a read that waits on its own futures
    # (``_driver.metadata_read``). None once a broker has answered.
    contact_failure: ContactFailure | None = None
