"""The error kinds are types: each factory's class, code and message (the messages as they were when the kinds
existed only as text), the isinstance relations callers branch on, and pickling (Spark ships exceptions)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
from confluent_kafka import KafkaError, KafkaException

import throttled_admin
import throttled_admin.admin
from throttled_admin import (
    CannotConnectError,
    ClientClosedError,
    NotSentError,
    NotSentReason,
    NotYetVisibleError,
    OutcomeUnknownError,
    OutcomeUnknownReason,
    PossiblyAppliedError,
    ThrottlingQuotaExceededException,
)
from throttled_admin._errors import (
    after_unknown_attempt,
    cannot_connect_error,
    closed_error,
    in_flight_error,
    not_sent_error,
    not_visible_error,
    refused_error,
    unknown_outcome_error,
)

KINDS = (NotSentError, CannotConnectError, OutcomeUnknownError, PossiblyAppliedError, ClientClosedError)
ALREADY = KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "Topic 't' already exists.")
AUTH = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: bad credentials")

# (factory's result, its class, code, message): the messages are byte for byte those of before the types.
CASES = [
    (
        not_sent_error(
            "create_topics", 5000, "its deadline passed before it could be sent", why=NotSentReason.DEADLINE
        ),
        NotSentError,
        KafkaError._TIMED_OUT,
        "create_topics not sent within timeout_ms=5000: its deadline passed before it could be sent",
    ),
    (
        refused_error("create_topics", TypeError("bad")),
        NotSentError,
        KafkaError._INVALID_ARG,
        "create_topics refused by confluent-kafka: TypeError: bad",
    ),
    (
        cannot_connect_error("delete_topics", "broker:9092", "Connection refused"),
        CannotConnectError,
        KafkaError._TRANSPORT,
        "delete_topics not sent: cannot connect to broker:9092 (Connection refused)",
    ),
    (
        unknown_outcome_error("create_topics", "no response by the deadline", why=OutcomeUnknownReason.NO_RESPONSE),
        OutcomeUnknownError,
        KafkaError._TIMED_OUT,
        "create_topics outcome unknown: no response by the deadline; the broker may or may not have applied it, "
        "and may still apply it (a controller completes a request it has begun, however late): read the cluster "
        "once the client's wait_until_final() returns True",
    ),
    (
        in_flight_error(AUTH, "create_topics"),
        OutcomeUnknownError,
        KafkaError._AUTHENTICATION,
        "SASL authentication error: bad credentials. This create_topics was in flight: outcome unknown, the broker "
        "may or may not have applied it.",
    ),
    (
        after_unknown_attempt(ALREADY, "create_topics"),
        PossiblyAppliedError,
        KafkaError.TOPIC_ALREADY_EXISTS,
        "Topic 't' already exists. An earlier attempt of this create_topics, whose outcome was unknown (its "
        "response was lost), may have applied it.",
    ),
    (
        not_visible_error("CreateTopics", 30000, (2, 3)),
        NotYetVisibleError,
        KafkaError._TIMED_OUT,
        "CreateTopics applied, but not yet visible in every broker's metadata by the deadline (timeout_ms=30000): "
        "brokers 2, 3 do not list it (the new topic's id) with a leader for every partition yet",
    ),
    (
        not_visible_error("DeleteTopics", 30000, (1,), closed=True),
        NotYetVisibleError,
        KafkaError._TIMED_OUT,
        "DeleteTopics applied, but not yet visible in every broker's metadata before the client was closed: "
        "broker 1 does not have it gone yet",
    ),
    (
        closed_error("create_partitions", sent=False),
        ClientClosedError,
        KafkaError._DESTROY,
        "ThrottledAdminClient was closed before create_partitions completed; it was not sent",
    ),
    (
        closed_error("create_partitions", sent=True),
        ClientClosedError,
        KafkaError._DESTROY,
        "ThrottledAdminClient was closed before create_partitions completed; its request was in flight: outcome "
        "unknown, the broker may or may not have applied it",
    ),
]


@pytest.mark.parametrize(("exc", "kind", "code", "message"), CASES)
def test_each_factory_gives_its_kind_with_the_same_code_and_message(
    exc: KafkaException, kind: type[KafkaException], code: int, message: str
) -> None:
    assert isinstance(exc, kind)
    assert isinstance(exc, KafkaException)  # handlers written for confluent-kafka still catch it
    error = exc.args[0]
    assert isinstance(error, KafkaError)
    assert (error.code(), error.str()) == (code, message)
    assert str(exc) == str(KafkaException(error))


def test_a_sentence_added_to_librdkafkas_words_for_a_code_follows_a_full_stop() -> None:
    """A DeleteTopics answer carries no message, and librdkafka's words for its code end without a full stop: the
    library's sentence ran on ("Broker: Unknown topic or partition An earlier attempt of this DeleteTopics ...",
    helper 128)."""
    gone = after_unknown_attempt(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), "DeleteTopics")
    assert gone.args[0].str().startswith("Broker: Unknown topic or partition. An earlier attempt of this DeleteTopics")
    blank = in_flight_error(KafkaError(KafkaError._TRANSPORT, ""), "delete_topics")
    assert (
        blank.args[0].str()
        == "This delete_topics was in flight: outcome unknown, the broker may or may not have applied it."
    )


@pytest.mark.parametrize(("exc", "kind", "code", "message"), CASES)
def test_each_kind_pickles_to_its_own_class_code_and_message(
    exc: KafkaException, kind: type[KafkaException], code: int, message: str
) -> None:
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is type(exc)
    assert (copy.args[0].code(), copy.args[0].str()) == (code, message)
    assert getattr(copy, "sent", None) == getattr(exc, "sent", None)
    assert getattr(copy, "brokers", None) == getattr(exc, "brokers", None)
    assert getattr(copy, "why", None) is getattr(exc, "why", None)


# Each factory's typed reason: what it was given, or what its kind means; None where the type says it all.
WHYS = [
    (not_sent_error("x", 1, "words", why=NotSentReason.ROUND_TRIP), NotSentReason.ROUND_TRIP),
    (refused_error("x", TypeError("bad")), NotSentReason.REFUSED),
    (cannot_connect_error("x", "h:1", "why"), NotSentReason.CANNOT_CONNECT),
    (unknown_outcome_error("x", "words", why=OutcomeUnknownReason.THROTTLED), OutcomeUnknownReason.THROTTLED),
    (in_flight_error(AUTH, "x"), OutcomeUnknownReason.AUTHENTICATION),
    (after_unknown_attempt(ALREADY, "x"), None),
    (closed_error("x", sent=True), None),
    (closed_error("x", sent=False), None),
]


@pytest.mark.parametrize(("exc", "why"), WHYS)
def test_each_factory_types_why_and_pickling_keeps_it(
    exc: KafkaException, why: NotSentReason | OutcomeUnknownReason | None
) -> None:
    assert isinstance(exc, (NotSentError, OutcomeUnknownError))
    assert exc.why is why
    assert pickle.loads(pickle.dumps(exc)).why is why


def test_not_sent_error_keeps_its_words_and_its_reason_apart() -> None:
    exc = not_sent_error(
        "create_topics", 300, "an earlier call still held the topic's name", why=NotSentReason.NAME_HELD
    )
    assert (exc.operation, exc.timeout_ms, exc.why) == ("create_topics", 300, NotSentReason.NAME_HELD)
    assert exc.reason == "an earlier call still held the topic's name"


def test_the_reasons_are_exported_from_both_public_modules_under_the_public_path() -> None:
    for reason in (NotSentReason, OutcomeUnknownReason):
        assert getattr(throttled_admin.admin, reason.__name__) is reason
        assert reason.__name__ in throttled_admin.__all__
        assert reason.__name__ in throttled_admin.admin.__all__
        assert reason.__module__ == "throttled_admin"


def test_a_pickled_kind_loads_in_another_process() -> None:
    data = pickle.dumps([closed_error("delete_topics", sent=True), cannot_connect_error("x", "h:1", "why")])
    program = (
        "import pickle, sys\n"
        "from throttled_admin import CannotConnectError, ClientClosedError, NotSentError, NotSentReason\n"
        "from throttled_admin import OutcomeUnknownError\n"
        "closed, connect = pickle.loads(sys.stdin.buffer.read())\n"
        "assert isinstance(closed, ClientClosedError) and isinstance(closed, OutcomeUnknownError) and closed.sent\n"
        "assert isinstance(connect, CannotConnectError) and isinstance(connect, NotSentError)\n"
        "assert connect.why is NotSentReason.CANNOT_CONNECT\n"
        "print(closed.args[0].code(), connect.args[0].str())\n"
    )
    done = subprocess.run([sys.executable, "-c", program], input=data, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split(None, 1) == [
        str(KafkaError._DESTROY),
        "x not sent: cannot connect to h:1 (why)\n",
    ]


def test_the_quota_exception_is_a_retriable_kafka_exception_with_its_throttle_and_topic() -> None:
    error = ThrottlingQuotaExceededException(1234, "t")
    assert isinstance(error, KafkaException)
    assert error.args[0].code() == KafkaError.THROTTLING_QUOTA_EXCEEDED
    assert error.args[0].retriable()  # Java's ThrottlingQuotaExceededException extends RetriableException
    assert "The throttling quota has been exceeded." in str(error)
    assert "1234" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.throttle_time_ms, copy.topic) == (1234, "t")
    redpanda = ThrottlingQuotaExceededException(50, "t", "Too many partition mutations requested")
    assert pickle.loads(pickle.dumps(redpanda)).args[0].str() == redpanda.args[0].str()  # the broker's message kept
    assert str(ThrottlingQuotaExceededException(0).args[0].str()) == "The throttling quota has been exceeded."


def test_the_tree() -> None:
    assert issubclass(CannotConnectError, NotSentError)
    assert issubclass(PossiblyAppliedError, OutcomeUnknownError)
    kinds = (NotSentError, OutcomeUnknownError, NotYetVisibleError, ClientClosedError, ThrottlingQuotaExceededException)
    for kind in kinds:
        assert kind.__bases__ == (KafkaException,), kind
    # Certainly not applied and perhaps applied never hold together; a throttled topic is neither kind.
    assert not issubclass(NotSentError, OutcomeUnknownError)
    assert not issubclass(OutcomeUnknownError, NotSentError)
    assert not issubclass(ThrottlingQuotaExceededException, (NotSentError, OutcomeUnknownError))
    for kind in KINDS:
        assert kind.__doc__, kind
        assert "\n" not in kind.__doc__.strip(), kind


def test_a_closed_error_is_also_what_its_topic_was() -> None:
    queued = closed_error("create_topics", sent=False)
    assert isinstance(queued, ClientClosedError)
    assert isinstance(queued, NotSentError)
    assert not isinstance(queued, OutcomeUnknownError)
    assert queued.sent is False
    in_flight = closed_error("create_topics", sent=True)
    assert isinstance(in_flight, ClientClosedError)
    assert isinstance(in_flight, OutcomeUnknownError)
    assert not isinstance(in_flight, NotSentError)
    assert in_flight.sent is True


def test_the_factories_keep_their_operands() -> None:
    # after_unknown_attempt and in_flight_error amend the error they are given and leave it as it was.
    assert after_unknown_attempt(AUTH, "delete_topics").args[0].code() == KafkaError._AUTHENTICATION
    assert AUTH.str() == "SASL authentication error: bad credentials"
    grown = KafkaError(KafkaError.INVALID_PARTITIONS, "Topic already has 4 partitions.")
    assert isinstance(after_unknown_attempt(grown, "create_partitions"), PossiblyAppliedError)


def test_the_kinds_are_exported_from_both_public_modules() -> None:
    for kind in (*KINDS, ThrottlingQuotaExceededException):
        assert getattr(throttled_admin, kind.__name__) is kind
        assert getattr(throttled_admin.admin, kind.__name__) is kind
        assert kind.__name__ in throttled_admin.__all__
        assert kind.__name__ in throttled_admin.admin.__all__


def test_a_kind_can_be_raised_and_caught_as_confluent_kafkas() -> None:
    with pytest.raises(KafkaException) as caught:
        raise NotSentError(KafkaError(KafkaError._TIMED_OUT, "mine"))
    assert caught.value.args[0].str() == "mine"
    closed = ClientClosedError(KafkaError(KafkaError._DESTROY, "closed"), sent=True)
    assert closed.sent is True
    assert type(pickle.loads(pickle.dumps(closed))) is ClientClosedError
