"""The plan executor without Spark, against QuotaBrokers over loopback: every row accounted for, reruns
converge, changes Kafka cannot make fail with the reason, lost responses are verified, and credentials
stay out of results and logs."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from hypothesis import given
from hypothesis import strategies as st

from tests.support import BrokerFactory, refused_a_create, running, wait_until
from throttled_admin import ThrottledAdminClient
from throttled_admin._errors import (
    NotSentReason,
    OutcomeUnknownReason,
    after_unknown_attempt,
    cannot_connect_error,
    closed_error,
    in_flight_error,
    not_sent_error,
    refused_error,
    unknown_outcome_error,
)
from throttled_admin.provisioning import (
    STOPPED,
    PlanError,
    PlanRow,
    PlanStop,
    Profile,
    Progress,
    RowResult,
    _executor,
    apply_plan,
    execute,
    predicted_seconds,
    read_plan,
    summarize,
)
from throttled_admin.provisioning._cluster_read import MAX_SEPARATORS, names_to_read, spellings
from throttled_admin.provisioning._decide import Change
from throttled_admin.provisioning._executor import _outcome_unknown, _Run
from throttled_admin.testing import QuotaBroker


def profile_for(broker: QuotaBroker, name: str = "east", rate: float | None = 50.0, **conf: str) -> Profile:
    return Profile(name, {"bootstrap.servers": broker.bootstrap_servers, **conf}, rate, request_timeout_s=3.0)


def count_metrics_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The real client's ``metrics()``, counted: ``[reads]`` so far."""
    calls = [0]
    metrics = ThrottledAdminClient.metrics

    def counted(self: ThrottledAdminClient) -> dict[str, float]:
        calls[0] += 1
        return metrics(self)

    monkeypatch.setattr(ThrottledAdminClient, "metrics", counted)
    return calls


def statuses(results: list[RowResult]) -> dict[str, str]:
    return {r.topic: r.status for r in results}


