"""Bulk creates on the client's own connections (``_driver/direct_creates``, issue 40): CreateTopics v4 written and
read as librdkafka does (``_driver/create_wire``), checked against kafka-python's protocol classes; end to end over
loopback against QuotaBroker (its faults: a late answer, a garbled one, a throttle, SASL) and Apache Kafka 4.4.
Every topic ends with a truthful outcome whichever connection carried it."""

from __future__ import annotations

import os
import select
import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError, ThrottleEvent
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse

from tests.real_kafka.broker import KafkaCluster
from tests.real_kafka.namespace import KafkaNamespace
from tests.reliability_helpers import admin_for, assert_truthful, error_code, outcomes
from tests.support import BrokerFactory
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin._driver import create_wire
from throttled_admin._driver.direct_creates import DirectCreates
from throttled_admin._driver.scheduler import SendOrder
from throttled_admin._driver.turns import Sending
from throttled_admin._driver.wire_codec import Reader
from throttled_admin._engine import SECOND

BULK = 1000  # the engine's second_lane_from: a request of this many topics may go direct


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}.{i:05d}" for i in range(count)]


def _warmed(admin: ThrottledAdminClient, names: list[str]) -> None:
    """A bulk call of ``names`` (``BULK`` of them), so that the client's own connections are open before the test's
    (the first request of the first bulk call goes through librdkafka while they open)."""
    created = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names]))
    assert set(created.values()) == {None}
    assert admin._direct.opened.result(10)


def _on_kafka(cluster: KafkaCluster, ns: KafkaNamespace) -> tuple[ThrottledAdminClient, list[str]]:
    """A client of the test's own entity on ``cluster``, warmed (``_warmed``), and the warm-up's topics."""
    admin = ThrottledAdminClient({"bootstrap.servers": cluster.bootstrap_servers, "client.id": ns.client_id})
    warm = [ns.topic(f"w{i}") for i in range(BULK)]
    _warmed(admin, warm)
    return admin, warm


# -- the codec ---------------------------------------------------------------------------------------------------


def test_the_request_is_what_kafka_python_reads_as_create_topics_v4() -> None:
    topics = [
        NewTopic("plain", 3, 2, config={"cleanup.policy": "compact", "retention.ms": "60000"}),
        NewTopic("defaults"),  # -1 and -1: the broker's defaults (KIP-464)
        NewTopic("assigned", replica_assignment=[[1, 2], [2, 3]]),
    ]
    body = create_wire.encode(topics, 12.5, validate_only=True)
    request = CreateTopicsRequest[4].decode(body)
    assert request.timeout_ms == 12500
    assert request.validate_only is True
    got = [(t[0], t[1], t[2], [tuple(a) for a in t[3]], [tuple(c) for c in t[4]]) for t in request.topics]
    assert got == [
        ("plain", 3, 2, [], [("cleanup.policy", "compact"), ("retention.ms", "60000")]),
        ("defaults", -1, -1, [], []),
        ("assigned", -1, -1, [(0, [1, 2]), (1, [2, 3])], []),
    ]


def _response(*topics: tuple[str, int, str | None], throttle_ms: int = 0) -> Reader:
    response = CreateTopicsResponse[4](throttle_time_ms=throttle_ms, topics=list(topics))
    return Reader(response.encode())


def test_the_answer_reads_as_librdkafka_hands_it_over() -> None:
    answer = create_wire.decode(
        _response(("a", 0, None), ("b", 36, "Topic 'b' already exists."), ("c", 37, None), throttle_ms=250),
        30.0,
        ["a", "b", "c"],
    )
    assert answer.throttle_ms == 250
    assert answer.results["a"] is None
    assert error_code(answer.results["b"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert str(answer.results["b"]) == str(KafkaError(36, "Topic 'b' already exists."))
    assert str(answer.results["c"]) == str(KafkaError(37))  # no message: librdkafka's own text for the code


def test_request_timed_out_is_no_error_when_the_broker_was_told_not_to_wait() -> None:
    """As ``rd_kafka_CreateTopicsResponse_parse``: an operation timeout of 0 asks the broker to start the creation
    and answer at once, REQUEST_TIMED_OUT."""
    assert create_wire.decode(_response(("a", 7, None)), 0.0, ["a"]).results == {"a": None}
    assert error_code(create_wire.decode(_response(("a", 7, None)), 5.0, ["a"]).results["a"]) == 7


@pytest.mark.parametrize(
    "topics", [[("a", 0, None), ("x", 0, None)], [("a", 0, None), ("a", 0, None)]], ids=["unrequested", "twice"]
)
def test_an_answer_librdkafka_fails_whole_does_not_parse(topics: list[tuple[str, int, str | None]]) -> None:
    with pytest.raises(ValueError, match="not asked for or is named twice"):
        create_wire.decode(_response(*topics), 30.0, ["a", "b"])


# -- end to end, QuotaBroker -------------------------------------------------------------------------------------


def test_a_bulk_call_goes_on_the_clients_own_connections(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with admin_for(broker, {"log_level": 0}) as admin:
        _warmed(admin, _names("warm", BULK))
        names = _names("bulk", 3 * BULK)
        results = outcomes(admin.create_topics([NewTopic(n, 2, 1, config={"retention.ms": "60000"}) for n in names]))
        assert set(results.values()) == {None}
        assert admin._direct.sent >= 1
        assert_truthful("create", results, broker.topics(), wanted=dict.fromkeys(names, 2))
        again = outcomes(admin.create_topics([NewTopic(n, 2, 1) for n in names[:BULK]]))
        assert {error_code(exc) for exc in again.values()} == {KafkaError.TOPIC_ALREADY_EXISTS}
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert {r.api_version for r in creates} == {4}  # the version librdkafka sends


def test_a_small_call_stays_on_librdkafka(quota_broker: BrokerFactory) -> None:
    with admin_for(quota_broker(), {"log_level": 0}) as admin:
        assert set(outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in _names("small", 50)])).values()) == {None}
        assert admin._direct.sent == 0
        assert not admin._direct.opened.done()  # never asked for


