"""Issue 37's scenarios 1 (a rolling restart under a paced job, and the plan's rerun), 2 (kill -9 of the active
controller mid-job), 3 (kill -9 of the node the client is sending to, mid-request) and 6 (SCRAM principals with user
quotas, two processes sharing one) on the run's three-node Kafka 4.4 quorum (``kafka_quorum``).

Every outcome is checked against the cluster's final state as an independent client reads it (the fixture's
``topics``: Metadata over the wire from every live node, after a barrier topic), read only once two reads a few
seconds apart agree: a restarted broker's Metadata trails its controller by seconds. Replication factor 2, so that a
node away does not refuse creates (with 3 it does: the plan's wait for a node, another test's). Each test has its
own topic prefix and client-id quota entity (``kafka_ns``)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import pytest
from confluent_kafka import KafkaError

from tests.real_kafka.broker import USERS, KafkaCluster, Node
from tests.real_kafka.namespace import KafkaNamespace
from tests.reliability_helpers import Outcomes, assert_truthful, error_code, error_text, hedged, outcomes
from tests.support import wait_until
from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient
from throttled_admin.provisioning import PlanRow, apply_plan, summarize

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

RF = 2


def settled(cluster: KafkaCluster, prefix: str, apart_s: float = 3.0) -> dict[str, int]:
    """The cluster's topics under ``prefix`` once two reads ``apart_s`` apart agree (issue 37: a restarted broker's
    Metadata trails its controller by seconds; what is compared here is time passing, not an event to wait for)."""
    previous = cluster.topics(prefix)
    for _ in range(10):
        time.sleep(apart_s)
        current = cluster.topics(prefix)
        if current == previous:
            return current
        previous = current
    raise AssertionError(f"the cluster's topics under {prefix} did not settle in 10 reads")


def _client(cluster: KafkaCluster, ns: KafkaNamespace, rate: float, **kwargs: Any) -> ThrottledAdminClient:
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "client.id": ns.client_id, "log_level": 0}
    return ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=rate), **kwargs)


class DoneCount:
    """How many of the futures are done, and an event set once ``at`` of them are (set from done-callbacks, which
    run on librdkafka's or the client's threads: they only count)."""

    def __init__(self, futures: Mapping[str, Future[None]], at: int) -> None:
        self._lock = threading.Lock()
        self.done = 0
        self.reached = threading.Event()
        self._at = at
        for future in futures.values():
            future.add_done_callback(self._one)

    def _one(self, _: Future[None]) -> None:
        with self._lock:
            self.done += 1
            if self.done >= self._at:
                self.reached.set()


# Found by scenario 1 (a run at 06:38 UTC, 2026-11-29): 4 of 300 topics, sent once each (retry-total 0,
# mutations-sent-total 300), were answered TOPIC_ALREADY_EXISTS when the first node of the roll (SIGTERM) stopped, and
# the client reported them failed, unhedged, though the cluster holds them and nothing else created them. Kafka 4.4's
# forwarding re-sends a forwarded request to the new controller when the old one goes away before answering
# (``NodeToControllerRequestThread``: a disconnect or NOT_CONTROLLER puts the request back first in the queue), and
# the old controller's records were committed: the re-send finds the topic. The client settles a first attempt's
# "already exists" as final (``_engine/outcome.py``, ``_answered``: only after an attempt of its own whose outcome
# was unknown does it say PossiblyAppliedError). It shows only when a forwarded create is in flight at the
# controller's resignation, so the tests below cannot expect it (no strict xfail): they mark the run xfail when it
# shows, and fail on any other untruth.
FORWARDING_DUPLICATE = (
    "issue 37, found on the quorum: a create forwarded to a controller that went away was re-sent by its broker to "
    "the next controller and answered TOPIC_ALREADY_EXISTS; the client reported {n} topic(s) its own request created "
    "as failed ({names}). Fix: _engine/outcome.py _answered (see the comment above)"
)


def _forwarding_duplicates(results: Outcomes, held: Mapping[str, int]) -> dict[str, BaseException | None]:
    """The topics reported TOPIC_ALREADY_EXISTS that the cluster holds: created by this job's own request, re-sent."""
    return {n: e for n, e in results.items() if error_code(e) == KafkaError.TOPIC_ALREADY_EXISTS and n in held}


def _xfail_if_duplicated(duplicates: Mapping[str, BaseException | None]) -> None:
    if duplicates:
        pytest.xfail(FORWARDING_DUPLICATE.format(n=len(duplicates), names=", ".join(sorted(duplicates)[:5])))


