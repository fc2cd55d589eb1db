"""``_driver/metadata_wire.py`` against kafka-python's codec (an independent encoder): the request it writes, and
what it reads of a Metadata v1 answer (topics listed, partitions, leaders, errors)."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from throttled_admin._driver.metadata_wire import _parse, _request

R = MetadataResponse
P = R.MetadataResponseTopic.MetadataResponsePartition


def partition(index: int, leader: int, error: int = 0) -> object:
    return P(
        error_code=error, partition_index=index, leader_id=leader, leader_epoch=0, replica_nodes=[1, 2], isr_nodes=[1]
    )


def answer(correlation_id: int = 7) -> bytes:
    response = R(
        version=1,
        brokers=[R.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9000 + n, rack=None) for n in (0, 1)],
        controller_id=0,
        topics=[
            R.MetadataResponseTopic(
                error_code=0, name="ready", is_internal=False, partitions=[partition(0, 1), partition(1, 2)]
            ),
            R.MetadataResponseTopic(
                error_code=0, name="leaderless", is_internal=False, partitions=[partition(0, 1), partition(1, -1)]
            ),
            R.MetadataResponseTopic(
                error_code=0, name="sick", is_internal=False, partitions=[partition(0, 1, error=9)]
            ),
            R.MetadataResponseTopic(error_code=5, name="electing", is_internal=False, partitions=[]),
            R.MetadataResponseTopic(error_code=3, name="gone", is_internal=False, partitions=[]),
            R.MetadataResponseTopic(error_code=0, name="other", is_internal=False, partitions=[partition(0, 0)]),
        ],
    )
    return struct.pack(">i", correlation_id) + bytes(response.encode())


def test_what_a_broker_lists_of_the_topics_asked_about() -> None:
    names = ["ready", "leaderless", "sick", "electing", "gone", "absent"]
    brokers, view = _parse(answer(), set(names))
    assert brokers == {0: "127.0.0.1:9000", 1: "127.0.0.1:9001"}
    assert view == {
        "ready": (2, True),
        "leaderless": (2, False),
        "sick": (1, False),
        "electing": (0, False),  # listed with an error: not usable yet
    }  # UNKNOWN_TOPIC_OR_PARTITION and topics not in the answer are not listed


def test_an_answer_to_another_request_is_refused() -> None:
    with pytest.raises(ValueError, match="not the answer"):
        _parse(answer(correlation_id=8), {"ready"})


def test_a_truncated_answer_raises() -> None:
    with pytest.raises(struct.error):
        _parse(answer()[:40], {"ready"})


def test_the_request_is_metadata_v1_for_every_topic() -> None:
    frame = _request("me")
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    header = MetadataRequest(version=1, topics=None)
    header.with_header(correlation_id=7, client_id="me")
    assert frame == bytes(header.encode(header=True, framed=True))
