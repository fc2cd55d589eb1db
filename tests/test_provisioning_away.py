"""A plan's rows refused while a node is away for a restart (issue 37), on a three-node QuotaBroker, each answer
scripted with ``fail_next`` in Kafka 4.4's words: a row waits for the node as often as a rolling restart takes
nodes away, and a refusal hedged by an earlier attempt (NOT_CONTROLLER, a lost answer: ``PossiblyAppliedError``)
waits too, once the cluster read shows that nothing was applied. Found by the CI run of 29a34f0: on the three-node
Kafka 4.4 quorum, 22 of 300 rows of a plan through a roll failed "after 6 attempts the cluster does not show the
change, and none was answered", the re-sends after each wait for a node counted against the cap on re-sends after
an unknown outcome (tests/test_provisioning_quorum.py)."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from confluent_kafka import KafkaError

from tests.support import BrokerFactory, running, wait_until
from tests.test_provisioning_budget import KAFKA_44
from tests.test_provisioning_executor import profile_for
from throttled_admin.provisioning import STOPPED, PlanRow, PlanStop, RowResult, _brokers, execute, summarize
from throttled_admin.provisioning._executor import MAX_ATTEMPTS
from throttled_admin.testing import QuotaBroker, RequestRecord

AWAY, NOT_CONTROLLER = KafkaError.INVALID_REPLICATION_FACTOR, KafkaError.NOT_CONTROLLER


def _creates(log: list[RequestRecord]) -> list[dict[str, int]]:
    return [r.errors for r in log if r.api_name == "CreateTopics"]


def test_a_row_waits_for_a_node_each_time_one_is_away_and_a_hedged_refusal_waits_too(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(num_brokers=3)
    # A rolling restart as the row meets it: refused while the first and the second node are away (a wait each),
    # then refused NOT_CONTROLLER as the controller's node stops, and its retry, in the same call, refused while
    # that node is away: hedged, as that attempt may have been applied by the controller that resigned.
    broker.fail_next("CreateTopics", AWAY, count=MAX_ATTEMPTS - 1, message=KAFKA_44)
    broker.fail_next("CreateTopics", NOT_CONTROLLER)
    broker.fail_next("CreateTopics", AWAY, message=KAFKA_44)
    rows = [PlanRow("east", "ensure", "rolled", 2, 3)]
    [result] = execute(rows, profile_for(broker, rate=None))
    assert (result.status, result.error_message) == ("created", None)
    assert result.attempts == MAX_ATTEMPTS + 1
    assert (result.detail or "").count("waited") == MAX_ATTEMPTS
    codes = [set(errors.values()) for errors in _creates(broker.request_log())]
    assert codes == [{AWAY}] * (MAX_ATTEMPTS - 1) + [{NOT_CONTROLLER}, {AWAY}, {0}]
    assert broker.topics() == {"rolled": 2}
    assert summarize(execute(rows, profile_for(broker, rate=None))) == {"unchanged": 1}


def test_re_sends_after_waits_for_a_node_leave_the_cap_on_re_sends_after_an_unknown_outcome_whole(
    quota_broker: BrokerFactory,
) -> None:
    """The cap counts attempts that had no definite answer, not every attempt: after waits for nodes, an attempt
    refused NOT_CONTROLLER and then, in the same call, refused by a policy (hedged: the first may have been applied)
    is read, found missing, and sent again."""
    broker = quota_broker(num_brokers=3)
    broker.fail_next("CreateTopics", AWAY, count=MAX_ATTEMPTS, message=KAFKA_44)
    broker.fail_next("CreateTopics", NOT_CONTROLLER)
    broker.fail_next("CreateTopics", KafkaError.POLICY_VIOLATION, message="refused while its controller moved")
    [result] = execute([PlanRow("east", "ensure", "rolled", 2, 3)], profile_for(broker, rate=None))
    assert (result.status, result.error_message) == ("created", None)
    assert result.attempts == MAX_ATTEMPTS + 2
    assert "verified by reading the cluster" not in (result.detail or "")  # sent again, and answered
    codes = [set(errors.values()) for errors in _creates(broker.request_log())]
    assert codes == [{AWAY}] * MAX_ATTEMPTS + [{NOT_CONTROLLER}, {KafkaError.POLICY_VIOLATION}, {0}]
    assert broker.topics() == {"rolled": 2}


def _grow_applied_then_hedged(quota_broker: BrokerFactory) -> QuotaBroker:
    """A grow applied by a controller that then resigned (NOT_CONTROLLER), its retry in the same call refused while a
    node was away: hedged, and the cluster read shows the partitions there, only the row's configs still to set."""
    broker = quota_broker(num_brokers=3)
    broker.create_topic("g", 2)
    broker.fail_next("CreatePartitions", NOT_CONTROLLER, applied=True)
    broker.fail_next("CreatePartitions", AWAY, message=KAFKA_44)
    return broker


