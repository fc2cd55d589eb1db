"""Input checks made before anything is sent: where each problem surfaces follows confluent-kafka.

Parity with confluent-kafka 2.16 (held by tests/test_input_parity*.py against the bare client):

- **At call time, what confluent-kafka raises at call time, with its exception types**: a container that is not
  a list (``ValueError`` for ``create_topics``/``create_partitions``, ``TypeError`` for ``delete_topics``), an
  element that is no topic spec at all (``AttributeError``: confluent-kafka reads ``.topic`` of each; ours is
  also a ``TypeError``), ``None`` in ``delete_topics`` (``ValueError``), counts out of librdkafka's ranges, a
  ``replica_assignment`` that is not a list of non-empty lists of ints, or next to a ``replication_factor`` or
  the default partition count, or of the wrong length. Each message names the topic. Nothing of the call is sent.
- **What it accepts, we accept, converted as it converts**: config values are sent as ``str(value)``.
- **Per topic, what confluent-kafka leaves to the broker**: a topic that every Kafka broker refuses (an illegal
  name, zero partitions or replicas, the same topic twice, two colliding names, a broker listed twice or of
  unequal replica counts in an assignment, a config that ``str()`` turns into garbage) is not sent; only its
  future fails, with the error code the broker gives it (``INVALID_REPLICA_ASSIGNMENT``, ...), as a
  ``NotSentError``. The call's other topics go on.

The checks return snapshots (fresh NewTopic / NewPartitions objects, copied configs and assignments): the call
keeps exactly what it was given, so a caller changing its objects afterwards cannot change a retry.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, TypeVar

from confluent_kafka import KafkaError
from confluent_kafka.cimpl import NewPartitions, NewTopic

from throttled_admin._errors import TopicValueError
from throttled_admin._kafka.topic_names import all_legal, collision_key, none_collide, topic_name_error

__all__ = [
    "MAX_PARTITIONS",
    "MAX_REPLICATION_FACTOR",
    "Checked",
    "NotATopicSpecError",
    "check_delete_topics",
    "check_new_partitions",
    "check_new_topics",
]

# librdkafka's limits (rd_kafka_NewTopic_new, rd_kafka_NewPartitions_new).
MAX_PARTITIONS = 100000
MAX_REPLICATION_FACTOR = 10000
_MAX_BROKER_ID = 2**31 - 1  # an INT32 on the wire

T = TypeVar("T")


class Checked(Generic[T]):
    """One entry per future the call returns, in call order: its key and what is sent, or why that topic is not.
    Two lists, not a pair per topic: a bulk call's 50,000 pairs were as many objects for the garbage collector to
    walk before the first write (issue 40). Iterates as (key, item) pairs.

    A call checked in two parts (``check_new_topics``'s ``first``) is ``staged``: ``items`` holds its first part's
    until ``finish`` checks the rest."""

    __slots__ = ("_rest", "items", "keys", "refused")

    def __init__(
        self,
        keys: list[Any],
        items: list[T | KafkaError],
        *,
        refused: bool,
        rest: Callable[[], Checked[T]] | None = None,
    ) -> None:
        self.keys = keys
        self.items = items
        self.refused = refused  # some item is a KafkaError: the topic is not sent
        self._rest = rest  # the whole call's checks, made by ``finish``

    def __iter__(self) -> Iterator[tuple[Any, T | KafkaError]]:
        return zip(self.keys, self.items, strict=True)

    @property
    def staged(self) -> bool:
        """Whether the rest of the call is still to be checked (``finish``)."""
        return self._rest is not None

    def sent(self) -> list[T]:
        """The items to send, in call order (of the first part while ``staged``)."""
        return _sent(self.items) if self.refused else self.items  # type: ignore[return-value]

    def finish(self) -> list[T]:
        """A staged call's rest checked, as the whole call would have been: its items to send, in call order. The
        first part's items stay those already sent (a topic's checks depend only on the names before it)."""
        rest = self._rest
        if rest is None:
            raise RuntimeError("finish() of a call checked whole")
        whole, done = rest(), len(self.items)
        self._rest = None
        self.items = [*self.items, *whole.items[done:]]
        self.refused = whole.refused
        tail = whole.items[done:]
        return _sent(tail) if whole.refused else tail  # type: ignore[return-value]


def _sent(items: list[Any]) -> list[Any]:
    return [item for item in items if not isinstance(item, KafkaError)]


class NotATopicSpecError(TypeError, AttributeError):
    """An element that is no NewTopic / NewPartitions at all. confluent-kafka raises ``AttributeError`` here (it
    reads ``.topic`` of each element); this is one too, and a ``TypeError`` as this client raised before."""


def _plain_list(value: Any, element: type) -> bool:
    """A non-empty list of ``element`` objects, no subclass: the plain case, which ``_spec_list``'s checks all pass."""
    return type(value) is list and bool(value) and set(map(type, value)) == {element}


