"""The pieces of issue 37's and 38's plan rules that need no broker: which INVALID_REPLICATION_FACTOR refusal means a
node is away, a group's time budget, and the throttled exception's ``sent``."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from tests.support import BrokerFactory
from throttled_admin import ThrottlingQuotaExceededException
from throttled_admin.provisioning import PlanRow, Profile, apply_plan, execute
from throttled_admin.provisioning._brokers import away_refusal
from throttled_admin.provisioning._budget import DEFAULT_SLACK_S, UNKNOWN_RATE_S, Budget, check_timeout
from throttled_admin.testing import QuotaBroker

KAFKA_44 = (
    "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only "
    "2 broker(s) are registered or some brokers have all their log directories cordoned."
)


def test_a_refusal_counting_fewer_brokers_than_at_the_start_means_a_node_is_away() -> None:
    assert away_refusal(KAFKA_44, 3)
    assert not away_refusal(KAFKA_44, 2)  # the cluster had 2 when the plan began: the replication factor is too high
    assert not away_refusal(KAFKA_44, None)  # not counted: Java's answer stands
    assert not away_refusal("Replication factor must be larger than 0, or -1 to use the default value.", 3)


def test_the_default_budget_moves_on_with_a_learned_throttle_and_the_users_never_does() -> None:
    default = Budget(None, 10.0, now=100.0)
    assert default.end == 100.0 + 2 * 10.0 + DEFAULT_SLACK_S
    assert default.cover(61.0, 5.0, now=101.0)
    assert default.end == 101.0 + 61.0 + 2 * 5.0 + DEFAULT_SLACK_S
    assert not default.users
    learned = Budget(None, None, now=0.0)
    assert learned.end == UNKNOWN_RATE_S
    users = Budget(10.0, 10.0, now=100.0)
    assert not users.cover(61.0, 5.0, now=101.0)
    assert users.end == 110.0
    assert users.timeout_ms(109.5) == 500
    assert users.timeout_ms(200.0) == 1  # at least 1 ms: the client then refuses what cannot go
    assert users.describe() == "timeout_s=10"


@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ValueError), (-1.0, ValueError), (float("inf"), ValueError), ("5", TypeError), (True, TypeError)],
)
def test_a_bad_timeout_is_refused_before_anything_is_sent(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="timeout_s"):
        check_timeout(value)
    with pytest.raises(error, match="timeout_s"):
        apply_plan([], {}, timeout_s=value)  # type: ignore[arg-type]
    assert check_timeout(2) == 2.0


def test_the_throttled_exception_says_whether_it_was_sent_and_pickles_with_it() -> None:
    held = ThrottlingQuotaExceededException(61000, "t", sent=False)
    again = pickle.loads(pickle.dumps(held))
    assert (again.throttle_time_ms, again.topic, again.sent) == (61000, "t", False)
    assert ThrottlingQuotaExceededException(5).sent is None


def test_on_a_strict_broker_the_first_row_is_refused_with_89_and_the_rest_not_sent(quota_broker: BrokerFactory) -> None:
    # A strict broker refuses what a principal in debt asks for (error 89, nothing applied), as Kafka does for
    # CreateTopics v6+: the first row ends as Kafka answered it, with the debt; the rest were never written.
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.test_apply_budget import DEBT_PARTITIONS, RATE

    broker = quota_broker(controller_mutation_rate=RATE, enforcement="strict")
    bare = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
    # Admitted whole from a full bucket (strict checks before charging), leaving 61 s owed; a strict answer that
    # refuses nothing carries no throttle.
    bare.create_topics([NewTopic("debt", DEBT_PARTITIONS, 1)])["debt"].result(timeout=60)
    profile = Profile("east", {"bootstrap.servers": broker.bootstrap_servers}, RATE, request_timeout_s=3.0)
    rows = [PlanRow("east", "ensure", f"owed.{i}", 1) for i in range(5)]
    results = execute(rows, profile, timeout_s=5)
    first, *rest = results
    assert (first.status, first.error_code, first.attempts) == ("failed", 89, 1), first
    assert first.quota_debt_ms is not None
    assert first.quota_debt_ms > 5_000
    for result in rest:
        assert (result.status, result.attempts, result.error_code) == ("not_sent", 0, None), result
        assert result.quota_debt_ms is not None
        assert result.quota_debt_ms > 5_000
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics" and "debt" not in r.errors]
    assert [sorted(r.errors.items()) for r in creates] == [[("owed.0", 89)]]
    assert set(broker.topics()) == {"debt"}


def _in_debt(quota_broker: BrokerFactory, topic: str, request_timeout_s: float) -> tuple[QuotaBroker, Profile]:
    """A broker at 2/s with ``topic`` (1 partition, retention.ms=60000), then a bare create admitted whole over the
    quota: 61 s owed. The profile is paced to 2/s."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.test_apply_budget import DEBT_PARTITIONS, RATE

    broker = quota_broker(controller_mutation_rate=RATE)
    bare = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
    bare.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "60000"})])[topic].result(timeout=60)
    bare.create_topics([NewTopic("debt", DEBT_PARTITIONS, 1)])["debt"].result(timeout=60)
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    return broker, Profile("east", conf, RATE, request_timeout_s=request_timeout_s)


