"""The provisioning pipeline tells the truth: profiles given as the README shows them, every row's status
matching the cluster after connections drop mid-plan, configs compared as Kafka compares them, and a dry
run that checks config names and values against the cluster. QuotaBrokers over loopback."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from kafka.protocol.admin.topics import DeleteTopicsRequest

from tests.support import BrokerFactory, wait_until
from tests.wire import WireClient, create_topics_request
from throttled_admin.provisioning import (
    STOPPED,
    PlanError,
    PlanRow,
    PlanStop,
    Profile,
    RowResult,
    apply_plan,
    execute,
    summarize,
)
from throttled_admin.testing import QuotaBroker


def conf_for(broker: QuotaBroker, **extra: object) -> dict[str, object]:
    return {"bootstrap.servers": broker.bootstrap_servers, "request_timeout_s": 3.0, **extra}


def profile_for(broker: QuotaBroker, name: str = "east", rate: float | None = 50.0) -> Profile:
    return Profile(name, {"bootstrap.servers": broker.bootstrap_servers}, rate, request_timeout_s=3.0)


# --- profiles -------------------------------------------------------------------------------------------


def test_apply_plan_takes_conf_mappings_as_profiles_yaml_has_them(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    rows = [PlanRow("dev", "ensure", f"dev.{i}", 2) for i in range(5)]
    results = apply_plan(rows, {"dev": conf_for(broker, mutation_rate=50)})
    assert summarize(results) == {"created": 5}
    assert broker.topics() == {f"dev.{i}": 2 for i in range(5)}
    # Both forms in one call, and the same entity named twice shares one group.
    mixed: dict[str, Profile | Mapping[str, Any]] = {"dev": conf_for(broker), "also": profile_for(broker, "also", None)}
    rerun = apply_plan([*rows, PlanRow("also", "ensure", "also.0", 1)], mixed)
    assert [r.status for r in rerun] == ["unchanged"] * 5 + ["created"]
    # Found by a new user's run (helper 107): two profiles of one entity that differ ran with the first one's
    # settings, the other's (a mutation_rate, a request_timeout_s, a librdkafka setting) dropped without a word.
    differing: dict[str, Profile | Mapping[str, Any]] = {
        "dev": conf_for(broker, **{"client.id": "x"}),
        "also": profile_for(broker, "also", 50.0),
    }
    with pytest.raises(PlanError) as info:
        apply_plan([*rows, PlanRow("also", "ensure", "also.1", 1)], differing)
    assert str(info.value) == (
        "profiles 'dev' and 'also' name one quota entity (bootstrap.servers and principal) and would run as one group, "
        "with the settings of 'dev', but differ in mutation_rate, client.id: give them the same settings, or plan one "
        "of them"
    )
    assert "also.1" not in broker.topics()


@pytest.mark.parametrize(
    ("profiles", "error", "match"),
    [
        ({"dev": "localhost:9092"}, TypeError, r"profile 'dev': expected a Profile or a mapping .* got str"),
        ({"dev": ["localhost:9092"]}, TypeError, r"profile 'dev': .* got list"),
        ({"dev": None}, TypeError, r"profile 'dev': .* got NoneType"),
        ({"dev": Profile("prod", {"bootstrap.servers": "h:1"})}, PlanError, r"profile 'dev': .* named 'prod'"),
        ({"dev": {"sasl.username": "u"}}, PlanError, r"profile 'dev': field 'bootstrap.servers': missing"),
        ({"dev": {"bootstrap.servers": "h:1", "mutation_rate": -1}}, PlanError, r"'mutation_rate': must be"),
        ({"dev": {"bootstrap.servers": "h:1", "sasl.password": object()}}, PlanError, r"'sasl.password': must be"),
    ],
)
def test_a_profile_of_another_kind_fails_before_anything_is_sent(
    quota_broker: BrokerFactory, profiles: dict[str, object], error: type[Exception], match: str
) -> None:
    broker = quota_broker()
    with pytest.raises(error, match=match):
        apply_plan([PlanRow("dev", "ensure", "t", 1)], profiles)  # type: ignore[arg-type]
    assert broker.topics() == {}
    assert not broker.request_log()


def test_a_profile_error_never_shows_a_secret() -> None:
    secret = "s3cr3t-never-shown"
    with pytest.raises(PlanError) as info:
        apply_plan([PlanRow("dev", "ensure", "t", 1)], {"dev": {"sasl.password": secret}})
    assert secret not in str(info.value)


# --- every unknown outcome verified ---------------------------------------------------------------------


def test_rows_match_the_cluster_after_connections_drop_mid_plan(quota_broker: BrokerFactory) -> None:
    # 400 ensure, 50 grow, 50 delete under a strict 60/s quota; once the first topic is created, every
    # connection is dropped five times, 0.3 s apart. Every response leaves 50 ms after its request was
    # applied, so drops land between the two: whatever that leaves unknown is read back from the cluster.
    broker = quota_broker(controller_mutation_rate=60, enforcement="strict")
    broker.set_latency(0.05)
    for i in range(50):
        broker.create_topic(f"grow.{i:02d}", 2)
        broker.create_topic(f"gone.{i:02d}", 1)
    before = set(broker.topics())
    rows = [PlanRow("east", "ensure", f"new.{i:03d}", 1) for i in range(400)]
    rows += [PlanRow("east", "grow", f"grow.{i:02d}", 8) for i in range(50)]
    rows += [PlanRow("east", "delete", f"gone.{i:02d}") for i in range(50)]
    stop = threading.Event()
    drops = 0

    def dropper() -> None:
        nonlocal drops
        while not (broker.topics().keys() - before) and not stop.wait(0.005):
            pass
        for _ in range(5):
            broker.drop_connections()
            drops += 1
            if stop.wait(0.3):
                return

    thread = threading.Thread(target=dropper)
    thread.start()
    try:
        profile = Profile("east", {"bootstrap.servers": broker.bootstrap_servers}, 60.0, 3.0)
        results = execute(rows, profile, allow_delete=True)
    finally:
        stop.set()
        thread.join()
    assert drops >= 3  # mid-plan: the plan needs ~1.5 s of quota after its burst
    cluster = broker.topics()
    wrong = [r for r in results if r.status != expected_status(r, cluster)]
    assert not wrong, wrong[:5]
    failed = [(r.topic, r.attempts, r.error_name, r.error_message) for r in results if r.status == "failed"]
    assert summarize(results) == {"created": 400, "grown": 50, "deleted": 50}, failed[:3]
    unknown = [r for r in results if "verified by reading the cluster" in (r.detail or "")]
    assert unknown  # the drops did leave outcomes unknown, and they were read back
    # (which rows depends on timing; test_a_lost_grow_delete_and_alter... loses each kind for certain)


def expected_status(result: RowResult, cluster: dict[str, int]) -> str:
    """The status the cluster shows for a row of the plan above."""
    if result.action == "ensure":
        return "created" if cluster.get(result.topic) == 1 else "failed"
    if result.action == "grow":
        return "grown" if cluster.get(result.topic) == 8 else "failed"
    return "deleted" if result.topic not in cluster else "failed"


def test_a_lost_grow_delete_and_alter_response_ends_with_what_the_cluster_shows(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    broker.create_topic("g", 2)
    broker.create_topic("d", 1)
    broker.create_topic("c", 1)
    for api in ("CreatePartitions", "IncrementalAlterConfigs"):
        broker.blackhole_next(api)
    # The grow's answer is lost: the client sends its sentinel (a DeleteTopics) before anything else, and that one is
    # lost too; librdkafka drops the connection at socket.timeout.ms, then the delete goes, and its answer is lost.
    broker.blackhole_next("DeleteTopics", count=2)
    rows = [
        PlanRow("east", "grow", "g", 4),
        PlanRow("east", "delete", "d"),
        PlanRow("east", "ensure", "c", 1, configs={"retention.ms": "1000"}),
    ]
    profile = profile_for(broker)
    profile = Profile(profile.name, {**profile.conf, "socket.timeout.ms": "5000"}, profile.mutation_rate, 3.0)
    results = execute(rows, profile, allow_delete=True)
    assert [r.status for r in results] == ["grown", "deleted", "reconfigured"], results
    # The grow's and the alter's answers were lost: each row says it read the cluster to know. (The delete's
    # lost answer is not always the delete's own first attempt since requests wait for an abandoned one's
    # connection: its row is checked by the state below; see the closing note of issue 27's session.)
    details = {r.action: r.detail or "" for r in results}
    assert "verified by reading the cluster" in details["grow"], details
    assert "verified by reading the cluster" in details["ensure"], details
    assert broker.topics() == {"g": 4, "c": 1}
    assert summarize(execute(rows, profile_for(broker), allow_delete=True)) == {"unchanged": 3}


# --- configs as Kafka compares them ---------------------------------------------------------------------

SPELLINGS = {
    "cleanup.policy": "compact, delete",
    "preallocate": "TRUE",
    "min.cleanable.dirty.ratio": "0.50",
    "retention.ms": " 86400000",
}
SHOWN = {
    "cleanup.policy": "compact,delete",
    "preallocate": "true",
    "min.cleanable.dirty.ratio": "0.5",
    "retention.ms": "86400000",
}


def test_kafkas_other_spellings_converge_in_three_runs(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    rows = [
        PlanRow("east", action, f"{action}.{i}", 2, configs=dict(SPELLINGS))
        for action in ("ensure", "create")
        for i in range(2)
    ]
    rows += [PlanRow("east", "ensure", f"one.{name}", 1, configs={name: value}) for name, value in SPELLINGS.items()]
    first = execute(rows, profile_for(broker))
    assert summarize(first) == {"created": len(rows)}, first
    described = described_configs(broker, "create.1")
    assert {name: described[name] for name in SHOWN} == SHOWN  # Kafka shows its own spelling
    for _ in range(2):
        again = execute(rows, profile_for(broker))
        assert summarize(again) == {"unchanged": len(rows)}, again
    assert not [r for r in broker.request_log() if r.api_name == "IncrementalAlterConfigs"]


def test_a_create_row_whose_topic_exists_as_planned_is_unchanged(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    broker.create_topic("same", 3, {"retention.ms": "86400000"})
    broker.create_topic("other", 3, {"retention.ms": "1000"})
    rows = [
        PlanRow("east", "create", "same", 3, configs={"retention.ms": " 86400000"}),
        PlanRow("east", "create", "other", 3, configs={"retention.ms": "86400000"}),
    ]
    results = execute(rows, profile_for(broker))
    assert [r.status for r in results] == ["unchanged", "failed"]
    assert "already exists and differs" in (results[1].error_message or "")


@pytest.mark.parametrize(
    ("name", "planned", "shown"),
    [
        ("cleanup.policy", " compact ,delete ", "compact,delete"),
        ("preallocate", "False", "false"),
        ("min.cleanable.dirty.ratio", "5e-1", "0.5"),
        ("retention.ms", "+1000", "1000"),
        ("max.message.bytes", " 1048588 ", "1048588"),
        ("compression.type", " gzip", "gzip"),  # STRING: trimmed, as Kafka's parser does
        ("retention.ms", "ten", "ten"),  # refused by Kafka: compared as given, so the change says why
        ("no.such.config", " x ", " x "),
    ],
)
def test_values_are_normalized_by_kafkas_config_types(name: str, planned: str, shown: str) -> None:
    from throttled_admin.provisioning._configs import normalized

    assert normalized(name, planned) == shown


def test_a_dry_run_fails_unknown_names_and_bad_values_with_kafkas_message(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    broker.create_topic("existing", 1)
    rows = [
        PlanRow("east", "ensure", "typo", 1, configs={"retension.ms": "1000"}),
        PlanRow("east", "ensure", "bad.value", 1, configs={"retention.ms": "a week"}),
        PlanRow("east", "ensure", "existing", 1, configs={"cleanup.policy": "compact,shred"}),
        PlanRow("east", "ensure", "fine", 1, configs=dict(SPELLINGS)),
    ]
    planned = execute(rows, profile_for(broker), dry_run=True)
    assert [r.status for r in planned] == ["failed", "failed", "failed", "planned"]
    assert planned[0].error_message == "Unknown topic config name: retension.ms"
    assert planned[1].error_message == "Invalid value a week for configuration retention.ms: Not a number of type LONG"
    assert all(r.error_code == 40 for r in planned[:3])  # INVALID_CONFIG, as the real run gets
    assert broker.topics() == {"existing": 1}
    reads = {"ApiVersions", "Metadata", "DescribeConfigs", "DescribeQuorum"}  # (the client's quorum baseline too)
    assert {r.api_name for r in broker.request_log()} <= reads | {"CreateTopics"}
    # The one create: validate-only of one partition, for the quota the principal owes (issue 38).
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert [(r.validate_only, r.mutations) for r in creates] == [(True, 1)]
    # The real run fails the same rows with the cluster's own words.
    real = execute(rows, profile_for(broker))
    assert [r.status for r in real] == ["failed", "failed", "failed", "created"]
    for dry, done in zip(planned[:3], real[:3], strict=True):
        assert dry.error_message is not None
        assert dry.error_message in (done.error_message or ""), (dry.error_message, done.error_message)


def described_configs(broker: QuotaBroker, topic: str) -> dict[str, str]:
    """A topic's configs as an independent client (confluent-kafka's own AdminClient) reads them."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    return {name: entry.value for name, entry in entries.items() if entry.value is not None}


