"""The broker-views reader (``_driver/broker_views.py``) over real loopback sockets: one Metadata v10+ request per
broker, for the names asked about only, with topic ids, on PLAINTEXT, SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512),
TLS (PEM files, with and without a client certificate) and SASL over TLS; connections kept from read to read; the
stated fallback (librdkafka) for other set-ups; and no password anywhere (repr, logs, exceptions).

QuotaBroker (3 nodes) is the broker; its request log says what each node was asked, by whom, in which version.
What each broker shows is checked against an independent client (kafka-python's codec, tests/wire.py)."""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._metadata import ClusterMetadata

from tests.support import BrokerFactory, wait_until
from tests.tls_helpers import Tls, make_tls
from throttled_admin import NewTopic, NotSentError, ThrottledAdminClient
from throttled_admin._driver import scheduler as scheduler_module
from throttled_admin._driver.broker_connection import ConnectionSettings, Unsupported
from throttled_admin._driver.broker_views import BrokerViewReader
from throttled_admin._driver.librdkafka_views import LibrdkafkaViews, _take
from throttled_admin._driver.quorum_wire import UNSUPPORTED_VERSION, QuorumAnswer
from throttled_admin._engine.visibility import BrokerViews, TopicView

WAIT_S = 30.0  # what a test waits for something that should happen at once (never reached when it passes)
PASSWORD = "Pw-93be1f-s3cr3t"
WRONG = "Pw-5c07d2-wr0ng"
KEY_PASSWORD = "Kp-0e7a66-k3y"


def topic_id(conf: dict[str, Any], name: str) -> uuid.UUID:
    """The topic's id, as an independent client tells it: confluent-kafka's describe_topics."""
    admin = AdminClient(conf)
    description = admin.describe_topics(TopicCollection([name]))[name].result(30)
    high, low = description.topic_id.get_most_significant_bits(), description.topic_id.get_least_significant_bits()
    return uuid.UUID(int=((high % 2**64) << 64) | (low % 2**64))


def sasl(mechanism: str, password: str = PASSWORD, protocol: str = "SASL_PLAINTEXT") -> dict[str, str]:
    return {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
    }


SETUPS: dict[str, Callable[[Tls], tuple[dict[str, Any], dict[str, Any]]]] = {
    # name -> (QuotaBroker's keywords, the client's settings)
    "plaintext": lambda tls: ({}, {}),
    "sasl-plain": lambda tls: ({"users": {"alice": PASSWORD}}, sasl("PLAIN")),
    "sasl-scram-sha-256": lambda tls: (
        {"users": {"alice": PASSWORD}, "sasl_mechanisms": ["SCRAM-SHA-256"]},
        sasl("SCRAM-SHA-256"),
    ),
    "sasl-scram-sha-512": lambda tls: (
        {"users": {"alice": PASSWORD}, "sasl_mechanisms": ["SCRAM-SHA-512"]},
        sasl("SCRAM-SHA-512"),
    ),
    "ssl": lambda tls: ({"ssl_context": tls.server_context()}, {"security.protocol": "SSL", **tls.client_conf()}),
    "ssl-client-certificate": lambda tls: (
        {"ssl_context": tls.server_context(require_client_cert=True)},
        {"security.protocol": "SSL", **tls.client_conf(client_cert=True)},
    ),
    "sasl-ssl-scram": lambda tls: (
        {"ssl_context": tls.server_context(), "users": {"alice": PASSWORD}, "sasl_mechanisms": ["SCRAM-SHA-256"]},
        {**sasl("SCRAM-SHA-256", protocol="SASL_SSL"), **tls.client_conf()},
    ),
}


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_each_broker_is_asked_about_the_names_only_with_topic_ids(
    quota_broker: BrokerFactory, tmp_path: Path, setup: str
) -> None:
    broker_kwargs, client = SETUPS[setup](make_tls(tmp_path))
    broker = quota_broker(num_brokers=3, **broker_kwargs)
    broker.create_topic("x", 2)
    broker.create_topic("unrelated", 1)
    conf = {"bootstrap.servers": broker.bootstrap_servers, **client}
    reader = BrokerViewReader({**conf, "client.id": "views"})
    try:
        views = reader.read_cluster(["x", "absent"], 10.0)
        again = reader.read_cluster(["x"], 10.0)
    finally:
        reader.close()
    shown = {"x": TopicView(2, True, topic_id(conf, "x"))}
    assert views == dict.fromkeys((0, 1, 2), shown)
    assert again == views
    metadata = [r for r in broker.request_log() if r.api_name == "Metadata" and r.client_id == "views"]
    # one request per broker a read (the first broker's answer also lists the brokers), naming only the topics
    # asked about (issue 29: no listing of every topic), in a version with topic ids
    assert sorted(r.node_id for r in metadata) == [0, 0, 1, 1, 2, 2]
    assert [set(r.errors) for r in metadata] == [{"x", "absent"}] * 3 + [{"x"}] * 3
    assert {r.api_version for r in metadata} == {13}  # the highest both the reader and QuotaBroker (as Kafka 4.4) serve
    assert {r.principal for r in metadata} == ({"alice"} if "sasl" in setup else {"ANONYMOUS"})
    # the connections are kept: one handshake per broker, not per read
    handshakes = [
        r for r in broker.request_log() if r.api_name in ("ApiVersions", "SaslHandshake") and r.client_id == "views"
    ]
    assert len(handshakes) == (6 if "sasl" in setup else 3)


