"""Differential scenarios on the controller mutation quota: throttle_time_ms over sequences of creates, grows and
deletes at strict and permissive versions, muting, validate_only, and requests that waited behind a slow one.

Most run on SMALL (quota windows of 2 x 1 s) at R = 4 mutations/s: the burst is 8 mutations, and a debt of D
mutations is a throttle of D x 250 ms. Few partitions keep Kafka's own work per request small: the time between
two requests refills the bucket, so a side slower by t ms reports a throttle t ms shorter; a debt of at least 3
(750 ms) keeps a strict refusal a refusal on a loaded machine."""

from __future__ import annotations

from tests.real_kafka.differential import DEFAULT, PERMISSIVE, SLOW, SLOW_CLUSTER, SMALL, STRICT, Run, T, scenario

C, D, G = STRICT["create"], STRICT["delete"], STRICT["grow"]
OC, OD, OG = PERMISSIVE["create"], PERMISSIVE["delete"], PERMISSIVE["grow"]


# -- throttle_time_ms at the strict versions (kafka-python 3, the Java AdminClient) ----------------------


@scenario("throttle-strict", "admitted past the burst, then one more topic", setup=SMALL, rate=4)
def _(run: Run) -> None:
    """Two topics admitted with the bucket >= 0 before each; the next request finds it in debt."""
    c = run.connect()
    run.create(c, C, ("a", 6), ("b", 5))
    run.create(c, C, ("c", 1))


@scenario("throttle-strict", "one request split by the quota", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 11), ("b", 1), ("c", 1))


@scenario("throttle-strict", "CreateTopics v6, the first strict version", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, 6, ("a", 11), ("b", 1))
    run.create(c, 5, ("c", 1))


@scenario("throttle-strict", "grow, then delete, then delete again after a refill", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.setup(("g", 1), ("d", 2))
    c = run.connect()
    run.grow(c, G, ("g", 12))
    run.delete(c, D, "d")
    run.sleep(1.0)
    run.delete(run.connect(), D, "d")


@scenario("throttle-strict", "DeleteTopics v5 past the burst, then two more", setup=SMALL, rate=4)
def _(run: Run) -> None:
    """Kafka charges a DeleteTopics' topics in a hash order: one topic per request keeps this deterministic."""
    run.setup(("d1", 11), ("d2", 1), ("d3", 1))
    c = run.connect()
    run.delete(c, 5, "d1")
    run.delete(c, 5, "d2", "d3")


@scenario("throttle-strict", "the throttle shrinks as the bucket refills", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 12))
    run.sleep(0.5)
    run.create(run.connect(), C, ("b", 1))
    run.sleep(0.7)
    run.create(run.connect(), C, ("c", 1))


@scenario("throttle-strict", "a grow past the burst refuses the next create", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.setup(("g", 1))
    c = run.connect()
    run.grow(c, G, ("g", 12))
    run.create(c, C, ("x", 1))
    run.grow(run.connect(), G, ("g", 13))


@scenario("throttle-strict", "Kafka's defaults: 11 x 1 s windows", setup=DEFAULT, rate=1)
def _(run: Run) -> None:
    """Burst = 11 x 1 x 1 = 11 mutations."""
    c = run.connect()
    run.create(c, C, ("a", 10), ("b", 2), ("c", 1))


# -- throttle_time_ms at librdkafka's permissive versions -------------------------------------------------


@scenario("throttle-permissive", "CreateTopics v4 past the burst", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, OC, ("a", 11), ("b", 1))


@scenario("throttle-permissive", "two creates, the second past the burst", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), OC, ("a", 6))
    run.create(run.connect(), OC, ("b", 4))


@scenario("throttle-permissive", "grow v2, then delete v4", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.setup(("g", 1), ("d", 2))
    run.grow(run.connect(), OG, ("g", 10))
    run.delete(run.connect(), OD, "d")


@scenario("throttle-permissive", "CreateTopics v2, the oldest Kafka 4 serves", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), 2, ("a", 11))


