"""The partition-mutation quota as Redpanda enforces it (``enforcement="redpanda"``).

Read in Redpanda's source (redpanda-data/redpanda at 1c6cff34, December 2024):

- ``kafka/server/quota_manager.cc`` ``record_partition_mutations``: one ``atomic_token_bucket`` per quota key,
  rate R and limit R (a burst of one second, whatever Kafka's ``controller.quota.window.*`` say), starting full.
  For each topic it refills, takes the delay needed to clear the deficit *before* this topic
  (``update_and_calculate_delay(now, 0)``: deficit / R, truncated to ms), and then records the topic's
  mutations **whatever that delay**: a refused topic is charged too. The delay is capped at
  ``max_kafka_throttle_delay_ms`` (30 s).
- ``handlers/create_topics.cc``, ``create_partitions.cc`` and ``server.cc`` (DeleteTopics): a topic whose delay
  is non-zero is refused and nothing is applied for it; its error is THROTTLING_QUOTA_EXCEEDED (89) for
  CreateTopics >= v6, DeleteTopics >= v5, CreatePartitions >= v3 and UNKNOWN_SERVER_ERROR (-1) below, always
  with the message "Too many partition mutations requested". The response's ``throttle_time_ms`` is the
  largest delay of its topics.
- ``connection_context.cc``: only the produce, fetch and shard-wide throughput quotas delay a connection; the
  partition-mutation delay reaches the response and nothing else, so the connection is not muted.
- validate_only requests return before the quota: not charged. DeleteTopics charges an unknown topic 0 (its
  quota check still refuses it while there is a deficit).
"""

from __future__ import annotations

from kafka import errors as kerr

from throttled_admin._kafka.refusals import REDPANDA_QUOTA_MESSAGE
from throttled_admin._kafka.token_bucket import TokenBucket
from throttled_admin.testing._cluster import ApiError
from throttled_admin.testing._quotas import QuotaManager, RequestQuota

__all__ = ["MAX_THROTTLE_MS", "RedpandaQuota", "redpanda_error"]

MAX_THROTTLE_MS = 30_000  # Redpanda's max_kafka_throttle_delay_ms default
_UNKNOWN_SERVER_ERROR = int(kerr.UnknownError.errno)  # -1
_THROTTLING_QUOTA_EXCEEDED = int(kerr.ThrottlingQuotaExceededError.errno)  # 89


def redpanda_error(api_version: int, error_89_since: int) -> ApiError:
    """A refused topic's error: 89 from ``error_89_since`` on, UNKNOWN_SERVER_ERROR (-1) below."""
    code = _THROTTLING_QUOTA_EXCEEDED if api_version >= error_89_since else _UNKNOWN_SERVER_ERROR
    return ApiError(code, REDPANDA_QUOTA_MESSAGE)


class RedpandaQuota(RequestQuota):
    """One request's quota under Redpanda's rules (see the module doc). ``bucket`` is the entity's Redpanda
    bucket (burst = one second of the rate), None when no quota applies."""

    def __init__(self, manager: QuotaManager, bucket: TokenBucket | None):
        super().__init__(manager, bucket, strict=True)
        self._delay_ms = 0
        self.refused_mutations = 0  # what the refused topics were charged (the request log counts it)

    def record(self, mutations: int) -> bool:
        """Charge the topic (always) and say whether it is admitted: only when there was no deficit before it."""
        bucket = self._bucket
        if bucket is None:
            return True
        with self._manager.lock:
            now = self._manager.clock()
            tokens = bucket.measure(now)
            # atomic_token_bucket.delay_for: duration_for(deficiency) = deficit / R seconds, cast down to ms.
            # A topic is admitted when that delay is 0 ms (``delay == 0ms``), charged either way.
            # (Redpanda counts whole tokens; the 1e-6 keeps float refills from turning 980 ms into 979.)
            delay_ms = int(-tokens / bucket.rate * 1000 + 1e-6) if tokens < 0 else 0
            bucket.record(mutations, now)
            self._delay_ms = max(self._delay_ms, min(MAX_THROTTLE_MS, delay_ms))
            if delay_ms:
                self.refused_mutations += mutations
            return delay_ms == 0

    def throttle_time_ms(self) -> int:
        """The largest delay of the request's topics, as Redpanda reports it (not decayed)."""
        return self._delay_ms
