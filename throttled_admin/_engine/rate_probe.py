"""The upward probe of a rate the broker's answers set (issue 37): a quota raised, or removed, under a pacer.

A pacer that paces below the broker's rate draws no throttle, and a rate learned from throttles then never moves up
when the operator raises the quota (Kafka 4.4 applies a change at once). So after a stretch of answers without a
throttle while the pacer held work back (``_STRETCH_ANSWERS`` of them over ``_STRETCH_S``), the believed rate steps
up by ``_STEP``: the step is taken as the broker's rate until a throttle says otherwise. A step that ran a whole
stretch unthrottled holds (the broker admitted more than the old rate allows), and the next goes further
(``_STEP_CONFIRMED``): from 10/s, 100/s is passed in three steps, not four. A throttle after a step takes the rate
back to the one the last stretch ran on, and each step refused so waits twice as long as the one before (up to
``_MAX_STRETCH_S``), so an unchanged quota costs one small throttle every so often, not one a second. No answer
can tell a raise from an unchanged quota without that throttle: only an answer the old rate would have throttled
shows the new one.

The back-off belongs to one run of work held back. Once the client caught up (an answer of a request that sent all it
had), the next run's first step goes after ``_STRETCH_S`` again: a quota raised between calls is followed within about
four seconds, at the cost of one small throttle per held run when it was not. A step that held does not shorten the
back-off: a failover's fresh bucket funds steps as a raise does. A step raises the mirror's refill, never its tokens,
and never what a window may hold (``Pacer._window_limit``: R·W + B as the answers prove it), so a step the broker's full
bucket funded does not overdraw it (docs/semantics.md, "Pacing to the quota"). A known rate is a ceiling: the probe
takes a rate the broker lowered back up to it, never beyond."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RateProbe"]

_STRETCH_ANSWERS = 3
_STRETCH_S = 1.0
_MAX_STRETCH_S = 8.0
_STEP = 2.0  # the first step of a stretch
_STEP_CONFIRMED = 4.0  # a step after one that held


@dataclass
class RateProbe:
    """``ceiling``: the configured rate (None: learned, no ceiling). Times are the requests' send times."""

    ceiling: float | None
    _since: float | None = None  # the send of the stretch's first answer
    _answers: int = 0
    _before_step: float | None = None  # the rate the last stretch ran on, while a step above it is unconfirmed
    _stretch_s: float = _STRETCH_S  # the back-off: doubled by each step refused
    _caught_up: bool = True  # the client sent all it had since the last step: a new run of held work

    def answered(self, rate: float, *, throttled: bool, held: bool, sent_at: float) -> float | None:
        """An answer of a request sent at ``sent_at`` while the pacer believed ``rate``; ``held``: the pacer held
        work back (the rate, not the work, was the limit). Returns a rate to believe from now on, or None."""
        if throttled:
            return self._refused()
        if not held:  # the client sent less than the rate allows: the answer says nothing of the rate
            self._since, self._answers, self._caught_up = None, 0, True
            return None
        if self._since is None:
            self._since, self._answers = sent_at, 0
        self._answers += 1
        if self._answers < _STRETCH_ANSWERS or sent_at - self._since < self._stretch_now():
            return None
        return self._step(rate)

    def _stretch_now(self) -> float:
        """A step is confirmed in ``_STRETCH_S``, and so is the first step of a run held back since the client caught
        up; a first step while held back all along waits out the back-off."""
        return _STRETCH_S if self._before_step is not None or self._caught_up else self._stretch_s

    def _refused(self) -> float | None:
        """A throttle: the step (if any) was too far; back to the rate the last stretch ran on, and wait longer."""
        self._since, self._answers = None, 0
        before, self._before_step = self._before_step, None
        if before is not None:
            self._stretch_s = min(_MAX_STRETCH_S, 2 * self._stretch_s)
        return before

    def _step(self, rate: float) -> float | None:
        self._since, self._answers, self._caught_up = None, 0, False
        if self.ceiling is not None and rate >= self.ceiling:
            self._before_step = None
            return None
        stepped = rate * (_STEP if self._before_step is None else _STEP_CONFIRMED)
        self._before_step = rate
        return stepped if self.ceiling is None else min(self.ceiling, stepped)

    def reset(self) -> None:
        """The broker's answers set a new rate: any step is over."""
        self._since, self._answers, self._before_step = None, 0, None
