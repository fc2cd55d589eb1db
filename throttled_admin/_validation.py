"""Input checks made before anything is sent: each error names the topic and what is wrong.

Parity with confluent-kafka 2.16 (held by tests/test_input_parity.py against the bare client):

- Everything confluent-kafka refuses when the call is made, we refuse too, before anything is sent and with the
  topic named: a container that is not a list, num_partitions or new_total_count out of librdkafka's ranges,
  replication_factor over 10000, a replica_assignment next to a replication_factor or the default partition
  count, one whose size does not match. (Per-call options are checked in ``_options.py``.)
- What it accepts, we accept, converted as it converts: config values are sent as ``str(value)``.
- Where confluent-kafka accepts the call but every Kafka broker refuses the topic (an illegal name, zero
  partitions, duplicate or colliding topics, a broker listed twice in a partition, config values such as None
  that ``str()`` turns into garbage), we refuse it here: an error before anything is sent, not a quota token
  spent on a request that cannot succeed.

The checks return snapshots (fresh NewTopic / NewPartitions objects, copied configs and assignments): the call
keeps exactly what it was given, so a caller changing its objects afterwards cannot change a retry.
"""

from __future__ import annotations

import math
from typing import Any

from confluent_kafka.cimpl import NewPartitions, NewTopic

from throttled_admin._errors import TopicValueError
from throttled_admin._kafka.topic_names import collision_key, topic_name_error

__all__ = [
    "MAX_PARTITIONS",
    "MAX_REPLICATION_FACTOR",
    "check_delete_topics",
    "check_new_partitions",
    "check_new_topics",
]

# librdkafka's limits (rd_kafka_NewTopic_new, rd_kafka_NewPartitions_new).
MAX_PARTITIONS = 100000
MAX_REPLICATION_FACTOR = 10000
_MAX_BROKER_ID = 2**31 - 1  # an INT32 on the wire


def _check_list(value: Any, what: str, element: type, argument: str) -> list[Any]:
    # confluent-kafka takes a list and nothing else (a tuple, a generator or a single object is refused).
    if not isinstance(value, list):
        if isinstance(value, str):
            hint = f" {value!r}; pass a list: [{value!r}]"
        elif isinstance(value, (tuple, set, frozenset)):
            hint = "; pass a list"
        else:
            hint = ""
        raise TypeError(f"{argument} must be a list of {what}, got {type(value).__name__}{hint}")
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
    # bool is accepted as confluent-kafka accepts it (True is broker 1); the snapshot stores a plain int.
    return isinstance(value, int)


def _copy_assignment(name: str, assignment: Any, field: str) -> list[list[int]]:
    """A copy of a non-empty list of non-empty lists of broker ids, as librdkafka needs it, plus the broker's
    own rules (ids are INT32 >= 0, no broker twice in a partition, every partition the same width)."""
    if not isinstance(assignment, list):
        raise TypeError(f"topic {name!r}: {field} must be a list of broker-id lists, got {type(assignment).__name__}")
    copied: list[list[int]] = []
    for index, brokers in enumerate(assignment):
        if not isinstance(brokers, list) or not brokers or not all(_is_int(b) for b in brokers):
            raise ValueError(f"topic {name!r}: {field}[{index}] must be a non-empty list of int broker ids")
        ids = [int(b) for b in brokers]
        if not all(0 <= b <= _MAX_BROKER_ID for b in ids):
            raise TopicValueError(
                name,
                field,
                f"has a broker id outside 0..{_MAX_BROKER_ID}",
                value=ids,
                minimum=0,
                maximum=_MAX_BROKER_ID,
                index=index,
            )
        if len(set(ids)) != len(ids):
            raise ValueError(f"topic {name!r}: {field}[{index}] lists a broker twice: {ids}")
        if copied and len(ids) != len(copied[0]):
            raise ValueError(f"topic {name!r}: every partition in {field} needs the same number of replicas")
        copied.append(ids)
    return copied


def _config_value(name: str, key: str, value: Any) -> str:
    # confluent-kafka sends str(value) for any value; we take those whose str() is a meaningful config value.
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"  # Kafka's own spelling; it parses booleans case-insensitively
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"topic {name!r}: config {key!r} must be a finite number, got {value!r}")
        return str(value)
    raise TypeError(
        f"topic {name!r}: config {key!r} must be a str, int, float or bool, got {type(value).__name__}: {value!r}"
    )


