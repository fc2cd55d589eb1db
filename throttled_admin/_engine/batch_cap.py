"""The most KRaft metadata records one mutation request may make: Kafka 4's batch cap, learned per client.

A KRaft controller refuses a whole request that is too large, applying nothing, with POLICY_VIOLATION and one of
three messages: "Excessively large number of partitions per request." (``ReplicationControlManager``: a
CreateTopics whose partitions add up to more than the cap), "Excessively large number of additional partitions per
request." (Kafka 4.4: a CreatePartitions adding more) and "Unable to perform excessively large batch operation."
(``QuorumController``: an operation making more than the cap's metadata records). The cap is
``MAX_RECORDS_PER_USER_OP`` = 10,000, a constant in Kafka 4.4.0; Kafka 4.5 makes it a setting (KAFKA-20976) and its
words may change, other clusters use other caps (AutoMQ raised it), so the client learns it. The cap and the
messages are in ``_kafka/refusals.py``, shared with the test broker.

A refusal is the cap's by its words, or by its shape: every topic of a request of several refused POLICY_VIOLATION
with one message, none applied, the request larger (in records) than the largest this client saw accepted (or at
any size, once its words were so taken: a cap lowered since refuses what it accepted before). The
engine sizes requests by records (a topic's own estimate, never below what the controller counts), starting at
10,000. A cap refusal of several topics sets the limit below the refused size but never below the largest request
accepted (``max(largest accepted, refused // 2)``), and its topics are sent again at once in smaller requests,
within their deadlines; a lone topic refused so gets the broker's error. A CreateTopicPolicy that refuses some
topics of a request (other messages, or some applied) is each topic's own answer; one that refuses every topic
with one message costs a few extra requests, once: halving down to a lone topic, refused alike, proves the words a
policy's; the limit goes back to what it was, and the topics left go whole again, each with the policy's error.
A lone topic larger than the limit, refused alone, proves nothing: it may be over the cap by itself.

A limit learned is not kept for the client's life: a cap raised since (Kafka 4.5's setting changed, a controller of
a newer version elected) would leave a long-lived client in small requests. Once ``PROBE_AFTER`` requests of at
least half the limit have passed it since it was lowered, the next may make up to twice the limit: a probe, never
above the limit started from, one at a time, and marked when composed (a second lane's request built under an
older, higher limit is none). A probe applied raises the limit to its size, and the next request probes again; a
probe refused leaves the limit, its topics go again at once in requests of the limit, and the next probe waits twice
as many requests (up to 32 times ``PROBE_AFTER``). So a cap that stays low costs one refused request in every
``PROBE_AFTER`` to 1,024 requests, and a cap raised is followed by doubling. A probe refused alike in words not yet
the cap's does not make them the cap's: a policy refusing the probe refuses its topics again in requests of the
limit, which the cluster accepted, and each gets its error. A limit raised also raises the one that words taken by
shape give back once a lone topic proves them a policy's.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from throttled_admin._kafka.refusals import BATCH_CAP_MESSAGES, MAX_RECORDS_PER_USER_OP

__all__ = [
    "BATCH_CAP_MESSAGES",
    "MAX_RECORDS_PER_REQUEST",
    "PROBE_AFTER",
    "BatchCap",
    "is_batch_cap",
    "refused_alike",
]

MAX_RECORDS_PER_REQUEST = MAX_RECORDS_PER_USER_OP  # the limit to start from: Kafka 4.4's cap
PROBE_AFTER = 32  # requests of at least half a lowered limit accepted before a request may make twice the limit


def is_batch_cap(error: KafkaError) -> bool:
    """POLICY_VIOLATION with one of the controller's batch-cap messages."""
    return error.code() == KafkaError.POLICY_VIOLATION and error.str() in BATCH_CAP_MESSAGES


def refused_alike(errors: list[KafkaError | None]) -> str | None:
    """Several topics, every one refused POLICY_VIOLATION with one and the same message (none applied): that
    message."""
    if len(errors) < 2 or any(e is None or e.code() != KafkaError.POLICY_VIOLATION for e in errors):
        return None
    messages = {e.str() for e in errors if e is not None}
    return messages.pop() if len(messages) == 1 else None