GROW = PlanRow("east", "ensure", "g", 4, None, {"retention.ms": "1000"})


def test_a_hedged_refusal_of_a_grow_that_was_applied_sends_its_config_change_without_waiting(
    quota_broker: BrokerFactory,
) -> None:
    """Found by review: the wait for a node is for a change still to make; the read shows what is (review 73)."""
    broker = _grow_applied_then_hedged(quota_broker)
    [result] = execute([GROW], profile_for(broker, rate=None))
    assert (result.status, result.error_message) == ("grown", None)
    assert "waited" not in (result.detail or "")
    assert len([r for r in broker.request_log() if r.api_name == "CreatePartitions"]) == 2  # not grown again
    assert broker.topics()["g"] == 4


def test_a_hedged_refusal_of_a_grow_that_was_applied_is_not_failed_when_a_node_stays_away(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = _grow_applied_then_hedged(quota_broker)
    monkeypatch.setattr(_brokers, "registered_brokers", lambda admin, timeout_s: 2)  # away for the whole budget
    [result] = execute([GROW], profile_for(broker, rate=None), timeout_s=8)
    assert (result.status, result.error_message) == ("grown", None)
    assert broker.topics()["g"] == 4


def test_a_stop_ends_the_wait_for_a_node_away_and_the_row_is_not_sent_again(quota_broker: BrokerFactory) -> None:
    """A ``PlanStop`` while a row waited for a node away waited the whole budget out (stop 84's note): now it ends
    the wait, and the row keeps Kafka's refusal, ``not_sent`` STOPPED: nothing of it applied. The refusal is the
    controller's own: it holds the create while a node leaves unregistered, then counts 2 brokers of 3."""
    broker = quota_broker(num_brokers=3)
    held = broker.hold_controller_next(4.0)  # (the test's thread stops the node meanwhile)
    stop, results = PlanStop(), list[RowResult]()
    rows = [PlanRow("east", "ensure", "rolled", 2, 3)]
    profile = dataclasses.replace(profile_for(broker, rate=None), request_timeout_s=30.0)  # the hold within it
    run = threading.Thread(target=lambda: results.extend(execute(rows, profile, timeout_s=600, stop=stop)))
    run.start()
    assert held.wait(30)
    broker.stop_node(max(broker.ports), unregister=True)  # not the controller, which Metadata names
    assert wait_until(lambda: any(AWAY in errors.values() for errors in _creates(broker.request_log())), 30)
    assert stop.stop() == []  # sent, refused: not "never sent"
    run.join(timeout=60)  # (the budget is 600 s: a wait the stop does not end outlasts this)
    assert not run.is_alive()
    [result] = results
    assert (result.status, result.error_name, result.error_code, result.attempts) == ("not_sent", STOPPED, AWAY, 1)
    assert "only 2 broker(s) are registered" in (result.error_message or ""), result
    assert "; not sent again: the plan was stopped first (nothing of it applied)" in (result.error_message or "")
    assert _creates(broker.request_log()) == [{"rolled": AWAY}]
    assert broker.topics() == {}


def test_a_stop_ends_the_wait_for_a_node_away_while_the_cluster_is_slow_to_say_its_brokers(
    quota_broker: BrokerFactory,
) -> None:
    """As above, the stop landing while the wait asks the cluster how many brokers it has (``describe_cluster``, a
    Metadata read on QuotaBroker), which a cluster losing a node may answer late: the stop waited for that answer, up
    to the request timeout (stop 85's note)."""
    broker = quota_broker(num_brokers=3)
    held = broker.hold_controller_next(4.0)
    stop, results = PlanStop(), list[RowResult]()
    rows = [PlanRow("east", "ensure", "rolled", 2, 3)]
    profile = dataclasses.replace(profile_for(broker, rate=None), request_timeout_s=60.0)
    run = threading.Thread(target=lambda: results.extend(execute(rows, profile, timeout_s=600, stop=stop)))
    run.start()
    assert held.wait(30)
    broker.stop_node(max(broker.ports), unregister=True)
    assert wait_until(lambda: any(AWAY in errors.values() for errors in _creates(broker.request_log())), 30)
    broker.delay_next("Metadata", 120.0, count=50)  # the looks answered two minutes late
    try:
        assert wait_until(lambda: running(run, "registered_brokers"), timeout_s=30)
        assert stop.stop() == []
        run.join(timeout=30)  # (the look's answer comes after 120 s)
        assert not run.is_alive()
    finally:
        run.join(timeout=180)
    [result] = results
    assert (result.status, result.error_name, result.error_code, result.attempts) == ("not_sent", STOPPED, AWAY, 1)
    assert broker.topics() == {}
