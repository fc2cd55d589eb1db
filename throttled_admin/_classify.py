"""What one topic's result from confluent-kafka means for the scheduler.

- ``SUCCESS``; ``FINAL``: the topic's own error, returned as it is;
- ``THROTTLED``: error 89 (KIP-599), re-sent after the broker's throttle when retry is on;
- ``NOT_APPLIED``: the broker refused before applying anything, and a retry may succeed (NOT_CONTROLLER,
  and REQUEST_TIMED_OUT from a KRaft controller whose deadline passed), re-sent like Java's AdminClient does;
- ``UNKNOWN``: the request may or may not have been applied (the connection died after it was written, or
  no response came): re-sent within the deadline, and a later "already exists" says so. librdkafka's timeout
  ("Failed while waiting for controller") is one of them whether or not the request was written: it says the
  same for a request the controller applied and answered too late.
librdkafka marks KafkaError(89) non-retriable, so everything is classified by code, never by ``retriable()``.
"""

from __future__ import annotations

import enum

from confluent_kafka import KafkaError, KafkaException

__all__ = ["Outcome", "classify", "error_of"]


class Outcome(enum.Enum):
    SUCCESS = "success"
    FINAL = "final"
    THROTTLED = "throttled"
    NOT_APPLIED = "not applied"
    UNKNOWN = "unknown"


_NOT_APPLIED = {KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT}
_UNKNOWN = {KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._MSG_TIMED_OUT}


def error_of(exc: BaseException | None) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def classify(exc: BaseException | None) -> Outcome:
    if exc is None:
        return Outcome.SUCCESS
    error = error_of(exc)
    if error is None:
        return Outcome.FINAL
    code = error.code()
    if code == KafkaError.THROTTLING_QUOTA_EXCEEDED:
        return Outcome.THROTTLED
    if code in _NOT_APPLIED:
        return Outcome.NOT_APPLIED
    if code in _UNKNOWN:
        return Outcome.UNKNOWN
    return Outcome.FINAL
