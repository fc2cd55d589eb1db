"""What a caller of ThrottledAdminClient meets before any transport is involved, against a real QuotaBroker over
loopback: bad input is refused with a clear error and nothing is sent (the broker's request log shows it), option
objects are frozen values, and the futures of inherited methods resolve once.

The client's behaviour with the broker in the loop is in tests/test_client_e2e.py and the reliability tests; the
scheduler's decisions are the engine's, on simulated time (tests/test_engine_rules.py, tests/test_engine_model.py)."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.support import raised
from throttled_admin import (
    CreatePartitionsOptions,
    CreateTopicsOptions,
    DeleteTopicsOptions,
    NewPartitions,
    NewTopic,
    NotSentError,
    ThrottledAdminClient,
)
from throttled_admin.testing import QuotaBroker

MUTATIONS = ("CreateTopics", "DeleteTopics", "CreatePartitions")
_sentinels = itertools.count()


@pytest.fixture(scope="module")
def broker() -> Iterator[QuotaBroker]:
    with QuotaBroker() as started:
        yield started


@pytest.fixture(scope="module")
def module_client(broker: QuotaBroker) -> Iterator[ThrottledAdminClient]:
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "client.id": "contract"}) as admin:
        yield admin


@pytest.fixture
def client(broker: QuotaBroker, module_client: ThrottledAdminClient) -> ThrottledAdminClient:
    broker.clear_request_log()
    return module_client


def topics(*names: str) -> list[NewTopic]:
    return [NewTopic(n, 1, 1) for n in names]


def assert_nothing_sent(broker: QuotaBroker, client: ThrottledAdminClient) -> None:
    """A later call's request is the only mutation the broker has seen: anything a refused call had queued would
    have gone out before it, or with it (one request in flight, in the order the calls were made)."""
    sentinel = f"sentinel-{next(_sentinels)}"
    assert client.create_topics(topics(sentinel))[sentinel].exception(30) is None
    assert [r.errors for r in broker.request_log() if r.api_name in MUTATIONS] == [{sentinel: 0}]


# -- bad input: a clear error before anything is sent ----------------------------------------------
# Raised by the call where confluent-kafka raises at call time (tests/test_input_parity.py holds the types).

BAD_CREATES: list[tuple[Any, type[Exception], str]] = [
    ("a-topic", AttributeError, "must be a list of NewTopic, got str"),
    ([], ValueError, "non-empty list"),
    ([NewTopic("ok", 1, 1), "x"], AttributeError, r"new_topics\[1\] must be NewTopic"),
    ((NewTopic("ok", 1, 1),), ValueError, "list of NewTopic, got tuple"),
    ([NewTopic("neg", -2, 1)], ValueError, "topic 'neg': num_partitions"),
    ([NewTopic("both", replication_factor=2, replica_assignment=[[1, 2]])], ValueError, "'both'.*not both"),
    ([NewTopic("ok", 1, 1), NewTopic("short", 2, replica_assignment=[[1]])], ValueError, "'short'.*1 partition"),
]


@pytest.mark.parametrize(("new_topics", "error", "message"), BAD_CREATES)
def test_bad_create_input_is_refused_before_sending(
    broker: QuotaBroker, client: ThrottledAdminClient, new_topics: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        client.create_topics(new_topics)
    assert_nothing_sent(broker, client)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda c: c.delete_topics([None, "a"]), ValueError, r"topics\[0\] must be a topic name"),
        (lambda c: c.delete_topics(("a",)), TypeError, "must be a list"),
        (lambda c: c.delete_topics([]), ValueError, "non-empty"),
        (lambda c: c.create_partitions([NewPartitions("p", 0)]), ValueError, "topic 'p': new_total_count"),
        (lambda c: c.create_partitions([NewTopic("p", 1, 1)]), ValueError, "must be NewPartitions"),
        (lambda c: c.create_topics(topics("a"), timeout_ms=0), ValueError, "timeout_ms must be a positive int"),
        (lambda c: c.create_topics(topics("a"), colour="red"), TypeError, "unexpected keyword argument.*colour"),
        (lambda c: c.delete_topics(["a"], validate_only=True), TypeError, "validate_only"),
        (lambda c: c.create_topics(topics("a"), options=DeleteTopicsOptions()), TypeError, "CreateTopicsOptions"),
    ],
)
def test_bad_input_of_every_call_is_refused_before_sending(
    broker: QuotaBroker, client: ThrottledAdminClient, call: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call(client)
    assert_nothing_sent(broker, client)


# -- a topic every broker refuses: only its future fails, nothing of it is sent -------------------

_goods = itertools.count()

BAD_TOPICS: list[tuple[list[NewTopic], str, int, str]] = [
    (topics("bad name"), "bad name", KafkaError.TOPIC_EXCEPTION, "contains one or more characters"),
    (topics("."), ".", KafkaError.TOPIC_EXCEPTION, "'.' is not allowed"),
    (topics("x" * 250), "x" * 250, KafkaError.TOPIC_EXCEPTION, "max allowed length 249"),
    (topics("dup", "dup"), "dup", KafkaError.INVALID_REQUEST, "more than once"),
    ([NewTopic("zero", 0, 1)], "zero", KafkaError.INVALID_PARTITIONS, "num_partitions must be >= 1"),
    ([NewTopic("rf", 1, 0)], "rf", KafkaError.INVALID_REPLICATION_FACTOR, "replication_factor"),
    ([NewTopic("twice", 1, replica_assignment=[[0, 0]])], "twice", KafkaError.INVALID_REPLICA_ASSIGNMENT, "twice"),
    ([NewTopic("ab", 2, replica_assignment=[[0], [0, 1]])], "ab", KafkaError.INVALID_REPLICA_ASSIGNMENT, "same"),
    # a config value of None on purpose: validation must refuse it
    ([NewTopic("cfg", 1, 1, config={"retention.ms": None})], "cfg", KafkaError.INVALID_CONFIG, "'retention.ms'"),  # type: ignore[dict-item]
]


@pytest.mark.parametrize(("bad", "name", "code", "message"), BAD_TOPICS)
def test_a_topic_every_broker_refuses_fails_alone_and_is_not_sent(
    broker: QuotaBroker, client: ThrottledAdminClient, bad: list[NewTopic], name: str, code: int, message: str
) -> None:
    good = f"good-{next(_goods)}"
    futures = client.create_topics([bad[0], NewTopic(good, 1, 1), *bad[1:]])
    assert list(futures) == [name, good]
    refused = futures[name].exception(0)  # at once: nothing to wait for
    assert isinstance(refused, NotSentError)
    assert refused.args[0].code() == code
    assert message in refused.args[0].str()
    assert repr(name) in refused.args[0].str()
    assert futures[good].result(30) is None
    assert [r.errors for r in broker.request_log() if r.api_name in MUTATIONS] == [{good: 0}]


def test_colliding_names_in_one_create_send_the_first() -> None:
    with QuotaBroker() as own, ThrottledAdminClient({"bootstrap.servers": own.bootstrap_servers}) as admin:
        futures = admin.create_topics(topics("c.d", "c_d"))
        assert futures["c.d"].result(30) is None
        collided = futures["c_d"].exception(0)
        assert isinstance(collided, NotSentError)
        assert collided.args[0].code() == KafkaError.TOPIC_EXCEPTION
        assert "collides with 'c.d'" in collided.args[0].str()
        assert own.topics() == {"c.d": 1}


def test_other_calls_fail_only_the_refused_topic(broker: QuotaBroker, client: ThrottledAdminClient) -> None:
    deleted = client.delete_topics(["gone", 5, "a", "a"])  # type: ignore[list-item]
    assert list(deleted) == ["gone", 5, "a"]
    assert raised(deleted[5], 0).args[0].code() == KafkaError._INVALID_ARG  # type: ignore[index]  # 5 on purpose
    assert raised(deleted["a"], 0).args[0].code() == KafkaError.INVALID_REQUEST
    assert raised(deleted["gone"], 30).args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART  # the broker's answer
    broker.create_topic("grown", 1)
    grown = client.create_partitions([NewPartitions("grown", 2), NewPartitions("bad name", 2)])
    assert raised(grown["bad name"], 0).args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert grown["grown"].result(30) is None
    sent = [r.errors for r in broker.request_log() if r.api_name in MUTATIONS]
    assert sent == [{"gone": KafkaError.UNKNOWN_TOPIC_OR_PART}, {"grown": 0}]


def test_names_that_collide_in_a_create_are_each_sent_in_a_delete(
    broker: QuotaBroker, client: ThrottledAdminClient
) -> None:
    """Kafka refuses to create both "a.b" and "a_b" (their metric names collide); deleting both is fine, and each
    gets the broker's own answer."""
    broker.create_topic("a.b", 1)
    results = {name: f.exception(30) for name, f in client.delete_topics(["a.b", "a_b"]).items()}
    assert results["a.b"] is None
    missing = results["a_b"]
    assert isinstance(missing, KafkaException)
    assert missing.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert [r.errors for r in broker.request_log() if r.api_name == "DeleteTopics"] == [
        {"a.b": 0, "a_b": KafkaError.UNKNOWN_TOPIC_OR_PART}
    ]


