"""Property tests: input validation against what the bare confluent-kafka client accepts when a call is made.

For any generated input: we refuse at call time exactly what confluent-kafka refuses at call time, with an
exception of the type it raises; whatever we accept, confluent-kafka accepts too, both as given and as the
snapshots we send in its place (a topic every broker refuses is not sent: only its future fails).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from throttled_admin._validation import Checked, check_delete_topics, check_new_partitions, check_new_topics
from throttled_admin.admin import NewPartitions, NewTopic

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def bare() -> AdminClient:
    return AdminClient({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})


def refusal(call: Callable[[], Any]) -> BaseException | None:
    try:
        call()
    except (TypeError, ValueError, AttributeError) as exc:
        return exc
    return None


def same_decision(ours: BaseException | None, theirs: BaseException | None) -> None:
    event(f"confluent-kafka {'refuses' if theirs else 'accepts'}, we {'refuse' if ours else 'accept'}")
    assert (ours is None) == (theirs is None), f"confluent-kafka: {theirs!r}, ours: {ours!r}"
    if theirs is not None:
        assert isinstance(ours, type(theirs)), f"confluent-kafka raises {theirs!r}, we raise {ours!r}"


def sent(checked: Checked[Any]) -> list[Any]:
    return [item for _, item in checked if not isinstance(item, KafkaError)]


# Mostly well-formed values, with the edge cases mixed in: both sides' accept and refuse paths get exercised.
names = st.sampled_from(["orders", "payments", "a.b", "a_b", "ok-1", "x" * 249, "x" * 250, "", "bad name", "."])
counts = st.sampled_from([1, 2, 3] * 3 + [-1, -1, 0, -2, 99999, 100000, 100001, 10000, 10001])
broker_ids = st.one_of(st.integers(0, 3), st.integers(0, 3), st.sampled_from([-1, 2**31, True]))
assignment_entries = st.one_of(
    st.lists(broker_ids, min_size=1, max_size=2, unique=True),
    st.lists(broker_ids, max_size=3),
    st.lists(broker_ids, min_size=1, max_size=3).map(tuple),
    st.sampled_from([["0"], [0.0]]),
)
assignments: st.SearchStrategy[Any] = st.one_of(
    st.lists(assignment_entries, max_size=4),
    st.lists(assignment_entries, min_size=1, max_size=3).map(tuple),
    st.sampled_from(["ab", 5, {}]),
)
config_values = st.one_of(
    st.text(alphabet="abc019.", max_size=5),
    st.integers(-5, 10**6),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.binary(max_size=3),
)
config_names = st.one_of(st.sampled_from(["retention.ms", "cleanup.policy", "segment.bytes"]), st.sampled_from(["", 1]))
configs = st.dictionaries(config_names, config_values, max_size=3)


@st.composite
def new_topics(draw: st.DrawFn) -> NewTopic:
    name = draw(names)
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["config"] = draw(configs)
    shape = draw(st.sampled_from(["counts", "assignment", "anything"]))
    if shape == "counts":
        return NewTopic(name, draw(counts), draw(counts), **kwargs)
    if shape == "assignment":  # the consistent form: one entry per partition, replication factor left at -1
        width = draw(st.integers(1, 3))
        rows = draw(st.lists(st.lists(broker_ids, min_size=width, max_size=width), min_size=1, max_size=4))
        return NewTopic(name, len(rows), -1, replica_assignment=rows, **kwargs)
    return NewTopic(name, draw(counts), draw(counts), replica_assignment=draw(assignments), **kwargs)


@st.composite
def new_partitions(draw: st.DrawFn) -> NewPartitions:
    if draw(st.booleans()):
        return NewPartitions(draw(names), draw(counts), draw(assignments))
    return NewPartitions(draw(names), draw(counts))


def containers(items: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    one_or_two = st.lists(items, min_size=1, max_size=2)
    return st.one_of(one_or_two, one_or_two, one_or_two, st.just([]), one_or_two.map(tuple))


@PROPERTY_SETTINGS
@given(containers(new_topics()))
def test_create_topics(bare: AdminClient, topics: Any) -> None:
    ours = refusal(lambda: check_new_topics(topics))
    same_decision(ours, refusal(lambda: bare.create_topics(topics)))
    if ours is None and (snapshots := sent(check_new_topics(topics))):
        bare.create_topics(snapshots)  # what we send must pass confluent-kafka's call-time checks


@PROPERTY_SETTINGS
@given(containers(new_partitions()))
def test_create_partitions(bare: AdminClient, items: Any) -> None:
    ours = refusal(lambda: check_new_partitions(items))
    same_decision(ours, refusal(lambda: bare.create_partitions(items)))
    if ours is None and (snapshots := sent(check_new_partitions(items))):
        bare.create_partitions(snapshots)


@PROPERTY_SETTINGS
@given(containers(st.one_of(names, st.integers(0, 2), st.none(), st.binary(max_size=2))))
def test_delete_topics(bare: AdminClient, topics: Any) -> None:
    ours = refusal(lambda: check_delete_topics(topics))
    same_decision(ours, refusal(lambda: bare.delete_topics(topics)))
    if ours is None and (names := sent(check_delete_topics(topics))):
        bare.delete_topics(names)
