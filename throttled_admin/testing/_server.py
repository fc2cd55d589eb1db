"""The wire side of the test broker: one asyncio listener per node, Kafka framing, per-connection
request ordering, KIP-219 muting, the request quota (KIP-124), SASL gating, fault injection and the
request log.

Kafka serves one request per connection at a time, so each connection is a plain read-handle-write loop.
After a throttled response (sent at once, whatever the request version, as KIP-219 has Kafka do), the
broker stops reading that connection until the throttle ends.

Mutations (CreateTopics, DeleteTopics, CreatePartitions) are decoded, handled and encoded on one
controller thread, off the event loop: like KRaft's single-threaded controller they are applied one at a
time, in arrival order, while every other connection keeps being answered. Any node accepts them, as a
KRaft broker forwards them to the active controller, one at a time per node.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gc
import logging
import math
import ssl
import struct
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafka.protocol.api_key import ApiKey

from throttled_admin.testing._codecs import compile_codecs
from throttled_admin.testing._handlers import (
    ANONYMOUS,
    API_SPECS,
    BrokerContext,
    Handled,
    RequestContext,
    api_versions_unsupported,
)

__all__ = [
    "CONTROLLER_APIS",
    "DEFAULT_REQUEST_LOG_LIMIT",
    "GARBLES",
    "MAX_FRAME_BYTES",
    "UNREQUESTED_TOPIC",
    "Faults",
    "RequestRecord",
    "Server",
]

log = logging.getLogger("throttled_admin.testing")


def _log_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """What asyncio reports from the broker's thread (a peer that resets a TLS handshake makes CPython 3.11's
    SSLProtocol fail in ``eof_received``), logged with the exception's type and message but no formatted
    traceback: CPython 3.11 formats one with ``ast.parse``, whose recursion counter all threads share
    (gh-106905), so a traceback formatted here while the test runner formats one on its own thread ended the
    runner with "SystemError: AST constructor recursion depth mismatch"."""
    exc = context.get("exception")
    detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    log.warning("%s%s", context.get("message", "asyncio error"), detail)


MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
TLS_HANDSHAKE_TIMEOUT_S = 10.0
_PRE_AUTH_APIS = (ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate)
_SASL_APIS = (ApiKey.SaslHandshake, ApiKey.SaslAuthenticate)
# The APIs KRaft brokers forward to the controller, which handles them one at a time.
CONTROLLER_APIS = frozenset({int(ApiKey.CreateTopics), int(ApiKey.DeleteTopics), int(ApiKey.CreatePartitions)})
DEFAULT_REQUEST_LOG_LIMIT = 100_000
# How garble_next alters a mutation's response (the request itself is applied as usual). Omitting the *first*
# result is not offered: it crashes confluent-kafka 2.16 (SIGSEGV reading the missing result slot).
GARBLES = ("drop-last", "add", "double")
UNREQUESTED_TOPIC = "garbled-unrequested"  # the name an "add" garble answers for (suffixed if the request has it)
# The list of per-topic results in each mutation response.
_RESULTS_FIELD = {
    int(ApiKey.CreateTopics): "topics",
    int(ApiKey.DeleteTopics): "responses",
    int(ApiKey.CreatePartitions): "results",
}


@dataclass
class RequestRecord:
    """One request as the broker saw it. Times are ``time.monotonic()`` seconds: ``arrived_at`` when its
        first bytes arrived, ``received_at`` when the broker read and processed it (later than ``arrived_at``
        when it waited in a muted connection), ``responded_at`` when it was answered (None for a
        request never answered: fault injection or a dropped connection). ``responded_at`` is set just before
    the response's bytes are written."""

    node_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    principal: str
    arrived_at: float
    received_at: float
    responded_at: float | None = None
    mutations: int = 0
    throttle_time_ms: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    garbled: str | None = None  # how garble_next altered the response ("drop-last", "add", "double")
    delay_s: float = 0.0  # how long delay_next held the response back (on top of set_latency)
    timeout_ms: int | None = None  # a mutation's timeout_ms field (the controller's deadline); None for other APIs
    validate_only: bool | None = None  # CreateTopics' and CreatePartitions' validate_only; None for other APIs
    all_topics: bool = False  # a Metadata request for every topic of the cluster (its ``errors`` name none)

    @property
    def held_s(self) -> float:
        """How long the request waited in a muted connection before the broker processed it."""
        return self.received_at - self.arrived_at

    @property
    def api_name(self) -> str:
        return str(ApiKey(self.api_key).name)


