"""A caller waiting on a topic's future (``result()``, ``exception()``) while its thread may take the scheduler's
turns (assist), against QuotaBroker over loopback: ``cancel()`` wakes it, its timeout holds while another thread
takes a turn, and Ctrl-C during its turn leaves no future pending after ``close()``."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka.admin import NewTopic

from tests.interrupts import sigint_handler
from tests.support import BrokerFactory, wait_until
from throttled_admin import ThrottledAdminClient
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.scheduler import Scheduler
from throttled_admin.testing import QuotaBroker


def _client(broker: QuotaBroker) -> ThrottledAdminClient:
    return ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})


def _scheduler(admin: ThrottledAdminClient) -> Scheduler:
    scheduler = admin._scheduler
    assert isinstance(scheduler, Scheduler)
    return scheduler


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Event, list[BaseException | None]]:
    """Run ``fn`` on a daemon thread; the event is set when it returns or raises (its exception in the list)."""
    finished = threading.Event()
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)
        finally:
            finished.set()

    threading.Thread(target=run, daemon=True).start()
    return finished, outcome


# -- cancel() wakes a caller waiting in result() (assist) ----------------------------------------------------------


def test_cancel_wakes_a_thread_waiting_in_result(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with _client(broker) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)  # reached: a call is sent from submit()
        broker.blackhole_next("CreateTopics")  # the next request stays in flight: the second call is queued
        admin.create_topics([NewTopic("held", 1, 1)], request_timeout=30)
        (queued,) = admin.create_topics([NewTopic("queued", 1, 1)]).values()
        finished, outcome = _in_thread(queued.result)  # no timeout, as most callers write it
        assert wait_until(lambda: _scheduler(admin)._assisting == 1, timeout_s=5)
        assert queued.cancel()  # not sent: withdrawn
        woke = finished.wait(2.0)  # a plain Future's result() returns at once here
        assert woke, "result() still waiting 2 s after its future was cancelled"
        assert isinstance(outcome[0], CancelledError)


def test_cancel_wakes_a_thread_waiting_in_exception_with_a_timeout(quota_broker: BrokerFactory) -> None:
    broker = quota_broker()
    with _client(broker) as admin:
        admin.create_topics([NewTopic("warm", 1, 1)])["warm"].result(30)
        broker.blackhole_next("CreateTopics")
        admin.create_topics([NewTopic("held", 1, 1)], request_timeout=30)
        (queued,) = admin.create_topics([NewTopic("queued", 1, 1)]).values()
        finished, outcome = _in_thread(lambda: queued.exception(timeout=20))
        assert wait_until(lambda: _scheduler(admin)._assisting == 1, timeout_s=5)
        assert queued.cancel()
        assert finished.wait(2.0), "exception(timeout=20) still waiting 2 s after its future was cancelled"
        assert isinstance(outcome[0], CancelledError)


# -- result(timeout) is honoured while another thread takes a turn -----------------------------------------------


def test_result_with_a_timeout_does_not_wait_for_another_threads_turn(quota_broker: BrokerFactory) -> None:
    """A long turn is what the scheduler's thread (or another waiting caller) does when it settles a 1,000-topic
    response whose futures have done-callbacks (~70-110 ms on this machine), and answers arriving back to back make
    the caller take turn after turn: measured, ``result(timeout=0.05)`` returned after 0.47 s and 1.6 s on bulk
    calls over QuotaBroker. Here a turn is held for as long as the test wants, so the mechanism is shown
    deterministically."""
    broker = quota_broker()
    with _client(broker) as admin:
        (warm_up,) = admin.create_topics([NewTopic("warm-up", 1, 1)]).values()
        warm_up.result(30)  # the client has reached the broker: a call's own turn sends at once
        scheduler = _scheduler(admin)
        broker.delay_next("CreateTopics", 0.3)  # the answer comes once the turn below is held
        (future,) = admin.create_topics([NewTopic("t", 1, 1)]).values()  # sent by the caller's own turn
        assert scheduler._turns.take(5)  # another thread's turn in progress (the scheduler's own thread waits too)
        try:
            finished, outcome = _in_thread(lambda: future.result(timeout=0.2))
            assert wait_until(lambda: bool(scheduler._arrived), timeout_s=5)  # its answer is in: a turn is needed
            returned = finished.wait(2.0)
        finally:
            scheduler._turns.release()
        assert returned, "result(timeout=0.2) still waiting after 2 s (it waits for _turn without its timeout)"
        assert outcome
        assert isinstance(outcome[0], FutureTimeout)


# -- Ctrl-C on a caller's thread that is taking a turn ------------------------------------------------------------


class _Interrupted(BaseException):
    """What the test's SIGINT handler raises: a KeyboardInterrupt, without pytest's handling of one."""


def _interrupt(signum: int, frame: object) -> None:
    raise _Interrupted


def test_ctrl_c_in_result_leaves_no_future_pending_after_close(quota_broker: BrokerFactory) -> None:
    """Ctrl-C arrives while the main thread, waiting in result(), settles the answer's topics (the bulk case: a
    caller waiting for the last topic of a 50,000-topic call spends most of its wait settling other topics)."""
    broker = quota_broker()
    broker.set_controller_latency(0.3)  # the caller is surely waiting in result() when the answer arrives
    with sigint_handler(_interrupt):
        admin = _client(broker)
        try:
            for attempt in range(5):  # the scheduler's thread may take the turn itself (its 50 ms poll): again
                fired: list[object] = []

                def ctrl_c(future: object, fired: list[object] = fired) -> None:
                    if threading.current_thread() is threading.main_thread() and not fired:
                        fired.append(future)
                        signal.raise_signal(signal.SIGINT)

                futures = list(admin.create_topics([NewTopic(f"k{attempt}-{i}", 1, 1) for i in range(5)]).values())
                for future in futures:
                    assert isinstance(future, TopicFuture)
                    future.add_settled_callback(ctrl_c)
                try:
                    futures[-1].result(timeout=30)
                except _Interrupted:
                    break
            else:  # the caller's thread never settled a topic: no turn of its own for Ctrl-C to cut short
                return
        finally:
            admin.close()  # what `with ThrottledAdminClient(...)` does on the way out of the interrupt
    pending = [future for future in futures if not future.done()]
    assert not pending, f"{len(pending)} of {len(futures)} futures pending after close()"
