"""``_driver/metadata_wire.py`` (Metadata v10 to v13) against kafka-python's codec, an independent encoder built from
Kafka's JSON schemas: the request it writes for each version, and what it reads of each version's answer (the
topics asked about, partitions, leaders, errors and topic ids)."""

from __future__ import annotations

import struct
import uuid

import pytest
from confluent_kafka.admin import NewPartitions
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from throttled_admin._driver import metadata_wire
from throttled_admin._driver.wire_codec import Reader, Writer, request_frame, response_body
from throttled_admin._engine.visibility import TopicView, lagging

R = MetadataResponse
P = R.MetadataResponseTopic.MetadataResponsePartition
READY, OLD = uuid.uuid4(), uuid.uuid4()
VERSIONS = range(metadata_wire.MIN_VERSION, metadata_wire.MAX_VERSION + 1)


def partition(index: int, leader: int, error: int = 0) -> object:
    return P(
        error_code=error,
        partition_index=index,
        leader_id=leader,
        leader_epoch=3,
        replica_nodes=[1, 2],
        isr_nodes=[1],
        offline_replicas=[2],
    )


def topic(
    name: str | None, topic_id: uuid.UUID | None, error: int = 0, partitions: list[object] | None = None
) -> object:
    return R.MetadataResponseTopic(
        error_code=error,
        name=name,
        topic_id=topic_id or uuid.UUID(int=0),
        is_internal=False,
        partitions=partitions or [],
        authorized_operations=None,
    )


def answer(version: int, correlation_id: int = 7) -> bytes:
    """A broker's answer, encoded by kafka-python (response header v1: correlation id and tagged fields)."""
    response = R(
        version=version,
        throttle_time_ms=0,
        brokers=[R.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9000 + n, rack="r") for n in (0, 1)],
        cluster_id="c",
        controller_id=0,
        topics=[
            topic("ready", READY, partitions=[partition(0, 1), partition(1, 2)]),
            topic("leaderless", OLD, partitions=[partition(0, 1), partition(1, -1)]),
            topic("sick", uuid.uuid4(), partitions=[partition(0, 1, error=9)]),
            topic("electing", None, error=5),
            topic("gone", None, error=3),
            topic("other", uuid.uuid4(), partitions=[partition(0, 0)]),
        ],
        authorized_operations=None,
        error_code=0,
    )
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True))


@pytest.mark.parametrize("version", VERSIONS)
def test_what_a_broker_shows_of_the_topics_asked_about(version: int) -> None:
    names = {"ready", "leaderless", "sick", "electing", "gone", "absent"}
    got = metadata_wire.decode(version, response_body(answer(version), 7, flexible=True), names)
    assert got.brokers == {0: "127.0.0.1:9000", 1: "127.0.0.1:9001"}
    assert got.topics == {
        "ready": TopicView(2, True, READY),
        "leaderless": TopicView(2, False, OLD, frozenset({1})),  # the partitions without a leader, by index
        "sick": (1, False, got.topics["sick"].topic_id, frozenset({0})),  # ... or with an error
        "electing": TopicView(0, False, None),  # listed with an error: not usable yet, no id (zero UUID)
    }  # UNKNOWN_TOPIC_OR_PARTITION, and topics not asked about, are not shown
    assert got.error_code == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_a_topic_error_leaves_a_grow_unshown_whatever_its_partitions(version: int) -> None:
    """Helper 111's leftover: a broker listing a grown topic with a topic-level error (LEADER_NOT_AVAILABLE) and a
    partition without a leader before the added ones showed the grow: the added partitions' leaders alone decided."""
    response = R(
        version=version,
        throttle_time_ms=0,
        brokers=[R.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=9000, rack=None)],
        cluster_id="c",
        controller_id=0,
        topics=[topic("grown", READY, error=5, partitions=[partition(0, -1), partition(1, 0), partition(2, 0)])],
        authorized_operations=None,
        error_code=0,
    )
    response.with_header(correlation_id=7)
    got = metadata_wire.decode(version, response_body(bytes(response.encode(header=True)), 7, flexible=True), {"grown"})
    assert got.topics == {"grown": TopicView(3, False, READY, frozenset({0, 1, 2}))}
    assert lagging("CreatePartitions", "grown", NewPartitions("grown", 3), {0: got.topics}, added=1) == (0,)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_request_names_the_topics_and_creates_none(version: int) -> None:
    body = metadata_wire.encode(version, ["a", "b"])
    ours = request_frame(metadata_wire.API_KEY, version, 7, "me", body, flexible=True)
    reference = MetadataRequest(
        version=version,
        topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=name) for name in ("a", "b")],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    reference.with_header(correlation_id=7, client_id="me")
    assert ours == bytes(reference.encode(header=True, framed=True))


