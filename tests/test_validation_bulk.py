"""The whole-list fast paths of the input checks (issue 40), and the lone topic's (issue 39), decide exactly as the
per-topic checks do."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError
from hypothesis import given
from hypothesis import strategies as st

from throttled_admin._kafka.topic_names import MAX_NAME_LENGTH, collision_key, topic_name_error
from throttled_admin._validation import (
    MAX_PARTITIONS,
    MAX_REPLICATION_FACTOR,
    _all_plain,
    _plain_counts_of,
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
    """The counts read over the whole list (``_plain_counts_of``) make the snapshots ``_snapshot_topic`` makes, topic
    by topic, and ``check_new_topics`` sends fresh objects."""
    names = [str(t.topic) for t in topics]
    per_topic = [_fields(_snapshot_topic(t, name)) for t, name in zip(topics, names, strict=True)]
    counts = _plain_counts_of(topics)
    plain = all(t.config is None and t.num_partitions != 0 and t.replication_factor != 0 for t in topics)
    assert (counts is not None) == plain
    if counts is not None:
        made = [NewTopic(name, p, r) for name, p, r in zip(names, *counts, strict=True)]
        assert [_fields(item) for item in made] == per_topic
        sent = [item for _, item in check_new_topics(topics) if not isinstance(item, KafkaError)]
        assert not {id(item) for item in sent} & {id(topic) for topic in topics}


def test_a_topic_with_an_assignment_or_a_config_takes_the_per_topic_checks() -> None:
    with_assignment = NewTopic("b", 2, replica_assignment=[[1], [2]])
    assert _plain_counts_of([NewTopic("a", 1, 1), with_assignment]) is None
    assert _plain_counts_of([NewTopic("a", 1, 1), NewTopic("b", 1, 1, config={})]) is None
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


_part_names = st.sampled_from(["a", "b", "c.d", "c_d", "e", "bad name", "", "f", "g"])
_part_counts = st.sampled_from([-1, 1, 2, 0, MAX_PARTITIONS + 1])


@given(
    st.lists(st.tuples(_part_names, _part_counts, st.sampled_from([-1, 1, 0])), min_size=2, max_size=8),
    st.integers(1, 8),
    st.booleans(),
)
def test_a_call_checked_in_two_parts_decides_as_one_checked_whole(
    rows: list[tuple[str, int, int]], first: int, configured: bool
) -> None:
    """``first`` (issue 40): the same errors raised, and the same items per name, sent or refused, as the call checked
    whole; while staged, only the first part's items exist, and ``finish`` gives the rest's to send."""
    topics = [NewTopic(name, partitions, replicas) for name, partitions, replicas in rows]
    if configured:
        topics[-1] = NewTopic(*rows[-1], config={"cleanup.policy": "compact"})
    whole = _checked(topics)
    if isinstance(whole, tuple):  # raised: the same error, whole or in two parts
        with pytest.raises(whole[0]) as raised:
            check_new_topics(topics, first=first)
        assert str(raised.value) == whole[1]
        return
    checked = check_new_topics(topics, first=first)
    sent = checked.sent()
    if checked.staged:
        assert len(checked.items) == first < len(topics)
        sent += checked.finish()
        assert not checked.staged
    as_whole = [(name, (i.code(), i.str()) if isinstance(i, KafkaError) else _fields(i)) for name, i in checked]
    assert as_whole == whole
    assert checked.refused == check_new_topics(topics).refused
    assert [_fields(item) for item in sent] == [fields for _, fields in whole if not isinstance(fields[0], int)]


def test_which_calls_are_checked_in_two_parts() -> None:
    """Plain topics, more than the first part, no name twice, the first part all legal and apart: else whole."""
    plain = [NewTopic(f"t{i}", 1, 1) for i in range(5)]
    assert check_new_topics(plain, first=2).staged
    assert not check_new_topics(plain).staged
    assert not check_new_topics(plain, first=5).staged
    assert not check_new_topics([*plain, NewTopic("t4", 1, 1)], first=2).staged  # t4 twice
    assert not check_new_topics([NewTopic("bad name", 1, 1), *plain], first=2).staged
    assert not check_new_topics([NewTopic("a.b", 1, 1), NewTopic("a_b", 1, 1), *plain], first=2).staged
    assert check_new_topics([*plain, NewTopic("bad name", 1, 1)], first=2).staged  # refused when finished
    assert not check_new_topics([*plain, NewTopic("c", 1, 1, config={})], first=2).staged
    with pytest.raises(RuntimeError, match="checked whole"):
        check_new_topics(plain).finish()


class _Named(NewTopic):
    """A NewTopic whose name is what its property says: one that NewTopic itself refuses (a NUL in it)."""

    @property
    def topic(self) -> str:  # type: ignore[override]
        return "x\x00y" if self.num_partitions == 2 else "t"


def test_a_call_that_would_raise_late_is_checked_whole() -> None:
    """A subclass's name may be one a snapshot refuses (ValueError): the call raises before anything is sent, as
    checked whole, not after its first part went (found by review)."""
    topics = [NewTopic(f"t{i}", 1, 1) for i in range(4)] + [_Named("n", 2, 1)]
    with pytest.raises(ValueError, match="null"):
        check_new_topics(topics, first=2)


class _NumberNamed(NewTopic):
    """A NewTopic whose ``topic`` property gives an int or a str subclass: keyed by its ``str()``, as before the
    names were read without ``str()`` when every one is a str already (issue 40)."""

    class _Text(str):
        pass

    @property
    def topic(self) -> Any:  # type: ignore[override]
        return self.num_partitions if self.replication_factor == 1 else self._Text(f"s{self.num_partitions}")


def test_a_name_that_is_no_plain_str_is_keyed_by_its_str() -> None:
    checked = check_new_topics([_NumberNamed("unused", 7, 1), _NumberNamed("unused", 8, 2), NewTopic("t", 1, 1)])
    assert checked.keys == ["7", "s8", "t"]
    assert {type(key) for key in checked.keys} == {str}
