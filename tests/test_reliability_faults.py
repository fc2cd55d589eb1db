"""Faults end to end: ThrottledAdminClient against a QuotaBroker that drops connections, restarts, swallows
responses, injects transient errors, is slow, is gone, or refuses credentials.

Every test asserts the outcome of every topic against what the broker holds afterwards (``assert_truthful``):
a success is in the broker; a failure is not, unless its message says the outcome is unknown or that an
earlier attempt may have applied it. Faults are timed from the broker's request log (a request received but
not yet answered is in flight), not from sleeps, so they hit what they aim at on a loaded machine.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError

from tests.reliability_helpers import (
    admin_for,
    assert_truthful,
    error_code,
    error_text,
    hedged,
    mutation_requests,
    outcomes,
)
from tests.support import BrokerFactory, wait_until
from throttled_admin import (
    MutationQuota,
    NewPartitions,
    NewTopic,
    PossiblyAppliedError,
    ThrottlingQuotaExceededException,
)
from throttled_admin.testing import QuotaBroker

CREATE_TOPICS = 19


def _in_flight(broker: QuotaBroker, seen: int) -> bool:
    """True once a mutation request beyond the first ``seen`` has been received and not answered yet."""
    log = mutation_requests(broker)
    return any(r.responded_at is None for r in log[seen:])


def _unanswered_topics(broker: QuotaBroker, struck_at: list[float]) -> set[str]:
    """Topics of mutation requests the broker applied but whose response was lost: never sent, or held back by
    the latency while the fault struck."""
    lost = {
        topic
        for r in mutation_requests(broker)
        if r.responded_at is None or any(r.received_at <= t <= r.responded_at for t in struck_at)
        for topic, code in r.errors.items()
        if not code
    }
    assert lost, "no applied request lost its response: the fault missed"
    return lost


def _strike_in_flight(broker: QuotaBroker, fault: Callable[[], None], times: int, hits: list[float]) -> None:
    """Run ``fault`` ``times`` times, each while a mutation request is in flight (the broker holds its response);
    ``hits`` gets the time of each strike."""
    seen = 0
    deadline = time.monotonic() + 30
    while len(hits) < times and time.monotonic() < deadline:
        if _in_flight(broker, seen):
            seen = len(mutation_requests(broker))
            hits.append(time.monotonic())
            fault()
        time.sleep(0.005)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "num_brokers", "sasl"),
    [
        pytest.param("drop_connections", 1, False, id="drop"),
        pytest.param("restart", 1, False, id="restart"),
        pytest.param("drop_connections", 3, False, id="drop-3-nodes"),
        pytest.param("restart", 1, True, id="restart-sasl"),
        pytest.param("drop_connections", 1, False, id="drop-learning-the-rate"),
    ],
)
def test_bulk_create_survives_connection_faults_mid_request(
    quota_broker: BrokerFactory, fault: str, num_brokers: int, sasl: bool, request: pytest.FixtureRequest
) -> None:
    """500 topics under a strict quota; three times the connection dies (or the broker bounces) while a request's
    response is held back: every topic ends up created, and any failure admits the earlier attempt. On three
    nodes the mutations go through the controller's node; with SASL every new connection authenticates again
    (which must not be mistaken for an authentication failure)."""
    users = {"alice": "alice-pw"} if sasl else None
    broker = quota_broker(
        controller_mutation_rate=150, quota_window_num=1, enforcement="strict", num_brokers=num_brokers, users=users
    )
    broker.set_latency(0.15)  # each response is held: the fault lands while a request is in flight
    names = [f"bulk-{i}" for i in range(500)]
    hits: list[float] = []
    conf = (
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-pw",
        }
        if sasl
        else {}
    )
    learning = "learning" in request.node.callspec.id
    with admin_for(broker, conf, mutation_quota=MutationQuota() if learning else None) as admin:
        futures = admin.create_topics([NewTopic(n, 1, 1) for n in names], timeout_ms=45000)
        striker = threading.Thread(
            target=_strike_in_flight, args=(broker, getattr(broker, fault), 3, hits), daemon=True
        )
        striker.start()
        results = outcomes(futures)
        striker.join(30)
        metrics = admin.metrics()
    assert len(hits) == 3, "the fault never hit a request in flight"
    # nothing sent twice behind our back, nothing uncounted
    assert metrics["request-total"] == len(mutation_requests(broker))
    if learning:
        # Lost responses hide admitted mutations from the learner and may leave too few throttles to learn from:
        # the rate may come out low or unknown, never above the quota (that would flood the broker).
        rate = metrics["mutation-rate"]
        assert math.isnan(rate) or rate <= 150 * 1.25, rate
    held = broker.topics()
    assert_truthful("create", results, held, wanted=dict.fromkeys(names, 1))
    # Nothing lost: with time left, a topic whose request died is sent again, so every topic is in the broker...
    assert set(names) <= set(held)
    # ...and the only failures are creates whose lost attempt was applied after all (and say so).
    failed = {n: error_text(e) for n, e in results.items() if e is not None}
    assert all("earlier attempt" in text for text in failed.values()), failed
    # Each topic whose applied request went unanswered was re-sent, and its "already done" answer says so.
    assert _unanswered_topics(broker, hits) <= set(failed)


@pytest.mark.slow
@pytest.mark.parametrize(("operation", "quota"), [("grow", None), ("delete", None), ("delete", 150.0)])
def test_bulk_grow_and_delete_survive_dropped_connections(
    quota_broker: BrokerFactory, operation: str, quota: float | None
) -> None:
    """The same for CreatePartitions and DeleteTopics, whose "already done" answers after a lost attempt are
    INVALID_PARTITIONS and UNKNOWN_TOPIC_OR_PART: they must say so, and nothing may be lost. Paced with a
    MutationQuota, the client also reads the topics' partition counts (delete costs) over the failing
    connections."""
    broker = quota_broker(controller_mutation_rate=150, quota_window_num=1, enforcement="strict")
    names = [f"{operation}-{i}" for i in range(300)]
    for name in names:
        broker.create_topic(name, 1)
    before = broker.topics()
    broker.set_latency(0.15)
    hits: list[float] = []
    pacing = MutationQuota(rate=quota) if quota is not None else None
    with admin_for(broker, mutation_quota=pacing) as admin:
        if operation == "grow":
            futures = admin.create_partitions([NewPartitions(n, 2) for n in names], timeout_ms=45000)
        else:
            futures = admin.delete_topics(names, timeout_ms=45000)
        striker = threading.Thread(
            target=_strike_in_flight, args=(broker, broker.drop_connections, 3, hits), daemon=True
        )
        striker.start()
        results = outcomes(futures)
        striker.join(30)
        requests_sent = admin.metrics()["request-total"]
    assert len(hits) == 3, "the fault never hit a request in flight"
    assert requests_sent == len(mutation_requests(broker))  # nothing sent twice behind our back, nothing uncounted
    held = broker.topics()
    if operation == "grow":
        assert_truthful("grow", results, held, before=before, wanted=dict.fromkeys(names, 2))
        assert held == dict.fromkeys(names, 2)
    else:
        assert_truthful("delete", results, held, before=before)
        assert held == {}
    failed = {n: error_text(e) for n, e in results.items() if e is not None}
    assert all("earlier attempt" in text for text in failed.values()), failed
    # Each topic whose applied request went unanswered was re-sent, and its "already done" answer says so.
    assert _unanswered_topics(broker, hits) <= set(failed)


def test_request_log_does_not_claim_answers_lost_to_dropped_connections(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.set_latency(0.5)
    with admin_for(broker) as admin:
        futures = admin.create_topics([NewTopic("held", 1, 1)], request_timeout=2.0, timeout_ms=20000)
        deadline = time.monotonic() + 10
        while not mutation_requests(broker) and time.monotonic() < deadline:
            time.sleep(0.01)
        broker.drop_connections()
        broker.set_latency(0)
        outcomes(futures)
    first = mutation_requests(broker)[0]
    assert first.errors == {"held": 0}
    assert first.responded_at is None


def test_response_never_sent_is_reported_as_unknown_outcome(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.blackhole_next("CreateTopics")
    with admin_for(broker) as admin:
        started = time.monotonic()
        result = outcomes(admin.create_topics([NewTopic("swallowed", 3, 1)], timeout_ms=3000))["swallowed"]
        elapsed_s = time.monotonic() - started
        metrics = admin.metrics()
    assert result is not None
    assert error_code(result) == KafkaError._TIMED_OUT
    assert "outcome unknown" in error_text(result), error_text(result)
    assert elapsed_s < 3 + 5  # by the deadline, give or take a loaded machine
    assert broker.topics() == {"swallowed": 3}  # the broker did apply it: "unknown" was the truth
    # No response, no throttle sample: Kafka's NetworkClient records throttle times of responses only.
    assert math.isnan(metrics["throttle-time-avg"])
    assert metrics["request-total"] == 1


def test_response_never_sent_is_retried_and_the_retry_admits_the_earlier_attempt(quota_broker: BrokerFactory) -> None:
    """A per-request cap (request_timeout) shorter than the call: the lost request is re-sent within the deadline;
    its TOPIC_ALREADY_EXISTS says an earlier attempt may have created the topic. Topics of the same call the
    broker never saw are created normally."""
    broker = quota_broker()
    broker.blackhole_next("CreateTopics")
    with admin_for(broker) as admin:
        futures = admin.create_topics(
            [NewTopic("lost-once", 2, 1), NewTopic("also-lost", 1, 1)], timeout_ms=20000, request_timeout=1.0
        )
        results = outcomes(futures)
        later = outcomes(admin.create_topics([NewTopic("after", 1, 1)], timeout_ms=20000))
    assert later == {"after": None}
    for name in ("lost-once", "also-lost"):
        exc = results[name]
        assert exc is not None
        assert error_code(exc) == KafkaError.TOPIC_ALREADY_EXISTS
        assert "earlier attempt" in error_text(exc)
    assert broker.topics() == {"lost-once": 2, "also-lost": 1, "after": 1}
    assert_truthful("create", results, broker.topics())
    creates = mutation_requests(broker, CREATE_TOPICS)
    assert creates[0].responded_at is None  # swallowed
    assert creates[0].errors == {"lost-once": 0, "also-lost": 0}  # ...after it was applied
    assert creates[-1].errors == {"after": 0}


def test_topics_of_a_refused_request_are_resent_together(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.fail_next("CreateTopics", KafkaError.NOT_CONTROLLER)
    names = [f"together-{i}" for i in range(10)]
    with admin_for(broker) as admin:
        assert outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names])) == dict.fromkeys(names)
    creates = mutation_requests(broker, CREATE_TOPICS)
    assert [len(r.errors) for r in creates] == [10, 10], "one retry request for the ten refused topics"


@pytest.mark.parametrize("code", [KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT])
def test_transient_errors_are_retried_within_the_deadline(quota_broker: BrokerFactory, code: int) -> None:
    broker = quota_broker(controller_mutation_rate=1000)
    broker.create_topic("grow-me", 1)
    broker.create_topic("drop-me", 2)
    for api in ("CreateTopics", "CreatePartitions", "DeleteTopics"):
        broker.fail_next(api, code, count=2)
    with admin_for(broker) as admin:
        created = admin.create_topics([NewTopic("new-a", 2, 1), NewTopic("new-b", 1, 1)], timeout_ms=30000)
        grown = admin.create_partitions([NewPartitions("grow-me", 4)], timeout_ms=30000)
        deleted = admin.delete_topics(["drop-me"], timeout_ms=30000)
        results = {**outcomes(created), **outcomes(grown), **outcomes(deleted)}
    assert results == {"new-a": None, "new-b": None, "grow-me": None, "drop-me": None}
    assert broker.topics() == {"new-a": 2, "new-b": 1, "grow-me": 4}
    for api_key in (19, 20, 37):
        codes = [set(r.errors.values()) for r in mutation_requests(broker, api_key)]
        assert codes[:2] == [{code}, {code}], codes  # refused twice, applied on the third request
        assert codes[2] == {0}


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.UNKNOWN,
        KafkaError.POLICY_VIOLATION,
        KafkaError.INVALID_REQUEST,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    ],
)
def test_final_errors_are_reported_at_once_and_not_retried(quota_broker: BrokerFactory, code: int) -> None:
    """After a request of the same size was accepted: a POLICY_VIOLATION for every topic alike of a request larger
    than any accepted may be the batch cap's in words the client does not know, and is split (issue 40)."""
    broker = quota_broker()
    with admin_for(broker) as admin:
        accepted = outcomes(admin.create_topics([NewTopic("ok-1", 1, 1), NewTopic("ok-2", 1, 1)], timeout_ms=30000))
        assert accepted == {"ok-1": None, "ok-2": None}
        broker.fail_next("CreateTopics", code)
        started = time.monotonic()
        results = outcomes(admin.create_topics([NewTopic("f-1", 1, 1), NewTopic("f-2", 1, 1)], timeout_ms=30000))
        elapsed_s = time.monotonic() - started
    assert elapsed_s < 10  # not at the deadline
    assert {name: error_code(exc) if exc else None for name, exc in results.items()} == {"f-1": code, "f-2": code}
    assert len(mutation_requests(broker)) == 2
    assert broker.topics() == {"ok-1": 1, "ok-2": 1}


