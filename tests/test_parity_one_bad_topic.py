"""One bad topic fails alone, with the error code the broker gives it: held against bare confluent-kafka.

For every input that confluent-kafka accepts at call time but every Kafka broker refuses (the ``refused`` rows of
tests/test_input_parity.py), the same call, with a valid topic next to the bad one, is made by the bare client and
by ours, each against a QuotaBroker of its own. Bare confluent-kafka sends the call and the broker refuses the
bad topic; ours sends only the valid topic and fails the bad one before anything is sent. Both must end with the
same code for the bad topic, and the valid topic applied.

Left out, each a difference listed in docs/api.md ("Differences from confluent-kafka"): a topic twice in one call
(bare confluent-kafka 2.16.1 and 2.16.2 can crash the process when the broker answers), a non-``str`` name to delete (it
deletes ``str(name)`` and then fails every future of the call with a RuntimeError), a ``NewTopic.config`` set to
something other than a dict (it sends the topic without its config). And the empty name to delete: Kafka looks
it up and answers UNKNOWN_TOPIC_OR_PART, as ours does, where QuotaBroker answers INVALID_REQUEST (it takes the
empty name for a missing one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support import Conf, raised
from tests.test_input_parity import CP, CT, DT, INPUT_ROWS, N, Row
from throttled_admin import NotSentError, ThrottledAdminClient
from throttled_admin.admin import NewPartitions, NewTopic
from throttled_admin.testing import QuotaBroker

GOOD = "good-topic"
CRASHES_BARE = {"duplicate", "grow-duplicate", "delete-duplicate"}
ELSEWHERE = {"delete-int", "delete-bytes", "config-not-a-dict", "delete-name-empty"}
ROWS = [r for r in INPUT_ROWS if r.refused is not None and r.id not in CRASHES_BARE | ELSEWHERE]


def _with_good(row: Row) -> list[Any]:
    good: Any = {CT: NewTopic(GOOD, 1, 1), CP: NewPartitions(GOOD, 2), DT: GOOD}[row.call]
    return [*row.make(), good]


def _codes(futures: dict[Any, Any]) -> dict[Any, int | None]:
    out: dict[Any, int | None] = {}
    for key, future in futures.items():
        exc = future.exception(30)
        assert exc is None or isinstance(exc, KafkaException), repr(exc)
        out[key] = None if exc is None else exc.args[0].code()
    return out


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_the_bad_topic_gets_the_brokers_code_and_the_good_one_is_applied(
    quota_broker: Callable[..., QuotaBroker], row: Row
) -> None:
    theirs, ours = quota_broker(), quota_broker()
    for broker in (theirs, ours):
        if row.call == CP:
            broker.create_topic(N, 1)  # the broker checks an assignment against the topic
        if row.call != CT:
            broker.create_topic(GOOD, 1)
    bare = AdminClient({"bootstrap.servers": theirs.bootstrap_servers, "log_level": 0})
    bare_codes = _codes(getattr(bare, row.call)(_with_good(row)))
    with ThrottledAdminClient({"bootstrap.servers": ours.bootstrap_servers}) as admin:
        futures = getattr(admin, row.call)(_with_good(row))
        refused = futures[row.key].exception(0)  # at once: nothing of it was sent
        assert isinstance(refused, NotSentError), repr(refused)
        our_codes = _codes(futures)
    assert bare_codes == our_codes == {**dict.fromkeys(bare_codes, None), row.key: row.refused}
    mutations = ("CreateTopics", "CreatePartitions", "DeleteTopics")
    sent = [set(r.errors) for r in ours.request_log() if r.api_name in mutations]
    assert sent == [{key for key, code in our_codes.items() if code is None}], "only the valid topics are sent"


def test_unequal_replica_counts_fail_that_topic_only() -> None:
    """The case of the issue: ``create_topics`` with one topic whose partitions have different replica counts,
    against no broker at all. confluent-kafka returns futures (the broker would refuse the topic); so do we,
    and that topic's future fails with INVALID_REPLICA_ASSIGNMENT at once."""
    conf: Conf = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}
    uneven = NewTopic("uneven", 3, replica_assignment=[[10, 11], [0, 1, 2], [15, 20]])
    assert set(AdminClient(conf).create_topics([uneven, NewTopic("fine", 1, 1)])) == {"uneven", "fine"}
    with ThrottledAdminClient(conf) as admin:
        futures = admin.create_topics([uneven, NewTopic("fine", 1, 1)])
        assert list(futures) == ["uneven", "fine"]
        assert raised(futures["uneven"], 0).args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
        assert not futures["fine"].done()  # the call goes on
        grown = admin.create_partitions([NewPartitions("third", 55, [[1, 2, 3, 4, 5, 6, 7], [2]])])
        assert raised(grown["third"], 0).args[0].code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
