"""Rule b's second lane (``_engine/lanes.py``, issue 40): a second request beside a bulk one, on a connection of its
own, only while nothing a throttle or an unanswered request says is in the way. The model (``test_engine_model``)
checks the same after every step; these are its cases by name."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.engine_records import submit_call
from throttled_admin._engine import (
    CREATE_TOPICS,
    FIRST,
    SECOND,
    CallSpec,
    Drain,
    Engine,
    MutationQuota,
    Outbox,
    Pacer,
    Probe,
    RequestKind,
    RetryBackoff,
    Send,
)
from throttled_admin._engine.config import MAX_TOPICS_PER_REQUEST, SECOND_LANE_FROM, EngineConfig
from throttled_admin._engine.machine import FIRST_CONTACT_TIMEOUT_S


def bulk(
    count: int, *, reached: bool = True, pacer: Pacer | None = None, lane_probed: bool = True
) -> tuple[Engine, Outbox]:
    """An engine (that has reached the cluster, unless not ``reached``) with one call of ``count`` one-partition
    creates, stepped once; ``lane_probed``: the second connection's probe, if asked for, answered then, and stepped
    again (the two steps' actions)."""
    engine = Engine(pacer=pacer, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    if reached:
        engine.on_probe(True, 0.0)
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30000, True, None, None, started_at=0.0)
    submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2) for name in (f"t{i}" for i in range(count))])
    out = engine.step(0.0)
    if lane_probed and Probe(SECOND) in out.actions:
        engine.on_probe(True, 0.0, SECOND)
        out = Outbox.of([*out.actions, *engine.step(0.0).actions])
    return engine, out


def sends(out: Outbox) -> list[Send]:
    return [action for action in out.actions if isinstance(action, Send)]


def applied(engine: Engine, send: Send, now: float) -> None:
    engine.on_results(send.request_id, dict.fromkeys(send.names), now)


def test_a_bulk_call_sends_a_second_request_beside_the_first_on_the_second_connection() -> None:
    engine, out = bulk(3 * MAX_TOPICS_PER_REQUEST, lane_probed=False)
    [first] = sends(out)
    assert (first.lane, len(first.names)) == (FIRST, MAX_TOPICS_PER_REQUEST)
    # the second connection is asked to answer something light first (a handle that cannot connect never holds a
    # request of 4,000 topics until their deadline), once
    assert out.of_kind(Probe) == [Probe(SECOND)]
    assert not out.probe  # (not the contact probe)
    assert engine.step(0.05).of_kind(Probe) == []
    engine.on_probe(True, 0.1, SECOND)  # it answered: a full request beside the first, at once
    [second] = sends(engine.step(0.1))
    assert (second.lane, len(second.names)) == (SECOND, MAX_TOPICS_PER_REQUEST)
    assert second.request_timeout_s == pytest.approx(first.request_timeout_s - 0.1)  # the call's own budget
    assert not set(first.names) & set(second.names)  # rule a: a name in one request
    assert engine.status.in_flight == first.request_id
    assert engine.status.second_in_flight == second.request_id
    applied(engine, first, 0.2)
    applied(engine, second, 0.2)
    while request := sends(engine.step(0.3)):
        for send in request:
            applied(engine, send, 0.3)
    assert engine.status.idle


def test_a_second_connection_that_does_not_answer_its_probe_is_never_used() -> None:
    """Its handle could not be made, or reached no broker: the second lane is retired, the first goes on alone."""
    engine, out = bulk(3 * MAX_TOPICS_PER_REQUEST, lane_probed=False)
    [first] = sends(out)
    engine.on_probe(False, 5.0, SECOND)
    assert sends(engine.step(5.0)) == []
    applied(engine, first, 5.1)
    nxt = sends(engine.step(5.1))
    assert [send.lane for send in nxt] == [FIRST]
    applied(engine, nxt[0], 5.2)
    later = engine.step(5.2)
    assert [send.lane for send in sends(later)] == [FIRST]
    assert later.of_kind(Probe) == []  # never asked again


def test_a_call_smaller_than_a_bulk_one_goes_one_request_at_a_time() -> None:
    per_request = SECOND_LANE_FROM - 1
    engine = Engine(pacer=None, backoff=RetryBackoff(), config=EngineConfig(max_topics_per_request=per_request))
    engine.on_probe(True, 0.0)
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30000, True, None, None, started_at=0.0)
    submit_call(engine, spec, [(f"t{i}", NewTopic(f"t{i}", 1, 1), 1, 2) for i in range(3 * per_request)])
    assert [send.lane for send in sends(engine.step(0.0))] == [FIRST]


def test_no_second_request_before_a_broker_has_answered_the_client() -> None:
    engine, out = bulk(3 * MAX_TOPICS_PER_REQUEST, reached=False)
    assert sends(out) == []  # the first waits for the contact probe, at most FIRST_CONTACT_TIMEOUT_S
    assert [send.lane for send in sends(engine.step(FIRST_CONTACT_TIMEOUT_S))] == [FIRST]


