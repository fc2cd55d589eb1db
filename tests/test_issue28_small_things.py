"""Issue 28, findings 7-9: the small things a person running the product meets (each test failed before its fix)."""

from __future__ import annotations

import inspect

import throttled_admin
from throttled_admin import NewTopic, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker


def _public_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_a_topic_pending_at_close_raises_a_public_error_class() -> None:
    """Finding 8: the closed-and-not-sent error was ``throttled_admin._errors._ClosedNotSentError``."""
    with QuotaBroker(controller_mutation_rate=1, quota_window_num=1, enforcement="strict") as broker:
        client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert client.create_topics([NewTopic("first", 5, 1)])["first"].exception(30) is None  # 5 s of debt
        pending = client.create_topics([NewTopic("second", 1, 1)], timeout_ms=60_000)
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
