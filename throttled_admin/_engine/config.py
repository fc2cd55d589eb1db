"""The engine's own settings, fixed for its life: its limits and where its randomness comes from.

The client's settings (retry.backoff.ms, a mutation quota, socket.timeout.ms) reach the engine as its other
arguments; these are the engine's, with Kafka's and librdkafka's values as defaults, so that a test can make them
small or deterministic without touching a module global. Ids are the engine's too: it numbers the calls submitted
to it and the requests it makes, each from 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from throttled_admin._engine.batch_cap import MAX_RECORDS_PER_REQUEST, PROBE_AFTER

__all__ = [
    "MAX_RECORDS_PER_REQUEST",
    "MAX_TOPICS_PER_REQUEST",
    "PROBE_AFTER",
    "SECOND_LANE_FROM",
    "SETTLE_AFTER_SEND_FROM",
    "EngineConfig",
]

# The most topics in one request (issue 40). Kafka 4.4 spends about 90 ms of CPU on a CreateTopics besides its
# topics' own: 10,000 one-partition topics cost it 2.17, 1.74 and 1.56 s in bare calls of 1,000, 2,000 and 4,000.
# librdkafka's parse of an answer (a linear search per topic: quadratic, 50-110 ms an answer of 4,000) is hidden
# behind the broker's work on the other lane's request, but for the last answer's.
# 4,000 one-partition topics are 8,000 metadata records, under Kafka's cap of 10,000. A 10,000-topic call on Kafka
# took 1.21 s in requests of 4,000, 1.30 s in requests of 2,000 (medians of 13 interleaved runs each); QuotaBroker's
# controller sat idle 81-106 ms in a 50,000-topic call, against 108-122 ms (broker_gaps.py).
MAX_TOPICS_PER_REQUEST = 4000
# An answer of at least this many topics, every one applied, is settled after the next request is handed over, in
# the step after (issue 40: its settling, 8-10 us a topic, was most of the gap between an answer and the next write).
# A smaller answer (a 1-topic or 50-topic call's) is settled in the step that takes it: no extra step.
SETTLE_AFTER_SEND_FROM = 100
# The second lane opens beside a request of at least this many topics, a bulk call's (``lanes``): a call of fewer
# topics is answered before a second request would gain much, and a client that never makes one never opens a
# second connection.
SECOND_LANE_FROM = 1000


@dataclass(frozen=True)
class EngineConfig:
    # the most topics one request carries
    max_topics_per_request: int = MAX_TOPICS_PER_REQUEST
    # an answer of this many topics or more, every one applied, settles after the next request is handed over
    settle_after_send_from: int = SETTLE_AFTER_SEND_FROM
    # the batch cap to start from (``batch_cap``): a KRaft controller refuses a whole request that makes more
    # metadata records than its cap; the engine starts at Kafka's 10,000 and learns a lower cap. A single topic
    # larger than the limit is sent alone, and gets the broker's answer.
    max_records_per_request: int = MAX_RECORDS_PER_REQUEST
    # requests of at least half a lowered limit accepted before one of twice the limit is tried (``batch_cap``)
    cap_probe_after: int = PROBE_AFTER
    # a second request goes beside one of at least this many topics, on a connection of its own (``lanes``); None:
    # one request at a time
    second_lane_from: int | None = SECOND_LANE_FROM
    # the seed of the retry back-off's jitter (``retry``); None: seeded from the operating system
    seed: int | None = None
