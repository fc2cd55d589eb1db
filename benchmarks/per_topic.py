"""Where a call's time per topic goes, stage by stage, with no broker and no threads in the way.

Each stage of a ``create_topics`` call of ``--topics`` one-partition topics is run ``--repeat`` times on its
own, as the client runs it, and timed with ``time.perf_counter`` (best of ``--rounds``, to keep other processes'
load out): validation; the per-topic objects (its plain values and its future); the engine making its records and
composing the request; the
futures librdkafka's answer goes through; the engine settling the answer, or the call's deadline with the request
unanswered; resolving the caller's futures; the
metric events of one request and one call. The end-to-end cost, with librdkafka, the broker and the thread
hand-offs, is what ``benchmarks/overhead.py`` measures.

    .venv/bin/python benchmarks/per_topic.py               # 50 topics
    .venv/bin/python benchmarks/per_topic.py --topics 1
    PYTHONPATH=<a checkout of c6f558c> .venv/bin/python benchmarks/per_topic.py   # the code before issue 21

The engine's stages are net of making the engine and the objects (timed on their own and subtracted).
"""

from __future__ import annotations

import argparse
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from _common import best_us, markdown_table
from confluent_kafka.admin import AdminClient

import throttled_admin._client
from throttled_admin import NewTopic
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.secret_hider import SecretHider
from throttled_admin._driver.user_code import CallbackRunner, SerialRunner
from throttled_admin._engine import CREATE_TOPICS, CallSpec, Engine, RequestKind, RetryBackoff, TopicSpec
from throttled_admin._telemetry.metrics import ClientMetrics
from throttled_admin._validation import check_new_topics

try:
    from throttled_admin._client import _Answering
except ImportError:  # before issue 39: a Future per request, and a done-callback (``_answer_of``)
    _Answering = None  # type: ignore[assignment,misc]
