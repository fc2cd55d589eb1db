"""``_driver/collector.py``: a bulk call holds Python's garbage collector off from its checks until it returns
(issue 40: a full collection in the checks delayed the first request), and always puts it back as it was. Observed
at the call's checks, on a client with no broker (nothing is sent; ``close`` settles the call)."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.admin import NewPartitions, NewTopic

from tests.interrupts import interrupt_at, offsets
from throttled_admin import ThrottledAdminClient
from throttled_admin import _client as client_module
from throttled_admin._client import ThrottledAdminClient as Client
from throttled_admin._driver.collector import BULK_CALL_FROM


@pytest.fixture
def admin() -> Iterator[ThrottledAdminClient]:
    made = ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})  # nothing listens: no request
    yield made
    made.close()


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def seen_at_checks(monkeypatch: pytest.MonkeyPatch, name: str) -> list[bool]:
    """Whether the collector was on when the call's checks ran (``name``: the facade's check function)."""
    seen: list[bool] = []
    check: Callable[[Any], Any] = getattr(client_module, name)

    def observed(items: Any) -> Any:
        seen.append(gc.isenabled())
        return check(items)

    monkeypatch.setattr(client_module, name, observed)
    return seen


@pytest.mark.usefixtures("collector_on")
@pytest.mark.parametrize(
    ("method", "check", "item"),
    [
        ("create_topics", "check_new_topics", lambda i: NewTopic(f"t{i}", 1, 1)),
        ("create_partitions", "check_new_partitions", lambda i: NewPartitions(f"t{i}", 2)),
        ("delete_topics", "check_delete_topics", lambda i: f"t{i}"),
    ],
)
def test_a_bulk_call_holds_the_collector_off_until_it_returns_and_a_smaller_one_does_not(
    admin: ThrottledAdminClient,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    check: str,
    item: Callable[[int], Any],
) -> None:
    seen = seen_at_checks(monkeypatch, check)
    for count in (BULK_CALL_FROM - 1, BULK_CALL_FROM):
        getattr(admin, method)([item(i) for i in range(count)], request_timeout=5)
        assert gc.isenabled()
    assert seen == [True, False]


@pytest.mark.usefixtures("collector_on")
def test_a_bulk_call_refused_by_its_checks_puts_the_collector_back(admin: ThrottledAdminClient) -> None:
    topics: list[Any] = [NewTopic(f"t{i}", 1, 1) for i in range(BULK_CALL_FROM)]
    topics.append("not a NewTopic")
    with pytest.raises(TypeError, match="NewTopic"):
        admin.create_topics(topics)
    assert gc.isenabled()


def test_a_bulk_call_leaves_a_collector_that_was_off_off(
    admin: ThrottledAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = seen_at_checks(monkeypatch, "check_new_topics")
    was = gc.isenabled()
    gc.disable()
    try:
        admin.create_topics([NewTopic(f"t{i}", 1, 1) for i in range(BULK_CALL_FROM)])
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
    assert seen == [False]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="before 3.11 a signal can land at any bytecode (interrupts.py)")
@pytest.mark.usefixtures("collector_on")
def test_ctrl_c_anywhere_in_a_bulk_call_leaves_the_collector_on(admin: ThrottledAdminClient) -> None:
    """Review of a286bf2: the collector was turned off before the call's ``try`` was entered, and on again in a
    function of its own, so Ctrl-C landing between (as a function starts, or as a call returns) left it off for the
    process's life. At every point a signal can land in the call's own frame, it is on again after."""
    topics = [NewTopic(f"t{i}", 1, 1) for i in range(BULK_CALL_FROM)]
    points = offsets(Client._call)
    assert points
    for offset in points:
        with interrupt_at(Client._call.__code__, offset), contextlib.suppress(KeyboardInterrupt):
            admin.create_topics(topics, request_timeout=5)
        assert gc.isenabled(), offset
