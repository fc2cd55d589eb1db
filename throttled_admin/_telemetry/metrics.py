"""Throttle-time metrics (KIP-124 style) and their OpenTelemetry export.

Kafka's NetworkClient records every response's throttle_time_ms, zeros included, into one sensor with
windowed Avg and Max; the Java admin client has none. ``ClientMetrics`` keeps such sensors client-wide and
per node, plus counters for violations, retries and local back-off, and exports them through the
OpenTelemetry *API* only (the application brings the SDK). Instruments are created once per meter
provider and shared by every client using it; attributes are bounded (no topic names) and hold no secrets.

A client's series are told apart as OpenTelemetry's messaging conventions and Java's metric tags do: the
``client.id`` it sends (unchanged: it is part of the quota entity), the first bootstrap address
(``server.address``, ``server.port``), the cluster id its contact probe read (``messaging.kafka.cluster.id``, set
before anything is recorded so no series splits mid-run) and the caller's own ``metric_attributes``. Clients that
share every attribute are one quota entity and one series: counters add up (the SDK sums equal attribute sets)
and the throttle gauges combine their sensors (the max of maxes, the average over every response of all of them).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, NoOpCounter, NoOpHistogram, Observation

from throttled_admin._telemetry.sensor import SensorStats, WindowedSensor
from throttled_admin._version import __version__

__all__ = [
    "CLUSTER_ID_ATTRIBUTE",
    "EXPORT_WAIT_S",
    "NODE_ID_ATTRIBUTE",
    "ClientMetrics",
    "Exporter",
    "check_metric_attributes",
    "server_of",
]

log = logging.getLogger("throttled_admin")

NODE_ID_ATTRIBUTE = "throttled_admin.node.id"
CLUSTER_ID_ATTRIBUTE = "messaging.kafka.cluster.id"
# Set by the client itself: metric_attributes cannot replace them.
_OWN_ATTRIBUTES = frozenset(
    {
        "messaging.system",
        "messaging.client.id",
        "server.address",
        "server.port",
        CLUSTER_ID_ATTRIBUTE,
        "messaging.operation.name",
        "error.type",
        NODE_ID_ATTRIBUTE,
    }
)
_SCHEME = re.compile(r"^[A-Za-z_]+://")
# Kafka throttles run from milliseconds to minutes (a KIP-599 burst of 11 windows can mean tens of seconds).
_THROTTLE_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
_DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
_UNEXPORTED_LIMIT = 100_000
# How long a turn that settles futures waits for their points to be exported first (docs/metrics.md states it): a
# reader that looks right after result() sees them. An exporter that is still stuck past it is not waited for again
# until it has finished that job, so a hung exporter delays one turn's results by this much, once each time it hangs.
EXPORT_WAIT_S = 0.5
# How long the driver's thread waits for a job it has just handed over before it looks again later (``flush_pending``)
EXPORT_FIRST_LOOK_S = 0.005


class Exporter(Protocol):
    """Runs jobs in order on a thread of its own (the driver's ``SerialRunner``); a job's event is set once it ran
    or was dropped."""

    def submit(self, job: Callable[[], None]) -> threading.Event: ...


class _Instruments:
    """One set of instruments per meter provider; observable gauges read every live client."""

    def __init__(self, provider: MeterProvider | None):
        meter = metrics.get_meter("throttled_admin", __version__, provider)
        self.clients: weakref.WeakSet[ClientMetrics] = weakref.WeakSet()
        self.throttle = meter.create_histogram(
            "throttled_admin.throttle.duration",
            unit="s",
            description="Throttle time of each throttled broker response (throttle_time_ms).",
            explicit_bucket_boundaries_advisory=_THROTTLE_BUCKETS_S,
        )
        self.violations = meter.create_counter(
            "throttled_admin.quota.violations",
            unit="{violation}",
            description="Topics throttled by the controller mutation quota: error 89 or refused locally.",
        )
        self.retries = meter.create_counter(
            "throttled_admin.retries",
            unit="{retry}",
            description="Responses after which topics were queued again (quota violation or transient error).",
        )
        self.throttled = meter.create_counter(
            "throttled_admin.throttled_responses",
            unit="{response}",
            description="Broker responses with a throttle_time_ms above 0 (admitted and throttled, or refused).",
        )
        self.requests = meter.create_counter(
            "throttled_admin.requests", unit="{request}", description="Mutation requests sent to the cluster."
        )
        self.mutations = meter.create_counter(
            "throttled_admin.mutations",
            unit="{mutation}",
            description="KIP-599 mutations (partitions) sent in mutation requests, as far as known.",
        )
        self.admitted = meter.create_counter(
            "throttled_admin.mutations.admitted",
            unit="{mutation}",
            description="KIP-599 mutations (partitions) of the topics the broker applied, as far as known.",
        )
        self.backoff = meter.create_counter(
            "throttled_admin.backoff.time", unit="s", description="Time spent waiting locally for throttles to end."
        )
        self.duration = meter.create_histogram(
            "messaging.client.operation.duration",
            unit="s",
            description="Duration of each admin call, end to end including quota retries.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS_S,
        )
        meter.create_observable_gauge(
            "throttled_admin.throttle.time.avg",
            callbacks=[self._observe_avg],
            unit="s",
            description="Windowed average throttle time over every response (KIP-124 throttle-time-avg).",
        )
        meter.create_observable_gauge(
            "throttled_admin.throttle.time.max",
            callbacks=[self._observe_max],
            unit="s",
            description="Windowed maximum throttle time over every response (KIP-124 throttle-time-max).",
        )

    def _merged(self) -> list[tuple[SensorStats, dict[str, Any]]]:
        """Every live client's sensors, those with equal attributes combined: one quota entity is one series, and
        a gauge's points of equal attributes would otherwise overwrite each other (the last writer winning)."""
        merged: dict[tuple[tuple[str, Any], ...], tuple[SensorStats, dict[str, Any]]] = {}
        for client in list(self.clients):
            for stats, attributes in client.sensor_stats():
                key = tuple(sorted(attributes.items()))
                known = merged.get(key)
                merged[key] = (stats if known is None else known[0].merged(stats), attributes)
        return list(merged.values())

    def _observe_avg(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(stats.avg / 1000, attributes) for stats, attributes in self._merged()]

    def _observe_max(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(stats.max / 1000, attributes) for stats, attributes in self._merged()]


class _Slot:
    """The instruments of one meter provider, made by the first client that needed them."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.instruments: _Instruments | None = None
        self.error: BaseException | None = None


# Guards the registry only: never held while the meter provider (user code) runs, so a provider that hangs in
# get_meter or in making an instrument holds up the clients using that provider, never the others.
_registry_lock = threading.Lock()
_registry: weakref.WeakKeyDictionary[Any, _Slot] = weakref.WeakKeyDictionary()


def _instruments_for(provider: MeterProvider | None) -> _Instruments:
    key = provider if provider is not None else metrics.get_meter_provider()
    with _registry_lock:
        slot = _registry.get(key)
        making = slot is None
        if slot is None:
            slot = _registry[key] = _Slot()
    if not making:
        slot.ready.wait()  # another client is making this provider's instruments: the same provider, the same wait
        if slot.instruments is None:
            raise RuntimeError("the meter provider failed to create throttled_admin's instruments") from slot.error
        return slot.instruments
    try:
        slot.instruments = _Instruments(provider)
    except BaseException as exc:
        slot.error = exc
        with _registry_lock:  # not cached: the next client asks the provider again
            if _registry.get(key) is slot:
                del _registry[key]
        raise
    finally:
        slot.ready.set()
    return slot.instruments


def server_of(bootstrap_servers: str) -> tuple[str, int] | None:
    """The first bootstrap address as OpenTelemetry's ``server.address`` and ``server.port`` (librdkafka's default
    port 9092 when none is given; an IPv6 address without its brackets); None without one."""
    first = bootstrap_servers.split(",")[0].strip()
    first = _SCHEME.sub("", first)
    if not first:
        return None
    if first.startswith("["):
        host, _, rest = first[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif first.count(":") == 1:
        host, _, port = first.partition(":")
    else:  # a bare IPv6 address, or a host without a port
        host, port = first, ""
    try:
        return (host, int(port) if port else 9092) if host else None
    except ValueError:
        return None


def check_metric_attributes(attributes: Any) -> dict[str, str | bool | int | float]:
    """``metric_attributes`` as given to the client: a mapping of str keys (not the client's own attributes) to
    str, bool, int or float values. TypeError / ValueError name the setting."""
    if attributes is None:
        return {}
    if not isinstance(attributes, Mapping):
        raise TypeError(
            f"metric_attributes must be a mapping of str to str/bool/int/float, got {type(attributes).__name__}"
        )
    checked: dict[str, str | bool | int | float] = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"metric_attributes: keys must be non-empty str, got {key!r}")
        if key in _OWN_ATTRIBUTES:
            raise ValueError(f"metric_attributes: {key!r} is set by the client itself")
        if not isinstance(value, (str, bool, int, float)):
            raise TypeError(f"metric_attributes[{key!r}] must be a str, bool, int or float, got {type(value).__name__}")
        checked[key] = value
    return checked


class ClientMetrics:
    """The metrics of one ThrottledAdminClient. ``bootstrap_servers`` gives ``server.address`` and ``server.port``;
    ``attributes`` are added to every series (``metric_attributes``, checked by ``check_metric_attributes``)."""

    def __init__(
        self,
        *,
        client_id: str,
        bootstrap_servers: str = "",
        attributes: Mapping[str, str | bool | int | float] | None = None,
        meter_provider: MeterProvider | None = None,
        num_samples: int = 2,
        sample_window_ms: int = 30000,
        exporter: Exporter | None = None,
    ):
        self._num_samples = num_samples
        self._window_ms = sample_window_ms
        self._sensor = self._new_sensor()
        self._nodes: dict[int, WindowedSensor] = {}
        self._lock = threading.Lock()
        self._violations = 0
        self._retries = 0
        self._requests = 0
        self._mutations = 0
        self._admitted = 0
        self._backoff_s = 0.0
        self._throttled = 0
        self._last_throttle_ms = 0.0  # the newest response's throttle above 0
        self._heard: tuple[Callable[[], None], ...] = ()  # ``on_answer``'s listeners
        self._export_failed = False
        # OpenTelemetry exports run on a thread of their own, never on the scheduler's nor behind the conf callbacks:
        # an exporter that is slow or hung delays results by EXPORT_WAIT_S at most (flush), and stalls nothing else.
        self._exporter = exporter
        # Exports wait here until flush() hands them to the exporter's thread in one job per turn, not one wake of
        # that thread per event. Bounded: behind a hung exporter the oldest are dropped.
        self._unexported: deque[tuple[Any, float, dict[str, Any]]] = deque(maxlen=_UNEXPORTED_LIMIT)
        self._job_queued = False  # a job is queued that has not taken them yet
        self._job_done: threading.Event | None = None  # set once the last job handed over has run
        self._overran: threading.Event | None = None  # the job that outlasted EXPORT_WAIT_S, until it has run
        self._pending: tuple[threading.Event, float] | None = None  # the job ``flush_pending`` looks at, since when
        self._base: dict[str, Any] = {"messaging.system": "kafka", "messaging.client.id": client_id}
        server = server_of(bootstrap_servers)
        if server is not None:
            self._base["server.address"], self._base["server.port"] = server
        self._base.update(attributes or {})
        self._frozen = False  # set by the first recording: the attributes no longer change (identify)
        self._by_operation: dict[str | None, dict[str, Any]] = {}  # made once, after _frozen
        try:
            self._instruments = _instruments_for(meter_provider)
        except Exception:  # a broken meter provider must not break the client: metrics() still works
            log.exception("the meter provider failed to create throttled_admin's instruments; exporting nothing")
            self._instruments = _instruments_for(metrics.NoOpMeterProvider())
        self._instruments.clients.add(self)

    @staticmethod
    def _clock_ms() -> float:
        return time.monotonic() * 1000

    def _new_sensor(self) -> WindowedSensor:
        return WindowedSensor(self._clock_ms, num_samples=self._num_samples, sample_window_ms=self._window_ms)

    def identify(self, cluster_id: str | None) -> None:
        """The cluster's id, as the contact probe read it (``messaging.kafka.cluster.id``). Taken only while
        nothing has been recorded: a series never splits in the middle of a run."""
        if not cluster_id:
            return
        with self._lock:
            if not self._frozen:
                self._base[CLUSTER_ID_ATTRIBUTE] = cluster_id

    def _attributes(self, operation: str | None = None, node_id: int | None = None) -> dict[str, Any]:
        """The attributes of a point (shared, never changed once made: an operation's are made once)."""
        if node_id is None and (made := self._by_operation.get(operation)) is not None:
            return made
        if not self._frozen:
            with self._lock:
                self._frozen = True
        attributes: dict[str, Any] = dict(self._base)
        if operation is not None:
            attributes["messaging.operation.name"] = operation
        if node_id is not None:
            attributes[NODE_ID_ATTRIBUTE] = node_id
        else:
            self._by_operation[operation] = attributes
        return attributes

    def on_answer(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` whenever an answer is recorded that tells of the quota: mutations admitted, topics the
        quota refused, a positive throttle. It runs on the recording thread (a turn's) and must not block. Returns
        what stops it (the provisioning executor waits on an ``Event`` it sets, not by polling ``metrics()``)."""
        with self._lock:
            self._heard = (*self._heard, listener)

        def stop() -> None:
            with self._lock:
                self._heard = tuple(heard for heard in self._heard if heard is not listener)

        return stop

    def _tell(self) -> None:
        for listener in self._heard:
            try:
                listener()
            except Exception:  # (a listener's bug must not cut the recording short)
                log.exception("a throttled_admin answer listener failed")

    # -- recording -------------------------------------------------------------------------------

    def record_throttle(self, node_id: int | None, throttle_ms: float) -> None:
        """One response's throttle_time_ms (zeros included, as Kafka's NetworkClient records)."""
        self._sensor.record(throttle_ms)
        if node_id is not None:
            with self._lock:
                sensor = self._nodes.get(node_id)
                if sensor is None:
                    sensor = self._nodes[node_id] = self._new_sensor()
            sensor.record(throttle_ms)
        if throttle_ms > 0:
            with self._lock:
                self._throttled += 1
                self._last_throttle_ms = round(throttle_ms)  # (librdkafka's seconds, times 1000: 1000.9999...)
            attributes = self._attributes(node_id=node_id)
            self._export(self._instruments.throttle.record, throttle_ms / 1000, attributes)
            self._export(self._instruments.throttled.add, 1, attributes)
            self._tell()

    def record_violations(self, operation: str, topics: int) -> None:
        """``topics`` refused by the quota: each refusal of a topic counts once (a topic refused three times
        before it succeeds counts three), whether the broker refused it (error 89) or the client did locally."""
        with self._lock:
            self._violations += topics
        self._export(self._instruments.violations.add, topics, self._attributes(operation))
        self._tell()

    def record_retry(self, operation: str) -> None:
        with self._lock:
            self._retries += 1
        self._export(self._instruments.retries.add, 1, self._attributes(operation))

    def record_request(self, operation: str, topics: int, mutations: int) -> None:
        with self._lock:
            self._requests += 1
            self._mutations += mutations
        attributes = self._by_operation.get(operation) or self._attributes(operation)  # made once: every call
        self._export(self._instruments.requests.add, 1, attributes)
        self._export(self._instruments.mutations.add, mutations, attributes)

    def record_admitted(self, operation: str, mutations: int) -> None:
        """Mutations of topics the broker applied, counted when its answer comes (the progress of ``apply``)."""
        with self._lock:
            self._admitted += mutations
        attributes = self._by_operation.get(operation) or self._attributes(operation)
        self._export(self._instruments.admitted.add, mutations, attributes)
        self._tell()

    def record_backoff(self, operation: str, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            self._backoff_s += seconds
        self._export(self._instruments.backoff.add, seconds, self._attributes(operation))

    def record_call(self, operation: str, seconds: float, error_type: str | None) -> None:
        attributes = self._by_operation.get(operation) or self._attributes(operation)
        if error_type is not None:
            attributes = {**attributes, "error.type": error_type}
        self._export(self._instruments.duration.record, seconds, attributes)

    def _export(self, instrument: Any, value: float, attributes: dict[str, Any]) -> None:
        """An exporter or meter provider that fails or hangs must never change an outcome, nor delay it by more than
        ``EXPORT_WAIT_S``. The API's own instruments without an SDK (no-op, or the global proxy before an SDK is
        set) export nothing and cannot hang: not called at all (two calls fewer a point, issue 39)."""
        # Inert: a method (``add``, ``record``) of the global provider's proxy before an SDK is set (tested first: a
        # client made before any SDK records every point through it, and an ABC's isinstance is a Python-level call),
        # or of the API's own no-op instruments.
        target = getattr(instrument, "__self__", None)
        if target is not None and (getattr(target, "_real_instrument", True) is None or isinstance(target, _INERT)):
            return
        if self._exporter is not None:
            with self._lock:
                self._unexported.append((instrument, value, attributes))
            return
        self._call_instrument(instrument, value, attributes)

    def flush(self, wait: bool = False) -> None:
        """Hand what was recorded since the last flush to the exporter's thread, as one job; with ``wait`` (a turn
        about to settle futures), wait until it has run, ``EXPORT_WAIT_S`` at the most: the points of a call are
        exported before its futures resolve. An exporter still stuck in a job that outlasted the bound is not
        waited for again until that job has run."""
        if self._exporter is None:
            return
        with self._lock:  # turns flush one at a time; the exporter's thread takes this lock only to take its job
            if self._unexported and not self._job_queued:
                self._job_done = self._exporter.submit(self._export_queued)
                # The job takes this lock to run: its event set already means the runner dropped it (queue full, or
                # closed), and the next flush hands the points over again.
                self._job_queued = not self._job_done.is_set()
            done, overran = self._job_done, self._overran
        if not wait or done is None or (overran is not None and not overran.is_set()):
            return
        pending = self._pending  # the driver's thread looked at this job first: the bound counts from then
        waited_s = time.monotonic() - pending[1] if pending is not None and pending[0] is done else 0.0
        if not done.wait(max(0.0, EXPORT_WAIT_S - waited_s)):
            self._overrun(done)

    def flush_pending(self) -> bool:
        """``flush(wait=True)`` that never blocks, for the driver's thread, which serves every client (a stuck
        exporter held every other client's turns there): the points handed over as ``flush`` does, and True while
        their export has not run and ``EXPORT_WAIT_S`` has not passed since the first ask for it (the caller's turn
        then stops before its settlements and looks again soon)."""
        if self._exporter is None:
            return False
        self.flush(False)
        done, overran = self._job_done, self._overran
        if done is None or done.is_set() or (overran is not None and not overran.is_set()):
            self._pending = None
            return False
        now = time.monotonic()
        if self._pending is None or self._pending[0] is not done:  # a job just handed over: the exporter's thread
            self._pending = (done, now)  # takes it within a GIL switch, so it is waited for a moment once
            if done.wait(EXPORT_FIRST_LOOK_S):
                self._pending = None
                return False
        if now - self._pending[1] < EXPORT_WAIT_S:
            return True
        self._overrun(done)
        return False

    def _overrun(self, done: threading.Event) -> None:
        """The export ``done`` outlasted EXPORT_WAIT_S: not waited for again until it has run; logged once."""
        first, self._overran = self._overran is None, done
        if first:
            log.warning(
                "a throttled_admin metric export took over %.1f s; results no longer wait for exports until it "
                "ends (logged once; see docs/metrics.md)",
                EXPORT_WAIT_S,
            )

    def _export_queued(self) -> None:
        with self._lock:
            queued, self._unexported = self._unexported, deque(maxlen=_UNEXPORTED_LIMIT)
            self._job_queued = False
        for instrument, value, attributes in queued:
            self._call_instrument(instrument, value, attributes)

    def _call_instrument(self, instrument: Any, value: float, attributes: dict[str, Any]) -> None:
        try:
            instrument(value, attributes)
        except Exception:
            if not self._export_failed:
                self._export_failed = True
                log.exception("exporting a throttled_admin metric failed; later failures are not logged")

    # -- reading ---------------------------------------------------------------------------------

    def sensor_stats(self) -> list[tuple[SensorStats, dict[str, Any]]]:
        """The live events of the client-wide sensor and of each node's, with the attributes of their series;
        sensors with none are left out."""
        with self._lock:
            nodes = sorted(self._nodes.items())
        out = []
        for node, sensor in [(None, self._sensor), *nodes]:
            stats = sensor.stats()
            if stats.count:
                out.append((stats, self._attributes(node_id=node)))
        return out

    def snapshot(self) -> dict[str, float]:
        """Kafka-style names: throttle times in ms, counters as totals."""
        out = {"throttle-time-avg": self._sensor.avg(), "throttle-time-max": self._sensor.max()}
        with self._lock:
            nodes = sorted(self._nodes.items())
            out["quota-violation-total"] = float(self._violations)
            out["retry-total"] = float(self._retries)
            out["request-total"] = float(self._requests)
            out["mutations-sent-total"] = float(self._mutations)
            out["mutations-admitted-total"] = float(self._admitted)
            out["backoff-time-ms-total"] = self._backoff_s * 1000
            out["throttled-response-total"] = float(self._throttled)
            out["throttle-time-last"] = float(self._last_throttle_ms)
        for node, sensor in nodes:
            out[f"node-{node}-throttle-time-avg"] = sensor.avg()
            out[f"node-{node}-throttle-time-max"] = sensor.max()
        return out

    def close(self) -> None:
        """Stop reporting this client's gauges."""
        try:
            self._instruments.clients.discard(self)
        except Exception:
            log.exception("unregistering throttled_admin's gauges failed")


_INERT = (NoOpCounter, NoOpHistogram)
