"""The engine's one-pass paths for a bulk call (issue 40) decide exactly as the topic-by-topic paths they stand in
for: a call's topics holding their names at once (``NameHolds.hold_all``), an answer whose every topic was applied
settled a call's run at once (``_applied_runs``), a create's specs read in one pass (``Operation.specs``), the
outbox ordered by a sort of positions. Each is compared with the path it replaces, on the same inputs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine_records import answered_steps, submit_call
from throttled_admin._engine import (
    CREATE_TOPICS,
    CallSpec,
    Engine,
    Outbox,
    ReadMetadata,
    RequestKind,
    RetryBackoff,
    Settle,
    WakeAt,
    machine,
)
from throttled_admin._engine.actions import _by_rank
from throttled_admin._engine.config import EngineConfig
from throttled_admin._engine.metric_events import Retried
from throttled_admin._engine.work import NameHolds, _or

# a scenario: calls (each a list of names from a small pool, so later calls wait behind earlier ones' names, and
# whether it waits for metadata), then for each request sent: which of its topics the broker refuses (none: all
# applied), and the request size
_calls = st.lists(
    st.tuples(
        st.lists(st.sampled_from([f"t{i}" for i in range(8)]), min_size=1, max_size=6, unique=True), st.booleans()
    ),
    min_size=1,
    max_size=4,
)
_answers = st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=5)), min_size=12, max_size=12)


def _run(calls: list[tuple[list[str], bool]], answers: list[int | None], per_request: int) -> list[Any]:
    """Every step's outbox, and every topic's state and attempts at the end."""
    engine = Engine(
        pacer=None,
        backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0),
        config=EngineConfig(max_topics_per_request=per_request, seed=1),
    )
    engine.on_probe(True, 0.0)
    topics = []
    for names, wait in calls:
        spec = CallSpec(RequestKind(CREATE_TOPICS, False), 30.0, 30_000, True, None, None, 0.0, wait_for_metadata=wait)
        topics += submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2) for name in names])[1]
    seen, _ = answered_steps(engine, answers)
    return [*seen, [(topic.state, topic.history) for topic in topics]]


@settings(max_examples=150, deadline=None)
@given(_calls, _answers, st.sampled_from([1, 3, 50]))
def test_the_one_pass_paths_decide_as_the_topic_by_topic_ones(
    calls: list[tuple[list[str], bool]], answers: list[int | None], per_request: int
) -> None:
    fast = _run(calls, answers, per_request)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(machine, "_applied_runs", lambda request, response: None)
        patch.setattr(NameHolds, "hold_all", lambda self, topics: False)
        slow = _run(calls, answers, per_request)
    assert fast == slow


_topics = st.builds(
    NewTopic,
    st.text(alphabet="ab.", min_size=1, max_size=4),
    st.sampled_from([-1, 1, 3]),
    st.sampled_from([-1, 1, 3]),
    config=st.one_of(st.just({}), st.dictionaries(st.sampled_from(["a", "b"]), st.just("1"))),
)


@given(st.lists(_topics, max_size=5), st.sampled_from([None, 0]))
def test_a_creates_specs_in_one_pass_are_what_its_functions_make(topics: list[NewTopic], unknown: int | None) -> None:
    op = CREATE_TOPICS
    by_function = [(op.topic_of(t), t, _or(op.known_cost(t), unknown), op.records(t)) for t in topics]
    assert list(op.specs(topics, unknown)) == by_function


def test_a_create_with_an_assignment_costs_its_length_in_one_pass_too() -> None:
    topic = NewTopic("a", 2, replica_assignment=[[1], [2]], config={"x": "1"})
    assert list(CREATE_TOPICS.specs([topic], None)) == [("a", topic, 2, 1 + 2 + 1)]


_actions = st.lists(
    st.sampled_from([Retried("m"), Settle(1, "a", None), Settle(2, "b", None), ReadMetadata(), WakeAt(1.0)]),
    max_size=12,
)


@given(_actions)
def test_the_outbox_is_a_stable_sort_by_kind(actions: list[Any]) -> None:
    expected = [a for _, _, a in sorted(zip(map(_by_rank, actions), itertools.count(), actions))]
    expected = [a for i, a in enumerate(expected) if not (i and isinstance(a, ReadMetadata) and expected[i - 1] == a)]
    assert list(Outbox.of(actions).actions) == expected
