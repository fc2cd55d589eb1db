"""``ThrottledAdminClient``: confluent-kafka's AdminClient with Java AdminClient quota semantics.

It *is* a ``confluent_kafka.admin.AdminClient``: the three topic mutations are overridden, everything else is
inherited unchanged (signatures, type stubs, ``isinstance``). Calls validate their input and hand their
topics to the client's one ``Scheduler``, which alone sends mutations (``_driver/scheduler.py``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, InvalidStateError, wait
from types import TracebackType
from typing import Any, ClassVar

from confluent_kafka import KafkaError, KafkaException, ThrottleEvent
from confluent_kafka.admin import AdminClient

# The public names live in confluent_kafka.admin, which re-exports them without __all__ (mypy --strict).
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewPartitions, NewTopic, _AdminClientImpl
from opentelemetry.metrics import MeterProvider

from throttled_admin._driver import collector
from throttled_admin._driver.broker_views import BrokerViewReader
from throttled_admin._driver.callback_errors import CallbackErrors
from throttled_admin._driver.direct_creates import DirectCreates
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.handle_calls import HandleCalls, closed_twin
from throttled_admin._driver.librdkafka_views import answered_by
from throttled_admin._driver.quorum_wire import QuorumAnswer
from throttled_admin._driver.scheduler import USER_CODE_WAIT_S, Answer, ClientGone, Scheduler, SendOrder
from throttled_admin._driver.secret_hider import SecretHider
from throttled_admin._driver.settings import USER_CALLBACKS, ClientSettings, EventSink, install_callbacks
from throttled_admin._driver.turns import Sending
from throttled_admin._driver.user_code import CallbackRunner, SerialRunner
from throttled_admin._engine import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    FIRST,
    BrokerViews,
    CallSpec,
    ContactFailure,
    MutationQuota,
    Operation,
    Pacer,
    RequestKind,
    TopicSpecs,
)
from throttled_admin._engine.config import MAX_TOPICS_PER_REQUEST
from throttled_admin._errors import CLOSED_MESSAGE, NotSentError, closed_error
from throttled_admin._options import (
    CreatePartitionsOptions,
    CreateTopicsOptions,
    DeleteTopicsOptions,
    MutationOptions,
    merge_options,
)
from throttled_admin._telemetry.metrics import ClientMetrics
from throttled_admin._validation import Checked, check_delete_topics, check_new_partitions, check_new_topics

__all__ = ["ReadingClient", "ThrottledAdminClient"]

# The conf callbacks the second lane's handle does not call: all but throttle_cb (its errors are the engine's alone,
# and it makes no statistics for the application).
_SECOND_HANDLE_SILENT = tuple(key for key in USER_CALLBACKS if key != "throttle_cb")

log = logging.getLogger("throttled_admin")


# A call of more topics, not paced, is handed to the scheduler in two parts: this many, then the rest, made ready (its
# costs and records, the engine's own records of it, and for a create its checks but those that raise and a name
# given twice) after the first request is handed to librdkafka (issue 40: 50,000 topics took 45 ms of their 140 ms to
# the first write, then 20 of the 40 left). One request's worth: the second lane's goes once the rest is queued,
# while the first is with the broker (4,000 topics: 150-330 ms on QuotaBroker, 450-730 on Kafka 4.4).
_FIRST_PART = MAX_TOPICS_PER_REQUEST

# One RequestKind per operation and validate_only, made once: the engine compares a call's kind on every step (the
# same object: no dataclass __eq__).
_REQUEST_KINDS: dict[tuple[str, bool], RequestKind] = {}


def _request_kind(operation: Operation, validate_only: bool) -> RequestKind:
    kind = _REQUEST_KINDS.get((operation.name, validate_only))
    if kind is None or kind.operation is not operation:
        kind = _REQUEST_KINDS[operation.name, validate_only] = RequestKind(operation, validate_only)
    return kind


def _checked_later(operation: Operation, checked: Checked[Any], unknown: int | None) -> TopicSpecs:
    """A call checked in two parts: its rest checked (``Checked.finish``) and made ready, once its first request is on
    its way."""
    return operation.specs(checked.finish(), unknown)


class _Transport:
    """The scheduler's way to the librdkafka handle, through a weak reference: the scheduler (and its thread)
    never keeps the client alive, so dropping the last reference releases librdkafka."""

    def __init__(self, client: ThrottledAdminClient, hider: SecretHider) -> None:
        self._client = weakref.ref(client)
        self._hider = hider  # a request's own error may quote a secret (an identity provider's refusal)
        self._views = client._broker_views  # (no reference to the client: closed by ``close_reads`` once it is gone)
        self._reads_closed: Future[None] = Future()  # done by ``close_reads``: a read waiting on an answer ends

    def _get(self) -> ThrottledAdminClient:
        client = self._client()
        if client is None:
            raise ClientGone
        return client

    def send(self, order: SendOrder, on_answer: Callable[[Answer], None], sending: Sending) -> bool:
        """librdkafka's call with one future for the whole request (AdminClient's own wrapper makes one more future
        per topic, and a done-callback each): ``on_answer`` gets every topic's result at once, on librdkafka's
        thread. False when the client closed before the call began (``Sending.begin``). Cut short (Ctrl-C), it
        tells ``sending`` whether confluent-kafka's call ran: while a request is pending, confluent-kafka holds a
        reference to its future ("we need to keep our own refcount", Admin.c), so a count that did not grow says it
        never ran. A bulk create the engine marks ``direct`` goes on the client's own connection when it has one
        (``_driver/direct_creates``)."""
        if order.direct:
            taken = self._get()._direct.send(order, on_answer, sending)
            if taken is not None:
                return taken
        try:
            client = self._client()
            if client is None:
                raise ClientGone
            call = getattr(_AdminClientImpl, order.method)
            handle: AdminClient | None = client
            if order.lane != FIRST:  # the second lane's connection: a handle of its own (``_engine/lanes``)
                handle = client._second_lane_handle()
                if handle is None:  # it could not be made: not handed over (the engine retires the second lane)
                    return False
            request = _Answering(on_answer, self._hider)
            held = sys.getrefcount(request)
            if not sending.begin():
                return False
            call(handle, order.items, request, **_keywords(order))
            return True
        except BaseException:
            if sending.began and not request.answered and sys.getrefcount(request) <= held:
                sending.began = False  # confluent-kafka's call did not run: not handed over
            raise

    def poll(self) -> None:
        client = self._client()  # as _get(), a call fewer: every turn polls
        if client is None:
            raise ClientGone
        AdminClient.poll(client, 0)
        if client._second is not None:  # the second lane's callbacks (throttles, failures)
            client._poll_second_lane()

    def probe(self, timeout_s: float, lane: int = FIRST) -> Future[Any]:
        """A DescribeCluster on ``lane``'s connection (the second lane's handle made for it, ``_engine/lanes``). The
        second lane's is done once the client's own connections for bulk creates have ended their opening too, open
        or not (``_driver/direct_creates``): the lane's first request then finds them open."""
        client = self._get()
        handle = client if lane == FIRST else client._second_lane_handle()
        if handle is None:  # it could not be made: not answered (the engine retires the second lane)
            raise RuntimeError("the second lane's handle could not be made")
        future: Future[Any] = AdminClient.describe_cluster(handle, request_timeout=timeout_s)
        if lane == FIRST:
            return future
        return _after(future, client._direct.opening())

    def partition_counts(self, timeout_s: float) -> dict[str, int]:
        metadata = AdminClient.list_topics(self._get(), timeout=timeout_s)
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()}

    def controller(self, timeout_s: float) -> tuple[int, int]:
        metadata = AdminClient.list_topics(self._get(), timeout=timeout_s)
        return int(metadata.controller_id), int(metadata.orig_broker_id)

    def default_partitions(self, timeout_s: float) -> int | None:
        """The partitions a create of -1 makes: ``num.partitions`` as a broker describes it (Kafka 4.3+ applies the
        controller's, KIP-1211: the same where every node has the same settings); None when not described. Asked of
        the broker that just answered: the controller a KRaft broker names is any broker it believes alive, a node
        killed until it is fenced among them (helper 111: the read waited out its timeout, and the create with it).
        Once ``close_reads`` is called, nothing more is asked, and the wait for the answer ends (``ClientGone``)."""
        client = self._get()
        if self._reads_closed.done():
            raise ClientGone
        metadata = AdminClient.list_topics(client, timeout=timeout_s)
        answered = (n for n, b in metadata.brokers.items() if answered_by(metadata, n, f"{b.host}:{b.port}"))
        node = next(
            answered, metadata.controller_id if metadata.controller_id >= 0 else min(metadata.brokers, default=-1)
        )
        if node < 0:
            return None
        resource = ConfigResource(ResourceType.BROKER, str(node))
        if self._reads_closed.done():
            raise ClientGone
        (future,) = AdminClient.describe_configs(client, [resource], request_timeout=timeout_s).values()
        wait([future, self._reads_closed], timeout_s, return_when=FIRST_COMPLETED)
        if self._reads_closed.done():
            raise ClientGone
        entry = future.result(0).get("num.partitions")
        return int(entry.value) if entry is not None and entry.value is not None else None

    def broker_views(self, names: list[str], timeout_s: float) -> BrokerViews:
        """Each broker's Metadata of ``names``, read on connections of the reader's own (``_driver/broker_views``)."""
        reader: BrokerViewReader = self._get()._broker_views
        return reader.read_cluster(names, timeout_s)

    def close_reads(self) -> None:
        """The reads on the client's own broker connections end at once: their connections are shut; and a read
        waiting on librdkafka's answer (``default_partitions``) ends, its answer taken by no one."""
        self._views.close()
        with contextlib.suppress(InvalidStateError):  # (closed before)
            self._reads_closed.set_result(None)

    def quorum(self, timeout_s: float) -> QuorumAnswer | None:
        """The controller quorum's leader and epoch, read on the same connections (``_driver/quorum_watch``)."""
        reader: BrokerViewReader = self._get()._broker_views
        return reader.read_quorum(timeout_s)


