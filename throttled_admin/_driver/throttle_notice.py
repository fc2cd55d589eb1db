"""The first throttle of a client that does not pace, told once at WARNING (issue 38).

Apache Kafka answers librdkafka's CreateTopics versions with no error 89: it applies the whole request and throttles
the principal afterwards, for as long as the request went over the quota. Nothing fails, so a user who made the
one-import swap and skipped the README would see no sign of it; this says what happened and how to pace instead.
On a logger of its own, so that a program that reports throttles itself (the command line) can silence it alone.
"""

from __future__ import annotations

import logging

from throttled_admin._engine import MetricEvent
from throttled_admin._engine.metric_events import ResponseThrottle

__all__ = ["NOTICE_LOGGER", "FirstThrottleNotice"]

NOTICE_LOGGER = "throttled_admin.throttle_notice"
log = logging.getLogger(NOTICE_LOGGER)


class FirstThrottleNotice:
    """Logs the first throttled response to a mutation request of a client without ``MutationQuota``, once."""

    def __init__(self, *, paced: bool) -> None:
        self._due = not paced

    def see(self, event: MetricEvent) -> None:
        if not self._due or not isinstance(event, ResponseThrottle) or not event.mutation or event.throttle_ms <= 0:
            return
        self._due = False
        log.warning(
            "the broker throttled this client for %.0f ms after a topic mutation: the principal went over its "
            "controller mutation quota (KIP-599), and the broker holds back its requests for that long; to stay under "
            "the quota instead, pass mutation_quota=MutationQuota() (or MutationQuota(rate=R) with the quota's rate) "
            "to the client (logged once per client)",
            event.throttle_ms,
        )
