"""A forwarded mutation re-sent by its broker (issue 37, found on the three-node Kafka 4.4 quorum), on simulated time.

A KRaft broker forwards CreateTopics, DeleteTopics and CreatePartitions to the active controller; when its
connection to the controller drops before the answer, ``NodeToControllerRequestThread`` puts the request back first
in its queue and sends it to the next controller, which finds what the old one applied: "already exists" for a
topic this client's own request created. So an "already done" answer with no earlier attempt unanswered is hedged
(``PossiblyAppliedError``) when a connection was lost while its request was in flight or in the ``FORWARD_GRACE_S``
before it was sent (a node stopped: either handle's connection to it, or every broker down); an answer with no such
loss around it is the broker's last word."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewPartitions, NewTopic

from tests.engine_records import submit_call
from tests.test_engine_gate import DISCONNECTED, EXISTS, TIMED_OUT, answer, create, reached
from tests.test_engine_lanes import bulk, sends
from throttled_admin import PossiblyAppliedError
from throttled_admin._engine import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    FIRST,
    SECOND,
    CallSpec,
    Engine,
    Outbox,
    RequestKind,
)
from throttled_admin._engine.config import MAX_TOPICS_PER_REQUEST
from throttled_admin._engine.slot import FORWARD_GRACE_S
from throttled_admin._engine.work import Operation

# Node 2 stopped while the request was in flight on node 1's connection: node 2 may have been the active controller
# that node 1 forwarded the request to.
OTHER_NODE_GONE = DISCONNECTED.replace("/1", "/2")
ALL_DOWN = KafkaError(KafkaError._ALL_BROKERS_DOWN, "3/3 brokers are down")


def settled(out: Outbox) -> BaseException | None:
    [(_, exc)] = out.settle
    return exc


def submit(engine: Engine, kind: RequestKind, item: object, cost: int) -> Outbox:
    submit_call(engine, CallSpec(kind, 10.0, 10_000, True, None, None, 0.0), [("t", item, cost, 1)])
    return engine.step(0.0)


@pytest.mark.parametrize("line", [DISCONNECTED, OTHER_NODE_GONE], ids=["its own node", "another node"])
def test_already_exists_after_a_node_stopped_in_flight_is_possibly_applied(line: str) -> None:
    engine = reached()
    out = create(engine, ["t"], 0.0)
    engine.on_log(line, 0.05)
    exc = settled(answer(engine, out, 0.9, exc=EXISTS))
    assert isinstance(exc, PossiblyAppliedError), exc
    assert exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert "re-sent" in exc.args[0].str()


def test_already_exists_after_every_broker_went_down_in_flight_is_possibly_applied() -> None:
    engine = reached()
    out = create(engine, ["t"], 0.0)
    engine.on_error(ALL_DOWN, 0.05)
    assert isinstance(settled(answer(engine, out, 0.9, exc=EXISTS)), PossiblyAppliedError)


@pytest.mark.parametrize("report", ["log", "error"])
def test_a_node_the_second_handle_reports_gone_hedges_the_first_lanes_request_too(report: str) -> None:
    """Found by review (helper 56): only the second handle may hold a connection to the node that went away (the
    controller the first lane's request was forwarded to); its report is a node gone for both lanes' requests."""
    engine, out = bulk(4 * MAX_TOPICS_PER_REQUEST)
    first, second = sends(out)
    assert (first.lane, second.lane) == (FIRST, SECOND)
    if report == "log":
        engine.on_log(OTHER_NODE_GONE, 0.05, lane=SECOND)
    else:
        engine.on_error(KafkaError(KafkaError._TRANSPORT, OTHER_NODE_GONE.partition("]: ")[2]), 0.05, lane=SECOND)
    engine.on_results(first.request_id, dict.fromkeys(first.names, EXISTS), 0.9)
    told = {ref.name: exc for ref, exc in engine.step(0.9).settle}
    assert all(isinstance(told[name], PossiblyAppliedError) for name in first.names), told


def test_already_exists_with_no_connection_lost_in_flight_is_the_brokers_word() -> None:
    engine = reached()
    engine.on_log(OTHER_NODE_GONE, 0.0)  # long before the request: its controller had resigned by then
    sent_at = FORWARD_GRACE_S + 0.1
    out = create(engine, ["t"], sent_at)
    engine.on_log(TIMED_OUT, sent_at + 0.1)  # librdkafka's own timeout: no node went away
    exc = settled(answer(engine, out, sent_at + 0.9, exc=EXISTS))
    assert type(exc) is KafkaException
    assert exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_already_exists_for_a_request_sent_just_after_a_node_went_away_is_possibly_applied() -> None:
    """A combined KRaft node closes its broker listener, the loss librdkafka reports, 0.09-0.26 s before its
    controller resigns (Kafka 4.4): a request sent in between is forwarded to that controller, which may apply it and
    resign before it answers, and the broker re-sends it to the next one (the rolling restart's "already exists" of
    4 topics of one request, a CI run of 31c5ec6, with no loss reported while it was in flight)."""
    engine = reached()
    engine.on_log(OTHER_NODE_GONE, 0.0)
    out = create(engine, ["t"], 0.2)
    exc = settled(answer(engine, out, 0.9, exc=EXISTS))
    assert isinstance(exc, PossiblyAppliedError), exc
    assert exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize("validate_only", [False, True], ids=["a change", "validate_only"])
def test_already_exists_when_the_driver_read_the_controller_moved_is_possibly_applied(validate_only: bool) -> None:
    """No connection lost, but the driver read the controller quorum's leader epoch grown while the request was in
    flight (``_driver/quorum_watch``: a leadership change, a dedicated controller restarting): the answer may be its
    broker's re-send, in the controller's words; a validate-only request applies nothing, re-sent or not."""
    engine = reached()
    out = submit(engine, RequestKind(CREATE_TOPICS, validate_only), NewTopic("t", 1, 1), cost=1)
    assert out.send is not None
    engine.on_results(out.send.request_id, {"t": EXISTS}, 0.9, controller_moved=True)
    exc = settled(engine.step(0.9))
    assert exc is not None
    assert exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    if validate_only:
        assert type(exc) is KafkaException
        return
    assert isinstance(exc, PossiblyAppliedError), exc
    said = exc.args[0].str()
    assert said.endswith(
        " The cluster's controller changed since the client last read it, before or while this CreateTopics was in "
        "flight (outcome unknown): its broker may have re-sent it to the next controller after the old one applied it."
    ), said


def test_a_node_lost_in_flight_is_told_as_such_when_the_controller_moved_too() -> None:
    engine = reached()
    out = create(engine, ["t"], 0.0)
    engine.on_log(OTHER_NODE_GONE, 0.05)
    assert out.send is not None
    engine.on_results(out.send.request_id, {"t": EXISTS}, 0.9, controller_moved=True)
    exc = settled(engine.step(0.9))
    assert isinstance(exc, PossiblyAppliedError), exc
    assert "A node went away while this CreateTopics was in flight, or just before it was sent" in str(exc)


def test_a_refusal_that_is_not_already_done_stays_the_brokers_word() -> None:
    engine = reached()
    out = create(engine, ["t"], 0.0)
    engine.on_log(OTHER_NODE_GONE, 0.05)
    refused = KafkaException(KafkaError(KafkaError.INVALID_REPLICATION_FACTOR, "only 2 broker(s) are registered"))
    exc = settled(answer(engine, out, 0.9, exc=refused))
    assert type(exc) is KafkaException
    assert exc.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR


def test_a_validate_only_already_exists_stays_the_brokers_word() -> None:
    engine = reached()
    out = submit(engine, RequestKind(CREATE_TOPICS, True), NewTopic("t", 1, 1), cost=1)
    engine.on_log(OTHER_NODE_GONE, 0.05)
    exc = settled(answer(engine, out, 0.9, exc=EXISTS))  # a validate-only request applies nothing, re-sent or not
    assert type(exc) is KafkaException


@pytest.mark.parametrize(
    ("operation", "item", "code"),
    [
        (DELETE_TOPICS, "t", KafkaError.UNKNOWN_TOPIC_OR_PART),
        (CREATE_PARTITIONS, NewPartitions("t", 3), KafkaError.INVALID_PARTITIONS),
    ],
    ids=["delete: unknown topic", "create partitions: invalid partitions"],
)
def test_each_operations_already_done_after_a_node_stopped_in_flight_is_possibly_applied(
    operation: Operation, item: object, code: int
) -> None:
    engine = reached()
    out = submit(engine, RequestKind(operation, False), item, cost=2)
    engine.on_log(OTHER_NODE_GONE, 0.05)
    exc = settled(answer(engine, out, 0.9, exc=KafkaException(KafkaError(code))))
    assert isinstance(exc, PossiblyAppliedError), exc


@pytest.mark.parametrize(
    "refusal",
    [KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT],
    ids=["not controller", "request timed out"],
)
def test_already_exists_after_a_refusal_a_failover_may_follow_is_possibly_applied(refusal: int) -> None:
    """Seen on the three-node Kafka 4.4 quorum's rolling restart during a paced job (CI, 2026-11-30): an attempt in
    flight as the controller moved was refused (a controller losing its leadership after it wrote the records says
    NOT_CONTROLLER; a broker whose forwarded request timed out while re-sent says REQUEST_TIMED_OUT), yet applied.
    The retry's "already exists" was reported as the broker's last word: a topic this client created, told failed."""
    engine = reached()
    out = create(engine, ["t"], 0.0)
    out = answer(engine, out, 0.1, exc=KafkaException(KafkaError(refusal)))
    for now in (0.2, 0.4, 0.6):  # a metadata read first, after NOT_CONTROLLER; then the back-off
        if out.send is not None:
            break
        if out.read_metadata:
            engine.on_metadata({}, now)
        out = engine.step(now)
    exc = settled(answer(engine, out, 0.9, exc=EXISTS))
    assert isinstance(exc, PossiblyAppliedError), exc
    assert exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert f"refused with {KafkaError(refusal).name()}" in exc.args[0].str()


@pytest.mark.parametrize("validate_only", [False, True], ids=["a change", "validate_only"])
def test_nothing_is_final_until_a_failovers_refusal_could_be_committed(validate_only: bool) -> None:
    """A controller that resigns fails with NOT_CONTROLLER what it wrote and did not commit; the next one commits it
    once elected. So ``final_at`` (``wait_until_final``: read the cluster after it) is not the moment of the answer
    but the request's controller deadline from it. A validate_only request writes nothing: final at its answer."""
    engine = reached()
    spec = CallSpec(RequestKind(CREATE_TOPICS, validate_only), 10.0, 10_000, True, None, None, 0.0)
    submit_call(engine, spec, [("t", NewTopic("t", 1, 1), 1, 2)])
    out = engine.step(0.0)
    assert out.send is not None
    engine.on_results(out.send.request_id, {"t": KafkaException(KafkaError(KafkaError.NOT_CONTROLLER))}, 0.1)
    engine.step(0.1)
    final_at = engine.status.final_at
    if validate_only:
        assert final_at <= 0.1, final_at
    else:
        assert final_at >= 0.1 + out.send.operation_timeout_s - 1e-9, (final_at, out.send.operation_timeout_s)
