"""A client made to read or to validate reads no controller quorum (``ReadingClient``, review 137).

Every client reads the KRaft quorum's leader epoch as it is made (``_driver/quorum_watch``): the baseline of its
first change. A broker forwards that DescribeQuorum to the controller, and an authorizer logs its denial for a
principal without DESCRIBE on the cluster. kafka-topics.sh --list and --describe never ask for it, and neither do
ours now, nor apply's check that a cluster can be reached, nor a dry run; no client reads it for a validate-only call.
Against QuotaBroker over loopback, its request log the witness, and against Kafka 4.4 with its authorizer on, its
log."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.real_kafka.broker import KafkaCluster
from tests.reliability_helpers import outcomes
from tests.support import BrokerFactory, quorum_reads
from throttled_admin import NewTopic
from throttled_admin._client import ReadingClient
from throttled_admin._driver.quorum_watch import QuorumWatch
from throttled_admin.cli import main
from throttled_admin.cli._reach import _check
from throttled_admin.cli._session import AdminSession
from throttled_admin.provisioning import PlanRow, Profile, apply_plan

SIGNAL_S = 10.0
# Kafka's own authorizer, the broker's PLAINTEXT listeners (and the controller's) a super user's
AUTHORIZER = (
    ("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
    ("super.users", "User:ANONYMOUS"),
)


def _reader_idle(session: AdminSession) -> None:
    """Until the views reader has done what it was given before now (the quorum read runs on its thread)."""
    done = threading.Event()
    scheduler = session.admin._scheduler
    assert scheduler is not None
    assert scheduler._views_reader.submit(done.set)
    assert done.wait(SIGNAL_S)


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each AdminSession's ``changes``, as it is made (the real session goes on)."""
    made: list[bool] = []
    init = AdminSession.__init__

    def recorded(self: AdminSession, *args: Any, **kwargs: Any) -> None:
        made.append(kwargs.get("changes", True))
        init(self, *args, **kwargs)

    monkeypatch.setattr(AdminSession, "__init__", recorded)
    return made


@pytest.mark.parametrize("changes", [False, True])
def test_a_session_that_changes_nothing_reads_the_quorum_only_when_a_change_comes(
    quota_broker: BrokerFactory, changes: bool
) -> None:
    broker = quota_broker()
    client_id = f"quorum-read-{changes}"
    conf = {"bootstrap.servers": broker.bootstrap_servers, "client.id": client_id}
    with AdminSession(conf, retry_on_quota_violation=False, timeout_ms=10_000, changes=changes) as session:
        session.list_topics()
        _reader_idle(session)
        assert quorum_reads(broker, client_id) == (1 if changes else 0)
        name = f"changed-{changes}"
        session.wait(session.admin.create_topics([NewTopic(name, 1, 1)]))
        _reader_idle(session)
        assert quorum_reads(broker, client_id) == 1  # the first change has its baseline, either way
    assert name in broker.topics()


@pytest.mark.parametrize(
    ("action", "changes"),
    [
        (["--list"], False),
        (["--describe"], False),
        (["--create", "--partitions", "1"], True),
        (["--alter", "--partitions", "2"], True),
        (["--delete"], True),
    ],
)
def test_the_topics_command_reads_the_quorum_only_for_a_change(
    quota_broker: BrokerFactory, made: list[bool], capsys: pytest.CaptureFixture[str], action: list[str], changes: bool
) -> None:
    broker = quota_broker()
    broker.create_topic("wired", 1)
    topic = "wired" if action[0] != "--create" else "made"
    assert main(["topics", "--bootstrap-server", broker.bootstrap_servers, *action, "--topic", topic]) == 0
    assert made == [changes]
    if not changes:  # (none asked for: a changing command's read may still be under way as it exits)
        assert quorum_reads(broker, "rdkafka") == 0
    capsys.readouterr()


def test_apply_checks_a_cluster_can_be_reached_without_reading_its_quorum(
    quota_broker: BrokerFactory, made: list[bool]
) -> None:
    broker = quota_broker()
    assert _check({"bootstrap.servers": broker.bootstrap_servers}, 10.0) is None
    assert made == [False]


@pytest.mark.kafka
def test_on_kafka_with_an_authorizer_only_a_session_that_changes_draws_the_quorum_reads_denial(
    kafka_cluster_of: Callable[..., KafkaCluster],
) -> None:
    """The ground truth: Kafka 4.4's StandardAuthorizer logs its denial of the DescribeQuorum of a principal without
    DESCRIBE on the cluster (alice, allowed to describe topics only): once for a client that may change topics,
    never for one that only reads."""
    cluster = kafka_cluster_of(extra=AUTHORIZER)  # (this test's alone: the denials counted are its own)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # (PLAINTEXT: ANONYMOUS, a super user)
    allowed = [
        AclBinding(ResourceType.TOPIC, "*", ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)
        for op in (AclOperation.DESCRIBE,)
    ]
    for future in admin.create_acls(allowed).values():
        future.result(30)
    log = cluster.log_path()

    def denials() -> list[str]:
        return [line for line in log.read_text().splitlines() if "User:alice is Denied" in line]

    for changes in (False, True):
        before = len(denials())
        with AdminSession(
            cluster.sasl_conf("alice"), retry_on_quota_violation=False, timeout_ms=30_000, changes=changes
        ) as session:
            session.list_topics()
            _reader_idle(session)  # (its quorum read answered: Kafka logged the denial before its answer)
        new = denials()[before:]
        assert len(new) == (1 if changes else 0), new
        assert all("request = DescribeQuorum" in line for line in new)


def _quorum_asked(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each time a client's watch said a read was due (``QuorumWatch.due``), whether it was the making's."""
    asked: list[bool] = []
    due = QuorumWatch.due

    def recorded(self: QuorumWatch, *, making: bool = False) -> bool:
        answer = due(self, making=making)
        if answer:
            asked.append(making)
        return answer

    monkeypatch.setattr(QuorumWatch, "due", recorded)
    return asked


def test_a_validate_only_call_and_its_answer_read_no_quorum_where_a_change_does(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = quota_broker()
    asked = _quorum_asked(monkeypatch)
    client_id = "validating"
    with ReadingClient({"bootstrap.servers": broker.bootstrap_servers, "client.id": client_id}) as admin:
        assert outcomes(admin.create_topics([NewTopic("checked", 1, 1)], validate_only=True)) == {"checked": None}
        assert asked == []
        assert outcomes(admin.create_topics([NewTopic("made", 1, 1)])) == {"made": None}
        assert asked == [False]  # as the change came
    assert "checked" not in broker.topics()


def test_a_dry_run_reads_no_quorum_and_a_run_does_as_its_client_is_made(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """apply_plan(dry_run=True) asks the cluster what it owes (a validate-only create) and changes nothing."""
    broker = quota_broker()
    profiles = {"local": Profile("local", {"bootstrap.servers": broker.bootstrap_servers})}
    rows = [PlanRow("local", "create", "planned", 1, 1)]
    asked = _quorum_asked(monkeypatch)
    [dry] = apply_plan(rows, profiles, dry_run=True)
    assert (dry.status, asked) == ("planned", [])
    [real] = apply_plan(rows, profiles)
    assert (real.status, asked) == ("created", [True])
