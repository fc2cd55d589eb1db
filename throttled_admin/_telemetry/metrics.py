"""Throttle-time metrics (KIP-124 style) and their OpenTelemetry export.

Kafka's NetworkClient records every response's throttle_time_ms, zeros included, into one sensor with
windowed Avg and Max; the Java admin client has none. ``ClientMetrics`` keeps such sensors client-wide and
per node, plus counters for violations, retries and local back-off, and exports them through the
OpenTelemetry *API* only (the application brings the SDK). Instruments are created once per meter
provider and shared by every client using it; attributes are bounded (no topic names) and hold no secrets.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from throttled_admin._driver.user_code import SerialRunner
from throttled_admin._telemetry.sensor import WindowedSensor
from throttled_admin._version import __version__

__all__ = ["NODE_ID_ATTRIBUTE", "ClientMetrics"]

log = logging.getLogger("throttled_admin")

NODE_ID_ATTRIBUTE = "throttled_admin.node.id"
# Kafka throttles run from milliseconds to minutes (a KIP-599 burst of 11 windows can mean tens of seconds).
_THROTTLE_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]
_DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
_UNEXPORTED_LIMIT = 100_000


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
        self.requests = meter.create_counter(
            "throttled_admin.requests", unit="{request}", description="Mutation requests sent to the cluster."
        )
        self.mutations = meter.create_counter(
            "throttled_admin.mutations",
            unit="{mutation}",
            description="KIP-599 mutations (partitions) sent in mutation requests, as far as known.",
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

    def _observe(self, stat: str) -> Iterator[Observation]:
        for client in list(self.clients):
            for value_ms, attributes in client.sensor_readings(stat):
                if not math.isnan(value_ms):
                    yield Observation(value_ms / 1000, attributes)

    def _observe_avg(self, options: CallbackOptions) -> Iterable[Observation]:
        return list(self._observe("avg"))

    def _observe_max(self, options: CallbackOptions) -> Iterable[Observation]:
        return list(self._observe("max"))


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


class ClientMetrics:
    """The metrics of one ThrottledAdminClient."""

    def __init__(
        self,
        *,
        client_id: str,
        meter_provider: MeterProvider | None = None,
        num_samples: int = 2,
        sample_window_ms: int = 30000,
        exporter: SerialRunner | None = None,
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
        self._backoff_s = 0.0
        self._export_failed = False
        # OpenTelemetry exports run on the serial user-code thread, never on the scheduler's: an exporter that is
        # slow or hung stalls nothing of the client's. Points follow the results by moments; metrics() is exact.
        self._exporter = exporter
        # Exports wait here until flush() hands them to the exporter's thread in one job per scheduler turn, not one
        # wake of that thread per event. Bounded: behind a hung exporter the oldest are dropped.
        self._unexported: deque[tuple[Any, float, dict[str, Any]]] = deque(maxlen=_UNEXPORTED_LIMIT)
        self._job_queued = False  # a job is queued that has not taken them yet
        self._base = {"messaging.system": "kafka", "messaging.client.id": client_id}
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

    def _attributes(self, operation: str | None = None, node_id: int | None = None) -> dict[str, Any]:
        attributes: dict[str, Any] = dict(self._base)
        if operation is not None:
            attributes["messaging.operation.name"] = operation
        if node_id is not None:
            attributes[NODE_ID_ATTRIBUTE] = node_id
        return attributes

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
            self._export(self._instruments.throttle.record, throttle_ms / 1000, self._attributes(node_id=node_id))

    def record_violations(self, operation: str, topics: int) -> None:
        """``topics`` refused by the quota: each refusal of a topic counts once (a topic refused three times
        before it succeeds counts three), whether the broker refused it (error 89) or the client did locally."""
        with self._lock:
            self._violations += topics
        self._export(self._instruments.violations.add, topics, self._attributes(operation))

    def record_retry(self, operation: str) -> None:
        with self._lock:
            self._retries += 1
        self._export(self._instruments.retries.add, 1, self._attributes(operation))

    def record_request(self, operation: str, topics: int, mutations: int) -> None:
        with self._lock:
            self._requests += 1
            self._mutations += mutations
        attributes = self._attributes(operation)
        self._export(self._instruments.requests.add, 1, attributes)
        self._export(self._instruments.mutations.add, mutations, attributes)

    def record_backoff(self, operation: str, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            self._backoff_s += seconds
        self._export(self._instruments.backoff.add, seconds, self._attributes(operation))

    def record_call(self, operation: str, seconds: float, error_type: str | None) -> None:
        attributes = self._attributes(operation)
        if error_type is not None:
            attributes["error.type"] = error_type
        self._export(self._instruments.duration.record, seconds, attributes)

    def _export(self, instrument: Any, value: float, attributes: dict[str, Any]) -> None:
        """An exporter or meter provider that fails or hangs must never change, delay or block an outcome."""
        if self._exporter is None:
            self._call_instrument(instrument, value, attributes)
            return
        with self._lock:
            self._unexported.append((instrument, value, attributes))

    def flush(self) -> None:
        """Hand what was recorded since the last flush to the exporter's thread, as one job. The scheduler calls it
        after settling a turn's futures: exporting then never competes with the callers it has just woken."""
        if self._exporter is None:
            return
        with self._lock:
            if not self._unexported or self._job_queued:
                return
            self._job_queued = True
        self._exporter.submit(self._export_queued)

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

    def sensor_readings(self, stat: str) -> list[tuple[float, dict[str, Any]]]:
        read = WindowedSensor.avg if stat == "avg" else WindowedSensor.max
        with self._lock:
            nodes = sorted(self._nodes.items())
        out = [(read(self._sensor), self._attributes())]
        out += [(read(sensor), self._attributes(node_id=node)) for node, sensor in nodes]
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
            out["backoff-time-ms-total"] = self._backoff_s * 1000
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
