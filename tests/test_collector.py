"""``_driver/collector.py``: a bulk call holds Python's garbage collector off from its checks until it returns
(issue 40: a full collection in the checks delayed the first request), and always puts it back as it was. Observed
at the call's checks, on a client with no broker (nothing is sent; ``close`` settles the call)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.admin import NewPartitions, NewTopic

from tests.interrupts import interrupt_at, offsets
from tests.support import BrokerFactory
from throttled_admin import MutationQuota, ThrottledAdminClient
from throttled_admin import _client as client_module
from throttled_admin._client import ThrottledAdminClient as Client
from throttled_admin._driver import collector
from throttled_admin._driver.collector import BULK_CALL_FROM, Hold
from throttled_admin._engine.machine import Engine


def frozen() -> bool:
    """Whether more is frozen than before any hold (CPython 3.12 starts with 375 tuples frozen)."""
    return gc.get_freeze_count() > collector._state.baseline


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
    admin.close()  # (settles every call: a hold that was on is given back)
    assert not collector._state.held


@pytest.mark.skipif(sys.version_info < (3, 11), reason="before 3.11 a signal can land at any bytecode (interrupts.py)")
@pytest.mark.usefixtures("nothing_frozen")
@pytest.mark.parametrize("function", [Hold.start, Hold.end], ids=lambda function: function.__qualname__)
def test_ctrl_c_anywhere_in_a_holds_start_or_end_leaves_nothing_frozen_once_it_is_dropped(function: Any) -> None:
    for offset in offsets(function):
        hold = Hold()
        if function is Hold.end:
            hold.start()
        with interrupt_at(function.__code__, offset), contextlib.suppress(KeyboardInterrupt):
            function(hold)
        del hold
        assert not frozen(), offset


@pytest.fixture
def nothing_frozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No hold on before and after, and nothing frozen after but what was before; the test's own hold state."""
    assert not collector._state.held, "a hold on before the test: a bulk call left pending"
    monkeypatch.setattr(collector, "_state", collector._State(gc.get_freeze_count()))
    yield
    assert not collector._state.held
    assert not frozen()


def bulk_names(prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(BULK_CALL_FROM)]


@pytest.mark.usefixtures("collector_on", "nothing_frozen")
def test_a_bulk_calls_objects_are_frozen_while_it_is_pending_and_given_back_once_it_is_not(
    quota_broker: BrokerFactory,
) -> None:
    """Issue 40: no collection walks a bulk call's objects while the call is pending (they were walked three times in
    it: generations 0, 1 and 2, the last a full collection of 37-50 ms at 50,000 topics). Its first request is held
    unanswered; a close ends the call, and the freeze with it."""
    broker = quota_broker()
    held = broker.blackhole_next("CreateTopics", 1)
    client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        pending = client.create_topics([NewTopic(name, 1, 1) for name in bulk_names("held")])
        assert frozen()
        assert held.wait(10)
        assert frozen()
    finally:
        client.close()
    assert all(future.done() for future in pending.values())


@pytest.mark.usefixtures("collector_on", "nothing_frozen")
def test_a_bulk_call_answered_gives_its_freeze_back_before_a_later_call_of_its_client_is_answered(
    quota_broker: BrokerFactory,
) -> None:
    broker = quota_broker()
    names = bulk_names("t")
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as client:
        futures = client.create_topics([NewTopic(name, 1, 1) for name in names])
        assert [futures[name].result(10) for name in names] == [None] * len(names)
        client.create_topics([NewTopic("after", 1, 1)])["after"].result(10)  # (its turn came after the bulk call's)
        assert not frozen()


@pytest.mark.usefixtures("collector_on", "nothing_frozen")
def test_a_paced_bulk_call_freezes_nothing(quota_broker: BrokerFactory) -> None:
    """Its pacing keeps it pending for as long as it needs: no hold (review 79)."""
    broker = quota_broker()
    held = broker.blackhole_next("CreateTopics", 1)
    client = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}, mutation_quota=MutationQuota())
    try:
        client.create_topics([NewTopic(name, 1, 1) for name in bulk_names("paced")])
        assert held.wait(10)
        assert not frozen()
    finally:
        client.close()


@pytest.mark.usefixtures("collector_on", "nothing_frozen")
def test_a_bulk_call_whose_every_topic_its_checks_refuse_leaves_nothing_frozen(admin: ThrottledAdminClient) -> None:
    futures = admin.create_topics([NewTopic(f"bad name {i}", 1, 1) for i in range(BULK_CALL_FROM)])
    assert not frozen()
    assert all(future.exception(0) is not None for future in futures.values())


@pytest.mark.usefixtures("nothing_frozen")
def test_a_call_that_returns_while_another_holds_the_freeze_adds_nothing_to_it() -> None:
    """One hold at a time (review 79): calls that overlap never keep the process frozen past the first one's end."""
    first, second, late = Hold(), Hold(), Hold()
    first.start()
    assert frozen()
    second.start()
    first.end()
    assert not frozen()  # (the second call, still pending, froze nothing)
    second.end()
    late.end()  # (a call that ended before it returned: its start freezes nothing)
    late.start()
    assert not frozen()


@pytest.mark.usefixtures("nothing_frozen")
def test_a_hold_whose_end_was_lost_gives_the_freeze_back_once_it_is_dropped() -> None:
    hold = Hold()
    hold.start()
    assert frozen()
    del hold  # (its end lost to a Ctrl-C: nothing refers to it any more)
    assert not frozen()


