"""Issue 40: Kafka 4's batch cap recognised by more than its words, and never split below what a cluster accepts,
on simulated time.

Kafka 4.5 makes the cap a setting (KAFKA-20976) and its refusal's words may change. Was: a refusal was the cap's
only by Kafka 4.4's three messages (any other POLICY_VIOLATION of every topic failed the whole call), and a refused
request halved the limit below its own size even after a larger request was accepted (a 10,001-record refusal after
a 10,000-record acceptance left 5,000)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewPartitions, NewTopic

from tests.engine_records import submit_call
from throttled_admin._engine import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    SECOND,
    CallSpec,
    Engine,
    Outbox,
    Probe,
    RequestKind,
    RetryBackoff,
    Send,
)
from throttled_admin._engine.batch_cap import PROBE_AFTER
from throttled_admin._engine.config import EngineConfig

BATCH_CAP = KafkaException(
    KafkaError(KafkaError.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
)
# a cap refusal in words the engine has never seen (as Kafka 4.5's may be)
NEW_WORDS = KafkaException(
    KafkaError(KafkaError.POLICY_VIOLATION, "Request makes 32 records, over max.records.per.user.op (10).")
)
POLICY = KafkaException(KafkaError(KafkaError.POLICY_VIOLATION, "Topic name 'x' is not allowed by the policy"))
OTHER_POLICY = KafkaException(KafkaError(KafkaError.POLICY_VIOLATION, "Replication factor 1 is not allowed"))


def engine(config: EngineConfig | None = None) -> Engine:
    engine = Engine(
        pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0), config=config or EngineConfig()
    )
    engine.on_probe(True, 0.0)
    return engine


def submit(engine: Engine, partitions: dict[str, int], now: float) -> Outbox:
    """A create of these topics (NewTopic(name, partitions, 1) makes 1 + partitions records)."""
    spec = CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30_000, True, None, None, started_at=now)
    submit_call(engine, spec, [(n, NewTopic(n, p, 1), p, 1 + p) for n, p in partitions.items()])
    return engine.step(now)


def answer(engine: Engine, out: Outbox, results: dict[str, BaseException | None], now: float) -> Outbox:
    assert out.send is not None
    assert set(results) == {t.name for t in out.send.topics}
    engine.on_results(out.send.request_id, results, now)
    return engine.step(now)


def run(engine: Engine, out: Outbox, answer_of: dict[str, BaseException | None]) -> tuple[list[int], dict[str, object]]:
    """Answer every request with ``answer_of`` per topic until none is left: the sizes sent, and each outcome."""
    sizes: list[int] = []
    settled: dict[str, object] = {}
    now = 0.0
    while out.send is not None:
        now += 0.01
        sizes.append(len(out.send.topics))
        out = answer(engine, out, {t.name: answer_of[t.name] for t in out.send.topics}, now)
        settled.update({topic.name: exc for topic, exc in out.settle})
    return sizes, settled


def test_a_refusal_of_every_topic_alike_in_new_words_is_split_and_the_cap_learned() -> None:
    names = {f"t{i}": 3 for i in range(8)}  # 4 records each, 32 in all
    cap = engine()
    out = answer(cap, submit(cap, names, 0.0), dict.fromkeys(names, NEW_WORDS), 0.01)
    assert not out.settle  # was: every topic failed with the refusal
    assert cap.status.max_records_per_request == 16
    sizes, settled = run(cap, out, dict.fromkeys(names, None))
    assert sizes == [4, 4]
    assert settled == dict.fromkeys(names)


def test_a_policy_refusing_every_topic_alike_costs_a_few_requests_and_each_topic_gets_its_error() -> None:
    names = {f"t{i}": 1 for i in range(4)}  # 2 records each
    cap = engine()
    sizes, settled = run(cap, submit(cap, names, 0.0), dict.fromkeys(names, POLICY))
    # halved down to a lone topic, refused alike: the policy's words, not the cap's; the rest go whole again
    assert sizes == [4, 2, 1, 3]
    assert settled == dict.fromkeys(names, POLICY)


def test_a_policy_refusing_every_topic_alike_leaves_the_limit_as_it_was() -> None:
    """Was: the shape's cuts stayed, so a client that met such a policy once (before any request was accepted)
    sent one topic per request for the rest of its life."""
    names = {f"t{i}": 1 for i in range(4)}
    cap = engine()
    run(cap, submit(cap, names, 0.0), dict.fromkeys(names, POLICY))
    assert cap.status.max_records_per_request == 10_000
    later = {f"u{i}": 1 for i in range(4)}
    sizes, settled = run(cap, submit(cap, later, 1.0), dict.fromkeys(later, POLICY))
    assert sizes == [4]  # its words are known to be a policy's: each topic's own answer at once
    assert settled == dict.fromkeys(later, POLICY)


def test_a_refusal_alike_no_larger_than_a_request_accepted_is_each_topics_own_answer() -> None:
    cap = engine()
    sizes, settled = run(cap, submit(cap, {"a": 1, "b": 1}, 0.0), {"a": None, "b": None})
    assert (sizes, settled) == ([2], {"a": None, "b": None})
    out = answer(cap, submit(cap, {"c": 1, "d": 1}, 1.0), {"c": POLICY, "d": POLICY}, 1.01)
    assert {t.name: exc for t, exc in out.settle} == {"c": POLICY, "d": POLICY}
    assert out.send is None
    assert cap.status.max_records_per_request == 10_000


@pytest.mark.parametrize(
    "results",
    [{"a": POLICY, "b": None}, {"a": POLICY, "b": OTHER_POLICY}, {"a": NEW_WORDS, "b": None}],
    ids=["some applied", "other words", "new words, some applied"],
)
def test_a_policy_refusing_some_topics_is_each_topics_own_answer(results: dict[str, BaseException | None]) -> None:
    cap = engine()
    out = answer(cap, submit(cap, {"a": 1, "b": 1}, 0.0), results, 0.01)
    assert {t.name: exc for t, exc in out.settle} == results
    assert out.send is None
    assert cap.status.max_records_per_request == 10_000


def test_a_lone_topic_refused_in_new_words_gets_the_brokers_error() -> None:
    cap = engine()
    out = answer(cap, submit(cap, {"big": 20_000}, 0.0), {"big": NEW_WORDS}, 0.01)
    assert [exc for _, exc in out.settle] == [NEW_WORDS]
    assert cap.status.max_records_per_request == 10_000


def test_a_refusal_just_above_a_request_accepted_never_splits_below_it() -> None:
    cap = engine()
    run(cap, submit(cap, {"a": 4999, "b": 4999}, 0.0), {"a": None, "b": None})  # 10,000 records accepted
    assert cap.status.max_records_per_request == 10_000
    cap._learned.cap.limit = 20_000  # as if the cluster's cap were larger (a cluster of Kafka 4.5's setting)
    out = answer(cap, submit(cap, {"c": 4999, "d": 5000}, 1.0), {"c": BATCH_CAP, "d": BATCH_CAP}, 1.01)  # 10,001
    assert cap.status.max_records_per_request == 10_000  # was 5,000: below a request the cluster accepted
    assert out.send is not None


def test_a_lone_topic_accepted_above_the_limit_raises_it() -> None:
    """Found by the model's random runs ('limit 3 below 5 accepted'): a request of 7 records (one topic's count a
    guess) refused in the cap's words halved the limit to 3; a topic of 5 records then went alone and was applied.
    The cluster accepts 5: the limit rises to it (it stayed at 3, splitting below what the cluster accepts)."""
    cap = engine()
    out = answer(cap, submit(cap, {"d": 4, "a": 1}, 0.0), {"d": BATCH_CAP, "a": BATCH_CAP}, 0.01)  # 7 records
    assert cap.status.max_records_per_request == 3
    run(cap, out, {"d": None, "a": None})
    assert cap.status.max_records_per_request == 5


def test_a_cap_refusal_in_its_words_at_a_size_once_accepted_halves_the_limit() -> None:
    """The cap was lowered since (a setting in Kafka 4.5): what was accepted no longer holds."""
    cap = engine()
    names = {f"t{i}": 1 for i in range(8)}  # 16 records
    run(cap, submit(cap, names, 0.0), dict.fromkeys(names, None))
    later = {f"u{i}": 1 for i in range(8)}
    out = answer(cap, submit(cap, later, 1.0), dict.fromkeys(later, BATCH_CAP), 1.01)
    assert cap.status.max_records_per_request == 8
    assert out.send is not None
    assert len(out.send.topics) == 4


def _cluster(cap: Engine, out: Outbox, records_cap: int, records: dict[str, int], now: float) -> dict[str, object]:
    """Answer as a cluster whose cap (``records_cap`` records a request) refuses in new words: each outcome."""
    settled: dict[str, object] = {}
    while out.send is not None:
        now += 0.01
        names = [t.name for t in out.send.topics]
        over = sum(records[n] for n in names) > records_cap
        out = answer(cap, out, dict.fromkeys(names, NEW_WORDS if over else None), now)
        settled.update({topic.name: exc for topic, exc in out.settle})
    return settled


def test_a_cap_lowered_in_words_learned_by_shape_is_followed_below_what_was_accepted() -> None:
    """Found by review: a cap in new words, learned by its shape, then lowered (Kafka 4.5's setting). A refusal in
    those words at or below the largest request accepted was taken for each topic's own answer, and every topic of
    every later call of that size failed with it, for the client's life."""
    cap = engine()
    first = {f"a{i}": 99 for i in range(60)}  # 100 records each
    records = dict.fromkeys(first, 100)
    assert _cluster(cap, submit(cap, first, 0.0), 1_000, records, 0.0) == dict.fromkeys(first)
    later = {f"b{i}": 99 for i in range(6)}  # 600 records: below what the cap of 1,000 accepted
    records |= dict.fromkeys(later, 100)
    assert _cluster(cap, submit(cap, later, 1.0), 300, records, 1.0) == dict.fromkeys(later)  # lowered to 300


def test_a_lone_topic_over_a_cap_in_new_words_leaves_the_words_the_caps() -> None:
    """Found by review: a lone topic larger than the cap is refused alone in the cap's new words (rightly: it cannot
    be split). It made those words a policy's and put the limit back to 10,000: the next call of 30 topics (3,000
    records) was refused whole and every topic failed, unsplit. A lone topic proves the words a policy's only when no
    larger than the limit the engine keeps (a request that size may pass the cap)."""
    cap = engine()
    first = {f"a{i}": 99 for i in range(60)}
    records = dict.fromkeys(first, 100) | {"huge": 2_000}
    _cluster(cap, submit(cap, first, 0.0), 1_000, records, 0.0)
    huge = _cluster(cap, submit(cap, {"huge": 1_999}, 1.0), 1_000, records, 1.0)
    assert huge == {"huge": NEW_WORDS}
    later = {f"c{i}": 99 for i in range(30)}
    records |= dict.fromkeys(later, 100)
    assert _cluster(cap, submit(cap, later, 2.0), 1_000, records, 2.0) == dict.fromkeys(later)


def test_a_grow_teaches_the_cap_only_the_partitions_it_adds() -> None:
    """Found by review: a grow is sized as its new total (an upper bound: the controller makes only the partitions
    it adds), and that bound was learned as accepted. Nine grows of 1,000 to 1,001 partitions (9 records made, 9,009
    counted) then made a cap of 5,000 in new words look like a policy at 9,000 records: 90 creates failed."""
    cap = engine()
    spec = CallSpec(RequestKind(CREATE_PARTITIONS, False), 30.0, 30_000, True, None, None, started_at=0.0)
    grows = [f"g{i}" for i in range(9)]
    submit_call(cap, spec, [(n, NewPartitions(n, 1001), None, 1001) for n in grows])
    assert cap.step(0.0).read_metadata  # a grow's cost (what it adds) is read first
    cap.on_metadata(dict.fromkeys(grows, 1000), 0.01)
    out = cap.step(0.01)
    assert out.send is not None
    answer(cap, out, dict.fromkeys(grows), 0.02)
    creates = {f"t{i}": 99 for i in range(90)}  # 100 records each: one request of 9,000
    records = dict.fromkeys(creates, 100)
    assert _cluster(cap, submit(cap, creates, 1.0), 5_000, records, 1.0) == dict.fromkeys(creates)


def _sizes_against(cap: Engine, out: Outbox, records_cap: int, now: float) -> list[tuple[int, bool]]:
    """Answer one-partition creates (2 records each) as a cluster of cap ``records_cap`` in Kafka's words: each
    request's topics, and whether it was refused whole."""
    sizes: list[tuple[int, bool]] = []
    while out.send is not None:
        now += 0.01
        names = [t.name for t in out.send.topics]
        over = 2 * len(names) > records_cap
        sizes.append((len(names), over))
        out = answer(cap, out, dict.fromkeys(names, BATCH_CAP if over else None), now)
        assert all(exc is None for _, exc in out.settle)
    return sizes


def test_a_cap_that_stays_low_costs_one_refused_probe_in_32_then_64_requests() -> None:
    """A cap learned is tried again at twice the limit after PROBE_AFTER requests of at least half of it, and each
    probe refused doubles the wait; nothing is lost (was: the limit learned was kept for the client's life)."""
    assert PROBE_AFTER == 32
    cap = engine()
    names = {f"t{i}": 1 for i in range(800)}
    sizes = _sizes_against(cap, submit(cap, names, 0.0), 8, 0.0)
    assert cap.status.max_records_per_request == 6  # 800 topics, 1,600 records: halved to 6 (12 refused)
    learning = next(i for i, (_, refused) in enumerate(sizes) if not refused)
    probes = [i - learning for i, (n, refused) in enumerate(sizes) if refused and i > learning]
    assert [n for n, _ in sizes[learning:] if n != 3] == [6, 6, 6, 2]  # three probes (the last request: a remnant)
    assert probes == [32, 32 + 1 + 64, 32 + 1 + 64 + 1 + 128]


def test_a_cap_raised_since_is_followed_by_doubling_up_to_the_request_size() -> None:
    """A probe applied raises the limit to its size and the next request probes again: a cap raised (Kafka 4.5's
    setting, a newer controller) is followed within a few requests of the first probe."""
    cap = engine()
    low = {f"t{i}": 1 for i in range(60)}
    assert _sizes_against(cap, submit(cap, low, 0.0), 8, 0.0)[4:] == [(3, False)] * 20
    assert cap.status.max_records_per_request == 7  # 60 topics, 120 records: halved to 7 (14 refused)
    high = {f"u{i}": 1 for i in range(12_000)}
    sizes = _sizes_against(cap, submit(cap, high, 1.0), 10_000, 1.0)
    assert not any(refused for _, refused in sizes)
    first_probe = next(i for i, (n, _) in enumerate(sizes) if n > 3)
    assert first_probe == PROBE_AFTER - 20  # the low call's requests counted towards it
    doubling = [7, 14, 28, 56, 112, 224, 448, 896, 1792, 3584, 4000]  # up to MAX_TOPICS_PER_REQUEST
    assert [n for n, _ in sizes[first_probe : first_probe + 11]] == doubling
    assert cap.status.max_records_per_request == 8000  # 4,000 topics a request, 2 records each


def test_a_lone_topic_accepted_above_the_limit_is_no_probe_that_held() -> None:
    """A topic larger than the limit goes alone; applied, it raises the limit, but was no probe: the next request
    keeps to the limit (a request of 7 records was refused just before)."""
    cap = engine()
    out = answer(cap, submit(cap, {"d": 4, "a": 1}, 0.0), {"d": BATCH_CAP, "a": BATCH_CAP}, 0.01)  # 7 records
    run(cap, out, {"d": None, "a": None})
    assert cap.status.max_records_per_request == 5
    later = {f"u{i}": 1 for i in range(5)}  # 2 records each
    sizes, _ = run(cap, submit(cap, later, 1.0), dict.fromkeys(later, None))
    assert sizes == [2, 2, 1]


def _sizes_on_two_lanes(cap: Engine, out: Outbox, records_cap: int) -> list[tuple[int, bool, int]]:
    """As ``_sizes_against``, with two requests in flight (the second lane): answered oldest first. Each request's
    topics, whether it was refused whole, and, if it was above the limit (a probe), how many others were in flight
    with it."""
    sizes: list[tuple[int, bool, int]] = []
    flying: list[tuple[Send, bool]] = []  # in flight: the request, and whether it was above the limit when sent
    now = 0.0
    while True:
        if Probe(SECOND) in out.actions:
            cap.on_probe(True, now, SECOND)
            out = Outbox.of([*out.actions, *cap.step(now).actions])
        limit = cap.status.max_records_per_request
        for send in out.of_kind(Send):
            flying.append((send, len(send.names) > 1 and 2 * len(send.names) > limit))
        if not flying:
            return sizes
        now += 0.002
        send, probe = flying.pop(0)
        over = 2 * len(send.names) > records_cap
        sizes.append((len(send.names), over, sum(beside for _, beside in flying) if probe else 0))
        cap.on_results(send.request_id, dict.fromkeys(send.names, BATCH_CAP if over else None), now)
        out = cap.step(now)
        assert all(exc is None for _, exc in out.settle)


def test_two_lanes_probe_one_request_at_a_time_and_a_stale_refusal_is_no_probe() -> None:
    """Found by review: with two requests in flight, a refusal of the second lane's request, built under an older
    and higher limit, was taken for a refused probe (the wait before the first probe doubled), and once a probe was
    due both lanes probed at once (two refusals a cycle, the wait growing four times)."""
    # (requests of 2,000 topics: of other sizes, the halving comes down to another limit)
    cap = engine(EngineConfig(second_lane_from=2, max_topics_per_request=2000))
    names = {f"t{i}": 1 for i in range(3300)}  # 2 records each: 7 topics refused, then 3 a request, two at a time
    sizes = _sizes_on_two_lanes(cap, submit(cap, names, 0.0), 8)
    assert cap.status.max_records_per_request == 7
    assert all(probes_beside == 0 for _, _, probes_beside in sizes)  # was: two at once, from the 1,025th request
    learning = next(i for i, (_, refused, _) in enumerate(sizes) if not refused)
    probes = [i - learning for i, (n, _, _) in enumerate(sizes) if n > 3 and i > learning]
    # a probe once 32 requests were answered (the 33rd, composed before, goes beside it), then 64, 128, ...
    assert probes == [33, 33 + 66, 99 + 130, 229 + 258, 487 + 514]  # was: none before the 1,025th


def test_a_policy_refusing_a_probe_alike_costs_one_request_more() -> None:
    """Found by review: words a refused probe got were kept as the cap's, so a policy refusing every topic of a
    probe alike refused its topics again in requests of the limit, and those were halved down to a lone topic:
    here 5 requests where 3 tell each topic the policy's error (the review's case: 7 where 2)."""
    cap = engine(EngineConfig(cap_probe_after=1))
    first = {f"t{i}": 1 for i in range(6)}  # 2 records each: 12 refused, limit 6; then 2 requests of 6
    assert _sizes_against(cap, submit(cap, first, 0.0), 8, 0.0) == [(6, True), (3, False), (3, False)]
    later = {f"u{i}": 1 for i in range(6)}  # a probe of 12 records due: the policy refuses every topic alike
    sizes, settled = run(cap, submit(cap, later, 1.0), dict.fromkeys(later, POLICY))
    assert sizes == [6, 3, 3]
    assert settled == dict.fromkeys(later, POLICY)
    assert cap.status.max_records_per_request == 6


def test_a_policys_words_met_after_the_limit_rose_give_back_the_limit_risen() -> None:
    """Found by review: words taken for the cap's by their shape kept the limit from before them; met again after
    probes had raised the limit, and proved a policy's by a lone topic, they set the limit back to that old value
    (30 records after 4,000 had been accepted)."""
    cap = engine(EngineConfig(cap_probe_after=1))
    first = {f"t{i}": 1 for i in range(8)}  # 2 records each: 16 refused in Kafka's words, limit 8
    out = answer(cap, submit(cap, first, 0.0), dict.fromkeys(first, BATCH_CAP), 0.01)
    assert out.send is not None
    assert len(out.send.topics) == 4  # 8 records refused alike in new words: the cap's
    out = answer(cap, out, dict.fromkeys(out.send.names, NEW_WORDS), 0.02)
    assert cap.status.max_records_per_request == 4
    run(cap, out, dict.fromkeys(first, None))
    raised = {f"u{i}": 1 for i in range(64)}  # the cap was never 8: probes raise the limit
    run(cap, submit(cap, raised, 1.0), dict.fromkeys(raised, None))
    risen = cap.status.max_records_per_request
    assert risen >= 64
    later = {f"v{i}": 1 for i in range(risen // 2)}  # the same words, now a policy's, at the limit risen
    _, settled = run(cap, submit(cap, later, 2.0), dict.fromkeys(later, NEW_WORDS))
    assert settled == dict.fromkeys(later, NEW_WORDS)
    assert cap.status.max_records_per_request == risen  # was: 8


def _probe_composed() -> tuple[Engine, Send]:
    """A limit learned (6 records, of a cap of 8) and a probe of 12 composed: the request, not yet answered."""
    cap = engine(EngineConfig(cap_probe_after=1))
    first = {f"t{i}": 1 for i in range(6)}
    assert _sizes_against(cap, submit(cap, first, 0.0), 8, 0.0) == [(6, True), (3, False), (3, False)]
    out = submit(cap, {f"u{i}": 1 for i in range(6)}, 1.0)
    assert out.send is not None
    assert len(out.send.topics) == 6  # the probe
    return cap, out.send


def _probes_again(cap: Engine) -> bool:
    """Whether the next request, once due, is a probe again (6 topics of 2 records: above the limit of 6)."""
    again = {f"v{i}": 1 for i in range(6)}
    sizes, _ = run(cap, submit(cap, again, 3.0), dict.fromkeys(again, None))
    return sizes[0] == 6


def test_a_probe_taken_back_before_it_was_handed_over_is_no_probe_out() -> None:
    """Found by review: a probe composed and taken back unsent (its caller cancelled, or Ctrl-C, before the send
    began: ``on_send_cut_short(handed=False)``) stayed marked as the probe out, and no request probed again for the
    client's life."""
    cap, probe = _probe_composed()
    cap.on_send_cut_short(probe.request_id, handed=False, now=1.0, retire=False)
    run(cap, cap.step(1.0), {f"u{i}": None for i in range(6)})
    assert _probes_again(cap)


def test_a_probe_confluent_kafka_refused_to_send_is_no_probe_out() -> None:
    """Found by review: a probe whose send confluent-kafka refused (``on_send_refused``) stayed marked as the probe
    out, and no request probed again for the client's life."""
    cap, probe = _probe_composed()
    cap.on_send_refused(probe.request_id, KafkaException(KafkaError(KafkaError._INVALID_ARG, "refused")), 1.0)
    cap.step(1.0)
    assert _probes_again(cap)