def _spec_list(value: Any, element: type, argument: str) -> list[Any]:
    """confluent-kafka's call-time checks of a list of NewTopic / NewPartitions, with its exception types."""
    if _plain_list(value, element):
        return list(value)
    what = element.__name__
    if isinstance(value, str):
        raise NotATopicSpecError(f"{argument} must be a list of {what}, got str {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{argument} must be a list of {what}, got {type(value).__name__}") from None
    for index, item in enumerate(items):
        if not hasattr(item, "topic"):
            raise NotATopicSpecError(f"{argument}[{index}] must be {what}, got {type(item).__name__}: {item!r}")
    if not isinstance(value, list):
        raise ValueError(f"{argument} must be a non-empty list of {what}, got {type(value).__name__}; pass a list")
    if not items:
        raise ValueError(f"{argument} must be a non-empty list of {what}")
    for index, item in enumerate(items):
        if not isinstance(item, element):
            raise ValueError(f"{argument}[{index}] must be {what}, got {type(item).__name__}: {item!r}")
    return items


def _refused(code: int, name: Any, reason: str) -> KafkaError:
    return KafkaError(code, f"topic {name!r} not sent: {reason}")


def _keyed(
    keys: list[Any],
    items: list[T | KafkaError],
    *,
    illegal_name: int,
    collisions: bool,
) -> Checked[T]:
    """One entry per key, in call order, with what the broker says per topic checked first (as its controller
    does): a name given twice (INVALID_REQUEST, the one future of that name), an illegal name (``illegal_name``),
    and for creates a name colliding with one sent before it in the call (INVALID_TOPIC_EXCEPTION)."""
    distinct = len(set(keys)) == len(keys)
    if distinct and _all_plain(keys, collisions=collisions):  # nothing to refuse by name (most calls)
        return Checked(keys, items, refused=_any_refused(items))
    counts = None if distinct else Counter(keys)  # None: every key once
    out: dict[Any, T | KafkaError] = {}
    sent: dict[str, str] = {}  # collision key -> the name sent under it
    for key, item in zip(keys, items, strict=True):
        if key in out:
            continue
        error = topic_name_error(key) if isinstance(key, str) else None
        if counts is not None and counts[key] > 1:
            item = _refused(KafkaError.INVALID_REQUEST, key, "it appears more than once in this call")
        elif error:
            # Kafka's own words, which name the topic: what the broker (and kafka-topics.sh) would say.
            item = KafkaError(illegal_name, error)
        elif collisions and (other := sent.get(collision_key(key))) is not None:
            item = _refused(
                KafkaError.TOPIC_EXCEPTION,
                key,
                f"it collides with {other!r} in this call (Kafka treats '.' and '_' alike in topic metric names)",
            )
        if collisions and not isinstance(item, KafkaError):
            sent.setdefault(collision_key(key), key)
        out[key] = item
    kept = list(out.values())
    return Checked(list(out), kept, refused=_any_refused(kept))


def _any_refused(items: list[Any]) -> bool:
    return any(issubclass(kind, KafkaError) for kind in set(map(type, items)))  # (the types in one pass in C)


def _all_plain(keys: list[Any], *, collisions: bool) -> bool:
    """True when every key is a legal topic name (``all_legal``) and, for creates, no two collide: checked over the
    whole list at once; False sends the call through the per-key checks."""
    if set(map(type, keys)) != {str} or not all_legal(keys):
        return False
    return not collisions or len(keys) < 2 or none_collide(keys)  # one name collides with none


def _is_int(value: Any) -> bool:
    # bool is accepted as confluent-kafka accepts it (True is broker 1); the snapshot stores a plain int.
    return isinstance(value, int)


