"""Quota entities, Kafka's precedence, and strict/permissive per-request semantics, on a fake clock."""

from __future__ import annotations

import pytest

from throttled_admin.testing import QuotaBroker
from throttled_admin.testing._quotas import QuotaEntity, QuotaManager

D = QuotaEntity.DEFAULT


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def manager(clock: Clock, rate: float | None = 10, window_num: int = 10) -> QuotaManager:
    quotas = QuotaManager(window_num=window_num, window_size_s=1.0, clock=clock)
    if rate is not None:
        quotas.set_quota(QuotaEntity(user=D), rate)
    return quotas


def test_strict_vector_90_90_admitted_third_rejected_8000_then_3000(clock: Clock) -> None:
    quotas = manager(clock)
    first = quotas.request_quota("ANONYMOUS", "c", strict=True)
    assert first.record(90)
    assert first.throttle_time_ms() == 0
    second = quotas.request_quota("ANONYMOUS", "c", strict=True)
    assert second.record(90)  # K = 10 >= 0 before recording: admitted, drives K to -80
    assert quotas.tokens("ANONYMOUS", "c") == -80
    # Kafka's strict quota records without a check: every topic admitted, no throttle (Kafka 4.4 answers 0).
    assert second.throttle_time_ms() == 0
    third = quotas.request_quota("ANONYMOUS", "c", strict=True)
    assert not third.record(90)
    assert third.throttle_time_ms() == 8000
    assert quotas.tokens("ANONYMOUS", "c") == -80  # a rejected topic is not charged
    clock.now += 5
    fourth = quotas.request_quota("ANONYMOUS", "c", strict=True)
    assert not fourth.record(1)
    assert fourth.throttle_time_ms() == 3000


def test_permissive_vector_0_8000_17000(clock: Clock) -> None:
    quotas = manager(clock)
    throttles = []
    for _ in range(3):
        quota = quotas.request_quota("ANONYMOUS", "c", strict=False)
        assert quota.record(90)
        throttles.append(quota.throttle_time_ms())
    assert throttles == [0, 8000, 17000]


def test_strict_partial_admission_in_request_order(clock: Clock) -> None:
    quotas = manager(clock)
    quota = quotas.request_quota("ANONYMOUS", "c", strict=True)
    assert [quota.record(n) for n in (60, 60, 1, 1)] == [True, True, False, False]
    assert quotas.tokens("ANONYMOUS", "c") == -20


def test_reported_throttle_decays_with_time_since_computed(clock: Clock) -> None:
    quotas = manager(clock)
    quota = quotas.request_quota("ANONYMOUS", "c", strict=False)
    quota.record(180)
    assert quota.throttle_time_ms() == 8000
    clock.now += 2.5
    assert quota.throttle_time_ms() == 5500
    clock.now += 10
    assert quota.throttle_time_ms() == 0


def test_unbounded_without_quota(clock: Clock) -> None:
    quotas = manager(clock, rate=None)
    quota = quotas.request_quota("ANONYMOUS", "c", strict=True)
    assert all(quota.record(10_000) for _ in range(5))
    assert quota.throttle_time_ms() == 0
    assert quotas.tokens("ANONYMOUS", "c") is None