def _stale_reader(quota_broker: Callable[..., QuotaBroker]) -> tuple[QuotaBroker, Profile]:
    """Three brokers whose non-controllers see changes 2 s late; the profile reads the cluster through node 1, so
    its plan is decided on what the cluster was, and someone else's change lands in between (found by review)."""
    broker = quota_broker(num_brokers=3, metadata_lag_ms=2000)
    lagging = broker.bootstrap_servers.split(",")[1]
    return broker, Profile("dev", {"bootstrap.servers": lagging}, 1000.0, request_timeout_s=5.0)


def test_an_ensure_that_grew_someone_elses_new_topic_says_grown(quota_broker: Callable[..., QuotaBroker]) -> None:
    """Was: the create got TOPIC_ALREADY_EXISTS, the verification grew the topic 2 -> 4, and the row said
    'created', 'create with 4 partitions'."""
    broker, profile = _stale_reader(quota_broker)
    with WireClient(broker.bootstrap_servers.split(",")[0]) as wire:  # someone else's create, on the controller
        assert wire.request(create_topics_request(7, ("t", 2))).topics[0].error_code == 0
    [result] = execute([PlanRow("dev", "ensure", "t", 4)], profile)
    assert broker.topics() == {"t": 4}
    assert result.status == "grown", result
    if result.attempts > 1:  # the stale read planned a create and the cluster said the topic exists
        assert result.detail is not None
        assert "already existed" in result.detail