def test_error_89_without_a_throttle_backs_off_and_retries(quota_broker: BrokerFactory) -> None:
    """Error 89 with throttle_time_ms = 0 (some Kafka-compatible services, or a bucket a fraction of a token short):
    there is no throttle to wait, so the client backs off (at least 5 ms) and re-sends; with retry off the caller
    gets it at once."""
    broker = quota_broker()
    broker.fail_next("CreateTopics", KafkaError.THROTTLING_QUOTA_EXCEEDED, count=3)
    with admin_for(broker, {"retry.backoff.ms": 20, "retry.backoff.max.ms": 200}) as admin:
        assert outcomes(admin.create_topics([NewTopic("q", 1, 1)], timeout_ms=30000)) == {"q": None}
        log = mutation_requests(broker)
        assert [r.errors for r in log] == [{"q": 89}] * 3 + [{"q": 0}]
        gaps = [later.arrived_at - earlier.responded_at for earlier, later in itertools.pairwise(log)]
        assert all(gap >= 0.003 for gap in gaps), gaps  # backed off (5 ms x 2^n, minus 20 % jitter)
        # That the back-off doubles is a claim about time: test_engine_rules checks it on simulated time
        # (test_error_89_without_a_throttle_backs_off_from_about_a_round_trip_doubling_not_from_retry_backoff_ms).
        broker.fail_next("CreateTopics", KafkaError.THROTTLING_QUOTA_EXCEEDED)
        result = outcomes(admin.create_topics([NewTopic("no-retry", 1, 1)], retry_on_quota_violation=False))
    exc = result["no-retry"]
    assert isinstance(exc, ThrottlingQuotaExceededException)
    assert exc.throttle_time_ms == 0
    assert broker.topics() == {"q": 1}


