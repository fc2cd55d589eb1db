"""How long Redpanda's quota refusal asks to wait: longer than its ``throttle_time_ms`` says.

Redpanda's ``quota_manager.cc`` charges every topic of a request, refused or not, and refuses a topic when there
was a deficit before it; the response's ``throttle_time_ms`` is the largest delay of its topics, the one before
the *last* refused topic (the deficit only grows along a request). So after the response the deficit is the
throttle's worth plus that last topic's own mutations, and a re-send when the throttle ends is refused, and
charged, again, for ever. The connection is not muted, so nothing else holds the client back.

The client waits the throttle plus the last refused topic's cost at the quota's rate. The rate is the pacer's
when it has one; else a lower bound read from the response itself: the refused topics before the last (S
mutations) were charged while the deficit grew to the throttle's worth, so R >= S / throttle; and as the topic
admitted just before the first refusal (c mutations) found no deficit, R <= (S + c) / throttle. With no bound
(one topic refused, costs not known) the wait doubles with each refusal in a row until a re-send gets through.
The middle of the two bounds is the rate's estimate, for pacing (a learning pacer takes it as a sample; a client
without one paces itself from then on with a learning pacer starting from it).
Recognised by Redpanda's message, "Too many partition mutations requested" (error 89 carries none in Kafka).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RedpandaHold"]

_MAX_DOUBLINGS = 6


@dataclass
class RedpandaHold:
    """Not thread-safe: the engine's own state."""

    rate: float | None = None  # the lower bound on the quota's rate read from earlier responses
    estimate: float | None = None  # the middle of the bounds of the latest response that gave both
    refusals_in_a_row: int = 0

    def extra_s(
        self,
        refused_costs: list[int],
        admitted_before: int,
        admitted: bool,
        throttle_s: float,
        pacer_rate: float | None,
    ) -> float:
        """The wait beyond ``throttle_s`` after a response whose Redpanda-refused topics cost ``refused_costs``, in
        request order (0 where not known); ``admitted_before``: the cost of the topic admitted just before the
        first refused one (0: none); ``admitted``: whether it admitted any topic. 0 when nothing was refused so."""
        self.estimate = None
        if not refused_costs:
            self.refusals_in_a_row = 0
            return 0.0
        self.refusals_in_a_row = 1 if admitted else self.refusals_in_a_row + 1
        before_last = sum(refused_costs[:-1])
        if throttle_s > 0 and before_last > 0:
            bound = before_last / throttle_s
            self.rate = bound if self.rate is None else max(self.rate, bound)
            if admitted_before > 0:
                self.estimate = (before_last + admitted_before / 2) / throttle_s
        rate = pacer_rate or self.rate
        last = refused_costs[-1]
        if rate and last > 0 and self.refusals_in_a_row == 1:
            return last / rate
        # Nothing to size it by, or sized and refused again: the throttle once more, doubling while refused.
        doublings = min(self.refusals_in_a_row - 1, _MAX_DOUBLINGS)
        base = last / rate if rate and last > 0 else max(throttle_s, 0.001)
        return base * 2.0**doublings