def test_a_throttled_answer_reaches_the_gate_and_throttle_cb_and_retires_the_connections(
    quota_broker: BrokerFactory,
) -> None:
    """Kafka accepts CreateTopics v4 over the quota and throttles its answer (KIP-599 by version): the throttle of
    an answer read on the client's own connection is told as librdkafka tells its own, and from then on every
    request goes through librdkafka (the broker mutes a throttled connection)."""
    broker = quota_broker(controller_mutation_rate=1000)  # a burst of 11,000 (Kafka's 11 windows of 1 s)
    events: list[ThrottleEvent] = []
    heard = threading.Event()

    def throttle_cb(event: ThrottleEvent) -> None:
        events.append(event)
        heard.set()

    with admin_for(broker, {"log_level": 0, "throttle_cb": throttle_cb}) as admin:
        _warmed(admin, _names("warm", BULK))
        names = _names("over", 12 * BULK)  # 13,000 mutations in all: the last answer is throttled
        results = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names]))
        assert set(results.values()) == {None}
        assert heard.wait(10)
        assert max(event.throttle_time for event in events) > 0
        sent = admin._direct.sent
        assert sent >= 1
        assert "retired" in repr(admin._direct)
        later = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in _names("later", BULK)]), 60)
        assert set(later.values()) == {None}
        assert admin._direct.sent == sent


@pytest.mark.parametrize("fault", ["late", "garbled"])
def test_an_answer_not_read_in_time_or_garbled_is_outcome_unknown_then_settled_truthfully(
    quota_broker: BrokerFactory, fault: str
) -> None:
    """The broker applies the request, and its answer comes after the request's timeout, or cannot be read: the
    connection is closed, the topics are outcome unknown (_TRANSPORT: written, the connection gone) and re-sent
    through librdkafka within the call's deadline, where "already exists" says what happened."""
    broker = quota_broker()
    with admin_for(broker, {"log_level": 0}) as admin:
        _warmed(admin, _names("warm", BULK))
        if fault == "late":
            broker.delay_next("CreateTopics", 4.0)
        else:
            broker.garble_next("CreateTopics", "add")
        names = _names("fault", BULK)
        futures = admin.create_topics([NewTopic(n, 1, 1) for n in names], request_timeout=1.5, timeout_ms=30000)
        results = outcomes(futures)
        assert "retired" in repr(admin._direct)
    assert_truthful("create", results, broker.topics())
    assert all(name in broker.topics() for name in names)


def test_sasl_scram_connections_authenticate_as_the_client(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(users={"alice": "alice-secret"}, sasl_mechanisms=["SCRAM-SHA-256"])
    conf = {
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "log_level": 0,
    }
    with admin_for(broker, conf) as admin:
        _warmed(admin, _names("warm", BULK))
        results = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in _names("sasl", 2 * BULK)]))
        assert set(results.values()) == {None}
        assert admin._direct.sent >= 1
        assert "alice-secret" not in repr(admin._direct)
    assert {r.principal for r in broker.request_log() if r.api_name == "CreateTopics"} == {"alice"}


def test_settings_its_connections_do_not_speak_leave_every_request_to_librdkafka(
    quota_broker: BrokerFactory,
) -> None:
    """An ``ssl.*`` setting the client's own connections do not load (a keystore): never opened."""
    conf: dict[str, Any] = {"bootstrap.servers": quota_broker().bootstrap_servers, "security.protocol": "ssl"}
    direct = DirectCreates({**conf, "ssl.keystore.location": "/nonexistent.p12"}, lambda lane, event: None)
    assert direct.opened.done()
    assert "retired" in repr(direct)