def _after(future: Future[Any], also: Future[bool]) -> Future[Any]:
    """``future``'s outcome, once ``also`` is done too."""
    both: Future[Any] = Future()

    def settle(_: Future[Any]) -> None:
        if future.done() and also.done():
            _settle(both, future)  # (the two callbacks may both get here: settled once)

    future.add_done_callback(settle)
    also.add_done_callback(settle)
    return both


def _keywords(order: SendOrder) -> dict[str, Any]:
    """confluent-kafka's keyword arguments for the order."""
    keywords: dict[str, Any] = {
        "request_timeout": order.request_timeout_s,
        "operation_timeout": order.operation_timeout_s,
    }
    if order.validate_only is not None:
        keywords["validate_only"] = order.validate_only
    return keywords


class _Answering:
    """The future confluent-kafka's C methods are given for one request: librdkafka's thread calls ``set_result``
    or ``set_exception`` once (the only methods it calls), and the answer goes straight to ``on_answer``, as
    AdminClient's ``_make_topics_result`` makes it (KafkaException(error) per topic that failed, or the request's
    own exception for all of them). A ``concurrent.futures.Future`` there made a Condition, took its lock four times
    and ran its callbacks list on librdkafka's thread, holding the GIL the waiting caller needs (issue 39)."""

    __slots__ = ("_hider", "_on_answer", "answered")

    def __init__(self, on_answer: Callable[[Answer], None], hider: SecretHider) -> None:
        self._on_answer = on_answer
        self._hider = hider
        self.answered = False

    def set_result(self, result: dict[str, KafkaError | None]) -> None:
        if not any(result.values()):  # every topic applied (most answers): the same dict, made in C (issue 39)
            self._answer(dict.fromkeys(result))
            return
        self._answer({name: None if error is None else KafkaException(error) for name, error in result.items()})

    def set_exception(self, exc: BaseException) -> None:
        self._answer(self._hider.exception(exc))  # (the request's own: an authentication failure may quote a secret)

    def _answer(self, answer: Answer) -> None:
        self.answered = True
        try:
            self._on_answer(answer)
        except Exception:  # on librdkafka's thread: logged, as a Future logs a failing done-callback
            log.exception("handing over a request's answer failed")