def _check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an int >= 1, got {count!r}")


def _check_error_code(error_code: int, example: str) -> None:
    if isinstance(error_code, bool) or not isinstance(error_code, int) or not -32768 <= error_code <= 32767:
        raise ValueError(f"error_code must be a Kafka error code (an int16), got {error_code!r}")
    if error_code == 0:
        raise ValueError(f"error_code 0 is NONE, not an error: pass the code to inject, e.g. {example}")


class Faults:
    """Fault injection, consumed request by request. Thread-safe. ``latency_s`` delays every response;
    ``controller_latency_s`` delays the controller's handling of each mutation (before its deadline check).
    Each kind of fault counts the requests of its API on its own: a request may take one of each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[int, deque[tuple[int, bool, str | None]]] = {}  # (error code, after applying, words)
        self._metadata_errors: deque[int] = deque()  # Metadata v13+'s top-level error_code (KIP-1102)
        self._blackholes: dict[int, deque[threading.Event]] = {}  # one entry per request, an event per call
        self._garbles: dict[int, deque[str]] = {}
        self._delays: dict[int, deque[float]] = {}
        self._holds: deque[tuple[float, threading.Event]] = deque()
        self.latency_s = 0.0
        self.controller_latency_s = 0.0
        self.slow_policy: tuple[str, float] | None = None  # (topic name prefix, seconds per topic)
        self.unresponsive = False  # requests are read and logged, none is handled or answered (a hung broker)

    def fail_next(
        self, api_key: int, error_code: int, count: int, applied: bool = False, message: str | None = None
    ) -> None:
        _check_count(count)
        _check_error_code(error_code, "41 (NOT_CONTROLLER)")
        if message is not None and not isinstance(message, str):
            raise ValueError(f"message must be a str or None, got {message!r}")
        with self._lock:
            self._failures.setdefault(api_key, deque()).extend([(error_code, applied, message)] * count)

    def fail_metadata_next(self, error_code: int, count: int) -> None:
        _check_count(count)
        _check_error_code(error_code, "129 (REBOOTSTRAP_REQUIRED)")
        with self._lock:
            self._metadata_errors.extend([error_code] * count)

    def blackhole_next(self, api_key: int, count: int) -> threading.Event:
        _check_count(count)
        swallowed = threading.Event()
        with self._lock:
            self._blackholes.setdefault(api_key, deque()).extend([swallowed] * count)
        return swallowed

    def garble_next(self, api_key: int, how: str, count: int) -> None:
        _check_count(count)
        if api_key not in CONTROLLER_APIS:
            raise ValueError(
                "garble_next applies to CreateTopics (19), DeleteTopics (20) and CreatePartitions (37), not "
                f"{ApiKey(api_key).name} ({api_key})"
            )
        if how not in GARBLES:
            raise ValueError(f"how must be one of {GARBLES}, got {how!r}")
        with self._lock:
            self._garbles.setdefault(api_key, deque()).extend([how] * count)

    def delay_next(self, api_key: int, seconds: float, count: int) -> None:
        _check_count(count)
        number = not isinstance(seconds, bool) and isinstance(seconds, (int, float))
        if not number or not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"delay must be a finite number of seconds >= 0, got {seconds!r}")
        with self._lock:
            self._delays.setdefault(api_key, deque()).extend([float(seconds)] * count)

    def hold_controller_next(self, seconds: float) -> threading.Event:
        number = not isinstance(seconds, bool) and isinstance(seconds, (int, float))
        if not number or not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"hold must be a finite number of seconds >= 0, got {seconds!r}")
        held = threading.Event()
        with self._lock:
            self._holds.append((float(seconds), held))
        return held

    def take_hold(self) -> float:
        """The hold of the mutation the controller starts now (0 if none), its event set."""
        with self._lock:
            if not self._holds:
                return 0.0
            seconds, held = self._holds.popleft()
        held.set()
        return seconds

    def take_garble(self, api_key: int) -> str | None:
        with self._lock:
            queue = self._garbles.get(api_key)
            return queue.popleft() if queue else None

    def take_delay(self, api_key: int) -> float:
        with self._lock:
            queue = self._delays.get(api_key)
            return queue.popleft() if queue else 0.0

    def take_failure(self, api_key: int) -> tuple[int, bool, str | None] | None:
        """The error the request handled now fails with, whether it is applied first, and its words (None: the
        default), if one was injected."""
        with self._lock:
            queue = self._failures.get(api_key)
            return queue.popleft() if queue else None

    def take_metadata_error(self) -> int | None:
        """The top-level error of the Metadata (v13+) answer handled now, if one was injected."""
        with self._lock:
            return self._metadata_errors.popleft() if self._metadata_errors else None

    def take_blackhole(self, api_key: int) -> bool:
        """Whether the request handled now goes unanswered; the event of its ``blackhole_next`` is set when it
        was the last of that call's requests."""
        with self._lock:
            queue = self._blackholes.get(api_key)
            if not queue:
                return False
            swallowed = queue.popleft()
            last = not queue or queue[0] is not swallowed
        if last:
            swallowed.set()
        return True


