"""User code and user objects never change, delay or block an outcome.

- ``stats_cb``, ``error_cb`` and ``throttle_cb`` from conf that raise: every topic still succeeds, the client
  keeps working, and what they raised comes out of the application's ``poll()``
  (tests/test_parity_callback_exceptions.py holds that against bare confluent-kafka).
- A meter provider whose instruments raise (or that cannot even make a meter): outcomes unchanged, ``close()``
  works.
- Objects the caller changes after the call returned (NewTopic, NewPartitions, the list of names) are not what
  a retry sends: the call took a snapshot.
- Constructor values that cannot work fail at once with a message naming the setting.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError
from opentelemetry.metrics import MeterProvider, NoOpMeter, NoOpMeterProvider

from tests.reliability_helpers import admin_for, assert_truthful, mutation_requests, outcomes
from tests.support import BrokerFactory
from throttled_admin import MutationQuota, NewPartitions, NewTopic, ThrottledAdminClient


def _raising(name: str, calls: list[str]) -> Callable[..., None]:
    def callback(*args: Any) -> None:
        calls.append(name)
        raise RuntimeError(f"{name} is broken")

    return callback


def _contained_logs(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "throttled_admin" and name in r.getMessage()]


def _first_raised(admin: ThrottledAdminClient) -> str:
    """What a conf callback raised, out of poll() (it returns early when the exception comes)."""
    for _ in range(100):
        try:
            admin.poll(0.1)
        except RuntimeError as exc:
            return str(exc)
    pytest.fail("no poll() raised the callback's exception")


def _raised_by_polls(admin: ThrottledAdminClient) -> list[str]:
    """What the conf callbacks raised so far, each out of one poll()."""
    raised: list[str] = []
    while True:
        try:
            admin.poll(0)
        except RuntimeError as exc:
            raised.append(str(exc))
        else:
            return raised


# -- conf callbacks that raise -------------------------------------------------------------------


@pytest.mark.slow
def test_raising_conf_callbacks_change_no_outcome(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    broker = quota_broker(controller_mutation_rate=20, quota_window_num=1, enforcement="strict")  # burst 20
    calls: list[str] = []
    conf = {
        "statistics.interval.ms": 100,
        "stats_cb": _raising("stats_cb", calls),
        "error_cb": _raising("error_cb", calls),
        "throttle_cb": _raising("throttle_cb", calls),
    }
    caplog.set_level(logging.DEBUG, logger="throttled_admin")
    names = [f"cb-{i}" for i in range(5)]
    with admin_for(broker, conf) as admin:
        # 5 x 8 partitions against a burst of 20: throttled (throttle_cb), retried, and slow enough for stats_cb
        first = outcomes(admin.create_topics([NewTopic(n, 8, 1) for n in names], timeout_ms=30000))
        assert first == dict.fromkeys(names)
        broker.drop_connections()  # librdkafka reports the disconnect through error_cb
        deadline = time.monotonic() + 10
        while "error_cb" not in calls and time.monotonic() < deadline:
            time.sleep(0.05)
        # the client keeps working after every callback has raised
        later = outcomes(admin.delete_topics(names, timeout_ms=30000))
        assert later == dict.fromkeys(names)
        assert any(t.name == "throttled-admin-scheduler" for t in threading.enumerate())
        raised = set(_raised_by_polls(admin))
    assert {"stats_cb", "error_cb", "throttle_cb"} <= set(calls), set(calls)
    assert calls.count("stats_cb") >= 2  # called again after raising: still served
    assert broker.topics() == {}
    assert {f"{name} is broken" for name in ("stats_cb", "error_cb", "throttle_cb")} <= raised


def test_the_users_throttle_cb_gets_the_brokers_throttle_even_though_the_client_owns_the_callback(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)  # librdkafka's v4: admitted, throttled
    seen: list[float] = []
    called = threading.Event()

    def throttle_cb(event: Any) -> None:
        seen.append(event.throttle_time)
        called.set()
        raise RuntimeError("a bug in the user's callback")

    caplog.set_level(logging.ERROR, logger="throttled_admin")
    with admin_for(broker, {"throttle_cb": throttle_cb}) as admin:
        assert outcomes(admin.create_topics([NewTopic("big", 15, 1)])) == {"big": None}  # K = -5: 500 ms
        assert called.wait(10)
        assert _first_raised(admin) == "a bug in the user's callback"
    [record] = mutation_requests(broker)
    assert record.throttle_time_ms > 0
    assert seen[0] == pytest.approx(record.throttle_time_ms / 1000)
    assert set(seen[1:]) <= {0.0}  # librdkafka's event when a later response's throttle is back to 0


def test_slow_conf_callback_does_not_delay_outcomes(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    flowing = threading.Event()

    def slow_sink(stats: str) -> None:
        flowing.set()
        time.sleep(1.0)

    conf = {"statistics.interval.ms": 100, "stats_cb": slow_sink}
    names = [f"slow-cb-{i}" for i in range(3)]
    with admin_for(broker, conf) as admin:
        assert flowing.wait(10)  # statistics are flowing (10 a second, each taking 1 s to deliver)
        results = outcomes(admin.create_topics([NewTopic(n, 1, 1) for n in names], timeout_ms=1500))
    assert results == dict.fromkeys(names)


# -- meter providers that raise ------------------------------------------------------------------


class _RaisingInstrument:
    def add(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter down")

    def record(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter down")

    def set(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter down")


class _RaisingMeter(NoOpMeter):
    def create_counter(self, *args: Any, **kwargs: Any) -> Any:
        return _RaisingInstrument()

    def create_up_down_counter(self, *args: Any, **kwargs: Any) -> Any:
        return _RaisingInstrument()

    def create_histogram(self, *args: Any, **kwargs: Any) -> Any:
        return _RaisingInstrument()

    def create_gauge(self, *args: Any, **kwargs: Any) -> Any:
        return _RaisingInstrument()

    def create_observable_gauge(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no gauges today")


class RaisingInstrumentsProvider(NoOpMeterProvider):
    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return _RaisingMeter(name)


class NoMeterProvider(MeterProvider):
    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("meter provider shut down")


class RaisingOnSecondCallProvider(NoOpMeterProvider):
    """Creates instruments fine, raises when they record: the failure comes mid-flight, not at construction."""

    def __init__(self) -> None:
        self.recorded = 0

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Any:
        provider = self

        class Counting(_RaisingInstrument):
            def add(self, *args: Any, **kwargs: Any) -> None:
                provider.recorded += 1
                raise RuntimeError("exporter down")

            record = add

        class Meter(NoOpMeter):
            def create_counter(self, *args: Any, **kwargs: Any) -> Any:
                return Counting()

            def create_histogram(self, *args: Any, **kwargs: Any) -> Any:
                return Counting()

        return Meter(name)


@pytest.mark.parametrize("provider_type", [RaisingInstrumentsProvider, NoMeterProvider, RaisingOnSecondCallProvider])
def test_meter_provider_that_raises_changes_no_outcome(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture, provider_type: Callable[[], MeterProvider]
) -> None:
    broker = quota_broker(controller_mutation_rate=20, quota_window_num=1, enforcement="strict")
    broker.create_topic("grow", 1)
    provider = provider_type()
    caplog.set_level(logging.DEBUG, logger="throttled_admin")
    names = [f"m-{i}" for i in range(4)]
    admin = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}, meter_provider=provider)
    try:
        created = outcomes(admin.create_topics([NewTopic(n, 8, 1) for n in names], timeout_ms=30000), timeout_s=40)
        grown = outcomes(admin.create_partitions([NewPartitions("grow", 3)], timeout_ms=30000), timeout_s=40)
        assert created == dict.fromkeys(names)
        assert grown == {"grow": None}
        assert admin.metrics()["request-total"] == len(mutation_requests(broker))
        pending = admin.create_topics([NewTopic("pending", 1, 1)], timeout_ms=30000)
    finally:
        closer = threading.Thread(target=admin.close, daemon=True)
        closer.start()
        closer.join(15)
    assert not closer.is_alive(), "close() hung"
    assert pending["pending"].done()
    held = broker.topics()
    assert {k: v for k, v in held.items() if k != "pending"} == {**dict.fromkeys(names, 8), "grow": 3}
    assert_truthful("create", outcomes(pending, timeout_s=1), held)  # closed before or after it was sent
    if isinstance(provider, RaisingOnSecondCallProvider):
        assert provider.recorded > 0  # the instruments really were called and raised
    failures = [r for r in caplog.records if r.name == "throttled_admin" and r.levelno >= logging.WARNING]
    assert 1 <= len(failures) <= 2, [r.getMessage() for r in failures]  # once, not per recording


class _SlowInstrument:
    def add(self, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.5)  # an exporter stuck on a slow network

    record = add


class SlowInstrumentsProvider(NoOpMeterProvider):
    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Any:
        class Meter(NoOpMeter):
            def create_counter(self, *args: Any, **kwargs: Any) -> Any:
                return _SlowInstrument()

            def create_histogram(self, *args: Any, **kwargs: Any) -> Any:
                return _SlowInstrument()

        return Meter(name)


def test_slow_meter_provider_does_not_delay_outcomes(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1, enforcement="strict")  # burst 10
    names = [f"slow-m-{i}" for i in range(4)]  # 4 x 4 partitions: the fourth is throttled for ~200 ms
    with admin_for(broker, meter_provider=SlowInstrumentsProvider()) as admin:
        results = outcomes(admin.create_topics([NewTopic(n, 4, 1) for n in names], timeout_ms=3000))
    assert results == dict.fromkeys(names)


class StuckInstrumentsProvider(NoOpMeterProvider):
    """Instruments that block until ``release`` is set: an exporter hung on the network."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Any:
        release = self.release

        class Stuck:
            def add(self, *args: Any, **kwargs: Any) -> None:
                release.wait(120)

            record = add

        class Meter(NoOpMeter):
            def create_counter(self, *args: Any, **kwargs: Any) -> Any:
                return Stuck()

            def create_histogram(self, *args: Any, **kwargs: Any) -> Any:
                return Stuck()

        return Meter(name)