def test_a_grow_held_past_the_budget_sends_none_of_its_row(quota_broker: BrokerFactory) -> None:
    # Review of issue 38: an ensure row that grows and sets a config sent both at once; the grow held past the budget
    # ended not_sent ("nothing of it applied", attempts 2) while the broker had the new retention.ms. Its config change
    # now goes once the grow is admitted.
    broker, profile = _in_debt(quota_broker, "g", request_timeout_s=3.0)
    rows = [
        PlanRow("east", "ensure", "small", 1),
        PlanRow("east", "ensure", "g", 5, configs={"retention.ms": "120000"}),
    ]
    small, g = execute(rows, profile, timeout_s=5)
    assert small.status == "created", small
    assert (g.status, g.attempts, g.error_code) == ("not_sent", 0, None), g
    apis = {r.api_name for r in broker.request_log()}
    assert "IncrementalAlterConfigs" not in apis
    assert "CreatePartitions" not in apis
    assert broker.topics()["g"] == 1


def test_a_grow_sets_its_configs_once_admitted(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    profile = Profile("east", {"bootstrap.servers": broker.bootstrap_servers}, 50.0)
    execute([PlanRow("east", "ensure", "g", 1)], profile)
    rows = [PlanRow("east", "ensure", "g", 5, configs={"retention.ms": "120000"})]
    (g,) = execute(rows, profile)
    assert (g.status, g.attempts) == ("grown", 2), g
    grow, alter = [r for r in broker.request_log() if r.api_name in ("CreatePartitions", "IncrementalAlterConfigs")]
    assert (grow.api_name, alter.api_name) == ("CreatePartitions", "IncrementalAlterConfigs")
    assert grow.responded_at is not None
    assert alter.received_at >= grow.responded_at
    assert execute(rows, profile)[0].status == "unchanged"


def test_the_budget_bounds_a_config_change_sent_behind_a_throttle(quota_broker: BrokerFactory) -> None:
    # Review of issue 38: the first row drew a 61 s throttle, the broker muted the connection, and a config change
    # sent onto it waited for socket.timeout.ms (60 s), then its verification waited ~92 s more, whatever timeout_s.
    # Now the alter waits for what is left of the budget, and the row ends with its outcome unknown.
    broker, profile = _in_debt(quota_broker, "r", request_timeout_s=90.0)
    rows = [
        PlanRow("east", "ensure", "small", 1),
        PlanRow("east", "ensure", "other", 1),
        PlanRow("east", "ensure", "r", configs={"retention.ms": "120000"}),
    ]
    small, other, r = execute(rows, profile, timeout_s=5)
    assert small.status == "created", small
    assert (other.status, other.attempts) == ("not_sent", 0), other
    assert r.status == "failed", r
    assert "could not be read to verify it: the time budget (timeout_s=5) ended first" in (r.error_message or ""), r
    # Never read by the broker (its connection stayed muted, then closed): the truth was unknown, not "reconfigured".
    assert not [x for x in broker.request_log() if x.api_name == "IncrementalAlterConfigs"]


def test_a_dry_run_says_the_debt_once_and_every_row_carries_it(quota_broker: BrokerFactory) -> None:
    # Found in stop 72's review: a dry run wrote "(after the principal's quota debt of N ms)" into every planned row's
    # change, so `apply --dry-run` repeated it down the table, a row each. The group's first row waits for the debt
    # and says so; every row still carries it in quota_debt_ms (and its prediction counts it).
    _, profile = _in_debt(quota_broker, "t", request_timeout_s=3.0)
    rows = [PlanRow("east", "ensure", f"new.{i}", 1) for i in range(3)]
    first, *rest = execute(rows, profile, dry_run=True)
    assert first.status == "planned", first
    assert "quota debt of" in (first.detail or ""), first
    assert first.quota_debt_ms is not None
    assert first.predicted_s is not None
    assert first.predicted_s >= first.quota_debt_ms / 1000
    for row in rest:
        assert row.status == "planned", row
        assert "quota debt" not in (row.detail or ""), row
        assert row.quota_debt_ms == first.quota_debt_ms


def test_a_dry_runs_debt_message_never_shows_a_secret(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Review of issue 38: the dry run's detail quotes the validate-only create's exception, and only error_message was
    # redacted. Here that exception echoes the SASL password.
    from concurrent.futures import Future

    from confluent_kafka import KafkaError, KafkaException

    from throttled_admin import ThrottledAdminClient

    password = "pw-9b41e-do-not-show"
    broker = quota_broker(users={"alice": password}, controller_mutation_rate=20)
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": password,
    }
    create_topics = ThrottledAdminClient.create_topics

    def echoing(self: ThrottledAdminClient, new_topics: list[Any], **kwargs: Any) -> dict[str, Future[None]]:
        if not kwargs.get("validate_only"):
            return create_topics(self, new_topics, **kwargs)
        failed: Future[None] = Future()
        failed.set_exception(KafkaException(KafkaError(KafkaError._AUTHENTICATION, f"bad secret {password}")))
        return {new_topics[0].topic: failed}

    monkeypatch.setattr(ThrottledAdminClient, "create_topics", echoing)
    (row,) = execute([PlanRow("east", "ensure", "t", 1)], Profile("east", conf, 20.0), dry_run=True)
    assert row.status == "planned", row
    assert "quota debt unknown" in (row.detail or "")
    assert password not in repr(row.as_dict())
