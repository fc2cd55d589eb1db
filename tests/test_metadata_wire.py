"""``_driver/metadata_wire.py`` (Metadata v10 to v13) against kafka-python's codec, an independent encoder built from
Kafka's JSON schemas: the request it writes for each version, and what it reads of each version's answer (the
topics asked about, partitions, leaders, errors and topic ids)."""

from __future__ import annotations

import struct
import uuid

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from throttled_admin._driver import metadata_wire
from throttled_admin._driver.wire_codec import Reader, request_frame, response_body
from throttled_admin._engine.visibility import TopicView

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
        "leaderless": TopicView(2, False, OLD),
        "sick": (1, False, got.topics["sick"].topic_id),
        "electing": TopicView(0, False, None),  # listed with an error: not usable yet, no id (zero UUID)
    }  # UNKNOWN_TOPIC_OR_PARTITION, and topics not asked about, are not shown
    assert got.error_code == 0


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
    """The partitions are read in place, a few fields at once (issue 40): a cut anywhere still raises, never reads
    past the end nor takes what is there for a whole answer."""
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


def test_structures_read_in_place_take_long_arrays_null_arrays_and_tags_the_slow_way() -> None:
    """``Reader.structs`` (a Metadata answer's partitions, issue 40) skips one-byte array lengths in place; a length
    of two bytes (127 replicas or more), a null array and a tagged field go the general way, to the same place."""
    layout = struct.Struct(">hi")

    def compact_int32s(count: int) -> bytes:
        length = count + 1
        varint = bytes([length]) if length < 0x80 else bytes([(length & 0x7F) | 0x80, length >> 7])
        return varint + struct.pack(f">{count}i", *range(count))

    data = (
        layout.pack(0, 1)
        + compact_int32s(2)
        + compact_int32s(200)
        + b"\x00"  # no tags
        + layout.pack(9, 2)
        + b"\x00"
        + compact_int32s(0)
        + bytes([1, 3, 2, 0xAA, 0xBB])  # null array, one tag
        + struct.pack(">i", 42)
    )
    reader = Reader(data)
    assert reader.structs(2, layout, 2) == [(0, 1), (9, 2)]
    assert reader.int32() == 42
    for cut in range(len(data) - 4):
        with pytest.raises(ValueError, match="ends early"):
            Reader(data[:cut]).structs(2, layout, 2)
