"""The thread driver around the mutation engine: one per client, the only sender of CreateTopics, DeleteTopics
and CreatePartitions.

Calls validate their input, hand their topics to the driver and return futures at once; no call holds a thread.
Every decision is the engine's (``_engine``: a deterministic state machine); this module only does what the
engine cannot: threads, the clock and I/O. Its thread loops:

1. take the results librdkafka has completed since the last turn (one batch per response: librdkafka is given
   one future per request), then serve librdkafka's callbacks (``poll``), so a response's throttle event
   (queued before its result) reaches the engine before the result;
2. feed both to the engine with the current time and ``step`` it;
3. do what the step says, outside the lock: metric events first (a caller that waits for its results and then
   reads the metrics finds its call), then the next request, then settle futures (settling one response's
   topics overlaps with the broker's work on the next request), then the metric exports (one job for the
   exporter's thread) or a metadata read for the reader thread;
4. sleep until the engine's wake time, an event, or the next poll of librdkafka's callbacks.

A call made while no request is in flight steps the engine itself, under the same lock, and sends from the
caller's thread: one thread wake fewer on the way out. On the way back, a caller waiting in ``result()`` or
``exception()`` for a pending future takes the turns that answers arriving meanwhile need on its own thread
(``assist``): the answer goes librdkafka -> the waiting caller, as with bare confluent-kafka, instead of
librdkafka -> the scheduler's thread -> the caller. Turns are taken one at a time, by whichever thread holds
``_turn``, each one whole (callbacks served, then the engine stepped, then what it says carried out); turns on
callers' threads hand the metric exports to the scheduler's thread's next turn.

Nothing here blocks where deadlines are kept: metadata reads run on a thread of their own, futures' done-callbacks
and the application's code run elsewhere (``_driver.user_code``), and librdkafka's calls that send return at once.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from confluent_kafka import KafkaError

from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.handshake_drops import HandshakeDrops
from throttled_admin._driver.user_code import CallbackRunner
from throttled_admin._engine import (
    CONTACT_PROBE_TIMEOUT_S,
    DRAIN_NAME,
    BrokerViews,
    Call,
    Drained,
    Engine,
    MetricsSink,
    Outbox,
    Outcome,
    Pacer,
    Request,
    RetryBackoff,
    Topic,
    classify,
    is_broker_answer,
)
from throttled_admin._errors import CLOSED_MESSAGE

__all__ = ["USER_CODE_WAIT_S", "Answer", "ClientGone", "Scheduler", "Transport"]

log = logging.getLogger("throttled_admin")

_BUSY_POLL_S = 0.05  # how often librdkafka's callbacks are served while work is pending
_IDLE_POLL_S = 0.2  # ... and while idle (throttle, error and stats callbacks of other AdminClient methods)
_METADATA_TIMEOUT_S = 5.0
# close() waits this long in all for user code still running (done-callbacks, conf callbacks, exports).
USER_CODE_WAIT_S = 2.0


# A request's answer from librdkafka: each topic's result, or one exception for the whole request.
Answer = dict[str, BaseException | None] | BaseException


class MetricsExport(MetricsSink, Protocol):
    """The engine's metric events, a flush of what they recorded to the exporter (after each turn), and the
    cluster's id once the contact probe has read it (before the first mutation is sent)."""

    def flush(self) -> None: ...

    def identify(self, cluster_id: str | None) -> None: ...


class ClientGone(Exception):
    """The client behind the transport was garbage-collected or closed."""