def test_a_broker_that_cannot_be_read_has_no_view_and_the_password_appears_nowhere(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    broker = quota_broker(num_brokers=2, users={"alice": PASSWORD}, sasl_mechanisms=["SCRAM-SHA-512"])
    conf = {"bootstrap.servers": broker.bootstrap_servers, **sasl("SCRAM-SHA-512", WRONG)}
    reader = BrokerViewReader(conf)
    try:
        assert reader.read_cluster(["x"], 5.0) == {}  # no broker answers: no broker list either
        texts = [repr(reader), repr(vars(reader)), repr(ConnectionSettings.from_conf(conf)), caplog.text]
    finally:
        reader.close()
    assert "SaslAuthenticate" in {r.api_name for r in broker.request_log()}
    assert "BrokerRefused" in caplog.text
    for text in texts:
        assert WRONG not in text
        assert WRONG[3:12] not in text


def test_a_lost_connection_is_made_anew(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(num_brokers=2, users={"alice": PASSWORD}, sasl_mechanisms=["SCRAM-SHA-256"])
    broker.create_topic("x", 1)
    reader = BrokerViewReader({"bootstrap.servers": broker.bootstrap_servers, **sasl("SCRAM-SHA-256")})
    try:
        assert set(reader.read_cluster(["x"], 5.0)) == {0, 1}
        broker.drop_connections()  # as a broker closing idle connections does
        views = reader.read_cluster(["x"], 5.0)
    finally:
        reader.close()
    assert all(view is not None and "x" in view for view in views.values()), views
    assert len(views) == 2


REBOOTSTRAP_REQUIRED = 129
NOT_LEADER_OR_FOLLOWER = 6


@pytest.mark.parametrize("error_code", [REBOOTSTRAP_REQUIRED, 56])  # 56: KAFKA_STORAGE_ERROR, any other code
def test_a_top_level_metadata_error_is_no_view_not_an_absent_topic(
    quota_broker: BrokerFactory, error_code: int
) -> None:
    """Metadata v13's top-level error_code (KIP-1102) refuses the answer as a whole: its empty topic list does
    not say the broker lacks the topic. Java's clients rebootstrap on REBOOTSTRAP_REQUIRED (NetworkClient,
    KafkaAdminClient's metadata call) and use no part of the answer; so does the reader, which then starts again
    from the bootstrap servers."""
    broker = quota_broker(num_brokers=2)
    broker.create_topic("x", 1)
    reader = BrokerViewReader({"bootstrap.servers": broker.bootstrap_servers, "client.id": "views"})
    try:
        assert set(reader.read_cluster(["x"], 5.0)) == {0, 1}
        broker.fail_metadata_next(error_code)  # the next answer, the first broker's, is refused
        once = reader.read_cluster(["x"], 5.0)
        broker.fail_metadata_next(error_code, count=1000)  # every broker refuses every answer
        always = reader.read_cluster(["x"], 5.0)
    finally:
        reader.close()
    for views in (once, always):
        assert all(view is None or "x" in view for view in views.values()), views  # never "x is absent"
    assert once == dict.fromkeys((0, 1), once[1])
    assert once[1] is not None
    # REBOOTSTRAP_REQUIRED: the broker list is forgotten (no broker known: no view); else each broker has none
    assert always == ({} if error_code == REBOOTSTRAP_REQUIRED else {0: None, 1: None})


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "SASL mechanism OAUTHBEARER"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "SASL mechanism GSSAPI"),  # librdkafka's default mechanism
        ({"security.protocol": "SSL", "ssl.keystore.location": "k.p12"}, "TLS setting ssl.keystore.location"),
        ({"security.protocol": "SSL", "ssl.ca.pem": "-----BEGIN"}, "TLS setting ssl.ca.pem"),
    ],
)
def test_other_set_ups_are_refused_by_name(extra: dict[str, str], why: str) -> None:
    with pytest.raises(Unsupported, match=why):
        ConnectionSettings.from_conf({"bootstrap.servers": "127.0.0.1:9", **extra})