def _copy_config(name: str, config: Any) -> dict[str, str] | None:
    if config is None:
        return None
    if not isinstance(config, dict):
        raise TypeError(f"topic {name!r}: config must be a dict of config names to values, got {type(config).__name__}")
    copied: dict[str, str] = {}
    for key, value in config.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"topic {name!r}: config names must be non-empty str, got {key!r}")
        copied[str(key)] = _config_value(name, key, value)
    return copied


def _out_of_range(name: str, field: str, value: Any, maximum: int, *, broker_default: bool) -> TopicValueError:
    default = ", or -1 for the broker default;" if broker_default else ","
    return TopicValueError(
        name, field, f"must be >= 1 (at most {maximum}){default} got {value!r}", value=value, minimum=1, maximum=maximum
    )


def _snapshot_topic(t: NewTopic) -> NewTopic:
    name = str(t.topic)
    partitions, replication = t.num_partitions, t.replication_factor
    if not (partitions == -1 or 1 <= partitions <= MAX_PARTITIONS):
        raise _out_of_range(name, "num_partitions", partitions, MAX_PARTITIONS, broker_default=True)
    if not (replication == -1 or 1 <= replication <= MAX_REPLICATION_FACTOR):
        raise _out_of_range(name, "replication_factor", replication, MAX_REPLICATION_FACTOR, broker_default=True)
    extra: dict[str, Any] = {}
    # An explicit replica_assignment=None reads back as None and is taken as no assignment (confluent-kafka
    # refuses it, a quirk of its C binding). An empty list is no assignment when the partition count is the
    # broker default, as confluent-kafka has it.
    assignment = t.replica_assignment
    if assignment is not None:
        if replication != -1:
            raise ValueError(
                f"topic {name!r}: give replica_assignment or replication_factor, not both "
                f"(leave replication_factor at -1 with an assignment)"
            )
        copied = _copy_assignment(name, assignment, "replica_assignment")
        if partitions == -1:
            if copied:
                raise ValueError(
                    f"topic {name!r}: a replica_assignment needs num_partitions set to its length "
                    f"({len(copied)}), not -1 (the broker default)"
                )
        elif len(copied) != partitions:
            raise ValueError(
                f"topic {name!r}: replica_assignment has {len(copied)} partition(s), num_partitions is {partitions}"
            )
        if copied:
            extra["replica_assignment"] = copied
    config = _copy_config(name, t.config)
    if config is not None:  # NewTopic refuses an explicit config=None
        extra["config"] = config
    return NewTopic(name, int(partitions), int(replication), **extra)


def check_new_topics(new_topics: Any) -> list[NewTopic]:
    """Snapshots of ``new_topics``, or the first problem as TypeError/ValueError naming the topic."""
    topics = _check_list(new_topics, "NewTopic", NewTopic, "new_topics")
    _check_names([str(t.topic) for t in topics], collisions=True)
    return [_snapshot_topic(t) for t in topics]


def _snapshot_partitions(p: NewPartitions) -> NewPartitions:
    name = str(p.topic)
    total = p.new_total_count
    if not 1 <= total <= MAX_PARTITIONS:
        raise _out_of_range(name, "new_total_count", total, MAX_PARTITIONS, broker_default=False)
    if p.replica_assignment is None:
        return NewPartitions(name, int(total))
    copied = _copy_assignment(name, p.replica_assignment, "replica_assignment")
    if not copied:
        raise TopicValueError(name, "replica_assignment", "must list one broker-id list per new partition", value=[])
    # One entry per partition added; a topic has at least one partition, so at most new_total_count - 1.
    if len(copied) >= total:
        raise TopicValueError(
            name,
            "replica_assignment",
            f"has {len(copied)} entries, but growing to {total} partitions adds at most {total - 1}",
            value=copied,
            maximum=total - 1,
        )
    return NewPartitions(name, int(total), copied)


def check_new_partitions(new_partitions: Any) -> list[NewPartitions]:
    """Snapshots of ``new_partitions``, or the first problem as TypeError/ValueError naming the topic."""
    items = _check_list(new_partitions, "NewPartitions", NewPartitions, "new_partitions")
    _check_names([str(p.topic) for p in items], collisions=False)
    return [_snapshot_partitions(p) for p in items]


def check_delete_topics(topics: Any) -> list[str]:
    """The names as plain str, or the first problem as TypeError/ValueError naming the topic."""
    names = [str(n) for n in _check_list(topics, "topic name (str)", str, "topics")]
    _check_names(names, collisions=False)
    return names