class Transport(Protocol):
    """What the scheduler needs from the librdkafka handle; the facade provides it without a strong reference."""

    def send(self, method: str, items: list[Any], kwargs: dict[str, Any], on_answer: Callable[[Answer], None]) -> None:
        """Hand a request to librdkafka; ``on_answer`` is called with its results (from any thread), at most once
        per batch of results librdkafka completes."""

    def poll(self) -> None: ...

    def partition_counts(self, timeout_s: float) -> dict[str, int]: ...

    def default_partitions(self, timeout_s: float) -> int | None: ...

    def probe(self, timeout_s: float) -> Future[Any]: ...

    def broker_views(self, names: list[str], timeout_s: float) -> BrokerViews: ...


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
        where the done-callbacks of the client's futures run (closed with the scheduler)."""
        self._transport = transport
        self._report = report
        self._handshake_drops = HandshakeDrops(security_protocol, self._on_listener_found)
        self._reported: str | None = None  # the last finding about a listener reported to ``report``
        self._metrics = metrics
        self._clock = clock
        self._engine = Engine(pacer=pacer, backoff=backoff, socket_timeout_s=socket_timeout_s)
        self._callbacks = callbacks if callbacks is not None else CallbackRunner()
        lock = threading.RLock()
        self._cv = threading.Condition(lock)  # the engine's lock; the scheduler's thread sleeps on it
        self._assisted = threading.Condition(lock)  # callers' threads waiting for their futures (assist) sleep here
        self._assisting = 0
        self._turn = threading.Lock()  # held by whoever takes a turn: the scheduler's thread or a waiting caller
        self._arrived: list[tuple[Request, Answer]] = []  # librdkafka's completed results
        self._unsettled: list[Outbox] = []  # steps whose carrying out a caller's thread could not finish
        self._dirty = False
        self._asleep_until: float | None = None  # while the thread waits: when it wakes by itself
        self._carrying = 0  # callers' threads carrying out a step of their own (submit): close() waits for them
        self._carried = threading.Condition(lock)  # ... here, so that a call's end does not wake the scheduler's thread
        self._closed = False
        self._metadata_wanted = False
        self._metadata_reading = False
        self._views_reading = False  # a wait_for_metadata read of every broker's Metadata is in progress
        self._thread = threading.Thread(target=self._run, name="throttled-admin-scheduler", daemon=True)
        self._thread.start()

    # -- called by the facade and by librdkafka's callbacks (any thread) --------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def learned_rate(self) -> float | None:
        with self._cv:
            return self._engine.rate

    def submit(self, call: Call, items: list[tuple[str, Any, int | None, int]]) -> dict[str, Future[None]]:
        """Queue a validated call's topics: (name, snapshot, cost or None, metadata records). Returns one future
        per topic."""
        futures: dict[str, Future[None]] = {}
        topics: list[Topic] = []
        runner, withdraw, assist, wake = self._callbacks, self._withdraw, self.assist, self._wake_assisting
        for name, item, cost, records in items:
            future = TopicFuture(runner, assist, wake)
            topic = Topic(name, item, call, future, cost, records)
            future.bind_withdraw(withdraw, topic)
            futures[name] = future
            topics.append(topic)
        with self._cv:
            if self._closed:
                raise RuntimeError(CLOSED_MESSAGE)
            self._engine.submit(call, topics)
            # Nothing in flight: the caller's thread steps the engine and sends, saving a wake of the scheduler's
            # thread on the way out; that thread is woken only if it sleeps past what the step wants done next.
            out = self._engine.step(self._clock()) if self._engine.in_flight is None else None
            if out is None or self._asleep_until is None or out.wake_at < self._asleep_until:
                self._wake()
            if out is not None:
                self._carrying += 1
        if out is not None:
            try:
                self._carry_out(out, flush=False)  # metric exports wait for the scheduler's thread's next turn
            finally:
                with self._cv:
                    self._carrying -= 1
                    self._carried.notify_all()
        return futures

    def _withdraw(self, topic: Topic) -> bool:
        with self._cv:
            withdrawn = self._engine.withdraw(topic, self._clock())
            self._wake()
            return withdrawn

    def on_throttle(self, node_id: int, throttle_s: float) -> None:
        """librdkafka's throttle event: one response's throttle_time_ms (sent when it changes)."""
        with self._cv:
            self._engine.on_throttle(node_id, throttle_s, self._clock())
            self._wake()

    def on_error(self, error: KafkaError) -> None:
        """librdkafka's error_cb: an authentication failure fails the work at once instead of at its deadline."""
        with self._cv:
            self._engine.on_error(error, self._clock())
            self._wake()

    def on_log(self, message: str) -> None:
        """A librdkafka ``FAIL`` log line: how far a connection got before it failed (the engine's first-contact
        rule; some failures are told only here), and whether its listener may speak another protocol than the
        client (``_driver.handshake_drops`` asks it)."""
        with self._cv:
            self._engine.on_log(message, self._clock())
            error = self._handshake_drops.observe(message, self._clock())
            self._wake()
        if error is not None:
            self._on_listener_found(error)

    def _on_listener_found(self, error: KafkaError) -> None:
        """The listener speaks another protocol than this client (SASL, TLS): an authentication failure or a
        connection failure no retry gets past, reported once to the application (``report``)."""
        with self._cv:
            if error.code() == KafkaError._AUTHENTICATION:
                first = not self._engine.auth_failing  # reported again once the failure has lapsed
            else:
                first, self._reported = error.str() != self._reported, error.str()
            self._engine.on_error(error, self._clock())
            self._wake()
        if first and self._report is not None:
            self._report(error)

    def close(self, deadline: float | None = None) -> None:
        """Fail everything pending with _DESTROY and stop the threads (not joined from the thread itself). Waits
        for a metadata read in progress (librdkafka's handle must outlive it), and for done-callbacks still
        running, until ``deadline`` (monotonic) at the most."""
        deadline = time.monotonic() + USER_CODE_WAIT_S if deadline is None else deadline
        with self._cv:
            self._closed = True
            self._wake()
            self._assisted.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        with self._cv:
            self._cv.wait_for(
                lambda: not self._metadata_reading and not self._views_reading,
                timeout=_METADATA_TIMEOUT_S + max(0.0, deadline - time.monotonic()),
            )
        self._callbacks.close(deadline)

    def _wake(self) -> None:
        self._dirty = True
        self._cv.notify_all()

    def _wake_assisting(self) -> None:
        """Futures were settled (by a turn, or cancelled): callers waiting for theirs in assist() look again."""
        with self._cv:
            if self._assisting:
                self._assisted.notify_all()

    # -- a caller's thread waiting for a future takes the turn itself -------------------------------

    def assist(self, future: TopicFuture, timeout: float | None) -> float | None:
        """``future.result()``/``exception()`` while it is pending: until it is settled or ``timeout`` passes, take
        the turns that answers arriving meanwhile need on this thread (taking the answer, the next send, settling)
        instead of handing them to the scheduler's thread and waiting to be woken by it. Returns the time left.

        Only a turn that nobody else is taking: the scheduler's thread and other waiting callers take turns one at
        a time (``_turn``), each one whole, librdkafka's callbacks served first, exactly as ``_iterate``."""
        if threading.current_thread() is self._thread:
            return timeout
        end = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            self._assisting += 1
        try:
            while True:
                with self._cv:
                    while not (self._arrived or future.done() or self._closed):
                        left = None if end is None else end - time.monotonic()
                        if left is not None and left <= 0:
                            return 0.0
                        self._assisted.wait(left)
                    if future.done() or self._closed:  # closed: the scheduler's thread settles everything
                        break
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return 0.0
                if self._turn.acquire(blocking=False):
                    try:
                        self._take_turn()
                    except Exception:  # ClientGone or a bug: the scheduler's thread takes over (and closes)
                        log.debug("a turn on a caller's thread failed; the scheduler's thread goes on", exc_info=True)
                        with self._cv:
                            self._wake()
                        break
                    finally:
                        self._turn.release()
                # another thread is taking this turn: wait for it to end (within the caller's time), then look again
                elif self._turn.acquire(timeout=-1 if left is None else left):
                    self._turn.release()
        finally:
            with self._cv:
                self._assisting -= 1
                if self._arrived and not self._closed:
                    self._wake()  # an answer this thread was woken for and left: the scheduler's thread takes it
        return None if end is None else max(0.0, end - time.monotonic())

    def _take_turn(self) -> None:
        """One turn on a caller's thread (``assist``); the scheduler's thread is woken if the engine now wants
        something done before it would wake."""
        out, _ = self._turn_step()
        if out is None:
            return
        # Metric exports wait for the scheduler's thread's next turn (it polls at least every _IDLE_POLL_S): a
        # wake of the exporter's thread per call made the caller's next call wait for the GIL (about 0.25 ms).
        try:
            self._carry_out(out, flush=False)
        except BaseException:
            # Cut short (Ctrl-C reaches the main thread, which the scheduler's thread never was): what the step
            # settled is settled again by the scheduler's thread (futures already done are skipped), so no future
            # is left pending, at close() either.
            with self._cv:
                self._unsettled.append(out)
                self._wake()
            raise
        with self._cv:
            if self._asleep_until is None or out.wake_at < self._asleep_until:
                self._wake()

    # -- the loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._closed:
                self._iterate()
        except ClientGone:
            with self._cv:
                self._closed = True
        except Exception:  # a bug here must not leave calls hanging: everything pending fails, new calls are refused
            log.exception("the mutation scheduler failed; the client refuses further mutations")
            with self._cv:
                self._closed = True
        finally:
            # A caller's thread taking a turn (assist) or carrying out its own step (submit) finishes first (neither
            # waits on this thread): its request is then sent, and an in-flight request's outcome at close is truly
            # unknown.
            with self._turn, self._cv:
                self._carried.wait_for(lambda: self._carrying == 0)
                self._engine.close(self._clock())
                out = self._engine.step(self._clock())
                unsettled, self._unsettled = self._unsettled, []
                self._cv.notify_all()
            for cut_short in unsettled:
                self._settle(cut_short)
            self._dispatch(out)

    def _iterate(self) -> None:
        with self._turn:
            out, busy = self._turn_step()
            if out is None or self._carry_out(out):
                return
        with self._cv:
            if not self._dirty and not self._closed:
                poll_s = _BUSY_POLL_S if busy else _IDLE_POLL_S
                timeout_s = max(0.0, min(out.wake_at - self._clock(), poll_s))
                self._asleep_until = self._clock() + timeout_s
                self._cv.wait(timeout_s)
                self._asleep_until = None

    def _turn_step(self) -> tuple[Outbox | None, bool]:
        """Take the results librdkafka has completed, serve its callbacks, and step the engine (holding ``_turn``).
        None when the client is closed."""
        with self._cv:
            arrived, self._arrived = self._arrived, []
            unsettled, self._unsettled = self._unsettled, []
            self._dirty = False  # what arrives from now on wakes the next turn
        for out in unsettled:
            self._settle(out)
        try:
            self._transport.poll()  # after taking the results: their throttle events are served first
        except ClientGone:
            raise
        except Exception:
            log.exception("serving librdkafka's callbacks failed")
        # A listener found to speak another protocol: the failure holds until a request gets through.
        found = self._handshake_drops.found()
        with self._cv:
            if self._closed:
                return None, False
            now = self._clock()
            if found is not None:
                self._engine.on_error(found, now)
            _deliver(self._engine, arrived, now)
            return self._engine.step(now), not self._engine.idle

    def _carry_out(self, out: Outbox, *, flush: bool = True) -> bool:
        """Do what a step says (outside the lock); True when it sent a request. Metric events come first; the next
        request goes out before this turn's futures are settled, so settling a response's topics overlaps with the
        broker's work on the next request (bulk calls); ``flush`` hands the metric exports to their thread."""
        self._dispatch_metrics(out)
        if out.read_views is not None:
            self._start_views_read(out.read_views)
        if out.send is not None:
            self._send(out.send)
        if out.drain is not None:
            self._send_drain(out.drain)
        self._settle(out)
        if flush:
            self._metrics.flush()
        if out.send is not None:
            return True
        if out.read_metadata:
            self._start_metadata_read()
        if out.probe:
            self._send_probe()
        return False

    def _dispatch(self, out: Outbox) -> None:
        self._dispatch_metrics(out)
        self._settle(out)
        self._metrics.flush()

    def _dispatch_metrics(self, out: Outbox) -> None:
        for event in out.metrics:
            event(self._metrics)
        if out.reached:
            with self._cv:
                self._handshake_drops.answered()  # the connection carried a request past the handshake

    def _settle(self, out: Outbox) -> None:
        if not out.settle:
            return
        for topic, exc in out.settle:
            future: TopicFuture = topic.future
            if future.done():  # withdrawn meanwhile
                continue
            if exc is None:
                future.set_result(None)
            else:
                future.set_exception(exc)
        self._wake_assisting()  # callers waiting in assist() for futures this turn settled

    # -- I/O (outside the lock) ------------------------------------------------------------------

    def _send(self, request: Request) -> None:
        try:
            on_answer = functools.partial(self._on_answer, request)
            self._transport.send(request.kind.operation.method, request.items, request.kwargs, on_answer)
        except ClientGone:
            raise
        except Exception as exc:  # confluent-kafka refused the call itself: final for every topic, with its reason
            with self._cv:
                self._engine.on_send_refused(request, exc, self._clock())
                self._wake()
            return

    def _send_drain(self, timeout_s: float) -> None:
        """The sentinel (``_engine/connection``): a DeleteTopics of a name no topic can have, behind the request
        librdkafka abandoned on the same connection; its outcome tells when the connection is free or closed."""
        kwargs = {"request_timeout": timeout_s, "operation_timeout": 1.0}
        try:
            self._transport.send("delete_topics", [DRAIN_NAME], kwargs, self._drained)
        except ClientGone:
            raise
        except Exception:  # confluent-kafka refused it (it never does): asking again would only spin
            log.warning("the sentinel after an abandoned request could not be sent; sending again", exc_info=True)
            self._on_drained(Drained.CLOSED)

    def _drained(self, answer: Answer) -> None:
        """The sentinel's outcome, on librdkafka's thread: a broker's answer, or a local failure after the write
        (the connection was torn down), or before it (never sent)."""
        exc = answer if isinstance(answer, BaseException) else next(iter(answer.values()), None)
        if is_broker_answer(exc):
            self._on_drained(Drained.ANSWERED)
        elif classify(exc) is Outcome.NOT_SENT:
            self._on_drained(Drained.NOT_SENT)
        else:
            self._on_drained(Drained.CLOSED)

    def _on_drained(self, drained: Drained) -> None:
        with self._cv:
            self._engine.on_drained(drained, self._clock())
            self._wake()

    def _on_answer(self, request: Request, answer: Answer) -> None:
        # Runs on librdkafka's background thread: a brief lock to hand the results over and wake, never a wait.
        # A caller's thread waiting for its futures takes the turn itself (assist): one thread hand-off fewer.
        with self._cv:
            self._arrived.append((request, answer))
            if self._assisting:
                self._dirty = True
                self._assisted.notify()
            else:
                self._wake()

    def _send_probe(self) -> None:
        """Ask the cluster to describe itself (no quota, answered by any broker): an answer, even an error, says
        a broker has served this client; librdkafka's local failure says none could be reached."""
        try:
            future = self._transport.probe(CONTACT_PROBE_TIMEOUT_S)
        except ClientGone:
            raise
        except Exception:
            log.debug("the contact probe could not be sent", exc_info=True)
            self._on_probe_done(None)
            return
        future.add_done_callback(self._on_probe_done)

    def _on_probe_done(self, future: Future[Any] | None) -> None:
        answered = future is not None and is_broker_answer(future.exception())
        if future is not None and future.exception() is None:
            # Before the engine hears of it: the first mutation's series already carry the cluster's id.
            self._metrics.identify(getattr(future.result(), "cluster_id", None))
        with self._cv:
            self._engine.on_probe(answered, self._clock())
            self._wake()

    def _start_metadata_read(self) -> None:
        with self._cv:
            self._metadata_wanted = True
            if self._metadata_reading:
                return
            self._metadata_reading = True
        threading.Thread(target=self._read_metadata, name="throttled-admin-metadata", daemon=True).start()

    def _read_metadata(self) -> None:
        """Metadata requests, off the driver's thread: librdkafka learns the current controller from them (after
        NOT_CONTROLLER), and the costs of deletes and partition additions need the topics' current partition
        counts (KIP-599). A slow or absent broker delays only the sends that wait for them, never a deadline."""
        stop = False
        try:
            while True:
                with self._cv:
                    if stop or not self._metadata_wanted or self._closed:
                        # Cleared in the same critical section as the decision to stop, and only here: a read asked
                        # for from now on starts a new reader, and close() never sees a reader as gone too early.
                        self._metadata_reading = False
                        self._cv.notify_all()
                        return
                    self._metadata_wanted = False
                    want_default = self._engine.wants_default_partitions
                counts: dict[str, int] | None
                try:
                    counts = self._transport.partition_counts(_METADATA_TIMEOUT_S)
                except ClientGone:
                    stop = True
                    continue
                except Exception as exc:
                    log.warning("could not read the cluster's metadata (%s); costs not known are taken as 1", exc)
                    counts = None
                default = self._read_default_partitions() if want_default and counts is not None else None
                with self._cv:
                    if not self._closed:
                        self._engine.on_metadata(counts, self._clock(), default)
                    self._wake()
        except BaseException:  # a bug: the reader is gone all the same
            with self._cv:
                self._metadata_reading = False
                self._cv.notify_all()
            raise

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
        with self._cv:
            self._views_reading = True
        thread = threading.Thread(target=self._read_views, args=(names,), name="throttled-admin-views", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # interpreter shutdown: no new threads
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
        with self._cv:
            self._views_reading = False
            if not self._closed:
                self._engine.on_views(views, self._clock())
            self._wake()


def _deliver(engine: Engine, arrived: list[tuple[Request, Answer]], now: float) -> None:
    for request, answer in arrived:
        if isinstance(answer, BaseException):  # the request failed as a whole: the same for every topic
            engine.on_results(request, dict.fromkeys(request.names, answer), now)
        else:
            engine.on_results(request, answer, now)
