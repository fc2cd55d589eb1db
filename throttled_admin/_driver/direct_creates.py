"""Bulk creates on connections of the client's own (issue 40): a CreateTopics the engine marks ``direct`` (a bulk
request of a client that does not pace and has never seen a throttle: ``_engine/lanes.Lanes.direct``) is written,
and its answer read, by the client itself instead of librdkafka, whose parse of an answer is quadratic in its size
(``rd_list_index`` for each topic: about 60 ms of CPU for 4,000 topics, which a broker on the same cores waits for).

Each lane has a connection of its own to the broker librdkafka would send to (the controller a bootstrap server
names in its Metadata: in KRaft, any broker, which forwards it), with the application's security settings
(``broker_connection``: PLAINTEXT, TLS, SASL PLAIN and SCRAM; anything else: never used). Both are opened on a
thread of their own when the first such request comes; that one, and any while they open, go to librdkafka. Once
open, the request is written and its answer waited for on a thread of its own (one request per connection, rule b),
within the request's librdkafka timeout, and handed over as librdkafka would (``create_wire``): each topic's result,
the response's throttle first through the lane's throttle callback (the engine's gate, the application's
``throttle_cb``).

What this client writes on them is never left in doubt about its connection: a request that gets no answer in time,
or one that cannot be read, closes its connection and is answered ``_TRANSPORT`` (written, the connection gone:
outcome unknown, and nothing is final before its controller deadline, ``_engine/slot``). That, a throttle, a
controller's refusal (NOT_CONTROLLER, REQUEST_TIMED_OUT: ZooKeeper-mode brokers refuse a create the controller does
not get) or new credentials retire the connections for the client's life: librdkafka carries every request after.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, InvalidStateError
from typing import Any

from confluent_kafka import KafkaError, KafkaException, ThrottleEvent

from throttled_admin._driver import create_wire
from throttled_admin._driver.broker_connection import (
    BrokerConnection,
    ConnectionSettings,
    Unsupported,
    bootstrap_addresses,
)
from throttled_admin._driver.scheduler import Answer, SendOrder
from throttled_admin._driver.turns import Sending
from throttled_admin._engine.classify import Outcome, classify

__all__ = ["DirectCreates"]

log = logging.getLogger(__name__)

_OPEN_TIMEOUT_S = 5.0
# Connections idle this long are opened again before their next request: half Kafka's connections.max.idle.ms default
# (a broker's close of an idle connection is also seen as it comes: ``BrokerConnection.closed_by_peer``).
_IDLE_S = 300.0
_LANES = 2


class _State(enum.Enum):
    NEW = "new"
    OPENING = "opening"
    OPEN = "open"
    RETIRED = "retired"


class DirectCreates:
    """The client's own connections for bulk creates, one per lane. Thread-safe."""

    def __init__(self, conf: Mapping[str, Any], throttled: Callable[[int, ThrottleEvent], None]) -> None:
        """``throttled(lane, event)``: a response's throttle, as the lane's librdkafka handle tells its own."""
        self._throttled = throttled
        self._bootstrap = bootstrap_addresses(conf)
        protocol = str(conf.get("security.protocol", "plaintext")).strip().lower()
        self._scheme = "" if protocol == "plaintext" else f"{protocol}://"  # (librdkafka's broker names)
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._state = _State.NEW
        self._connections: list[BrokerConnection] = []  # one per lane, once open
        self._sockets: list[BrokerConnection] = []  # every one made, from before its connect (``close`` shuts them)
        self._busy: set[int] = set()  # the lanes with a request in flight
        self._used_at = 0.0  # when a request on them last ended (monotonic)
        self._node = -1
        self.sent = 0  # requests handed to them
        self.opened: Future[bool] = Future()  # once their latest opening has ended: open (True), or not
        try:
            self._settings: ConnectionSettings | None = ConnectionSettings.from_conf(conf)
        except Unsupported:
            self._settings, self._state = None, _State.RETIRED
            self.opened.set_result(False)

    def __repr__(self) -> str:
        return f"DirectCreates({self._state.value}, {self.sent} sent, {self._settings!r})"

    def send(self, order: SendOrder, on_answer: Callable[[Answer], None], sending: Sending) -> bool | None:
        """Write ``order`` on its lane's connection (True), or not, closed (False, as ``Transport.send``); None: not
        taken, librdkafka carries it (nothing was written)."""
        if not order.direct or order.method != "create_topics" or order.operation_timeout_s <= 0:
            return None
        with self._lock:
            started = self._start_opening_locked()
            connection = self._usable_locked(order.lane)
            if connection is not None:
                self._busy.add(order.lane)
        if not started:
            self._ended_opening(False)
        if connection is None:
            return None
        try:
            body = create_wire.encode(order.items, order.operation_timeout_s, bool(order.validate_only))
            if not sending.begin():
                self._done(order.lane, connection, ok=True)
                return False
        except BaseException:  # (cut short before its thread started: nothing was written)
            sending.began = False
            self._done(order.lane, connection, ok=True)
            raise
        exchange = threading.Thread(
            target=self._exchange,
            args=(order, connection, body, on_answer),
            name="throttled-admin-direct-create",
            daemon=True,
        )
        try:
            exchange.start()
        except RuntimeError:  # no thread could start: nothing was written, and librdkafka needs none of ours
            sending.began = False
            self._done(order.lane, connection, ok=False)
            return None
        self.sent += 1  # (sends come one turn at a time)
        return True

    def _usable_locked(self, lane: int) -> BrokerConnection | None:
        """The lane's connection if a request may be written on it now. One the broker has closed (it reads as
        readable while idle: Kafka's ``connections.max.idle.ms``, a restart), idle for long, or whose KIP-368 session
        nears its end is never written: all are dropped once neither carries a request, and opened again for the
        next (this request goes through librdkafka)."""
        if self._state is not _State.OPEN or lane in self._busy:
            return None
        connection = self._connections[lane]
        idle_s = time.monotonic() - self._used_at
        # (the idle ones only: one carrying a request reads as readable once its answer arrives)
        idle = [c for other, c in enumerate(self._connections) if other not in self._busy]
        if not (connection.expired or idle_s > _IDLE_S or any(c.closed_by_peer() for c in idle)):
            return connection
        if not self._busy:
            for dropped in self._connections:
                dropped.close()
            self._connections, self._sockets, self._state = [], [], _State.NEW
            self.opened = Future()  # (the next opening's)
        return None

    def opening(self) -> Future[bool]:
        """``opened``, their opening started if it has not (the second lane's probe waits for it: ``_client``)."""
        with self._lock:
            started = self._start_opening_locked()
        if not started:
            self._ended_opening(False)
        return self.opened

    def _start_opening_locked(self) -> bool:
        """Open them if they are not (False: no thread could start, they are retired)."""
        if self._state is not _State.NEW:
            return True
        self._state = _State.OPENING
        self._used_at = time.monotonic()
        try:
            threading.Thread(target=self._open, name="throttled-admin-direct-open", daemon=True).start()
        except RuntimeError:
            self._state = _State.RETIRED
            return False
        return True

    def retire(self) -> None:
        """Never used again (new credentials, say): each connection is closed once its request in flight ends."""
        with self._lock:
            self._retire_locked()
        self._ended_opening(False)  # (if they never opened: the second lane's probe waits no longer)

    def close(self) -> None:
        """Shut every connection: a request in flight ends at once, answered ``_TRANSPORT``. In a forked child, the
        parent's connections are only let go (shutting a socket shuts it for the parent too)."""
        with self._lock:
            self._state = _State.RETIRED
            made, self._sockets, self._connections = self._sockets, [], []
        forked = os.getpid() != self._pid
        for connection in made:
            connection.close(shut=not forked)
        self._ended_opening(False)

    # -- on threads of their own -------------------------------------------------------------------

    def _open(self) -> None:
        deadline = time.monotonic() + _OPEN_TIMEOUT_S
        try:
            assert self._settings is not None
            context = self._settings.tls.context() if self._settings.tls is not None else None
            address, node = self._controller(context, deadline)
            connections = [self._connect(address, context, deadline) for _ in range(_LANES)]
            if not all(c.supports(create_wire.API_KEY, create_wire.VERSION) for c in connections):
                raise Unsupported(f"CreateTopics v{create_wire.VERSION}")
        except Exception as exc:  # (unreachable, refused, a broker too old: librdkafka carries every request)
            log.debug("bulk creates go through librdkafka: no connection of the client's own (%s)", type(exc).__name__)
            self.close()
            return
        with self._lock:
            if self._state is _State.OPENING:
                self._connections, self._node, self._state = connections, node, _State.OPEN
                connections = []
        for connection in connections:  # (closed or retired meanwhile)
            connection.close()
        self._ended_opening(not connections)

    def _ended_opening(self, open_: bool) -> None:
        with contextlib.suppress(InvalidStateError):  # (ended before: closed after it opened)
            self.opened.set_result(open_)

    def _controller(self, context: ssl.SSLContext | None, deadline: float) -> tuple[str, int]:
        """The address and node id of the controller the first bootstrap server that answers names."""
        for address in self._bootstrap:
            try:
                connection = self._connect(address, context, deadline)
            except OSError:
                continue
            try:
                answer = connection.metadata([], deadline)
            finally:
                connection.close()
            controller = answer.brokers.get(answer.controller_id)
            if controller is None:
                raise ValueError("the broker names no controller it lists")
            return controller, answer.controller_id
        raise OSError("no bootstrap server could be reached")

    def _connect(self, address: str, context: ssl.SSLContext | None, deadline: float) -> BrokerConnection:
        assert self._settings is not None
        return BrokerConnection(address, self._settings, context, deadline, self._opened)

    def _opened(self, connection: BrokerConnection) -> None:
        with self._lock:
            if self._state is _State.RETIRED:
                raise OSError("closed")
            self._sockets.append(connection)

    def _exchange(
        self, order: SendOrder, connection: BrokerConnection, body: bytes, on_answer: Callable[[Answer], None]
    ) -> None:
        names = [topic.topic for topic in order.items]
        try:
            reader = connection.exchange(
                create_wire.API_KEY, create_wire.VERSION, body, time.monotonic() + order.request_timeout_s
            )
            answer = create_wire.decode(reader, order.operation_timeout_s, names)
        except Exception as exc:  # (OSError, TimeoutError, ValueError: no answer, or none that can be read)
            self._done(order.lane, connection, ok=False)
            why = "no answer in time" if isinstance(exc, TimeoutError) else type(exc).__name__
            error = KafkaError(KafkaError._TRANSPORT, f"{connection.address}: {why}; the connection was closed")
            on_answer(KafkaException(error))
            return
        refused = any(classify(result) is Outcome.NOT_APPLIED for result in answer.results.values())
        self._done(order.lane, connection, ok=not (answer.throttle_ms > 0 or refused))
        if answer.throttle_ms > 0:
            node = self._node
            event = ThrottleEvent(f"{self._scheme}{connection.address}/{node}", node, answer.throttle_ms / 1000)
            try:
                self._throttled(order.lane, event)
            except Exception:  # (logged: the answer is handed over all the same)
                log.exception("handing over a response's throttle failed")
        on_answer(answer.results)

    def _done(self, lane: int, connection: BrokerConnection, *, ok: bool) -> None:
        """The lane's request ended; not ``ok``: the connections are retired, this one closed at once."""
        with self._lock:
            self._busy.discard(lane)
            self._used_at = time.monotonic()
            if not ok:
                self._retire_locked()
            close = self._state is _State.RETIRED
        if close:
            connection.close()

    def _retire_locked(self) -> None:
        self._state = _State.RETIRED
        idle = [c for lane, c in enumerate(self._connections) if lane not in self._busy]
        for connection in idle:
            connection.close()
