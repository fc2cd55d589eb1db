"""The contact watch behind the fast metadata reads of the command line and provisioning
(``throttled_admin._driver.metadata_read``): what librdkafka's error_cb reports, as values; and how often a read
asks a slow cluster."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support import BrokerFactory
from throttled_admin import CannotConnectError, NotSentError, NotSentReason, ThrottledAdminClient
from throttled_admin._driver.metadata_read import ContactWatch, read_failure, read_metadata, read_topics
from throttled_admin._engine import FIRST_CONTACT_TIMEOUT_S, ContactFailure, contact_failure, wrong_listener
from throttled_admin._errors import cannot_connect_error, not_sent_error
from throttled_admin.testing import QuotaBroker

REFUSED = KafkaError(
    KafkaError._TRANSPORT,
    "127.0.0.1:9/bootstrap: Connect to ipv4#127.0.0.1:9 failed: Connection refused (after 0ms in state CONNECT)",
)
WRONG_PASSWORD = KafkaError(
    KafkaError._AUTHENTICATION,
    "sasl_plaintext://127.0.0.1:9/bootstrap: SASL authentication error: Authentication failed: Invalid username "
    "or password (after 0ms in state AUTH_REQ)",
)
LONG_AGO = time.monotonic() - FIRST_CONTACT_TIMEOUT_S - 1  # a read that started past the first-contact limit


def test_a_refused_connection_says_cannot_connect_once_past_the_first_contact_limit() -> None:
    watch = ContactWatch()
    watch.on_error(REFUSED)
    watch.check_unreachable(time.monotonic())  # a read that just started: not yet
    with pytest.raises(CannotConnectError) as info:
        watch.check_unreachable(LONG_AGO)
    error = info.value.args[0]
    assert error.code() == KafkaError._TRANSPORT
    assert error.str() == (
        "Metadata not sent: cannot connect to 127.0.0.1:9 (Connect to ipv4#127.0.0.1:9 failed: Connection refused)"
    )


def test_a_connection_closed_in_its_tls_handshake_says_cannot_connect_with_host_and_port() -> None:
    watch = ContactWatch()
    watch.on_error(
        KafkaError(
            KafkaError._TRANSPORT,
            "sasl_ssl://127.0.0.1:9/bootstrap: SSL handshake failed: Disconnected: SSL connection closed by peer: "
            "connecting to a PLAINTEXT broker listener? (after 1ms in state SSL_HANDSHAKE)",
        )
    )
    watch.check_unreachable(time.monotonic())
    with pytest.raises(CannotConnectError, match=r"cannot connect to 127\.0\.0\.1:9 \(SSL handshake failed: "):
        watch.check_unreachable(LONG_AGO)


def test_a_listener_found_to_speak_the_other_protocol_ends_a_read_at_once_and_holds() -> None:
    watch = ContactWatch()
    watch.on_error(wrong_listener("ssl://127.0.0.1:9/bootstrap", "SSL", requires_tls=False))
    tls_again = "ssl://127.0.0.1:9/bootstrap: SSL handshake failed: Disconnected (after 1ms in state SSL_HANDSHAKE)"
    watch.on_error(KafkaError(KafkaError._TRANSPORT, tls_again))  # librdkafka's own report, later: the finding holds
    with pytest.raises(CannotConnectError) as info:
        watch.check_unreachable(time.monotonic())  # a read that just started
    assert info.value.args[0].str() == (
        "Metadata not sent: cannot connect to 127.0.0.1:9 (the listener at 127.0.0.1:9 does not speak TLS; check "
        "security.protocol, which is SSL)"
    )


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (cannot_connect_error("Metadata", "h:1", "refused"), (-195, "cannot connect to h:1 (refused)")),
        (KafkaException(WRONG_PASSWORD), (-169, WRONG_PASSWORD.str())),
        (
            KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out")),
            (-185, "cannot read the cluster's topics: Failed to get metadata: Local: Timed out"),
        ),
        (RuntimeError("boom"), (None, "cannot read the cluster's topics: RuntimeError: boom")),
        (
            not_sent_error(
                "Metadata", 30000, "no broker had answered this client", why=NotSentReason.NO_BROKER_ANSWERED
            ),
            (-185, "no broker had answered this client within 30000 ms"),
        ),
    ],
)
def test_a_failed_read_is_worded_once_for_every_caller(exc: BaseException, expected: tuple[int | None, str]) -> None:
    """The command line's apply and the provisioning executor both print what this says (docs/pipeline.md)."""
    assert read_failure(exc) == expected


