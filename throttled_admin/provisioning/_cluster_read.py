"""What a group reads of its cluster's topics: its own names, and for a row that may create a topic every name
that collides with it, not every topic of the cluster.

Kafka takes '.' and '_' for the same character in topic names (their metric names collide), and refuses to create
a topic whose name collides with an existing one. The executor says so before sending ("collides with the
existing topic"), so a row that may create (``ensure``, ``create``) asks about each spelling of its name: a name
with k of those characters has 2**k, itself included. Up to ``MAX_SEPARATORS`` of them (32 spellings) they are
asked about by name; a group with a name of more lists every topic of the cluster instead, once, as every read did
before issue 29. The broker refuses a colliding create itself too (INVALID_TOPIC_EXCEPTION), so a name past the cap
is never created beside its twin either way.

Costs, client CPU on this machine (``describe_topics`` with one future, against a QuotaBroker in another process):
a listing costs about 20 us a topic of 5 partitions (31 ms for the fleet benchmark's 1,500-topic cluster), a name
asked about and absent 7 us, a topic described 96 us (confluent-kafka makes a TopicDescription with a Node object
per replica, in-sync replica and leader). A fleet entity's first read (74 names, 74 more spellings, all absent) went
from up to 31 ms to 1.5 ms, its rerun's (74 topics present) to 9 ms. The cap keeps a row's spellings (mostly
absent) at most 32 x 7 us, about what listing 11 topics costs; names with more than 5 '.' or '_' are rare
(``tenant.domain.dataset.v1`` has 3: 8 spellings). A group owning most of a small cluster's topics reads them
slower than a listing would (96 against 20 us a topic), but never the cluster's other topics.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from throttled_admin import ThrottledAdminClient
from throttled_admin._driver.metadata_read import ContactWatch, read_metadata, read_topics
from throttled_admin.provisioning._decide import TopicState
from throttled_admin.provisioning._plan import PlanRow

__all__ = ["MAX_SEPARATORS", "names_to_read", "read_cluster_topics", "spellings"]

#: A name with more '.' or '_' than this (2**5 = 32 spellings) makes its group list the cluster instead.
MAX_SEPARATORS = 5
_SEPARATOR = re.compile(r"[._]")
_MAY_CREATE = ("ensure", "create")


def _separators(name: str) -> int:
    return name.count(".") + name.count("_")


def spellings(name: str) -> list[str]:
    """Every name Kafka takes for ``name`` (itself included): each '.' or '_' either way, in the order of
    ``itertools.product("._")`` over them. A name with none or one (a fleet's ``tenant.topic``) is not split: for a
    fleet entity's 42 rows, ``names_to_read`` took 253 us that way, and takes 69 us this way."""
    count = _separators(name)
    if count == 0:
        return [name]
    if count == 1:
        return [name.replace("_", "."), name.replace(".", "_")]
    parts = _SEPARATOR.split(name)
    return [
        "".join(part + separator for part, separator in zip(parts, (*separators, ""), strict=True))
        for separators in itertools.product("._", repeat=len(parts) - 1)
    ]


def names_to_read(rows: Iterable[PlanRow]) -> list[str] | None:
    """The names a group asks its cluster about: each row's, and every spelling of those a row may create;
    None (list every topic) when a name that may be created has more than ``MAX_SEPARATORS`` '.' or '_'."""
    names: dict[str, None] = {}
    for row in rows:
        if row.action not in _MAY_CREATE:
            names[row.topic] = None
        elif _separators(row.topic) > MAX_SEPARATORS:
            return None
        else:
            names.update(dict.fromkeys(spellings(row.topic)))
    return list(names)


def read_cluster_topics(
    admin: ThrottledAdminClient, watch: ContactWatch, names: Sequence[str] | None, timeout_s: float
) -> dict[str, TopicState]:
    """The topics among ``names`` the cluster has (None: every topic), failing fast: at once on a wrong password,
    in a few seconds when no broker can be reached (``_driver.metadata_read``), not at ``timeout_s`` with "Broker
    transport failure". Replicas are counted on the lowest partition."""
    topics: dict[str, TopicState] = {}
    if names is None:
        for name, topic in read_metadata(admin, watch, timeout_s).topics.items():
            partitions = topic.partitions
            replicas = len(partitions[min(partitions)].replicas) if partitions else 0
            topics[name] = TopicState(len(partitions), replicas)
        return topics
    for name, description in read_topics(admin, watch, names, timeout_s).items():
        described = description.partitions
        replicas = len(min(described, key=lambda p: p.id).replicas) if described else 0
        topics[name] = TopicState(len(described), replicas)
    return topics