def test_hung_meter_provider_does_not_delay_outcomes(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    provider = StuckInstrumentsProvider()
    try:
        with admin_for(broker, meter_provider=provider) as admin:
            futures: dict[str, Any] = {}
            started = time.monotonic()
            for i in range(200):
                futures.update(admin.create_topics([NewTopic(f"hung-{i}", 1, 1)], timeout_ms=60000))
            results = outcomes(futures)
            elapsed_s = time.monotonic() - started
            provider.release.set()
    finally:
        provider.release.set()
    assert results == dict.fromkeys(futures)
    assert elapsed_s < 3, f"200 calls took {elapsed_s:.1f} s"


class HangingMeterProvider(NoOpMeterProvider):
    """``get_meter`` blocks until ``release`` is set: a provider stuck on its own lock or the network."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        self.release.wait(120)
        return super().get_meter(name, *args, **kwargs)


def _construct_in_thread(make: Callable[[], ThrottledAdminClient]) -> tuple[threading.Thread, list[Any]]:
    made: list[Any] = []

    def run() -> None:
        try:
            made.append(make())
        except BaseException as exc:
            made.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, made


def test_a_hanging_meter_provider_blocks_no_other_client(
    quota_broker: BrokerFactory, meter_provider: MeterProvider
) -> None:
    """One client's meter provider hangs in get_meter: that client may be stuck, but clients with another
    provider (or the global one) are still constructed and work; no lock shared between clients is held
    while user code runs."""
    broker = quota_broker()
    hanging = HangingMeterProvider()
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    stuck = _construct_in_thread(lambda: ThrottledAdminClient(conf, meter_provider=hanging))
    started = [stuck]
    try:
        assert hanging.entered.wait(10)
        for i, provider in enumerate((meter_provider, None)):
            thread, made = _construct_in_thread(functools.partial(ThrottledAdminClient, conf, meter_provider=provider))
            started.append((thread, made))
            thread.join(10)
            assert not thread.is_alive(), f"constructing a client with {provider!r} waited on the hanging provider"
            [admin] = made
            assert isinstance(admin, ThrottledAdminClient), admin
            name = f"other-{i}"
            assert outcomes(admin.create_topics([NewTopic(name, 1, 1)], timeout_ms=20000), timeout_s=30) == {name: None}
        assert stuck[0].is_alive()  # the client given the hanging provider is still in get_meter
    finally:
        hanging.release.set()
        for thread, made in started:
            thread.join(30)
            for admin in made:
                if isinstance(admin, ThrottledAdminClient):
                    admin.close()
    assert not stuck[0].is_alive()
    assert isinstance(stuck[1][0], ThrottledAdminClient)  # released, it was constructed after all
    assert set(broker.topics()) == {"other-0", "other-1"}


# -- caller objects changed after the call returned ------------------------------------------------


def test_objects_changed_after_the_call_are_not_what_a_retry_sends(quota_broker: BrokerFactory) -> None:
    """Strict quota, burst 20: the first request admits 3 of 6 topics; the rest are re-sent after the throttle,
    by which time the caller has changed every object it passed."""
    broker = quota_broker(controller_mutation_rate=20, quota_window_num=1, enforcement="strict")
    for i in range(6):
        broker.create_topic(f"g-{i}", 1)
        broker.create_topic(f"d-{i}", 1)
    new_topics = [NewTopic(f"n-{i}", 8, 1, config={"cleanup.policy": "delete"}) for i in range(6)]
    new_partitions = [NewPartitions(f"g-{i}", 8) for i in range(6)]
    doomed = [f"d-{i}" for i in range(6)]
    with admin_for(broker) as admin:
        created = admin.create_topics(new_topics, timeout_ms=30000)
        for topic in new_topics:  # the caller reuses its objects at once
            topic.num_partitions = 1
            assert topic.config is not None
            topic.config["cleanup.policy"] = "not-a-policy"
        grown = admin.create_partitions(new_partitions, timeout_ms=30000)
        for partitions in new_partitions:
            partitions.new_total_count = 2
        deleted = admin.delete_topics(doomed, timeout_ms=30000)
        doomed[:] = [f"g-{i}" for i in range(6)]  # ...and its list
        results = {**outcomes(created), **outcomes(grown), **outcomes(deleted)}
    assert results == dict.fromkeys(results)
    assert len(results) == 18
    log = mutation_requests(broker)
    assert any(code == KafkaError.THROTTLING_QUOTA_EXCEEDED for r in log for code in r.errors.values())
    held = broker.topics()
    assert held == {**{f"n-{i}": 8 for i in range(6)}, **{f"g-{i}": 8 for i in range(6)}}


# -- constructor values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "conf", "error", "named"),
    [
        ({"meter_provider": "x"}, {}, TypeError, "meter_provider"),
        ({"meter_provider": object()}, {}, TypeError, "meter_provider"),
        ({}, {"retry.backoff.ms": "abc"}, ValueError, "retry.backoff.ms"),
        ({}, {"retry.backoff.max.ms": float("nan")}, ValueError, "retry.backoff.max.ms"),
        ({}, {"retry.backoff.ms": -5}, ValueError, "retry.backoff.ms"),
        ({"metrics_num_samples": 2.5}, {}, ValueError, "metrics_num_samples"),
        ({"metrics_num_samples": 0}, {}, ValueError, "metrics_num_samples"),
        ({"metrics_sample_window_ms": True}, {}, ValueError, "metrics_sample_window_ms"),
        ({"default_api_timeout_ms": 0}, {}, ValueError, "default_api_timeout_ms"),
        ({"default_api_timeout_ms": -1}, {}, ValueError, "default_api_timeout_ms"),
        ({"default_api_timeout_ms": 1.5}, {}, ValueError, "default_api_timeout_ms"),
        ({"retry_on_quota_violation": "yes"}, {}, TypeError, "retry_on_quota_violation"),
        ({"mutation_quota": 5}, {}, TypeError, "mutation_quota"),
        ({}, {"throttle_cb": 5}, TypeError, "throttle_cb"),
        ({}, {"error_cb": "log it"}, TypeError, "error_cb"),
        ({}, {"stats_cb": object()}, TypeError, "stats_cb"),
    ],
)
def test_constructor_values_fail_at_once_naming_the_setting(
    kwargs: dict[str, Any], conf: dict[str, Any], error: type[Exception], named: str
) -> None:
    threads_before = threading.active_count()
    with pytest.raises(error) as raised:
        ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9", **conf}, **kwargs)
    message = str(raised.value)
    assert named in message, message
    assert "weak reference" not in message
    assert threading.active_count() == threads_before  # nothing was started


def test_conf_that_is_not_a_dict_is_named() -> None:
    with pytest.raises(TypeError, match="conf must be a dict"):
        ThrottledAdminClient([("bootstrap.servers", "127.0.0.1:9")])  # type: ignore[arg-type]


def test_mutation_quota_values_are_named() -> None:
    for rate in (float("nan"), -1.0, 0.0, float("inf")):
        with pytest.raises(ValueError, match="rate"):
            MutationQuota(rate=rate)


def test_a_raising_error_cb_is_kept_for_poll_for_librdkafkas_errors_and_the_clients_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """librdkafka's errors and those the client finds itself (an authentication failure it diagnosed) reach the
    same conf error_cb; each exception it raises is kept for a poll() (one each, oldest first), and what no poll()
    collected is logged at close."""
    from throttled_admin._driver.callback_errors import CallbackErrors
    from throttled_admin._driver.secret_hider import SecretHider
    from throttled_admin._driver.settings import install_callbacks

    seen: list[KafkaError] = []

    def error_cb(error: KafkaError) -> None:
        seen.append(error)
        raise RuntimeError(f"boom {len(seen)}")

    errors = CallbackErrors()
    conf, report = install_callbacks({"error_cb": error_cb}, lambda: None, lambda job: job(), errors, SecretHider({}))
    error = KafkaError(KafkaError._AUTHENTICATION, "the listener requires SASL authentication")
    conf["error_cb"](error)
    report(error)
    report(error)
    assert seen == [error, error, error]
    for expected in ("boom 1", "boom 2"):
        with pytest.raises(RuntimeError, match=expected):
            errors.raise_first()
    with caplog.at_level(logging.ERROR, logger="throttled_admin"):
        errors.close()
    errors.raise_first()  # nothing left
    [logged] = [r.getMessage() for r in caplog.records]
    assert logged.startswith("the error_cb from conf raised RuntimeError: boom 3 at ")
    assert logged.endswith(", and no poll() raised it before close()")


def test_without_an_error_cb_the_clients_own_errors_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    from throttled_admin._driver.callback_errors import CallbackErrors
    from throttled_admin._driver.secret_hider import SecretHider
    from throttled_admin._driver.settings import install_callbacks

    _, report = install_callbacks({}, lambda: None, lambda job: job(), CallbackErrors(), SecretHider({}))
    with caplog.at_level(logging.WARNING, logger="throttled_admin"):
        report(KafkaError(KafkaError._AUTHENTICATION, "the listener requires SASL authentication"))
    assert [r.getMessage() for r in caplog.records] == ["the listener requires SASL authentication"]