def test_no_names_asks_for_the_brokers_only() -> None:
    reference = MetadataRequest(
        version=12, topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    reference.with_header(correlation_id=1, client_id="me")
    ours = request_frame(metadata_wire.API_KEY, 12, 1, "me", metadata_wire.encode(12, []), flexible=True)
    assert ours == bytes(reference.encode(header=True, framed=True))


def test_an_answer_to_another_request_is_refused() -> None:
    with pytest.raises(ValueError, match="not the answer"):
        response_body(answer(12, correlation_id=8), 7, flexible=True)


@pytest.mark.parametrize("cut", [10, 40, 90])
def test_a_truncated_answer_raises(cut: int) -> None:
    with pytest.raises(ValueError, match="ends early"):
        metadata_wire.decode(12, response_body(answer(12)[:cut], 7, flexible=True), {"ready"})


@pytest.mark.parametrize("version", VERSIONS)
def test_an_answer_cut_anywhere_raises_that_it_ends_early(version: int) -> None:
    """The answer is read in place, without a method call a field (issue 40): a cut anywhere still raises, never
    reads past the end nor takes what is there for a whole answer."""
    whole = answer(version)
    for cut in range(8, len(whole)):
        with pytest.raises(ValueError, match="ends early"):
            metadata_wire.decode(version, response_body(whole[:cut], 7, flexible=True), {"ready"})


def test_tagged_fields_the_reader_does_not_know_are_skipped() -> None:
    """KIP-482: a broker may add tagged fields to any flexible structure; a reader skips what it does not know."""
    data = bytes([2, 0, 1, 0xAA, 5, 2, 0xBB, 0xCC]) + struct.pack(">i", 42)  # two tags, then an int32
    reader = Reader(data)
    reader.skip_tags()
    assert reader.int32() == 42


def test_long_arrays_long_names_null_arrays_and_tagged_fields_are_read_the_slow_way_to_the_same_place() -> None:
    """The decoder reads in place (issue 40) with one-byte lengths as its fast path; a length of two bytes (127
    replicas or more, a name of 127 bytes or more), a null array or name, and a tagged field anywhere (KIP-482: a
    broker may add them to any flexible structure) go the general way. A cut anywhere still raises."""

    def varint(value: int) -> bytes:
        return bytes([value]) if value < 0x80 else bytes([(value & 0x7F) | 0x80, value >> 7])

    def compact_int32s(count: int) -> bytes:
        return varint(count + 1) + struct.pack(f">{count}i", *range(count))

    def string(text: str) -> bytes:
        return varint(len(text.encode()) + 1) + text.encode()

    one_tag = bytes([1, 3, 2, 0xAA, 0xBB])  # one tagged field: tag 3, two bytes
    long_name = "t" * 200

    def topic(name: bytes, topic_id: uuid.UUID, partitions: bytes, count: int) -> bytes:
        return struct.pack(">h", 0) + name + topic_id.bytes + b"\x00" + varint(count + 1) + partitions

    body = (
        struct.pack(">i", 0)  # throttle_time_ms
        + varint(2)  # one broker
        + struct.pack(">i", 4)
        + string("127.0.0.1")
        + struct.pack(">i", 9094)
        + b"\x00"  # a null rack
        + one_tag
        + b"\x00"  # a null cluster id
        + struct.pack(">i", 4)  # controller id
        + varint(3)  # two topics
        + topic(
            string(long_name),
            READY,
            struct.pack(">hiii", 0, 0, 4, 1)
            + b"\x00"  # null replicas
            + compact_int32s(200)  # in-sync: a two-byte length
            + compact_int32s(0)
            + one_tag
            + struct.pack(">hiii", 0, 1, 4, 1)
            + compact_int32s(1) * 3
            + b"\x00",
            2,
        )
        + struct.pack(">i", 0)  # topic_authorized_operations
        + one_tag
        + topic(b"\x00", OLD, b"", 0)  # a null name: not one asked about
        + struct.pack(">i", 0)
        + b"\x00"
        + one_tag  # the answer's own tagged fields
    )
    got = metadata_wire.decode(12, Reader(body), {long_name})
    assert got.brokers == {4: "127.0.0.1:9094"}
    assert got.topics == {long_name: TopicView(2, True, READY)}
    for cut in range(len(body)):
        with pytest.raises(ValueError, match="ends early"):
            metadata_wire.decode(12, Reader(body[:cut]), {long_name})


# A partition's nodes: null, or up to 20 (the fast path takes 14 at most; a two-byte length, 127 or more, is above)
_NODES = st.one_of(st.none(), st.lists(st.integers(0, 9), max_size=20))
_TAGS = st.one_of(st.just(b"\x00"), st.just(bytes([1, 3, 2, 0xAA, 0xBB])))


@st.composite
def partitions(draw: st.DrawFn, led: bool = False) -> bytes:
    """A partition as a broker writes it: any error, any leader (-1: none), nodes of any number or null, tags;
    ``led``: one the fast path takes (no error, a leader, at most 14 nodes an array, no tags)."""
    error = 0 if led else draw(st.sampled_from([0, 0, 0, 5, 9]))
    leader = draw(st.sampled_from([0, 1, 7, 2**31 - 1] if led else [0, 1, 7, -1, 2**31 - 1]))
    data = struct.pack(">hiii", error, draw(st.integers(0, 99)), leader, draw(st.integers(0, 9)))
    nodes = st.lists(st.integers(0, 9), max_size=14) if led else _NODES
    for some in (draw(nodes) for _ in range(3)):
        data += b"\x00" if some is None else bytes([len(some) + 1]) + struct.pack(f">{len(some)}i", *some)
    return data + (b"\x00" if led else draw(_TAGS))


@given(
    st.one_of(st.lists(partitions(), max_size=8), st.lists(partitions(led=True), max_size=30)),
    st.integers(0, 400),
)
def test_partitions_read_in_one_match_are_read_as_one_by_one(parts: list[bytes], cut: int) -> None:
    """The fast path (every partition led, short arrays, no tags: one regular-expression match, issue 40) says what
    the partition-at-a-time reader says, and stops at the same place; cut short, both fail."""
    data = b"\x07" + b"".join(parts) + b"\x00"  # a byte before and after: neither is read as a partition
    for whole in (data, data[: 1 + cut]):
        try:
            expected: tuple[frozenset[int], int] | type[Exception] = metadata_wire._partitions_one_by_one(
                whole, 1, len(parts)
            )
        except (IndexError, struct.error):
            expected = IndexError
        try:
            got: tuple[frozenset[int], int] | type[Exception] = metadata_wire._partitions(whole, 1, len(parts))
        except (IndexError, struct.error):
            got = IndexError
        assert got == expected


@pytest.mark.parametrize("count", [3, 2**32 - 1, 2**35 - 2])
def test_more_partitions_than_the_answer_holds_is_an_answer_cut_short(count: int) -> None:
    """A count no answer of this length can hold (each partition takes 18 bytes at least) is read as an answer that
    ends early, never tried as a pattern (a repeat count past 2**32 - 2 is one Python's ``re`` refuses)."""
    body = (
        struct.pack(">i", 0)  # throttle_time_ms
        + b"\x01"  # no broker
        + b"\x00"  # a null cluster id
        + struct.pack(">i", 1)  # controller id
        + b"\x02"  # one topic
        + struct.pack(">h", 0)
        + b"\x06ready"
        + READY.bytes
        + b"\x00"
        + Writer().uvarint(count + 1).build()  # its partitions: more than follow
        + struct.pack(">hiii", 0, 0, 1, 1)
        + b"\x02\x00\x00\x00\x01" * 2
        + b"\x01\x00"
    )
    with pytest.raises(ValueError, match="ends early"):
        metadata_wire.decode(12, Reader(body), {"ready"})