# Found by scenario 3 (runs at 06:55, 07:03 and 07:04 UTC, 2026-11-29; it passed at 06:38 and 07:20): after the kill -9
# of the node librdkafka sends mutations to, nothing more was answered within the call's 30 s (now 20 s). The 41 topics
# queued behind the request in flight were handed to librdkafka (request-total 3, mutations-sent-total 151) while its
# controller was still the killed node (librdkafka switches only on a Metadata answer naming another; a broker keeps
# naming the killed one until its session times out and it is fenced), and they ended "outcome unknown: no response by
# the deadline" (once "not sent: its deadline passed before it could be sent"), though the cluster never got them (the
# read after wait_until_final(), settled: two reads 3 s apart agree). The client's own deadline came before any answer
# from librdkafka (for a request never written, its "Failed while waiting for controller" would be a NOT_SENT answer,
# _engine/classify.py; not checked: how the driver sets librdkafka's request_timeout against the deadline), and nothing
# made librdkafka look for another controller (a Metadata refresh when the controller's connection fails).
STRANDED = (
    "issue 37, found on the quorum: {n} topic(s) queued behind the request in flight, handed to librdkafka while its "
    "controller was the killed node, were never applied and ended {errors}"
)


def _applied_or_hedged(results: Outcomes) -> None:
    """Every topic applied, or its error says the broker may have applied it: no final failure."""
    final = {name: error_text(exc) for name, exc in results.items() if exc is not None and not hedged(exc)}
    assert not final, f"{len(final)} topic(s) failed: {list(final.items())[:5]}"


# Scenario 1: 300 one-partition topics paced at 9/s (burst 99: about 22 s of job), with every node stopped (SIGTERM, as
# a rolling upgrade does it) and started again in turn while it runs. Then the same topics as a plan: all unchanged.
def test_a_rolling_restart_during_a_paced_job_loses_nothing_and_a_rerun_of_the_plan_is_unchanged(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    rate = 9.0
    kafka_quorum.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=rate)
    names = [kafka_ns.topic(f"r{i:03d}") for i in range(300)]
    pending_at_stop: dict[int, int] = {}
    with _client(kafka_quorum, kafka_ns, rate) as admin:
        admin.list_topics(timeout=30)
        futures = admin.create_topics([NewTopic(n, 1, RF) for n in names], timeout_ms=180_000)
        count = DoneCount(futures, at=1)
        assert count.reached.wait(60), "no topic created within 60 s"

        def note(node: Node) -> None:
            pending_at_stop[node.node_id] = len(names) - count.done

        kafka_quorum.roll(between=note)
        results = outcomes(futures, 180)
        assert admin.wait_until_final(120)
        metrics = admin.metrics()
    # The job spanned the roll: topics were still pending when the first node stopped.
    assert pending_at_stop[kafka_quorum.nodes[0].node_id] > 0, pending_at_stop
    held = settled(kafka_quorum, kafka_ns.prefix)
    duplicates = _forwarding_duplicates(results, held)
    results = {n: e for n, e in results.items() if n not in duplicates}
    assert_truthful("create", results, held, wanted=dict.fromkeys(names, 1))
    _applied_or_hedged(results)
    assert held == dict.fromkeys(names, 1)  # nothing lost, nothing else
    assert metrics["quota-violation-total"] == 0

    profiles = {
        "main": {
            "bootstrap.servers": kafka_quorum.bootstrap_servers,
            "client.id": kafka_ns.client_id,
            "mutation_rate": rate,
        }
    }
    rerun = apply_plan([PlanRow("main", "ensure", n, 1, RF) for n in names], profiles)
    assert summarize(rerun) == {"unchanged": len(names)}, [(r.topic, r.status, r.error_message) for r in rerun][:5]
    _xfail_if_duplicated(duplicates)


