"""The pieces of issue 37's and 38's plan rules that need no broker: which INVALID_REPLICATION_FACTOR refusal means a
node is away, a group's time budget, and the throttled exception's ``sent``."""

from __future__ import annotations

import pickle

import pytest

from tests.support import BrokerFactory
from throttled_admin import ThrottlingQuotaExceededException
from throttled_admin.provisioning import PlanRow, Profile, apply_plan, execute
from throttled_admin.provisioning._brokers import away_refusal
from throttled_admin.provisioning._budget import DEFAULT_SLACK_S, UNKNOWN_RATE_S, Budget, check_timeout

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