def _garble(response: Any, api_key: int, how: str) -> None:
    """Alter a mutation response's per-topic results in place (see ``GARBLES``)."""
    results: list[Any] = getattr(response, _RESULTS_FIELD[api_key])
    if how == "drop-last":
        if results:
            results.pop()
    elif how == "double":
        if results:
            results.append(results[-1])
    else:  # "add": a success for a topic the request did not name
        names = {r.name for r in results}
        name = UNREQUESTED_TOPIC
        suffix = 0
        while name in names:
            suffix += 1
            name = f"{UNREQUESTED_TOPIC}-{suffix}"
        results.append(_success_result(response, api_key, name))


def _success_result(response: Any, api_key: int, name: str) -> Any:
    """A result with error NONE for ``name``, of the response's own result type."""
    if api_key == ApiKey.CreateTopics:
        return type(response).CreatableTopicResult(
            name=name,
            topic_id=uuid.uuid4(),
            error_code=0,
            error_message=None,
            topic_config_error_code=0,
            num_partitions=1,
            replication_factor=1,
            configs=[],
        )
    if api_key == ApiKey.DeleteTopics:
        return type(response).DeletableTopicResult(name=name, topic_id=uuid.uuid4(), error_code=0, error_message=None)
    return type(response).CreatePartitionsTopicResult(name=name, error_code=0, error_message=None)


_T = TypeVar("_T")


def collections_held(job: Callable[[float], _T]) -> Callable[[float], _T]:
    """``job`` run with Python's cyclic garbage collector off, for a broker that owns its process (``owns_process``:
    ``python -m throttled_admin.testing``). A mutation's decoded topics live while the controller handles it: a
    collection meanwhile moved them to the oldest generation, whose collections walk every topic the cluster holds,
    so a topic cost more the larger its request was (50,000 topics in requests of 4,000: 7 such collections against
    6 in requests of 2,000, a fifth of the broker's CPU in all). With the collector off, they are freed by reference
    counting as the request ends; it is turned on again after, and the next allocation may collect. A collector
    already off when the mutation starts is left off; one that another thread turns off during it is turned on again
    as it ends. Never for a broker that shares its process: the switch is process-wide."""

    def held(received_at: float) -> _T:
        if not gc.isenabled():
            return job(received_at)
        gc.disable()
        try:
            return job(received_at)
        finally:
            gc.enable()

    return held


class _TrackedProtocol(asyncio.StreamReaderProtocol):
    """asyncio's stream protocol, recording its transport from ``connection_made`` on: a connection can be
    closed even when its handler task never got to run (accepted just as the broker stops)."""

    def __init__(self, callback: Any, transports: set[asyncio.BaseTransport], loop: asyncio.AbstractEventLoop):
        super().__init__(asyncio.StreamReader(loop=loop), callback, loop=loop)
        self._transports = transports
        self._tracked: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._tracked = transport
        self._transports.add(transport)
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._tracked is not None:
            self._transports.discard(self._tracked)
        super().connection_lost(exc)