# -- option objects, the futures of inherited methods ----------------------------------------------


def test_options_are_frozen_values_changed_by_copying() -> None:
    options = CreateTopicsOptions(timeout_ms=1000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.timeout_ms = 5  # type: ignore[misc]
    assert dataclasses.replace(options, validate_only=True) == CreateTopicsOptions(timeout_ms=1000, validate_only=True)
    assert CreatePartitionsOptions().retry_on_quota_violation is None
    assert "timeout_ms=1000" in repr(options)
    with pytest.raises(ValueError, match="request_timeout"):
        CreateTopicsOptions(request_timeout=-1)


def test_a_call_without_options_shares_one_default_options_value_per_type() -> None:
    """The common call (no options, no keywords) makes no options object of its own (issue 39's latency): the
    defaults are one frozen value per type; keywords still copy."""
    from throttled_admin._options import merge_options

    default = merge_options(CreateTopicsOptions, None, {})
    assert default == CreateTopicsOptions()
    assert merge_options(CreateTopicsOptions, None, {}) is default
    assert type(merge_options(CreatePartitionsOptions, None, {})) is CreatePartitionsOptions
    assert merge_options(CreateTopicsOptions, None, {"timeout_ms": 5}) == CreateTopicsOptions(timeout_ms=5)
    assert default == CreateTopicsOptions()


def test_inherited_futures_resolve_once_whichever_of_librdkafka_and_close_comes_first() -> None:
    """The futures of inherited methods are chained to librdkafka's: its outcome passes through unchanged until
    close(), which fails those still pending; librdkafka completing one later changes nothing and raises
    nowhere. Ours are settled on the client's callback pool, never on librdkafka's thread."""
    from throttled_admin._client import _fail_inherited, _InheritedFutures
    from throttled_admin._driver.user_code import CallbackRunner

    runner = CallbackRunner()
    inherited = _InheritedFutures(runner)
    theirs: dict[str, Future[Any]] = {name: Future() for name in ("ok", "failed", "late")}
    for future in theirs.values():
        future.set_running_or_notify_cancel()
    ours = inherited.chain("describe_configs", theirs)
    assert type(ours) is dict
    assert list(ours) == list(theirs)
    assert all(type(f) is Future and f.running() and not f.cancel() for f in ours.values())
    single = inherited.chain("describe_cluster", Future())
    assert type(single) is Future
    assert inherited.chain("list_topics", "metadata") == "metadata"  # anything else as it is
    assert inherited.chain("poll", {}) == {}

    theirs["ok"].set_result({"retention.ms": "1"})
    theirs["failed"].set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
    assert ours["ok"].result(5) == {"retention.ms": "1"}
    assert ours["failed"].exception(5).args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    failing = _fail_inherited(inherited)
    assert failing is not None
    failing.join(5)
    for name, future in (("describe_configs", ours["late"]), ("describe_cluster", single)):
        error = raised(future, 0).args[0]
        assert error.code() == KafkaError._DESTROY
        assert f"before {name} completed" in error.str()
    theirs["late"].set_result({"retention.ms": "2"})  # librdkafka, after close(): no InvalidStateError
    assert ours["late"].exception(0).args[0].code() == KafkaError._DESTROY

    late_call = inherited.chain("describe_topics", {"t": Future()})  # a call that raced close()
    assert late_call["t"].exception(0).args[0].code() == KafkaError._DESTROY
    assert _fail_inherited(inherited) is None  # nothing left to fail, no thread
    runner.close(time.monotonic() + 5)
