"""Input parity with confluent-kafka: each row is held against the bare ``confluent_kafka.admin.AdminClient``.

confluent-kafka checks its input when the call is made, before it needs a broker, so a bare client pointed at an
unreachable address (127.0.0.1:1) shows what it accepts and refuses. Each row records that decision (checked
live, so a confluent-kafka upgrade that changes it fails here) and how ours relates to it:

- ``same``: we accept or refuse exactly as confluent-kafka does; a refusal raises an exception of the type
  confluent-kafka raises (``ValueError``, ``TypeError``, ``AttributeError``), with the topic named;
- ``refused=CODE``: confluent-kafka accepts the call, but every Kafka broker refuses the topic: we accept the
  call too, send nothing of that topic, and fail only its future, with the code the broker gives
  (tests/test_parity_one_bad_topic.py holds the codes against the bare client and a broker);
- ``laxer``: confluent-kafka refuses it, and we take it on purpose: an explicit ``replica_assignment=None`` (a
  quirk of its C binding: it reads back exactly as no assignment), and per-request timeouts over librdkafka's
  3600 s (they cap the call; each request is capped at the limit);
- ``stricter`` (per-call options only): a ``request_timeout`` of 0, refused at call time (no request can be
  answered in 0 ms; confluent-kafka fails every topic of the call with _TIMED_OUT instead).

docs/api.md ("Differences from confluent-kafka") lists each departure and why.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from throttled_admin import NotSentError, ThrottledAdminClient
from throttled_admin._validation import Checked, check_delete_topics, check_new_partitions, check_new_topics
from throttled_admin.admin import NewPartitions, NewTopic

UNREACHABLE: dict[str, Any] = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}
N = "parity-topic"  # every per-topic refusal must name it


@dataclass(frozen=True)
class Row:
    id: str
    call: str  # create_topics | create_partitions | delete_topics
    make: Callable[[], Any]  # builds the first argument afresh for each client
    confluent: str  # "accept" | "reject": bare confluent-kafka's decision at call time
    ours: str = "same"  # same | stricter | laxer
    kwargs: dict[str, Any] = field(default_factory=dict)
    names_topic: bool = True  # our refusal names the topic
    refused: int | None = None  # accepted, but this topic's future fails with this code, nothing of it sent
    key: Any = N  # the key of the refused topic's future

    @property
    def expected(self) -> str:
        if self.ours == "same":
            return self.confluent
        return "reject" if self.ours == "stricter" else "accept"


class _NewTopicSub(NewTopic):
    pass


class _ListSub(list):  # type: ignore[type-arg]
    pass


class _StrSub(str):
    pass


def T(*args: Any, **kwargs: Any) -> Callable[[], list[NewTopic]]:
    return lambda: [NewTopic(N, *args, **kwargs)]


def P(*args: Any, **kwargs: Any) -> Callable[[], list[NewPartitions]]:
    return lambda: [NewPartitions(N, *args, **kwargs)]


def _with_config(topic: NewTopic, config: Any) -> NewTopic:
    topic.config = config  # NewTopic refuses it as an argument, but not as an attribute set later
    return topic


CT, CP, DT = "create_topics", "create_partitions", "delete_topics"
# What a Kafka broker answers for the topic (see tests/test_parity_one_bad_topic.py).
CONFIG = KafkaError.INVALID_CONFIG
ASSIGNMENT = KafkaError.INVALID_REPLICA_ASSIGNMENT
DUPLICATE = KafkaError.INVALID_REQUEST
ILLEGAL = KafkaError.TOPIC_EXCEPTION  # INVALID_TOPIC_EXCEPTION
UNKNOWN = KafkaError.UNKNOWN_TOPIC_OR_PART  # no topic can have an illegal name

INPUT_ROWS = [
    # -- create_topics: counts -------------------------------------------------------------------------------
    Row("topic-1-1", CT, T(1, 1), "accept"),
    Row("topic-defaults", CT, T(), "accept"),
    Row("topic-default-partitions", CT, T(-1, 3), "accept"),
    Row("partitions-bool", CT, T(True, 1), "accept"),
    Row("partitions-max", CT, T(100000, 1), "accept"),
    Row("partitions-over-max", CT, T(100001, 1), "reject"),
    Row("partitions-minus-2", CT, T(-2, 1), "reject"),
    Row("partitions-0", CT, T(0, 1), "accept", refused=KafkaError.INVALID_PARTITIONS),
    Row("replication-max", CT, T(1, 10000), "accept"),
    Row("replication-over-max", CT, T(1, 10001), "reject"),
    Row("replication-minus-2", CT, T(1, -2), "reject"),
    Row("replication-0", CT, T(1, 0), "accept", refused=KafkaError.INVALID_REPLICATION_FACTOR),
    # -- create_topics: configs ------------------------------------------------------------------------------
    Row("config-int-value", CT, T(1, 1, config={"retention.ms": 1000}), "accept"),
    Row("config-float-value", CT, T(1, 1, config={"min.cleanable.dirty.ratio": 0.5}), "accept"),
    Row("config-bool-value", CT, T(1, 1, config={"preallocate": True}), "accept"),
    Row("config-empty", CT, T(1, 1, config={}), "accept"),
    Row("config-none-value", CT, T(1, 1, config={"retention.ms": None}), "accept", refused=CONFIG),
    Row("config-bytes-value", CT, T(1, 1, config={"retention.ms": b"1000"}), "accept", refused=CONFIG),
    Row("config-list-value", CT, T(1, 1, config={"retention.ms": [1000]}), "accept", refused=CONFIG),
    Row("config-nan-value", CT, T(1, 1, config={"min.cleanable.dirty.ratio": math.nan}), "accept", refused=CONFIG),
    Row("config-int-name", CT, T(1, 1, config={1: "x"}), "accept", refused=CONFIG),
    Row("config-empty-name", CT, T(1, 1, config={"": "x"}), "accept", refused=CONFIG),
    # -- create_topics: replica assignments ------------------------------------------------------------------
    Row("assignment", CT, T(2, replica_assignment=[[0], [1]]), "accept"),
    Row("assignment-bool-broker", CT, T(1, replica_assignment=[[True]]), "accept"),
    Row("assignment-empty-default-count", CT, T(replica_assignment=[]), "accept"),
    Row("assignment-empty", CT, T(2, replica_assignment=[]), "reject"),
    Row("assignment-default-count", CT, T(replica_assignment=[[0], [1]]), "reject"),
    Row("assignment-and-replication", CT, T(2, 1, replica_assignment=[[0], [1]]), "reject"),
    Row("assignment-empty-and-replication", CT, T(-1, 1, replica_assignment=[]), "reject"),
    Row("assignment-short", CT, T(3, replica_assignment=[[0], [1]]), "reject"),
    Row("assignment-tuple", CT, T(1, replica_assignment=((0,),)), "reject"),
    Row("assignment-inner-tuple", CT, T(1, replica_assignment=[(0,)]), "reject"),
    Row("assignment-inner-empty", CT, T(1, replica_assignment=[[]]), "reject"),
    Row("assignment-str-broker", CT, T(1, replica_assignment=[["0"]]), "reject"),
    Row("assignment-float-broker", CT, T(1, replica_assignment=[[0.0]]), "reject"),
    Row("assignment-str", CT, T(2, replica_assignment="ab"), "reject"),
    Row("assignment-dict", CT, T(replica_assignment={}), "reject"),
    Row("assignment-int", CT, T(1, replica_assignment=5), "reject"),
    Row("assignment-broker-twice", CT, T(1, replica_assignment=[[0, 0]]), "accept", refused=ASSIGNMENT),
    Row("assignment-negative-broker", CT, T(1, replica_assignment=[[-1]]), "accept", refused=ASSIGNMENT),
    Row("assignment-broker-over-int32", CT, T(1, replica_assignment=[[2**31]]), "accept", refused=ASSIGNMENT),
    Row("assignment-uneven", CT, T(2, replica_assignment=[[0], [0, 1]]), "accept", refused=ASSIGNMENT),
    Row("assignment-explicit-none", CT, T(1, 1, replica_assignment=None), "reject", "laxer"),
    # -- create_topics: names and containers -----------------------------------------------------------------
    Row("name-empty", CT, lambda: [NewTopic("", 1, 1)], "accept", refused=ILLEGAL, key=""),
    Row("name-space", CT, lambda: [NewTopic("a b", 1, 1)], "accept", refused=ILLEGAL, key="a b"),
    Row("name-dot", CT, lambda: [NewTopic(".", 1, 1)], "accept", refused=ILLEGAL, key="."),
    Row("name-too-long", CT, lambda: [NewTopic("a" * 250, 1, 1)], "accept", refused=ILLEGAL, key="a" * 250),
    Row("duplicate", CT, lambda: [NewTopic(N, 1, 1), NewTopic(N, 1, 1)], "accept", refused=DUPLICATE),
    Row("colliding", CT, lambda: [NewTopic("a.b", 1), NewTopic("a_b", 1)], "accept", refused=ILLEGAL, key="a_b"),
    Row("tuple", CT, lambda: (NewTopic(N, 1, 1),), "reject", names_topic=False),
    Row("generator", CT, lambda: (t for t in [NewTopic(N, 1, 1)]), "reject", names_topic=False),
    Row("empty-list", CT, list, "reject", names_topic=False),
    Row("single-newtopic", CT, lambda: NewTopic(N, 1, 1), "reject", names_topic=False),
    Row("list-of-str", CT, lambda: [N], "reject"),
    Row("bare-str", CT, lambda: N, "reject"),
    Row("none-among", CT, lambda: [None, NewTopic(N, 1, 1)], "reject", names_topic=False),
    Row("none", CT, lambda: None, "reject", names_topic=False),
    Row("newpartitions-in-create", CT, lambda: [NewPartitions(N, 2)], "reject", names_topic=False),
    Row("config-not-a-dict", CT, lambda: [_with_config(NewTopic(N, 1, 1), ["x"])], "accept", refused=CONFIG),
    Row("list-subclass", CT, lambda: _ListSub([NewTopic(N, 1, 1)]), "accept"),
    Row("newtopic-subclass", CT, lambda: [_NewTopicSub(N, 1, 1)], "accept"),
    # -- create_partitions -----------------------------------------------------------------------------------
    Row("grow", CP, P(2), "accept"),
    Row("grow-max", CP, P(100000), "accept"),
    Row("grow-over-max", CP, P(100001), "reject"),
    Row("grow-0", CP, P(0), "reject"),
    Row("grow-minus-1", CP, P(-1), "reject"),
    Row("grow-assignment", CP, P(3, [[0], [1]]), "accept"),
    Row("grow-assignment-empty", CP, P(3, []), "reject"),
    Row("grow-assignment-inner-empty", CP, P(3, [[]]), "reject"),
    Row("grow-assignment-tuple", CP, P(3, ((0,), (1,))), "reject"),
    Row("grow-assignment-inner-tuple", CP, P(3, [(0,), (1,)]), "reject"),
    Row("grow-assignment-str-broker", CP, P(3, [["0"]]), "reject"),
    Row("grow-assignment-too-many", CP, P(3, [[0], [1], [2], [3]]), "reject"),
    Row("grow-assignment-as-many-as-total", CP, P(3, [[0], [1], [2]]), "accept", refused=ASSIGNMENT),
    Row("grow-assignment-broker-twice", CP, P(3, [[0, 0]]), "accept", refused=ASSIGNMENT),
    Row("grow-assignment-negative-broker", CP, P(3, [[-1]]), "accept", refused=ASSIGNMENT),
    Row("grow-assignment-explicit-none", CP, P(3, None), "reject", "laxer"),
    Row("grow-duplicate", CP, lambda: [NewPartitions(N, 2), NewPartitions(N, 3)], "accept", refused=DUPLICATE),
    Row("grow-name-empty", CP, lambda: [NewPartitions("", 2)], "accept", refused=UNKNOWN, key=""),
    Row("grow-name-space", CP, lambda: [NewPartitions("a b", 2)], "accept", refused=UNKNOWN, key="a b"),
    Row("grow-tuple", CP, lambda: (NewPartitions(N, 2),), "reject", names_topic=False),
    Row("grow-empty-list", CP, list, "reject", names_topic=False),
    Row("grow-none-among", CP, lambda: [None, NewPartitions(N, 2)], "reject", names_topic=False),
    Row("grow-none", CP, lambda: None, "reject", names_topic=False),
    Row("grow-newtopic", CP, lambda: [NewTopic(N, 1, 1)], "reject", names_topic=False),
    # -- delete_topics ---------------------------------------------------------------------------------------
    Row("delete", DT, lambda: [N], "accept"),
    Row("delete-str-subclass", DT, lambda: [_StrSub(N)], "accept"),
    Row("delete-tuple", DT, lambda: (N,), "reject", names_topic=False),
    Row("delete-bare-str", DT, lambda: N, "reject"),
    Row("delete-empty-list", DT, list, "reject", names_topic=False),
    Row("delete-none", DT, lambda: [None], "reject", names_topic=False),
    Row("delete-int", DT, lambda: [1], "accept", refused=KafkaError._INVALID_ARG, key=1),
    Row("delete-bytes", DT, lambda: [N.encode()], "accept", refused=KafkaError._INVALID_ARG, key=N.encode()),
    Row("delete-name-empty", DT, lambda: [""], "accept", refused=UNKNOWN, key=""),
    Row("delete-name-space", DT, lambda: ["a b"], "accept", refused=UNKNOWN, key="a b"),
    Row("delete-none-among", DT, lambda: [None, N], "reject", names_topic=False),
    Row("delete-unhashable", DT, lambda: [[N]], "reject", names_topic=False),
    Row("delete-generator", DT, lambda: (n for n in [N]), "reject", names_topic=False),
    Row("delete-duplicate", DT, lambda: [N, N], "accept", refused=DUPLICATE),
]


def _option(id: str, call: str, confluent: str, ours: str = "same", **kwargs: Any) -> Any:
    make = {CT: T(1, 1), CP: P(2), DT: lambda: [N]}[call]
    row = Row(id, call, make, confluent, ours, kwargs=kwargs, names_topic=False)
    return pytest.param(row, id=id)


# Per-call options are checked by _options.py. Two deliberate differences: a request_timeout or operation_timeout
# over librdkafka's 3600 s for one request is taken (it caps the call; each request is capped at the limit), and
# a request_timeout of 0 is refused (no request can be answered in 0 ms).
OPTION_ROWS = [
    _option("validate-only-true", CT, "accept", validate_only=True),
    _option("validate-only-1", CT, "reject", validate_only=1),
    _option("validate-only-str", CT, "reject", validate_only="yes"),
    _option("validate-only-none", CT, "reject", validate_only=None),
    _option("grow-validate-only-1", CP, "reject", validate_only=1),
    _option("delete-validate-only", DT, "reject", validate_only=True),
    _option("request-timeout-30", CT, "accept", request_timeout=30),
    _option("request-timeout-0", CT, "accept", "stricter", request_timeout=0),
    _option("request-timeout-3600", CT, "accept", request_timeout=3600),
    _option("request-timeout-3600.0004", CT, "accept", request_timeout=3600.0004),
    _option("request-timeout-3600.0009", CT, "reject", "laxer", request_timeout=3600.0009),
    _option("request-timeout-7200", CT, "reject", "laxer", request_timeout=7200),
    _option("request-timeout-nan", CT, "reject", request_timeout=math.nan),
    _option("request-timeout-inf", CT, "reject", request_timeout=math.inf),
    _option("request-timeout-minus-1", CT, "reject", request_timeout=-1),
    _option("request-timeout-str", CT, "reject", request_timeout="1"),
    _option("request-timeout-true", CT, "accept", request_timeout=True),
    _option("operation-timeout-false", CT, "accept", operation_timeout=False),
    _option("operation-timeout-0", CT, "accept", operation_timeout=0),
    _option("operation-timeout-3600", CT, "accept", operation_timeout=3600),
    _option("operation-timeout-3601", CT, "reject", "laxer", operation_timeout=3601),
    _option("operation-timeout-nan", CT, "reject", operation_timeout=math.nan),
    _option("operation-timeout-minus-1", CT, "reject", operation_timeout=-1),
    _option("grow-request-timeout-nan", CP, "reject", request_timeout=math.nan),
    _option("delete-request-timeout-inf", DT, "reject", request_timeout=math.inf),
    _option("delete-operation-timeout-nan", DT, "reject", operation_timeout=math.nan),
    _option("unknown-keyword", CT, "reject", foo=1),
]


def _decision(call: Callable[[], Any]) -> tuple[str, BaseException | None]:
    try:
        call()
    except (TypeError, ValueError, AttributeError) as exc:
        return "reject", exc
    return "accept", None


@pytest.fixture(scope="module")
def bare() -> AdminClient:
    return AdminClient(UNREACHABLE)


@pytest.fixture(scope="module")
def ours() -> Iterator[ThrottledAdminClient]:
    with ThrottledAdminClient(UNREACHABLE, default_api_timeout_ms=60000) as admin:
        yield admin


def _confluent_decision(bare: AdminClient, row: Row) -> tuple[str, BaseException | None]:
    return _decision(lambda: getattr(bare, row.call)(row.make(), **row.kwargs))


def _same_refusal(row: Row, theirs: BaseException | None, error: BaseException | None) -> None:
    """Ours is raised at call time exactly where confluent-kafka raises, with its exception type."""
    if error is None:
        return
    assert isinstance(error, (TypeError, ValueError, AttributeError)), repr(error)
    if theirs is not None:
        assert isinstance(error, type(theirs)), f"confluent-kafka raises {theirs!r}, we raise {error!r}"
    if row.names_topic:
        assert repr(N) in str(error), f"the message does not name the topic: {error}"


CHECKS: dict[str, Callable[[Any], Checked[Any]]] = {
    CT: check_new_topics,
    CP: check_new_partitions,
    DT: check_delete_topics,
}


@pytest.mark.parametrize("row", INPUT_ROWS, ids=[r.id for r in INPUT_ROWS])
def test_checks_decide_as_the_table_says(bare: AdminClient, row: Row) -> None:
    confluent, theirs = _confluent_decision(bare, row)
    assert confluent == row.confluent, "confluent-kafka's own decision changed"
    decision, error = _decision(lambda: CHECKS[row.call](row.make()))
    assert decision == row.expected, f"ours: {error!r}"
    _same_refusal(row, theirs, error)
    if decision == "accept":
        refusals = {key: item.code() for key, item in CHECKS[row.call](row.make()) if isinstance(item, KafkaError)}
        assert refusals == ({} if row.refused is None else {row.key: row.refused})


@pytest.mark.parametrize("row", [r for r in INPUT_ROWS if r.expected == "accept"], ids=lambda r: r.id)
def test_bare_confluent_kafka_accepts_our_snapshots(bare: AdminClient, row: Row) -> None:
    # What we pass on must never meet a call-time error of confluent-kafka's (the whole call would fail), and
    # confluent-kafka keys its futures as the checks key the topics (the client hands results on by those keys).
    checked = [(key, item) for key, item in CHECKS[row.call](row.make()) if not isinstance(item, KafkaError)]
    if checked:
        futures = getattr(bare, row.call)([item for _, item in checked], **row.kwargs)
        assert list(futures) == [key for key, _ in checked]
        assert all(isinstance(future, concurrent.futures.Future) for future in futures.values())


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id) for r in INPUT_ROWS] + OPTION_ROWS)
def test_client_decides_as_the_table_says(bare: AdminClient, ours: ThrottledAdminClient, row: Row) -> None:
    confluent, theirs = _confluent_decision(bare, row)
    assert confluent == row.confluent, "confluent-kafka's own decision changed"
    decision, error = _decision(lambda: getattr(ours, row.call)(row.make(), **row.kwargs))
    assert decision == row.expected, f"ours: {error!r}"
    _same_refusal(row, theirs, error)
    if row.refused is not None:
        futures = getattr(ours, row.call)(row.make(), **row.kwargs)
        exc = futures[row.key].exception(0)  # failed at once: nothing was sent
        assert isinstance(exc, NotSentError), repr(exc)  # a KafkaException
        assert exc.args[0].code() == row.refused, exc
        # Names the topic (Kafka's own words for an illegal name: "the empty string" for '')
        assert repr(row.key) in exc.args[0].str() or (row.key == "" and "the empty string" in exc.args[0].str())