# None before issue 21 (AdminClient's futures, one per topic), and since issue 39
_answer_of: Any = getattr(throttled_admin._client, "_answer_of", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.topics
    names = [f"t.{i}" for i in range(n)]
    new_topics = [NewTopic(name, 1, 1) for name in names]
    items = check_new_topics(new_topics)
    runner = CallbackRunner()
    kind = RequestKind(CREATE_TOPICS, False)

    def new_call() -> CallSpec:
        now = time.monotonic()
        return CallSpec(kind, now + 60, 60000, True, None, None, now)

    futures: list[Any] = []  # the driver's futures of the last call made (the engine's topics carry none)

    def objects() -> list[TopicSpec]:
        """What the client and the driver make per topic: its plain values for the engine, and its future."""
        topics: list[TopicSpec] = []
        futures.clear()
        for name, item in zip(names, items, strict=True):
            future = _future(runner)
            _bind(future, name)
            topics.append((name, item, 1, 2))
            futures.append(future)
        return topics

    def new_engine() -> Engine:
        engine = Engine(pacer=None, backoff=RetryBackoff())
        now = time.monotonic()
        engine.on_probe(True, now)
        for _ in range(16):  # a client that has been answered before: the round-trip floor has its samples
            engine._learned.round_trip.observe(n, 0.002, now)
        return engine

    def engine_with_call() -> tuple[Engine, CallSpec]:
        engine = Engine(pacer=None, backoff=RetryBackoff())
        now = time.monotonic()
        engine.on_probe(True, now)
        for _ in range(16):  # a client that has been answered before: the round-trip floor has its samples
            engine._learned.round_trip.observe(n, 0.002, now)
        call = new_call()
        engine.submit(1, call, objects())  # the engine makes its records of the call and its topics
        return engine, call

    def compose() -> None:
        engine, _ = engine_with_call()
        out = engine.step(time.monotonic())
        assert out.send is not None

    answer = dict.fromkeys(names)

    def settle_in_engine() -> None:
        engine, _ = engine_with_call()
        out = engine.step(time.monotonic())
        assert out.send is not None
        engine.on_results(out.send.request_id, dict(answer), time.monotonic())
        settled = engine.step(time.monotonic()).settle
        assert len(settled) == n

    def deadline_in_engine() -> None:
        """The call's deadline comes with its request unanswered: every topic is told "outcome unknown"."""
        engine, call = engine_with_call()
        out = engine.step(time.monotonic())
        assert out.send is not None
        settled = engine.step(call.deadline).settle
        assert len(settled) == n

    def librdkafka_answer_ours() -> None:
        got: list[Any] = []
        _Answering(got.append, SecretHider({})).set_result(dict.fromkeys(names))

    def librdkafka_futures_ours() -> None:
        request: Future[Any] = Future()
        request.set_running_or_notify_cancel()
        got: list[Any] = []
        request.add_done_callback(lambda f: _answer_of(got.append, f))
        request.set_result(dict.fromkeys(names))

    lock = threading.Condition()
    arrived: list[Any] = []

    def librdkafka_futures_per_topic() -> None:
        """What confluent-kafka's AdminClient wrapper does, with a done-callback per topic taking a lock (before)."""
        f, futmap = AdminClient._make_futures(names, None, AdminClient._make_topics_result)
        for name, future in futmap.items():
            future.add_done_callback(functools.partial(_hand_over, lock, arrived, name))
        f.set_result(dict.fromkeys(names))
        arrived.clear()

    def resolve() -> None:
        objects()
        for future in futures:
            future.set_result(None)

    exporter = SerialRunner("per-topic-exports")
    metrics = ClientMetrics(client_id="per-topic", exporter=exporter)

    def metric_events() -> None:
        metrics.record_throttle(None, 0.0)
        metrics.record_request("CreateTopics", n, n)
        metrics.record_call("CreateTopics", 0.001, None)
        getattr(metrics, "flush", lambda: None)()

    def us(stage: Callable[[], Any]) -> float:
        return best_us(stage, args.repeat, args.rounds)

    made = us(objects)
    setup = us(new_engine)
    composed = us(compose)
    settled = us(settle_in_engine)
    stages: list[tuple[str, float]] = [
        ("validation (check_new_topics: names, snapshots)", us(lambda: check_new_topics(new_topics))),
        ("objects: a topic's plain values and its future", made),
        ("engine: submit (its records) and compose the request", composed - setup - made),
    ]
    if _Answering is not None:
        stages.append(("librdkafka's answer: the request's own answer object (now)", us(librdkafka_answer_ours)))
    elif _answer_of is not None:
        stages.append(("librdkafka's answer: one future per request (issue 21)", us(librdkafka_futures_ours)))
    stages += [
        (
            "librdkafka's answer: AdminClient's future per topic, a callback each (before)",
            us(librdkafka_futures_per_topic),
        ),
        ("engine: take the answer, classify, settle", settled - composed),
        ("engine: settle at the deadline, the request unanswered", us(deadline_in_engine) - composed),
        ("resolving the caller's futures", us(resolve) - made),
        ("metric events of one request and one call (per call)", us(metric_events)),
    ]
    rows = [[name, f"{value:.1f} us", f"{value / n:.2f} us"] for name, value in stages]
    metrics.close()
    exporter.close(time.monotonic() + 2)
    runner.close(time.monotonic() + 2)
    print(f"{n} topics per call, best of {args.rounds} rounds of {args.repeat}\n")
    print(markdown_table(["stage", "per call", "per topic"], rows))


def _future(runner: CallbackRunner) -> TopicFuture:
    return TopicFuture(runner)  # its Condition made on first need (issue 21); before, made in __init__


def _bind(future: TopicFuture, name: str) -> None:
    try:
        future.bind_withdraw(lambda _: False, name)  # type: ignore[call-arg,arg-type,unused-ignore]
    except TypeError:  # before issue 21
        future.bind_withdraw(lambda: False)  # type: ignore[call-arg,arg-type,misc,unused-ignore]


def _hand_over(lock: threading.Condition, arrived: list[Any], name: str, future: Future[None]) -> None:
    exc = future.exception()
    with lock:
        arrived.append((name, exc))
        lock.notify_all()


if __name__ == "__main__":
    main()
