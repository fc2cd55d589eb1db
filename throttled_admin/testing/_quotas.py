"""Client quotas as Kafka stores and enforces them: the controller mutation quota as
``ControllerMutationQuotaManager`` enforces it (KIP-599), the request quota as ``ClientRequestQuotaManager``
does (KIP-124), and the byte-rate quotas stored and described only (there is no data plane).

- Quotas are set on entities: a user, a client-id, or both, each specific or the default (``None``), with
  any of Kafka's four user/client-id keys, validated as ``ClientQuotaControlManager`` validates them.
- A request resolves, per quota key, to the most specific entity with that key configured, in Kafka's
  precedence order; the bucket or sensor it charges is keyed the way Kafka tags the quota sensor (so a
  default-user quota gives every principal its own bucket, shared by that principal's client-ids).
  Nothing configured means unbounded.
- Each request gets its own ``RequestQuota``: strict (new clients) rejects a topic once the bucket is
  negative *before* charging it, and reports a throttle only for a request with a rejected topic; permissive
  (old clients) always charges and reports a throttle once the bucket is in debt.
- A changed quota keeps the bucket (or sensor) and its state; as in Kafka, the next refill uses the new
  rate for the whole interval since the last update.
- Buckets live in the active controller (``ControllerApis`` enforces the quota; brokers forward), request sensors
  in each broker, all in the process's memory: a node that stops loses its own (:meth:`QuotaManager.forget_node`),
  and a controller failover (:attr:`QuotaManager.controller`) charges the new controller's buckets, fresh unless it
  had been the controller before without restarting (seen on Kafka 4.4.0: docs/testing-broker.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from throttled_admin._kafka.token_bucket import TokenBucket
from throttled_admin.testing._rate_sensor import RateSensor

__all__ = ["QUOTA_KEY", "QUOTA_KEYS", "QuotaEntity", "QuotaManager", "RequestQuota", "quota_value_error"]

QUOTA_KEY = "controller_mutation_rate"
REQUEST_PERCENTAGE = "request_percentage"
# Kafka's QuotaConfig user/client-id keys; the byte rates are LONG, the others DOUBLE.
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", REQUEST_PERCENTAGE, QUOTA_KEY)
_LONG_KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate"})
_LONG_MAX = 2**63 - 1
USER = "user"
CLIENT_ID = "client-id"


def quota_value_error(key: str, value: float) -> str | None:
    """Why ``value`` is not a valid quota for ``key``, or None, with Kafka 4.4's messages
    (``ClientQuotaControlManager.validateQuotaKeyValue``): the key, then a value that is not finite (NaN, either
    infinity, whatever the key's type), then <= 0, then a LONG key's size and fraction."""
    if key not in QUOTA_KEYS:
        return f"Invalid configuration key {key}"
    if not math.isfinite(value):
        return f"Quota {key} must be a finite number"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if key in _LONG_KEYS:
        if value > _LONG_MAX:
            return f"Proposed value for {key} is too large for a LONG."
        if abs(math.fmod(value, 1.0)) > 1e-6:
            return f"{key} cannot be a fractional value."
    return None


@dataclass(frozen=True)
class QuotaEntity:
    """A quota entity as kafka-configs.sh names it. For each part: ``None`` leaves it out,
    ``DEFAULT`` is the ``<default>`` entity, any other string a specific name."""

    user: str | None = None
    client_id: str | None = None

    DEFAULT = "<default>"

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a quota entity needs a user, a client-id or both")

    def components(self) -> list[tuple[str, str | None]]:
        """Wire form (DescribeClientQuotas/AlterClientQuotas): name None is the default entity."""
        out: list[tuple[str, str | None]] = []
        if self.user is not None:
            out.append((USER, None if self.user == self.DEFAULT else self.user))
        if self.client_id is not None:
            out.append((CLIENT_ID, None if self.client_id == self.DEFAULT else self.client_id))
        return out

    @classmethod
    def from_components(cls, components: Iterable[tuple[str, str | None]]) -> QuotaEntity:
        """The entity of an AlterClientQuotas entry; ValueError with ``ClientQuotaControlManager``'s message."""
        parts: dict[str, str] = {}
        for entity_type, name in components:
            if entity_type in parts:
                raise ValueError(f"Invalid client quota entity, duplicate entity entry {entity_type}")
            if entity_type not in (USER, CLIENT_ID):
                # Kafka also knows "ip" (connection_creation_rate), which QuotaBroker does not model.
                raise ValueError(f"Unhandled client quota entity type: {entity_type}")
            if name is not None and not name:
                raise ValueError(f"Empty {entity_type} not supported")
            parts[entity_type] = cls.DEFAULT if name is None else name
        if not parts:
            raise ValueError("Invalid empty client quota entity")
        return cls(user=parts.get(USER), client_id=parts.get(CLIENT_ID))


def _precedence(user: str, client_id: str) -> list[tuple[QuotaEntity, tuple[str, str]]]:
    """Kafka's eight levels, most specific first, each with the key of the bucket or sensor it charges."""
    d = QuotaEntity.DEFAULT
    both = (user, client_id)
    return [
        (QuotaEntity(user, client_id), both),
        (QuotaEntity(user, d), both),
        (QuotaEntity(user=user), (user, "")),
        (QuotaEntity(d, client_id), both),
        (QuotaEntity(d, d), both),
        (QuotaEntity(user=d), (user, "")),
        (QuotaEntity(client_id=client_id), ("", client_id)),
        (QuotaEntity(client_id=d), ("", client_id)),
    ]


class QuotaManager:
    """All quotas, buckets and request sensors of one cluster. Thread-safe: the broker's threads charge,
    tests read. ``window_num``/``window_size_s`` are the controller quota's (``controller.quota.window.*``),
    ``request_window_num``/``request_window_size_s`` the request quota's (``quota.window.*``)."""

    def __init__(
        self,
        *,
        window_num: int,
        window_size_s: float,
        clock: Callable[[], float] = time.monotonic,
        request_window_num: int = 11,
        request_window_size_s: float = 1.0,
    ):
        if request_window_num < 1 or request_window_size_s < 0.001:
            raise ValueError("request_window_num must be >= 1 and request_window_size_s >= 0.001")
        self.window_num = window_num
        self.window_size_s = window_size_s
        self.request_window_num = request_window_num
        self.request_window_ms = round(request_window_size_s * 1000)
        self.clock = clock
        self._quotas: dict[QuotaEntity, dict[str, float]] = {}
        self.controller = 0  # the node whose buckets are charged (the active controller)
        self._buckets_of: dict[int, dict[tuple[str, str], TokenBucket]] = {}  # node id -> its buckets
        self._sensors: dict[tuple[int, str, str], RateSensor] = {}  # request quotas are per broker (KIP-124)
        self.lock = threading.RLock()

    def set_quota(self, entity: QuotaEntity, rate: float | None, key: str = QUOTA_KEY) -> None:
        """Set (or with None remove) the quota ``key`` of ``entity``; ValueError with Kafka's message for an
        invalid key or value."""
        if rate is not None:
            if isinstance(rate, bool) or not isinstance(rate, (int, float)):
                raise ValueError(f"Quota {key} must be a number, got {rate!r}")
            error = quota_value_error(key, float(rate))
            if error:
                raise ValueError(error)
        elif key not in QUOTA_KEYS:
            raise ValueError(f"Invalid configuration key {key}")
        with self.lock:
            values = self._quotas.setdefault(entity, {})
            if rate is None:
                values.pop(key, None)
            else:
                values[key] = float(rate)
            if not values:
                del self._quotas[entity]

    @property
    def _buckets(self) -> dict[tuple[str, str], TokenBucket]:
        return self._buckets_of.setdefault(self.controller, {})

    def forget_node(self, node_id: int) -> None:
        """A node's process stopped: its controller buckets and its request sensors are gone (Kafka keeps them in
        memory only), so they start fresh, full, when it serves again."""
        with self.lock:
            self._buckets_of.pop(node_id, None)
            for key in [k for k in self._sensors if k[0] == node_id]:
                del self._sensors[key]

    def quotas(self, key: str = QUOTA_KEY) -> dict[QuotaEntity, float]:
        """Entity -> value of quota ``key``, for the entities that set it; ValueError for a key Kafka does not
        have (``set_quota``'s message), not an empty answer."""
        if key not in QUOTA_KEYS:
            raise ValueError(f"Invalid configuration key {key} (quota keys: {', '.join(QUOTA_KEYS)})")
        with self.lock:
            return {entity: values[key] for entity, values in self._quotas.items() if key in values}

    def entity_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        """Entity -> every quota it sets (DescribeClientQuotas)."""
        with self.lock:
            return {entity: dict(values) for entity, values in self._quotas.items()}

    def _resolve(self, user: str, client_id: str, key: str) -> tuple[float, tuple[str, str]] | None:
        for entity, sensor_key in _precedence(user, client_id):
            value = self._quotas.get(entity, {}).get(key)
            if value is not None:
                return value, sensor_key
        return None

    def bucket_for(self, user: str, client_id: str) -> TokenBucket | None:
        """The bucket a request of ``user`` / ``client_id`` charges, or None when unbounded."""
        with self.lock:
            resolved = self._resolve(user, client_id, QUOTA_KEY)
            if resolved is None:
                return None
            rate, key = resolved
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = TokenBucket(rate, self.window_num, self.window_size_s)
                self._buckets[key] = bucket
            elif bucket.rate != rate:
                # Kafka's TokenBucket reads the quota when it refills: a changed quota keeps the tokens, and
                # the next refill uses the new rate (and burst) for the whole interval since the last update.
                bucket.rate = rate
            return bucket

    def tokens(self, user: str, client_id: str) -> float | None:
        with self.lock:
            bucket = self.bucket_for(user, client_id)
            return None if bucket is None else bucket.measure(self.clock())

    def request_quota(self, user: str, client_id: str, *, strict: bool) -> RequestQuota:
        return RequestQuota(self, self.bucket_for(user, client_id), strict=strict)

    # -- the request quota (KIP-124) ---------------------------------------------------------------

    def _sensor_for(self, user: str, client_id: str, node_id: int) -> RateSensor | None:
        resolved = self._resolve(user, client_id, REQUEST_PERCENTAGE)
        if resolved is None:
            return None
        bound, (sensor_user, sensor_client) = resolved
        key = (node_id, sensor_user, sensor_client)
        sensor = self._sensors.get(key)
        if sensor is None:
            sensor = RateSensor(bound, samples=self.request_window_num, window_ms=self.request_window_ms)
            self._sensors[key] = sensor
        sensor.bound = bound  # Kafka updates the metric's quota in place and keeps its samples
        return sensor

    def record_request_time(
        self, user: str, client_id: str, time_ms: float, *, node_id: int = 0, check_quota: bool = True
    ) -> int:
        """Record request time (handler or network thread) for ``user``/``client_id`` on broker ``node_id``
        and return the request throttle in ms: ``ClientRequestQuotaManager.maybeRecordAndGetThrottleTimeMs``
        (``check_quota``) and ``recordNoThrottle``. The value recorded is Kafka's percentage-seconds (100 x
        seconds). Each broker has its own request quota sensors, as in Kafka."""
        with self.lock:
            sensor = self._sensor_for(user, client_id, node_id)
            if sensor is None:
                return 0
            now_ms = int(self.clock() * 1000)
            return sensor.record(time_ms / 10.0, now_ms, check_quota=check_quota)

    def request_rate(self, user: str, client_id: str, node_id: int = 0) -> float | None:
        """The measured request-time percentage of ``user``/``client_id`` on broker ``node_id``, None without
        a request quota."""
        with self.lock:
            sensor = self._sensor_for(user, client_id, node_id)
            return None if sensor is None else sensor.measure(int(self.clock() * 1000))


class RequestQuota:
    """The quota of one request (Kafka creates one per request, so its throttle starts at zero)."""

    def __init__(self, manager: QuotaManager, bucket: TokenBucket | None, *, strict: bool):
        self._manager = manager
        self._bucket = bucket
        self.strict = strict
        self._last_throttle_ms = 0
        self._last_throttle_at_s = 0.0

    def record(self, mutations: int) -> bool:
        """Charge one topic's mutations; False when a strict quota rejects it (error 89).

        A throttle is noted as Kafka's ``ControllerMutationQuota`` notes it: a strict quota checks the bucket
        before recording and records without a check, so only a refused topic sets a throttle (a request whose
        topics were all admitted answers 0 however deep the debt, and its connection is not muted); a
        permissive quota records with a check, so a topic that leaves the bucket in debt sets one."""
        if self._bucket is None:
            return True
        with self._manager.lock:
            now = self._manager.clock()
            if self.strict and self._bucket.violated(now):
                self._note_throttle(now)
                return False
            self._bucket.record(mutations, now)
            if not self.strict and self._bucket.violated(now):
                self._note_throttle(now)
            return True

    def _note_throttle(self, now: float) -> None:
        assert self._bucket is not None
        self._last_throttle_ms = self._bucket.throttle_time_ms(now)
        self._last_throttle_at_s = now

    def throttle_time_ms(self) -> int:
        """max(0, last throttle - time since it was computed), as Kafka reports it."""
        if self._last_throttle_ms == 0:
            return 0
        elapsed_ms = (self._manager.clock() - self._last_throttle_at_s) * 1000
        return max(0, int(self._last_throttle_ms - elapsed_ms))
