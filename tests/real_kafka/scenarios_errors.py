"""Differential scenarios on per-topic errors: codes and messages, duplicate names, the batch cap, and invalid
names, partition counts, replication factors and configs. No quota (unbounded), unless a scenario sets one."""

from __future__ import annotations

import uuid

from tests.real_kafka.differential import PERMISSIVE, SMALL, STRICT, Exact, Run, T, scenario

C, D, G = STRICT["create"], STRICT["delete"], STRICT["grow"]
OC, OD, OG = PERMISSIVE["create"], PERMISSIVE["delete"], PERMISSIVE["grow"]
UNREGISTERED = 1000  # a broker index far past the cluster: no such broker is registered


# -- per-topic error codes and messages ---------------------------------------------------------------------


@scenario("errors", "create a topic that exists, strict and permissive")
def _(run: Run) -> None:
    run.setup(("a", 1))
    c = run.connect()
    run.create(c, C, ("a", 1))
    run.create(c, OC, ("a", 2))


@scenario("errors", "delete a topic that does not exist, by name")
def _(run: Run) -> None:
    c = run.connect()
    run.delete(c, D, "missing")
    run.delete(c, OD, "missing")


@scenario("errors", "delete by a topic id no topic has, and by name and id at once")
def _(run: Run) -> None:
    c = run.connect()
    run.delete(c, D, (None, uuid.UUID(int=12345)))
    run.delete(c, D, ("a", uuid.UUID(int=7)), (None, None))


@scenario("errors", "grow a topic that does not exist")
def _(run: Run) -> None:
    c = run.connect()
    run.grow(c, G, ("missing", 2))
    run.grow(c, OG, ("missing", 2))


@scenario("errors", "grow to the same count and to fewer partitions")
def _(run: Run) -> None:
    run.setup(("g", 3))
    run.grow(run.connect(), G, ("g", 3))
    run.grow(run.connect(), G, ("g", 2))


@scenario("errors", "a name that collides with an existing one through '.' and '_'")
def _(run: Run) -> None:
    run.setup(("a.b", 1))
    run.create(run.connect(), C, ("a_b", 1))


@scenario("errors", "__cluster_metadata cannot be created")
def _(run: Run) -> None:
    run.create(run.connect(), C, (Exact("__cluster_metadata"), 1), ("a", 1))


@scenario("errors", "grow with fewer assignments than new partitions")
def _(run: Run) -> None:
    run.setup(("g", 1))
    run.grow(run.connect(), G, ("g", 3, [[0]]))


@scenario("errors", "a mixed request: one good topic among failing ones")
def _(run: Run) -> None:
    run.setup(("exists", 1))
    run.create(run.connect(), C, ("exists", 1), ("new", 2), T("bad", 0), ("new2", 1, 5))


# -- duplicate names ------------------------------------------------------------------------------------------


@scenario("duplicates", "CreateTopics v7 naming a topic twice")
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 1), ("a", 2), ("b", 1))


@scenario("duplicates", "CreateTopics v4 naming a topic twice")
def _(run: Run) -> None:
    run.create(run.connect(), OC, ("a", 1), ("b", 1), ("a", 1))


@scenario("duplicates", "DeleteTopics v6 naming a topic twice")
def _(run: Run) -> None:
    run.setup(("a", 1), ("b", 1))
    run.delete(run.connect(), D, "a", "a", "b")


@scenario("duplicates", "CreateTopics v7: a repeated name and __cluster_metadata")
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 1), (Exact("__cluster_metadata"), 1), ("b", 1), ("a", 1), ("c", 1))


@scenario("duplicates", "DeleteTopics v4 naming a topic twice")
def _(run: Run) -> None:
    run.setup(("a", 1))
    run.delete(run.connect(), OD, "a", "a")


@scenario("duplicates", "CreatePartitions v3 naming a topic twice")
def _(run: Run) -> None:
    run.setup(("g", 1), ("h", 1))
    run.grow(run.connect(), G, ("g", 2), ("h", 2), ("g", 3))


@scenario("duplicates", "a repeated name is not charged", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 12), ("a", 12))
    run.create(c, C, ("b", 8))


# -- the batch cap (Kafka 4.4: fixed at 10,000, see docs/testing-broker.md) ---------------------------------


@scenario("batch-cap", "one topic of 10,001 partitions")
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 10_001))


@scenario("batch-cap", "two topics adding up to 11,000 partitions, validate_only")
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 6_000), ("b", 5_000), validate_only=True)


@scenario("batch-cap", "one topic of 10,000 partitions makes 10,001 records, validate_only")
def _(run: Run) -> None:
    run.create(run.connect(), C, ("a", 10_000), validate_only=True)


@scenario("batch-cap", "5,001 one-partition topics make 10,002 records")
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, *[(f"t{i}", 1) for i in range(5_001)], step="CreateTopics v7 of 5,001 topics")


@scenario("batch-cap", "4,999 one-partition topics and one with a config override, validate_only")
def _(run: Run) -> None:
    topics = [T(f"t{i}", 1) for i in range(4_999)] + [T("c", 1, configs={"retention.ms": "1000"})]
    run.create(run.connect(), C, *topics, validate_only=True, step="CreateTopics v7 of 5,000 topics")


