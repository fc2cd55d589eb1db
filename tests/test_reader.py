"""The driver's reads (the cluster's metadata, every broker's views for wait_for_metadata) run on one reader thread
(``_driver/reader.py``), not on a thread per read; the engine alone records which reads are out (issue 39)."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.interrupts import interrupt_at, offsets
from tests.support import BrokerFactory
from throttled_admin import MutationQuota, NewPartitions, NewTopic, ThrottledAdminClient
from throttled_admin._driver.driver_loop import Served, driver_loop
from throttled_admin._driver.reader import Reader
from throttled_admin._driver.scheduler import Scheduler


def _note(ran: list[tuple[int, threading.Thread]], index: int) -> None:
    ran.append((index, threading.current_thread()))


def _hold(started: threading.Event, release: threading.Event, timeout_s: float = 5) -> None:
    started.set()
    release.wait(timeout_s)


def test_jobs_run_in_order_on_one_thread() -> None:
    reader = Reader("test-reader")
    ran: list[tuple[int, threading.Thread]] = []
    done = threading.Event()
    for index in range(5):
        assert reader.submit(functools.partial(_note, ran, index))
    assert reader.submit(done.set)
    assert done.wait(5)
    assert [index for index, _ in ran] == [0, 1, 2, 3, 4]
    assert len({thread for _, thread in ran}) == 1
    assert ran[0][1].name == "test-reader"
    assert reader.close(1.0)


def test_close_waits_for_the_running_job_and_runs_no_more() -> None:
    reader = Reader()
    started, release, later = threading.Event(), threading.Event(), threading.Event()
    reader.submit(functools.partial(_hold, started, release))
    reader.submit(later.set)
    assert started.wait(5)
    assert not reader.close(0.05)  # the running job holds it
    release.set()
    assert reader.close(5)
    assert not later.is_set()  # dropped at close
    assert not reader.submit(later.set)


def test_ctrl_c_as_a_job_starts_the_thread_leaves_one_thread_at_most() -> None:
    """Found by review (helper 59): a client's first call starts the views reader's thread on the caller's thread
    (``quorum_watch``'s first read); Ctrl-C just after ``start`` returned left no thread recorded, and the next job
    started a second one beside it, two jobs at once on connections that are not thread-safe. At each point a signal
    can land in ``submit``: afterwards one worker at most, jobs never two at once, and the next job runs."""
    for offset in offsets(Reader.submit):
        reader = Reader(f"sweep-{offset}")
        running: list[int] = []
        overlapped: list[bool] = []
        release = threading.Event()

        def job(
            running: list[int] = running, overlapped: list[bool] = overlapped, release: threading.Event = release
        ) -> None:
            running.append(1)
            overlapped.append(len(running) > 1)
            release.wait(0.05)
            running.pop()

        with interrupt_at(Reader.submit.__code__, offset), contextlib.suppress(KeyboardInterrupt):
            reader.submit(job)
        done = threading.Event()
        assert reader.submit(job)
        assert reader.submit(done.set), offset
        assert done.wait(5), offset
        workers = [t for t in threading.enumerate() if t.name == f"sweep-{offset}"]
        assert len(workers) <= 1, (offset, workers)
        assert not any(overlapped), offset
        assert reader.close(1.0), offset


def test_a_failing_job_does_not_stop_the_reader(caplog: pytest.LogCaptureFixture) -> None:
    reader = Reader()
    done = threading.Event()

    def fails() -> None:
        raise ValueError("boom")

    reader.submit(fails)
    reader.submit(done.set)
    assert done.wait(5)
    assert "metadata read failed" in caplog.text
    reader.close(1.0)


def _recording(method: Callable[..., Any], seen: list[threading.Thread]) -> Callable[..., Any]:
    def wrapper(self: Scheduler, *args: Any) -> Any:
        seen.append(threading.current_thread())
        return method(self, *args)

    return wrapper


def test_a_clients_reads_of_each_kind_share_one_thread(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Grows (their cost needs a metadata read) and creates waiting for every broker's Metadata (view reads): the reads
    of each kind run on one thread of their own, not on a thread per read."""
    metadata: list[threading.Thread] = []
    views: list[threading.Thread] = []
    monkeypatch.setattr(Scheduler, "_read_metadata", _recording(Scheduler._read_metadata, metadata))
    monkeypatch.setattr(Scheduler, "_read_views", _recording(Scheduler._read_views, views))
    broker = quota_broker(num_brokers=3, metadata_lag_ms=300)
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=1000, burst=1000)) as admin:  # paced: costs read
        for name in ("a", "b"):
            assert admin.create_topics([NewTopic(name, 1, 1)], wait_for_metadata=True)[name].exception(30) is None
        for count in (2, 3):
            assert admin.create_partitions([NewPartitions("a", count)])["a"].exception(30) is None
    assert len(metadata) >= 2, metadata
    assert len(views) >= 2, views
    assert len(set(metadata)) == 1, f"{len(set(metadata))} threads served {len(metadata)} metadata reads"
    assert len(set(views)) == 1, f"{len(set(views))} threads served {len(views)} view reads"
    assert set(metadata).isdisjoint(views)


@dataclass
class _HeldViews:
    reading: threading.Event  # a read has begun
    release: threading.Event  # ... and goes on once this is set