def test_close_with_a_request_in_flight_on_its_own_connection_settles_every_topic(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker()
    admin = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
    _warmed(admin, _names("warm", BULK))
    processed = broker.blackhole_next("CreateTopics")
    futures = admin.create_topics([NewTopic(n, 1, 1) for n in _names("closing", BULK)])
    assert processed.wait(10)
    sent = admin._direct.sent
    admin.close()
    results = outcomes(futures, 10)
    assert sent == 1  # this call's (the warm-up's one request went through librdkafka while they opened)
    assert_truthful("create", results, broker.topics())


# -- end to end, Apache Kafka 4.4 --------------------------------------------------------------------------------


@pytest.mark.kafka
def test_a_bulk_call_on_kafka_goes_on_the_clients_own_connections(
    kafka_broker: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    admin, warm = _on_kafka(kafka_broker, kafka_ns)
    names = [kafka_ns.topic(f"b{i}") for i in range(2 * BULK + 500)]
    try:
        results = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names]))
        assert set(results.values()) == {None}
        assert admin._direct.sent >= 1
        again = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names]))  # (the controller holds them all)
        assert {error_code(exc) for exc in again.values()} == {KafkaError.TOPIC_ALREADY_EXISTS}
    finally:
        admin.delete_topics(warm + names)
        admin.close()


# -- Apache Kafka 4.4, the three-node quorum ---------------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.slow
def test_quorum_the_node_its_own_connections_use_killed_under_a_bulk_call_leaves_every_topic_truthful(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    """kill -9 of the node the client's own connections talk to, as a bulk call's requests are on them: what was
    in flight there is outcome unknown (the connection gone), and the rest goes through librdkafka to the nodes left;
    every topic's outcome agrees with what the quorum holds."""
    admin, _ = _on_kafka(kafka_quorum, kafka_ns)
    try:
        assert "open" in repr(admin._direct)
        target = kafka_quorum.node(admin._direct._node)
        names = [kafka_ns.topic(f"k{i}") for i in range(3 * BULK)]
        futures = admin.create_topics([NewTopic(n, 1, 1) for n in names], timeout_ms=120_000)
        kafka_quorum.stop_node(target, kill=True)
        results = outcomes(futures, 150)
        assert admin._direct.sent >= 1
        assert "retired" in repr(admin._direct)
    finally:
        admin.close()
    kafka_quorum.start_node(target)
    assert_truthful("create", results, kafka_quorum.topics(kafka_ns.prefix), wanted=dict.fromkeys(names, 1))


# -- review of 7b56bba -------------------------------------------------------------------------------------------


def test_connections_the_broker_closed_while_idle_are_never_written_and_are_opened_again(
    quota_broker: BrokerFactory,
) -> None:
    """Was: a connection the broker had closed (Kafka's connections.max.idle.ms, a restart) was still written: the
    request came back _TRANSPORT, outcome unknown though the broker never read it. Now it is not taken (librdkafka
    carries it), and the connections are opened again for the next."""
    broker = quota_broker()
    direct = DirectCreates({"bootstrap.servers": broker.bootstrap_servers}, lambda lane, event: None)
    order = SendOrder("create_topics", [NewTopic(n, 1, 1) for n in _names("d", BULK)], 30.0, 25.0, False, 0, True)
    answers: list[Any] = []
    answered = threading.Event()

    def on_answer(answer: Any) -> None:
        answers.append(answer)
        answered.set()

    try:
        assert direct.opening().result(10)
        broker.drop_connections()
        for connection in direct._connections:  # the broker's close has reached each
            assert select.select([connection._sock], [], [], 10)[0]
        sending = Sending(None)
        assert direct.send(order, on_answer, sending) is None
        assert not sending.began
        assert "new" in repr(direct)
        assert direct.opening().result(10)  # opened again
        assert direct.send(order, on_answer, Sending(None)) is True
        assert answered.wait(10)
        assert answers == [dict.fromkeys(topic.topic for topic in order.items)]
    finally:
        direct.close()


def test_new_credentials_before_the_first_bulk_call_leave_the_second_lane_usable(quota_broker: BrokerFactory) -> None:
    """Was: ``retire()`` before any opening left ``opened`` pending for good, and the second lane's probe with it."""
    with admin_for(quota_broker(), {"log_level": 0}) as admin:
        admin.set_sasl_credentials("someone", "secret")
        results = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in _names("creds", 3 * BULK)]))
        assert set(results.values()) == {None}
        assert admin._direct.opened.result(10) is False
        assert admin._scheduler is not None
        assert SECOND in admin._scheduler._engine._lanes.reached  # the probe came back


def test_a_forked_child_closing_its_copy_leaves_the_parents_connections_open(quota_broker: BrokerFactory) -> None:
    """Was: the child's close() shut the sockets it shares with its parent."""
    broker = quota_broker()
    direct = DirectCreates({"bootstrap.servers": broker.bootstrap_servers}, lambda lane, event: None)
    try:
        assert direct.opening().result(10)
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            try:
                direct.close()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert not any(connection.closed_by_peer() for connection in direct._connections)
    finally:
        direct.close()