# Scenario 2: 200 topics paced at 8/s (burst 88: about 14 s of job); once 110 are done, the active controller (raft
# leader of __cluster_metadata) is killed -9 and stays down until the job ends. Its successor starts a fresh bucket.
def test_kill_9_of_the_active_controller_mid_job_every_outcome_true(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    rate = 8.0
    kafka_quorum.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=rate)
    names = [kafka_ns.topic(f"c{i:03d}") for i in range(200)]
    with _client(kafka_quorum, kafka_ns, rate) as admin:
        admin.list_topics(timeout=30)
        futures = admin.create_topics([NewTopic(n, 1, RF) for n in names], timeout_ms=120_000)
        count = DoneCount(futures, at=110)
        assert count.reached.wait(90), f"only {count.done} topics done within 90 s"
        active = kafka_quorum.node(kafka_quorum.active_controller())
        kafka_quorum.stop_node(active, kill=True)
        pending_at_kill = len(names) - count.done
        successor = kafka_quorum.active_controller()
        results = outcomes(futures, 150)
        assert admin.wait_until_final(120)
    kafka_quorum.start_node(active)
    assert successor != active.node_id
    assert pending_at_kill > 0
    held = settled(kafka_quorum, kafka_ns.prefix)
    duplicates = _forwarding_duplicates(results, held)
    results = {n: e for n, e in results.items() if n not in duplicates}
    assert_truthful("create", results, held, wanted=dict.fromkeys(names, 1))
    # The queue behind the request in flight at the kill, stranded (STRANDED, found by scenario 3: when the killed
    # node was the one librdkafka sends to): truthful (checked above), never applied, and a known open bug.
    stranded = {n: error_text(e) for n, e in results.items() if e is not None and not hedged(e) and n not in held}
    if stranded:
        pytest.xfail(STRANDED.format(n=len(stranded), errors=sorted(set(stranded.values()))[:3]))
    _applied_or_hedged(results)
    assert set(held) <= set(names)
    assert {n for n, exc in results.items() if exc is None} <= set(held)
    _xfail_if_duplicated(duplicates)


def _our_unread_bytes(cluster: KafkaCluster) -> dict[int, int]:
    """Node id -> bytes this process wrote to the node that the node has not read (its socket's receive queue):
    a paused node's unread requests. From /proc/net/tcp and tcp6: this process's sockets (by inode) towards a
    node's port, and the node's side of each of those connections."""
    import os

    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    rows: list[tuple[int, int, int, str]] = []  # local port, remote port, receive queue, inode
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):  # the JVM's sockets are IPv6 (dual-stack)
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                port = [int(address.split(":")[1], 16) for address in fields[1:3]]
                rows.append((port[0], port[1], int(fields[4].split(":")[1], 16), fields[9]))
    ports = {n.plaintext_port: n.node_id for n in cluster.nodes}
    ours = {(local, remote) for local, remote, _, inode in rows if inode in inodes and remote in ports}
    unread: dict[int, int] = {}
    for local, remote, rx, _ in rows:
        if local in ports and (remote, local) in ours and rx > 0:
            unread[ports[local]] = unread.get(ports[local], 0) + rx
    return unread


# Scenario 3: kill -9 of the node the client is sending to, with a request certainly in flight. Every node is paused
# (SIGSTOP) for the moment the request is written: the node that then holds it unread is the one librdkafka sends to
# (the broker its Metadata names as controller). That node is killed -9 and the other two resumed. Only the topics of
# the request in flight may end "outcome unknown"; the ones queued behind it go to another broker.
def test_kill_9_of_the_node_the_client_sends_to_mid_request_outcome_unknown_only_for_what_was_in_flight(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    rate = 10.0  # burst 110: about 110 topics in the request in flight, 40 queued behind it
    kafka_quorum.set_quota(client_id=kafka_ns.client_id, controller_mutation_rate=rate)
    names = [kafka_ns.topic(f"k{i:03d}") for i in range(150)]
    warm = kafka_ns.topic("warm")
    # A connection to every node from the start (librdkafka connects lazily by default): whichever node librdkafka
    # then names controller, the request is written on a connection that is up, not held behind a handshake that a
    # paused node never answers.
    with _client(kafka_quorum, kafka_ns, rate, **{"enable.sparse.connections": False}) as admin:
        admin.list_topics(timeout=30)
        # A first answer (a round trip known): the pacer's next request takes what the bucket holds at once.
        assert outcomes(admin.create_topics([NewTopic(warm, 1, RF)])) == {warm: None}
        sent_before = admin.metrics()["mutations-sent-total"]
        for node in kafka_quorum.nodes:
            kafka_quorum.pause(node)
        try:
            futures = admin.create_topics([NewTopic(n, 1, RF) for n in names], timeout_ms=20_000)
            # The CreateTopics of 109 topics is over 3 KB; librdkafka's own Metadata requests are under 100 bytes.
            assert wait_until(lambda: max(_our_unread_bytes(kafka_quorum).values(), default=0) > 2000, 30)
            unread = _our_unread_bytes(kafka_quorum)
            target = kafka_quorum.node(max(unread, key=unread.__getitem__))
            in_flight = int(admin.metrics()["mutations-sent-total"] - sent_before)
            kafka_quorum.stop_node(target, kill=True)
        finally:
            for node in kafka_quorum.nodes:
                if node.pid:
                    kafka_quorum.resume(node)
        results = outcomes(futures, 90)
        assert admin.wait_until_final(90)
    kafka_quorum.start_node(target)
    held = settled(kafka_quorum, kafka_ns.prefix)
    assert 0 < in_flight < len(names), in_flight
    assert_truthful("create", results, held, wanted=dict.fromkeys([warm, *names], 1))
    assert {n for n, exc in results.items() if exc is None} | {warm} <= set(held)
    # The topics queued behind the request in flight were never on the killed node's connection: each must end
    # applied (through another node), never "outcome unknown" or "not sent" while the cluster has live nodes.
    stranded = {n: error_text(e) for n, e in results.items() if n not in names[:in_flight] and e is not None}
    _applied_or_hedged({n: e for n, e in results.items() if n not in stranded})
    if stranded and not set(stranded) & set(held):
        pytest.xfail(STRANDED.format(n=len(stranded), errors=sorted(set(stranded.values()))))
    assert not stranded, sorted(stranded.items())[:5]


def _provision(
    conf: dict[str, Any], names: list[str], rate: float, barrier: Any
) -> tuple[dict[str, str | None], dict[str, float]]:
    """In a process of its own: connect, wait for the others, create ``names`` (2 partitions each) paced at
    ``rate``; each topic's error text (None: created) and the client's metrics."""
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=rate)) as admin:
        admin.list_topics(timeout=30)
        barrier.wait(60)
        results = outcomes(admin.create_topics([NewTopic(n, 2, RF) for n in names], timeout_ms=90_000), 120)
        admin.wait_until_final(60)
        return {n: None if e is None else error_text(e) for n, e in results.items()}, admin.metrics()


