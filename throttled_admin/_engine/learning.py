"""What the answers teach the client: the round-trip floor (rule d), the controller's batch cap, Redpanda's charge
for the topics it refuses, and the pacer's rate (a pacer of the engine's own once Redpanda's answers call for one).

``Learning`` takes a finished request and what came back of it, and returns what the engine needs to decide (the
request is split, the throttle to wait out, what was charged); the engine reads its floor, cap and pacer when it
composes the next request.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from throttled_admin._engine.batch_cap import BatchCap
from throttled_admin._engine.classify import REDPANDA_QUOTA_MESSAGE, Outcome, error_of, is_broker_answer
from throttled_admin._engine.pacer import MutationQuota, Pacer
from throttled_admin._engine.redpanda import RedpandaHold
from throttled_admin._engine.request import Request
from throttled_admin._engine.round_trip import RoundTrip
from throttled_admin._engine.work import CREATE_PARTITIONS, Topic

_THROTTLED, _SUCCESS = Outcome.THROTTLED, Outcome.SUCCESS  # module constants: an Enum member off its class is slow

__all__ = ["Learning"]

# Redpanda's hold after an answer that refused nothing in its form: no estimate, no refusal in a row
_AT_REST = (None, 0)


class Learning:
    """The round trip, the batch cap, Redpanda's hold and the pacer. Not thread-safe: the engine's own state."""

    def __init__(self, pacer: Pacer | None, max_records_per_request: int, cap_probe_after: int) -> None:
        self.pacer = pacer
        self.round_trip = RoundTrip()
        self.cap = BatchCap(max_records_per_request, cap_probe_after)
        self._redpanda = RedpandaHold()
        self._own_pacer = False  # the pacer is the engine's own (Redpanda's answers), not the caller's

    def batch_cap(self, request: Request, outcomes: dict[str, Outcome]) -> bool:
        """Refused whole for the controller's batch cap, by its words or its shape (``batch_cap``): learn it, mark
        every topic ``TOO_LARGE`` in ``outcomes``, and send the topics again in smaller requests (True). A request
        of which a topic was applied passed the cap: its size is learned too."""
        records = applied = made = 0
        grows = request.kind.operation is CREATE_PARTITIONS
        for topic in request.topics:  # one plain loop (two sums over generators were four frames a 1-topic answer)
            records += topic.records
            if outcomes.get(topic.name) is _SUCCESS:
                applied += topic.records
                # what the controller made, at least: a grow's records are sized as its new total (an upper bound),
                # but it makes only the partitions it adds
                made += max(1, topic.cost or 0) if grows else topic.records
        probe = self.cap.ended(request.id)  # (one request at a time may be a probe: ``batch_cap``)
        if made:
            self.cap.accepted(made, probe)
        if 0 < applied == records:  # every topic applied (most answers): passed the cap, nothing refused to read
            return False
        several = len(request.topics) > 1 and len(outcomes) == len(request.topics)
        if several and all(outcome is Outcome.TOO_LARGE for outcome in outcomes.values()):
            self.cap.refused(records, probe)
            return True
        errors = [error_of(request.results.get(topic.name)) for topic in request.topics]
        if (several or len(errors) == 1) and self.cap.refused_by_shape(records, errors, probe):
            outcomes.update(dict.fromkeys(outcomes, Outcome.TOO_LARGE))
            return True
        return False

    def redpanda(
        self,
        request: Request,
        results: dict[str, BaseException | None],
        outcomes: dict[str, Outcome],
        throttle_s: float,
    ) -> tuple[float, int]:
        """Redpanda charges the topics it refuses: the wait is longer than its throttle (``redpanda``). Returns the
        throttle to wait out (longer than the response's when Redpanda's charge adds to it), and what the refused
        topics were charged."""
        refused = []
        if _THROTTLED in outcomes.values():  # none refused for the quota (most answers): none of Redpanda's
            refused = [t.cost or 0 for t in request.topics if _redpanda_refused(results[t.name], outcomes[t.name])]
        if not refused:
            hold = self._redpanda
            if (hold.estimate, hold.refusals_in_a_row) != _AT_REST:  # (at rest, most answers: nothing to reset)
                hold.extra_s([], 0, True, throttle_s, None)
            return throttle_s, 0
        admitted_any = any(outcome is Outcome.SUCCESS for outcome in outcomes.values())
        before = _admitted_before_refusal(request.topics, outcomes)
        configured = None if self.pacer is None or self._own_pacer else self.pacer.quota.rate  # exact
        throttle_s += self._redpanda.extra_s(refused, before, admitted_any, throttle_s, configured)
        estimate = self._redpanda.estimate or self._redpanda.rate
        if self.pacer is not None and estimate is not None:
            self.pacer.sample(estimate)  # a learning pacer: Redpanda's answer bounds the rate
        elif self.pacer is None and estimate is not None:
            # Re-sending everything would have Redpanda admit one topic and charge all the others, again and again:
            # from now on the client paces itself, as MutationQuota() would, starting from the rate read from the
            # response (a learned rate's bucket holds one second of it, as Redpanda's does).
            self.pacer = Pacer(MutationQuota())
            self.pacer.sample(estimate)
            self._own_pacer = True
        return throttle_s, sum(refused)

    def answered(
        self, request: Request, results: dict[str, BaseException | None], admitted: int, throttle_s: float, now: float
    ) -> None:
        """A broker answered: a whole answer is a round trip (rule d), and the pacer learns what was admitted and
        the throttle."""
        assert request.answered_at is not None
        if not any(results.values()) or _all_broker_answers(results):  # (every topic applied: the broker's answers)
            self.round_trip.observe(len(request.topics), request.answered_at - request.sent_at, now)
        if self.pacer is not None:
            self.pacer.on_response(admitted=admitted, throttle_s=throttle_s, sent_at=request.sent_at, now=now)


def _admitted_before_refusal(topics: list[Topic], outcomes: dict[str, Outcome]) -> int:
    """The cost of the topic admitted just before the first one refused for the quota, in request order (0: none)."""
    previous = 0
    for topic in topics:
        outcome = outcomes[topic.name]
        if outcome is Outcome.THROTTLED:
            return previous
        previous = (topic.cost or 0) if outcome is Outcome.SUCCESS else 0
    return 0


def _all_broker_answers(results: dict[str, BaseException | None]) -> bool:
    for exc in results.values():  # noqa: SIM110 (cheaper than all() over a generator: every answer)
        if exc is not None and not is_broker_answer(exc):  # None (applied): the broker's answer, no call
            return False
    return True


def _redpanda_refused(exc: BaseException | None, outcome: Outcome) -> bool:
    """Refused for the quota in Redpanda's form: its message, or the message-less -1 of DeleteTopics < v5."""
    if outcome is not _THROTTLED:  # most topics (success): no error to read
        return False
    error = error_of(exc)
    if error is None:
        return False
    return error.code() == KafkaError.UNKNOWN or error.str() == REDPANDA_QUOTA_MESSAGE
