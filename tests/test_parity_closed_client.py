"""A closed client, and a subclass that never called ``__init__``, raise what bare confluent-kafka raises.

Each call is made on a bare ``confluent_kafka.admin.AdminClient`` and on ours in the same state; the exception
(type and message) must be the same: "AdminClient has been closed" from ``poll`` and the admin calls, "Handle has
been closed" from the calls of the handle (``list_topics``, ``list_groups``, ``cluster_id``, ...), and ``len()`` is
0. Scripts and tests match these messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient

from throttled_admin import ThrottledAdminClient
from throttled_admin.admin import ConfigResource, NewPartitions, NewTopic, ResourceType

CONF: dict[str, Any] = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}

CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("poll", lambda a: a.poll(0.001)),
    ("create_topics", lambda a: a.create_topics([NewTopic("t", 1, 1)])),
    ("create_partitions", lambda a: a.create_partitions([NewPartitions("t", 2)])),
    ("delete_topics", lambda a: a.delete_topics(["t"])),
    ("describe_configs", lambda a: a.describe_configs([ConfigResource(ResourceType.TOPIC, "t")])),
    ("describe_topics", lambda a: a.describe_topics(TopicCollection(["t"]))),
    ("describe_cluster", lambda a: a.describe_cluster()),
    ("delete_records", lambda a: a.delete_records([TopicPartition("t", 0, 10)])),
    ("list_topics", lambda a: a.list_topics(timeout=0.1)),
    ("list_groups", lambda a: a.list_groups(timeout=0.1)),
    ("cluster_id", lambda a: a.cluster_id()),
    ("set_sasl_credentials", lambda a: a.set_sasl_credentials("user", "secret")),
]


def _raised(call: Callable[[Any], Any], admin: Any) -> tuple[type[BaseException], str] | None:
    try:
        call(admin)
    except Exception as exc:
        return type(exc), str(exc)
    return None


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_a_closed_client_raises_what_confluent_kafka_raises(name: str, call: Callable[[Any], Any]) -> None:
    with AdminClient(CONF) as bare:
        pass
    with ThrottledAdminClient(CONF) as ours:
        pass
    theirs = _raised(call, bare)
    assert theirs is not None
    assert theirs[0] is RuntimeError
    assert theirs[1] in ("AdminClient has been closed", "Handle has been closed")
    assert _raised(call, ours) == theirs
    assert len(bare) == len(ours) == 0  # type: ignore[arg-type]  # confluent-kafka's stub gives AdminClient no __len__; it has one
    # closing again is fine, as confluent-kafka's; and __exit__ returns None (never swallows an exception)
    assert ours.__exit__(None, None, None) is None  # type: ignore[func-returns-value]
    ours.close()


class _Bare(AdminClient):
    def __init__(self, conf: dict[str, Any]) -> None:  # never calls AdminClient.__init__
        pass


class _Ours(ThrottledAdminClient):
    def __init__(self, conf: dict[str, Any]) -> None:  # never calls ThrottledAdminClient.__init__
        pass


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_a_subclass_that_never_called_init_raises_what_confluent_kafka_raises(
    name: str, call: Callable[[Any], Any]
) -> None:
    bare, ours = _Bare(CONF), _Ours(CONF)
    theirs = _raised(call, bare)
    assert theirs is not None
    assert theirs[0] is RuntimeError
    assert _raised(call, ours) == theirs
    assert len(bare) == len(ours) == 0  # type: ignore[arg-type]  # confluent-kafka's stub gives AdminClient no __len__; it has one
    assert ours.closed
    assert "not initialized" in repr(ours)
    with pytest.raises(RuntimeError, match="AdminClient has been closed"):
        ours.metrics()
    assert ours.__exit__(None, None, None) is None  # type: ignore[func-returns-value]  # what it returns