@scenario("throttle-permissive", "DeleteTopics v1 and CreatePartitions v0", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.setup(("d", 10), ("g", 1))
    run.delete(run.connect(), 1, "d")
    run.grow(run.connect(), 0, ("g", 2))


@scenario("throttle-permissive", "a permissive request after a strict refusal", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 11))
    run.create(run.connect(), C, ("b", 1))
    run.create(run.connect(), OC, ("c", 1))


@scenario("throttle-permissive", "Kafka's defaults: 11 x 1 s windows", setup=DEFAULT, rate=1)
def _(run: Run) -> None:
    run.create(run.connect(), OC, ("a", 10), ("b", 3))


# -- muting (KIP-219): when is the next request answered? --------------------------------------------------
# The probe is a Metadata request for no topic: it waits in a muted connection like any request, and its answer
# does not depend on how far the broker has replayed the metadata log.


@scenario("muting", "after error 89: the same connection waits", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 12))
    run.create(c, C, ("b", 1))
    run.metadata(c, 12, [], step="Metadata on the same connection", timed=True)


@scenario("muting", "after error 89: a new connection is answered at once", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 12))
    run.create(c, C, ("b", 1))
    fresh = run.connect()
    run.metadata(fresh, 12, [], step="Metadata on a new connection", timed=True)
    run.create(fresh, C, ("c", 1), step="CreateTopics v7 on the new connection", timed=True)


@scenario("muting", "after a permissive throttle: the same connection waits", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, OC, ("a", 12))
    run.metadata(c, 12, [], step="Metadata on the same connection", timed=True)


@scenario("muting", "after a permissive throttle: a new connection is admitted at once", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), OC, ("a", 12))
    run.create(run.connect(), OC, ("b", 1), step="CreateTopics v4 on a new connection", timed=True)


@scenario("muting", "strict topics admitted past the burst: no throttle, no mute", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 12))
    run.metadata(c, 12, [], step="Metadata on the same connection", timed=True)


@scenario("muting", "a request pipelined behind a throttled one", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    first = run.send_create(c, OC, ("a", 12))
    second = run.send_metadata(c, 12, [], step="Metadata sent right behind it", timed=True)
    run.receive(first)
    run.receive(second)


@scenario("muting", "another client id is not throttled", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), OC, ("a", 12))
    other = run.connect(f"{run.client_id}-other")
    run.create(other, C, ("b", 2), step="CreateTopics v7 as another client id", timed=True)


# -- validate_only --------------------------------------------------------------------------------------


@scenario("validate-only", "strict validate_only past the burst, then a real create", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 12), validate_only=True)
    run.create(run.connect(), C, ("b", 1))


@scenario("validate-only", "permissive validate_only is throttled", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), OC, ("a", 12), validate_only=True)
    run.create(run.connect(), OC, ("b", 1))


@scenario("validate-only", "validate_only while in debt is refused", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 12))
    run.create(run.connect(), C, ("b", 1), validate_only=True)


@scenario("validate-only", "CreatePartitions validate_only is charged", setup=SMALL, rate=4)
def _(run: Run) -> None:
    run.setup(("g", 1))
    run.grow(run.connect(), G, ("g", 13), validate_only=True)
    run.grow(run.connect(), G, ("g", 2))


@scenario("validate-only", "an invalid topic in a validate_only request is not charged", setup=SMALL, rate=4)
def _(run: Run) -> None:
    bad = T("bad", 12, configs={"cleanup.policy": "bogus"})
    run.create(run.connect(), C, bad, ("ok", 1), validate_only=True)
    run.create(run.connect(), C, ("b", 7))


# -- a request that waited behind a slow one ----------------------------------------------------------------


@scenario("slow", "same connection, pipelined behind the slow create, 500 ms timeout", setup=SLOW)
def _(run: Run) -> None:
    c = run.connect()
    run.hold(run.slow(1500, "a"))
    slow = run.send_create(c, C, (run.slow(1500, "a"), 1))
    behind = run.send_create(c, C, ("b", 1), timeout_ms=500, step="CreateTopics v7 timeout 500 ms, behind it")
    run.receive(slow)
    run.receive(behind)