def _assignment_shape(name: str, assignment: Any) -> list[list[int]]:
    """A copy of a list of non-empty lists of ints, or confluent-kafka's call-time ValueError."""
    if not isinstance(assignment, list):
        raise ValueError(
            f"topic {name!r}: replica_assignment must be a list of broker-id lists, got {type(assignment).__name__}"
        )
    for index, brokers in enumerate(assignment):
        if not isinstance(brokers, list) or not brokers or not all(_is_int(b) for b in brokers):
            raise ValueError(f"topic {name!r}: replica_assignment[{index}] must be a non-empty list of int broker ids")
    return [[int(b) for b in brokers] for brokers in assignment]


def _assignment_refusal(name: str, assignment: list[list[int]]) -> KafkaError | None:
    """The broker's rules for an assignment (ids are INT32 >= 0, no broker twice in a partition, every partition
    the same width): INVALID_REPLICA_ASSIGNMENT, as a Kafka broker answers."""
    for index, ids in enumerate(assignment):
        if not all(0 <= b <= _MAX_BROKER_ID for b in ids):
            why = f"replica_assignment[{index}] has a broker id outside 0..{_MAX_BROKER_ID}"
        elif len(set(ids)) != len(ids):
            why = f"replica_assignment[{index}] lists a broker twice: {ids}"
        elif len(ids) != len(assignment[0]):
            why = "every partition in replica_assignment needs the same number of replicas"
        else:
            continue
        return _refused(KafkaError.INVALID_REPLICA_ASSIGNMENT, name, why)
    return None


def _config_value(value: Any) -> str | None:
    # confluent-kafka sends str(value) for any value; we send those whose str() is a meaningful config value.
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"  # Kafka's own spelling; it parses booleans case-insensitively
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(value)
    return None


def _copy_config(name: str, config: Any) -> dict[str, str] | KafkaError:
    """A copy with values as sent, or INVALID_CONFIG, as a Kafka broker answers for what ``str()`` makes of them."""
    if not isinstance(config, dict):
        why = f"config must be a dict of config names to values, got {type(config).__name__}"
        return _refused(KafkaError.INVALID_CONFIG, name, why)
    copied: dict[str, str] = {}
    for key, value in config.items():
        if not isinstance(key, str) or not key:
            return _refused(KafkaError.INVALID_CONFIG, name, f"config names must be non-empty str, got {key!r}")
        text = _config_value(value)
        if text is None:
            why = f"config {key!r} must be a str, int, finite float or bool, got {type(value).__name__}: {value!r}"
            return _refused(KafkaError.INVALID_CONFIG, name, why)
        copied[key] = text
    return copied


def _out_of_range(name: str, field: str, value: Any, maximum: int, *, broker_default: bool) -> TopicValueError:
    default = ", or -1 for the broker default;" if broker_default else ","
    return TopicValueError(
        name, field, f"must be >= 1 (at most {maximum}){default} got {value!r}", value=value, minimum=1, maximum=maximum
    )


def _snapshot_topic(t: NewTopic, name: str) -> NewTopic | KafkaError:
    """``name``: ``str(t.topic)``, read once per topic by the caller."""
    partitions, replication, assignment, config = t.num_partitions, t.replication_factor, t.replica_assignment, t.config
    if (
        assignment is None
        and config is None
        and (0 < partitions <= MAX_PARTITIONS or partitions == -1)
        and (0 < replication <= MAX_REPLICATION_FACTOR or replication == -1)
    ):
        return NewTopic(name, int(partitions), int(replication))  # the plain case, which the checks below all pass
    # confluent-kafka's call-time checks first: any of them fails the whole call, as it does (0 is left to the
    # broker's per-topic refusal below).
    if not -1 <= partitions <= MAX_PARTITIONS:
        raise _out_of_range(name, "num_partitions", partitions, MAX_PARTITIONS, broker_default=True)
    if not -1 <= replication <= MAX_REPLICATION_FACTOR:
        raise _out_of_range(name, "replication_factor", replication, MAX_REPLICATION_FACTOR, broker_default=True)
    # An explicit replica_assignment=None reads back as None and is taken as no assignment (confluent-kafka
    # refuses it, a quirk of its C binding). An empty list is no assignment when the partition count is the
    # broker default, as confluent-kafka has it.
    copied: list[list[int]] = []
    if assignment is not None:
        if replication != -1:
            raise ValueError(
                f"topic {name!r}: give replica_assignment or replication_factor, not both "
                f"(leave replication_factor at -1 with an assignment)"
            )
        copied = _assignment_shape(name, assignment)
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
    # What confluent-kafka sends and every broker refuses: this topic's future fails, in the broker's order.
    copied_config = _copy_config(name, config) if config is not None else None  # NewTopic refuses config=None
    if isinstance(copied_config, KafkaError):
        return copied_config
    refusal = _assignment_refusal(name, copied)
    if refusal is not None:
        return refusal
    if replication == 0:
        why = "replication_factor must be >= 1, or -1 for the broker default; got 0"
        return _refused(KafkaError.INVALID_REPLICATION_FACTOR, name, why)
    if partitions == 0:
        why = "num_partitions must be >= 1, or -1 for the broker default; got 0"
        return _refused(KafkaError.INVALID_PARTITIONS, name, why)
    extra: dict[str, Any] = {}
    if copied:
        extra["replica_assignment"] = copied
    if copied_config is not None:
        extra["config"] = copied_config
    return NewTopic(name, int(partitions), int(replication), **extra)


