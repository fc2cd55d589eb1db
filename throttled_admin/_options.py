"""Per-call options: small frozen value objects, as Java's ``CreateTopicsOptions`` and friends.

``retry_on_quota_violation`` and ``timeout_ms`` default to None, meaning the client's setting
(``retry_on_quota_violation``, ``default_api_timeout_ms``). ``wait_for_metadata`` (kafka-python 3's name, default
False as confluent-kafka): a topic's future resolves only once every broker's Metadata shows the change, within
the same deadline (docs/semantics.md). The rest are confluent-kafka's own per-call settings, in its units (float
seconds): given, they cap what the scheduler sets for each request.
Change one by copying: ``dataclasses.replace(opts, timeout_ms=5000)``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["CreatePartitionsOptions", "CreateTopicsOptions", "DeleteTopicsOptions", "MutationOptions"]


@dataclass(frozen=True)
class MutationOptions:
    retry_on_quota_violation: bool | None = None
    timeout_ms: int | None = None
    request_timeout: float | None = None
    operation_timeout: float | None = None
    wait_for_metadata: bool = False

    def __post_init__(self) -> None:
        if self.retry_on_quota_violation is not None and not isinstance(self.retry_on_quota_violation, bool):
            raise TypeError(f"retry_on_quota_violation must be a bool, got {self.retry_on_quota_violation!r}")
        if not isinstance(self.wait_for_metadata, bool):
            raise TypeError(f"wait_for_metadata must be a bool, got {self.wait_for_metadata!r}")
        if self.timeout_ms is not None and (
            isinstance(self.timeout_ms, bool) or not isinstance(self.timeout_ms, int) or self.timeout_ms <= 0
        ):
            raise ValueError(f"timeout_ms must be a positive int (milliseconds), got {self.timeout_ms!r}")
        for name in ("request_timeout", "operation_timeout"):
            value = getattr(self, name)
            if name == "operation_timeout" and value is not None and value == 0:
                # confluent-kafka accepts 0 ("do not wait"), but a Kafka 4 controller would time out a request with
                # timeout_ms 0 at once, applying nothing: the scheduler treats it as no cap of the caller's.
                continue
            # confluent-kafka refuses these at call time (not a number: TypeError; NaN, negative: ValueError);
            # checked here first, so the call fails before anything is sent instead of every topic failing later.
            # Values above librdkafka's per-request limit of 3600 s are fine: they cap the call, and each request
            # is capped at the limit.
            if value is None:
                continue
            if not isinstance(value, (int, float)):  # a bool is a number to confluent-kafka too
                raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}: {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")


@dataclass(frozen=True)
class _ValidateOnlyOptions(MutationOptions):
    """The calls confluent-kafka lets validate without applying (DeleteTopics has no validate_only)."""

    validate_only: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.validate_only, bool):
            raise TypeError(f"validate_only must be a bool, got {self.validate_only!r}")
        if self.validate_only and self.wait_for_metadata:  # as kafka-python 3: nothing is applied to wait for
            raise ValueError("validate_only and wait_for_metadata are mutually exclusive")


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
        if not kwargs:  # the common call: the defaults, made once per type (frozen, so shared)
            return _default(options_type)
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


_DEFAULTS: dict[type[MutationOptions], MutationOptions] = {}


def _default(options_type: type[OptionsT]) -> OptionsT:
    made = _DEFAULTS.get(options_type)
    if made is None:
        made = _DEFAULTS[options_type] = options_type()
    assert isinstance(made, options_type)
    return made