class _InheritedFutures:
    """The futures of the inherited AdminClient methods, held weakly until close() fails those still pending
    (librdkafka never resolves a request in flight once its handle is destroyed).

    Each future returned is our own, of confluent-kafka's class and running as confluent-kafka's are, chained to
    librdkafka's: whichever of librdkafka and close() comes first resolves it, once. No thread per call."""

    def __init__(self, callbacks: CallbackRunner) -> None:
        self._callbacks = callbacks  # settles ours off librdkafka's thread: a done-callback may call close()
        self._lock = threading.Lock()
        self._futures: weakref.WeakKeyDictionary[Future[Any], str] = weakref.WeakKeyDictionary()
        self._closed = False

    def chain(self, operation: str, result: Any) -> Any:
        """``result`` of an inherited method, with each of its futures (one, or a dict of them) replaced."""
        if isinstance(result, Future):
            return self._chain(operation, [result])[0]
        if isinstance(result, dict) and result and all(isinstance(v, Future) for v in result.values()):
            return dict(zip(result, self._chain(operation, list(result.values())), strict=True))
        return result

    def _chain(self, operation: str, theirs: list[Future[Any]]) -> list[Future[Any]]:
        ours: list[Future[Any]] = [Future() for _ in theirs]
        for future in ours:
            future.set_running_or_notify_cancel()  # as confluent-kafka's: cancel() returns False
        with self._lock:
            closed = self._closed
            if not closed:
                self._futures.update(dict.fromkeys(ours, operation))
        for their, our in zip(theirs, ours, strict=True):
            their.add_done_callback(functools.partial(_hand_over, self._callbacks, our))
        if closed:  # close() has taken its list already: a call that raced it fails here
            _fail_all([(future, operation) for future in ours])
        return ours

    def close(self) -> list[tuple[Future[Any], str]]:
        """Stop tracking; the futures still pending, each with its method's name."""
        with self._lock:
            self._closed = True
            pending = [(future, operation) for future, operation in self._futures.items() if not future.done()]
            self._futures.clear()
        return pending


def _hand_over(callbacks: CallbackRunner, ours: Future[Any], theirs: Future[Any]) -> None:
    """On librdkafka's thread: ours is settled, and its done-callbacks run, on the client's callback pool (one of
    them calling close() there would destroy librdkafka's handle from its own thread, which aborts)."""
    callbacks.submit(functools.partial(_settle, ours, theirs))


def _settle(ours: Future[Any], theirs: Future[Any]) -> None:
    """librdkafka's outcome, unless close() failed ours first."""
    with contextlib.suppress(InvalidStateError):
        if theirs.cancelled():
            ours.set_exception(CancelledError())
        elif (exc := theirs.exception()) is not None:
            ours.set_exception(exc)
        else:
            ours.set_result(theirs.result())


def _fail_all(pending: list[tuple[Future[Any], str]]) -> None:
    for future, operation in pending:
        with contextlib.suppress(InvalidStateError):  # librdkafka got there first
            future.set_exception(closed_error(operation, sent=True))