class _Connection:
    def __init__(self, node_id: int, peer: str, needs_auth: bool):
        self.node_id = node_id
        self.peer = peer
        self.principal = ANONYMOUS
        self.needs_auth = needs_auth
        self.authenticated = not needs_auth
        self.sasl_authenticated = False  # a SASL exchange succeeded: the next one is a re-authentication
        self.sasl_mechanism: str | None = None
        self.sasl_exchange: Any = None  # a SCRAM exchange between its two SaslAuthenticate rounds
        self.muted_until = 0.0


@dataclass
class _Answer:
    """A handled request, ready to send: the encoded frame and what the log and the muting need."""

    handled: Handled
    frame: bytes
    throttle_time_ms: int
    garbled: str | None = None
    delay_s: float = 0.0
    mute_ms: int = 0  # how long the connection is muted after the answer (KIP-219)
    timeout_ms: int | None = None  # what the mutation request asked of the controller
    validate_only: bool | None = None


class _Refused(Exception):
    """The request cannot be served; the connection is closed after logging ``why``."""


def _client_id(frame: bytes) -> str:
    """The request header's client_id (a nullable int16-length string after api key, version and
    correlation id), read without decoding the body."""
    if len(frame) < 10:
        return ""
    (length,) = struct.unpack_from(">h", frame, 8)
    return frame[10 : 10 + length].decode("utf-8", "replace") if length > 0 else ""


