"""``_driver/quorum_wire.py`` (DescribeQuorum v0 to v2) against kafka-python's codec, an independent encoder built
from Kafka's JSON schemas: the request it writes for each version, and what it reads of each version's answer (the
metadata log's leader and epoch, or the error)."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin.cluster import DescribeQuorumRequest, DescribeQuorumResponse

from throttled_admin._driver import quorum_wire
from throttled_admin._driver.quorum_wire import QuorumAnswer
from throttled_admin._driver.wire_codec import request_frame, response_body

R = DescribeQuorumResponse
P = R.TopicData.PartitionData
VERSIONS = range(quorum_wire.MIN_VERSION, quorum_wire.MAX_VERSION + 1)
CLUSTER_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION = 31, 3


def replica(node: int) -> object:
    return P.ReplicaState(
        replica_id=node,
        replica_directory_id=uuid.uuid4(),
        log_end_offset=40,
        last_fetch_timestamp=1,
        last_caught_up_timestamp=2,
    )


def answer(version: int, *, error: int = 0, partition_error: int = 0, correlation_id: int = 7) -> bytes:
    """A controller's answer, encoded by kafka-python (response header v1: correlation id and tagged fields), with
    every field the reader skips filled in: the high watermark, voters, observers, v2's nodes."""
    data = P(partition_index=0, error_code=partition_error, error_message="no" if partition_error else None)
    data.leader_id, data.leader_epoch, data.high_watermark = 3000, 17, 40
    data.current_voters, data.observers = [replica(3000), replica(3001)], [replica(1)]
    node = R.Node(node_id=3000, listeners=[R.Node.Listener(name="CONTROLLER", host="127.0.0.1", port=9093)])
    response = R(
        version=version,
        error_code=error,
        error_message="refused" if error else None,
        topics=[R.TopicData(topic_name=quorum_wire.METADATA_TOPIC, partitions=[data])],
        nodes=[node],
    )
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True))


@pytest.mark.parametrize("version", VERSIONS)
def test_the_request_asks_for_the_metadata_logs_partition(version: int) -> None:
    ours = request_frame(quorum_wire.API_KEY, version, 7, "me", quorum_wire.encode(version), flexible=True)
    topic = DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)]
    )
    reference = DescribeQuorumRequest(version=version, topics=[topic])
    reference.with_header(correlation_id=7, client_id="me")
    assert ours == bytes(reference.encode(header=True, framed=True))


@pytest.mark.parametrize("version", VERSIONS)
def test_the_leader_and_its_epoch_are_read(version: int) -> None:
    body = response_body(answer(version), 7, flexible=True)
    assert quorum_wire.decode(version, body) == QuorumAnswer(0, 3000, 17)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_refusal_is_its_error_whole_or_for_the_partition(version: int) -> None:
    refused = response_body(answer(version, error=CLUSTER_AUTHORIZATION_FAILED), 7, flexible=True)
    assert quorum_wire.decode(version, refused) == QuorumAnswer(CLUSTER_AUTHORIZATION_FAILED)
    unknown = response_body(answer(version, partition_error=UNKNOWN_TOPIC_OR_PARTITION), 7, flexible=True)
    assert quorum_wire.decode(version, unknown) == QuorumAnswer(UNKNOWN_TOPIC_OR_PARTITION)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_answer_cut_before_the_epoch_raises_that_it_ends_early(version: int) -> None:
    whole = answer(version)
    # where the epoch ends: the header (correlation id, tags), the error, one topic (its name), one partition (index,
    # error, leader, epoch), and v2's two null error messages
    read = 4 + 1 + 2 + 1 + (1 + len(quorum_wire.METADATA_TOPIC)) + 1 + 4 + 2 + 4 + 4 + (2 if version >= 2 else 0)
    assert quorum_wire.decode(version, response_body(whole[:read], 7, flexible=True)).leader_epoch == 17
    for cut in range(4, read):
        with pytest.raises(ValueError, match="ends early"):
            quorum_wire.decode(version, response_body(whole[:cut], 7, flexible=True))


def test_an_answer_naming_no_partition_is_refused() -> None:
    response = R(version=2, error_code=0, error_message=None, topics=[], nodes=[])
    response.with_header(correlation_id=7)
    with pytest.raises(ValueError, match="no partition"):
        quorum_wire.decode(2, response_body(bytes(response.encode(header=True)), 7, flexible=True))