# a NewTopic's attributes, read over a whole list in C (``_plain_counts_of``)
_TOPIC, _PARTITIONS, _REPLICAS = (operator.attrgetter(a) for a in ("topic", "num_partitions", "replication_factor"))
_ASSIGNMENT, _CONFIG = operator.attrgetter("replica_assignment"), operator.attrgetter("config")


def check_new_topics(new_topics: Any, *, first: int | None = None) -> Checked[NewTopic]:
    """Each topic's snapshot or the broker's error for it, keyed by name; confluent-kafka's call-time errors
    (TypeError / ValueError / AttributeError, naming the topic) raised.

    ``first``: a bulk call sent in two parts (``_client``) may be checked in two: what raises, and a name given
    twice, over the whole call at once, and the rest of the checks (snapshots, names' legality and collisions) for
    its first ``first`` topics now, for the others by ``Checked.finish`` (50,000 topics: 35-40 ms before the first
    write, 17-19 ms in two; issue 40). Only plain NewTopic objects (no subclass, assignment or config) whose first
    part all pass are; the result is ``staged``. Names are read as NewTopic gives them, a new str each, and passed
    through ``str()`` only if one is not a str (50,000 topics: the checks before the first write 22 -> 17 ms)."""
    if type(new_topics) is list and len(new_topics) == 1 and type(new_topics[0]) is NewTopic:
        # A lone topic (most calls): what the lines below make of it, without their passes over a list (issue 39)
        name = str(new_topics[0].topic)
        snapshot = _snapshot_topic(new_topics[0], name)
        error = topic_name_error(name)
        item = KafkaError(KafkaError.TOPIC_EXCEPTION, error) if error else snapshot
        return Checked([name], [item], refused=isinstance(item, KafkaError))
    plain = _plain_list(new_topics, NewTopic)  # (what may be checked in two parts)
    topics = list(new_topics) if plain else _spec_list(new_topics, NewTopic, "new_topics")
    names = list(map(_TOPIC, topics))  # (str already, from NewTopic itself: made a str only if not, in one more pass)
    if set(map(type, names)) != {str}:
        names = list(map(str, names))
    counts = _plain_counts_of(topics)
    if counts is None:
        snapshots = [_snapshot_topic(t, name) for t, name in zip(topics, names, strict=True)]
    elif (
        first is not None
        and len(topics) > first
        and plain  # (a subclass's name may be one NewTopic refuses: checked whole)
        and (staged := _staged(names, *counts, first)) is not None
    ):
        return staged
    else:
        snapshots = list(map(NewTopic, names, *counts))
    return _keyed(names, snapshots, illegal_name=KafkaError.TOPIC_EXCEPTION, collisions=True)


def _staged(names: list[str], partitions: list[int], replicas: list[int], first: int) -> Checked[NewTopic] | None:
    """Plain topics checked in two parts (``check_new_topics``): when no name is given twice and the first
    ``first`` are legal and none of them collide, their snapshots, the rest's made by ``finish``; else None."""
    head = names[:first]
    if len(set(names)) != len(names) or not _all_plain(head, collisions=True):
        return None
    snapshots: list[NewTopic | KafkaError] = list(map(NewTopic, head, partitions, replicas))

    def whole() -> Checked[NewTopic]:
        rest = map(NewTopic, names[first:], partitions[first:], replicas[first:])
        return _keyed(names, [*snapshots, *rest], illegal_name=KafkaError.TOPIC_EXCEPTION, collisions=True)

    return Checked(names, snapshots, refused=False, rest=whole)


