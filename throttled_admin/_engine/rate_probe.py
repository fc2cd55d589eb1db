"""The upward probe of a rate the broker's answers set (issue 37): a quota raised, or removed, under a pacer.

A pacer that paces below the broker's rate draws no throttle, and a rate learned from throttles then never moves up
when the operator raises the quota (Kafka 4.4 applies a change at once). So after a stretch of answers without a
throttle while the pacer held work back (``_STRETCH_ANSWERS`` of them over ``_STRETCH_S``), the believed rate steps
up by ``_STEP``: the step is taken as the broker's rate until a throttle says otherwise. A throttle after a step
takes the rate back to the one the last stretch ran on, and each step refused so waits twice as long as the one
before (up to ``_MAX_STRETCH_S``), so an unchanged quota costs one small throttle every so often, not one a
second. A step raises the mirror's refill, never its tokens: what a step may overdraw is bounded by the requests
sent between it and the broker's throttle, one at a time (docs/semantics.md, "Pacing to the quota"). A known rate
is a ceiling: the probe takes a rate the broker lowered back up to it, never beyond."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RateProbe"]

_STRETCH_ANSWERS = 3
_STRETCH_S = 1.0
_MAX_STRETCH_S = 8.0
_STEP = 2.0


@dataclass
class RateProbe:
    """``ceiling``: the configured rate (None: learned, no ceiling). Times are the requests' send times."""

    ceiling: float | None
    _since: float | None = None  # the send of the stretch's first answer
    _answers: int = 0
    _before_step: float | None = None  # the rate the last stretch ran on, while a step above it is unconfirmed
    _stretch_s: float = _STRETCH_S

    def answered(self, rate: float, *, throttled: bool, held: bool, sent_at: float) -> float | None:
        """An answer of a request sent at ``sent_at`` while the pacer believed ``rate``; ``held``: the pacer held
        work back (the rate, not the work, was the limit). Returns a rate to believe from now on, or None."""
        if throttled:
            return self._refused()
        if not held:  # the client sent less than the rate allows: the answer says nothing of the rate
            self._since, self._answers = None, 0
            return None
        if self._since is None:
            self._since, self._answers = sent_at, 0
        self._answers += 1
        stretch_s = _STRETCH_S if self._before_step is not None else self._stretch_s  # a step is confirmed in one
        if self._answers < _STRETCH_ANSWERS or sent_at - self._since < stretch_s:
            return None
        return self._step(rate)

    def _refused(self) -> float | None:
        """A throttle: the step (if any) was too far; back to the rate the last stretch ran on, and wait longer."""
        self._since, self._answers = None, 0
        before, self._before_step = self._before_step, None
        if before is not None:
            self._stretch_s = min(_MAX_STRETCH_S, 2 * self._stretch_s)
        return before

    def _step(self, rate: float) -> float | None:
        self._since, self._answers = None, 0
        if self._before_step is not None:  # the last step ran a whole stretch unthrottled: it holds
            self._stretch_s = _STRETCH_S
        if self.ceiling is not None and rate >= self.ceiling:
            self._before_step = None
            return None
        self._before_step = rate
        stepped = rate * _STEP
        return stepped if self.ceiling is None else min(self.ceiling, stepped)

    def reset(self) -> None:
        """The broker's answers set a new rate: any step is over."""
        self._since, self._answers, self._before_step = None, 0, None
