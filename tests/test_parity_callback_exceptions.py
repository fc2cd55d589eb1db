"""An exception raised by the application's conf callback reaches the application as confluent-kafka's does.

confluent-kafka runs ``error_cb``, ``stats_cb``, ``throttle_cb`` and the ``logger`` in ``poll()``, and what one
raises comes out of that ``poll()``: applications raise from ``error_cb`` to stop on a fatal error. Ours run on the
client's user-code thread (never the scheduler's), and the exception comes out of the application's next
``poll()``. Each scenario runs on bare confluent-kafka and on ours: ``poll()`` raises the callback's own exception
on both, and ours goes on working afterwards (the exception stopped nothing of the client's).

``oauth_cb`` runs on librdkafka's background thread in confluent-kafka 2.16 for every client: an exception
there fails the token, and the constructor raises SASL_AUTHENTICATION_FAILED once no token came in 10 s; ours
passes ``oauth_cb`` to confluent-kafka unchanged, so the same happens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from throttled_admin import ThrottledAdminClient
from throttled_admin.admin import NewTopic
from throttled_admin.testing import QuotaBroker

CLIENTS: list[type[AdminClient]] = [AdminClient, ThrottledAdminClient]
POLLS = 100  # poll(0.1) at most this often for the callback's exception: 10 s


class Boom(Exception):
    pass


class Raising:
    """A conf callback that raises, remembering the threads it ran on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.threads: list[str] = []

    def __call__(self, *args: Any) -> None:
        self.threads.append(threading.current_thread().name)
        raise Boom(f"from {self.name}")


def _poll_until_raised(admin: AdminClient) -> BaseException:
    for _ in range(POLLS):
        try:
            admin.poll(0.1)
        except Exception as exc:
            return exc
    pytest.fail("poll() never raised the callback's exception")


@pytest.fixture
def closing() -> Iterator[list[AdminClient]]:
    clients: list[AdminClient] = []
    yield clients
    for client in clients:
        client.__exit__(None, None, None)


def _client(kind: type[AdminClient], conf: dict[str, Any], closing: list[AdminClient]) -> AdminClient:
    client = kind(conf)
    closing.append(client)
    return client


@pytest.mark.parametrize("kind", CLIENTS, ids=["confluent-kafka", "throttled_admin"])
@pytest.mark.parametrize("callback", ["error_cb", "stats_cb"])
def test_poll_raises_what_the_callback_raised(
    kind: type[AdminClient], callback: str, closing: list[AdminClient], refused_address: str
) -> None:
    raising = Raising(callback)
    conf = {"bootstrap.servers": refused_address, "log_level": 0, callback: raising}
    if callback == "stats_cb":
        conf["statistics.interval.ms"] = 100
    admin = _client(kind, conf, closing)
    raised = _poll_until_raised(admin)
    assert isinstance(raised, Boom)
    assert str(raised) == f"from {callback}"
    assert "throttled-admin-scheduler" not in raising.threads


@pytest.mark.parametrize("kind", CLIENTS, ids=["confluent-kafka", "throttled_admin"])
def test_poll_raises_what_the_logger_raised(
    kind: type[AdminClient], closing: list[AdminClient], refused_address: str
) -> None:
    raising = Raising("logger")

    class Logger:
        log = raising

    admin = _client(kind, {"bootstrap.servers": refused_address, "logger": Logger()}, closing)
    raised = _poll_until_raised(admin)
    assert isinstance(raised, Boom)
    assert "throttled-admin-scheduler" not in raising.threads


