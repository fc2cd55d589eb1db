"""The whole-list fast paths of the input checks (issue 40), and the lone topic's (issue 39), decide exactly as the
per-topic checks do."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError
from hypothesis import given
from hypothesis import strategies as st

from throttled_admin._kafka.topic_names import MAX_NAME_LENGTH, collision_key, topic_name_error
from throttled_admin._validation import (
    MAX_PARTITIONS,
    MAX_REPLICATION_FACTOR,
    _all_plain,
    _plain_snapshots,
    _snapshot_topic,
    check_new_topics,
)
from throttled_admin.admin import NewTopic

_names = st.one_of(
    st.sampled_from(["", ".", "..", "a", "a.b", "a_b", "a b", "x\ny", "é", "-", "a" * MAX_NAME_LENGTH]),
    st.just("b" * (MAX_NAME_LENGTH + 1)),
    st.text(alphabet="ab._-\n ", min_size=0, max_size=6),
)


@given(st.lists(_names, min_size=1, max_size=8, unique=True), st.booleans())
def test_all_plain_is_every_name_legal_and_no_collision(keys: list[str], collisions: bool) -> None:
    legal = all(topic_name_error(key) is None for key in keys)
    distinct = len({collision_key(key) for key in keys}) == len(keys)
    assert _all_plain(keys, collisions=collisions) == (legal and (distinct or not collisions))


def test_a_non_str_key_takes_the_per_key_checks() -> None:
    assert not _all_plain(["a", 1], collisions=False)


@given(st.lists(_names, min_size=1, max_size=8), st.sampled_from([-1, 0, 1, 3]), st.sampled_from([-1, 0, 1, 3]))
def test_plain_topics_keep_their_per_topic_refusals(names: list[str], partitions: int, replicas: int) -> None:
    """Snapshots are fresh objects with the values given; a refused topic gets the error the per-topic rules give."""
    topics = [NewTopic(name, partitions, replicas) for name in names]
    checked = check_new_topics(topics)
    assert [key for key, _ in checked] == list(dict.fromkeys(names))
    for (key, item), given_topic in zip(checked, [topics[names.index(k)] for k, _ in checked], strict=True):
        if isinstance(item, KafkaError):
            continue
        assert item is not given_topic
        assert (item.topic, item.num_partitions, item.replication_factor) == (key, partitions, replicas)
        assert topic_name_error(key) is None
        assert 0 not in (partitions, replicas)
        assert names.count(key) == 1


def _fields(item: NewTopic | KafkaError) -> object:
    if isinstance(item, KafkaError):
        return item
    return (item.topic, item.num_partitions, item.replication_factor, item.replica_assignment, item.config)


_specs = st.builds(
    lambda name, partitions, replicas, config: (
        NewTopic(name, partitions, replicas) if config is None else NewTopic(name, partitions, replicas, config=config)
    ),
    st.sampled_from(["a", "b", "c.d", "c_d"]),
    st.sampled_from([-1, 1, 3, 0, MAX_PARTITIONS]),
    st.sampled_from([-1, 1, 2, 0, MAX_REPLICATION_FACTOR]),
    st.one_of(st.none(), st.just({"cleanup.policy": "compact"})),
)


@given(st.lists(_specs, min_size=1, max_size=6))
def test_plain_snapshots_over_the_list_are_the_per_topic_ones(topics: list[NewTopic]) -> None:
    """The whole-list snapshots (``_plain_snapshots``) equal ``_snapshot_topic``'s, topic by topic."""
    names = [str(t.topic) for t in topics]
    per_topic = [_fields(_snapshot_topic(t, name)) for t, name in zip(topics, names, strict=True)]
    whole = _plain_snapshots(topics, names)
    plain = all(t.config is None and t.num_partitions != 0 and t.replication_factor != 0 for t in topics)
    assert (whole is not None) == plain
    if whole is not None:
        assert [_fields(item) for item in whole] == per_topic
        assert all(item is not topic for item, topic in zip(whole, topics, strict=True))


def test_a_topic_with_an_assignment_or_a_config_takes_the_per_topic_checks() -> None:
    with_assignment = NewTopic("b", 2, replica_assignment=[[1], [2]])
    assert _plain_snapshots([NewTopic("a", 1, 1), with_assignment], ["a", "b"]) is None
    assert _plain_snapshots([NewTopic("a", 1, 1), NewTopic("b", 1, 1, config={})], ["a", "b"]) is None
    [(_, snapshot)] = check_new_topics([with_assignment])
    assert isinstance(snapshot, NewTopic)
    assert snapshot.replica_assignment == [[1], [2]]


class _ListSubclass(list[NewTopic]):
    """A list the lone-topic path of ``check_new_topics`` does not take (its type is not ``list``)."""


def _checked(call: object) -> object:
    try:
        checked = check_new_topics(call)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return [(name, (i.code(), i.str()) if isinstance(i, KafkaError) else _fields(i)) for name, i in checked]


@given(
    _names,
    st.sampled_from([-1, 0, 1, 3, MAX_PARTITIONS, MAX_PARTITIONS + 1, -2]),
    st.sampled_from([-1, 0, 2, MAX_REPLICATION_FACTOR, MAX_REPLICATION_FACTOR + 1]),
    st.one_of(st.none(), st.just({"cleanup.policy": "compact"}), st.just({"": "x"})),
    st.one_of(st.none(), st.just([[1]]), st.just([[1], [2]])),
)
def test_a_lone_topic_is_checked_as_in_a_list(
    name: str, partitions: int, replicas: int, config: dict[str, str] | None, assignment: list[list[int]] | None
) -> None:
    """The lone-topic path (issue 39) decides, refuses and raises exactly as the list's passes do."""
    extra: dict[str, Any] = {} if config is None else {"config": config}
    if assignment is not None:
        extra["replica_assignment"] = assignment
    try:
        topic = NewTopic(name, partitions, replicas, **extra)
    except (TypeError, ValueError):
        return  # confluent-kafka's own refusal: no call to check
    assert _checked([topic]) == _checked(_ListSubclass([topic]))
