"""Slow start: the learner's requests before it knows the rate (issue 40), kept within R·W + B in any window of W.

A learning pacer (``MutationQuota()``) grows its requests from 32 mutations, doubling after each answer without a
throttle, until throttles teach it the rate (``pacer.py``). Doubling alone overdrew a permissive broker (Kafka with
librdkafka's CreateTopics v4: admitted whole): at R = B = 400 four requests went before the first throttle and two
more within the same second, 992 mutations against R·W + B = 800. So each request is also kept within a lower
bound of R·W + B that the answers prove, less what the window may hold already.

The bound: the broker's bucket held at most B = q·R when slow start began (q seconds: Kafka's
``controller.quota.window.num`` x ``controller.quota.window.size.seconds``), and -t·R when an answer reports throttle t
(0 or more). So S mutations admitted over the c seconds from the first send to that answer mean R·(q + c + t) >= S,
and R·W + B = R·(W + q) >= S·(W + q) / (q + c + t). The best such bound so far is what any window may hold; a window
ending at the next charge may hold every request answered in the W before its send (its charge, unseen, came
before its answer), and the next request fits beside them or waits for them to leave. A window may always hold 32,
the first request's size (a quota whose R·W + B is less is overdrawn by it): a first request of one topic would
otherwise prove too little for the next to fit beside it.

After the rate is known, the pacer keeps the proof going (``Pacer._window_limit``): a new one from each rate learned
or stepped to (q as slow start proved it, ``restart``), beside the same window of answers, and at least R·W + B at the
rate paced.

q is the broker's configuration, which the client does not know: the learner takes q = 1 s, the least Kafka allows,
and its bound is exact where R = B. For q > 1 the bound overestimates by at most 2q / (1 + q) (at c + t = 0), so the
learner stays within 2q / (1 + q) x R·W + B: 1.83 x for Kafka's default 11 windows. (Taking q = 11 would be exact
there, but 12 / 11 of what was proved leaves a tenth for growth per answer: 1.35 x T* at R = B = 400.)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["SlowStart"]

_FIRST_MUTATIONS = 32.0
_WINDOW_S = 1.0  # W: the window the peak is bounded in (Kafka's quota sample)
_WINDOWS_S = 1.0  # q = B / R, when the broker's configuration is not known
_WORTHWHILE = 0.1  # while more is pending, a request waits for room for this share of what the window may hold


@dataclass
class SlowStart:
    """Times are monotonic seconds: a request's send and its answer."""

    windows_s: float = _WINDOWS_S
    _size: float = _FIRST_MUTATIONS  # doubles after each answer without a throttle
    _start: float | None = None  # the first send
    _sent: float = 0.0  # mutations admitted since the start
    _bound: float | None = None  # the best lower bound of R·W + B proved so far (None: nothing admitted yet)
    _answers: deque[tuple[float, float]] = field(default_factory=deque)  # (answer time, mutations), the last W

    def budget(self, now: float) -> float:
        """Mutations the next request may carry now."""
        return max(0.0, min(self._size, self.room(now)))

    def restart(self, windows_s: float) -> SlowStart:
        """A new proof from the next send (the pacer's rate changed), with ``windows_s`` for q, beside the same window
        of answers."""
        return SlowStart(windows_s=windows_s, _answers=self._answers)

    @property
    def proved(self) -> float | None:
        """The best lower bound of R·W + B the answers proved (None: nothing admitted yet)."""
        return self._bound

    def wait_s(self, cost: float, pending_cost: float, now: float) -> float:
        """How long until a request of the next topic's ``cost`` (and, while more is pending, a tenth of what the window
        may hold) fits the window: an answer leaves it W after it came."""
        limit = self._limit()
        wanted = max(min(max(cost, limit * _WORTHWHILE), pending_cost, self._size, limit), min(cost, limit))
        return self.wait_for(wanted, now)

    def answered(self, mutations: float, *, throttle_s: float, sent_at: float, now: float) -> None:
        """``mutations`` admitted by a request sent at ``sent_at``, answered at ``now`` with ``throttle_s``."""
        if self._start is None:
            self._start = sent_at
        self._sent += mutations
        self._answers.append((now, mutations))
        if self._sent > 0:  # an answer that admitted nothing yet (topics that exist) proves nothing
            proved = self._sent * (_WINDOW_S + self.windows_s) / (self.windows_s + now - self._start + throttle_s)
            self._bound = max(self._bound, proved) if self._bound is not None else proved
        if throttle_s <= 0:
            self._size *= 2

    def _limit(self, floor: float = 0.0) -> float:
        """What a window may hold: the bound, at least ``floor`` (what the pacer's rate proves), and at least the
        first request's 32 (a request of one topic would otherwise prove too little for the next topic to fit beside
        it)."""
        return max(self._bound or 0.0, _FIRST_MUTATIONS, floor)

    def _held(self, now: float) -> float:
        """What the window ending at a charge at ``now`` or later may hold already."""
        while self._answers and self._answers[0][0] <= now - _WINDOW_S:
            self._answers.popleft()
        return sum(mutations for _, mutations in self._answers)

    def room(self, now: float, floor: float = 0.0) -> float:
        """What the next request may add to the window (``floor``: as ``_limit``)."""
        return self._limit(floor) - self._held(now)

    def wait_for(self, wanted: float, now: float, floor: float = 0.0) -> float:
        """How long until the window has room for ``wanted`` (at most the limit): as answers leave it."""
        limit = self._limit(floor)
        wanted = min(wanted, limit)
        held = self._held(now)
        at = now
        for answered_at, mutations in self._answers:
            if limit - held >= wanted:
                break
            held -= mutations
            at = answered_at + _WINDOW_S
        return max(0.0, at - now)