def test_transient_error_until_the_deadline_is_retried_and_truthful(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.fail_next("CreateTopics", KafkaError.NOT_CONTROLLER, count=10_000)
    with admin_for(broker) as admin:
        started = time.monotonic()
        result = outcomes(admin.create_topics([NewTopic("never", 1, 1)], timeout_ms=2500))["never"]
        elapsed_s = time.monotonic() - started
    assert result is not None
    assert elapsed_s < 2.5 + 5
    assert len(mutation_requests(broker)) >= 2  # it was retried
    assert broker.topics() == {}
    assert_truthful("create", {"never": result}, broker.topics())


@pytest.mark.parametrize(
    ("refusals", "told"),
    [(1, KafkaError.TOPIC_ALREADY_EXISTS), (10_000, KafkaError.NOT_CONTROLLER)],
    ids=["retry finds it", "no retry answered otherwise"],
)
def test_a_create_a_resigning_controller_applied_and_refused_is_never_told_a_plain_refusal(
    quota_broker: BrokerFactory, refusals: int, told: int
) -> None:
    """QuotaBroker applies the create and answers NOT_CONTROLLER, as a KRaft controller that resigns before it
    answers (its successor commits what it wrote). Retried, the create is told "already exists"; refused again until
    the deadline, NOT_CONTROLLER: either way as possibly applied (rule f), and the broker holds the topic."""
    broker = quota_broker()
    broker.fail_next("CreateTopics", KafkaError.NOT_CONTROLLER, count=refusals, applied=True)
    with admin_for(broker) as admin:
        result = outcomes(admin.create_topics([NewTopic("resigned", 1, 1)], timeout_ms=3000))["resigned"]
    assert isinstance(result, PossiblyAppliedError), repr(result)
    assert error_code(result) == told, error_text(result)
    assert broker.topics() == {"resigned": 1}
    assert_truthful("create", {"resigned": result}, broker.topics())


def test_transient_error_until_the_deadline_fails_with_the_brokers_error(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.set_latency(0.4)  # a round trip takes 0.4 s: the retry cannot fit in what is left
    broker.fail_next("CreateTopics", KafkaError.NOT_CONTROLLER, count=10_000)
    with admin_for(broker) as admin:
        result = outcomes(admin.create_topics([NewTopic("never", 1, 1)], timeout_ms=3000))["never"]
    assert result is not None
    assert mutation_requests(broker)  # it was sent
    assert error_code(result) == KafkaError.NOT_CONTROLLER, error_text(result)


def test_response_latency_above_the_deadline(quota_broker: BrokerFactory) -> None:
    """The broker applies the create at once but answers after the deadline: the caller hears "outcome unknown"
    by the deadline, and the topic is there."""
    broker = quota_broker()
    with admin_for(broker) as admin:
        assert outcomes(admin.create_topics([NewTopic("warm", 1, 1)]))["warm"] is None  # the client has contact
        broker.set_latency(2.5)
        started = time.monotonic()
        result = outcomes(admin.create_topics([NewTopic("slow", 1, 1)], timeout_ms=1000))["slow"]
        elapsed_s = time.monotonic() - started
    broker.set_latency(0)
    assert result is not None
    assert "outcome unknown" in error_text(result), error_text(result)
    assert elapsed_s < 1 + 2.5  # the deadline, not the latency
    assert_truthful("create", {"slow": result}, broker.topics())


@pytest.mark.parametrize("latency_s", [0.3, 0.7, 0.95, 1.2])
def test_latency_around_the_deadline_with_retries(quota_broker: BrokerFactory, latency_s: float) -> None:
    """A strict quota makes the client retry while each response takes a large part of the 1 s deadline: whatever
    it manages, every topic's outcome is true, and every future resolves by the deadline (+ slack), never after
    the broker's late answers."""
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1, enforcement="strict")  # burst 10
    names = [f"edge-{i}" for i in range(6)]
    with admin_for(broker) as admin:
        admin.list_topics(timeout=10)  # connected before the latency starts
        broker.set_latency(latency_s)
        started = time.monotonic()
        futures = admin.create_topics([NewTopic(n, 3, 1) for n in names], timeout_ms=1000)
        results = outcomes(futures)
        elapsed_s = time.monotonic() - started
    # The client is closed: once the broker is done with its connections, whatever was in flight has been handled.
    assert wait_until(lambda: broker.open_connections() == 0, timeout_s=10)
    assert elapsed_s < 1 + 1.5
    assert_truthful("create", results, broker.topics(), wanted=dict.fromkeys(names, 3))


def test_deadline_too_short_to_send_anything(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with admin_for(broker) as admin:
        results = outcomes(admin.create_topics([NewTopic(f"short-{i}", 1, 1) for i in range(100)], timeout_ms=1))
    assert all(exc is not None and "not sent" in error_text(exc) for exc in results.values())
    assert broker.topics() == {}
    assert mutation_requests(broker) == []


def test_controller_latency_above_the_deadline_applies_nothing(quota_broker: BrokerFactory) -> None:
    """A busy KRaft controller: the request's timeout_ms (set before the call's deadline) passes before the
    controller gets to it, so it refuses with REQUEST_TIMED_OUT and the topic is never created."""
    broker = quota_broker()
    broker.set_controller_latency(1.5)
    with admin_for(broker) as admin:
        result = outcomes(admin.create_topics([NewTopic("late", 1, 1)], timeout_ms=1000))["late"]
        assert result is not None
        # the broker logs the request once its controller is done with it; then read the cluster
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(r.responded_at for r in mutation_requests(broker)):
            time.sleep(0.05)
        log = mutation_requests(broker)
        assert log
        assert all(r.errors == {"late": KafkaError.REQUEST_TIMED_OUT} for r in log)
        assert broker.topics() == {}
        assert_truthful("create", {"late": result}, broker.topics())
        broker.set_controller_latency(0.3)
        assert outcomes(admin.create_topics([NewTopic("in-time", 1, 1)], timeout_ms=10000)) == {"in-time": None}
    assert broker.topics() == {"in-time": 1}


def test_broker_gone_for_good_every_future_resolves_by_its_deadline(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    broker.create_topic("existing", 1)
    with admin_for(broker) as admin:
        assert outcomes(admin.create_topics([NewTopic("before", 1, 1)])) == {"before": None}
        broker.stop()
        started = time.monotonic()
        futures = {
            **admin.create_topics([NewTopic(f"gone-{i}", 1, 1) for i in range(20)], timeout_ms=2000),
            **admin.create_partitions([NewPartitions("existing", 3)], timeout_ms=2000),
            **admin.delete_topics(["before"], timeout_ms=2000),
        }
        results = outcomes(futures, timeout_s=2 + 10)
        elapsed_s = time.monotonic() - started
    assert elapsed_s < 2 + 5
    assert all(exc is not None for exc in results.values())
    held = broker.topics()  # kept while stopped
    assert held == {"existing": 1, "before": 1}
    assert_truthful("create", {k: v for k, v in results.items() if k.startswith("gone-")}, held)
    assert_truthful("grow", {"existing": results["existing"]}, held, before={"existing": 1}, wanted={"existing": 3})
    assert_truthful("delete", {"before": results["before"]}, held, before={"before": 1})


@pytest.mark.slow
def test_broker_stops_in_the_middle_of_a_bulk_run(quota_broker: BrokerFactory) -> None:
    """The broker dies for good while a request is in flight: every future resolves by the deadline, and what the
    caller was told agrees with what the broker had applied."""
    broker = quota_broker(controller_mutation_rate=100, quota_window_num=1, enforcement="strict")
    broker.set_latency(0.1)
    names = [f"bulk-{i}" for i in range(300)]
    hits: list[float] = []
    with admin_for(broker) as admin:
        started = time.monotonic()
        futures = admin.create_topics([NewTopic(n, 1, 1) for n in names], timeout_ms=5000)
        striker = threading.Thread(target=_strike_in_flight, args=(broker, broker.stop, 1, hits), daemon=True)
        striker.start()
        results = outcomes(futures, timeout_s=20)
        elapsed_s = time.monotonic() - started
        striker.join(10)
    assert hits, "the broker was never stopped with a request in flight"
    assert elapsed_s < 5 + 5
    held = broker.topics()
    assert_truthful("create", results, held, wanted=dict.fromkeys(names, 1))
    assert 0 < len(held) < len(names)
    assert {n for n, exc in results.items() if exc is None} <= set(held)


def test_deadline_longer_than_librdkafkas_request_limit(quota_broker: BrokerFactory) -> None:
    """timeout_ms=7200000 (2 h) is above librdkafka's 3,600,000 ms request_timeout: it caps each request, not
    the call."""
    broker = quota_broker(controller_mutation_rate=50)
    broker.create_topic("grow-long", 1)
    broker.create_topic("delete-long", 1)
    with admin_for(broker, default_api_timeout_ms=7_200_000) as admin:
        results = {
            **outcomes(admin.create_topics([NewTopic("long", 2, 1)], timeout_ms=7_200_000)),
            **outcomes(admin.create_partitions([NewPartitions("grow-long", 2)], timeout_ms=7_200_000)),
            **outcomes(admin.delete_topics(["delete-long"])),
        }
    assert results == {"long": None, "grow-long": None, "delete-long": None}
    assert broker.topics() == {"long": 2, "grow-long": 2}


_SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}


@pytest.mark.parametrize(
    "conf",
    [
        pytest.param({**_SASL, "sasl.username": "alice", "sasl.password": "wrong-pw-9d2"}, id="wrong-password"),
        pytest.param({**_SASL, "sasl.username": "mallory", "sasl.password": "right-pw-7c1"}, id="unknown-user"),
    ],
)
def test_authentication_failure_is_reported_at_once(quota_broker: BrokerFactory, conf: dict[str, str]) -> None:
    broker = quota_broker(users={"alice": "right-pw-7c1"})
    with admin_for(broker, conf) as admin:
        started = time.monotonic()
        futures = {
            **admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)], timeout_ms=60000),
            **admin.delete_topics(["c"], timeout_ms=60000),
        }
        results = outcomes(futures, timeout_s=30)
        elapsed_s = time.monotonic() - started
    assert elapsed_s < 15, "reported at the deadline, not when librdkafka knew"
    for exc in results.values():
        assert exc is not None
        assert error_code(exc) in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED), exc
        assert "pw-" not in error_text(exc)  # neither password is echoed
    assert mutation_requests(broker) == []
    assert broker.topics() == {}