def test_a_delete_someone_else_made_first_is_unchanged_not_failed(quota_broker: Callable[..., QuotaBroker]) -> None:
    """Was: DeleteTopics answered UNKNOWN_TOPIC_OR_PARTITION and the row ended 'failed', though the cluster shows
    exactly what the plan asks."""
    broker, profile = _stale_reader(quota_broker)
    broker.create_topic("t", 2)
    with WireClient(broker.bootstrap_servers.split(",")[0]) as wire:  # someone else's delete, on the controller
        wire.request(DeleteTopicsRequest(version=4, topic_names=["t"], timeout_ms=30000))
    [result] = execute([PlanRow("dev", "delete", "t")], profile, allow_delete=True)
    assert broker.topics() == {}
    assert result.status in ("unchanged", "deleted"), result
    assert result.error_code is None


def test_a_stop_before_someone_elses_topic_is_read_keeps_kafkas_already_exists(quota_broker: BrokerFactory) -> None:
    """A create answered TOPIC_ALREADY_EXISTS (someone else's topic) waits for a read that compares the topic with the
    plan. Was: a plan's stop before that read ended the row "outcome unknown (the plan was stopped before its outcome
    was known)" with no code, though Kafka had said the topic exists (review 116, carried since stop 85)."""
    broker = quota_broker()
    broker.create_topic("g", 1)
    broker.delay_next(
        "CreateTopics", 2.0
    )  # the probe's answer: someone else creates t meanwhile, after the plan's read
    broker.delay_next("CreatePartitions", 2.0)  # g's grow is in flight when the plan is stopped
    stop, results = PlanStop(), list[RowResult]()
    # p goes alone first (the fewest mutations), t and g once it is answered
    rows = [PlanRow("east", "ensure", "p", 1), PlanRow("east", "ensure", "t", 2), PlanRow("east", "ensure", "g", 4)]
    run = threading.Thread(target=lambda: results.extend(execute(rows, profile_for(broker), stop=stop)))
    run.start()
    try:

        def sent(api: str) -> Callable[[], bool]:
            return lambda: any(r.api_name == api for r in broker.request_log())

        assert wait_until(sent("CreateTopics"), timeout_s=30)
        with WireClient(broker.bootstrap_servers) as wire:
            assert wire.request(create_topics_request(7, ("t", 2))).topics[0].error_code == 0
        assert wait_until(sent("CreatePartitions"), timeout_s=30)
        stop.stop()
    finally:
        run.join(timeout=60)
    assert not run.is_alive()
    probe, existed, grown = results
    assert (probe.status, grown.status) == ("created", "grown"), results  # in flight at the stop: answers taken
    assert (existed.status, existed.error_name, existed.error_code) == ("failed", STOPPED, 36), existed
    message = existed.error_message or ""
    assert "already exists" in message, existed
    assert message.endswith("(the plan was stopped before the topic was compared with the plan)"), existed
    assert broker.topics() == {"p": 1, "t": 2, "g": 4}


# Was (issue 27, "provisioning reads what may still change"): after an unknown outcome the executor read the cluster
# at once, concluded "missing" while the controller was still applying the first request (a slow CreateTopicPolicy),
# and sent the create again.
def test_an_unknown_outcome_is_verified_only_once_the_change_can_no_longer_be_applied(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(num_brokers=3)  # the verifying read need not queue behind the create on its connection
    broker.slow_policy("slow-", 5.0)
    profile = Profile("east", {"bootstrap.servers": broker.bootstrap_servers}, None, request_timeout_s=1.0)
    # A budget of 2.5 s: the call ends before the create lands, and so does the verification's wait (issue 38's review:
    # the budget bounds it), so the row ends with its outcome unknown, never read as missing and sent again.
    [result] = execute([PlanRow("east", "create", "slow-a", 1)], profile, timeout_s=2.5)
    assert (result.status, result.error_name) == ("failed", "_TIMED_OUT"), result
    assert "(timeout_s=2.5) ended first; the broker could still apply it" in (result.error_message or "")
    # The broker logs a request once answered, after this returns: the client's count of sends says it went once.
    assert result.attempts == 1, "read as missing while it could still be applied, and sent again"
