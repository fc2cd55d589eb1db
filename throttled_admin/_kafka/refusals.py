"""How brokers refuse a topic mutation, in their own words: KRaft's batch cap and its three messages, Kafka's
message for the mutation quota, and Redpanda's. The test broker (``throttled_admin.testing``) answers with them;
the engine recognises them (``_engine/batch_cap.py``, ``_engine/classify.py``), so each is written once, here.

The tests spell every one of them out on their own (``tests/test_broker_cap.py``, ``tests/test_broker_redpanda.py``,
``tests/test_errors.py``, ``tests/test_java_reference.py`` against Java's AdminClient), so a slip here fails there
instead of passing on both sides.
"""

from __future__ import annotations

__all__ = [
    "BATCH_CAP_MESSAGES",
    "MAX_RECORDS_PER_USER_OP",
    "REDPANDA_QUOTA_MESSAGE",
    "THROTTLING_QUOTA_MESSAGE",
    "TOO_LARGE_BATCH_MESSAGE",
    "TOO_MANY_ADDED_PARTITIONS_MESSAGE",
    "TOO_MANY_PARTITIONS_MESSAGE",
]

# QuorumController.MAX_RECORDS_PER_USER_OP: one operation may make at most this many metadata records; past it the
# whole operation fails (its BoundedList overflows) and nothing is applied or charged. ReplicationControlManager's
# MAX_PARTITIONS_PER_BATCH is the same number. Both are constants in Kafka 4.4.0 (no setting names them); other
# clusters use other caps (AutoMQ raised it).
MAX_RECORDS_PER_USER_OP = 10_000
# POLICY_VIOLATION's messages for a request over the cap, refused whole:
# QuorumController: an operation making more than the cap's records
TOO_LARGE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."
# ReplicationControlManager: a CreateTopics whose partitions add up to more than the cap
TOO_MANY_PARTITIONS_MESSAGE = "Excessively large number of partitions per request."
# Kafka 4.4's ReplicationControlManager: a CreatePartitions adding more than the cap
TOO_MANY_ADDED_PARTITIONS_MESSAGE = "Excessively large number of additional partitions per request."
BATCH_CAP_MESSAGES = (TOO_MANY_PARTITIONS_MESSAGE, TOO_MANY_ADDED_PARTITIONS_MESSAGE, TOO_LARGE_BATCH_MESSAGE)

# Errors.THROTTLING_QUOTA_EXCEEDED's default message (error 89, KIP-599): what Java's AdminClient says when the
# response carries no message of its own
THROTTLING_QUOTA_MESSAGE = "The throttling quota has been exceeded."

# Redpanda's refusal past the partition-mutation quota: error 89 from CreateTopics v6, DeleteTopics v5 and
# CreatePartitions v3 on, UNKNOWN_SERVER_ERROR (-1) below, always with this message
REDPANDA_QUOTA_MESSAGE = "Too many partition mutations requested"