@pytest.mark.parametrize("kind", CLIENTS, ids=["confluent-kafka", "throttled_admin"])
def test_poll_raises_what_the_throttle_cb_raised_and_the_client_goes_on(
    kind: type[AdminClient], quota_broker: Callable[..., QuotaBroker], closing: list[AdminClient]
) -> None:
    broker = quota_broker(controller_mutation_rate=2, quota_window_num=1, enforcement="strict")
    raising = Raising("throttle_cb")
    admin = _client(kind, {"bootstrap.servers": broker.bootstrap_servers, "throttle_cb": raising}, closing)
    for future in admin.create_topics([NewTopic("first", 3, 1), NewTopic("second", 1, 1)]).values():
        exc = future.exception(60)  # bare confluent-kafka does not retry the throttled topic
        assert exc is None or exc.args[0].code() == KafkaError.THROTTLING_QUOTA_EXCEEDED
    raised = _poll_until_raised(admin)
    assert isinstance(raised, Boom)
    assert "throttled-admin-scheduler" not in raising.threads
    # Nothing of the client's was stopped by the exception: it still creates topics.
    assert admin.create_topics([NewTopic("after", 1, 1)])["after"].result(60) is None


def test_every_exception_comes_out_of_a_poll_in_order(closing: list[AdminClient], refused_address: str) -> None:
    """Ours runs the callbacks whether or not the application polls: what they raised waits for its polls, oldest
    first, one a poll."""
    raised: list[int] = []

    def error_cb(error: KafkaError) -> None:
        raised.append(len(raised))
        raise Boom(str(len(raised) - 1))

    admin = _client(ThrottledAdminClient, {"bootstrap.servers": refused_address, "error_cb": error_cb}, closing)
    first = _poll_until_raised(admin)
    second = _poll_until_raised(admin)
    assert (str(first), str(second)) == ("0", "1")


@pytest.mark.slow
def test_an_oauth_cb_that_raises_fails_the_constructor_as_in_confluent_kafka(refused_address: str) -> None:
    def oauth_cb(config: str) -> tuple[str, float]:
        raise Boom("from oauth_cb")

    # Any: a callback in the conf, which confluent-kafka's stub types as str | int | float | bool values only
    conf: dict[str, Any] = {
        "bootstrap.servers": refused_address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": oauth_cb,
        "log_level": 0,
    }

    def construct(kind: type[AdminClient]) -> BaseException | None:
        try:
            kind(conf).__exit__(None, None, None)
        except Exception as exc:
            return exc
        return None

    with ThreadPoolExecutor(2) as pool:  # confluent-kafka waits 10 s for a token: both at once
        bare, ours = pool.map(construct, CLIENTS)
    for raised in (bare, ours):
        assert isinstance(raised, KafkaException), repr(raised)
        assert raised.args[0].code() == KafkaError.SASL_AUTHENTICATION_FAILED


# Was (issue 31, confluent-kafka's test_admin_multiple_callbacks_different_error_types failing 2 of 14 runs): a
# poll() whose timeout ended while the error_cb it had served was still running on the user-code thread returned
# normally (the exception was only logged at close()). confluent-kafka's poll() runs the callback inline, however
# long it takes, and raises what it raises. A slow error_cb (0.5 s) and poll(0.2) make it certain.
@pytest.mark.parametrize("kind", CLIENTS, ids=["confluent-kafka", "throttled_admin"])
def test_a_poll_whose_timeout_ends_while_its_callback_runs_raises_what_the_callback_raises(
    kind: type[AdminClient], closing: list[AdminClient], refused_address: str
) -> None:
    started = threading.Event()

    def slow_error_cb(error: KafkaError) -> None:
        started.set()
        threading.Event().wait(0.5)  # a callback that takes its time (not waiting for anything)
        raise Boom("from a slow error_cb")

    conf = {"bootstrap.servers": refused_address, "log_level": 0, "error_cb": slow_error_cb}
    admin = _client(kind, conf, closing)
    raised: BaseException | None = None
    for _ in range(POLLS):  # until a poll() serves the connection's failure (or finds it served)
        try:
            admin.poll(0.2)
        except Boom as exc:
            raised = exc
        if raised is not None or started.is_set():
            break
    assert started.is_set(), "no connection failure was reported"
    assert isinstance(raised, Boom), "the poll() that served the callback returned before it raised"
