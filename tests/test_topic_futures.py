"""Each topic's future has its own Condition, as every ``concurrent.futures.Future`` does.

``concurrent.futures.wait`` and ``as_completed`` lock the futures they are given in order of ``id(future)``: one
lock per future makes that one global order. Futures of a call that shared one Condition (an optimisation of
issue 21) broke it: two threads waiting on futures of the same two calls could take the two locks in opposite
orders and deadlock, and the scheduler's thread, settling one of those futures, then stopped every call of the
client (found by review: 4 runs of 4)."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, Future, wait

from tests.conftest import REPO
from throttled_admin import NewTopic, ThrottledAdminClient

WAITS = 20_000


def _crossing_pairs(admin: ThrottledAdminClient) -> tuple[tuple[Future[None], Future[None]], ...]:
    """(x of call A, y of call B) with id(x) < id(y), and (u of B, v of A) with id(u) < id(v): with a Condition
    per call, wait() on the first locks A then B, on the second B then A. Futures made and dropped in between
    interleave the two calls' futures in memory, as in any long-running program."""
    for round_ in range(20):
        dropped = admin.create_topics([NewTopic(f"old{round_}-{i}", 1, 1) for i in range(200)], timeout_ms=60000)
        for future in dropped.values():
            future.cancel()
        del dropped
        gc.collect()
        a = list(admin.create_topics([NewTopic(f"a{round_}-{i}", 1, 1) for i in range(50)], timeout_ms=60000).values())
        b = list(admin.create_topics([NewTopic(f"b{round_}-{i}", 1, 1) for i in range(50)], timeout_ms=60000).values())
        first = next(((x, y) for x in a for y in b if id(x) < id(y)), None)
        second = next(((u, v) for u in b for v in a if id(u) < id(v)), None)
        if first and second:
            return first, second
    raise AssertionError("no crossing pairs of futures found")


def _waits_on_crossing_pairs() -> None:
    """Run in a child process (a deadlock also stops the client's close(), so it cannot end in the test's own)."""
    with ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9", "log_level": 0}) as admin:
        pairs = _crossing_pairs(admin)
        done = [0, 0]

        def waits(pair: tuple[Future[None], Future[None]], index: int) -> None:
            for _ in range(WAITS):
                wait(list(pair), timeout=0, return_when=FIRST_COMPLETED)
                done[index] += 1

        threads = [threading.Thread(target=waits, args=(pair, i), daemon=True) for i, pair in enumerate(pairs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for future in (*pairs[0], *pairs[1]):
            future.cancel()
    print("waits", done)


def test_two_threads_waiting_on_futures_of_two_calls_never_deadlock() -> None:
    code = "from tests.test_topic_futures import _waits_on_crossing_pairs as run; run()"
    try:
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("deadlocked: two threads in concurrent.futures.wait() and the client stopped") from exc
    assert child.returncode == 0, child.stderr[-2000:]
    assert f"waits [{WAITS}, {WAITS}]" in child.stdout


def test_the_futures_of_one_call_have_conditions_of_their_own() -> None:
    with ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9", "log_level": 0}) as admin:
        futures = list(admin.create_topics([NewTopic("x", 1, 1), NewTopic("y", 1, 1)], timeout_ms=60000).values())
        assert futures[0]._condition is not futures[1]._condition  # type: ignore[attr-defined]
        for future in futures:
            future.cancel()
