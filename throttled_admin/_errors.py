"""Exceptions raised by throttled_admin.

Hierarchy::

    confluent_kafka.KafkaException
    └── ThrottlingQuotaExceededException   args[0]: KafkaError(THROTTLING_QUOTA_EXCEEDED, retriable)

Other per-topic failures are confluent-kafka's own ``KafkaException(KafkaError)``:
- the broker's error unchanged; after an earlier attempt whose outcome was unknown, the "already done" answer
  (TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PART, INVALID_PARTITIONS) keeps its code and says so;
- ``KafkaError._TIMED_OUT`` "... not sent ..." when the deadline passes before the topic could be sent (it
  was certainly not applied);
- ``KafkaError._TIMED_OUT`` "... outcome unknown ..." when it was sent and no answer came in time: the
  broker may or may not have applied it;
- ``KafkaError._DESTROY`` when the client is closed with the topic pending ("not sent", or "outcome unknown"
  for a topic whose request was in flight);
- ``KafkaError._INVALID_ARG`` when confluent-kafka itself refused the call, with its reason;
- an authentication failure (``_AUTHENTICATION``, SASL_AUTHENTICATION_FAILED) on every pending topic, saying
  "outcome unknown" for one in flight once a request of the client had got through before.
Bad input raises ``ValueError`` / ``TypeError`` before anything is sent.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

__all__ = [
    "ThrottlingQuotaExceededException",
    "after_unknown_attempt",
    "closed_error",
    "in_flight_error",
    "not_sent_error",
    "refused_error",
    "unknown_outcome_error",
]

DEFAULT_MESSAGE = "The throttling quota has been exceeded."


class ThrottlingQuotaExceededException(KafkaException):
    """A topic was throttled by the controller mutation quota (KIP-599), as Java's exception of that name.

    ``throttle_time_ms`` is how long the broker asked the client to wait, measured from when the
    exception was raised; ``topic`` the topic it is about (None for a whole call)."""

    throttle_time_ms: int
    topic: str | None

    def __init__(self, throttle_time_ms: int, topic: str | None = None, message: str | None = None):
        text = message or DEFAULT_MESSAGE
        if throttle_time_ms > 0:
            text = f"{text} (throttle_time_ms={throttle_time_ms})"
        super().__init__(KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED, text, retriable=True))
        self.throttle_time_ms = max(0, int(throttle_time_ms))
        self.topic = topic

    def __reduce__(self) -> tuple[type[ThrottlingQuotaExceededException], tuple[int, str | None]]:
        return (type(self), (self.throttle_time_ms, self.topic))


def not_sent_error(operation: str, timeout_ms: int, why: str) -> KafkaException:
    return KafkaException(
        KafkaError(KafkaError._TIMED_OUT, f"{operation} not sent within timeout_ms={timeout_ms}: {why}")
    )


def unknown_outcome_error(operation: str, why: str) -> KafkaException:
    return KafkaException(
        KafkaError(
            KafkaError._TIMED_OUT,
            f"{operation} outcome unknown: {why}; the broker may or may not have applied it (read the cluster)",
        )
    )


def _amended(error: KafkaError, sentence: str) -> KafkaException:
    """``error`` with its code, and a sentence added to its message."""
    return KafkaException(KafkaError(error.code(), f"{error.str()} {sentence}"))


def after_unknown_attempt(error: KafkaError, operation: str) -> KafkaException:
    return _amended(
        error,
        f"An earlier attempt of this {operation}, whose outcome was unknown (its response was lost), may have "
        "applied it.",
    )


def in_flight_error(error: KafkaError, operation: str) -> KafkaException:
    """``error`` (an authentication failure) for a topic whose request was in flight when it came."""
    return _amended(
        error, f"This {operation} was in flight: outcome unknown, the broker may or may not have applied it."
    )


def refused_error(operation: str, exc: BaseException) -> KafkaException:
    return KafkaException(
        KafkaError(KafkaError._INVALID_ARG, f"{operation} refused by confluent-kafka: {type(exc).__name__}: {exc}")
    )


def closed_error(operation: str, *, sent: bool) -> KafkaException:
    """_DESTROY for a topic pending at close(): a queued one was not sent; one in flight may have been applied."""
    if sent:
        what = "its request was in flight: outcome unknown, the broker may or may not have applied it"
    else:
        what = "it was not sent"
    return KafkaException(
        KafkaError(KafkaError._DESTROY, f"ThrottledAdminClient was closed before {operation} completed; {what}")
    )
