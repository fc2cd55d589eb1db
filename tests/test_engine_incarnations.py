"""Issue 27, finding 7, as the engine's rule on simulated time: a ``wait_for_metadata`` create reads every broker's
ids of its name before it is first sent, and is visible once every broker shows one id that was not among them
(``_engine/visibility.py``). A name deleted and created again is another incarnation, with another id; a lagging
broker's old incarnation, with more partitions than asked for, no longer passes for the new one."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import NewPartitions, NewTopic

from tests.engine_records import submit_call
from throttled_admin import NotSentError, NotSentReason, NotYetVisibleError
from throttled_admin._engine import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    CallSpec,
    Engine,
    Operation,
    Outbox,
    RequestKind,
    RetryBackoff,
)
from throttled_admin._engine.view_reads import AHEAD_FRESH_S
from throttled_admin._engine.visibility import BrokerViews, TopicView, ids_shown, lagging
from throttled_admin._engine.work import Topic

OLD, NEW, OTHER = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
BROKERS = (0, 1, 2)


def views(*shown: TopicView | None, name: str = "x") -> BrokerViews:
    """Broker n's view of ``name``: ``shown[n]`` (None: not listed)."""
    return {node: ({} if view is None else {name: view}) for node, view in zip(BROKERS, shown, strict=True)}


def submit(
    engine: Engine,
    operation: Operation,
    item: object,
    name: str = "x",
    timeout_s: float = 30.0,
    *,
    started_at: float = 0.0,
    wait: bool = True,
) -> Topic:
    spec = CallSpec(
        RequestKind(operation, False), timeout_s, int(timeout_s * 1000), True, None, None, started_at=started_at,
        wait_for_metadata=wait,
    )  # fmt: skip
    known = operation.known_cost(item)
    _, [topic] = submit_call(engine, spec, [(name, item, known if known is not None else 0, operation.records(item))])
    return topic


def client() -> Engine:
    engine = Engine(pacer=None, backoff=RetryBackoff(initial_ms=100, max_ms=100, jitter=0.0))
    engine.on_probe(True, 0.0)
    return engine


def settled(out: Outbox) -> dict[str, BaseException | None]:
    return {topic.name: exc for topic, exc in out.settle}


def test_a_create_is_sent_only_once_every_brokers_ids_of_its_name_are_read() -> None:
    engine = client()
    submit(engine, CREATE_TOPICS, NewTopic("x", 3, 1))
    out = engine.step(0.0)
    assert out.send is None
    assert out.read_views == ["x"]
    assert engine.step(0.5).send is None  # the read is out: nothing is sent meanwhile
    engine.on_views(views(None, TopicView(8, True, OLD), TopicView(8, True, OLD)), 0.6)
    out = engine.step(0.6)
    assert out.send is not None
    assert out.send.names == ["x"]


def test_the_old_incarnation_on_a_lagging_broker_is_not_the_new_topic() -> None:
    engine = client()
    submit(engine, CREATE_TOPICS, NewTopic("x", 3, 1))
    engine.step(0.0)
    engine.on_views(views(None, TopicView(8, True, OLD), TopicView(8, True, OLD)), 0.01)
    out = engine.step(0.01)
    assert out.send is not None
    engine.on_results(out.send.request_id, {"x": None}, 0.02)
    assert engine.step(0.02).read_views == ["x"]
    # was: 8 >= 3 partitions with a leader on every broker, resolved at once
    engine.on_views(views(TopicView(3, True, NEW), TopicView(8, True, OLD), TopicView(8, True, OLD)), 0.03)
    out = engine.step(0.03)
    assert not out.settle
    engine.on_views(views(TopicView(3, True, NEW), None, TopicView(3, True, NEW)), out.wake_at)
    assert not engine.step(out.wake_at).settle  # a broker between the two incarnations lists none
    engine.on_views(views(TopicView(3, True, NEW), TopicView(3, True, NEW), TopicView(3, True, NEW)), 1.0)
    assert settled(engine.step(1.0)) == {"x": None}


