"""A group's time budget (issue 38): the user's (``timeout_s``), or by default the predicted time plus every throttle
the client learns, so that a principal that already owes quota waits its debt out instead of failing its rows.

Times are monotonic seconds."""

from __future__ import annotations

import math

__all__ = ["DEFAULT_SLACK_S", "MIN_REQUEST_S", "UNKNOWN_RATE_S", "Budget", "check_timeout"]

#: The default budget beyond twice the predicted time: a minute for the cluster's own delays.
DEFAULT_SLACK_S = 60.0
#: The least a request is given to be answered when the budget is (nearly) over: a second.
MIN_REQUEST_S = 1.0
#: The default budget when the rate is still to be learned (no prediction): an hour, as before.
UNKNOWN_RATE_S = 3600.0


def check_timeout(timeout_s: object) -> float | None:
    """``timeout_s`` as given to ``apply_plan``/``execute``: None, or a positive, finite number of seconds."""
    if timeout_s is None:
        return None
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        raise TypeError(f"timeout_s: expected a number of seconds, got {type(timeout_s).__name__}")
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout_s: expected a positive, finite number of seconds, got {timeout_s!r}")
    return float(timeout_s)


def _default_s(predicted_s: float | None) -> float:
    return UNKNOWN_RATE_S if predicted_s is None else 2 * predicted_s + DEFAULT_SLACK_S


class Budget:
    """When a group must be done: ``timeout_s`` after its start (the user's, fixed), or by default twice the predicted
    time plus ``DEFAULT_SLACK_S`` (an hour while the rate is unknown), moved on by every throttle the client learns
    (``cover``)."""

    def __init__(self, timeout_s: float | None, predicted_s: float | None, now: float) -> None:
        self.timeout_s = timeout_s
        self.end = now + (timeout_s if timeout_s is not None else _default_s(predicted_s))

    @property
    def users(self) -> bool:
        """The user gave it: it never moves."""
        return self.timeout_s is not None

    def left_s(self, now: float) -> float:
        return max(0.0, self.end - now)

    def timeout_ms(self, now: float) -> int:
        """A call's ``timeout_ms`` for what is left (at least 1 ms: the client then refuses what cannot go)."""
        return max(1, int(self.left_s(now) * 1000))

    def cap_s(self, seconds: float, now: float) -> float:
        """A request's wait for its answer, ``seconds`` at most, within what is left (at least ``MIN_REQUEST_S``)."""
        return max(MIN_REQUEST_S, min(seconds, self.left_s(now)))

    def cover(self, throttle_s: float, predicted_s: float | None, now: float) -> bool:
        """A default budget lasts at least a throttle the client learned plus the default for the rest
        (``predicted_s``); False for the user's, which never moves."""
        if self.users:
            return False
        self.end = max(self.end, now + max(0.0, throttle_s) + _default_s(predicted_s))
        return True

    def describe(self) -> str:
        return f"timeout_s={self.timeout_s:g}" if self.timeout_s is not None else "the default budget"