def test_every_row_is_accounted_for_and_a_rerun_is_unchanged(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    profile = profile_for(broker)
    rows = [PlanRow("east", "ensure", f"orders.{i:03d}", 3) for i in range(40)]
    rows += [PlanRow("east", "create", "audit", 2, 1), PlanRow("east", "ensure", "defaults")]
    updates: list[Progress] = []
    results = execute(rows, profile, progress=updates.append)
    assert [r.topic for r in results] == [r.topic for r in rows]
    assert summarize(results) == {"created": 42}
    assert broker.topics() == {**{f"orders.{i:03d}": 3 for i in range(40)}, "audit": 2, "defaults": 1}
    first = results[0]
    assert (first.cluster, first.action, first.attempts, first.mutations, first.error_code) == (
        "east",
        "ensure",
        1,
        3,
        None,
    )
    assert first.started_at is not None
    assert first.finished_at is not None
    assert first.started_at <= first.finished_at
    assert updates
    assert updates[-1].rows_done == updates[-1].rows_total == 42
    assert updates[-1].mutations_admitted == 40 * 3 + 2 + 1
    assert updates[-1].quota_rate == 50.0

    rerun = execute(rows, profile)
    assert summarize(rerun) == {"unchanged": 42}
    assert all(r.attempts == 0 and r.error_message is None for r in rerun)


def test_a_row_with_no_topic_or_action_keeps_them_missing_in_its_result(quota_broker: BrokerFactory) -> None:
    """Red-team 133: a plan DataFrame's null topic or action came back as the text 'None', a topic name Kafka takes
    (a null cluster stayed null); a number stays its digits."""
    profile = profile_for(quota_broker())
    rows = [PlanRow("east", "create", None, 1), PlanRow("east", None, "t", 1), PlanRow("east", "create", 7, 1)]  # type: ignore[arg-type]  # (as a DataFrame's rows may hold them)
    results = execute(rows, profile)
    assert [(r.topic, r.action, r.status, r.error_name) for r in results] == [
        (None, "create", "failed", "PLAN_ERROR"),
        ("t", None, "failed", "PLAN_ERROR"),
        ("7", "create", "failed", "PLAN_ERROR"),
    ]


def test_settled_topics_reach_the_group_without_a_callback_thread_each(quota_broker: BrokerFactory) -> None:
    """A group learns of each settled topic on the thread that settles it, not through the client's pool for
    done-callbacks, which starts a thread for each callback that finds none idle: topics settle in bursts (every
    topic a metadata read found visible), and those threads were 39 % of a fleet's Python workers' samples
    (docs/benchmarks.md). Every thread started while the group runs is recorded by name (``threading.setprofile``
    runs in each new thread); 30 topics started two or more of them before."""
    broker = quota_broker(controller_mutation_rate=500)
    rows = [PlanRow("east", "ensure", f"burst.{i:03d}", 1) for i in range(30)]
    started: list[str] = []

    def first_call(frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)  # the first event of each new thread is enough
        started.append(threading.current_thread().name)

    threading.setprofile(first_call)
    try:
        results = execute(rows, profile_for(broker, rate=500.0))
    finally:
        threading.setprofile(None)
    assert summarize(results) == {"created": 30}
    assert "throttled-admin-views" in started  # the hook saw the client's threads (its wait_for_metadata reader)
    # One at most: the future of the describe_cluster the group's first read waits for (an inherited method's).
    assert started.count("throttled-admin-callbacks") <= 1, started


def test_a_groups_reads_ask_about_its_own_names_and_their_collisions_not_every_topic(
    quota_broker: BrokerFactory,
) -> None:
    """Issue 29: each group's first read listed every topic of its cluster (librdkafka's ``list_topics``, every
    partition made into Python objects): 20-40 % of a fleet's client CPU. It asks now about its own names, and for
    a row that may create, every name Kafka takes for the same one ('.' and '_'), so the "collides with the
    existing topic" check still sees what it needs; replica and partition counts still decide the rows."""
    broker = quota_broker(controller_mutation_rate=500)
    for i in range(100):
        broker.create_topic(f"unrelated.{i:03d}", 2)
    broker.create_topic("a_b", 1)
    broker.create_topic("kept.x", 2)
    broker.create_topic("kept.x2", 2)
    broker.create_topic("small", 3)
    rows = [
        PlanRow("east", "ensure", "a.b", 1),  # collides with the existing a_b
        PlanRow("east", "ensure", "kept.x", 2),
        PlanRow("east", "create", "kept.x2", 2, 2),  # the broker's replication factor is 1
        PlanRow("east", "delete", "small"),  # refused without allow_delete, after reading it
        PlanRow("east", "ensure", "new.y_z", 1),
    ]
    results = execute(rows, profile_for(broker, rate=500.0))
    assert [r.status for r in results] == ["failed", "unchanged", "failed", "failed", "created"]
    assert results[0].error_message == "'a.b' collides with the existing topic 'a_b'"
    assert "replication factor 1, the plan says 2" in (results[2].error_message or "")
    assert results[3].error_name == "DELETE_NOT_ALLOWED"
    metadata = [r for r in broker.request_log() if r.api_name == "Metadata"]
    assert not [r for r in metadata if r.all_topics]
    asked = set().union(*(r.errors for r in metadata))
    variants = {"a.b", "a_b", "kept.x", "kept_x", "kept.x2", "kept_x2", "new.y_z", "new_y_z", "new.y.z", "new_y.z"}
    assert {"a.b", "a_b", "kept.x", "kept.x2", "small", "new.y_z"} <= asked <= variants | {"small"}


def test_the_spellings_a_row_may_collide_with_are_asked_about_up_to_a_cap() -> None:
    assert sorted(spellings("a.b_c")) == ["a.b.c", "a.b_c", "a_b.c", "a_b_c"]
    assert spellings("plain") == ["plain"]
    rows = [PlanRow("east", "ensure", "x.y", 1), PlanRow("east", "delete", "d.e"), PlanRow("east", "create", "x_y", 1)]
    assert names_to_read(rows) == ["x.y", "x_y", "d.e"]  # a delete never creates: its own name only
    many = "." * MAX_SEPARATORS + "z"
    assert len(names_to_read([PlanRow("east", "ensure", many, 1)]) or []) == 2**MAX_SEPARATORS
    assert names_to_read([*rows, PlanRow("east", "ensure", "_" + many, 1)]) is None  # every topic is listed instead


@given(st.text("ab._", max_size=9))
def test_every_spelling_of_a_name_in_product_order_however_many_separators(name: str) -> None:
    # One character at a time: a separator either way, any other kept; the first spelling all '.', the last all '_'.
    choices = [("._" if c in "._" else c) for c in name]
    assert spellings(name) == ["".join(chars) for chars in itertools.product(*choices)]


def test_a_name_past_the_cap_lists_the_cluster_once_and_still_finds_its_twin(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=500)
    dotted = "a.b.c.d.e.f.g"  # 6 separators: 64 spellings
    broker.create_topic(dotted.replace(".", "_"), 1)
    rows = [PlanRow("east", "ensure", dotted, 1), PlanRow("east", "ensure", "other", 1)]
    results = execute(rows, profile_for(broker, rate=500.0))
    assert [r.status for r in results] == ["failed", "created"]
    assert results[0].error_message == f"{dotted!r} collides with the existing topic 'a_b_c_d_e_f_g'"
    assert len([r for r in broker.request_log() if r.api_name == "Metadata" and r.all_topics]) == 1


def test_a_dry_run_none_of_whose_topics_exist_learns_config_names_from_a_topic_the_cluster_lists(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    broker.create_topic("unrelated", 1)
    rows = [PlanRow("east", "ensure", "new", 1, configs={"retension.ms": "1000"})]
    planned = execute(rows, profile_for(broker), dry_run=True)
    assert (planned[0].status, planned[0].error_message) == ("failed", "Unknown topic config name: retension.ms")
    assert len([r for r in broker.request_log() if r.all_topics]) == 1
    assert "DescribeConfigs" in {r.api_name for r in broker.request_log()}


def test_the_clients_metrics_are_read_once_a_batch_not_twice_a_topic(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each row's throttle time is the client's backoff-time-ms-total when its last operation settled less when it
    started: read per row, at its start and its end, it was 5 % of the fleet's driver CPU (issue 29). The real
    client's ``metrics`` is counted; the rows still say what the throttle cost them."""
    broker = quota_broker(controller_mutation_rate=20, enforcement="strict")
    calls = count_metrics_reads(monkeypatch)
    rows = [PlanRow("east", "ensure", f"count.{i:02d}", 5) for i in range(60)]
    results = execute(rows, profile_for(broker, rate=None))
    assert summarize(results) == {"created": 60}
    assert any(r.throttle_time_ms > 0 for r in results)
    assert calls[0] < len(rows), calls


def test_a_group_counts_the_brokers_at_its_start_from_its_first_read_not_a_request_more(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The brokers a group had when it began (issue 37's node away) come from the DescribeCluster its first read
    waits for: a second one per entity before sending was 2-5 ms of a fleet entity's CPU (issue 40). Two brokers,
    counted: a refusal counting one means a node is away."""
    broker = quota_broker(controller_mutation_rate=50, num_brokers=2)
    counted: list[int | None] = []
    await_brokers = _executor._await_brokers

    def seen(group: Any, admin: ThrottledAdminClient, runs: list[_Run]) -> Any:
        counted.append(group.brokers_at_start)
        return await_brokers(group, admin, runs)

    monkeypatch.setattr(_executor, "_await_brokers", seen)
    results = execute([PlanRow("east", "ensure", f"count.{i}", 1) for i in range(3)], profile_for(broker))
    assert summarize(results) == {"created": 3}
    assert set(counted) == {2}
    log = [r for r in broker.request_log() if r.api_name != "ApiVersions"]
    read = next(i for i, r in enumerate(log) if r.api_name == "Metadata" and r.errors)  # the group's names
    sent = next(i for i, r in enumerate(log) if r.api_name == "CreateTopics")
    # librdkafka's DescribeCluster is a Metadata request naming no topic: none more between the read and the send
    assert [r for r in log[read:sent] if r.api_name == "Metadata" and not r.errors and not r.all_topics] == []


def test_grow_and_the_changes_kafka_cannot_make(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50, num_brokers=2)
    for name, partitions in (("a", 2), ("b", 2), ("c", 4), ("d", 1), ("e", 3)):
        broker.create_topic(name, partitions)
    rows = [
        PlanRow("east", "ensure", "a", 5),  # grows 2 -> 5
        PlanRow("east", "grow", "b", 3),  # grows 2 -> 3
        PlanRow("east", "ensure", "c", 2),  # shrink: Kafka cannot
        PlanRow("east", "ensure", "d", 1, 2),  # replication factor change: not this way
        PlanRow("east", "create", "e", 6),  # create of an existing, different topic
        PlanRow("east", "grow", "missing", 3),
        PlanRow("east", "grow", "b", 3),  # the same topic twice in one plan
    ]
    results = execute(rows, profile_for(broker))
    assert [r.status for r in results] == ["grown", "grown", "failed", "failed", "failed", "failed", "failed"]
    assert results[0].mutations == 3
    assert results[1].mutations == 1
    assert "cannot remove partitions" in (results[2].error_message or "")
    assert "replication factor 1, the plan says 2" in (results[3].error_message or "")
    assert "use action ensure" in (results[4].error_message or "")
    assert "does not exist" in (results[5].error_message or "")
    assert "already planned by row 2" in (results[6].error_message or "")
    assert broker.topics() == {"a": 5, "b": 3, "c": 4, "d": 1, "e": 3}


def test_delete_needs_allow_delete(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    broker.create_topic("old.events", 4)
    rows = [PlanRow("east", "delete", "old.events"), PlanRow("east", "delete", "never.existed")]
    refused = execute(rows, profile_for(broker))
    assert [r.status for r in refused] == ["failed", "unchanged"]
    assert refused[0].error_message == "refused: pass allow_delete=True to delete topics"
    assert "old.events" in broker.topics()

    deleted = execute(rows, profile_for(broker), allow_delete=True)
    assert [r.status for r in deleted] == ["deleted", "unchanged"]
    assert deleted[0].mutations == 4
    assert deleted[1].detail == "already gone"  # as docs/pipeline.md says (helper 107: it said "already as planned")
    assert "old.events" not in broker.topics()


def test_invalid_rows_fail_without_an_exception(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    rows = [
        PlanRow("east", "ensure", "bad name!", 1),
        PlanRow("east", "ensure", "good", 0),
        PlanRow("east", "explode", "x", 1),
        PlanRow("east", "ensure", "a.b", 1),
        PlanRow("east", "ensure", "a_b", 1),  # collides with a.b in Kafka's metric names
        PlanRow("east", "ensure", "fine", 1),
    ]
    results = execute(rows, profile_for(broker))
    assert [r.status for r in results] == ["failed", "failed", "failed", "created", "failed", "created"]
    assert "row 1: field 'topic': Topic name is invalid: 'bad name!' contains" in (results[0].error_message or "")
    assert "row 2: field 'partitions'" in (results[1].error_message or "")
    assert "row 3: field 'action'" in (results[2].error_message or "")
    assert "collides with 'a.b'" in (results[4].error_message or "")
    assert set(broker.topics()) == {"a.b", "fine"}


def test_dry_run_plans_and_predicts_without_changing_anything(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10)
    broker.create_topic("kept", 2)
    rows = [PlanRow("east", "ensure", f"t{i}", 10) for i in range(20)] + [PlanRow("east", "ensure", "kept", 2)]
    results = execute(rows, profile_for(broker, rate=10.0), dry_run=True)
    assert summarize(results) == {"unchanged": 1, "planned": 20}
    assert broker.topics() == {"kept": 2}
    # 200 mutations at 10/s with Kafka's burst of 110: the last is admitted after (200 - 110) / 10 = 9 s.
    assert results[19].predicted_s == pytest.approx(9.0)
    assert results[0].predicted_s == 0.0
    assert results[0].mutations == 10
    assert predicted_seconds(200, 10.0) == pytest.approx(9.0)
    assert all(r.quota_debt_ms is None for r in results)  # the principal owes nothing
    # The one create asks, validate-only, what the principal owes: one partition, charged as Kafka 4.4 charges it.
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert [(r.validate_only, r.mutations, r.throttle_time_ms) for r in creates] == [(True, 1, 0)]


def test_a_blackholed_create_ends_created(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    broker.blackhole_next("CreateTopics")  # the first row's: it goes alone, to learn what the principal owes
    rows = [PlanRow("east", "ensure", f"lost.{i}", 2) for i in range(5)]
    results = execute(rows, profile_for(broker))
    assert summarize(results) == {"created": 5}
    assert "verified by reading the cluster" in (results[0].detail or "")
    assert broker.topics() == {f"lost.{i}": 2 for i in range(5)}
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert creates[0].responded_at is None  # the response really was lost
    assert list(creates[0].errors) == ["lost.0"]
    assert not [r for r in broker.request_log() if r.all_topics]  # verified by reading the rows' names only
    assert summarize(execute(rows, profile_for(broker))) == {"unchanged": 5}


def test_sasl_profile_works_and_no_credential_leaks(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    password = "pw-7f3a9c-do-not-log"
    broker = quota_broker(users={"alice": password})
    broker.set_quota(user="alice", controller_mutation_rate=20)
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": "alice"}
    good = profile_for(broker, "tenant", 20.0, **sasl, **{"sasl.password": password})
    bad = profile_for(broker, "intruder", 20.0, **{**sasl, "sasl.username": "mallory"}, **{"sasl.password": password})
    rows = [PlanRow("tenant", "ensure", f"t.{i}", 2) for i in range(10)] + [PlanRow("intruder", "ensure", "x", 1)]
    caplog.set_level(logging.DEBUG)
    results = apply_plan(rows, {"tenant": good, "intruder": bad})
    assert summarize(results[:10]) == {"created": 10}
    assert results[10].status == "failed"
    assert results[10].error_message
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    assert {r.principal for r in creates} == {"alice"}
    assert sum(r.mutations for r in creates) == 20  # charged to alice's quota
    for text in [caplog.text, repr(good), *(repr(r.as_dict()) for r in results)]:
        assert password not in text


def test_apply_plan_runs_groups_concurrently_in_plan_order(quota_broker: BrokerFactory) -> None:
    one = quota_broker(controller_mutation_rate=20)
    two = quota_broker(controller_mutation_rate=20)
    profiles = {"one": profile_for(one, "one", 20.0), "two": profile_for(two, "two", 20.0)}
    # 330 mutations per group at 20/s, burst 220: each group needs >= 5.5 s; one after another >= 11 s.
    rows = [PlanRow(name, "ensure", f"{name}.{i:02d}", 10) for i in range(33) for name in ("one", "two")]
    started = time.monotonic()
    results = apply_plan(rows, profiles)
    assert [(r.cluster, r.topic) for r in results] == [(r.cluster, r.topic) for r in rows]
    assert summarize(results) == {"created": 66}
    # Concurrency from the brokers' logs: each group's creates began before the other's finished.
    spans = []
    for broker in (one, two):
        times = [r.received_at for r in broker.request_log() if r.api_name == "CreateTopics"]
        spans.append((min(times), max(times)))
    assert spans[0][0] < spans[1][1]
    assert spans[1][0] < spans[0][1]
    assert time.monotonic() - started > 5.0  # the quota was honoured, not bypassed


def test_apply_plan_tells_each_rows_result_by_its_plan_index_as_it_is_known(quota_broker: BrokerFactory) -> None:
    # Two groups whose rows alternate in the plan: each result is told once, under the row's place in the whole
    # plan (not in its group), and is the one apply_plan returns for it.
    one, two = quota_broker(controller_mutation_rate=50), quota_broker(controller_mutation_rate=50)
    rows = [PlanRow("east" if i % 2 else "west", "ensure", f"told.{i:02d}", 1) for i in range(12)]
    rows.append(PlanRow("east", "ensure", "bad name!", 1))  # failed by the plan's rules, before anything is sent
    told: list[tuple[int, RowResult, str]] = []
    profiles = {"east": profile_for(one, "east"), "west": profile_for(two, "west")}
    results = apply_plan(rows, profiles, on_result=lambda i, r: told.append((i, r, threading.current_thread().name)))
    assert sorted(i for i, _, _ in told) == list(range(13))
    assert all(results[i] is result for i, result, _ in told)
    assert all(name.startswith("provision") for _, _, name in told)  # the groups' threads, before the call returned
    assert [r.status for r in results] == ["created"] * 12 + ["failed"]


def _sent(broker: QuotaBroker, api: str = "CreateTopics") -> set[str]:
    """Every topic (or resource) the broker was asked to change by ``api``."""
    return {name for record in broker.request_log() if record.api_name == api for name in record.errors}


def test_a_stop_withdraws_what_the_pacer_holds_and_returns_the_rows_never_sent(quota_broker: BrokerFactory) -> None:
    """``PlanStop.stop()`` (Ctrl-C in ``apply``): every row the paced client still held is withdrawn, at once, and
    named; those end ``not_sent`` (STOPPED), none of them ever reaches the broker; the rows sent end as answered."""
    broker = quota_broker(controller_mutation_rate=50)
    rows = [PlanRow("east", "ensure", f"held.{i:02d}", 1) for i in range(30)]
    stop, created = PlanStop(), threading.Semaphore(0)
    results: list[RowResult] = []

    def told(_: int, result: RowResult) -> None:
        if result.status == "created":
            created.release()

    run = threading.Thread(
        target=lambda: results.extend(
            apply_plan(rows, {"east": profile_for(broker, rate=1.0)}, on_result=told, stop=stop)
        )
    )
    run.start()
    for _ in range(3):
        assert created.acquire(timeout=60)
    never = stop.stop()
    run.join(timeout=60)
    assert not run.is_alive()
    unsent = [i for i, r in enumerate(results) if r.status == "not_sent"]
    # A burst of 11 (the rate's quota window), then a row a second: most are still held.
    assert never == unsent
    assert len(unsent) >= 10, [r.status for r in results]
    assert {results[i].error_name for i in unsent} == {STOPPED}
    assert {r.status for r in results} == {"created", "not_sent"}
    assert not _sent(broker) & {rows[i].topic for i in unsent}
    assert set(broker.topics()) == {r.topic for r in results if r.status == "created"}
    assert stop.stop() == never  # again: the same rows


def test_a_stop_before_a_group_starts_sends_nothing_of_it(quota_broker: BrokerFactory) -> None:
    # One entity at a time: the second group waits for the first, stopped meanwhile. It never contacts its cluster.
    one, two = quota_broker(controller_mutation_rate=50), quota_broker(controller_mutation_rate=50)
    rows = [PlanRow("east", "ensure", f"e.{i}", 1) for i in range(30)] + [PlanRow("west", "ensure", "w.0", 1)]
    profiles = {"east": profile_for(one, "east", rate=1.0), "west": profile_for(two, "west")}
    stop, first = PlanStop(), threading.Event()
    results: list[RowResult] = []
    run = threading.Thread(
        target=lambda: results.extend(
            apply_plan(rows, profiles, max_concurrent_entities=1, stop=stop, on_result=lambda i, r: first.set())
        )
    )
    run.start()
    assert first.wait(timeout=60)
    never = stop.stop()
    run.join(timeout=60)
    assert not run.is_alive()
    assert 30 in never
    assert (results[30].status, results[30].error_name) == ("not_sent", STOPPED)
    assert two.request_log() == []
    stopped = PlanStop()
    stopped.stop()
    assert [r.status for r in execute(rows[:2], profile_for(one, "east"), stop=stopped)] == ["not_sent"] * 2


def test_a_stop_while_a_grow_is_in_flight_leaves_its_config_change_unsent(quota_broker: BrokerFactory) -> None:
    """A grow that sets configs sends them once it is admitted: stopped meanwhile, the grow's answer still comes
    (grown), its config change is never sent, and the row says so (failed, STOPPED), not grown."""
    broker = quota_broker(controller_mutation_rate=50)
    broker.create_topic("grown", 2)
    held = broker.hold_controller_next(1.0)
    stop = PlanStop()
    results: list[RowResult] = []
    row = PlanRow("east", "ensure", "grown", 4, configs={"retention.ms": "2000"})
    run = threading.Thread(target=lambda: results.extend(apply_plan([row], {"east": profile_for(broker)}, stop=stop)))
    run.start()
    assert held.wait(timeout=60)
    assert stop.stop() == []  # in flight: sent
    run.join(timeout=60)
    assert not run.is_alive()
    [result] = results
    assert (result.status, result.error_name) == ("failed", STOPPED), result
    assert "stopped before all of its change was sent" in (result.error_message or "")
    assert broker.topics()["grown"] == 4
    assert _sent(broker, "IncrementalAlterConfigs") == set()


def test_a_stop_leaves_rows_the_quota_refused_unsent_again_and_says_so(quota_broker: BrokerFactory) -> None:
    """Rows the broker refused for the quota (error 89) wait in the client for its throttle; withdrawn by a stop they
    are not sent again and end ``not_sent`` (STOPPED, Kafka's 89 kept): a CLI run counted them as done, "failed: 5",
    as if the plan's own failure (test_ctrl_c_ends_apply_at_once_and_a_rerun_finishes_the_plan, 2 runs in 10)."""
    broker = quota_broker(controller_mutation_rate=1, quota_window_num=1, enforcement="strict")
    rows = [PlanRow("east", "ensure", f"q.{i}", 10) for i in range(3)]  # (a throttle of about 9 s after the first)
    stop, results = PlanStop(), []
    profile = profile_for(broker, rate=100.0)  # the client's rate far above the broker's: its second request is refused
    run = threading.Thread(target=lambda: results.extend(apply_plan(rows, {"east": profile}, stop=stop)))
    run.start()
    assert wait_until(lambda: refused_a_create(broker), timeout_s=30)
    assert stop.stop() == []  # sent, refused: not "never sent"
    run.join(timeout=60)
    assert not run.is_alive()
    assert results[0].status == "created"
    for result in results[1:]:
        assert (result.status, result.error_name, result.error_code, result.attempts) == ("not_sent", STOPPED, 89, 1)
        assert "; not sent again: the plan was stopped first (nothing of it applied)" in (result.error_message or "")
    assert set(broker.topics()) == {"q.0"}


def test_progress_tells_a_refusal_by_the_quota_while_the_rows_wait_it_out(quota_broker: BrokerFactory) -> None:
    """A report came only when the broker admitted mutations: while refused rows waited out the broker's throttle
    (about 30 s here), ``apply``'s bar said "no throttle" and no refusal (a tmux run). Now a refusal, or a new
    throttle, is reported as the client learns it."""
    broker = quota_broker(controller_mutation_rate=1, quota_window_num=1, enforcement="strict")
    broker.delay_next("CreateTopics", 0.5, count=2)  # the refusal comes after the first row is done and reported
    rows = [PlanRow("east", "ensure", f"q.{i}", 30) for i in range(3)]  # the first admitted: a debt of 29 s
    stop, results, reports = PlanStop(), list[RowResult](), list[Progress]()
    profile = profile_for(broker, rate=100.0)  # the client's rate far above the broker's: its second request is refused
    run = threading.Thread(
        target=lambda: results.extend(apply_plan(rows, {"east": profile}, progress=reports.append, stop=stop))
    )
    run.start()
    try:
        told = lambda: any(r.refused_by_quota and r.throttle_time_ms > 20_000 for r in list(reports))  # noqa: E731
        assert wait_until(told, timeout_s=20), reports[-3:]  # (the resend, after the throttle, comes at about 30 s)
        assert set(broker.topics()) == {"q.0"}
    finally:
        stop.stop()
        run.join(timeout=60)
    assert not run.is_alive()


def test_a_stop_ends_the_wait_before_a_lost_answer_is_verified_and_the_row_says_its_outcome_is_unknown(
    quota_broker: BrokerFactory,
) -> None:
    """A row whose answer was lost waits, before the cluster is read, until the client knows the request can no
    longer be applied: its connection closed, until the controller deadline it was sent with (the profile's
    request timeout: 60 s here). A ``PlanStop`` meanwhile waited that out (stop 84's note); now it ends the wait,
    and the row ends ``failed``, its outcome unknown."""
    broker = quota_broker()
    lost = broker.blackhole_next("CreateTopics")
    stop, results = PlanStop(), list[RowResult]()
    rows = [PlanRow("east", "ensure", "lost", 1)]
    profile = dataclasses.replace(profile_for(broker), request_timeout_s=60.0)
    run = threading.Thread(target=lambda: results.extend(execute(rows, profile, timeout_s=600, stop=stop)))
    run.start()
    assert lost.wait(30)
    broker.drop_connections()  # the create applied, its answer lost with its connection
    # The group waits to verify it; a stop before the wait is taken up before it (the group sends nothing more),
    # so the test's stop comes within it.
    try:
        assert wait_until(lambda: running(run, "wait_final"), timeout_s=30)
        assert stop.stop() == []
        run.join(timeout=30)  # (the wait the stop does not end lasts about 60 s)
        assert not run.is_alive()
    finally:
        run.join(timeout=120)  # (the broker stops after the test: not under the group's client)
    [result] = results
    # (Kafka's answer to the attempt it knows of: librdkafka's retry on the new connection, refused as applied)
    assert (result.status, result.error_name) == ("failed", STOPPED), result
    assert (result.error_message or "").endswith("(the plan was stopped before its outcome was known)"), result
    assert broker.topics() == {"lost": 1}  # (applied, as the row's "outcome unknown" allows)


def test_apply_plan_rejects_an_unknown_cluster_before_sending(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    rows = [PlanRow("east", "ensure", "a", 1), PlanRow("nowhere", "ensure", "b", 1)]
    with pytest.raises(PlanError, match=r"row 2: field 'cluster': no profile named 'nowhere' \(profiles: east\)"):
        apply_plan(rows, {"east": profile_for(broker)})
    assert broker.topics() == {}
    # A new user's run (helper 107): a plan's "west" against profiles east and west-payments was "did you mean 'east'?"
    profiles = {name: profile_for(broker, name) for name in ("east", "west-payments")}
    with pytest.raises(PlanError, match=r"no profile named 'west' .*; did you mean 'west-payments'\?$"):
        apply_plan([PlanRow("west", "ensure", "b", 1)], profiles)


def test_ensure_reconfigures_differing_configs(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=50)
    profile = profile_for(broker)
    created = execute([PlanRow("east", "ensure", "cfg", 2, configs={"retention.ms": "1000"})], profile)
    assert created[0].status == "created"
    rows = [
        PlanRow("east", "ensure", "cfg", 2, configs={"retention.ms": "2000", "cleanup.policy": "compact"}),
        PlanRow("east", "ensure", "cfg2", 1, configs={"no.such.config": "1"}),
    ]
    results = execute(rows, profile)
    assert results[0].status == "reconfigured", results[0]
    assert "retention.ms=2000" in (results[0].detail or "")
    assert results[1].status == "failed"
    assert summarize(execute(rows[:1], profile)) == {"unchanged": 1}


def test_a_learned_quota_under_strict_enforcement(quota_broker: BrokerFactory) -> None:
    # No mutation_rate in the profile: the client learns it from the broker's error-89 throttles.
    broker = quota_broker(controller_mutation_rate=20, enforcement="strict")
    rows = [PlanRow("east", "ensure", f"learn.{i:02d}", 5) for i in range(60)]
    updates: list[Progress] = []
    results = execute(rows, profile_for(broker, rate=None), progress=updates.append)
    assert summarize(results) == {"created": 60}
    rejected = [r for r in broker.request_log() if r.api_name == "CreateTopics" and 89 in r.errors.values()]
    assert rejected  # the broker did push back, and the client retried only those topics
    assert any(r.throttle_time_ms > 0 for r in results)  # rows that waited out a throttle say so
    learned = [u.quota_rate for u in updates if u.quota_rate is not None]
    assert learned
    assert learned[-1] > 0


def test_the_last_report_keeps_the_brokers_rate_and_throttles_not_the_profiles(quota_broker: BrokerFactory) -> None:
    """The group's last report, after its client closed, said the profile's rate (100/s) and no throttle: ``apply``'s
    final frame and table read "quota 100/s" where its bar had said 20/s, the broker's word (a tmux run)."""
    broker = quota_broker(controller_mutation_rate=20, quota_window_num=1, enforcement="strict")
    rows = [PlanRow("east", "ensure", f"r.{i}", 5) for i in range(10)]
    updates: list[Progress] = []
    results = execute(rows, profile_for(broker, rate=100.0), progress=updates.append)
    assert summarize(results) == {"created": 10}
    during, last = updates[-2], updates[-1]
    assert last.quota_rate == during.quota_rate == pytest.approx(20, rel=0.1)
    assert last.refused_by_quota == during.refused_by_quota > 0
    assert last.throttled_responses == during.throttled_responses
    throttles = [
        r.throttle_time_ms for r in broker.request_log() if r.api_name == "CreateTopics" and r.throttle_time_ms
    ]
    assert last.last_throttle_ms == throttles[-1]  # the newest throttle (the countdown's), beside the window's largest


def test_a_rerun_after_a_crash_converges(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    # The first run is a real process, killed (SIGKILL) half-way through a quota-bound plan.
    broker = quota_broker(controller_mutation_rate=10)
    rows = [{"cluster": "east", "action": "ensure", "topic": f"crash.{i:02d}", "partitions": 5} for i in range(40)]
    (tmp_path / "plan.json").write_text(json.dumps(rows))
    (tmp_path / "profiles.json").write_text(
        json.dumps({"east": {"bootstrap.servers": broker.bootstrap_servers, "mutation_rate": 10}})
    )
    script = (
        "import sys; from throttled_admin.provisioning import apply_plan, read_plan, read_profiles; "
        "apply_plan(read_plan(sys.argv[1]), read_profiles(sys.argv[2]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "plan.json"), str(tmp_path / "profiles.json")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # 200 mutations at 10/s, burst 110: the last creates need 9 s, so this kill lands mid-plan.
        assert wait_until(lambda: len(broker.topics()) >= 24, timeout_s=60)
    finally:
        proc.kill()
        proc.wait()
    before = set(broker.topics())
    assert 0 < len(before) < 40

    results = execute(read_plan(tmp_path / "plan.json"), profile_for(broker, rate=10.0))
    assert {r.status for r in results} <= {"created", "unchanged"}
    assert {r.topic for r in results if r.status == "unchanged"} >= before
    assert broker.topics() == {f"crash.{i:02d}": 5 for i in range(40)}
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    created_ok = [t for r in creates for t, code in r.errors.items() if code == 0]
    assert sorted(created_ok) == sorted(f"crash.{i:02d}" for i in range(40))  # each created exactly once


AUTH = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error")
ALREADY = KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "Topic 't' already exists.")


@pytest.mark.parametrize(
    ("exc", "attempts", "verify"),
    [
        (
            unknown_outcome_error("create_topics", "no response by the deadline", why=OutcomeUnknownReason.NO_RESPONSE),
            1,
            True,
        ),
        (in_flight_error(AUTH, "create_topics"), 1, True),
        (closed_error("create_topics", sent=True), 1, True),
        (after_unknown_attempt(ALREADY, "create_topics"), 1, True),  # our earlier attempt may have created it
        (KafkaException(ALREADY), 2, True),  # we sent it before
        (KafkaException(ALREADY), 1, False),  # someone else's topic: "existed"
        # _TIMED_OUT: read, re-sent if missing
        (not_sent_error("create_topics", 1000, "deadline", why=NotSentReason.DEADLINE), 1, True),
        (cannot_connect_error("create_topics", "h:1", "refused"), 1, True),  # _TRANSPORT: likewise
        (closed_error("create_topics", sent=False), 1, False),
        (refused_error("create_topics", TypeError("x")), 1, False),
        (after_unknown_attempt(AUTH, "create_topics"), 1, True),  # the earlier attempt may have applied it
        (KafkaException(AUTH), 1, False),
        (KafkaException(KafkaError(KafkaError.POLICY_VIOLATION, "no")), 1, False),
        (ValueError("x"), 1, False),
    ],
)
def test_which_create_errors_are_verified_by_reading_the_cluster(
    exc: BaseException, attempts: int, verify: bool
) -> None:
    # By the error's type and code, never its message: the same errors with other text decide the same.
    run = _Run(0, Change(PlanRow("east", "create", "t", 1), "create", 1), attempts=attempts)
    assert _outcome_unknown(exc, run) is verify
    if isinstance(exc, KafkaException):
        reworded = type(exc)(KafkaError(exc.args[0].code(), "reworded"))
        assert _outcome_unknown(reworded, run) is verify


def test_the_first_rows_answer_wakes_the_group_which_does_not_poll_the_metrics_meanwhile(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rest of a group's rows wait for the first row's answer (issue 38). They are woken by the answer itself
    (its admission, as the client's metrics count it), not by reading the metrics every ``PROGRESS_POLL_S`` until
    they have moved: with the first answer held 1.5 s, that was 13 reads more for nothing (issue 40)."""
    broker = quota_broker(controller_mutation_rate=50)
    broker.delay_next("CreateTopics", 1.5)
    calls = count_metrics_reads(monkeypatch)
    rows = [PlanRow("east", "ensure", f"woken.{i}", 1) for i in range(3)]
    results = execute(rows, profile_for(broker))
    assert summarize(results) == {"created": 3}
    assert [r.api_name for r in broker.request_log() if r.api_name == "CreateTopics"] == ["CreateTopics"] * 2
    assert calls[0] < 12, calls  # 21 when it polled; 8 woken


def test_the_creates_ids_are_read_ahead_so_the_rows_after_the_first_need_no_read_of_their_own(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``wait_for_metadata`` create waits for every broker's ids of its name before its send. The group has the
    other creates' ids read while its first row is answered: the rows sent after that answer go at once, where they
    waited for a read of their own (0.4 s an entity in issue 40's fleet). Real sockets; the client's calls, reads and
    sends are recorded as they are made."""
    from throttled_admin import _client

    broker = quota_broker(controller_mutation_rate=50)
    events: list[tuple[str, frozenset[str]]] = []
    views, send, create = _client._Transport.broker_views, _client._Transport.send, ThrottledAdminClient.create_topics

    def read(self: Any, names: list[str], timeout_s: float) -> Any:
        events.append(("read", frozenset(names)))
        return views(self, names, timeout_s)

    def sent(self: Any, order: Any, on_answer: Any, sending: Any) -> bool:
        events.append(("send", frozenset(item.topic for item in order.items)))
        return send(self, order, on_answer, sending)

    def called(self: ThrottledAdminClient, topics: list[Any], **kwargs: Any) -> Any:
        events.append(("call", frozenset(topic.topic for topic in topics)))
        return create(self, topics, **kwargs)

    monkeypatch.setattr(_client._Transport, "broker_views", read)
    monkeypatch.setattr(_client._Transport, "send", sent)
    monkeypatch.setattr(ThrottledAdminClient, "create_topics", called)
    rows = [PlanRow("east", "ensure", f"ahead.{i}", 1) for i in range(4)]
    assert summarize(execute(rows, profile_for(broker))) == {"created": 4}
    calls = [names for kind, names in events if kind == "call"]
    assert [len(names) for names in calls] == [1, 3]  # the first row alone (issue 38), then the rest
    rest = calls[1]
    called_at = events.index(("call", rest))
    sent_at = next(i for i, (kind, names) in enumerate(events) if kind == "send" and names & rest)
    assert any(kind == "read" and rest <= names for kind, names in events[:called_at])  # read ahead
    assert all(kind != "read" or not names & rest for kind, names in events[called_at:sent_at])


def test_a_raising_callback_is_logged_and_every_row_still_gets_its_result(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Review 112: an exception raised by ``on_result`` (or ``progress``) ended the group's run: its rows failed as
    "unexpected error", and telling them so raised again, out of ``apply_plan``: every result was lost."""
    broker = quota_broker(controller_mutation_rate=50)
    rows = [PlanRow("east", "ensure", f"raising.{i}", 1) for i in range(3)]

    def raising(*_: Any) -> None:
        raise RuntimeError("the application's bug")

    with caplog.at_level(logging.ERROR, logger="throttled_admin.provisioning"):
        results = apply_plan(rows, {"east": profile_for(broker)}, on_result=raising, progress=raising)
    assert [r.status for r in results] == ["created"] * 3
    assert "a progress or on_result callback raised; the plan goes on" in caplog.text
    # execute(), the group's own run (public too), alike: the callbacks are called there
    grown = [PlanRow("east", "ensure", f"raising.{i}", 2) for i in range(3)]
    assert [r.status for r in execute(grown, profile_for(broker), on_result=raising, progress=raising)] == ["grown"] * 3