def test_past_the_deadline_the_brokers_on_the_old_incarnation_are_named() -> None:
    engine = client()
    submit(engine, CREATE_TOPICS, NewTopic("x", 3, 1), timeout_s=2.0)
    engine.step(0.0)
    engine.on_views(views(None, TopicView(8, True, OLD), TopicView(8, True, OLD)), 0.01)
    out = engine.step(0.01)
    assert out.send is not None
    engine.on_results(out.send.request_id, {"x": None}, 0.02)
    engine.step(0.02)
    engine.on_views(views(TopicView(3, True, NEW), TopicView(8, True, OLD), TopicView(8, True, OLD)), 0.03)
    engine.step(0.03)
    exc = settled(engine.step(2.0))["x"]
    assert isinstance(exc, NotYetVisibleError), repr(exc)
    assert exc.brokers == (1, 2)


def test_the_rule() -> None:
    create, grow = NewTopic("x", 3, 1), NewPartitions("x", 6)
    before = frozenset({OLD})
    new = TopicView(3, True, NEW)
    assert lagging("CreateTopics", "x", create, views(new, new, new), before) == ()
    assert lagging("CreateTopics", "x", create, views(new, TopicView(8, True, OLD), new), before) == (1,)
    # two ids neither of which was there before: they disagree, and which is the cluster's cannot be told
    assert lagging("CreateTopics", "x", create, views(new, TopicView(3, True, OTHER), new), before) == (0, 1, 2)
    # a view without ids (the fallback reader): the partitions decide, as they can
    bare = TopicView(8, True)
    assert lagging("CreateTopics", "x", create, views(bare, bare, bare), before) == ()
    assert lagging("CreateTopics", "x", create, views(new, None, new), before) == (1,)
    # a grow: every broker shows one incarnation, with the partitions
    grown = TopicView(6, True, NEW)
    assert lagging("CreatePartitions", "x", grow, views(grown, grown, grown)) == ()
    assert lagging("CreatePartitions", "x", grow, views(grown, TopicView(8, True, OLD), grown)) == (0, 1, 2)
    # a delete: absent, whatever the id
    assert lagging("DeleteTopics", "x", "x", views(None, TopicView(1, True, OLD), None)) == (1,)


def test_a_grow_waits_for_the_partitions_it_added_to_be_led_not_those_offline_before_it() -> None:
    """Helper 111 on a three-node Kafka: a grow of a topic whose partitions 0 and 1 had lost their only replica's
    node waited out its deadline, then named every broker as not showing it (tests/test_visibility_on_quorum.py)."""
    offline = frozenset({0, 1})
    old_offline = TopicView(3, False, NEW, offline)  # partition 2, added, led
    added_offline = TopicView(3, False, NEW, frozenset({0, 1, 2}))
    erred = TopicView(3, False, NEW)  # not led, yet every partition is: the topic's own error
    assigned, placed = NewPartitions("x", 3, replica_assignment=[[1]]), NewPartitions("x", 3)
    for grow in (assigned, placed):
        assert lagging("CreatePartitions", "x", grow, views(old_offline, old_offline, old_offline)) == ()
        assert lagging("CreatePartitions", "x", grow, views(old_offline, added_offline, erred)) == (1, 2)
        assert lagging("CreatePartitions", "x", grow, views(old_offline, TopicView(2, False, NEW, offline), None)) == (
            1,
            2,
        )
    # Two added, by assignment: both must be led; placed by Kafka, as many as the grow's cost says (review 113: the
    # last one alone stood for them), else the last
    two = NewPartitions("x", 4, replica_assignment=[[1], [2]])
    second_led = TopicView(4, False, NEW, frozenset({0, 1, 2}))
    assert lagging("CreatePartitions", "x", two, views(second_led, second_led, second_led)) == (0, 1, 2)
    placed_two = NewPartitions("x", 4)
    assert lagging("CreatePartitions", "x", placed_two, views(second_led, second_led, second_led), None, 2) == (0, 1, 2)
    assert lagging("CreatePartitions", "x", placed_two, views(second_led, second_led, second_led)) == ()
    # Grown further since by another client, whose partitions have no leader (yet): not this grow's to wait for
    further = TopicView(6, False, NEW, frozenset({0, 1, 4, 5}))
    assert lagging("CreatePartitions", "x", two, views(further, further, further)) == ()
    # A create still wants every partition led
    assert lagging("CreateTopics", "x", NewTopic("x", 3, 1), views(old_offline, old_offline, old_offline)) == (0, 1, 2)
    assert ids_shown("x", views(TopicView(8, True, OLD), None, TopicView(8, True))) == {OLD}
    assert ids_shown("x", {0: None, 1: {}}) == frozenset()