def test_a_pacing_client_never_opens_the_second_lane() -> None:
    _, out = bulk(3 * MAX_TOPICS_PER_REQUEST, pacer=Pacer(MutationQuota(rate=1e6, burst=1e7)))
    assert [send.lane for send in sends(out)] == [FIRST]


def test_a_throttle_retires_the_second_lane_for_the_clients_life() -> None:
    engine, out = bulk(5 * MAX_TOPICS_PER_REQUEST)
    first, second = sends(out)
    engine.on_throttle(1, 0.5, 0.05, SECOND)  # the second connection's response was throttled
    applied(engine, second, 0.05)
    applied(engine, first, 0.06)
    assert sends(engine.step(0.06)) == []  # the gate: nothing while the throttle lasts
    nxt = sends(engine.step(0.6))
    assert [send.lane for send in nxt] == [FIRST]  # then one request at a time, on the first connection
    applied(engine, nxt[0], 0.7)
    assert [send.lane for send in sends(engine.step(0.7))] == [FIRST]


def test_bulk_requests_may_go_direct_on_either_lane_until_a_throttle_and_never_when_small_or_paced() -> None:
    """``Lanes.direct``: the driver may write a request on a connection of its own (``_driver/direct_creates``)
    while the second lane's own conditions hold, on either lane."""
    engine, out = bulk(5 * MAX_TOPICS_PER_REQUEST)
    first, second = sends(out)
    assert (first.direct, second.direct) == (True, True)
    engine.on_throttle(1, 0.5, 0.05, SECOND)
    applied(engine, second, 0.05)
    applied(engine, first, 0.06)
    assert [send.direct for send in sends(engine.step(0.6))] == [False]  # a throttle: librdkafka from now on
    _, paced = bulk(3 * MAX_TOPICS_PER_REQUEST, pacer=Pacer(MutationQuota(rate=1e6, burst=1e7)))
    assert [send.direct for send in sends(paced)] == [False]
    _, small = bulk(SECOND_LANE_FROM - 1)
    assert [send.direct for send in sends(small)] == [False]


def test_a_topic_refused_for_the_quota_retires_the_second_lane_too() -> None:
    engine, out = bulk(4 * MAX_TOPICS_PER_REQUEST)
    first, second = sends(out)
    results: dict[str, BaseException | None] = dict.fromkeys(first.names)
    results[first.names[0]] = KafkaException(KafkaError(KafkaError.THROTTLING_QUOTA_EXCEEDED))
    engine.on_results(first.request_id, results, 0.05)  # no throttle event told: the 89 says it
    applied(engine, second, 0.05)
    assert all(send.lane == FIRST for send in sends(engine.step(0.05)))


def test_a_second_lane_request_librdkafka_abandons_is_drained_on_its_own_connection_and_retires_it() -> None:
    engine, out = bulk(4 * MAX_TOPICS_PER_REQUEST)
    first, second = sends(out)
    applied(engine, second, 0.01)
    applied(engine, first, 0.02)
    first, second = sends(engine.step(0.02))
    lost = KafkaException(
        KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for response from broker: Local: Timed out")
    )
    engine.on_results(second.request_id, dict.fromkeys(second.names, lost), 30.0)
    out = engine.step(30.0)
    drains = [action for action in out.actions if isinstance(action, Drain)]
    assert [drain.lane for drain in drains] == [SECOND]  # the sentinel goes behind it, on that connection
    assert engine.status.final_at == float("inf")  # until then, what it carried may still be applied
    applied(engine, first, 30.1)
    assert all(send.lane == FIRST for send in sends(engine.step(30.1)))  # retired: the first lane alone


def test_a_failing_over_controllers_refusal_on_the_second_lane_retires_it() -> None:
    """NOT_CONTROLLER on the second connection: the driver refreshes the first handle's view of the controller
    only, so the second lane is not used again."""
    engine, out = bulk(4 * MAX_TOPICS_PER_REQUEST)
    first, second = sends(out)
    refused = KafkaException(KafkaError(KafkaError.NOT_CONTROLLER))
    engine.on_results(second.request_id, dict.fromkeys(second.names, refused), 0.05)
    engine.on_metadata({}, 0.06)  # the refresh NOT_CONTROLLER asks for
    applied(engine, first, 0.06)
    later = [send for now in (0.06, 0.2, 0.5, 1.0) for send in sends(engine.step(now))]
    assert later
    assert all(send.lane == FIRST for send in later)


def test_a_second_handle_that_fails_retires_the_second_lane_and_fails_nothing_else() -> None:
    """An authentication error or a failed connection of the second handle (before any node is known, too): the
    second lane is not used again, and nothing pending fails for it (the first handle's would)."""
    for error in (
        KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"),
        KafkaError(KafkaError._TRANSPORT, "127.0.0.1:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed"),
    ):
        engine, out = bulk(4 * MAX_TOPICS_PER_REQUEST)
        first, _ = sends(out)
        engine.on_error(error, 0.01, SECOND)
        out = engine.step(0.01)
        assert out.settle == []
        applied(engine, first, 0.02)
        assert [send.lane for send in sends(engine.step(0.02))] == [FIRST]
