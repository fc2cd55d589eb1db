"""Per-call options: small frozen value objects, as Java's ``CreateTopicsOptions`` and friends.

``retry_on_quota_violation`` and ``timeout_ms`` default to None, meaning the client's setting
(``retry_on_quota_violation``, ``default_api_timeout_ms``). The rest are confluent-kafka's own per-call
settings, in its units (float seconds). Change one by copying: ``dataclasses.replace(opts, timeout_ms=5000)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["CreatePartitionsOptions", "CreateTopicsOptions", "DeleteTopicsOptions", "MutationOptions"]


@dataclass(frozen=True)
class MutationOptions:
    retry_on_quota_violation: bool | None = None
    timeout_ms: int | None = None
    request_timeout: float | None = None
    operation_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.retry_on_quota_violation is not None and not isinstance(self.retry_on_quota_violation, bool):
            raise TypeError(f"retry_on_quota_violation must be a bool, got {self.retry_on_quota_violation!r}")
        if self.timeout_ms is not None and (
            isinstance(self.timeout_ms, bool) or not isinstance(self.timeout_ms, int) or self.timeout_ms <= 0
        ):
            raise ValueError(f"timeout_ms must be a positive int (milliseconds), got {self.timeout_ms!r}")
        for name in ("request_timeout", "operation_timeout"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ValueError(f"{name} must be a non-negative number of seconds, got {value!r}")

    def inner_kwargs(self, remaining_s: float) -> dict[str, Any]:
        """confluent-kafka's kwargs for one attempt: its request never outlives the call's deadline."""
        request_timeout = remaining_s if self.request_timeout is None else min(self.request_timeout, remaining_s)
        kwargs: dict[str, Any] = {"request_timeout": max(request_timeout, 0.001)}
        if self.operation_timeout is not None:
            kwargs["operation_timeout"] = min(self.operation_timeout, remaining_s)
        return kwargs


@dataclass(frozen=True)
class _ValidateOnlyOptions(MutationOptions):
    """The calls confluent-kafka lets validate without applying (DeleteTopics has no validate_only)."""

    validate_only: bool = False

    def inner_kwargs(self, remaining_s: float) -> dict[str, Any]:
        return {**super().inner_kwargs(remaining_s), "validate_only": self.validate_only}


@dataclass(frozen=True)
class CreateTopicsOptions(_ValidateOnlyOptions):
    pass


@dataclass(frozen=True)
class CreatePartitionsOptions(_ValidateOnlyOptions):
    pass


@dataclass(frozen=True)
class DeleteTopicsOptions(MutationOptions):
    pass


OptionsT = TypeVar("OptionsT", bound=MutationOptions)


def merge_options(options_type: type[OptionsT], options: OptionsT | None, kwargs: dict[str, Any]) -> OptionsT:
    """``options`` (or the defaults) with any keyword settings applied on top, by copying."""
    if options is None:
        options = options_type()
    elif not isinstance(options, options_type):
        raise TypeError(f"options must be {options_type.__name__}, got {type(options).__name__}")
    known = {f.name for f in dataclasses.fields(options_type)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {', '.join(unknown)}; {options_type.__name__} takes "
            f"{', '.join(sorted(known))}"
        )
    return dataclasses.replace(options, **kwargs) if kwargs else options
