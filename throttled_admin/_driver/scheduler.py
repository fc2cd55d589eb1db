"""The thread driver around the mutation engine: one per client, the only sender of CreateTopics, DeleteTopics
and CreatePartitions, served by the process's one driver thread (``driver_loop``).

Calls validate their input, hand their topics to the driver and return futures at once; no call holds a thread.
Every decision is the engine's (``_engine``: a deterministic state machine); this module only does what the
engine cannot: threads, the clock (one, injected: ``clock``) and I/O.

Everything the engine decides happens in a turn (``_driver/turns.py``: one at a time, each whole, a turn cut short
finished by the next): take the results librdkafka has completed (one batch per response: librdkafka is given one
future per request), serve librdkafka's callbacks (``poll``: a response's throttle event, queued before its result,
reaches the engine first), step the engine (``_step``, the driver's one call of ``Engine.step``), and do what the
step says outside the lock: the next request or the sentinel, metric events (before any settlement: a caller that
waits for its results and then reads the metrics finds its call), the metric exports (waited for within a bound when
futures are settled next: an OpenTelemetry reader that looks right after ``result()`` finds the call's points), the
settlements (overlapping with the broker's work on the next request), then a metadata read or the contact probe.

The scheduler's thread (the process's loop thread, which serves every client's scheduler: ``_serve``) takes a turn
whenever something arrives or the engine's wake time comes. It also serves librdkafka's callbacks (every 50 ms while
a request is in flight or calls wait for first contact, 1 s while work waits for the wake time, 200 ms when idle; a
send from a caller's thread does not shorten a wait already begun: ``_wake_for``); such a serve steps the engine only
if a callback told it something. Callers' threads take turns
too (the fast path, ``caller_turns``): a call made while no request is in flight sends from its own thread, and a
caller waiting in ``result()`` or ``exception()`` takes the turn its answer needs (``assist``): the answer goes
librdkafka -> the waiting caller, as with bare confluent-kafka; an answer that comes before a caller's turn ends
is taken by that caller in one more turn. A reader's thread (below) takes the turn its read's result asks for in the
same way (``_after_read``): a wait_for_metadata create goes once its ids are read, not after the loop's queue. Their
turns hand the metric exports over only when they settle futures, and leave the rest to the scheduler's thread.

``close()`` works from any frame: where it may not wait (a signal handler that interrupted a turn, a handler running
inside one) it settles every future from its own thread and leaves the rest to another (``close`` returns False).

Nothing here blocks where deadlines are kept: the reads the engine asks for run on a reader thread for each kind
(``reader``; the engine alone records which are out), futures' done-callbacks
and the application's code run elsewhere (``_driver.user_code``), and librdkafka's calls that send return at once.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import logging
import math
import operator
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaError

from throttled_admin._driver import collector
from throttled_admin._driver.controller_refresh import ControllerRefresh
from throttled_admin._driver.driver_loop import Served, driver_loop
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.handshake_drops import HandshakeDrops
from throttled_admin._driver.interrupts import run_held
from throttled_admin._driver.open_calls import OpenCall, OpenCalls, carry_out
from throttled_admin._driver.quorum_watch import READ_TIMEOUT_S, QuorumWatch, asks_for_a_check
from throttled_admin._driver.quorum_wire import QuorumAnswer
from throttled_admin._driver.reader import Reader
from throttled_admin._driver.throttle_notice import FirstThrottleNotice
from throttled_admin._driver.turns import Sending, Turns
from throttled_admin._driver.user_code import CallbackRunner
from throttled_admin._engine import (
    CONTACT_PROBE_TIMEOUT_S,
    DRAIN_NAME,
    FIRST,
    SECOND,
    BrokerViews,
    CallSpec,
    ContactFailure,
    Drain,
    Drained,
    Engine,
    MetricEvent,
    MetricsSink,
    Outbox,
    Outcome,
    Pacer,
    RetryBackoff,
    Send,
    Settle,
    TopicRef,
    TopicSpecs,
    classify,
    is_broker_answer,
)
from throttled_admin._engine.metric_events import ResponseThrottle
from throttled_admin._engine.throttle import failed_node
from throttled_admin._errors import CLOSED_MESSAGE, closed_error

__all__ = ["USER_CODE_WAIT_S", "Answer", "ClientGone", "ExportPending", "Scheduler", "SendOrder", "Transport"]

log = logging.getLogger("throttled_admin")

# How often librdkafka's callbacks are served: every 50 ms while what they tell decides pending work at once (a
# request in flight: an authentication failure settles it; calls waiting for first contact: how far connections get,
# told in log lines and error_cb, fails them), 200 ms while idle (the throttle, error, stats and log callbacks of other
# AdminClient methods), and every second while work waits for the engine's own wake time (the pacer, a throttle, a
# back-off: an authentication failure fails it within the second, which is when it would have gone anyway, about).
_BUSY_POLL_S = 0.05
_IDLE_POLL_S = 0.2
_WAITING_POLL_S = 1.0
_METADATA_TIMEOUT_S = 5.0
# A turn held by a caller's thread (a send, an answer taken: well under a millisecond): served again this much later.
_TURN_BUSY_S = 0.002
# A reader's thread waits this long at most for another thread's turn to end before taking its own (``_after_read``):
# a turn that ended just after the read's result came would not have stepped the engine with it. Longer (a bulk call's
# submit, a close), the scheduler's thread takes it.
_READ_TURN_WAIT_S = 0.05
# A turn stopped for a pending metric export (``ExportPending``): served again this much later.
_EXPORT_LOOK_S = 0.005
# close() waits this long in all for user code still running (done-callbacks, conf callbacks, exports).
USER_CODE_WAIT_S = 2.0
_NO_TOPICS = TopicSpecs((), (), (), ())  # the rest of a call whose caller gave up on it (``_abandon``)


# A request's answer from librdkafka: each topic's result, or one exception for the whole request.
Answer = dict[str, BaseException | None] | BaseException


@dataclass(frozen=True)
class SendOrder:
    """What to hand to librdkafka: confluent-kafka's method, the items, and the request's settings (the transport
    turns them into confluent-kafka's keywords)."""

    method: str
    items: list[Any]
    request_timeout_s: float
    operation_timeout_s: float
    validate_only: bool | None = None  # None: the method takes no validate_only (DeleteTopics)
    lane: int = 0  # the connection (``_engine/lanes``): the client's own handle's, or the second handle's (1)
    direct: bool = False  # the client may write and read it itself (``_driver/direct_creates``)

    @classmethod
    def of(cls, send: Send) -> SendOrder:
        kind = send.kind
        validate_only = kind.validate_only if kind.operation.validate_only else None
        timeouts = send.request_timeout_s, send.operation_timeout_s
        return cls(kind.operation.method, list(send.items), *timeouts, validate_only, send.lane, send.direct)


class MetricsExport(MetricsSink, Protocol):
    """The engine's metric events, a flush of what they recorded to the exporter (waited for, within a bound, before
    a turn's settlements), and the cluster's id once the contact probe has read it (before the first mutation)."""

    def flush(self, wait: bool = False) -> None: ...

    def flush_pending(self) -> bool:
        """``flush(wait=True)`` that never blocks: True while the export is still to be waited for."""

    def identify(self, cluster_id: str | None) -> None: ...


class ExportPending(Exception):
    """A turn on the driver's thread stops before its settlements while their metric export is pending (``flush``);
    what it had not done is the next turn's (``Turns.leftover``)."""


class ClientGone(Exception):
    """The client behind the transport was garbage-collected or closed."""


class Transport(Protocol):
    """What the scheduler needs from the librdkafka handle; the facade provides it without a strong reference."""

    def send(self, order: SendOrder, on_answer: Callable[[Answer], None], sending: Sending) -> bool:
        """Hand a request (``order``: confluent-kafka's method, the items, its settings) to librdkafka; ``on_answer`` is
        called with its results (from any thread), at most once per batch of results librdkafka completes.
        ``sending.begin()`` just before confluent-kafka's call (False: closed, not sent, return False); cut
        short, ``sending.began`` says whether the call may have run."""

    def poll(self) -> None: ...

    def partition_counts(self, timeout_s: float) -> dict[str, int]: ...

    def default_partitions(self, timeout_s: float) -> int | None: ...

    def probe(self, timeout_s: float, lane: int = FIRST) -> Future[Any]: ...

    def broker_views(self, names: list[str], timeout_s: float) -> BrokerViews: ...

    def close_reads(self) -> None:
        """End the reads under way on the client's own broker connections (``broker_views``, ``quorum``) at once."""

    def quorum(self, timeout_s: float) -> QuorumAnswer | None:
        """Who leads the controller quorum, and in which epoch (``_driver/quorum_watch``); None: unknown."""

    def controller(self, timeout_s: float) -> tuple[int, int]:
        """Read Metadata (librdkafka's controller is the node the response names): (that node, the one that
        answered)."""


class Scheduler:
    def __init__(
        self,
        transport: Transport,
        metrics: MetricsExport,
        *,
        pacer: Pacer | None,
        backoff: RetryBackoff,
        security_protocol: str = "plaintext",
        report: Callable[[KafkaError], None] | None = None,
        callbacks: CallbackRunner | None = None,
        clock: Callable[[], float] = time.monotonic,
        socket_timeout_s: float = 60.0,
    ) -> None:
        """``report``: where an error the client finds itself goes (the application's error_cb); ``callbacks``:
        where the done-callbacks of the client's futures run (closed with the scheduler); ``clock``: the one clock
        of the driver (monotonic seconds)."""
        self._transport = transport
        self._report = report
        self._handshake_drops = HandshakeDrops(security_protocol, self._on_listener_found, clock=clock)
        self._reported: str | None = None  # the last finding about a listener reported to ``report``
        self._metrics = metrics
        # Every other metric event (``turns.Actions.metric``): ``event.report(metrics)``, called in C (a method around
        # it was a call more each, two a 1-topic call's answer: issue 39)
        self.metric: Callable[[MetricEvent], None] = operator.methodcaller("report", metrics)
        self._first_throttle = FirstThrottleNotice(paced=pacer is not None)
        self._clock = clock
        # The driver's clock, which a call's start and deadline are read from: the clock itself (a method around it
        # was a call more every call, issue 39). ThrottledAdminClient gives every scheduler time.monotonic and reads
        # it itself as a call begins, before the call's checks (``_call``).
        self.now: Callable[[], float] = clock
        self._engine = Engine(pacer=pacer, backoff=backoff, socket_timeout_s=socket_timeout_s)
        self._callbacks = callbacks if callbacks is not None else CallbackRunner()
        # the engine's lock, taken as itself on the per-call path (a Condition's __enter__ and __exit__ are Python
        # functions around the lock's own: two calls more each time)
        self._lock = lock = threading.RLock()
        self._cv = threading.Condition(lock)  # wait_final waits on it; every wake notifies it
        self._assisted = threading.Condition(lock)  # callers' threads waiting for their futures (assist) sleep here
        self._assisting = 0
        self._asleep_assisting = 0  # of them, those asleep on ``_assisted`` (not in a turn of their own)
        self._in_caller_turn = False  # a caller's thread holds the turn (``_caller_turn``)
        self._turns = Turns()  # the one way to step the engine and send
        self.caller_turns = True  # calls and waiting callers take turns on their own threads (the fast path)
        self._arrived: list[tuple[Send, Answer]] = []  # librdkafka's completed results
        self._dirty = False
        self._wake_at = -math.inf  # when the engine's last step asked to be stepped again if nothing happens first
        self._asleep_until: float | None = None  # while the thread waits: when it wakes by itself
        self._open = OpenCalls()  # the calls' futures, while any may be pending, and what waits for them to be made
        self._call_ids = itertools.count(1)  # the engine's ids of the calls submitted
        self._closed = False
        self._closed_now: Callable[[], bool] = functools.partial(getattr, self, "_closed")  # whether closed, now
        # the reads the engine asks for (the engine records them), a thread for each kind: a views read that waits for
        # a silent broker never holds back the metadata read a paced delete's cost needs, nor the reverse
        self._metadata_reader = Reader("throttled-admin-metadata")
        self._views_reader = Reader("throttled-admin-views")
        # the controller quorum's leader epoch, read on the views reader's thread: a controller that changed while an
        # "already done" answer's request was in flight (``quorum_watch``); the requests the engine is told of
        self._quorum = QuorumWatch(clock)
        self._held: list[tuple[Send, int | None, Answer]] = []  # answers waiting for a read (``_check_held``)
        self._moved: set[int] = set()
        self._first_probe: Future[Any] | None = None  # the first contact probe's answer (``first_probe``)
        self._probed = threading.Event()  # set once it is sent, or cannot be (closed first)
        # after a node went away, Metadata reads until one names another controller (``controller_refresh``)
        self._controller_refresh = ControllerRefresh(transport.controller, ClientGone, clock)
        # served by the process's one driver thread (``driver_loop``; ``_served.finished``: its last turn is done)
        self._pid = os.getpid()
        self._loop = driver_loop()
        self._served = Served(self._loop, self._serve)
        self._started = False  # (``start``: the first turn asked for)

    def start(self, *, read_quorum: bool = True) -> None:
        """The first turn, once librdkafka's callbacks reach this scheduler: a turn polls the handle, and an event
        polled before they do reaches only the application (an OIDC token refused as the handle is made: the first
        call waited for an answer until its deadline). And the controller quorum's baseline, read as the client is
        made (``quorum_watch``), off the way of its calls: read as the first call came, its DescribeQuorum went
        beside that call's first request, and a Kafka broker forwards its requests to the controller one at a time
        (issue 40). Not ``read_quorum``: a client made to read or validate (``ReadingClient``): none is read until a
        change comes, so a principal without DESCRIBE on the cluster draws no authorizer denial."""
        served = self._served
        try:
            self._loop.add(served)
            served.wake()  # the first turn
        except BaseException:  # cut short (Ctrl-C), or no thread can start: the client is not made, nor counted
            self._loop.abandon(served)
            raise
        self._started = True
        if not read_quorum:
            return
        try:
            self._read_quorum_if_due(making=True)
        except BaseException:  # cut short as the read is handed over: not made, so closed here (review 137)
            self.close(0.0)
            raise

    # -- called by the facade and by librdkafka's callbacks (any thread) --------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def wait_final(self, timeout_s: float) -> bool:
        """Wait until no request handed over can still be applied (``Engine.final_at``); False if ``timeout_s``
        passed first (in real time: the caller's wait) or the client closed before."""
        end = time.monotonic() + timeout_s
        with self._cv:
            while True:
                now = self._clock()
                final_at = self._engine.status.final_at
                if final_at <= now:
                    return True
                left_s = end - time.monotonic()
                if self._closed or left_s <= 0:
                    return False
                self._cv.wait(min(left_s, final_at - now))

    @property
    def learned_rate(self) -> float | None:
        with self._cv:
            return self._engine.status.rate

    def submit(
        self,
        spec: CallSpec,
        items: TopicSpecs,
        rest: Callable[[], TopicSpecs] | None = None,
        ended: Callable[[], None] | None = None,
    ) -> dict[str, Future[None]]:
        """Queue a validated call's topics: (name, snapshot, cost or None, metadata records), distinct names.
        Returns one future per topic.

        When this thread takes the turn, the futures are made after the call's first request is written (issue 40:
        50,000 of them took a fifth of a bulk call's time to its first write). Until they are, the call's
        settlements wait for them (``OpenCalls``: a broker that answers at once, a deadline already passed, a close).
        ``rest``: the call's other topics, made ready by ``rest()`` once the turn for ``items`` has been taken, and
        queued behind them (``Engine.extend``): a bulk call's first request goes before the rest of it is ready. A
        call from another thread in between that names one of them goes first (the two calls overlap); a client
        closed in between tells the rest "not sent". The controller quorum is read again as a change comes when its
        read is old (``quorum_watch``; a validate-only call is never "already done": none). ``ended``: called once
        none of the call's futures is pending here any more (``OpenCall``: also when this raises after registering
        the call, which it then abandons)."""
        self._loop.ensure_thread()  # (RuntimeError when none can start: the call is refused, nothing queued)
        if not spec.kind.validate_only:
            self._read_quorum_if_due()
        call_id = next(self._call_ids)
        names: Sequence[str] = items.names
        try:
            with self._lock:
                if self._closed:
                    raise RuntimeError(CLOSED_MESSAGE)
                # (cut short inside, it keeps none of the call)
                idle = self._engine.submit(call_id, spec, items, more=rest is not None)
                self._open.expect(call_id)
                # Nothing in flight: this thread takes the turn and sends, saving a wake of the scheduler's thread on
                # the way out (that thread is woken only if it sleeps past what the step wants done next).
                # (not while a turn of the driver's thread is stopped at its export: the caller would wait for it)
                here = self.caller_turns and idle and not self._turns.leftover
                if not here:
                    self._wake()
            if here and not self._turn_here((call_id, names)):
                # Another thread holds the turn and may have stepped before this call was queued: the scheduler's
                # thread steps for it (a wake-up with nothing new does not step the engine).
                with self._lock:
                    self._wake()
            unsent: Sequence[str] = ()
            if rest is not None:
                more = rest()
                names = [*names, *more.names]
                unsent = self._extend(call_id, more)
            futures = self._futures(call_id, names)
            pending = futures
            if unsent:  # (the client closed before the rest was queued)
                pending = self._not_sent(spec, futures, unsent)
            # One step (``OpenCalls.register``): a close() from a frame that cannot wait (``_close_here``) finds only
            # what is still pending (once, between registering the futures and carrying out what came before, it
            # told a topic the broker had created as outcome unknown)
            with self._lock:
                self._open.register(call_id, OpenCall(spec.kind.operation.name, pending, ended))
        except BaseException:  # cut short (Ctrl-C) before its caller has the futures: what is not sent, never is
            run_held(self._abandon, call_id, names, whole=rest is None)  # (a second Ctrl-C waits: ``interrupts``)
            raise
        return futures  # type: ignore[return-value]  # (TopicFutures)

    def _extend(self, call_id: int, more: TopicSpecs) -> Sequence[str]:
        """``submit``'s rest queued behind its first part; the names not queued (the client closed first)."""
        with self._lock:
            try:
                self._engine.extend(call_id, more, self._clock())
            except RuntimeError:  # closed
                return more.names
            self._wake()  # (the scheduler's thread plans the next requests: the second lane's, if it may go)
        return ()

    def _not_sent(
        self, spec: CallSpec, futures: dict[str, TopicFuture], unsent: Sequence[str]
    ) -> dict[str, TopicFuture]:
        """The futures of ``unsent`` told "not sent: the client was closed"; the others, still pending."""
        operation = spec.kind.operation.name
        for name in unsent:
            futures[name].set_exception(closed_error(operation, sent=False))
        left = set(unsent)
        return {name: future for name, future in futures.items() if name not in left}

    def _futures(self, call_id: int, names: Sequence[str]) -> dict[str, TopicFuture]:
        futures: dict[str, TopicFuture] = {}
        runner, assist, wake = self._callbacks, self.assist, self._wake_assisting
        withdraw = functools.partial(self._withdraw, call_id)
        for name in names:
            futures[name] = TopicFuture(runner, assist, wake, withdraw, name)
        return futures

    def _abandon(self, call_id: int, names: Sequence[str], *, whole: bool = True) -> None:
        """``submit`` was cut short before its caller had the futures: the call is no longer pending here, and what
        of it is not sent yet is taken back (``_take_back``; in the call's own turn, before that turn was let go:
        ``_caller_turn``). A request already written ends unseen, as a call whose futures were dropped. Not
        ``whole``: the call had a rest to come, and the engine is told none comes (``Engine.extend``). ``submit``
        holds a second Ctrl-C back until this returns (``interrupts``: on the main thread)."""
        with self._cv:
            if not whole:
                try:  # noqa: SIM105 (no import for one use)
                    self._engine.extend(call_id, _NO_TOPICS, self._clock())
                except RuntimeError:  # closed: nothing waits for it
                    pass
            self._open.abandon(call_id)
        held = self._turns.held_here()
        try:
            self._turns.take(0)  # (not waited for: the call's own turn took back what it decided, ``_caller_turn``)
            self._take_back(call_id, names)
        finally:
            if not held and self._turns.held_here():  # taken here
                self._turns.release()

    def _take_back(self, call_id: int, names: Sequence[str]) -> None:
        """The call's topics not sent yet are withdrawn (``Engine.withdraw``); holding the turn, so are those of the
        requests kept and not begun (``Turns.drop_unsent``: never sent, the engine told they were not handed over;
        their topics of other calls go in another request)."""
        with self._cv:
            now = self._clock()
            if self._turns.held_here():
                for send in self._turns.drop_unsent(call_id):
                    self._engine.on_send_cut_short(send.request_id, handed=False, now=now, retire=False)
            for name in names:
                self._engine.withdraw(call_id, name, now)
            self._wake()

    def _withdraw(self, call_id: int, name: str) -> bool:
        """A future's cancel(): True if the engine took the topic back, or if it is no longer pending here while
        the client is open (another thread's cancel() withdrew it, and its future is cancelled by that cancel() or
        this one; a settled future is resolved before it is forgotten, and its cancel() then says False)."""
        with self._cv:
            if self._open.pending(TopicRef(call_id, name)) is None:
                return not self._closed
            withdrawn = self._engine.withdraw(call_id, name, self._clock())
            if withdrawn:
                self._open.forget(TopicRef(call_id, name))
            self._wake()
            return withdrawn

    def on_throttle(self, node_id: int, throttle_s: float, lane: int = FIRST) -> None:
        """librdkafka's throttle event: one response's throttle_time_ms (sent when it changes), on the ``lane``'s
        handle (``_engine/lanes``)."""
        with self._cv:
            self._engine.on_throttle(node_id, throttle_s, self._clock(), lane)
            self._wake()

    def read_ahead(self, names: list[str]) -> None:
        """``Engine.read_ahead``: these names' ids read with the next views read, for creates of them to come."""
        with self._cv:
            if self._closed:
                return
            self._engine.read_ahead(names, self._clock())
            self._wake()

    def credentials_changed(self) -> None:
        """New SASL credentials: the engine forgets the old ones' authentication failure (``Engine``)."""
        with self._cv:
            self._engine.credentials_changed(self._clock())
            self._wake()

    def on_error(self, error: KafkaError, lane: int = FIRST) -> None:
        """librdkafka's error_cb: an authentication failure fails the work at once instead of at its deadline."""
        with self._cv:
            self._engine.on_error(error, self._clock(), lane)
            self._wake()
        if lane == FIRST and error.code() != KafkaError._TIMED_OUT:  # librdkafka's own timeout: no node went away
            self._node_lost(error.str())

    @property
    def second_lane(self) -> SecondLaneEvents:
        """Where the second handle's callbacks deliver (``_engine/lanes``): its connection failures retire the second
        lane; they say nothing of first contact or of the first handle's controller."""
        return SecondLaneEvents(self)

    def on_log(self, message: str, lane: int = FIRST) -> None:
        """A librdkafka ``FAIL`` log line: how far a connection got before it failed (the engine's first-contact
        rule; some failures are told only here), which node's connection failed (the engine's gate: a throttle ends
        with its connection), and whether its listener may speak another protocol than the client
        (``_driver.handshake_drops`` asks it). The second handle's (``lane``) only retire the second lane."""
        if lane != FIRST:
            with self._cv:
                self._engine.on_log(message, self._clock(), lane=lane)
                self._wake()
            return
        with self._cv:
            self._engine.on_log(message, self._clock())
            error = self._handshake_drops.observe(message, self._clock())
            self._wake()
        self._node_lost(message)
        if error is not None:
            self._on_listener_found(error)

    def _node_lost(self, line: str) -> None:
        """A node's connection lost: librdkafka may still take it for the controller (``controller_refresh``)."""
        node = failed_node(line)
        if node is not None and not self._closed:
            self._controller_refresh.lost(node)

    def _on_listener_found(self, error: KafkaError) -> None:
        """The listener speaks another protocol than this client (SASL, TLS): an authentication failure or a
        connection failure no retry gets past, reported once to the application (``report``)."""
        with self._cv:
            if error.code() == KafkaError._AUTHENTICATION:
                first = not self._engine.status.auth_failing  # reported again once the failure has lapsed
            else:
                first, self._reported = error.str() != self._reported, error.str()
            self._engine.on_error(error, self._clock())
            self._wake()
        if first and self._report is not None:
            self._report(error)

    # -- close ------------------------------------------------------------------------------------

    def close(self, budget_s: float = USER_CODE_WAIT_S, last_turn_s: float | None = USER_CODE_WAIT_S) -> bool:
        """Fail everything pending with _DESTROY and stop the threads. Waits for the scheduler's last turn,
        ``last_turn_s`` at the most (None: as long as it takes), and for the loop's thread to end, if this was the
        process's last client; then for a metadata read in progress (librdkafka's handle must outlive it) and
        done-callbacks still running, these last two ``budget_s`` at the most, and returns True.

        Called on a thread that holds what the scheduler's thread needs to finish (the turn, the engine's lock, a
        future's lock: a signal handler that interrupted this thread, a logging handler in a turn, the loop's own
        thread, whichever client it is serving), it waits for nothing: every future is settled from this thread
        (rule h, from what can be known here: a topic whose send may have begun is outcome unknown), and it returns
        False; the caller then closes again from another thread (``ThrottledAdminClient.close``). So it does when
        the last turn has not come within ``last_turn_s``: the process's one driver thread is held elsewhere (the
        application's code in another client's turn, or in this one's, review 138)."""
        if os.getpid() != self._pid or not self._started:  # a forked child: no thread of the parent's runs here, and
            self._closed = True  # its locks may be held; or no turn ever came (``start`` never called, or raised)
            return True
        if self._holds_what_the_thread_needs():
            self._close_here()
            return False
        try:
            self._loop.ensure_thread()  # (one whose start failed beside this client's: ``DriverLoop.ensure_thread``)
        except Exception:  # no thread can start: every future is settled from here, and nothing is waited for
            self._close_here()
            return True
        end = self._clock() + budget_s
        with self._cv:
            self._closed = True
            self._wake()
            self._assisted.notify_all()
        if not self._served.finished.wait(last_turn_s):
            self._close_here()
            return False
        if self._served.ended is not None:  # the loop's thread ended with this client, the last: gone when we return
            self._served.ended.join()
        # The engine is closed: a read under way on the client's own connections (the quorum's, wait_for_metadata's)
        # is no one's now; cut short (its connections shut), it ends at once instead of at its timeout (4-5 s against
        # a broker that never answers), and what it tells is not taken. Not before the last turn: a read cut short
        # sooner told the engine a broker had no view, and a create waiting for its ids was sent as it closed.
        self._transport.close_reads()
        self._controller_refresh.close(_METADATA_TIMEOUT_S)
        for reader in (self._metadata_reader, self._views_reader):
            reader.close(_METADATA_TIMEOUT_S + max(0.0, end - self._clock()))
        self._callbacks.close(time.monotonic() + max(0.0, end - self._clock()))
        return True

    def _holds_what_the_thread_needs(self) -> bool:
        loop = self._loop
        if loop.on_its_thread() or loop.held_here() or self._turns.held_here() or self._cv._is_owned():  # type: ignore[attr-defined]
            return True
        with self._cv:
            return any(future.held_here() for future in self._open.futures())

    def _close_here(self) -> None:
        """Closed from a frame that cannot wait: settle every future now, from what can be known without the
        engine (which this thread may have been interrupted in): what a turn has decided and not carried out yet as
        decided, else a topic whose request may have been handed over as outcome unknown; the scheduler's thread
        settles again what this missed (a future is settled once)."""
        with self._cv:
            self._closed = True
            self._wake()
            self._assisted.notify_all()
            unsent_refs = {ref for send in self._turns.unsent() for ref in send.topics}
            # outcomes the engine decided that a turn has yet to carry out (on another thread, or this one's cut
            # short): told as decided (once hedged: a topic the broker had created was told outcome unknown)
            known = {settle.ref: settle.outcome for settle in self._turns.unsettled()}
            open_calls = self._open.take_all()
            closing: list[Settle] = []
            futures: list[TopicFuture | None] = []
            for call_id, pending in open_calls.items():
                for name, future in pending.items():
                    if not future.done():
                        ref = TopicRef(call_id, name)
                        # else what the engine's records say, read under its lock (read only: it may be mid-step)
                        outcome = (
                            known[ref]
                            if ref in known
                            else self._engine.closed_here(ref, pending.operation, unsent=ref in unsent_refs)
                        )
                        closing.append(Settle(call_id, name, outcome))
                        futures.append(future)
        carry_out(closing, futures)  # (one settled meanwhile, by another thread, keeps what it was told)
        self._wake_assisting()

    def _wake(self) -> None:
        self._dirty = True
        self._cv.notify_all()  # (``wait_final``)
        self._served.wake()

    def _wake_assisting(self) -> None:
        """Futures were settled (by a turn, or cancelled): callers waiting for theirs in assist() look again."""
        with self._lock:
            if self._asleep_assisting:  # (the waiting caller that settled them in its own turn is awake: issue 39)
                self._assisted.notify_all()

    # -- a caller's thread waiting for a future takes the turn itself -------------------------------

    def assist(self, future: TopicFuture, timeout: float | None) -> float | None:
        """``future.result()``/``exception()`` while it is pending: until it is settled or ``timeout`` passes, take
        the turns that answers arriving meanwhile need on this thread (taking the answer, the next send, settling)
        instead of handing them to the scheduler's thread and waiting to be woken by it. Returns the time left.

        Only a turn that nobody else is taking (``Turns``: one at a time, each whole)."""
        if not self.caller_turns or self._loop.on_its_thread():
            return timeout
        end = None if timeout is None else time.monotonic() + timeout  # the caller's wait: real time, not the clock
        with self._lock:
            self._assisting += 1
        try:
            while self._await_answer(future, end):
                left = None if end is None else end - time.monotonic()  # ``_left``, read in place: every answer
                if left is not None and left <= 0:
                    break
                if not self._turn_here():  # another thread is taking this turn: wait for it (within our time)
                    self._turns.wait_free(left)
                elif future.done():  # settled by this thread's turn (most calls): nothing more to wait for
                    break
        finally:
            self._stop_assisting()
        return None if end is None else max(0.0, end - time.monotonic())

    def _await_answer(self, future: TopicFuture, end: float | None) -> bool:
        """Sleep until an answer arrives for this thread to take (True), or until the future is settled, the client
        closes (the scheduler's thread then settles everything) or ``end`` passes (False)."""
        with self._lock:
            while not (self._arrived or future.done() or self._closed):
                left = self._left(end)
                if left is not None and left <= 0:
                    return False
                self._asleep_assisting += 1
                try:
                    self._assisted.wait(left)
                finally:
                    self._asleep_assisting -= 1
            return not (future.done() or self._closed)

    def _left(self, end: float | None) -> float | None:
        """The time left of a caller's wait until ``end`` (None: no end), in real time as ``Condition.wait`` and
        concurrent.futures time it: the driver's clock (``clock``, a test's) times only the engine's deadlines."""
        return None if end is None else end - time.monotonic()

    def _stop_assisting(self) -> None:
        """This thread no longer waits in assist(); an answer it was woken for and left goes to the scheduler's
        thread."""
        with self._lock:
            self._assisting -= 1
            if self._arrived and not self._closed:
                self._wake()

    def _turn_here(self, submitting: tuple[int, Sequence[str]] | None = None, wait_s: float = 0.0) -> bool:
        """One turn on a caller's thread, if the turn is free or freed within ``wait_s`` (False if not). Its metric
        exports are handed over only before settlements (a wake of the exporter's thread per call made the caller's next
        call wait for the GIL, about 0.25 ms), else left to the scheduler's thread, which is woken if the engine wants
        something done before it would wake. An answer that arrived during the turn (librdkafka's, while the caller's
        thread was inside the send) is taken in one more turn here, instead of waking the scheduler's thread for it.
        ``submitting``: the call (its id and names) whose ``submit`` takes it (``_caller_turn``). Cut short (Ctrl-C)
        between taking the turn and the turn's own guard, it does what that guard does: the call is taken back, then the
        turn is let go (it was held for good, and every call with it)."""
        if self._turns.held_here():  # (a turn is whole: never taken inside another)
            return False
        try:
            if not self._turns.take(wait_s):
                return False
            out = self._caller_turn(submitting)
            with self._lock:
                again = bool(self._arrived) and not self._closed
                if not again:
                    self._wake_for(out)
            if again:
                out = self._caller_turn(submitting) if self._turns.take(0) else None
                with self._lock:
                    self._wake_for(out)
                    if self._arrived:  # arrived during that one too: the scheduler's thread takes it
                        self._wake()
        except BaseException:
            if self._turns.held_here():  # taken here, and the turn's guard not reached: as that guard would
                self._in_caller_turn = False
                try:
                    if submitting is not None:  # before the turn is let go (``_caller_turn``)
                        self._take_back(*submitting)
                finally:
                    self._turns.release()
                    with self._lock:
                        self._wake()
            raise
        return True

    def _caller_turn(self, submitting: tuple[int, Sequence[str]] | None = None) -> Outbox | None:
        """A turn on a caller's thread that holds it; None if it failed. While it lasts, an answer that arrives
        leaves the scheduler's thread asleep (``_on_answer``): this thread looks for it when the turn ends. Cut
        short (Ctrl-C) in the turn of the ``submit`` of call ``submitting`` (id, names), that call is abandoned
        (``_abandon``): what of it is not sent, its step's request that did not begin included, is taken back before
        the turn is let go, so that no other thread's turn sends it."""
        self._in_caller_turn = True
        try:
            return self._turn(flush=False)
        except Exception:  # ClientGone or a bug: the scheduler's thread takes over (and closes)
            log.debug("a turn on a caller's thread failed; the scheduler's thread goes on", exc_info=True)
            return None
        except BaseException:
            if submitting is not None:
                self._take_back(*submitting)
            raise
        finally:
            self._in_caller_turn = False
            self._turns.release()

    def _wake_for(self, out: Outbox | None) -> None:
        """Under the lock, after a caller's turn. Serving this client, the scheduler's thread reads the step's wake
        time before it says when to serve it next (``_next_due``): woken only if that is past it. (Woken when awake
        too, it took a turn for nothing, and woken again by the next call's turn while in that one: a turn beside
        28-36 % of 1-topic calls on Tansu.) Not woken for a request the turn sent: the thread may serve librdkafka's
        callbacks up to 200 ms after it (its wait when idle; 1 s when other work waited for the engine's wake time),
        not 50 ms (``_poll_interval``), so what they tell a request in flight (an authentication failure) comes that
        much later, and a call saves a wake-up of the loop's thread (``_after_read`` wakes it: a read's turn is
        rare)."""
        if out is None or (self._asleep_until is not None and out.wake_at < self._asleep_until):
            self._wake()

    # -- the loop --------------------------------------------------------------------------------

    def _serve(self) -> float | None:
        """The loop's one go for this client (``driver_loop``: one thread serves every client of the process): a
        full turn when there is something new to step the engine for, else only librdkafka's callbacks served
        (``_poll_only``); then when to be served next, in real time (None: closed and done). A turn held by a caller's
        thread is tried again shortly; the loop's thread never waits for it."""
        try:
            if not self._closed:
                with self._lock:
                    self._asleep_until = None
                    full = self._news() or bool(self._turns.leftover)
                if not full:
                    full = not self._poll_only()
                if full:
                    if not self._turns.take(0):
                        return time.monotonic() + _TURN_BUSY_S
                    try:
                        out = self._turn(flush=True)
                    except ExportPending:
                        return time.monotonic() + _EXPORT_LOOK_S
                    finally:
                        self._turns.release()
                    if out is None:
                        return self._finish()
                if not self._closed:
                    return self._next_due()
        except ClientGone:
            with self._cv:
                self._closed = True
        except BaseException:  # a bug here must not leave calls hanging: everything pending fails, new calls refused
            log.exception("the mutation scheduler failed; the client refuses further mutations")
            with self._cv:
                self._closed = True
        return self._finish()

    def _next_due(self) -> float:
        """When to be served next: at once if something is new, else when the engine's wake time comes or it is time
        to serve librdkafka's callbacks (``_poll_interval``), whichever is first (in real time; ``_asleep_until`` in
        the driver's clock, which a caller's turn reads: ``_wake_for``)."""
        now = time.monotonic()
        with self._cv:
            if self._news():
                return now
            # How often to serve librdkafka's callbacks, read here (not after every step: two engine snapshots a call
            # less on the callers' turns, which only the loop's waits need)
            clock = self._clock()
            timeout_s = max(0.0, min(self._wake_at - clock, _poll_interval(self._engine)))
            self._asleep_until = clock + timeout_s
            return now + timeout_s

    def _finish(self) -> float | None:
        """The last turn: whatever a caller's thread is doing in its turn is finished first (tried again shortly while
        it is), then the engine closes and its settlements are carried out (after their metric export, looked at
        again shortly while it is pending: ``flush``). None: done (``close`` returns)."""
        if not self._turns.take(0):
            return time.monotonic() + _TURN_BUSY_S
        try:
            self._turn(flush=True)
        except ExportPending:
            return time.monotonic() + _EXPORT_LOOK_S
        except ClientGone:
            pass
        except BaseException:
            log.exception("the mutation scheduler's last turn failed")
        finally:
            self._turns.release()
        with self._cv:
            self._open.take_all()
            self._cv.notify_all()
        self._probed.set()  # (no probe from now on: ``first_probe`` need not wait)
        return None

    def _news(self) -> bool:
        """Under the lock: something the engine has not been stepped with, or its wake time has come. Every event
        for the engine sets ``_dirty`` (``_wake``) and a turn clears it before its step; results arrive in
        ``_arrived``; a listener found to speak another protocol is told to the engine at every step."""
        return (
            self._dirty
            or self._closed
            or bool(self._arrived)
            or self._clock() >= self._wake_at
            or self._handshake_drops.found() is not None
        )

    def _poll_only(self) -> bool:
        """A wake-up that found nothing new: serve librdkafka's callbacks (a throttle, error, log or stats event)
        and hand the metric exports of callers' turns to their thread, without stepping the engine or carrying out a
        step (which cost a 200-client fleet most of a core in wake-ups: 4,000 turns a second finding nothing).
        Inside the turn, as every poll (a throttle event is served before the step that takes its response's
        results), or not at all when another thread holds it (its turn polls). True if nothing new came of it: the
        scheduler's thread serves this client again at its next time; False: it takes a full turn."""
        if not self._turns.take(0):
            return False
        try:
            self._poll()
            self.flush(False)
        except BaseException:
            with self._cv:
                self._wake()  # cut short (ClientGone, a bug): a full turn next, which meets it again
            raise
        finally:
            self._turns.release()
        with self._cv:
            return not self._news()

    def _turn(self, *, flush: bool) -> Outbox | None:
        """One turn (its thread holds it): what turns cut short left undone, then the results librdkafka has
        completed, its callbacks served (after taking the results: a response's throttle event, queued before its
        result, reaches the engine first), the step, and what it says carried out. None once closed and done. While a
        bulk call's hold is on, with the collector off (``collector.turn_holds``)."""
        held = False
        try:
            if collector.turn_holds():
                held = True
                gc.disable()
                collector.TURNS_OFF.append(None)
            if self._turns.leftover:
                self._turns.finish_leftover(self)
            arrived: list[tuple[Send, Answer]] = []
            try:
                with self._lock:
                    arrived, self._arrived = self._arrived, []
                    self._dirty = False  # what arrives from now on wakes the next turn
                self._poll()
                out = self._step(arrived, flush=flush)  # (which empties ``arrived`` once the engine has taken them)
            except BaseException:
                with self._lock:
                    if arrived is not self._arrived:  # taken, not delivered: the next turn takes them
                        self._arrived[:0] = arrived
                raise
            if out is not None:
                self._turns.finish_leftover(self)  # what the step says (kept in ``_step``)
            return out
        except ExportPending:  # (the driver's thread serves this client again shortly: ``_serve``)
            raise
        except BaseException:
            with self._lock:
                self._wake()  # cut short: the scheduler's thread does what this turn left
            raise
        finally:
            if held:
                gc.enable()
                with contextlib.suppress(IndexError):  # (a Ctrl-C between its disable and its append)
                    collector.TURNS_OFF.pop()

    def _poll(self) -> None:
        try:
            self._transport.poll()
        except ClientGone:
            if not self._closed:
                raise
            # The last turn of a client dropped without close(): nothing more can arrive, and the engine still
            # closes in this turn, so that every future is settled (rule h) as close() would have settled it.
        except Exception:
            log.exception("serving librdkafka's callbacks failed")

    def _step(self, arrived: list[tuple[Send, Answer]], *, flush: bool) -> Outbox | None:
        """The driver's one call of ``Engine.step``, under the engine's lock, with what arrived and the sends cut
        short since the last step; what it says is kept for the turn to do (``Turns.keep``) in the same critical
        section. Once closed, the engine closes here (the last turn). Cut short itself (a signal handler that
        raises, on the main thread), the engine's state is no longer known: the client closes here."""
        assert self._turns.held_here()
        drops = self._handshake_drops  # a listener of another protocol: the failure holds until answered
        found = drops.found() if drops.found_any else None
        with self._lock:
            if self._closed and self._engine.status.closed:
                return None
            now = self._clock()
            try:
                if self._turns.cuts:
                    for cut in self._turns.take_cuts():
                        self._engine.on_send_cut_short(cut.request.request_id, handed=True, now=now)
                if found is not None:
                    self._engine.on_error(found, now)
                moved = self._moved
                for request, answer in arrived:  # a request that failed as a whole: the same for every topic
                    results: dict[str, BaseException | None] = (
                        dict.fromkeys(request.names, answer) if isinstance(answer, BaseException) else answer
                    )
                    controller_moved = bool(moved) and request.request_id in moved  # (``_check_held``)
                    self._engine.on_results(request.request_id, results, now, controller_moved=controller_moved)
                    if controller_moved:
                        moved.discard(request.request_id)
                arrived.clear()  # the engine has them (``_turn``)
                if self._closed:
                    self._engine.close(now)
                out = self._engine.step(now)
                self._turns.keep(out, flush=flush)
            except BaseException:
                self._close_here()
                raise
            self._wake_at = out.wake_at
            return out

    # -- what a turn carries out (``turns.Actions``; outside the lock) ------------------------------

    def throttle(self, event: ResponseThrottle) -> None:
        """A response's throttle: recorded, and seen by the first-throttle notice (the only kind it reads) if any."""
        event.report(self._metrics)
        if event.throttle_ms > 0:
            self._first_throttle.see(event)

    def flush(self, wait: bool) -> None:
        """The metric exports (``turns.Actions.flush``). Waited for on the driver's thread without blocking it (it
        serves every client of the process): while the export is pending, the turn stops here (``ExportPending``)
        and the client is served again shortly, its settlements after it."""
        if wait and self._loop.on_its_thread():
            if self._metrics.flush_pending():
                raise ExportPending
            return
        self._metrics.flush(wait)

    def reached(self) -> None:
        with self._lock:
            self._handshake_drops.answered()  # the connection carried a request past the handshake

    def read_views(self, names: list[str]) -> None:
        self._start_views_read(names)

    def read_metadata(self) -> None:
        self._start_metadata_read()

    def probe(self, lane: int) -> None:
        self._send_probe(lane)

    def settle(self, settlements: list[Settle]) -> None:
        # Resolved first, forgotten after: a turn cut short in between (Ctrl-C in result()) leaves the futures it
        # did not reach where close() settles them from this thread.
        with self._lock:  # (a call whose futures are not made yet: its settlements wait for them, ``submit``)
            settlements, futures = self._open.route(settlements)
        self._resolve(settlements, futures)

    def _resolve(self, settlements: list[Settle], futures: list[TopicFuture | None]) -> None:
        """Each settlement carried out on its future (None: withdrawn, or settled by a close() here), which is then
        no longer pending here."""
        carry_out(settlements, futures)
        with self._lock:
            self._open.forget_all(settlements)
        self._wake_assisting()

    def send(self, sending: Sending) -> bool:
        """False: not handed over (closed first, or refused by confluent-kafka), and the engine told so."""
        request = sending.request
        assert request is not None
        sending.closed = self._closed_now  # (read in C: no frame between confluent-kafka's call and the look)
        # the leader epoch known as it is sent goes with its answer (``quorum_watch``)
        on_answer = functools.partial(self._on_answer, request, self._quorum.epoch)
        try:
            handed = self._transport.send(SendOrder.of(request), on_answer, sending)
        except ClientGone:
            if not self._closed:
                raise  # the scheduler's thread closes, and its last turn meets this send again
            handed = False  # that last turn: not handed over, and the engine closes after it (every future settled)
        except Exception as exc:  # confluent-kafka refused the call itself: final for every topic, with its reason
            sending.handed = False  # (before the engine is told: a turn cut short after it never sends it again)
            with self._cv:
                self._engine.on_send_refused(request.request_id, exc, self._clock())
                self._wake()
            return False
        if not handed:  # closed before confluent-kafka's call began: not sent
            sending.handed = False  # (as above)
            with self._cv:
                self._engine.on_send_cut_short(request.request_id, handed=False, now=self._clock())
                self._dirty = True  # the engine's next step has news (the scheduler's thread is not woken for it)
        return handed

    def drain(self, drain: Drain) -> None:
        """The sentinel (``_engine/connection``): a DeleteTopics of a name no topic can have, behind the request
        librdkafka abandoned on the same connection (the lane's handle); its outcome tells when the connection is
        free or closed."""
        order = SendOrder(
            "delete_topics",
            [DRAIN_NAME],
            request_timeout_s=drain.request_timeout_s,
            operation_timeout_s=1.0,
            lane=drain.lane,
        )
        try:
            handed = self._transport.send(order, functools.partial(self._drained, drain.lane), Sending(None))
        except ClientGone:
            if not self._closed:
                raise  # (as ``send``)
            handed = False
        except Exception:  # confluent-kafka refused it (it never does): asking again would only spin
            log.warning("the sentinel after an abandoned request could not be sent", exc_info=True)
            handed = False
        if not handed:
            self._on_drained(Drained.CLOSED, drain.lane)

    def _drained(self, lane: int, answer: Answer) -> None:
        """The sentinel's outcome, on librdkafka's thread: a broker's answer, or a local failure after the write
        (the connection was torn down), or before it (never sent)."""
        exc = answer if isinstance(answer, BaseException) else next(iter(answer.values()), None)
        if is_broker_answer(exc):
            self._on_drained(Drained.ANSWERED, lane)
        elif classify(exc) is Outcome.NOT_SENT:
            self._on_drained(Drained.NOT_SENT, lane)
        else:
            self._on_drained(Drained.CLOSED, lane)

    def _on_drained(self, drained: Drained, lane: int) -> None:
        with self._cv:
            self._engine.on_drained(drained, self._clock(), lane)
            self._wake()

    def _on_answer(self, request: Send, epoch: int | None, answer: Answer) -> None:
        # Runs on librdkafka's background thread: a brief lock to hand the results over and wake, never a wait.
        # An "already done" result is handed over after a read of the controller quorum (``quorum_watch``), on the
        # views reader's thread, ahead of the reads queued there; ``epoch``: the one known as the request was sent.
        if (
            (epoch is not None or self._quorum.epoch is not None)
            and not isinstance(answer, BaseException)
            and asks_for_a_check(request, answer)
        ):
            with self._lock:
                self._held.append((request, epoch, answer))
                asked = len(self._held) > 1  # a check is queued already: it takes this one too
            if asked or self._views_reader.submit(self._check_held, first=True):
                return
            self._check_held(read=False)  # (the reader is closed: handed over unchecked)
            return
        self._hand_over(request, answer)

    def _read_quorum(self) -> int | None:
        """Read the controller quorum's leader epoch (``quorum_watch``; on the views reader's thread); None when it
        could not be read."""
        answer: QuorumAnswer | None = None
        try:
            answer = self._transport.quorum(READ_TIMEOUT_S)
        except ClientGone:
            pass
        except Exception as exc:
            log.debug("could not read the controller quorum (%s)", type(exc).__name__)
        return self._quorum.read(answer)

    def _check_held(self, *, read: bool = True) -> None:
        """The answers held for a read of the quorum (``_on_answer``), all of them with one read, handed over after
        it, the engine told of each whose request's epoch (known as it was sent, else the baseline before this read:
        one read after its send) the read shows grown."""
        with self._lock:
            held, self._held = self._held, []
        baseline = self._quorum.epoch
        epoch: int | None = None
        try:
            if read:
                epoch = self._read_quorum()
        finally:  # handed over whatever came of the read
            for request, sent, results in held:
                before = sent if sent is not None else baseline
                if epoch is not None and before is not None and epoch > before:
                    with self._lock:
                        self._moved.add(request.request_id)
                self._hand_over(request, results)

    def _read_quorum_if_due(self, *, making: bool = False) -> None:
        """Ask for a read of the controller quorum when one is due (``QuorumWatch.due``): as the client is made
        (``making``), as a call is submitted, as an answer comes. ``close`` does not wait for it: on connections of
        the reader's own, which it shuts, and told to no one after; a name lookup it cannot cut short (a slow
        resolver) held a client made and closed at once for seconds (review 137)."""
        if self._quorum.due(making=making) and not self._views_reader.submit(self._read_quorum, waited=False):
            self._quorum.read(None)  # (closed: the read ends unmade)

    def _hand_over(self, request: Send, answer: Answer) -> None:
        """A request's results to the engine's next step. A caller's thread waiting for its futures takes the turn
        itself (assist): one thread hand-off fewer. A baseline a minute old is read again meanwhile (not for a
        validate-only request's answer, as for its call: ``submit``)."""
        if not request.kind.validate_only:
            self._read_quorum_if_due()
        with self._lock:
            self._arrived.append((request, answer))
            if self._assisting:
                self._dirty = True
                self._assisted.notify()
            elif self._in_caller_turn:  # that thread takes it when its turn ends (``_turn_here``)
                self._dirty = True
            else:
                self._wake()

    def _send_probe(self, lane: int = FIRST) -> None:
        """Ask the cluster to describe itself (no quota, answered by any broker) on ``lane``'s connection: an answer,
        even an error, says a broker has served this client there; librdkafka's local failure says none could be
        reached. The first lane's first is kept for a first read of the application's (``first_probe``); the second
        lane's handle is made for it (``lanes``)."""
        done = functools.partial(self._on_probe_done, lane=lane)
        try:
            future = self._transport.probe(CONTACT_PROBE_TIMEOUT_S, lane)
        except ClientGone:
            if not self._closed:
                raise  # (as ``send``)
            done(None)
        except Exception:
            log.debug("the contact probe could not be sent", exc_info=True)
            done(None)
        else:
            if self._first_probe is None and lane == FIRST:
                self._first_probe = future
            future.add_done_callback(done)
        finally:
            if lane == FIRST:
                self._probed.set()

    def first_probe(self, timeout_s: float) -> Future[Any] | None:
        """The client's first contact probe (DescribeCluster, sent in its first turn, ``Probe``), waited for to be
        sent ``timeout_s`` at most: a read that needs a first contact of its own (``metadata_read``) waits for this
        one instead of sending another (a DescribeCluster costs about 1 ms of client CPU, issue 40). None: not sent
        (closed first, or it could not be sent)."""
        self._probed.wait(timeout_s)
        return self._first_probe

    def contact_failure(self) -> ContactFailure | None:
        """``Status.contact_failure``: how the last connection failed before its handshake while no broker has
        answered (None once one has)."""
        with self._cv:
            return self._engine.status.contact_failure

    def _on_probe_done(self, future: Future[Any] | None, lane: int = FIRST) -> None:
        answered = future is not None and is_broker_answer(future.exception())
        if future is not None and future.exception() is None:
            # Before the engine hears of it: the first mutation's series already carry the cluster's id.
            self._metrics.identify(getattr(future.result(), "cluster_id", None))
        with self._cv:
            self._engine.on_probe(answered, self._clock(), lane)
            self._wake()

    def _start_metadata_read(self) -> None:
        if not self._metadata_reader.submit(self._read_metadata):  # closed, or the interpreter exits
            with self._cv:
                if not self._closed:
                    self._engine.on_metadata(None, self._clock(), None)  # as a failed read: the engine goes on
                self._wake()

    def _read_metadata(self) -> None:
        """Metadata requests, off the driver's thread: librdkafka learns the current controller from them (after
        NOT_CONTROLLER), and the costs of deletes and partition additions need the topics' current partition
        counts (KIP-599). A slow or absent broker delays only the sends that wait for them, never a deadline."""
        with self._cv:
            if self._closed:
                return
            want_default = self._engine.status.wants_default_partitions
        counts: dict[str, int] | None
        try:
            counts = self._transport.partition_counts(_METADATA_TIMEOUT_S)
        except ClientGone:
            return
        except Exception as exc:
            # A warning once a broker has answered; before, the calls' own errors say why nothing can be read
            # ("cannot connect to ..."), and a command line printed this line above them (a new user's run)
            with self._cv:
                level = logging.WARNING if self._engine.status.reached else logging.DEBUG
            log.log(level, "could not read the cluster's metadata (%s); costs not known are taken as 1", exc)
            counts = None
        default = self._read_default_partitions() if want_default and counts is not None else None
        self._after_read(lambda now: self._engine.on_metadata(counts, now, default))

    def _read_default_partitions(self) -> int | None:
        """The cluster's num.partitions, or None (not described, not allowed: the engine then reads back a topic
        created with it)."""
        try:
            return self._transport.default_partitions(_METADATA_TIMEOUT_S)
        except ClientGone:
            return None
        except Exception as exc:
            log.info("could not read the cluster's num.partitions (%s): a created topic is read back instead", exc)
            return None

    def _start_views_read(self, names: list[str]) -> None:
        if not self._views_reader.submit(
            functools.partial(self._read_views, names)
        ):  # closed, or the interpreter exits
            self._views_done({})

    def _read_views(self, names: list[str]) -> None:
        """wait_for_metadata: every broker's Metadata (``_driver/broker_views.py``), off the driver's thread. The
        engine always hears back, if only that nothing could be read, so it asks again."""
        views: BrokerViews = {}
        try:
            views = self._transport.broker_views(names, _METADATA_TIMEOUT_S)
        except ClientGone:
            pass
        except Exception as exc:
            log.warning("could not read the brokers' metadata for wait_for_metadata (%s)", exc)
        finally:
            self._views_done(views)

    def _views_done(self, views: BrokerViews) -> None:
        self._after_read(lambda now: self._engine.on_views(views, now))

    def _after_read(self, tell: Callable[[float], None]) -> None:
        """A read's result to the engine (``tell(now)``, unless closed), and the turn it asks for taken on the reader's
        thread, as a caller's thread takes one (``_turn_here``), when the turn is free or soon freed
        (``_READ_TURN_WAIT_S``); else the scheduler's thread takes it. In a fleet's start-up the loop thread's queue
        held an entity's first create after its ids were read 0.15 s (median; 0.5 s for one in ten), 0.01 s taken here
        (issue 40). After a send here the loop thread, asleep for up to a second, is woken to plan again: librdkafka's
        callbacks are served every 50 ms while a request is in flight (``_poll_interval``)."""
        with self._cv:
            closed = self._closed
            if not closed:
                tell(self._clock())
            if closed or not self.caller_turns or self._turns.leftover:  # (a turn to finish: the loop's, as submit's)
                self._wake()
                return
        if not self._turn_here(wait_s=_READ_TURN_WAIT_S):
            with self._lock:
                self._wake()
            return
        with self._lock:  # a request sent here: the loop thread, asleep for longer, plans its callbacks' serving again
            asleep_until = self._asleep_until
            if asleep_until is not None and asleep_until > self._clock() + _poll_interval(self._engine):
                self._served.wake()


def _poll_interval(engine: Engine) -> float:
    """How often librdkafka's callbacks are served until the next step: often while a request is in flight or calls
    wait for first contact; seldom while work waits for the engine's wake time (a paced client waits for its pacer
    most of the time: 20 wake-ups a second each were most of a 200-client fleet's scheduler time, and at 5 a second a
    paced client's polls still cost 0.35 ms of its 0.97 ms a second, issue 40)."""
    status = engine.status
    if status.in_flight is not None or status.second_in_flight is not None or not (status.reached or status.idle):
        return _BUSY_POLL_S
    return _IDLE_POLL_S if status.idle else _WAITING_POLL_S


class SecondLaneEvents:
    """The second handle's callbacks (``Scheduler.second_lane``): its throttles and failures, told as the second
    lane's."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def on_throttle(self, node_id: int, throttle_s: float) -> None:
        self._scheduler.on_throttle(node_id, throttle_s, SECOND)

    def on_error(self, error: KafkaError) -> None:
        self._scheduler.on_error(error, SECOND)

    def on_log(self, message: str) -> None:
        self._scheduler.on_log(message, SECOND)