def test_a_create_behind_an_earlier_call_of_its_name_has_its_ids_read_once_it_holds_the_name() -> None:
    """The ids are read when nothing else can change the name before the send: a read while an earlier call (here
    a delete, waiting for every broker to drop the name) still held it could miss what that call makes."""
    engine = client()
    deleting = submit(engine, DELETE_TOPICS, "x")
    out = engine.step(0.0)
    assert out.send is not None
    assert out.send.topics == (deleting.ref,)
    engine.on_results(out.send.request_id, {"x": None}, 0.01)
    creating = submit(engine, CREATE_TOPICS, NewTopic("x", 3, 1))
    out = engine.step(0.01)
    assert out.read_views == ["x"]  # about the delete only
    engine.on_views(views(None, TopicView(8, True, OLD), None), 0.02)
    out = engine.step(0.02)
    assert out.send is None
    assert creating.ids_before is None
    engine.on_views(views(None, None, None), 0.1)
    out = engine.step(0.1)
    assert settled(out) == {"x": None}  # the delete is visible: the create now holds the name
    assert out.read_views == ["x"]  # ... and its ids are read before it is sent
    engine.on_views(views(None, None, None), 0.11)
    assert creating.ids_before == frozenset()
    out = engine.step(0.11)
    assert out.send is not None
    assert out.send.topics == (creating.ref,)


def test_a_failed_read_of_the_ids_does_not_keep_the_create_from_being_sent() -> None:
    engine = client()
    topic = submit(engine, CREATE_TOPICS, NewTopic("x", 3, 1))
    engine.step(0.0)
    engine.on_views({}, 0.01)  # no broker could be listed
    out = engine.step(0.01)
    assert out.send is not None
    assert topic.ids_before == frozenset()


def test_the_deadline_passing_while_the_ids_are_read_says_not_sent_and_why() -> None:
    engine = client()
    submit(engine, CREATE_TOPICS, NewTopic("x", 3, 1), timeout_s=0.5)
    engine.step(0.0)
    exc = settled(engine.step(0.5))["x"]
    assert isinstance(exc, NotSentError), repr(exc)
    assert "topic ids of the name" in str(exc)


def test_grows_and_deletes_are_sent_without_reading_ids_first() -> None:
    engine = client()
    submit(engine, CREATE_PARTITIONS, NewPartitions("x", 6))
    submit(engine, DELETE_TOPICS, "y", name="y")
    out = engine.step(0.0)
    assert out.send is not None
    assert out.read_views is None


# -- ids read ahead (``Engine.read_ahead``: the provisioning executor names its creates before it sends them) --------


def submit_at(
    engine: Engine, started_at: float, operation: Operation = CREATE_TOPICS, name: str = "x", *, wait: bool = True
) -> Topic:
    """``submit`` of a 3-partition create (or of a delete) of ``name`` at ``started_at``."""
    item: object = NewTopic(name, 3, 1) if operation is CREATE_TOPICS else name
    return submit(engine, operation, item, name, started_at=started_at, wait=wait)


