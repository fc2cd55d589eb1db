"""Controller mutation quotas as Kafka's ``ControllerMutationQuotaManager`` enforces them (KIP-599).

- Quotas are set on entities: a user, a client-id, or both, each specific or the default (``None``).
- A request resolves to the most specific configured entity in Kafka's precedence order; the bucket it
  charges is keyed the way Kafka tags the quota sensor (so a default-user quota gives every principal its
  own bucket, shared by that principal's client-ids). Nothing configured means unbounded.
- Each request gets its own ``RequestQuota``: strict (new clients) rejects a topic once the bucket is
  negative *before* charging it; permissive (old clients) always charges and only reports a throttle.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from throttled_admin._token_bucket import TokenBucket

__all__ = ["QUOTA_KEY", "QuotaEntity", "QuotaManager", "RequestQuota"]

QUOTA_KEY = "controller_mutation_rate"
USER = "user"
CLIENT_ID = "client-id"


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
        parts: dict[str, str] = {}
        for entity_type, name in components:
            if entity_type not in (USER, CLIENT_ID) or entity_type in parts:
                raise ValueError(f"unsupported or repeated quota entity type {entity_type!r}")
            parts[entity_type] = cls.DEFAULT if name is None else name
        return cls(user=parts.get(USER), client_id=parts.get(CLIENT_ID))


def _precedence(user: str, client_id: str) -> list[tuple[QuotaEntity, tuple[str, str]]]:
    """Kafka's eight levels, most specific first, each with the bucket key it charges."""
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
    """All buckets of one cluster. Thread-safe: the broker thread charges, tests read."""

    def __init__(self, *, window_num: int, window_size_s: float, clock: Callable[[], float] = time.monotonic):
        self.window_num = window_num
        self.window_size_s = window_size_s
        self.clock = clock
        self._rates: dict[QuotaEntity, float] = {}
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self.lock = threading.RLock()

    def set_quota(self, entity: QuotaEntity, rate: float | None) -> None:
        """Set (or with None remove) the controller mutation rate of ``entity``."""
        if rate is not None and rate <= 0:
            raise ValueError(f"{QUOTA_KEY} must be > 0, got {rate!r}")
        with self.lock:
            if rate is None:
                self._rates.pop(entity, None)
            else:
                self._rates[entity] = float(rate)

    def quotas(self) -> dict[QuotaEntity, float]:
        with self.lock:
            return dict(self._rates)

    def bucket_for(self, user: str, client_id: str) -> TokenBucket | None:
        """The bucket a request of ``user`` / ``client_id`` charges, or None when unbounded."""
        with self.lock:
            for entity, key in _precedence(user, client_id):
                rate = self._rates.get(entity)
                if rate is None:
                    continue
                bucket = self._buckets.get(key)
                if bucket is None:
                    bucket = TokenBucket(rate, self.window_num, self.window_size_s)
                    self._buckets[key] = bucket
                elif bucket.rate != rate:
                    # A changed quota keeps the sensor and its tokens; the new bound applies from now.
                    bucket.measure(self.clock())
                    bucket.rate = rate
                    bucket.tokens = min(bucket.tokens, bucket.burst)
                return bucket
            return None

    def tokens(self, user: str, client_id: str) -> float | None:
        with self.lock:
            bucket = self.bucket_for(user, client_id)
            return None if bucket is None else bucket.measure(self.clock())

    def request_quota(self, user: str, client_id: str, *, strict: bool) -> RequestQuota:
        return RequestQuota(self, self.bucket_for(user, client_id), strict=strict)


class RequestQuota:
    """The quota of one request (Kafka creates one per request, so its throttle starts at zero)."""

    def __init__(self, manager: QuotaManager, bucket: TokenBucket | None, *, strict: bool):
        self._manager = manager
        self._bucket = bucket
        self.strict = strict
        self._last_throttle_ms = 0
        self._last_throttle_at_s = 0.0

    def record(self, mutations: int) -> bool:
        """Charge one topic's mutations; False when a strict quota rejects it (error 89)."""
        if self._bucket is None:
            return True
        with self._manager.lock:
            now = self._manager.clock()
            if self.strict and self._bucket.violated(now):
                self._note_throttle(now)
                return False
            self._bucket.record(mutations, now)
            if self._bucket.violated(now):
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