# Kafka's eight levels, most specific first.
LEVELS = [
    QuotaEntity("alice", "app"),
    QuotaEntity("alice", D),
    QuotaEntity(user="alice"),
    QuotaEntity(D, "app"),
    QuotaEntity(D, D),
    QuotaEntity(user=D),
    QuotaEntity(client_id="app"),
    QuotaEntity(client_id=D),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_precedence_most_specific_configured_entity_wins(clock: Clock, level: int) -> None:
    quotas = QuotaManager(window_num=1, window_size_s=1.0, clock=clock)
    for index, entity in enumerate(LEVELS[level:], start=level):
        quotas.set_quota(entity, 100.0 + index)
    bucket = quotas.bucket_for("alice", "app")
    assert bucket is not None
    assert bucket.rate == 100.0 + level


def test_default_user_quota_gives_each_principal_a_bucket_shared_by_its_client_ids(clock: Clock) -> None:
    quotas = manager(clock)
    assert quotas.bucket_for("alice", "a") is quotas.bucket_for("alice", "b")
    assert quotas.bucket_for("alice", "a") is not quotas.bucket_for("bob", "a")


def test_default_client_quota_gives_each_client_id_a_bucket(clock: Clock) -> None:
    quotas = QuotaManager(window_num=1, window_size_s=1.0, clock=clock)
    quotas.set_quota(QuotaEntity(client_id=D), 5)
    assert quotas.bucket_for("alice", "a") is quotas.bucket_for("bob", "a")
    assert quotas.bucket_for("alice", "a") is not quotas.bucket_for("alice", "b")


def test_changing_a_quota_keeps_tokens_and_caps_them_at_the_new_burst(clock: Clock) -> None:
    quotas = manager(clock, rate=10)
    quotas.request_quota("u", "c", strict=False).record(30)
    assert quotas.tokens("u", "c") == 70
    quotas.set_quota(QuotaEntity(user=D), 5)
    assert quotas.tokens("u", "c") == 50
    quotas.set_quota(QuotaEntity(user=D), None)
    assert quotas.tokens("u", "c") is None


def test_entity_wire_form_round_trips() -> None:
    for entity in LEVELS:
        assert QuotaEntity.from_components(entity.components()) == entity
    with pytest.raises(ValueError, match="needs a user"):
        QuotaEntity()
    with pytest.raises(ValueError, match="Unhandled client quota entity type: ip"):
        QuotaEntity.from_components([("ip", "1.2.3.4")])


def test_a_quota_change_refills_the_elapsed_interval_at_the_new_rate(clock: Clock) -> None:
    """Kafka's TokenBucket reads the quota from the metric config when it refills
    (ControllerMutationQuotaManager.updateQuotaMetricConfigs changes it in place): after a change, the
    whole interval since the last update refills at the new rate, not the old one."""
    quotas = manager(clock, rate=10)  # burst 100
    quotas.request_quota("u", "c", strict=False).record(100)
    assert quotas.tokens("u", "c") == 0
    clock.now += 2
    quotas.set_quota(QuotaEntity(user=D), 20)  # burst 200
    assert quotas.tokens("u", "c") == 40  # 2 s x 20/s; the old rate would give 20
    clock.now += 1
    quotas.set_quota(QuotaEntity(user=D), 5)  # burst 50
    assert quotas.tokens("u", "c") == 45  # 40 + 1 s x 5/s


def test_all_four_client_quota_keys_are_stored_with_kafkas_validation(clock: Clock) -> None:
    """QuotaConfig's user/client-id keys: producer_byte_rate and consumer_byte_rate (LONG),
    request_percentage and controller_mutation_rate (DOUBLE); ClientQuotaControlManager's messages."""
    quotas = manager(clock, rate=None)
    alice = QuotaEntity(user="alice")
    for key, value in (
        ("producer_byte_rate", 1024),
        ("consumer_byte_rate", 2048),
        ("request_percentage", 12.5),
        ("controller_mutation_rate", 2.5),
    ):
        quotas.set_quota(alice, value, key)
    assert quotas.entity_quotas() == {
        alice: {
            "producer_byte_rate": 1024.0,
            "consumer_byte_rate": 2048.0,
            "request_percentage": 12.5,
            "controller_mutation_rate": 2.5,
        }
    }
    assert quotas.quotas() == {alice: 2.5}
    assert quotas.quotas("request_percentage") == {alice: 12.5}
    with pytest.raises(ValueError, match=r"^Invalid configuration key nope \(quota keys: producer_byte_rate, "):
        quotas.quotas("nope")  # a new user's run (helper 106): {} as if no entity set it
    with pytest.raises(ValueError, match=r"^producer_byte_rate cannot be a fractional value\.$"):
        quotas.set_quota(alice, 10.5, "producer_byte_rate")
    with pytest.raises(ValueError, match=r"^Invalid configuration key connection_creation_rate$"):
        quotas.set_quota(alice, 1, "connection_creation_rate")
    with pytest.raises(ValueError, match=r"^Quota request_percentage must be greater than 0$"):
        quotas.set_quota(alice, -3, "request_percentage")
    for key in ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"):
        quotas.set_quota(alice, None, key)
    assert quotas.entity_quotas() == {}


@pytest.mark.parametrize("users", [{"bob": ""}, {"": "pw"}])
def test_a_sasl_user_without_a_name_or_password_is_refused_at_construction(users: dict[str, str]) -> None:
    """A new user's run (helper 106): QuotaBroker(users={"bob": ""}) started, and no client could log in as bob
    (librdkafka will not send an empty password; Kafka's PLAIN refuses one)."""
    with pytest.raises(ValueError, match=r"^users: .* needs a name and a password"):
        QuotaBroker(users=users)