# Scenario 6: alice's quota (user alice, this test's client id: 20/s, burst 220) shared by two processes, each pacing
# itself to all of it (as two jobs that do not know of each other would) through a node of its own; bob, on the third
# node, has a quota of his own. The quota is one bucket per principal across the nodes (the active controller's).
def test_scram_principals_user_quotas_across_the_nodes_two_processes_sharing_ones_quota(
    kafka_quorum: KafkaCluster, kafka_ns: KafkaNamespace
) -> None:
    rate = 20.0
    for user in ("alice", "bob"):
        kafka_quorum.set_quota(user=user, client_id=kafka_ns.client_id, controller_mutation_rate=rate)

    def conf(user: str, mechanism: str, node: Node) -> dict[str, Any]:
        return kafka_quorum.sasl_conf(user, mechanism) | {
            "bootstrap.servers": f"127.0.0.1:{node.sasl_port}",
            "client.id": kafka_ns.client_id,
            "log_level": 0,
        }

    n1, n2, n3 = kafka_quorum.nodes
    jobs = {  # 100 topics x 2 partitions each: one process alone stays within the burst of 220
        "alice-1": (conf("alice", "SCRAM-SHA-512", n1), [kafka_ns.topic(f"a1-{i:03d}") for i in range(100)]),
        "alice-2": (conf("alice", "SCRAM-SHA-256", n3), [kafka_ns.topic(f"a2-{i:03d}") for i in range(100)]),
        "bob": (conf("bob", "SCRAM-SHA-512", n2), [kafka_ns.topic(f"b-{i:03d}") for i in range(100)]),
    }
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(len(jobs), mp_context=context) as pool:
        barrier = manager.Barrier(len(jobs))
        running = {job: pool.submit(_provision, c, names, rate, barrier) for job, (c, names) in jobs.items()}
        done = {job: future.result(300) for job, future in running.items()}
    results: Outcomes = {
        name: None if text is None else RuntimeError(text) for texts, _ in done.values() for name, text in texts.items()
    }
    wanted = {name: 2 for _, names in jobs.values() for name in names}
    held = settled(kafka_quorum, kafka_ns.prefix)
    assert_truthful("create", results, held, wanted=wanted)
    assert results == dict.fromkeys(wanted)  # every topic created
    assert held == wanted
    metrics = {job: m for job, (_, m) in done.items()}
    # alice's two processes drew on one bucket, through two different nodes: together they overdrew it, and at
    # least one was throttled and waited it out; bob's bucket is his own: paced to it, he never was.
    assert max(metrics["alice-1"]["throttle-time-max"], metrics["alice-2"]["throttle-time-max"]) > 0, metrics
    assert metrics["bob"]["throttle-time-max"] == 0, metrics["bob"]
    assert not any(secret in repr(done) for secret in USERS.values())
