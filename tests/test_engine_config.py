"""The engine's own settings (``_engine/config.py``): a test sets its limits, its back-off's seed and sees its ids
through ``EngineConfig``, with no module global to patch."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from tests.engine_records import submit_call
from throttled_admin._engine import (
    CREATE_TOPICS,
    CallSpec,
    Engine,
    EngineConfig,
    RequestKind,
    RetryBackoff,
    Send,
    TopicRef,
)
from throttled_admin._engine.work import Call, Topic

REQUEST_TIMED_OUT = KafkaException(KafkaError(KafkaError.REQUEST_TIMED_OUT))  # nothing applied: retried


def engine_with(names: list[str], config: EngineConfig) -> tuple[Engine, Call, list[Topic]]:
    engine = Engine(pacer=None, backoff=RetryBackoff(), config=config)  # retry.backoff.ms 100, jitter 20 %
    engine.on_probe(True, 0.0)
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30000, True, None, None, started_at=0.0)
    call, topics = submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2) for name in names])
    return engine, call, topics


def retried_after(seed: int) -> list[float]:
    """The back-offs of five transient failures in a row of one topic."""
    engine, _, [topic] = engine_with(["a"], EngineConfig(seed=seed))
    waits, now = [], 0.0
    for _ in range(5):
        out = engine.step(now)
        assert out.send is not None
        now += 0.01
        engine.on_results(out.send.request_id, {"a": REQUEST_TIMED_OUT}, now)
        engine.step(now)
        waits.append(topic.not_before - now)
        now = topic.not_before
    return waits


def test_the_seed_makes_the_back_offs_jitter_repeat() -> None:
    waits = retried_after(7)
    assert retried_after(7) == waits
    assert retried_after(8) != waits
    assert all(0.8 <= wait / min(0.1 * 2**n, 1.0) <= 1.2 for n, wait in enumerate(waits))  # retry.backoff.max.ms 1000


def test_the_topics_per_request_and_the_records_cap_are_the_configs() -> None:
    names = [f"t{i}" for i in range(5)]
    engine, _, _ = engine_with(names, EngineConfig(max_topics_per_request=2))
    out = engine.step(0.0)
    assert out.send is not None
    assert out.send.names == ["t0", "t1"]
    engine, _, _ = engine_with(names, EngineConfig(max_records_per_request=6))  # 2 records a topic
    assert engine.status.max_records_per_request == 6
    out = engine.step(0.0)
    assert out.send is not None
    assert out.send.names == ["t0", "t1", "t2"]


def test_each_engine_numbers_its_requests_from_one_and_names_topics_by_the_drivers_call_ids() -> None:
    for _ in range(2):
        engine = Engine(pacer=None, backoff=RetryBackoff(), config=EngineConfig())
        engine.on_probe(True, 0.0)
        spec = CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30000, True, None, None, started_at=0.0)
        engine.submit(41, spec, [("a", NewTopic("a", 1, 1), 1, 2)])
        out = engine.step(0.0)
        assert out.send is not None
        assert (out.send.topics, out.send.request_id) == ((TopicRef(41, "a"),), 1)


def test_a_bulk_call_goes_in_requests_of_the_sweet_spot_not_of_a_thousand() -> None:
    """Issue 40: 10,000 one-partition topics went in ten requests of 1,000, one at a time (rule b), each paying
    Kafka's per-request commit and the answer-to-write gap. Requests of 4,000 topics (8,000 records, under the
    controller's cap of 10,000): Kafka 4.4 spends about 90 ms of CPU a request besides its topics' own
    (``_engine/config.MAX_TOPICS_PER_REQUEST``); larger ones pay more of librdkafka's parse, which grows with the
    square of a response's size."""
    names = [f"t{i}" for i in range(10_000)]
    engine, _, _ = engine_with(names, EngineConfig())
    sizes, now = [], 0.0
    while sends := [action for action in engine.step(now).actions if isinstance(action, Send)]:
        now += 0.01
        for send in sends:  # the first lane's, and the second's beside it (``lanes``)
            sizes.append(len(send.names))
            engine.on_results(send.request_id, dict.fromkeys(send.names), now)
    # requests of 4,000 (the second connection's probe, not answered here, keeps them on the first: ``lanes``)
    assert sizes == [4000, 4000, 2000]
