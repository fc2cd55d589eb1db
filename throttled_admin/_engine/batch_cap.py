"""The most KRaft metadata records one mutation request may make: Kafka 4's batch cap, learned per client.

A KRaft controller refuses a whole request that is too large, applying nothing, with POLICY_VIOLATION and one of
three messages: "Excessively large number of partitions per request." (``ReplicationControlManager``: a
CreateTopics whose partitions add up to more than the cap), "Excessively large number of additional partitions per
request." (Kafka 4.4: a CreatePartitions adding more) and "Unable to perform excessively large batch operation."
(``QuorumController``: an operation making more than the cap's metadata records). The cap is
``MAX_RECORDS_PER_USER_OP`` = 10,000, a constant in Kafka 4.4.0; other clusters use other caps (AutoMQ raised it),
so the client learns it. The cap and the messages are in ``_kafka/refusals.py``, shared with the test broker.

The engine sizes requests by records (a topic's own estimate, never below what the controller counts), starting
at 10,000. A request of several topics refused whole with one of those messages halves the limit below its own
size, and its topics are sent again at once in smaller requests, within their deadlines; a lone topic refused so
is larger than the cap by itself and gets the broker's error. Any other POLICY_VIOLATION (a CreateTopicPolicy's)
is the topic's own answer: Kafka's AdminClient cannot tell them apart by code (KAFKA-19327), the messages can.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from throttled_admin._kafka.refusals import BATCH_CAP_MESSAGES, MAX_RECORDS_PER_USER_OP

__all__ = ["BATCH_CAP_MESSAGES", "MAX_RECORDS_PER_REQUEST", "BatchCap", "is_batch_cap"]

MAX_RECORDS_PER_REQUEST = MAX_RECORDS_PER_USER_OP  # the limit to start from: Kafka 4.4's cap


def is_batch_cap(error: KafkaError) -> bool:
    """POLICY_VIOLATION with one of the controller's batch-cap messages."""
    return error.code() == KafkaError.POLICY_VIOLATION and error.str() in BATCH_CAP_MESSAGES


class BatchCap:
    """Not thread-safe: the engine's own state."""

    def __init__(self, limit: int = MAX_RECORDS_PER_REQUEST) -> None:
        self.limit = limit
        self.refusals = 0

    def refused(self, records: int) -> None:
        """A request of ``records`` records (several topics) was refused whole: the cap is below it."""
        self.refusals += 1
        self.limit = min(self.limit, max(1, records // 2))