def read_ahead_answered(engine: Engine, at: float, *shown: TopicView | None) -> None:
    engine.read_ahead(["x"], at)
    assert engine.step(at).read_views == ["x"]  # at once, with no call pending
    engine.on_views(views(*shown), at + 0.01)
    assert engine.step(at + 0.01).read_views is None


def test_a_create_soon_after_its_ids_were_read_ahead_is_sent_at_once_and_judged_by_them() -> None:
    """The ids read ahead stand for the create's own read: it is sent in the step that takes it, and a lagging
    broker's old incarnation, which that read showed, is still not the new topic."""
    engine = client()
    read_ahead_answered(engine, 0.0, None, TopicView(8, True, OLD), TopicView(8, True, OLD))
    topic = submit_at(engine, 5.0)
    assert topic.ids_before == frozenset({OLD})
    out = engine.step(5.0)
    assert out.read_views is None
    assert out.send is not None
    assert out.send.names == ["x"]
    engine.on_results(out.send.request_id, {"x": None}, 5.02)
    assert engine.step(5.02).read_views == ["x"]
    engine.on_views(views(TopicView(3, True, NEW), TopicView(8, True, OLD), TopicView(3, True, NEW)), 5.03)
    assert settled(engine.step(5.03)) == {}
    engine.step(5.2)
    engine.on_views(views(TopicView(3, True, NEW), TopicView(3, True, NEW), TopicView(3, True, NEW)), 5.3)
    assert settled(engine.step(5.3)) == {"x": None}


def test_ids_read_ahead_too_long_before_the_create_or_named_by_another_call_are_read_again() -> None:
    stale = client()
    read_ahead_answered(stale, 0.0, None, None, None)
    submit_at(stale, AHEAD_FRESH_S + 0.02)
    out = stale.step(AHEAD_FRESH_S + 0.02)
    assert out.send is None
    assert out.read_views == ["x"]
    dropped = client()
    read_ahead_answered(dropped, 0.0, None, None, None)
    submit_at(dropped, 1.0, DELETE_TOPICS)  # another call names it: what was read ahead no longer holds
    out = dropped.step(1.0)
    assert out.send is not None
    assert out.send.names == ["x"]
    dropped.on_results(out.send.request_id, {"x": None}, 1.01)
    assert dropped.step(1.01).read_views == ["x"]
    dropped.on_views(views(None, None, None), 1.02)
    assert settled(dropped.step(1.02)) == {"x": None}  # deleted everywhere: the name is free again
    submit_at(dropped, 1.03)
    out = dropped.step(1.03)
    assert out.send is None
    assert out.read_views == ["x"]


def test_a_create_submitted_while_its_ids_are_read_ahead_takes_them_from_that_answer() -> None:
    engine = client()
    engine.read_ahead(["x"], 0.0)
    assert engine.step(0.0).read_views == ["x"]
    topic = submit_at(engine, 0.01)
    out = engine.step(0.01)
    assert out.send is None
    assert out.read_views is None  # the read out asks about it already
    engine.on_views(views(None, TopicView(8, True, OLD), None), 0.02)
    out = engine.step(0.02)
    assert topic.ids_before == frozenset({OLD})
    assert out.send is not None
    assert out.send.names == ["x"]
    assert out.read_views is None


def settle_sent(engine: Engine, at: float) -> dict[str, BaseException | None]:
    out = engine.step(at)
    assert out.send is not None
    engine.on_results(out.send.request_id, {out.send.names[0]: None}, at + 0.001)
    return settled(engine.step(at + 0.001))


def test_a_change_applied_while_its_name_is_read_ahead_is_not_judged_by_that_read() -> None:
    """A wait_for_metadata delete sent and applied while a read ahead of its name is out: that read was asked for
    before the delete was sent, so it says nothing of it; the delete waits for a read of its own (review of 82b7877)."""
    engine = client()
    engine.read_ahead(["x"], 0.0)
    assert engine.step(0.0).read_views == ["x"]
    submit_at(engine, 0.01, DELETE_TOPICS)
    assert settle_sent(engine, 0.01) == {}
    engine.on_views(views(None, None, None), 0.03)
    out = engine.step(0.03)
    assert settled(out) == {}
    assert out.read_views == ["x"]