def test_a_failure_the_client_read_in_a_log_line_counts_as_error_cbs_do() -> None:
    """librdkafka tells an ApiVersions request never answered only in its log (level 4), which ThrottledAdminClient
    reads and ``error_cb`` never sees (`topics --list` on a silent listener waited out --timeout-ms): the client's
    failure counts past the first-contact limit, and is taken before the watch's own (the client reads error_cb
    too); a broker that answered ends both."""
    silent = contact_failure(
        "127.0.0.1:9/bootstrap: ApiVersionRequest failed: Local: Timed out: probably due to broker version < 0.10 "
        "(see api.version.request configuration) (after 10010ms in state APIVERSION_QUERY)"
    )
    assert silent is not None
    watch = ContactWatch()
    watch.check_unreachable(time.monotonic(), client=silent)  # a read that just started: not yet
    with pytest.raises(CannotConnectError) as info:
        watch.check_unreachable(LONG_AGO, client=silent)
    assert info.value.args[0].str() == (
        "Metadata not sent: cannot connect to 127.0.0.1:9 (the listener at 127.0.0.1:9 did not answer the Kafka "
        "handshake (ApiVersions) in 10010 ms)"
    )
    watch.on_error(REFUSED)
    with pytest.raises(CannotConnectError, match="did not answer the Kafka handshake"):
        watch.check_unreachable(LONG_AGO, client=silent)
    with pytest.raises(CannotConnectError, match="does not speak TLS"):  # the client's, definite: at once
        watch.check_unreachable(time.monotonic(), client=wrong_listener_failure())
    watch.reached()
    watch.check_unreachable(LONG_AGO, client=silent)


def wrong_listener_failure() -> ContactFailure:
    failure = contact_failure(wrong_listener("ssl://127.0.0.1:9/bootstrap", "SSL", requires_tls=False).str())
    assert failure is not None
    assert failure.definite
    return failure


def test_a_broker_that_answered_is_never_unreachable() -> None:
    watch = ContactWatch()
    watch.reached()
    watch.on_error(REFUSED)  # one broker of several down later: not "cannot connect"
    watch.check_unreachable(LONG_AGO)


def test_an_authentication_failure_is_fatal_until_a_broker_answers() -> None:
    watch = ContactWatch()
    watch.check_fatal()
    watch.on_error(WRONG_PASSWORD)
    watch.on_error(KafkaError(KafkaError._AUTHENTICATION, "a later report"))
    with pytest.raises(KafkaException) as info:
        watch.check_fatal()
    assert info.value.args[0].str() == WRONG_PASSWORD.str()  # the first one, code kept
    assert info.value.args[0].code() == KafkaError._AUTHENTICATION
    watch.reached()  # a connection authenticated since: the failure is over
    watch.check_fatal()
    assert watch.fatal is None


def test_other_errors_are_neither_fatal_nor_connect_failures() -> None:
    watch = ContactWatch()
    watch.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    watch.on_error(KafkaError(KafkaError._TRANSPORT, "127.0.0.1:9/1: Disconnected (after 10ms in state UP)"))
    watch.check_fatal()
    watch.check_unreachable(LONG_AGO)


def test_a_slow_cluster_is_asked_a_few_times_not_four_times_a_second(quota_broker: Callable[..., QuotaBroker]) -> None:
    """Found by the fleet benchmark: every 0.25 s slice of a read sent a Metadata request of its own, so 200 clients
    waiting for slow brokers kept them too busy to answer. Slices now double (0.25, 0.5, 1, 2 s)."""
    broker = quota_broker()
    watch = ContactWatch()
    # a callback in the conf: confluent-kafka's stub types conf values as str | int | float | bool only
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "error_cb": watch.on_error, "log_level": 0})  # type: ignore[dict-item]
    read_metadata(admin, watch, 10.0)  # connected, and librdkafka's own start-up requests are answered
    before = len([r for r in broker.request_log() if r.api_name == "Metadata"])
    broker.delay_next("Metadata", 3.0, count=20)  # every answer 3 s late
    metadata = read_metadata(admin, watch, 30.0)
    sent = len([r for r in broker.request_log() if r.api_name == "Metadata"]) - before
    assert metadata.brokers
    assert sent <= 5, f"{sent} Metadata requests for one read (0.25 s slices: about 12)"


def test_a_wrong_password_reported_after_the_first_slice_still_fails_the_read_at_once(
    quota_broker: BrokerFactory,
) -> None:
    """The command line's and the pipeline's reads fail at once on a wrong password. Here the broker answers the
    SASL authentication 0.6 s late (a busy broker, a distant one): before issue 21's change the read failed after
    1.0 s; now it waits for the end of its second slice, the first-contact window or the read's timeout (4 s)."""
    from throttled_admin.cli._session import AdminSession

    broker = quota_broker(users={"alice": "right"})
    broker.delay_next("SaslAuthenticate", 0.6, count=5)
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "wrong",
    }
    with AdminSession(conf, retry_on_quota_violation=True, timeout_ms=4000) as session:
        started = time.monotonic()
        with pytest.raises(KafkaException) as raised:
            session.list_topics()
        elapsed = time.monotonic() - started
    assert raised.value.args[0].code() == KafkaError._AUTHENTICATION
    assert elapsed < 2.5, f"the authentication failure ended the read after {elapsed:.1f} s"


