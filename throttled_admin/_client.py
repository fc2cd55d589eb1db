"""``ThrottledAdminClient``: confluent-kafka's AdminClient with Java AdminClient quota semantics."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from confluent_kafka.cimpl import NewPartitions, NewTopic
from opentelemetry.metrics import MeterProvider

from throttled_admin._call import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS, MutationCall, Operation
from throttled_admin._metrics import ClientMetrics
from throttled_admin._options import (
    CreatePartitionsOptions,
    CreateTopicsOptions,
    DeleteTopicsOptions,
    MutationOptions,
    merge_options,
)
from throttled_admin._runtime import AdminRuntime
from throttled_admin._validation import check_delete_topics, check_new_partitions, check_new_topics

__all__ = ["ThrottledAdminClient"]


class ThrottledAdminClient:
    """A drop-in for ``confluent_kafka.admin.AdminClient`` that survives controller mutation quotas.

    ``create_topics``, ``create_partitions`` and ``delete_topics`` return ``dict[str, Future]`` as
    confluent-kafka does, retry only the throttled topics within one deadline (KIP-599) and wait out the
    broker's throttle before sending again (KIP-219). Every other AdminClient method is delegated unchanged.
    """

    def __init__(
        self,
        conf: dict[str, Any],
        *,
        retry_on_quota_violation: bool = True,
        default_api_timeout_ms: int = 60000,
        meter_provider: MeterProvider | None = None,
        metrics_num_samples: int = 2,
        metrics_sample_window_ms: int = 30000,
    ) -> None:
        if not isinstance(conf, dict):
            raise TypeError(f"conf must be a dict of librdkafka settings, got {type(conf).__name__}")
        if not isinstance(retry_on_quota_violation, bool):
            raise TypeError(f"retry_on_quota_violation must be a bool, got {retry_on_quota_violation!r}")
        MutationOptions(timeout_ms=default_api_timeout_ms)  # the same check as a per-call timeout_ms
        self._bootstrap_servers = str(conf.get("bootstrap.servers", ""))
        self._client_id = str(conf.get("client.id", "rdkafka"))
        self.retry_on_quota_violation = retry_on_quota_violation
        self.default_api_timeout_ms = default_api_timeout_ms
        metrics = ClientMetrics(
            client_id=self._client_id,
            meter_provider=meter_provider,
            num_samples=metrics_num_samples,
            sample_window_ms=metrics_sample_window_ms,
        )
        self._runtime = AdminRuntime(conf, metrics)

    def __repr__(self) -> str:
        # Only non-secret settings: conf (sasl.password and the like) is never echoed.
        state = "closed" if self._runtime.closed else "open"
        return (
            f"ThrottledAdminClient(bootstrap.servers={self._bootstrap_servers!r}, "
            f"client.id={self._client_id!r}, retry_on_quota_violation={self.retry_on_quota_violation}, {state})"
        )

    # -- the three quota-aware calls -------------------------------------------------------------

    def create_topics(
        self, new_topics: Sequence[NewTopic], *, options: CreateTopicsOptions | None = None, **kwargs: Any
    ) -> dict[str, Future[None]]:
        """Create topics. kwargs: validate_only, request_timeout, operation_timeout (confluent-kafka's),
        retry_on_quota_violation, timeout_ms."""
        opts = merge_options(CreateTopicsOptions, options, kwargs)
        return self._submit(CREATE_TOPICS, check_new_topics(new_topics), opts)

    def create_partitions(
        self,
        new_partitions: Sequence[NewPartitions],
        *,
        options: CreatePartitionsOptions | None = None,
        **kwargs: Any,
    ) -> dict[str, Future[None]]:
        """Add partitions. kwargs as for create_topics."""
        opts = merge_options(CreatePartitionsOptions, options, kwargs)
        return self._submit(CREATE_PARTITIONS, check_new_partitions(new_partitions), opts)

    def delete_topics(
        self, topics: Sequence[str], *, options: DeleteTopicsOptions | None = None, **kwargs: Any
    ) -> dict[str, Future[None]]:
        """Delete topics. kwargs: request_timeout, operation_timeout, retry_on_quota_violation, timeout_ms."""
        opts = merge_options(DeleteTopicsOptions, options, kwargs)
        return self._submit(DELETE_TOPICS, check_delete_topics(topics), opts)

    def _submit(self, operation: Operation, items: list[Any], options: MutationOptions) -> dict[str, Future[None]]:
        retry = options.retry_on_quota_violation
        timeout_ms = options.timeout_ms
        call = MutationCall(
            self._runtime,
            operation,
            items,
            options,
            retry=self.retry_on_quota_violation if retry is None else retry,
            timeout_ms=self.default_api_timeout_ms if timeout_ms is None else timeout_ms,
        )
        self._runtime.submit(call)
        return dict(call.futures)

    # -- metrics and lifecycle -------------------------------------------------------------------

    def metrics(self) -> dict[str, float]:
        """Throttle-time avg/max (ms; client-wide and ``node-<id>-``), ``quota-violation-total``,
        ``retry-total`` and ``backoff-time-ms-total``."""
        return self._runtime.metrics.snapshot()

    @property
    def closed(self) -> bool:
        return self._runtime.closed

    def close(self) -> None:
        """Fail every call still in flight (KafkaError._DESTROY) and release the client's threads.
        Idempotent; nothing is left pending."""
        self._runtime.close()

    def __enter__(self) -> ThrottledAdminClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        # Every other confluent-kafka AdminClient method (describe_configs, list_topics, ...) unchanged.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._runtime.inner, name)
