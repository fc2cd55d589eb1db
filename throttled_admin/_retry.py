"""The KIP-599 quota retry policy, as data: a tenacity ``Retrying`` built per call.

- Retry only ``ThrottlingQuotaExceededException`` (the throttled subset of a call).
- Wait exactly the broker's throttle (``wait_exception``), never less than ``retry.backoff.ms``.
- Stop *before* a sleep would pass the call's deadline (``stop_before_delay``), and re-raise the original
  exception so the throttled topics fail with ThrottlingQuotaExceededException, as Java's do at the
  deadline, without first sleeping for nothing.
- With ``retry_on_quota_violation`` off: one attempt.
"""

from __future__ import annotations

from collections.abc import Callable

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
    wait_exception,
)

from throttled_admin._errors import ThrottlingQuotaExceededException

__all__ = ["quota_retry_policy"]


def quota_retry_policy(
    *,
    enabled: bool,
    budget_s: float,
    min_wait_s: float,
    sleep: Callable[[float], None],
    before_sleep: Callable[[RetryCallState], None] | None = None,
) -> Retrying:
    """``budget_s``: time left until the call's deadline when the policy starts."""

    def throttle_s(exc: BaseException) -> float:
        assert isinstance(exc, ThrottlingQuotaExceededException)
        return max(exc.throttle_time_ms / 1000, min_wait_s)

    return Retrying(
        retry=retry_if_exception_type(ThrottlingQuotaExceededException),
        wait=wait_exception(throttle_s),
        stop=stop_before_delay(budget_s) if enabled else stop_after_attempt(1),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