@pytest.fixture
def slow_views(monkeypatch: pytest.MonkeyPatch) -> Iterator[_HeldViews]:
    """Every broker-views read (wait_for_metadata) hangs, as on a broker that does not answer, until released."""
    held, original = _HeldViews(threading.Event(), threading.Event()), Scheduler._read_views

    def hanging(self: Scheduler, names: list[str]) -> None:
        held.reading.set()
        held.release.wait(5)  # _METADATA_TIMEOUT_S: what a read of a broker that does not answer takes
        original(self, names)

    monkeypatch.setattr(Scheduler, "_read_views", hanging)
    yield held
    held.release.set()


def test_a_slow_views_read_does_not_hold_back_another_calls_metadata_read(
    quota_broker: BrokerFactory, slow_views: _HeldViews
) -> None:
    """A paced delete needs a metadata read (its cost). While a wait_for_metadata create's read of every broker hangs
    on a slow broker, the delete is sent at once (found by review: with one reader thread for both kinds, the metadata
    read waited behind the views read and the delete ended "not sent" at its 3 s deadline)."""
    broker = quota_broker()
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=50, burst=50)) as admin:
        assert admin.create_topics([NewTopic("gone", 1, 1)])["gone"].exception(30) is None
        waiting = admin.create_topics([NewTopic("visible", 1, 1)], wait_for_metadata=True)
        delete = admin.delete_topics(["gone"], timeout_ms=3000)["gone"]
        assert delete.exception(10) is None
        slow_views.release.set()
        assert waiting["visible"].exception(30) is None


def test_a_reads_result_takes_its_turn_on_the_reader_thread_while_the_loop_serves_another_client(
    quota_broker: BrokerFactory,
) -> None:
    """Issue 40: a wait_for_metadata create is sent once every broker's ids of its name are read, and settled once
    every broker shows it; a paced grow is sent once a metadata read gave its cost. The reader thread that read them
    takes the turn that sends it (and the one that settles it), instead of waking the process's one loop thread and
    waiting in its queue: in a fleet's start-up that queue held an entity's first create 0.15 s (median; 0.5 s for one
    in ten) after its read. Here the loop thread serves another client's turn throughout, and both are sent, applied
    and settled all the same (before, neither was sent while the loop was held)."""
    broker = quota_broker()
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota(rate=1000, burst=1000)) as admin:
        assert admin.create_topics([NewTopic("first", 1, 1)])["first"].exception(30) is None  # first contact made
        serving, release = threading.Event(), threading.Event()
        loop = driver_loop()
        held = Served(loop, functools.partial(_hold, serving, release, 30))
        loop.add(held)
        held.wake()
        try:
            assert serving.wait(10)
            visible = admin.create_topics([NewTopic("visible", 1, 1)], wait_for_metadata=True)["visible"]
            assert visible.exception(10) is None
            assert admin.create_partitions([NewPartitions("first", 2)])["first"].exception(10) is None
            assert not held.finished.is_set()  # (the loop was held throughout)
        finally:
            release.set()
        assert held.finished.wait(10)
    assert broker.topics() == {"first": 2, "visible": 1}


def test_after_a_reader_threads_send_the_loop_plans_again_to_serve_callbacks_while_it_is_in_flight(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch, slow_views: _HeldViews
) -> None:
    """Found by review (helper 70): while a create waits for its ids' read, the loop thread sleeps a second between
    serves of librdkafka's callbacks; the reader thread's turn that then sends the create left it asleep, so an
    error_cb (an authentication failure settles the request in flight) came up to a second late instead of within
    50 ms. Now the send wakes the loop, whose next serve plans the 50 ms cadence. The create's answer is held by the
    broker (``blackhole_next``) so that the request stays in flight."""
    reading, release = slow_views.reading, slow_views.release
    broker = quota_broker()
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        assert admin.create_topics([NewTopic("first", 1, 1)])["first"].exception(30) is None  # first contact made
        scheduler = admin._scheduler
        assert scheduler is not None
        waiting, woken, planned = threading.Event(), threading.Event(), threading.Event()
        wake, next_due = Served.wake, scheduler._next_due

        def recorded_wake(served: Served) -> None:
            if served is scheduler._served and release.is_set():
                woken.set()
            wake(served)

        def recorded_plan() -> float:
            due = next_due()
            if woken.is_set():
                planned.set()
            elif reading.is_set() and not release.is_set():
                waiting.set()
            return due

        monkeypatch.setattr(Served, "wake", recorded_wake)
        monkeypatch.setattr(scheduler, "_next_due", recorded_plan)
        in_flight = broker.blackhole_next("CreateTopics")
        try:
            visible = admin.create_topics([NewTopic("visible", 1, 1)], wait_for_metadata=True)["visible"]
            assert reading.wait(10)  # the create waits for its ids' read
            assert waiting.wait(10)  # the loop has planned its next serve meanwhile: a second on
            release.set()  # the read ends: its turn, on the reader thread, sends the create
            assert in_flight.wait(10)
            assert woken.wait(10)  # the loop was woken after the send (before, it slept on)
            assert planned.wait(10)  # and planned its next serve of the callbacks
        finally:
            release.set()
        assert not visible.done()