class BatchCap:
    """Not thread-safe: the engine's own state."""

    def __init__(self, limit: int = MAX_RECORDS_PER_REQUEST, probe_after: int = PROBE_AFTER) -> None:
        self.limit = limit
        self._start = limit  # the probe's ceiling
        self._first_probe_after = probe_after
        self._probe_after = probe_after  # requests of at least half the limit accepted before the next probe
        self._since = 0  # such requests since the limit was lowered or a probe refused
        self._probe: int | None = None  # the request out as a probe (its id), if one is
        self.refusals = 0
        self.largest_accepted = 0  # records of the largest request of which the controller applied a topic
        self.policies: set[str] = set()  # refusals' words a lone topic got: a policy's, never taken for the cap's
        self._by_shape: dict[str, int] = {}  # words taken for the cap's by their shape: the limit before them

    def next_limit(self) -> int:
        """The most records the next request may make: the limit, or twice it (up to the limit started from) once a
        probe is due."""
        if self._since >= self._probe_after and self.limit < self._start and self._probe is None:
            return min(self._start, 2 * self.limit)
        return self.limit

    def sent(self, request_id: int, records: int, topics: int) -> None:
        """A request of ``topics`` topics making ``records`` records went: several above the limit are a probe (a
        lone topic above it goes alone, and proves nothing)."""
        if records > self.limit and topics > 1:
            self._probe = request_id

    @property
    def probe(self) -> int | None:
        """The id of the request out as a probe, if one is (``Status.cap_probe``)."""
        return self._probe

    def ended(self, request_id: int) -> bool:
        """The request is done (answered or not): True if it was the probe, which is then no longer out."""
        if request_id != self._probe:
            return False
        self._probe = None
        return True

    def accepted(self, records: int, probe: bool) -> None:
        """A request of ``records`` records (its applied topics') passed the cap: the limit is at least that (a lone
        topic above the limit goes alone). One above the limit raises it, and if it was a probe, the next request
        may probe further; one of at least half the limit counts towards the next probe."""
        if records > self.largest_accepted:
            self.largest_accepted = records
        if records > self.limit:
            if probe:  # it held, and the next probes further
                self._probe_after = self._since = self._first_probe_after
            self.limit = records
            for message, before in self._by_shape.items():  # a cap raised since: a policy's words restore this
                self._by_shape[message] = max(before, records)
        elif 2 * records >= self.limit:
            self._since += 1

    def beyond_accepted(self, records: int) -> bool:
        """Larger than every request accepted so far: a refusal of it alike for every topic may be the cap's."""
        return records > self.largest_accepted

    def refused_by_shape(self, records: int, errors: list[KafkaError | None], probe: bool) -> bool:
        """A request's errors, one per topic: refused alike, larger than any request accepted, in words not known to
        be a policy's, it is taken for the cap (``refused``: True) until a lone topic gets the same words
        (``_lone_refusal``). A probe's words are not kept as the cap's: its topics go again in requests of the
        limit, and a policy refuses them there."""
        if len(errors) == 1:
            if (lone := errors[0]) is not None and lone.code() == KafkaError.POLICY_VIOLATION:
                self._lone_refusal(lone.str(), records)
            return False
        message = refused_alike(errors)
        if message is None or message in self.policies:
            return False
        # words the shape took for the cap's are the cap's at any size: a cap lowered since refuses what it accepted
        if message not in self._by_shape and not self.beyond_accepted(records):
            return False
        if not probe:
            self._by_shape.setdefault(message, self.limit)
        self.refused(records, probe)
        return True

    def _lone_refusal(self, message: str, records: int) -> None:
        """A lone topic of ``records`` refused POLICY_VIOLATION with ``message``: if the shape made those words the
        cap's, and the topic is no larger than the limit (a request as large may pass the cap), they are a policy's;
        the limit goes back to what it was before them. A topic larger than the limit, refused alone, may be over
        the cap by itself: the words stay the cap's."""
        if records <= self.limit and (limit := self._by_shape.pop(message, None)) is not None:
            self.policies.add(message)
            self.limit = max(self.limit, limit)

    def refused(self, records: int, probe: bool) -> None:
        """A request of ``records`` records (several topics) was refused whole: the cap is below it, and at or above
        the largest request accepted (unless the cap was lowered since: then that is forgotten). A probe refused
        leaves the limit, and the next probe waits twice as long; so does a request built under an older, higher
        limit (a second lane's), without the wait."""
        self.refusals += 1
        self._since = 0
        if probe:
            self._probe_after = min(32 * self._first_probe_after, 2 * self._probe_after)
        if records > self.limit:
            return
        if self.largest_accepted >= records:
            self.largest_accepted = 0
        self.limit = min(self.limit, max(1, self.largest_accepted, records // 2))