@scenario("slow", "same broker, another connection, timeout shorter than the hold", setup=SLOW)
def _(run: Run) -> None:
    c = run.connect()
    held = run.hold(run.slow(1500, "a"))
    slow = run.send_create(c, C, (run.slow(1500, "a"), 1))
    assert held()
    run.create(
        run.connect(), C, ("b", 1), timeout_ms=300, step="CreateTopics v7 timeout 300 ms, other connection", timed=True
    )
    run.receive(slow)


@scenario("slow", "same broker, another connection, timeout longer than the hold", setup=SLOW)
def _(run: Run) -> None:
    c = run.connect()
    held = run.hold(run.slow(1000, "a"))
    slow = run.send_create(c, C, (run.slow(1000, "a"), 1))
    assert held()
    run.create(run.connect(), C, ("b", 1), timeout_ms=20000, step="CreateTopics v7 timeout 20 s, other connection")
    run.receive(slow)


@scenario("slow", "a delete on the same broker, timeout shorter than the hold", setup=SLOW)
def _(run: Run) -> None:
    run.setup(("d", 1))
    held = run.hold(run.slow(1500, "a"))
    slow = run.send_create(run.connect(), C, (run.slow(1500, "a"), 1))
    assert held()
    run.delete(run.connect(), D, "d", timeout_ms=300, step="DeleteTopics v6 timeout 300 ms, other connection")
    run.receive(slow)


@scenario("slow", "a grow on the same broker, timeout shorter than the hold", setup=SLOW)
def _(run: Run) -> None:
    run.setup(("g", 1))
    held = run.hold(run.slow(1500, "a"))
    slow = run.send_create(run.connect(), C, (run.slow(1500, "a"), 1))
    assert held()
    run.grow(run.connect(), G, ("g", 3), timeout_ms=300, step="CreatePartitions v3 timeout 300 ms, other connection")
    run.receive(slow)


@scenario("slow", "another broker, timeout shorter than the hold", setup=SLOW_CLUSTER)
def _(run: Run) -> None:
    """Each broker forwards its own mutations to the controller; one sent through another broker reaches the
    held controller's queue at once, and its deadline passes there."""
    held = run.hold(run.slow(1500, "a"))
    slow = run.send_create(run.connect(broker=0), C, (run.slow(1500, "a"), 1))
    assert held()
    other = run.connect(broker=1)
    run.create(other, C, ("b", 1), timeout_ms=300, step="CreateTopics v7 timeout 300 ms, other broker", timed=True)
    run.receive(slow)


@scenario("slow", "another broker, timeout longer than the hold", setup=SLOW_CLUSTER)
def _(run: Run) -> None:
    held = run.hold(run.slow(1000, "a"))
    slow = run.send_create(run.connect(broker=0), C, (run.slow(1000, "a"), 1))
    assert held()
    other = run.connect(broker=1)
    run.create(other, C, ("b", 1), timeout_ms=20000, step="CreateTopics v7 timeout 20 s, other broker", timed=True)
    run.receive(slow)


@scenario("slow", "timeout_ms 0, nothing slow", setup=DEFAULT)
def _(run: Run) -> None:
    run.setup(("g", 1), ("d", 1))
    c = run.connect()
    run.create(c, C, ("a", 1), timeout_ms=0)
    run.grow(c, G, ("g", 2), timeout_ms=0)
    run.delete(c, D, "d", timeout_ms=0)


@scenario("slow", "behind a throttle in a muted connection, 300 ms timeout", setup=DEFAULT, rate=1)
def _(run: Run) -> None:
    """Burst 11 at R = 1: 12 mutations are 1 s of debt; the next request on that connection is read only when
    the mute ends, and its 300 ms deadline starts then."""
    c = run.connect()
    run.create(c, OC, ("a", 12))
    run.create(c, OC, ("b", 1), timeout_ms=300, step="CreateTopics v4 timeout 300 ms, same connection", timed=True)
