"""The whole-list fast paths of the input checks (issue 40) decide exactly as the per-topic checks do."""

from __future__ import annotations

from confluent_kafka import KafkaError
from hypothesis import given
from hypothesis import strategies as st

from throttled_admin._kafka.topic_names import MAX_NAME_LENGTH, collision_key, topic_name_error
from throttled_admin._validation import _all_plain, check_new_topics
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