@scenario("batch-cap", "grow by 10,001 partitions, validate_only")
def _(run: Run) -> None:
    run.setup(("g", 1))
    run.grow(run.connect(), G, ("g", 10_002), validate_only=True)


@scenario("batch-cap", "grow two topics by 6,000 and 5,000, validate_only")
def _(run: Run) -> None:
    run.setup(("g", 1), ("h", 1))
    run.grow(run.connect(), G, ("g", 6_001), ("h", 5_001), validate_only=True)


@scenario("batch-cap", "grow by exactly 10,000 partitions, validate_only")
def _(run: Run) -> None:
    run.setup(("g", 1))
    run.grow(run.connect(), G, ("g", 10_001), validate_only=True)


# -- invalid names, partition counts, replication factors and configs ----------------------------------------


@scenario("invalid", "illegal topic names")
def _(run: Run) -> None:
    names = [Exact(""), Exact("."), Exact(".."), "x" * 250, "bad name!", "a/b"]
    run.create(run.connect(), C, *[(n, 1) for n in names])


@scenario("invalid", "the longest legal name is 249 characters")
def _(run: Run) -> None:
    run.create(run.connect(), C, ("y" * (249 - len(run.ns.prefix)), 1), ("z" * (250 - len(run.ns.prefix)), 1))


@scenario("invalid", "partition counts 0, -2 and -1 (the broker's num.partitions)", setup=SMALL)
def _(run: Run) -> None:
    run.create(run.connect(), C, ("p0", 0), ("pneg", -2), ("pdef", -1))


@scenario("invalid", "replication factors 0, -2, 2 on one broker and -1")
def _(run: Run) -> None:
    run.create(run.connect(), C, ("r0", 1, 0), ("rneg", 1, -2), ("r2", 1, 2), ("rdef", 1, -1))


@scenario("invalid", "manual assignments: with a count, with a factor, an unregistered broker")
def _(run: Run) -> None:
    run.create(
        run.connect(),
        C,
        T("withcount", 2, -1, assignments=[(0, [0])]),
        T("withrf", -1, 1, assignments=[(0, [0])]),
        T("unknown", -1, -1, assignments=[(0, [UNREGISTERED])]),
        T("twice", -1, -1, assignments=[(0, [0, 0])]),
        T("gap", -1, -1, assignments=[(0, [0]), (2, [0])]),
        T("good", -1, -1, assignments=[(0, [0]), (1, [0])]),
        nodes=True,
    )


@scenario("invalid", "configs: an unknown name, a bad value, a null value")
def _(run: Run) -> None:
    run.create(
        run.connect(),
        C,
        T("unknown", 1, configs={"no.such.config": "1"}),
        T("bogus", 1, configs={"cleanup.policy": "bogus"}),
        T("notanumber", 1, configs={"retention.ms": "soon"}),
        T("null", 1, configs={"retention.ms": None}),
    )


@scenario("invalid", "configs: out of range, and compaction lags the wrong way round")
def _(run: Run) -> None:
    run.create(
        run.connect(),
        C,
        T("small", 1, configs={"segment.bytes": "1000"}),
        T("lags", 1, configs={"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}),
        T("remote", 1, configs={"remote.storage.enable": "true"}),
        T("good", 1, configs={"cleanup.policy": "compact,delete", "retention.ms": "1000"}),
    )


@scenario("invalid", "configs: message.format.version and other names gone in Kafka 4")
def _(run: Run) -> None:
    run.create(
        run.connect(),
        C,
        T("format", 1, configs={"message.format.version": "3.0"}),
        T("difference", 1, configs={"message.timestamp.difference.max.ms": "1000"}),
        T("downconversion", 1, configs={"message.downconversion.enable": "true"}),
    )


@scenario("invalid", "configs: Kafka 4.4's new ones, and an empty element in a list")
def _(run: Run) -> None:
    run.create(
        run.connect(),
        C,
        T("empty", 1, configs={"cleanup.policy": ",delete"}),
        T("decompressed", 1, configs={"max.decompressed.message.bytes": "0"}),
        T("lag", 1, configs={"remote.copy.lag.ms": "-2"}),
        T("dlq", 1, configs={"errors.deadletterqueue.group.enable": "maybe"}),
        T("good", 1, configs={"remote.copy.lag.bytes": "0", "cleanup.policy": ""}),
        validate_only=True,
    )


@scenario("invalid", "grow with an unregistered broker and a repeated one")
def _(run: Run) -> None:
    run.setup(("g", 1), ("h", 1))
    run.grow(run.connect(), G, ("g", 2, [[UNREGISTERED]]), ("h", 2, [[0, 0]]), nodes=True)


@scenario("invalid", "grow to 0 and to a negative count")
def _(run: Run) -> None:
    run.setup(("g", 2))
    run.grow(run.connect(), G, ("g", 0))
    run.grow(run.connect(), G, ("g", -1))
