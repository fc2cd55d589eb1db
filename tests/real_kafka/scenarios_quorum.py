"""Differential scenarios on a three-node quorum (the ``kafka_quorum`` fixture; QuotaBroker with three nodes): where
the controller mutation quota's bucket lives, which connection a forwarded throttle mutes, what a restart of a
broker and a failover of the controller do to the bucket and to a throttle in progress, what a request waiting in
a node that stops gets, and what a stopped node does to a create's replication factor.

Each scenario leaves every broker it stopped started again. Kafka takes seconds to stop and start a node and
QuotaBroker none, so an answer after a restart is compared ``coarse`` (throttled or not), with debts deep enough
(tens of seconds) that no restart outlasts them; after a failover the bucket is fresh on both sides, so throttles
are compared to the millisecond again."""

from __future__ import annotations

from tests.real_kafka.differential import PERMISSIVE, QUORUM, STRICT, Run, T, scenario

C, OC = STRICT["create"], PERMISSIVE["create"]


@scenario("quorum", "the bucket is the controller's: a throttle drawn through one broker holds at every broker",
          setup=QUORUM, rate=2)  # fmt: skip
def _(run: Run) -> None:
    """A 32-partition create through a broker that is not the controller leaves the principal 10 mutations in
    debt (burst 22): a strict create through the controller, then through the third broker, is refused."""
    other, third = run.others()
    run.create(run.connect(broker=other), OC, ("a", 32))
    # coarse: each new connection costs Kafka's side 100-300 ms more, which the throttle then lacks
    run.create(run.connect(broker=run.controller()), C, ("b", 1), coarse=True)
    run.create(run.connect(broker=third), C, ("c", 1), coarse=True)


@scenario("quorum", "a forwarded throttle mutes only the connection that carried it", setup=QUORUM, rate=2)
def _(run: Run) -> None:
    """Kafka 4.4 mutes the client's connection in the broker that received the request (it forwarded it, and
    took the throttle from the controller's answer): a fresh connection to that broker, one to the controller and
    one to the third broker are answered at once; the throttled connection waits (its request is sent first)."""
    other, third = run.others()
    controller = run.controller()
    throttled = run.connect(broker=other)
    run.create(throttled, OC, ("a", 32))
    waiting = run.send_probe(throttled, "Metadata v12, the throttled connection")
    for label, broker in (("same broker", other), ("controller", controller), ("third broker", third)):
        run.muted(run.send_probe(run.connect(broker=broker), f"Metadata v12, fresh connection, {label}"))
    run.muted(waiting)


@scenario("quorum", "a restart of a broker that is not the controller keeps the debt", setup=QUORUM, rate=1)
def _(run: Run) -> None:
    """The debt is the controller's: a 60-partition create (49 s in debt at 1/s, burst 11) through a broker that
    then restarts is still owed through the restarted broker."""
    other, _ = run.others()
    run.create(run.connect(broker=other), OC, ("a", 60), coarse=True)
    run.stop(other)
    run.start(other)
    run.create(run.connect(broker=other), C, ("b", 1), coarse=True)


@scenario("quorum", "kill -9 of the controller forgives the debt; a muted connection stays muted", setup=QUORUM,
          rate=2)  # fmt: skip
def _(run: Run) -> None:
    """A 60-partition create through a broker that is not the controller: 19 s in debt, its connection muted. The
    active controller is killed: the new one starts the principal with a full bucket (a 30-partition create is
    throttled 4 s, as from a full bucket of 22, not 34 s), while the muted connection in the surviving broker still
    waits out its throttle."""
    other, third = run.others()
    killed = run.controller()
    throttled = run.connect(broker=other)
    run.create(throttled, OC, ("a", 60))
    probe = run.send_probe(throttled, "Metadata v12 on the muted connection")
    run.stop(killed, kill=True)
    run.controller()  # Kafka: until a new controller is elected
    # Until the broker's forwarding channel has found the new controller, a mutation waits in it (3.6 s seen), and
    # the throttle counts from when the controller handled it: a validate-only create of another (unbounded) client
    # id first, uncharged to ours.
    run.create(run.connect(client_id=f"{run.client_id}-other", broker=third), C, ("warm", 1), validate_only=True,
               coarse=True, step="CreateTopics v7 validate_only, another client id")  # fmt: skip
    run.create(run.connect(broker=third), OC, ("b", 30))
    run.muted(probe, over_ms=10_000)
    run.start(killed)


@scenario("quorum", "a request waiting in a muted connection when its broker stops is never applied",
          setup=QUORUM, rate=2)  # fmt: skip
def _(run: Run) -> None:
    """A create written into a muted connection waits unread in the broker; the broker stops (SIGTERM, a rolling
    restart's): the connection closes with no answer, and the topic is never created."""
    other, _ = run.others()
    throttled = run.connect(broker=other)
    run.create(throttled, OC, ("a", 40), coarse=True)
    behind = run.send_create(throttled, OC, ("b", 1), step="CreateTopics v4 behind the throttle")
    run.stop(other)
    run.receive_or_closed(behind)
    run.start(other)


@scenario("quorum", "a stopped broker stays registered; a replication factor above the registered is refused",
          setup=QUORUM, rate=2)  # fmt: skip
def _(run: Run) -> None:
    """One broker stopped (SIGTERM): a create of replication factor 3 is still admitted (the controller places a
    replica on the stopped broker), one of 4 (10 partitions) is refused with INVALID_REPLICATION_FACTOR ("only 3
    broker(s) are registered") and not charged: a 21-partition create after them leaves the bucket (22) at 0, not
    throttled; charged, rf4 would have left it 10 in debt."""
    other, third = run.others()
    run.stop(third)
    c = run.connect(broker=other)
    run.create(c, C, T("rf3", 1, 3), T("rf4", 10, 4))
    run.create(c, OC, ("x", 21), coarse=True)
    run.start(third)