def _plain_counts_of(topics: list[NewTopic]) -> tuple[list[int], list[int]] | None:
    """When every topic is of the plain case of ``_snapshot_topic`` (no assignment, no config, counts in range or
    -1), their partition and replica counts, read over the whole list at once (issue 40); else None."""
    count = len(topics)
    if list(map(_ASSIGNMENT, topics)).count(None) != count or list(map(_CONFIG, topics)).count(None) != count:
        return None
    partitions, replicas = list(map(_PARTITIONS, topics)), list(map(_REPLICAS, topics))
    if not _plain_counts(partitions, MAX_PARTITIONS) or not _plain_counts(replicas, MAX_REPLICATION_FACTOR):
        return None
    return partitions, replicas


def _plain_counts(counts: list[Any], maximum: int) -> bool:
    """Every count an int from 1 to ``maximum``, or -1 (the broker's default): nothing ``_snapshot_topic`` refuses."""
    for n in set(counts):  # noqa: SIM110 (a loop, not all() over a generator: a frame fewer per count)
        if type(n) is not int or not (0 < n <= maximum or n == -1):
            return False
    return True


def _snapshot_partitions(p: NewPartitions) -> NewPartitions | KafkaError:
    name = str(p.topic)
    total = p.new_total_count
    if not 1 <= total <= MAX_PARTITIONS:
        raise _out_of_range(name, "new_total_count", total, MAX_PARTITIONS, broker_default=False)
    if p.replica_assignment is None:
        return NewPartitions(name, int(total))
    copied = _assignment_shape(name, p.replica_assignment)
    if not copied:
        raise TopicValueError(name, "replica_assignment", "must list one broker-id list per new partition", value=[])
    if len(copied) > total:
        raise TopicValueError(
            name,
            "replica_assignment",
            f"has {len(copied)} entries, more than new_total_count ({total}); growing to {total} partitions adds "
            f"at most {total - 1}",
            value=copied,
            maximum=total - 1,
        )
    # One entry per partition added; a topic has at least one partition, so at most new_total_count - 1.
    if len(copied) == total:
        why = f"replica_assignment has {total} entries, but growing to {total} partitions adds at most {total - 1}"
        return _refused(KafkaError.INVALID_REPLICA_ASSIGNMENT, name, why)
    refusal = _assignment_refusal(name, copied)
    return refusal if refusal is not None else NewPartitions(name, int(total), copied)


def check_new_partitions(new_partitions: Any) -> Checked[NewPartitions]:
    """As ``check_new_topics``; an illegal name is UNKNOWN_TOPIC_OR_PART (no topic can have it)."""
    items = _spec_list(new_partitions, NewPartitions, "new_partitions")
    snapshots = [_snapshot_partitions(p) for p in items]
    return _keyed(
        [str(p.topic) for p in items], snapshots, illegal_name=KafkaError.UNKNOWN_TOPIC_OR_PART, collisions=False
    )


def _name_to_delete(item: Any) -> str | KafkaError:
    if isinstance(item, str):
        return str(item)  # a plain str, also for a str subclass
    # confluent-kafka deletes str(item), then fails every future of the call (its answer's keys are not the
    # items'): only this one fails here, not sent.
    why = f"a topic name must be a str, got {type(item).__name__}"
    return _refused(KafkaError._INVALID_ARG, item, why)


def check_delete_topics(topics: Any) -> Checked[str]:
    """Each name as a plain str or the reason it is not sent, keyed as confluent-kafka keys the futures (by the
    item given); confluent-kafka's call-time errors raised."""
    try:
        items = list(topics)
    except TypeError:
        raise TypeError(f"topics must be a list of topic names (str), got {type(topics).__name__}") from None
    for index, item in enumerate(items):
        if not isinstance(item, Hashable):  # confluent-kafka keys its futures by the items
            raise TypeError(f"topics[{index}] must be a topic name (str), got unhashable {type(item).__name__}")
    if not isinstance(topics, list):
        hint = f"; pass a list: [{topics!r}]" if isinstance(topics, str) else "; pass a list"
        raise TypeError(f"topics must be a list of topic names (str), got {type(topics).__name__}{hint}")
    if not items:
        raise ValueError("topics must be a non-empty list of topic names (str)")
    for index, item in enumerate(items):
        if item is None:
            raise ValueError(f"topics[{index}] must be a topic name (str), got None")
    keys = [str(item) if isinstance(item, str) else item for item in items]
    names = [_name_to_delete(item) for item in items]
    return _keyed(keys, names, illegal_name=KafkaError.UNKNOWN_TOPIC_OR_PART, collisions=False)