@pytest.mark.parametrize("num_brokers", [1, 3])
def test_plaintext_client_on_sasl_listener_is_reported_within_seconds(
    quota_broker: BrokerFactory, num_brokers: int
) -> None:
    """With 3 bootstrap servers librdkafka logs each broker's repeated drop once per 30 s, with a count of the
    ones it left out; those count too."""
    broker = quota_broker(users={"alice": "right-pw-7c1"}, num_brokers=num_brokers)
    with admin_for(broker, {"log_level": 0}) as admin:
        started = time.monotonic()
        result = outcomes(admin.create_topics([NewTopic("p", 1, 1)], timeout_ms=12000), timeout_s=30)["p"]
        elapsed_s = time.monotonic() - started
    assert result is not None
    assert mutation_requests(broker) == []
    assert elapsed_s < 8, f"reported after {elapsed_s:.1f} s: {error_text(result)}"
    assert not hedged(result), "nothing was sent: the outcome is known"
    assert error_code(result) == KafkaError._AUTHENTICATION, error_text(result)
    assert "the listener requires SASL authentication (it offers PLAIN)" in error_text(result)
    assert "security.protocol is 'plaintext'" in error_text(result)


@pytest.mark.parametrize("debug", [None, "broker,protocol"], ids=["quiet", "debug"])
def test_no_sasl_on_a_sasl_listener_is_reported_with_librdkafka_debug_on_too(
    quota_broker: BrokerFactory, debug: str | None
) -> None:
    broker = quota_broker(users={"alice": "right-pw-7c1"})
    conf = {"debug": debug} if debug else {}
    with admin_for(broker, conf, logger=_Quiet()) as admin:  # logger= as a keyword, as confluent-kafka allows
        started = time.monotonic()
        result = outcomes(admin.create_topics([NewTopic("p", 1, 1)], timeout_ms=12000), timeout_s=30)["p"]
        elapsed_s = time.monotonic() - started
    assert result is not None
    assert error_code(result) == KafkaError._AUTHENTICATION, error_text(result)
    assert elapsed_s < 8, elapsed_s