def test_a_read_of_named_topics_takes_unknown_and_unauthorized_as_absent_and_fails_on_other_errors(
    quota_broker: Callable[..., QuotaBroker],
) -> None:
    """``read_topics`` (the provisioning groups' read, issue 29): a name the cluster does not show this principal is
    absent, as a listing of every topic leaves it out; a topic the broker answers with any other error fails the
    read with that error, never passing for a topic with no partitions."""
    broker = quota_broker(num_brokers=2)
    broker.create_topic("shown", 3)
    watch = ContactWatch()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "error_cb": watch.on_error, "log_level": 0})  # type: ignore[dict-item]
    topics = read_topics(admin, watch, ["shown", "absent", "shown"], 10.0)
    assert {name: len(d.partitions) for name, d in topics.items()} == {"shown": 3}
    asked = [r for r in broker.request_log() if r.api_name == "Metadata" and r.errors]
    assert [r.errors for r in asked] == [{"absent": 3, "shown": 0}]  # one request, naming the two topics
    broker.fail_next("Metadata", 29)  # TOPIC_AUTHORIZATION_FAILED
    assert read_topics(admin, watch, ["shown"], 10.0) == {}
    broker.fail_next("Metadata", 87)  # an error of the topic that says nothing of whether it exists
    with pytest.raises(KafkaException) as failed:
        read_topics(admin, watch, ["shown"], 10.0)
    assert failed.value.args[0].code() == 87


def test_a_clients_first_read_waits_for_its_contact_probe_instead_of_asking_again(
    quota_broker: Callable[..., QuotaBroker], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: a ThrottledAdminClient sends a DescribeCluster as it starts (the engine's contact probe). A first
    read that needs a first contact of its own (a provisioning group's, the command line's) waits for that one: one
    DescribeCluster a client, not two (about 1 ms of client CPU each, a fleet of 200 entities' 0.2 s)."""
    broker = quota_broker()
    asked: list[str] = []

    def counting(cls: type[AdminClient]) -> None:  # the probe calls AdminClient's method, a read the client's own
        original = vars(cls)["describe_cluster"]

        def counted(self: AdminClient, *args: Any, **kwargs: Any) -> Any:
            asked.append(cls.__name__)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "describe_cluster", counted)

    counting(AdminClient)
    counting(ThrottledAdminClient)
    watch = ContactWatch()
    conf = {"bootstrap.servers": broker.bootstrap_servers, "error_cb": watch.on_error, "log_level": 0}
    with ThrottledAdminClient(conf) as admin:
        assert read_topics(admin, watch, ["absent"], 10.0) == {}
        assert watch.has_reached
        assert watch.brokers == 1  # the probe's answer counted the brokers, as the read's own did
    assert asked == ["AdminClient"], f"DescribeCluster asked {asked} for one client's start and first read"


def test_a_first_read_made_after_the_clients_probe_gave_up_still_fails_at_the_first_contact_limit() -> None:
    """Review of 4d60753: the client's own contact probe times out FIRST_CONTACT_TIMEOUT_S after the client was made,
    before the limit counted from a later read's start; the read then asks for itself instead of waiting out its
    whole timeout in ``list_topics``."""
    with socket.socket() as closed_port:
        closed_port.bind(("127.0.0.1", 0))
        port = closed_port.getsockname()[1]
    watch = ContactWatch()
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "error_cb": watch.on_error, "log_level": 0}
    with ThrottledAdminClient(conf) as admin:
        probe = admin._first_probe(10.0)
        assert probe is not None
        time.sleep(0.5)  # the read starts after the probe: the gap is the test's subject, not a wait for it
        started = time.monotonic()
        with pytest.raises(CannotConnectError):
            read_metadata(admin, watch, 60.0)
    assert time.monotonic() - started < 30.0  # at the first-contact limit (5 s), not the read's 60 s


def test_a_read_that_no_broker_ever_answered_says_so_not_only_timed_out(
    quota_broker: Callable[..., QuotaBroker],
) -> None:
    """Found by a new user's run (helper 99): against a broker that accepts connections and never answers,
    ``throttled-admin topics --list`` said only librdkafka's "Failed to get metadata: Local: Timed out" (a create
    said "no broker had answered this client"). The read is not sent: librdkafka writes nothing before its
    handshake is answered."""
    broker = quota_broker()
    broker.set_unresponsive()
    watch = ContactWatch()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "error_cb": watch.on_error, "log_level": 0})  # type: ignore[dict-item]
    with pytest.raises(NotSentError) as caught:
        read_metadata(admin, watch, 2.0)
    assert caught.value.why is NotSentReason.NO_BROKER_ANSWERED
    assert (
        str(caught.value.args[0].str())
        == "Metadata not sent within timeout_ms=2000: no broker had answered this client"
    )
    assert {r.api_name for r in broker.request_log()} == {"ApiVersions"}  # all the listener ever received
