"""The driver's reads (the cluster's metadata, every broker's views for wait_for_metadata) run on one reader thread
(``_driver/reader.py``), not on a thread per read; the engine alone records which reads are out (issue 39)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import BrokerFactory
from throttled_admin import NewPartitions, NewTopic, ThrottledAdminClient
from throttled_admin._driver.reader import Reader
from throttled_admin._driver.scheduler import Scheduler


def _note(ran: list[tuple[int, threading.Thread]], index: int) -> None:
    ran.append((index, threading.current_thread()))


def _hold(started: threading.Event, release: threading.Event) -> None:
    started.set()
    release.wait(5)


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


def test_a_clients_metadata_and_view_reads_share_one_thread(
    quota_broker: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grow (its cost needs a metadata read) and creates waiting for every broker's Metadata (view reads, more than
    one): every read runs on the same thread."""
    seen: list[threading.Thread] = []
    monkeypatch.setattr(Scheduler, "_read_metadata", _recording(Scheduler._read_metadata, seen))
    monkeypatch.setattr(Scheduler, "_read_views", _recording(Scheduler._read_views, seen))
    broker = quota_broker(num_brokers=3, metadata_lag_ms=300)
    with ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        for name in ("a", "b"):
            assert admin.create_topics([NewTopic(name, 1, 1)], wait_for_metadata=True)[name].exception(30) is None
        assert admin.create_partitions([NewPartitions("a", 2)])["a"].exception(30) is None
    assert len(seen) >= 3, seen
    assert len(set(seen)) == 1, f"{len(set(seen))} threads served {len(seen)} reads"