def test_a_create_takes_no_ids_read_ahead_when_a_call_named_its_topic_after_the_read_was_asked() -> None:
    """Read ahead, then this client's create and delete of the name (no wait_for_metadata) while the read is out:
    its answer may predate that incarnation, so a wait_for_metadata create after them reads its own ids; and a create
    held behind another call's name when submitted takes no answer either (review of 82b7877)."""
    engine = client()
    engine.read_ahead(["x"], 0.0)
    engine.step(0.0)
    submit_at(engine, 0.01, wait=False)
    settle_sent(engine, 0.01)
    submit_at(engine, 0.03, DELETE_TOPICS, wait=False)
    settle_sent(engine, 0.03)
    topic = submit_at(engine, 0.05)
    assert engine.step(0.05).send is None
    engine.on_views(views(None, None, None), 0.06)  # the read ahead, answered as before the create above
    out = engine.step(0.06)
    assert topic.ids_before is None
    assert out.send is None
    assert out.read_views == ["x"]  # its own
    held = client()
    held.read_ahead(["x"], 0.0)
    held.step(0.0)
    submit_at(held, 0.01, DELETE_TOPICS)
    behind = submit_at(held, 0.011)
    assert settle_sent(held, 0.011) == {}
    held.on_views(views(None, None, None), 0.03)  # the delete is not judged by it; the create took nothing
    assert behind.ids_before is None


def test_a_read_ahead_that_missed_a_broker_stands_for_no_create() -> None:
    engine = client()
    engine.read_ahead(["x"], 0.0)
    engine.step(0.0)
    waiting = submit_at(engine, 0.01)
    engine.on_views(views(None, TopicView(8, True, OLD), None) | {2: None}, 0.02)
    out = engine.step(0.02)
    assert waiting.ids_before is None
    assert out.send is None
    assert out.read_views == ["x"]
    later = client()
    read_ahead_answered(later, 0.0, None, None, None)
    later.read_ahead(["y"], 0.1)
    later.step(0.1)
    later.on_views({0: None, 1: None, 2: None}, 0.2)
    submit_at(later, 0.3, name="y")
    assert later.step(0.3).read_views == ["y"]


def test_at_a_deadline_a_topic_whose_ids_were_read_ahead_is_told_its_own_reason_among_those_still_read() -> None:
    """One call's topics of one state, not sent by its deadline for different reasons: x's ids were read ahead (it
    waited for the connection), y's and z's were still being read. Each is told its own (the engine shares one
    error's words between topics with no attempts only while their reason is the same: ``outcome.copied``)."""
    engine = client()
    read_ahead_answered(engine, 0.0, None, None, None)
    submit(engine, CREATE_TOPICS, NewTopic("busy", 1, 1), "busy", wait=False)
    assert engine.step(0.02).send is not None  # in flight, never answered: the connection is busy
    spec = CallSpec(
        RequestKind(CREATE_TOPICS, False), 0.32, 300, True, None, None, started_at=0.02, wait_for_metadata=True
    )
    names = ["y", "x", "z"]
    submit_call(engine, spec, [(name, NewTopic(name, 1, 1), 1, 2) for name in names])
    assert engine.step(0.02).read_views == ["y", "z"]  # x takes the ids read ahead
    errors = settled(engine.step(0.32))
    assert list(errors) == names
    reasons = {name: error.why for name, error in errors.items() if isinstance(error, NotSentError)}
    assert reasons == {"y": NotSentReason.READING_IDS, "x": NotSentReason.DEADLINE, "z": NotSentReason.READING_IDS}
    assert errors["y"] is not errors["z"]
    assert str(errors["y"]) == str(errors["z"])