def test_the_fallback_reads_through_librdkafka_without_topic_ids(
    quota_broker: BrokerFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A TLS setting the reader's own connections do not speak (here ``ssl.cipher.suites``): librdkafka's
    ``list_topics``, one small client per broker; the views carry no topic ids. Said once in the log."""
    caplog.set_level(logging.INFO, logger="throttled_admin")
    tls = make_tls(tmp_path)
    broker = quota_broker(num_brokers=2, ssl_context=tls.server_context())
    broker.create_topic("x", 2)
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.cipher.suites": "HIGH",
        **tls.client_conf(),
    }
    reader = BrokerViewReader(conf)
    try:
        views = reader.read_cluster(["x"], 10.0)
    finally:
        reader.close()
    assert views == {0: {"x": TopicView(2, True)}, 1: {"x": TopicView(2, True)}}
    assert "through librdkafka (no topic ids)" in caplog.text
    assert "TLS setting ssl.cipher.suites" in caplog.text
    assert repr(reader) == "BrokerViewReader(librdkafka)"


def test_the_fallback_sees_every_broker_though_librdkafka_answers_from_whichever_it_likes(
    quota_broker: BrokerFactory, tmp_path: Path
) -> None:
    """librdkafka 2.16 sends a fresh client's Metadata to any broker it has learned of, not only the one it was
    bootstrapped with: about half the answers of a fresh client made for one broker came from another. Three fresh
    clients a broker left a broker without a view in about one read in twelve (seen in CI as ``{0: None}``). A race:
    on three brokers this failed the old reader in 2 of 4 runs on a quiet machine, but passed it 10 of 10 under a CI
    run's load; ``test_an_answer_is_the_view_of_the_listed_broker_that_gave_it`` pins the rule itself."""
    tls = make_tls(tmp_path)
    broker = quota_broker(num_brokers=3, ssl_context=tls.server_context())
    broker.create_topic("x", 2)
    conf = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SSL", "ssl.cipher.suites": "HIGH"}
    reads = []
    for _ in range(8):  # a fresh reader each time: a reader's clients, once right, keep answering from their broker
        reader = BrokerViewReader(conf | tls.client_conf())
        try:
            reads.append(reader.read_cluster(["x"], 10.0))
        finally:
            reader.close()
    whole = {node: {"x": TopicView(2, True)} for node in range(3)}
    assert [views == whole for views in reads] == [True] * 8, reads


def _answer_from(node_id: int, name: str) -> ClusterMetadata:
    answer = ClusterMetadata()  # what librdkafka's list_topics returns, here with no topic
    answer.orig_broker_id = node_id
    answer.orig_broker_name = name  # type: ignore[assignment]  # (confluent-kafka's stub types it None)
    return answer


def test_an_answer_is_the_view_of_the_listed_broker_that_gave_it() -> None:
    """The fallback's rule, without the race that shows it: an answer is the view of the listed broker that gave it
    (by id, or by address from a bootstrap connection), a view read before is kept, an unlisted broker's is no
    one's; the client that answered from another broker becomes that broker's unless it has one."""
    brokers = {0: "127.0.0.1:9001", 1: "127.0.0.1:9002"}
    views: BrokerViews = {}
    assert _take(views, _answer_from(1, "ssl://127.0.0.1:9002/1"), brokers, ["x"]) == (1, "127.0.0.1:9002")
    assert views == {1: {}}
    views[0] = {"x": TopicView(2, True)}
    assert _take(views, _answer_from(-1, "sasl_ssl://127.0.0.1:9001/bootstrap"), brokers, ["x"]) == (0, brokers[0])
    assert views == {0: {"x": TopicView(2, True)}, 1: {}}
    assert _take(views, _answer_from(-1, "ssl://127.0.0.1:9999/bootstrap"), brokers, ["x"]) is None
    reader = LibrdkafkaViews({"bootstrap.servers": "127.0.0.1:9001", "socket.connection.setup.timeout.ms": 1000})
    try:
        first = reader._client(0, brokers[0])
        reader._hand_over((0, brokers[0]), (1, brokers[1]))
        assert reader._clients == {(1, brokers[1]): first}
        reader._client(0, brokers[0])  # a fresh one, which answers from broker 1 too: destroyed
        reader._hand_over((0, brokers[0]), (1, brokers[1]))
        assert reader._clients == {(1, brokers[1]): first}
    finally:
        reader.close()


@pytest.mark.slow
def test_finding_7_over_sasl_scram_and_tls(quota_broker: BrokerFactory, tmp_path: Path) -> None:
    """The re-created topic of finding 7, on SASL_SSL listeners (SCRAM-SHA-256): resolved only once every broker
    shows the new incarnation (was: through librdkafka, no ids, the old 8-partition topic passed for it)."""
    tls = make_tls(tmp_path)
    broker = quota_broker(
        num_brokers=3,
        metadata_lag_ms=2000,
        ssl_context=tls.server_context(),
        users={"alice": PASSWORD},
        sasl_mechanisms=["SCRAM-SHA-256"],
    )
    broker.create_topic("x", 8)
    conf = {"bootstrap.servers": broker.bootstrap_servers, **sasl("SCRAM-SHA-256", protocol="SASL_SSL")}
    conf |= tls.client_conf()
    reader = BrokerViewReader(conf)
    try:
        [old] = {view["x"].topic_id for view in reader.read_cluster(["x"], 10.0).values() if view}
        with ThrottledAdminClient(conf) as admin:
            assert admin.delete_topics(["x"])["x"].exception(30) is None
            future = admin.create_topics([NewTopic("x", 3, 1)], timeout_ms=30000, wait_for_metadata=True)["x"]
            assert future.exception(30) is None
            views = reader.read_cluster(["x"], 10.0)
    finally:
        reader.close()
    ids = {view["x"].topic_id for view in views.values() if view and "x" in view}
    assert len(ids) == 1
    assert old not in ids
    assert all(view is not None and view["x"].partitions == 3 for view in views.values())


class OldBrokerProxy:
    """A proxy in front of one QuotaBroker node that answers ApiVersions v0 (the reader's) with Metadata up to v9
    only, as a Kafka before 2.8 would; everything else passes unchanged (librdkafka asks ApiVersions v3)."""

    def __init__(self, port: int) -> None:
        self._target = ("127.0.0.1", port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._sockets: list[socket.socket] = [self._server]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self._server.accept()
                self._sockets.append(client)
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError, ConnectionError), socket.create_connection(self._target) as upstream:
            self._sockets.append(upstream)
            while True:
                request = _frame(client)
                api_key, version = struct.unpack_from(">hh", request, 4)
                upstream.sendall(request)
                response = _frame(upstream)
                if (api_key, version) == (18, 0):
                    response = _metadata_capped(response, 9)
                client.sendall(response)

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


def _frame(sock: socket.socket) -> bytes:
    head = sock.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        raise ConnectionError("closed")
    (size,) = struct.unpack(">i", head)
    return head + sock.recv(size, socket.MSG_WAITALL)


def _metadata_capped(response: bytes, highest: int) -> bytes:
    """ApiVersions v0's answer (size, correlation id, error, [key, min, max]) with Metadata's max lowered."""
    data = bytearray(response)
    (count,) = struct.unpack_from(">i", data, 10)
    for offset in range(14, 14 + 6 * count, 6):
        if struct.unpack_from(">h", data, offset)[0] == 3:
            struct.pack_into(">h", data, offset + 4, highest)
    return bytes(data)


def test_a_broker_without_metadata_v10_is_read_through_librdkafka(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka before 2.8 has no topic ids: the reader says so once and reads through librdkafka (no ids)."""
    caplog.set_level(logging.INFO, logger="throttled_admin")
    broker = quota_broker(num_brokers=2)
    broker.create_topic("x", 1)
    proxy = OldBrokerProxy(broker.ports[0])
    reader = BrokerViewReader({"bootstrap.servers": proxy.address})
    try:
        views = reader.read_cluster(["x"], 10.0)
    finally:
        reader.close()
        proxy.close()
    assert views == {0: {"x": TopicView(1, True)}, 1: {"x": TopicView(1, True)}}
    assert "answers Metadata up to v9, without topic ids" in caplog.text


class _IterationsDowngrade:
    """A proxy in front of one broker that rewrites SCRAM's server-first ``i=4096`` to ``i=1024`` (the same length:
    no frame changes size) and records every frame the client writes: a man in the middle of SASL_PLAINTEXT, or
    a rogue broker, asking for a proof that is 4x cheaper to brute-force offline."""

    def __init__(self, upstream: str) -> None:
        self._upstream = upstream.rpartition(":")[::2]
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self.client_frames: list[bytes] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self._server.accept()
                broker = socket.create_connection((self._upstream[0], int(self._upstream[1])))
                for source, sink, rewrite in ((client, broker, False), (broker, client, True)):
                    thread = threading.Thread(target=self._pump, args=(source, sink, rewrite), daemon=True)
                    thread.start()
                    self._threads.append(thread)

    def _pump(self, source: socket.socket, sink: socket.socket, rewrite: bool) -> None:
        with contextlib.suppress(OSError, ConnectionError), source, sink:
            while True:
                head = source.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                body = source.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                if rewrite:
                    body = body.replace(b",i=4096", b",i=1024")
                else:
                    self.client_frames.append(body)
                sink.sendall(head + body)

    def close(self) -> None:
        self._server.close()


def test_a_scram_server_asking_for_fewer_than_4096_iterations_gets_no_proof(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka's Java client refuses a server-first of fewer than 4096 iterations (ScramSaslClient: 'Requested
    iterations N is less than the minimum 4096'), Kafka's own minimum for SCRAM credentials: the client's proof
    would otherwise be computed, and sent, with as few iterations as whoever answers asks for."""
    caplog.set_level(logging.DEBUG)
    broker = quota_broker(num_brokers=1, users={"alice": PASSWORD}, sasl_mechanisms=["SCRAM-SHA-256"])
    proxy = _IterationsDowngrade(broker.bootstrap_servers)
    reader = BrokerViewReader({"bootstrap.servers": proxy.address, **sasl("SCRAM-SHA-256")})
    try:
        assert reader.read_cluster(["x"], 5.0) == {}
    finally:
        reader.close()
        proxy.close()
    assert any(b"n=alice" in frame for frame in proxy.client_frames)  # the exchange began through the proxy
    assert not any(b",p=" in frame for frame in proxy.client_frames), "a proof went out for i=1024"
    assert "less than the minimum 4096" in caplog.text


def test_a_node_that_never_answers_leaves_the_quorum_read_time_for_the_next(quota_broker: BrokerFactory) -> None:
    """Found by review (helper 58): every address shared one deadline, so a node that accepts and never answers,
    asked first, took all of the read's time, and the check told an answer as the broker's word."""
    broker = quota_broker()
    with socket.create_server(("127.0.0.1", 0)) as silent:  # (the kernel accepts; nobody ever reads)
        hung = f"127.0.0.1:{silent.getsockname()[1]}"
        reader = BrokerViewReader({"bootstrap.servers": f"{hung},{broker.bootstrap_servers}"})
        try:
            assert reader.read_quorum(6.0) == QuorumAnswer(0, 0, 1)  # the silent node gets half
        finally:
            reader.close()


def test_brokers_without_describe_quorum_are_asked_once(quota_broker: BrokerFactory) -> None:
    """Redpanda's dialect serves no DescribeQuorum: the first broker says so for the cluster, and no other is
    connected to for it (found by review, helper 58: each was, and each connection kept)."""
    broker = quota_broker(num_brokers=3, enforcement="redpanda")
    reader = BrokerViewReader({"bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in broker.ports.values())})
    try:
        assert reader.read_quorum(2.0) == QuorumAnswer(UNSUPPORTED_VERSION)
        assert len(broker.request_log()) == 1  # its ApiVersions, on one connection
    finally:
        reader.close()


def test_a_broker_whose_view_lags_the_election_leaves_the_quorum_read_to_the_next(quota_broker: BrokerFactory) -> None:
    """Found by review (helper 59): the first address's NOT_LEADER_OR_FOLLOWER ended the read, and a check told an
    answer as the broker's word just after an election, when it matters."""
    broker = quota_broker(num_brokers=2)
    broker.fail_next("DescribeQuorum", NOT_LEADER_OR_FOLLOWER)
    reader = BrokerViewReader({"bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in broker.ports.values())})
    try:
        assert reader.read_quorum(4.0) == QuorumAnswer(0, 0, 1)
        broker.fail_next("DescribeQuorum", NOT_LEADER_OR_FOLLOWER, count=2)
        assert reader.read_quorum(4.0) == QuorumAnswer(NOT_LEADER_OR_FOLLOWER)  # every broker said so: that answer
    finally:
        reader.close()


def closes_at_once(client: ThrottledAdminClient) -> bool:
    """``client.close()`` on a thread of its own has returned within ``WAIT_S``."""
    closing = threading.Thread(target=client.close, name="closing")
    closing.start()
    closing.join(WAIT_S)
    return not closing.is_alive()


def test_close_cuts_short_a_read_of_the_brokers_views_that_no_broker_answers(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a new user's run (helper 99): against a broker that accepts connections and never answers,
    ``close()`` waited for the read under way on the reader's own connections (the controller quorum's, then
    ``wait_for_metadata``'s) to time out: 4-5 s, and Ctrl-C in ``throttled-admin topics --create`` took as long. The
    connection, still in its handshake, is now shut by the close, which returns at once. Here the reads' time is made
    longer than the test waits."""
    monkeypatch.setattr(scheduler_module, "READ_TIMEOUT_S", 600.0)
    monkeypatch.setattr(scheduler_module, "_METADATA_TIMEOUT_S", 600.0)
    broker = quota_broker()
    broker.set_unresponsive()
    client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
    future = client.create_topics([NewTopic("t", 1, 1)], wait_for_metadata=True, timeout_ms=600_000)["t"]

    def ours_in_handshake() -> bool:  # the reader's ApiVersions v0 (librdkafka asks in v3 or later)
        return any(r.api_name == "ApiVersions" and r.api_version == 0 for r in broker.request_log())

    assert wait_until(ours_in_handshake)
    assert closes_at_once(client), "close() waited for the read"
    assert future.done()


def test_the_close_of_a_client_just_made_does_not_wait_for_its_quorum_reads_name_lookup(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 137: the controller quorum's baseline is read as the client is made (issue 40), on the reader's own
    connections; a close cuts their connect and handshake short, not a name lookup (a slow resolver), and a client
    made and closed at once waited for it (5 s of a stalled lookup: 4.95 s). The close no longer waits for a quorum
    read, whose answer is no one's once closed. Here the lookup lasts until the test ends it."""
    monkeypatch.setattr(scheduler_module, "_METADATA_TIMEOUT_S", 600.0)
    broker = quota_broker()
    looking, release = threading.Event(), threading.Event()
    lookup = socket.getaddrinfo

    def stalled(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "throttled-admin-views":
            looking.set()
            release.wait(600)
        return lookup(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", stalled)
    try:
        client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
        assert looking.wait(WAIT_S)  # the making's read, in its lookup
        assert closes_at_once(client), "close() waited for the quorum read"
    finally:
        release.set()


def test_a_create_waiting_for_its_ids_is_never_sent_by_the_close_that_cuts_the_read_short(
    quota_broker: BrokerFactory,
) -> None:
    """Found by review (helper 101) of the fix above, which closed the reader before the scheduler: the read cut
    short told the engine the brokers had no view, and a ``wait_for_metadata`` create waiting for its ids was sent
    as the client closed, and created (3 runs in 5). The reads are now cut only once the engine has closed: the
    topic is not sent, and the close does not wait for the read's answer (held here for 10 minutes)."""
    broker = quota_broker()
    client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        assert client.create_topics([NewTopic("reached", 1, 1)])["reached"].exception(WAIT_S) is None
        before = len(broker.request_log())
        broker.delay_next("Metadata", 600.0, count=100)
        future = client.create_topics([NewTopic("victim", 1, 1)], wait_for_metadata=True)["victim"]

        def reading_ids() -> bool:  # the reader's own Metadata (v10 or later: topic ids) has reached the broker
            return any(r.api_name == "Metadata" and r.api_version >= 10 for r in broker.request_log()[before:])

        assert wait_until(reading_ids)
        assert closes_at_once(client), "close() waited for the read"
    finally:
        client.close()
    assert isinstance(future.exception(0), NotSentError), future.exception(0)
    assert "victim" not in broker.topics()
    assert all("victim" not in r.errors for r in broker.request_log() if r.api_name == "CreateTopics")


def test_close_cuts_short_a_tls_handshake_that_no_broker_answers(tmp_path: Path) -> None:
    """Found by review (helper 101): the TLS handshake ran on a socket the close could not reach (``wrap_socket``
    detaches the one it wraps), so a read of a TLS listener that accepts and never answers ended only at its
    timeout. Here that is 10 minutes; the close ends it at once."""
    tls = make_tls(tmp_path)
    hello = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as silent:
        held: list[socket.socket] = []

        def accept() -> None:
            with contextlib.suppress(OSError):
                conn, _ = silent.accept()
                held.append(conn)
                if conn.recv(1):  # the client's hello: the handshake has begun, and is never answered
                    hello.set()

        acceptor = threading.Thread(target=accept, daemon=True)
        acceptor.start()
        conf = {"bootstrap.servers": f"127.0.0.1:{silent.getsockname()[1]}", "security.protocol": "SSL"}
        reader = BrokerViewReader(conf | tls.client_conf())
        answers: list[Any] = []
        reading = threading.Thread(target=lambda: answers.append(reader.read_quorum(600.0)), daemon=True)
        reading.start()
        try:
            assert hello.wait(WAIT_S)
            reader.close()
            reading.join(WAIT_S)
            assert not reading.is_alive(), "the handshake went on after the close"
            assert answers == [None]  # no broker read
        finally:
            reader.close()
            for conn in held:
                conn.close()


def _connecting_to(port: int) -> bool:
    """A TCP connect to 127.0.0.1:``port`` is under way, its SYN unanswered (``/proc/net/tcp``: state SYN_SENT)."""
    with open("/proc/net/tcp") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    return any(row[2] == f"0100007F:{port:04X}" and row[3] == "02" for row in rows)


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the connect's state in /proc/net/tcp (Linux)")
def test_close_cuts_short_a_tcp_connect_that_no_broker_answers() -> None:
    """A broker whose host drops the connection's SYN (a firewall, a listener whose backlog is full: here) kept a
    read on the reader's own connection in its TCP connect until the read's timeout, and ``close()`` waited for it
    (the connect ran on a socket the close could not reach: ``socket.create_connection``'s). Here the timeout is 10
    minutes; the close ends the connect at once (Linux aborts a connect whose socket is shut)."""
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        port = full.getsockname()[1]
        queued: list[socket.socket] = []
        try:
            for _ in range(8):  # until a connect is left unanswered: the backlog is full, SYNs are dropped
                probe = socket.socket()
                queued.append(probe)
                try:
                    probe.settimeout(0.5)
                    probe.connect(("127.0.0.1", port))
                except TimeoutError:
                    break
            probe.close()
            assert wait_until(lambda: not _connecting_to(port))
            reader = BrokerViewReader({"bootstrap.servers": f"127.0.0.1:{port}"})
            answers: list[Any] = []
            reading = threading.Thread(target=lambda: answers.append(reader.read_quorum(600.0)), daemon=True)
            reading.start()
            try:
                assert wait_until(lambda: _connecting_to(port))
                reader.close()
                reading.join(WAIT_S)
                assert not reading.is_alive(), "the connect went on after the close"
                assert answers == [None]  # no broker read
            finally:
                reader.close()
        finally:
            for each in queued:
                each.close()
