from __future__ import annotations

import inspect

import throttled_admin
import throttled_admin.testing
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker


def public_names(module: object) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_") and not inspect.ismodule(getattr(module, n))}


def test_all_lists_exactly_the_public_names_sorted() -> None:
    for module in (throttled_admin, throttled_admin.testing):
        exported = [n for n in module.__all__ if n != "__version__"]
        assert exported == sorted(exported)
        assert set(exported) == public_names(module) - {"annotations"}


def test_drop_in_types_are_confluent_kafkas_own() -> None:
    from confluent_kafka.admin import NewPartitions, NewTopic

    assert throttled_admin.NewTopic is NewTopic
    assert throttled_admin.NewPartitions is NewPartitions
    assert throttled_admin.__version__


def _public_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_a_topic_pending_at_close_raises_a_public_error_class() -> None:
    """Finding 8: the closed-and-not-sent error was ``throttled_admin._errors._ClosedNotSentError``."""
    with QuotaBroker(controller_mutation_rate=1, quota_window_num=1, enforcement="strict") as broker:
        client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert client.create_topics([NewTopic("first", 5, 1)])["first"].exception(30) is None  # 4 s of debt
        # A strict quota reports the debt only when it refuses (as Kafka 4.4): one refusal shows the throttle.
        refused = client.create_topics([NewTopic("refused", 1, 1)], retry_on_quota_violation=False)["refused"]
        assert isinstance(refused.exception(30), throttled_admin.ThrottlingQuotaExceededException)
        pending = client.create_topics([NewTopic("second", 1, 1)], timeout_ms=60_000)  # queued behind the throttle
        client.close()
        exc = pending["second"].exception(5)
    assert isinstance(exc, throttled_admin.ClientClosedError)
    assert isinstance(exc, throttled_admin.NotSentError)
    shown = _public_path(type(exc))
    assert "._" not in shown, shown
    assert getattr(throttled_admin, type(exc).__name__) is type(exc)


def test_every_exception_class_a_caller_can_meet_is_public_and_exported() -> None:
    from throttled_admin import _errors

    for name, cls in vars(_errors).items():
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == _errors.__name__:
            assert not name.startswith("_"), name
            assert getattr(throttled_admin, name) is cls, name
    for name in throttled_admin.__all__:
        value = getattr(throttled_admin, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            assert value.__module__ == "throttled_admin", (name, value.__module__)  # tracebacks show the public path
