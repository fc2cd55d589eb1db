"""What one topic's result from confluent-kafka means for the scheduler.

- ``SUCCESS``; ``FINAL``: the topic's own error, returned as it is;
- ``THROTTLED``: error 89 (KIP-599), re-sent after the broker's throttle when retry is on;
- ``NOT_APPLIED``: the broker refused before applying anything, and a retry may succeed (NOT_CONTROLLER,
  and REQUEST_TIMED_OUT from a KRaft controller whose deadline passed), re-sent like Java's AdminClient does;
- ``NOT_SENT``: librdkafka gave up before it built the request ("Failed while waiting for controller" or "...
  for broker": ``rd_kafka_admin_worker`` builds a request only once the controller is up, and a timed-out
  operation is freed, so it can never be sent later);
- ``UNKNOWN``: the request may or may not have been applied: the connection died after it was written, no
  response came ("Failed while waiting for response from broker"), or the response could not be read
  (``_BAD_MSG``: a garbled answer to a request the broker may have applied). Re-sent within the deadline, and
  a later "already exists" says so.
librdkafka marks KafkaError(89) non-retriable, so everything is classified by code, never by ``retriable()``.
"""

from __future__ import annotations

import enum

from confluent_kafka import KafkaError, KafkaException

__all__ = ["Outcome", "classify", "error_of", "is_broker_answer", "was_written"]


class Outcome(enum.Enum):
    SUCCESS = "success"
    FINAL = "final"
    THROTTLED = "throttled"
    NOT_APPLIED = "not applied"
    NOT_SENT = "not sent"
    UNKNOWN = "unknown"


_NOT_APPLIED = {KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT}
_UNKNOWN = {KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._MSG_TIMED_OUT, KafkaError._BAD_MSG}
# librdkafka's admin states before a request exists (rd_kafka_admin_state_desc): a timeout in them sent nothing
_BEFORE_A_REQUEST = ("waiting for controller", "waiting for broker")


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
    if code == KafkaError._TIMED_OUT and any(state in error.str() for state in _BEFORE_A_REQUEST):
        return Outcome.NOT_SENT
    if code in _UNKNOWN:
        return Outcome.UNKNOWN
    return Outcome.FINAL


def is_broker_answer(exc: BaseException | None) -> bool:
    """True when the result came from a broker's response (librdkafka's local errors are negative codes)."""
    error = error_of(exc)
    return exc is None or (error is not None and error.code() >= 0)


def was_written(exc: BaseException | None) -> bool:
    """True when librdkafka built and wrote the request (it had reached the controller): the connection was lost
    after the write, or the answer did not come in time ("Failed while waiting for response from broker")."""
    error = error_of(exc)
    if error is None:
        return False
    return error.code() == KafkaError._TRANSPORT or (
        error.code() == KafkaError._TIMED_OUT and "waiting for response" in error.str()
    )