class Server:
    """Listeners for every node of one cluster, served from one background asyncio thread, with one
    controller thread for the mutation APIs."""

    def __init__(
        self,
        context: BrokerContext,
        faults: Faults,
        *,
        request_log_limit: int = DEFAULT_REQUEST_LOG_LIMIT,
        request_time_cost_ms: float | None = None,
        ssl_context: ssl.SSLContext | None = None,
        owns_process: bool = False,
    ):
        self.context = context
        self.faults = faults
        self.request_time_cost_ms = request_time_cost_ms
        self.ssl_context = ssl_context
        self._owns_process = owns_process  # (``collections_held``)
        self._records: deque[RequestRecord] = deque(maxlen=request_log_limit)
        self._records_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._controller: concurrent.futures.ThreadPoolExecutor | None = None
        self._stopping = threading.Event()  # cuts controller latency short when the broker stops
        self._servers: list[asyncio.base_events.Server] = []
        self._transports: set[asyncio.BaseTransport] = set()
        self._handlers: dict[asyncio.Task[Any], asyncio.BaseTransport] = {}  # each handler and its connection
        # One forwarding channel per node: a KRaft broker forwards mutations to the controller one at a time
        # (NodeToControllerChannelManager's client has one request in flight).
        self._forwarding: dict[int, asyncio.Lock] = {}
        self._closing = False
        self._listeners: dict[int, asyncio.base_events.Server] = {}  # node id -> its listener, while it serves
        self._node_of: dict[asyncio.BaseTransport, int] = {}  # each served connection's node
        self._stopped: set[int] = set()  # nodes stopped on their own (stop_node)

    # -- lifecycle (called from the owner's thread, which may itself run an event loop) -----------

    def start(self, ports: dict[int, int]) -> dict[int, int]:
        """Bind every node (port 0 picks a free one) and return node id -> bound port."""
        compile_codecs()  # (once per process: no first answer of a kind compiles its codec while served)
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(_log_loop_error)
        self._loop = loop
        # One worker: the controller applies mutations one at a time, in the order they arrive.
        self._controller = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="quota-controller")
        self._thread = threading.Thread(target=self._run, args=(loop,), name="quota-broker", daemon=True)
        self._thread.start()
        try:
            return asyncio.run_coroutine_threadsafe(self._bind(ports), loop).result()
        except BaseException:
            self.stop()
            raise

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        """The broker thread: serve until stopped, then close everything on this thread, so that stop()
        never has to run an event loop in its caller's thread (which may be running one already)."""
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            loop.run_until_complete(self._drain())  # whatever raced with the stop: no socket outlives the loop
            if self._controller is not None:
                self._controller.shutdown(wait=True, cancel_futures=True)
            loop.run_until_complete(asyncio.sleep(0))  # deliver the controller's last results before closing
        finally:
            loop.close()

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._stopping.set()
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(self._close(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
        thread.join()
        self._loop = self._thread = self._controller = None

    def drop_connections(self) -> None:
        loop = self._loop
        if loop is not None:
            asyncio.run_coroutine_threadsafe(self._drop(), loop).result()

    def open_connections(self) -> int:
        """Client connections not yet done with: open, or closed while their handler still handles or holds a
        request (a mutation being applied, an answer held by latency)."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return 0

        async def count() -> int:
            return len(self._transports | set(self._handlers.values()))

        return asyncio.run_coroutine_threadsafe(count(), loop).result()

    def records(self) -> list[RequestRecord]:
        with self._records_lock:
            return list(self._records)

    def clear_records(self) -> None:
        with self._records_lock:
            self._records.clear()

    # -- on the loop -----------------------------------------------------------------------------

    async def _bind(self, ports: dict[int, int]) -> dict[int, int]:
        return {node_id: await self._bind_node(node_id, port) for node_id, port in ports.items()}

    async def _bind_node(self, node_id: int, port: int) -> int:
        loop = asyncio.get_running_loop()
        self._forwarding[node_id] = asyncio.Lock()
        factory = functools.partial(_TrackedProtocol, functools.partial(self._serve, node_id), self._transports, loop)
        server = await loop.create_server(factory, "127.0.0.1", port)  # TLS per connection: _start_tls
        self._servers.append(server)
        self._listeners[node_id] = server
        self._stopped.discard(node_id)
        return int(server.sockets[0].getsockname()[1])

    # -- one node at a time (called from the owner's thread) ---------------------------------------

    def stop_node(self, node_id: int) -> None:
        """Stop serving one node: its listener closes and its connections are cut, unanswered; a request they had
        written and the node had not read yet (in a muted connection) is never handled. A mutation the node had
        already forwarded is the controller's: it is applied, its answer lost."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._stop_node(node_id), self._loop).result()

    def start_node(self, node_id: int, port: int) -> None:
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._bind_node(node_id, port), self._loop).result()

    async def _stop_node(self, node_id: int) -> None:
        self._stopped.add(node_id)
        server = self._listeners.pop(node_id, None)
        if server is None:
            return
        loop = asyncio.get_running_loop()
        for listener in server.sockets:
            loop.remove_reader(listener.fileno())
        for transport, node in list(self._node_of.items()):
            if node == node_id:
                transport.abort()  # type: ignore[attr-defined]
        await asyncio.sleep(0)  # accepts under way reach _serve, which aborts them
        server.close()
        await server.wait_closed()
        self._servers.remove(server)

    async def _drop(self) -> None:
        for transport in list(self._transports):
            transport.abort()  # type: ignore[attr-defined]

    async def _close(self) -> None:
        self._closing = True
        # Stop accepting first and close the servers only once accepts under way have finished: in CPython
        # 3.11 a Server closed between an accept and its transport's creation fails an assertion in
        # Server._attach and leaks the accepted socket.
        loop = asyncio.get_running_loop()
        for server in self._servers:
            for listener in server.sockets:
                loop.remove_reader(listener.fileno())
        await self._drain()
        for server in self._servers:
            server.close()
            await server.wait_closed()
        self._servers.clear()

    async def _drain(self) -> None:
        """Abort every connection and cancel our connection handlers, repeating while clients reconnect.

        asyncio's own accept tasks are left to finish: one cancelled before it starts drops its socket
        unclosed. Finished, they hand the connection to a handler that sees ``_closing`` and aborts it."""
        for _ in range(200):
            await self._drop()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.sleep(0.01)  # accepts complete, handlers exit, aborted sockets are closed
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if not self._transports and not others:
                return

    async def _serve(self, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing or node_id in self._stopped:  # accepted while the listeners were closing
            writer.transport.abort()
            return
        self._node_of[writer.transport] = node_id
        peername = writer.get_extra_info("peername")
        peer = f"{peername[0]}:{peername[1]}" if peername else "?"
        conn = _Connection(node_id, peer, needs_auth=self.context.users is not None)
        task = asyncio.current_task()
        assert task is not None
        self._handlers[task] = writer.transport
        try:
            if self.ssl_context is not None and not await self._start_tls(conn, writer):
                return
            while True:
                try:
                    head = await reader.readexactly(4)
                except asyncio.IncompleteReadError as exc:
                    if exc.partial:
                        self._reject(conn, f"truncated frame header ({len(exc.partial)} of 4 bytes)")
                    return
                arrived_at = time.monotonic()
                wait_s = conn.muted_until - arrived_at
                if wait_s > 0:
                    # KIP-219: a muted connection's request waits, unprocessed, until the throttle ends. Only
                    # its length prefix was taken, so the log can tell how long a request was held here.
                    await asyncio.sleep(wait_s)
                    if writer.transport.is_closing():  # cut while muted (its node stopped): never read
                        return
                (size,) = struct.unpack(">i", head)
                if not 8 <= size <= MAX_FRAME_BYTES:
                    self._reject(conn, f"frame length {size} outside 8..{MAX_FRAME_BYTES} bytes")
                    return
                try:
                    frame = await reader.readexactly(size)
                except asyncio.IncompleteReadError as exc:
                    self._reject(conn, f"truncated frame ({len(exc.partial)} of {size} bytes)")
                    return
                if not await self._process(conn, frame, writer, arrived_at):
                    return
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._handlers.pop(task, None)
            self._node_of.pop(writer.transport, None)
            writer.transport.abort()

    async def _start_tls(self, conn: _Connection, writer: asyncio.StreamWriter) -> bool:
        """The TLS handshake, first thing on the connection (Kafka's SslTransportLayer); False when it failed (the
        connection is closed, as Kafka closes a client that does not speak TLS: "SSL handshake failed")."""
        assert self.ssl_context is not None
        if sys.version_info >= (3, 11):  # QuotaBroker refuses an ssl_context on older versions
            try:
                await writer.start_tls(self.ssl_context, ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError) as exc:  # ssl.SSLError, a reset, an aborted handshake
                self._reject(conn, f"TLS handshake failed: {exc}")
                return False
        return True

    def _reject(self, conn: _Connection, why: str) -> None:
        log.warning("QuotaBroker node %d: closing connection from %s: %s", conn.node_id, conn.peer, why)

    async def _process(self, conn: _Connection, frame: bytes, writer: asyncio.StreamWriter, arrived_at: float) -> bool:
        """Handle one request; False closes the connection."""
        received_at = time.monotonic()
        api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame)
        if self.faults.unresponsive:  # read and logged, never handled nor answered; the connection stays open
            record = RequestRecord(
                node_id=conn.node_id,
                api_key=api_key,
                api_version=api_version,
                correlation_id=correlation_id,
                client_id=_client_id(frame),
                principal=conn.principal,
                arrived_at=arrived_at,
                received_at=received_at,
            )
            with self._records_lock:
                self._records.append(record)
            return True
        spec = API_SPECS.get(api_key)
        if spec is None:
            self._reject(conn, f"unsupported API key {api_key}")
            return False
        if not spec.min_version <= api_version <= spec.max_version:
            if api_key == ApiKey.ApiVersions:
                writer.write(self._encode(api_versions_unsupported(), correlation_id))
                await writer.drain()
                return True
            self._reject(conn, f"unsupported version {api_version} of {ApiKey(api_key).name}")
            return False
        if not conn.authenticated and api_key not in _PRE_AUTH_APIS:
            self._reject(conn, f"{ApiKey(api_key).name} before SASL authentication")
            return False
        if api_key == ApiKey.SaslAuthenticate and conn.needs_auth and conn.sasl_mechanism is None:
            self._reject(conn, "SaslAuthenticate before SaslHandshake")
            return False
        context = RequestContext(
            broker=self.context,
            node_id=conn.node_id,
            api_key=api_key,
            api_version=api_version,
            client_id=_client_id(frame),
            principal=conn.principal,
            sasl_mechanism=conn.sasl_mechanism,
            reauthenticating=conn.sasl_authenticated,
            sasl_exchange=conn.sasl_exchange,
        )
        # KIP-124: SASL exchanges and anything before authentication are handled outside the request
        # handlers (SaslServerAuthenticator), so they are neither charged nor throttled. On a listener without
        # SASL, KafkaApis answers SaslHandshake/SaslAuthenticate (ILLEGAL_SASL_STATE) like any request.
        charged = conn.authenticated and (api_key not in _SASL_APIS or not conn.needs_auth)
        job = functools.partial(self._answer, spec, frame, context, correlation_id, charged=charged)
        try:
            if api_key in CONTROLLER_APIS:
                answer = await self._forward(conn.node_id, collections_held(job) if self._owns_process else job)
            else:
                answer = job(received_at)
        except _Refused as exc:
            self._reject(conn, str(exc))
            return False
        except Exception:
            log.exception("QuotaBroker node %d: %s v%d failed", conn.node_id, ApiKey(api_key).name, api_version)
            return False
        handled = answer.handled
        record = RequestRecord(
            node_id=conn.node_id,
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
            client_id=context.client_id,
            principal=conn.principal,
            arrived_at=arrived_at,
            received_at=received_at,
            mutations=handled.mutations,
            throttle_time_ms=answer.throttle_time_ms,
            errors=handled.errors,
            garbled=answer.garbled,
            delay_s=answer.delay_s,
            timeout_ms=answer.timeout_ms,
            validate_only=answer.validate_only,
            all_topics=handled.all_topics,
        )
        with self._records_lock:
            self._records.append(record)
        if self.faults.take_blackhole(api_key):
            return True
        wait_s = self.faults.latency_s + answer.delay_s
        if wait_s > 0:
            await asyncio.sleep(wait_s)
        if writer.transport.is_closing():
            # The connection was dropped (drop_connections, or the client left) while the request was handled
            # or held: the response is lost, so the log must not claim it was answered.
            return False
        # KIP-219, RequestHandlerHelper: "Regardless of throttling, send the response immediately", then mute
        # the connection for the throttle, whatever the request version (the client-throttle version only
        # tells the client whether to back off itself). The answer is logged before its bytes go out, so a
        # reader that has already seen the response always finds ``responded_at`` set.
        record.responded_at = time.monotonic()
        throttle_s = answer.mute_ms / 1000
        if throttle_s > 0:
            conn.muted_until = max(conn.muted_until, record.responded_at + throttle_s)
        writer.write(answer.frame)
        await writer.drain()
        self._apply_session(conn, handled)
        return not handled.close

    async def _forward(self, node_id: int, job: Any) -> _Answer:
        """A KRaft broker forwards a mutation to the controller and waits for its answer before it forwards the
        next (one request in flight): a mutation behind a slow one on the same node is not yet the
        controller's, and its deadline (timeout_ms) starts only when the controller receives it. One sent
        through another node reaches the controller's queue at once, and its deadline may pass there.

        A controller that fails over while it handles the request (it was stopped, or ``fail_over``) is taken to
        have applied it and never answered: the node re-sends it to the next controller, whose answer is the
        client's ("already exists" for a create: ``NodeToControllerRequestThread`` puts a request whose controller
        went away back first in its queue; seen on a three-node Kafka 4.4 quorum's rolling restart). Kafka's
        controller applies nothing it was still holding (a slow policy runs before the records): there the re-send
        creates it."""
        assert self._controller is not None
        cluster, loop = self.context.cluster, asyncio.get_running_loop()
        async with self._forwarding[node_id]:
            epoch = cluster.controller_epoch
            answer: _Answer = await loop.run_in_executor(self._controller, job, time.monotonic())
            if cluster.controller_epoch != epoch and node_id not in self._stopped:
                answer = await loop.run_in_executor(self._controller, job, time.monotonic())
            return answer

    # -- on the loop, or on the controller thread for mutations -------------------------------------

    def _answer(
        self,
        spec: Any,
        frame: bytes,
        context: RequestContext,
        correlation_id: int,
        received_at: float,
        *,
        charged: bool,
    ) -> _Answer:
        """Decode, handle and encode one request, charging its request time (KIP-124). For a mutation,
        ``received_at`` is when the controller received it (forwarded by the node)."""
        started = time.perf_counter()
        try:
            request = spec.request.decode(frame, version=context.api_version, header=True)
        except Exception as exc:
            name = ApiKey(context.api_key).name
            raise _Refused(f"cannot decode {name} v{context.api_version}: {type(exc).__name__}") from None
        decode_s = time.perf_counter() - started
        failure = self.faults.take_failure(context.api_key)
        if failure is not None:
            context.injected_error, context.injected_after_apply, context.injected_message = failure
        if context.api_key == ApiKey.Metadata and context.api_version >= 13:  # v13 has the top-level error_code
            context.metadata_error = self.faults.take_metadata_error()
        timeout_ms: int | None = None
        validate_only: bool | None = None
        if context.api_key in CONTROLLER_APIS:
            timeout_ms = int(request.timeout_ms)
            if hasattr(request, "validate_only"):  # not in DeleteTopics
                validate_only = bool(request.validate_only)
            # ControllerApis turns timeout_ms into the controller's deadline when the controller receives the
            # forwarded request (requestTimeoutMsToDeadlineNs: now + timeout_ms); the event then waits for the
            # controller's thread.
            context.deadline = received_at + int(request.timeout_ms) / 1000
            latency_s = self.faults.controller_latency_s + self.faults.take_hold()
            if latency_s > 0 and self._stopping.wait(latency_s):
                # A controller shutting down rejects the events still queued (KafkaEventQueue): not applied.
                raise _Refused(f"{ApiKey(context.api_key).name} dropped: the broker is stopping")
            slow = self.faults.slow_policy
            if slow is not None:
                context.create_policy = functools.partial(self._slow_policy, *slow)
        handling_started = time.perf_counter()
        handled = spec.handler(request, context)
        handler_ms = (time.perf_counter() - handling_started) * 1000
        throttle_ms = handled.throttle_time_ms
        mute_ms = throttle_ms if handled.mutes else 0
        quotas, principal, client_id = self.context.quotas, context.principal, context.client_id
        if charged:
            # ClientRequestQuotaManager: the handler (I/O thread) time is recorded with a quota check; in the
            # deterministic mode every request costs the same fixed time instead.
            cost_ms = handler_ms if self.request_time_cost_ms is None else self.request_time_cost_ms
            request_throttle_ms = quotas.record_request_time(principal, client_id, cost_ms, node_id=context.node_id)
            # KIP-124: the response carries max(mutation throttle, request throttle), and the connection is
            # muted for it (RequestHandlerHelper.sendResponseMaybeThrottleWithControllerQuota).
            throttle_ms = max(throttle_ms, request_throttle_ms)
            mute_ms = max(mute_ms, request_throttle_ms)
        if hasattr(handled.response, "throttle_time_ms"):
            handled.response.throttle_time_ms = throttle_ms
        # Faults on the answer only: the request was handled (and charged) as usual. Taken here, on the
        # controller thread for mutations, so they are consumed in the order requests are handled.
        garbled = self.faults.take_garble(context.api_key) if context.api_key in CONTROLLER_APIS else None
        if garbled is not None:
            _garble(handled.response, context.api_key, garbled)
        delay_s = self.faults.take_delay(context.api_key)
        encode_started = time.perf_counter()
        encoded = self._encode(handled.response, correlation_id)
        if charged and self.request_time_cost_ms is None:
            # Network-thread time (here: decoding and encoding) is recorded without a check, as Kafka's
            # recordNoThrottle: it counts against the entity's next request.
            network_ms = (decode_s + time.perf_counter() - encode_started) * 1000
            quotas.record_request_time(principal, client_id, network_ms, node_id=context.node_id, check_quota=False)
        return _Answer(handled, encoded, throttle_ms, garbled, delay_s, mute_ms, timeout_ms, validate_only)

    def _slow_policy(self, prefix: str, seconds: float, name: str) -> None:
        """A CreateTopicPolicy that takes ``seconds`` for each name starting with ``prefix`` (cut short when the
        broker stops: the create then goes ahead, as the policy returned)."""
        if name.startswith(prefix):
            self._stopping.wait(seconds)

    @staticmethod
    def _encode(response: Any, correlation_id: int) -> bytes:
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))

    @staticmethod
    def _apply_session(conn: _Connection, handled: Handled) -> None:
        if handled.handshake_mechanism is not None:
            conn.sasl_mechanism = handled.handshake_mechanism
            conn.sasl_exchange = None
        if handled.sasl_exchange is not None:
            conn.sasl_exchange = handled.sasl_exchange
        if handled.authenticated_as is not None:
            conn.principal = handled.authenticated_as
            conn.authenticated = True
            conn.sasl_authenticated = True
            conn.sasl_exchange = None
