"""What one topic's result from confluent-kafka means for the scheduler.

- ``SUCCESS``; ``FINAL``: the topic's own error, returned as it is;
- ``THROTTLED``: error 89 (KIP-599), re-sent after the broker's throttle when retry is on; and Redpanda's form of
  it for the request versions librdkafka sends (``create_topics.cc``, ``delete_topics.cc``,
  ``create_partitions.cc``): UNKNOWN_SERVER_ERROR (-1) with the message "Too many partition mutations requested",
  the topic not applied. DeleteTopics v4 has no field for the message, so there a -1 without one counts only when
  its response carried a throttle; every other -1 is final;
- ``TOO_LARGE``: POLICY_VIOLATION with one of the messages of a KRaft controller's batch cap (``batch_cap``):
  the engine splits the request when it was refused whole; any other POLICY_VIOLATION is final;
- ``NOT_APPLIED``: the broker refused, as a rule before applying anything, and a retry may succeed (NOT_CONTROLLER,
  and REQUEST_TIMED_OUT from a KRaft controller whose deadline passed), re-sent like Java's AdminClient does; a
  resigning controller refuses so what it wrote, which the next may commit (``lifecycle.Past.failover``);
- ``NOT_SENT``: librdkafka gave up before it built the request ("Failed while waiting for controller" or "...
  for broker": ``rd_kafka_admin_worker`` builds a request only once the controller is up, and a timed-out
  operation is freed, so it can never be sent later);
- ``UNKNOWN``: the request may or may not have been applied: the connection died after it was written
  (``_TRANSPORT``; ``_DESTROY_BROKER`` before librdkafka 2.16, for a request in flight on a broker that went away), no
  response came ("Failed while waiting for response from broker"), or the response could not be read
  (``_BAD_MSG``: a garbled answer to a request the broker may have applied). Re-sent within the deadline, and
  a later "already exists" says so.
librdkafka marks KafkaError(89) non-retriable, so everything is classified by code, never by ``retriable()``.
"""

from __future__ import annotations

import enum

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._engine.batch_cap import is_batch_cap
from throttled_admin._kafka.refusals import REDPANDA_QUOTA_MESSAGE

__all__ = [
    "REDPANDA_QUOTA_MESSAGE",
    "Outcome",
    "classify",
    "connection_lost",
    "error_of",
    "is_broker_answer",
    "was_written",
]


class Outcome(enum.Enum):
    SUCCESS = "success"
    FINAL = "final"
    THROTTLED = "throttled"
    TOO_LARGE = "too large"
    NOT_APPLIED = "not applied"
    NOT_SENT = "not sent"
    UNKNOWN = "unknown"

    __hash__ = object.__hash__  # members are singletons: Enum's own hash is a Python call (every answer hashes one)


# NOT_APPLIED's codes: refusals, re-sent; a controller failing over may give either after it applied the change
# (``lifecycle.Past.failover``: the change's outcome is then unknown)
_NOT_APPLIED_CODES = frozenset({KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT})
# A request in flight on a broker that goes away fails _TRANSPORT in librdkafka 2.16, _DESTROY_BROKER before
# (confluent-kafka>=2.6 allows those): either way it may have been applied.
_CONNECTION_LOST = {KafkaError._TRANSPORT, KafkaError._DESTROY_BROKER}
_UNKNOWN = {KafkaError._TIMED_OUT, KafkaError._MSG_TIMED_OUT, KafkaError._BAD_MSG, *_CONNECTION_LOST}
# librdkafka's own errors are RD_KAFKA_RESP_ERR__BEGIN (-200) < code < RD_KAFKA_RESP_ERR__END (-100); -1 is the
# broker's UNKNOWN_SERVER_ERROR
_LOCAL_ERRORS = range(-199, -100)
# librdkafka's admin states before a request exists (rd_kafka_admin_state_desc): a timeout in them sent nothing
_BEFORE_A_REQUEST = ("waiting for controller", "waiting for broker")


def error_of(exc: BaseException | None) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def classify(exc: BaseException | None, *, operation: str = "", throttled: bool = False) -> Outcome:
    """``operation``: the Kafka API the result is for; ``throttled``: its response carried a throttle."""
    if exc is None:
        return Outcome.SUCCESS
    error = error_of(exc)
    if error is None:
        return Outcome.FINAL
    code = error.code()
    if code == KafkaError.THROTTLING_QUOTA_EXCEEDED:
        return Outcome.THROTTLED
    if code == KafkaError.UNKNOWN and _redpanda_quota(error, operation, throttled):
        return Outcome.THROTTLED
    if code == KafkaError.POLICY_VIOLATION and is_batch_cap(error):
        return Outcome.TOO_LARGE
    if code in _NOT_APPLIED_CODES:
        return Outcome.NOT_APPLIED
    if code == KafkaError._TIMED_OUT and any(state in error.str() for state in _BEFORE_A_REQUEST):
        return Outcome.NOT_SENT
    if code in _UNKNOWN:
        return Outcome.UNKNOWN
    return Outcome.FINAL


def _redpanda_quota(error: KafkaError, operation: str, throttled: bool) -> bool:
    if error.str() == REDPANDA_QUOTA_MESSAGE:
        return True
    # DeleteTopics < v5 carries no error message: librdkafka's own text stands in, and only the response's
    # throttle tells Redpanda's quota refusal from any other -1.
    return operation == "DeleteTopics" and throttled and error.str() == KafkaError(KafkaError.UNKNOWN).str()


def is_broker_answer(exc: BaseException | None) -> bool:
    """True when the result came from a broker's response, not from librdkafka itself."""
    if exc is None:  # applied: most results
        return True
    error = error_of(exc)
    return error is not None and error.code() not in _LOCAL_ERRORS


def was_written(exc: BaseException | None) -> bool:
    """True when librdkafka built and wrote the request (it had reached the controller): the connection was lost
    after the write, or the answer did not come in time ("Failed while waiting for response from broker")."""
    error = error_of(exc)
    if error is None:
        return False
    return error.code() in _CONNECTION_LOST or (
        error.code() == KafkaError._TIMED_OUT and "waiting for response" in error.str()
    )


def connection_lost(exc: BaseException | None) -> bool:
    """True when the request's connection died under it (the broker went away): written, and its connection gone
    (``_TRANSPORT``, or ``_DESTROY_BROKER`` from librdkafka before 2.16)."""
    error = error_of(exc)
    return error is not None and error.code() in _CONNECTION_LOST
