"""A bulk call is handed to the engine in two parts (issue 40): its first request goes to the broker before the rest
of the call is made ready (its costs and records, the engine's records of it, a create's checks but those that
raise and a name given twice), end to end on QuotaBroker. The first part's size is made small here
(``_client._FIRST_PART``, 4,000 topics) so that a few topics show it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import throttled_admin._client as client_module
import throttled_admin._validation as validation_module
from tests.either_broker import EitherBroker
from tests.support import BrokerFactory, call_durations, wait_until
from throttled_admin import (
    ClientClosedNotSentError,
    MutationQuota,
    NewTopic,
    NotSentError,
    ThrottledAdminClient,
)
from throttled_admin._engine import Operation
from throttled_admin._kafka.topic_names import all_legal

NAMES = [f"part{i}" for i in range(5)]


@pytest.fixture
def specs_made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes ``Operation.specs`` is asked for, in order (``_watch_specs``); first parts of two topics."""
    monkeypatch.setattr(client_module, "_FIRST_PART", 2)
    return []


def _watch_specs(monkeypatch: pytest.MonkeyPatch, sizes: list[int], on_rest: Any) -> None:
    specs = Operation.specs

    def watched(self: Operation, items: list[Any], unknown: int | None) -> Any:
        sizes.append(len(items))
        if len(sizes) == 2:
            on_rest()
        return specs(self, items, unknown)

    monkeypatch.setattr(Operation, "specs", watched)


def test_a_bulk_calls_first_request_reaches_the_broker_before_the_rest_is_made_ready(
    quota_broker: BrokerFactory, specs_made: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = quota_broker()
    started = broker.hold_controller_next(0)  # set when the controller takes up the first mutation
    seen: list[bool] = []
    _watch_specs(monkeypatch, specs_made, lambda: seen.append(started.wait(10)))
    client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        futures = client.create_topics([NewTopic(name, 1, 1) for name in NAMES])
        assert list(futures) == NAMES  # in the order of the call
        assert {name: future.result(10) for name, future in futures.items()} == dict.fromkeys(NAMES)
    finally:
        client.close()
    assert specs_made == [2, 3]
    assert seen == [True]  # the rest was made ready once the broker had the first request
    assert broker.topics() == dict.fromkeys(NAMES, 1)


def test_a_bulk_creates_rest_is_checked_once_its_first_request_reaches_the_broker(
    quota_broker: BrokerFactory, specs_made: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The names' legality, checked over the first part before it is sent, and over the call once its first request
    is with the broker; an illegal name and a collision in the rest are refused as they are in a call checked whole
    (not sent, with the broker's error), and the rest is created."""
    broker = quota_broker()
    started = broker.hold_controller_next(0)
    checked: list[tuple[int, bool]] = []  # (names, whether the broker had the first request)

    def watched(names: list[str]) -> bool:
        checked.append((len(names), started.wait(10) if len(names) > 2 else started.is_set()))
        return all_legal(names)

    monkeypatch.setattr(validation_module, "all_legal", watched)
    names = ["part0", "part1", "part.2", "bad name", "part_2"]
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as client:
        futures = client.create_topics([NewTopic(name, 1, 1) for name in names])
        assert list(futures) == names
        for name in ("bad name", "part_2"):
            with pytest.raises(NotSentError) as refused:
                futures[name].result(10)
            assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
            assert repr(name) in refused.value.args[0].str()
        assert [futures[name].result(10) for name in names[:3]] == [None] * 3
    assert checked == [(2, False), (5, True)]
    assert broker.topics() == dict.fromkeys(names[:3], 1)


def test_calls_in_two_parts_end_every_topic_as_the_broker_holds_it(
    any_broker: Callable[..., EitherBroker], specs_made: list[int]
) -> None:
    """On QuotaBroker and on Kafka 4.4: a create in two parts whose rest holds an illegal name, a name colliding
    with one of the rest, a topic the broker has, and new ones; then a delete in two parts of what it made. Each
    topic's outcome is what the broker holds afterwards."""
    broker = any_broker()
    there = broker.t("part.there")
    broker.create_topic(there)
    made = [broker.t(name) for name in ("part0", "part1", "part.2", "part3")]
    collides = broker.t("part_2")
    given = [*made[:3], "bad name", collides, there, made[3]]
    with ThrottledAdminClient(broker.conf()) as client:
        futures = client.create_topics([NewTopic(name, 1, 1) for name in given])
        assert list(futures) == given
        for name in ("bad name", collides):
            with pytest.raises(NotSentError) as refused:
                futures[name].result(30)
            assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
        with pytest.raises(KafkaException) as exists:
            futures[there].result(30)
        assert exists.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
        assert [futures[name].result(30) for name in made] == [None] * 4
        assert broker.settled_topics(dict.fromkeys([*made, there], 1)) == dict.fromkeys([*made, there], 1)
        deleted = client.delete_topics(made)
        assert [deleted[name].result(30) for name in made] == [None] * 4
    assert broker.settled_topics({there: 1}) == {there: 1}


def test_a_client_closed_before_the_rest_is_queued_tells_the_rest_it_was_not_sent(
    quota_broker: BrokerFactory, specs_made: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = quota_broker()
    client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
    _watch_specs(monkeypatch, specs_made, client.close)
    futures = client.create_topics([NewTopic(name, 1, 1) for name in NAMES])
    assert list(futures) == NAMES
    for name in NAMES[2:]:
        with pytest.raises(ClientClosedNotSentError):
            futures[name].result(10)
    for name in NAMES[:2]:  # sent, or not: an outcome each, by close()
        assert futures[name].done()
    assert set(broker.topics()) <= set(NAMES[:2])


def test_a_call_cut_short_between_its_parts_is_finished_once_its_first_part_is_settled(
    quota_broker: BrokerFactory,
    specs_made: list[int],
    monkeypatch: pytest.MonkeyPatch,
    meter_provider: MeterProvider,
    metric_reader: InMemoryMetricReader,
) -> None:
    """Ctrl-C as the rest is made ready: the rest is never queued, and the engine is told that no more of the call
    comes, so the call ends (its duration recorded) once its first part is settled, instead of staying pending."""
    broker = quota_broker()

    def interrupted() -> None:
        raise KeyboardInterrupt

    _watch_specs(monkeypatch, specs_made, interrupted)
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    with ThrottledAdminClient(conf, meter_provider=meter_provider) as client:
        with pytest.raises(KeyboardInterrupt):
            client.create_topics([NewTopic(name, 1, 1) for name in NAMES])
        assert client.wait_until_final(10)
        assert wait_until(lambda: call_durations(metric_reader) == 1, timeout_s=10)
    assert set(broker.topics()) <= set(NAMES[:2])


def test_a_paced_call_is_handed_over_whole(
    quota_broker: BrokerFactory, specs_made: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paced call's first request is sized from everything it has queued, and its unknown costs come from one read
    of the cluster: it is not given in parts."""
    broker = quota_broker()
    _watch_specs(monkeypatch, specs_made, lambda: None)
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=1000)) as client:
        futures = client.create_topics([NewTopic(name, 1, 1) for name in NAMES])
        assert {name: future.result(10) for name, future in futures.items()} == dict.fromkeys(NAMES)
    assert specs_made == [5]