class _Quiet:
    def log(self, level: int, fmt: str, *args: object) -> None:
        pass


@pytest.mark.slow
def test_connections_dropped_while_calls_wait_on_the_quota_are_not_taken_for_a_sasl_listener(
    quota_broker: BrokerFactory,
) -> None:
    """A PLAINTEXT broker that drops every connection soon after the handshake, again and again, while no
    mutation gets through (the calls wait for the broker's throttle): the listener serves requests without
    authentication, so the client keeps retrying and every topic is created."""
    broker = quota_broker(controller_mutation_rate=2.0)
    reported: list[KafkaError] = []
    with admin_for(broker, {"error_cb": reported.append}) as admin:
        assert outcomes(admin.create_topics([NewTopic("big", 40, 1)], timeout_ms=30000))["big"] is None
        futures = admin.create_topics([NewTopic(f"w{i}", 1, 1) for i in range(3)], timeout_ms=60000)
        for _ in range(24):  # 6 s of drops, every 0.25 s
            broker.drop_connections()
            time.sleep(0.25)
        results = outcomes(futures, timeout_s=90)
    assert [e for e in reported if e.code() == KafkaError._AUTHENTICATION] == []
    assert_truthful("create", results, broker.topics(), wanted=dict.fromkeys(results, 1))
    assert all(exc is None or hedged(exc) for exc in results.values()), {n: str(e) for n, e in results.items()}


def test_a_logger_from_conf_still_gets_librdkafkas_lines_that_the_client_reads(quota_broker: BrokerFactory) -> None:
    """The client reads librdkafka's log to see the listener refusing it; the caller's logger loses nothing, and
    the caller's error_cb hears of the failure once, as of librdkafka's own authentication errors."""
    broker = quota_broker(users={"alice": "right-pw-7c1"})
    lines: list[str] = []
    reported: list[KafkaError] = []

    class Logger:
        def log(self, level: int, fmt: str, *args: object) -> None:
            lines.append(fmt % args)

    with admin_for(broker, {"logger": Logger(), "error_cb": reported.append}) as admin:
        result = outcomes(admin.create_topics([NewTopic("p", 1, 1)], timeout_ms=12000), timeout_s=30)["p"]
    assert result is not None
    assert error_code(result) == KafkaError._AUTHENTICATION, error_text(result)
    assert any(line.startswith("FAIL ") and "in state UP" in line for line in lines), lines
    assert [e.code() for e in reported if e.code() == KafkaError._AUTHENTICATION] == [KafkaError._AUTHENTICATION]
