"""Input checks made before anything is sent: each error names the topic and what is wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka.cimpl import NewPartitions, NewTopic

from throttled_admin._topic_names import collision_key, topic_name_error

__all__ = ["check_delete_topics", "check_new_partitions", "check_new_topics"]


def _check_list(value: Any, what: str, element: type, argument: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{argument} must be a list of {what}, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{argument} must be a non-empty list of {what}")
    for index, item in enumerate(value):
        if not isinstance(item, element):
            raise TypeError(f"{argument}[{index}] must be {what}, got {type(item).__name__}: {item!r}")
    return list(value)


def _check_names(names: list[str], *, collisions: bool) -> None:
    """Legal names, no repeats, and (for creates) no two names that Kafka would refuse as colliding."""
    seen: dict[str, str] = {}
    for name in names:
        error = topic_name_error(name)
        if error:
            raise ValueError(f"topic {name!r}: {error}")
        key = collision_key(name) if collisions else name
        if key in seen:
            other = seen[key]
            if other == name:
                raise ValueError(f"topic {name!r} appears more than once in this call")
            raise ValueError(
                f"topics {other!r} and {name!r} collide: Kafka treats '.' and '_' alike in topic metric names"
            )
        seen[key] = name


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_assignment(name: str, assignment: Any, field: str) -> None:
    if assignment is None:
        return
    if not isinstance(assignment, Sequence) or not assignment:
        raise ValueError(f"topic {name!r}: {field} must be a non-empty list of broker-id lists")
    width = None
    for index, brokers in enumerate(assignment):
        if not isinstance(brokers, Sequence) or not brokers or not all(_is_int(b) and b >= 0 for b in brokers):
            raise ValueError(f"topic {name!r}: {field}[{index}] must be a non-empty list of broker ids")
        if len(set(brokers)) != len(brokers):
            raise ValueError(f"topic {name!r}: {field}[{index}] lists a broker twice: {list(brokers)}")
        if width is not None and len(brokers) != width:
            raise ValueError(f"topic {name!r}: every partition in {field} needs the same number of replicas")
        width = len(brokers)


def check_new_topics(new_topics: Any) -> list[NewTopic]:
    topics = _check_list(new_topics, "NewTopic", NewTopic, "new_topics")
    _check_names([t.topic for t in topics], collisions=True)
    for t in topics:
        name = t.topic
        if not _is_int(t.num_partitions) or not (t.num_partitions >= 1 or t.num_partitions == -1):
            raise ValueError(
                f"topic {name!r}: num_partitions must be >= 1, or -1 for the broker default; got {t.num_partitions!r}"
            )
        if not _is_int(t.replication_factor) or not (t.replication_factor >= 1 or t.replication_factor == -1):
            raise ValueError(
                f"topic {name!r}: replication_factor must be >= 1, or -1 for the broker default; "
                f"got {t.replication_factor!r}"
            )
        if t.replica_assignment:
            _check_assignment(name, t.replica_assignment, "replica_assignment")
            if t.replication_factor != -1:
                raise ValueError(f"topic {name!r}: give replica_assignment or replication_factor, not both")
        config = t.config
        if config is not None and (
            not isinstance(config, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in config.items())
        ):
            raise TypeError(f"topic {name!r}: config must be a dict of str to str")
    return topics


def check_new_partitions(new_partitions: Any) -> list[NewPartitions]:
    items = _check_list(new_partitions, "NewPartitions", NewPartitions, "new_partitions")
    _check_names([p.topic for p in items], collisions=False)
    for p in items:
        if not _is_int(p.new_total_count) or p.new_total_count < 1:
            raise ValueError(f"topic {p.topic!r}: new_total_count must be an int >= 1, got {p.new_total_count!r}")
        if p.replica_assignment:
            _check_assignment(p.topic, p.replica_assignment, "replica_assignment")
    return items


def check_delete_topics(topics: Any) -> list[str]:
    names = _check_list(topics, "topic name (str)", str, "topics")
    _check_names(names, collisions=False)
    return names