def _fail_inherited(inherited: _InheritedFutures) -> threading.Thread | None:
    """Fail the inherited calls still pending with _DESTROY, on a thread of their own: their done-callbacks
    (user code) run as each is failed and must not hold close() up past its budget."""
    pending = inherited.close()
    if not pending:
        return None
    thread = threading.Thread(target=_fail_all, args=(pending,), name="throttled-admin-close", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # interpreter shutdown: no new threads
        _fail_all(pending)
        return None
    return thread


def _release(
    scheduler: Scheduler,
    user_code: SerialRunner,
    exports: SerialRunner,
    inherited: _InheritedFutures,
    views: BrokerViewReader,
    callback_errors: CallbackErrors,
    direct: DirectCreates,
) -> None:
    """A client dropped without close(): its threads end too (librdkafka's handle is freed with the object). Collected
    on a thread that may not wait for the driver (its own: a collection there), every future is settled at once and
    the rest is done by a thread of its own."""
    if not scheduler.close(USER_CODE_WAIT_S):
        args = (scheduler, user_code, exports, inherited, views, callback_errors, direct)
        with contextlib.suppress(RuntimeError):  # (the interpreter is exiting: its exit hook closes every client)
            threading.Thread(target=_release, args=args, name="throttled-admin-close", daemon=True).start()
        return
    deadline = time.monotonic() + USER_CODE_WAIT_S
    failing = _fail_inherited(inherited)
    views.close()
    direct.close()
    user_code.close(deadline)
    exports.close(deadline)
    callback_errors.close()
    if failing is not None:
        failing.join(max(0.0, deadline - time.monotonic()))


_CLOSE_WAIT_S = 30.0
_POLL_SLICE_S = 0.05  # poll() looks at least this often for what the user's callbacks raised on their thread


_live: weakref.WeakSet[Scheduler] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def _close_all_at_exit() -> None:
    for scheduler in list(_live):
        scheduler.close()


def _register_exit_hook() -> None:
    """One hook for all clients: at interpreter exit, pending calls fail with _DESTROY instead of holding the
    exit up. threading's private hook runs before non-daemon threads are joined (concurrent.futures uses it)."""
    global _exit_hook_registered
    with _exit_hook_lock:
        if _exit_hook_registered:
            return
        register = getattr(threading, "_register_atexit", None)
        if register is not None:
            try:
                register(_close_all_at_exit)
            except RuntimeError:  # the interpreter is already shutting down
                return
        _exit_hook_registered = True


class ThrottledAdminClient(AdminClient):
    """A drop-in for ``confluent_kafka.admin.AdminClient`` that survives controller mutation quotas.

    ``create_topics``, ``create_partitions`` and ``delete_topics`` return ``dict[str, Future]`` at once, retry
    only the throttled topics within one deadline (KIP-599), never send while the broker's throttle lasts
    (KIP-219), and can pace themselves to the quota (``mutation_quota``). Every other method is AdminClient's.
    """

    # The controller quorum's epoch is read as the client is made: the baseline of its first change
    # (``_driver/quorum_watch``). ``ReadingClient`` leaves it to the first change.
    _quorum_at_making: ClassVar[bool] = True

    def __init__(
        self,
        conf: dict[str, Any],
        *,
        retry_on_quota_violation: bool = True,
        default_api_timeout_ms: int = 60000,
        mutation_quota: MutationQuota | None = None,
        meter_provider: MeterProvider | None = None,
        metrics_num_samples: int = 2,
        metrics_sample_window_ms: int = 30000,
        metric_attributes: Mapping[str, str | bool | int | float] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(conf, dict) and kwargs:
            # confluent-kafka merges keyword settings (``logger=`` is the documented one) over conf; merged here,
            # the client sees them too (its callbacks, the log it reads, security.protocol).
            conf, kwargs = {**conf, **kwargs}, {}
        settings = ClientSettings.check(
            conf,
            retry_on_quota_violation=retry_on_quota_violation,
            default_api_timeout_ms=default_api_timeout_ms,
            meter_provider=meter_provider,
            metrics_num_samples=metrics_num_samples,
            metrics_sample_window_ms=metrics_sample_window_ms,
            mutation_quota=mutation_quota,
            metric_attributes=metric_attributes,
        )
        self._settings = settings
        self._bootstrap_servers = str(conf.get("bootstrap.servers", ""))
        self._client_id = str(conf.get("client.id", "rdkafka"))
        self._mutation_quota = mutation_quota
        # Callbacks from conf run here, in order, never on the scheduler's thread; what they raise waits for the
        # application's next poll(). Metric exports have a thread of their own: a turn that settles futures waits
        # for its exports (EXPORT_WAIT_S at most), and must never wait behind a slow conf callback.
        self._user_code = SerialRunner("throttled-admin-user-code")
        self._exports = SerialRunner("throttled-admin-exports")
        self._callback_errors = CallbackErrors()
        self._metrics = ClientMetrics(
            client_id=self._client_id,
            bootstrap_servers=self._bootstrap_servers,
            attributes=settings.metric_attributes,
            meter_provider=meter_provider,
            num_samples=settings.metrics_num_samples,
            sample_window_ms=settings.metrics_sample_window_ms,
            exporter=self._exports,
        )
        self._scheduler: Scheduler | None = None
        self._close_lock = threading.Lock()
        self._closed = False
        self._close_done = threading.Event()
        self._pid = os.getpid()
        self._callbacks = CallbackRunner()  # done-callbacks of every future this client returns
        self._inherited = _InheritedFutures(self._callbacks)
        self._handle_calls = HandleCalls()  # the inherited calls that block in librdkafka's handle (list_topics)
        sink: list[Scheduler] = []  # filled below; the callbacks only ever see the scheduler weakly
        self._hider = hider = SecretHider(conf)  # (its repr shows no secret)
        # wait_for_metadata's views and the controller quorum's epoch: connections of its own, made when first used
        self._broker_views = BrokerViewReader(conf, hider)
        owned_conf, report = install_callbacks(
            conf, lambda: sink[0] if sink else None, self._user_code.submit, self._callback_errors, hider
        )
        super().__init__(owned_conf, **kwargs)
        # The second lane's handle (``_engine/lanes``), made when a bulk call first needs it: the same settings, its
        # events told as the second lane's. The application's throttle_cb hears its throttles too (a response comes on
        # one connection: none is told twice); its errors only the engine (an error retires the lane).
        lane_conf = {key: value for key, value in conf.items() if key not in _SECOND_HANDLE_SILENT}
        run_user, errors = self._user_code.submit, self._callback_errors

        def lane_events() -> EventSink | None:
            return sink[0].second_lane if sink else None

        def second_conf() -> dict[str, Any]:  # (a closure: no attribute shows the conf or its secrets)
            return install_callbacks(lane_conf, lane_events, run_user, errors, hider)[0]

        def second_credentials(username: str, password: str) -> None:  # (the second lane's handle from now on)
            lane_conf.update({"sasl.username": username, "sasl.password": password})

        self._second_conf = second_conf
        self._second_credentials = second_credentials
        throttle_cbs = [owned_conf["throttle_cb"]]  # each lane's, as its handle calls it (the second's made once used)

        def direct_throttle(lane: int, event: ThrottleEvent) -> None:
            if len(throttle_cbs) <= lane:
                throttle_cbs.append(second_conf()["throttle_cb"])
            throttle_cbs[lane](event)

        self._direct = DirectCreates(conf, direct_throttle)
        self._second: AdminClient | None = None
        self._second_lock = threading.Lock()
        scheduler = Scheduler(
            _Transport(self, hider),
            self._metrics,
            pacer=Pacer(mutation_quota) if mutation_quota is not None else None,
            backoff=settings.backoff,
            security_protocol=str(conf.get("security.protocol", "plaintext")),
            report=report,
            callbacks=self._callbacks,
            socket_timeout_s=settings.socket_timeout_s,
        )
        sink.append(scheduler)  # librdkafka's events reach it before its first turn polls the handle
        try:
            scheduler.start(read_quorum=self._quorum_at_making)
        except BaseException:  # (cut short, or no thread: the client is not made, and its events reach no one)
            sink.clear()
            # What was made (librdkafka's handle, its threads and connections) goes now, not when the traceback that
            # holds the half-made client goes (in a REPL, at the next exception: review 138). Its scheduler closed
            # itself (``Scheduler.start``) and is not the client's: the rest of a close.
            self._closed = True
            self._close_rest()
            raise
        self._scheduler = scheduler
        _live.add(scheduler)
        _register_exit_hook()
        weakref.finalize(
            self,
            _release,
            scheduler,
            self._user_code,
            self._exports,
            self._inherited,
            self._broker_views,
            self._callback_errors,
            self._direct,
        )

    @property
    def retry_on_quota_violation(self) -> bool:
        return self._settings.retry_on_quota_violation

    @property
    def default_api_timeout_ms(self) -> int:
        return self._settings.default_api_timeout_ms

    @property
    def mutation_quota(self) -> MutationQuota | None:
        return self._mutation_quota

    def __repr__(self) -> str:
        # Only non-secret settings: conf (sasl.password and the like) is never echoed.
        if "_settings" not in vars(self):
            return f"<{type(self).__name__} (not initialized)>"
        state = "closed" if self.closed else "open"
        return (
            f"{type(self).__name__}(bootstrap.servers={self._bootstrap_servers!r}, client.id={self._client_id!r}, "
            f"retry_on_quota_violation={self.retry_on_quota_violation}, mutation_quota={self._mutation_quota!r}, "
            f"{state})"
        )

    # -- the three quota-aware calls -------------------------------------------------------------

    def create_topics(  # type: ignore[override]
        self, new_topics: list[NewTopic], *, options: CreateTopicsOptions | None = None, **kwargs: Any
    ) -> dict[str, Future[None]]:
        """Create topics. kwargs: validate_only, request_timeout, operation_timeout (confluent-kafka's),
        retry_on_quota_violation, timeout_ms, wait_for_metadata."""
        check: Callable[[Any], Checked[NewTopic]] = check_new_topics
        if type(new_topics) is list and len(new_topics) > _FIRST_PART and self._unpaced():
            check = functools.partial(check_new_topics, first=_FIRST_PART)  # in two parts, as it is sent
        return self._call(CREATE_TOPICS, check, new_topics, CreateTopicsOptions, options, kwargs)

    def create_partitions(  # type: ignore[override]
        self,
        new_partitions: list[NewPartitions],
        *,
        options: CreatePartitionsOptions | None = None,
        **kwargs: Any,
    ) -> dict[str, Future[None]]:
        """Add partitions. kwargs as for create_topics."""
        return self._call(
            CREATE_PARTITIONS, check_new_partitions, new_partitions, CreatePartitionsOptions, options, kwargs
        )

    def delete_topics(  # type: ignore[override]
        self, topics: list[str], *, options: DeleteTopicsOptions | None = None, **kwargs: Any
    ) -> dict[str, Future[None]]:
        """Delete topics. kwargs: request_timeout, operation_timeout, retry_on_quota_violation, timeout_ms,
        wait_for_metadata."""
        return self._call(DELETE_TOPICS, check_delete_topics, topics, DeleteTopicsOptions, options, kwargs)

    def _call(
        self,
        operation: Operation,
        check: Callable[[Any], Checked[Any]],
        items: Any,
        options_type: type[MutationOptions],
        options: MutationOptions | None,
        kwargs: dict[str, Any],
    ) -> dict[Any, Future[None]]:
        """A mutation call: its input checked (``check``), its options merged, its topics handed over. A bulk call
        holds the garbage collector off until it returns (``_driver/collector.py``); the switch is turned inside the
        ``try`` and back in the ``finally``, inline: no Ctrl-C between them leaves it off (on Python 3.11+, where a
        signal is acted on only at a call or a jump back). An unpaced one's objects are then frozen until it ends
        (``collector.Hold``). The call's deadline counts from here, its checks included: a call of 50,000 topics
        takes 20-30 ms to check, and its caller's timeout counts from the call."""
        started_at = time.monotonic()  # (the clock every scheduler of the client reads: ``Scheduler.now``)
        bulk = collector.worth_holding(items)
        hold = collector.Hold() if bulk and self._unpaced() else None
        try:
            if bulk:
                gc.disable()
            checked = check(items)
            ended = None if hold is None else hold.end
            futures = self._submit(operation, checked, merge_options(options_type, options, kwargs), started_at, ended)
            if hold is not None:
                hold.start()  # (its objects frozen until the call is no longer pending: no collection walks them)
        finally:
            if bulk:
                gc.enable()
        return futures

    def _submit(
        self,
        operation: Operation,
        checked: Checked[Any],
        options: MutationOptions,
        started_at: float,
        ended: Callable[[], None] | None = None,
    ) -> dict[Any, Future[None]]:
        """Hand the call's topics to the scheduler; a topic the checks refused gets its future failed at once
        (NotSentError with the broker's error code), the others go on. Futures in the order of the call. The call
        began at ``started_at`` (monotonic): its deadline is ``timeout_ms`` later. ``ended``: called once none of them
        is pending (``Scheduler.submit``; at once when the checks refused every one)."""
        scheduler = self._open_scheduler()
        items = checked.sent()
        retry, settings = options.retry_on_quota_violation, self._settings  # its fields, not the properties around them
        timeout_ms = settings.default_api_timeout_ms if options.timeout_ms is None else options.timeout_ms
        spec = CallSpec.starting(
            _request_kind(operation, bool(getattr(options, "validate_only", False))),
            started_at,
            timeout_ms,
            retry_on_quota_violation=settings.retry_on_quota_violation if retry is None else retry,
            request_timeout_s=options.request_timeout,
            operation_timeout_s=options.operation_timeout,
            wait_for_metadata=options.wait_for_metadata,
        )
        # Costs the input does not tell (deletes, partition additions) are read from the cluster only for pacing; a
        # create of -1 partitions costs the cluster's default, which is read for the metrics too.
        unknown = None if self._mutation_quota is not None or operation is CREATE_TOPICS else 0
        # A bulk call's rest is made ready once its first request is on its way; not a paced call's: its first request
        # is sized from all it has queued, and its unknown costs come from one read of the cluster.
        if checked.staged:  # (its rest checked as it is made ready)
            later = functools.partial(_checked_later, operation, checked, unknown)
            sent = scheduler.submit(spec, operation.specs(items, unknown), later, ended)
        elif len(items) > _FIRST_PART and self._mutation_quota is None:
            first, rest = items[:_FIRST_PART], items[_FIRST_PART:]
            later = functools.partial(operation.specs, rest, unknown)
            sent = scheduler.submit(spec, operation.specs(first, unknown), later, ended)
        else:
            work = operation.specs(items, unknown)
            sent = scheduler.submit(spec, work, None, ended) if work else {}
            if not work and ended is not None:  # (nothing sent, nothing pending: every topic refused by the checks)
                ended()
        if not checked.refused:
            return sent  # nothing refused (most calls): the scheduler's own new dict, in the order of the call
        futures: dict[Any, Future[None]] = {}
        for key, item in checked:
            if isinstance(item, KafkaError):
                futures[key] = refused = TopicFuture(self._callbacks)
                refused.set_exception(NotSentError(item))
            else:
                futures[key] = sent[key]
        return futures

    def _unpaced(self) -> bool:
        """No mutation quota: the client does not pace (a bulk call goes in two parts, its objects held from the
        collector). False in a subclass that never called ``__init__``: its call is checked whole, then refused as
        closed, as confluent-kafka's."""
        return vars(self).get("_mutation_quota", 0) is None

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError(
                "ThrottledAdminClient cannot be used in a process forked from the one that created it "
                "(librdkafka's threads do not survive fork): create a new client in the child"
            )

    def _open_scheduler(self) -> Scheduler:
        """The scheduler, or confluent-kafka's RuntimeError once closed (or in a subclass that never called
        ``__init__``)."""
        scheduler: Scheduler | None = vars(self).get("_scheduler")
        if scheduler is None or self._closed or scheduler.closed:
            raise RuntimeError(CLOSED_MESSAGE)
        if os.getpid() != self._pid:  # looked at here first: a call fewer on every call
            self._check_process()
        return scheduler

    def poll(self, timeout: float = -1) -> int:
        """Serve librdkafka's callbacks for up to ``timeout`` seconds (-1: until one is served), as confluent-kafka's
        ``poll``; returns the number served. An exception raised by the ``error_cb``, ``stats_cb``,
        ``throttle_cb`` or ``logger`` from conf (which run on the client's user-code thread, whoever serves them) is
        raised here: the oldest not yet raised, one a call."""
        if not isinstance(timeout, (int, float)):  # confluent-kafka's checks, in its order
            raise TypeError(f"must be real number, not {type(timeout).__name__}")
        self._open_scheduler()
        errors = self._callback_errors
        errors.raise_first()
        end = None if timeout < 0 else time.monotonic() + timeout
        handed_before, served = errors.handed_total, 0
        while True:
            left = _POLL_SLICE_S if end is None else min(_POLL_SLICE_S, max(0.0, end - time.monotonic()))
            served += int(AdminClient.poll(self, left))
            # Only the client's own events (its librdkafka log tap, which bare confluent-kafka has not) do not end a
            # poll with time left: a conf callback served later in it would otherwise wait for the next poll.
            own_only = end is not None and errors.handed_total == handed_before
            if (served and not own_only) or (end is not None and time.monotonic() >= end):
                # The conf callbacks served so far (by this poll or by the scheduler's thread) run on the user-code
                # thread: wait for them, as a poll that runs them would whatever its timeout, so that what they
                # raise is raised here. Bounded, should one never return.
                errors.wait_handed_over(USER_CODE_WAIT_S)
                errors.raise_first()
                return served
            errors.raise_first()

    # -- metrics and lifecycle -------------------------------------------------------------------

    def metrics(self) -> dict[str, float]:
        """Throttle-time avg/max (ms; client-wide and ``node-<id>-``), ``throttle-time-last`` (ms: the newest throttled
        response's), ``quota-violation-total``, ``retry-total``, ``request-total``, ``throttled-response-total``
        (responses with a throttle above 0), ``mutations-sent-total``, ``mutations-admitted-total``,
        ``backoff-time-ms-total`` and ``mutation-rate`` (the configured or learned quota in mutations/s; NaN when
        unknown)."""
        if "_metrics" not in vars(self):
            raise RuntimeError(CLOSED_MESSAGE)
        out = self._metrics.snapshot()
        rate = self._scheduler.learned_rate if self._scheduler is not None else None
        out["mutation-rate"] = float("nan") if rate is None else float(rate)
        return out

    def _read_ahead(self, names: list[str]) -> None:
        """Every broker's ids of these names, read now for ``wait_for_metadata`` creates of them to come, which then
        need no read of their own before their send (``_engine/view_reads``). For ``provisioning``, which names its
        other creates while its first row is answered."""
        if self._scheduler is not None and names:
            self._scheduler.read_ahead(list(names))

    def _on_answer(self, listener: Callable[[], None]) -> Callable[[], None]:
        """``listener()`` whenever an answer moves the quota's metrics (``ClientMetrics.on_answer``: it must not
        block); returns what stops it. For ``provisioning``, which waits for a first answer."""
        return self._metrics.on_answer(listener)

    def wait_until_final(self, timeout: float) -> bool:
        """Wait until no mutation this client has handed over can still change the cluster, at most ``timeout``
        seconds; True once none can. A request whose answer was lost ("outcome unknown") may still be applied:
        until its answer has come after all (the client learns that from a request it sends behind it on the same
        connection), or, when its connection closed instead, until its controller deadline (``timeout_ms``,
        counted from when the broker read it) has passed, since a controller completes what it has begun. A read of
        the cluster after this returns True settles such an outcome. Calls made meanwhile are requests too."""
        return self._open_scheduler().wait_final(timeout)

    @property
    def closed(self) -> bool:
        return bool(vars(self).get("_closed", True))  # a subclass that never called __init__: closed

    def close(self) -> None:
        """Fail every topic still pending, and every future of an inherited method (describe_configs, ...) still
        pending, with KafkaError._DESTROY; stop the scheduler and release librdkafka's handle. Idempotent, and
        safe from any thread, a done-callback included. What a conf callback raised and no ``poll()`` raised is
        logged."""
        if "_close_lock" not in vars(self):
            return  # a subclass that never called __init__: nothing to close, as confluent-kafka's __exit__
        with self._close_lock:
            first = not self._closed
            self._closed = True
        if not first:
            # Another thread is closing: return when it is done, so every close() returns with nothing pending
            # (bounded: the closer never waits on user code for long).
            self._close_done.wait(_CLOSE_WAIT_S)
            return
        scheduler = self._scheduler
        try:
            if scheduler is not None and not scheduler.close():
                # Called from a frame that holds what the scheduler's thread needs (a signal handler that
                # interrupted a turn, a logging handler in one), or the driver's thread is held elsewhere past the
                # budget (the application's code in a turn): every future is settled already, and the rest (the
                # threads, librdkafka's handle) is done by a thread of ours once that frame lets go.
                self._close_elsewhere()
                return
        except Exception:
            self._close_done.set()
            raise
        except BaseException:  # cut short (Ctrl-C while it waits for the scheduler's thread): as ``_close_rest``
            self._close_elsewhere()
            raise
        self._close_rest()

    def _close_elsewhere(self) -> None:
        """The rest of the close, on a thread of ours (every step of it may be done again)."""
        threading.Thread(target=self._close_rest, name="throttled-admin-close", daemon=True).start()

    def _close_rest(self) -> None:
        """The close after the scheduler's: every step may be done again. Cut short on this thread (Ctrl-C in a
        join), a thread of ours does it all (once, a later close() returned at once and left the scheduler's
        thread running, futures pending and librdkafka's handle open)."""
        done = True
        try:
            deadline = time.monotonic() + USER_CODE_WAIT_S  # one budget for all user code still running
            failing = _fail_inherited(self._inherited)
            scheduler = self._scheduler
            if scheduler is not None:
                scheduler.close(USER_CODE_WAIT_S, last_turn_s=None)  # (on a thread of ours after a close that could not
                _live.discard(scheduler)  # wait: its turn may be held for long, librdkafka's handle outlives it)
            self._broker_views.close()
            self._direct.close()
            self._close_second_lane()
            self._metrics.close()
            with contextlib.suppress(Exception):
                AdminClient.poll(self, 0)  # the last of librdkafka's log lines, while they can still be printed
            self._user_code.close(deadline)
            self._exports.close(deadline)
            self._callback_errors.close()
            if failing is not None:
                failing.join(max(0.0, deadline - time.monotonic()))
            # destroys librdkafka's handle now, not at collection; after another thread's list_topics under way
            self._handle_calls.close(functools.partial(AdminClient.__exit__, self, None, None, None))
        except Exception:  # (a bug: done as far as it went)
            raise
        except BaseException:
            done = False
            self._close_elsewhere()
            raise
        finally:
            if done:
                self._close_done.set()

    def _first_probe(self, timeout_s: float) -> Future[Any] | None:
        """The contact probe this client sent as it started, for a first read that would send one of its own
        (``_driver.metadata_read``); None if none was sent within ``timeout_s``."""
        scheduler = self._scheduler
        return None if scheduler is None else scheduler.first_probe(timeout_s)

    def _contact_failure(self) -> ContactFailure | None:
        """While no broker has answered this client, how its last connection failed before its handshake, as the
        engine read it from librdkafka's error_cb and log lines (``_driver.metadata_read``: a read's watch sees
        only error_cb); None once a broker has answered, or if the client is closed."""
        scheduler = self._scheduler
        return None if scheduler is None else scheduler.contact_failure()

    def _second_lane_handle(self) -> AdminClient | None:
        """The second lane's librdkafka handle (``_engine/lanes``), made on first use; None if it cannot be made
        (or the client is closing)."""
        with self._second_lock:
            if self._second is None and not self._closed:
                try:
                    self._second = AdminClient(self._second_conf())
                except Exception as exc:  # the first handle was made with these settings: resources, most likely
                    log.warning("a second connection for bulk requests could not be made (%s)", type(exc).__name__)
            return self._second

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """confluent-kafka's, for every connection the client makes: its handle's, the second lane's (made or to be
        made) and ``wait_for_metadata``'s own; and an authentication failure the client holds (it fails what is
        submitted within ``AUTH_ERROR_TTL_S``, 5 s, of it) is forgotten: it was the old credentials'."""
        # as every inherited method (``_checked_in_child``): the fork check, and confluent-kafka's own error closed or
        # in a subclass that never called __init__
        _checked_in_child("set_sasl_credentials")(self, username, password)
        self._hider.also(password)
        with self._second_lock:
            self._second_credentials(username, password)
            if self._second is not None:
                self._second.set_sasl_credentials(username, password)
        self._broker_views.set_sasl_credentials(username, password)
        self._direct.retire()  # (its connections authenticated with the old ones; librdkafka's from now on)
        if self._scheduler is not None:
            self._scheduler.credentials_changed()

    def _poll_second_lane(self) -> None:
        with self._second_lock:  # never beside its destruction (a caller's turn may still run as close() ends)
            if self._second is not None:
                self._second.poll(0)

    def _close_second_lane(self) -> None:
        with self._second_lock:
            second, self._second = self._second, None
            if second is not None:
                second.__exit__(None, None, None)  # destroys its librdkafka handle now

    def __del__(self) -> None:
        """A client dropped without close() and freed by the garbage collector on one of librdkafka's own threads
        (a reference cycle, collected while librdkafka runs a future's callback): librdkafka aborts the process
        when its handle is destroyed there ("calling rd_kafka_destroy() from librdkafka owned thread is
        prohibited"), as it does for a bare AdminClient. The client is then closed by a thread of ours instead,
        which keeps it alive until its handle is destroyed. On any other thread it is freed where it was dropped."""
        if vars(self).get("_closed", True) or not isinstance(threading.current_thread(), threading._DummyThread):
            return
        with contextlib.suppress(RuntimeError):  # the interpreter is exiting: its exit hook closes every client
            threading.Thread(target=self.close, name="throttled-admin-close", daemon=True).start()

    def __enter__(self) -> ThrottledAdminClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """``close()``: safe from any thread, a done-callback included (confluent-kafka's own ``__exit__`` warns
        that it deadlocks in a callback)."""
        self.close()


def _checked_in_child(name: str) -> Callable[..., Any]:
    """An inherited method, unchanged but for the fork check (in a forked child librdkafka's handle is dead and
    its calls would time out or never resolve), its futures, which close() fails if still pending, and a close()
    meanwhile, which does not wait for a call blocked in librdkafka (``list_topics``: ``_driver/handle_calls``)."""
    inherited = getattr(AdminClient, name)
    blocking = name in _BLOCKING_CALLS

    @functools.wraps(inherited)
    def method(self: ThrottledAdminClient, *args: Any, **kwargs: Any) -> Any:
        futures: _InheritedFutures | None = vars(self).get("_inherited")
        calls: HandleCalls | None = vars(self).get("_handle_calls")
        if futures is None or calls is None:  # a subclass that never called __init__: confluent-kafka's own error
            return inherited(self, *args, **kwargs)
        self._check_process()
        if calls.closed:  # (the handle may outlive the close a while: a list_topics under way)
            return inherited(closed_twin(), *args, **kwargs)
        answer = calls.call(inherited, self, *args, **kwargs) if blocking else inherited(self, *args, **kwargs)
        return futures.chain(name, answer)

    return method


# The inherited calls that block in librdkafka's handle (confluent-kafka's own words for them once it is closed:
# "Handle has been closed")
_BLOCKING_CALLS = frozenset({"list_topics", "list_groups", "cluster_id"})


class ReadingClient(ThrottledAdminClient):
    """A client made to read, or to validate only (the CLI's --list and --describe, apply's reachability check, a
    dry run): it reads no controller quorum as it is made, which kafka-topics.sh never asks for, and which a Kafka
    broker forwards to the controller and its authorizer logs when it denies it (a principal without DESCRIBE on
    the cluster). Not for changes: one made through it reads the quorum only as its call comes, and its first
    request goes without a baseline ("already done" answered before that read ends is the broker's word,
    ``_driver/quorum_watch``)."""

    _quorum_at_making = False


# Set after the class body, so type checkers still see confluent-kafka's own signatures and stubs.
for _name in dir(AdminClient):
    if not _name.startswith("_") and callable(getattr(AdminClient, _name)) and _name not in vars(ThrottledAdminClient):
        setattr(ThrottledAdminClient, _name, _checked_in_child(_name))