@pytest.mark.usefixtures("collector_on", "nothing_frozen")
def test_an_application_that_froze_objects_of_its_own_is_left_alone(admin: ThrottledAdminClient) -> None:
    kept: list[list[int]] = [[] for _ in range(10)]  # (objects of its own, frozen by it)
    gc.freeze()
    try:
        theirs = gc.get_freeze_count()
        assert theirs >= len(kept)
        hold = Hold()
        hold.start()
        assert gc.get_freeze_count() <= theirs  # (no more: what it froze may be freed meanwhile)
        hold.end()
        admin.create_topics([NewTopic(f"t{i}", 1, 1) for i in range(BULK_CALL_FROM)], request_timeout=5)
        assert gc.get_freeze_count() <= theirs
        assert collector._state.application_freezes  # (not looked at again: it walks every frozen object)
    finally:
        gc.unfreeze()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.usefixtures("nothing_frozen")
def test_a_child_forked_while_a_hold_is_on_gives_the_freeze_back_and_holds_again() -> None:
    """Review 79: the parent's call never ends in the child; the child inherited the hold and froze its whole heap
    at every bulk call after, never giving it back."""
    hold = Hold()
    hold.start()
    assert frozen()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: as little as can be, and out without cleaning up the parent's state
        seen = [gc.get_freeze_count()]
        own = Hold()
        own.start()
        seen.append(gc.get_freeze_count())
        own.end()
        seen.append(gc.get_freeze_count())
        hold.end()  # (the parent's, made before the fork: nothing here)
        seen.append(gc.get_freeze_count())
        os.write(write, " ".join(map(str, seen)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        after_fork, held, given_back, parents_end = map(int, pipe.read().split())
    os.waitpid(pid, 0)
    hold.end()
    assert (after_fork, given_back, parents_end) == (0, 0, 0)
    assert held > 0


def steps_seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """For each step of an engine: whether a hold was on, and whether the collector was on."""
    seen: list[tuple[bool, bool]] = []
    step = Engine.step

    def observed(self: Engine, now: float) -> Any:
        seen.append((collector._state.held, gc.isenabled()))
        return step(self, now)

    monkeypatch.setattr(Engine, "step", observed)
    return seen


@pytest.mark.usefixtures("collector_on", "nothing_frozen")
def test_a_turn_while_a_bulk_call_holds_its_objects_makes_no_collection_and_puts_the_collector_back(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn of the scheduler while a bulk call's hold is on runs with the collector off, and puts it back on: at
    the call's deadline a turn settles every topic at once, and the 50,000 errors it makes set off 280 collections,
    two of them full (40-60 ms in all; ``benchmarks/deadline.py``). The call's first request is held unanswered until
    its deadline; the turns before and after the hold run with the collector on."""
    seen = steps_seen(monkeypatch)
    broker = quota_broker()
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as client:
        client.create_topics([NewTopic("before", 1, 1)])["before"].result(10)
        broker.blackhole_next("CreateTopics", 1)
        pending = client.create_topics([NewTopic(name, 1, 1) for name in bulk_names("held")], timeout_ms=2000)
        assert {type(future.exception(30)).__name__ for future in pending.values()} == {"OutcomeUnknownError"}
        client.create_topics([NewTopic("after", 1, 1)])["after"].result(10)
    assert gc.isenabled()
    assert any(held for held, _ in seen), "no step while the hold was on"
    assert all(not on for held, on in seen if held), seen
    assert seen[0] == seen[-1] == (False, True), seen  # the calls before and after: no hold, the collector on


@pytest.mark.usefixtures("nothing_frozen")
def test_a_turn_while_a_bulk_call_holds_its_objects_leaves_a_collector_that_was_off_off(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = steps_seen(monkeypatch)
    broker = quota_broker()
    broker.blackhole_next("CreateTopics", 1)
    was = gc.isenabled()
    gc.disable()
    try:
        with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as client:
            pending = client.create_topics([NewTopic(name, 1, 1) for name in bulk_names("off")], timeout_ms=2000)
            assert all(future.exception(30) is not None for future in pending.values())
            assert not gc.isenabled()
        assert not any(on for _, on in seen)
    finally:
        if was:
            gc.enable()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.usefixtures("collector_on", "nothing_frozen")
def test_a_child_forked_while_a_turn_holds_the_collector_off_turns_it_on(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by review (helper 101): the turn's thread, which turns the collector on as it ends, does not exist in a
    child forked meanwhile (``multiprocessing``'s fork), whose collector then stayed off for good."""
    parked, go = threading.Event(), threading.Event()
    step = Engine.step

    def park(self: Engine, now: float) -> Any:
        if collector._state.held and not gc.isenabled() and not go.is_set():
            parked.set()  # a turn with the collector off, held here
            go.wait(30)
        return step(self, now)

    monkeypatch.setattr(Engine, "step", park)
    broker = quota_broker()
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as client:
        client.create_topics([NewTopic("before", 1, 1)])["before"].result(10)
        broker.blackhole_next("CreateTopics", 1)
        pending = client.create_topics([NewTopic(name, 1, 1) for name in bulk_names("fork")], timeout_ms=2000)
        try:
            assert parked.wait(30)
            pid = os.fork()
            if pid == 0:  # the child: out at once, saying whether its collector is on
                os._exit(0 if gc.isenabled() else 7)
            _, status = os.waitpid(pid, 0)
        finally:
            go.set()
        assert all(future.exception(30) is not None for future in pending.values())
    assert os.waitstatus_to_exitcode(status) == 0, "the child's collector was left off"
