"""What a call's topics ended as, in one object: the results of a bulk call read without a loop over futures.

franz-go's kadm returns a call's results as one value (``CreateTopicResponses``: ``Error()``, ``On(topic)``,
``Sorted()``), and Java's ``CreateTopicsResult.all()`` fails with the first topic's exception. ``collect_outcomes``
waits for the futures a call returned (``create_topics``, ``create_partitions``, ``delete_topics``: topic -> future)
and returns a ``CallOutcomes``: every topic with its outcome, in the call's order, the applied ones, the failed ones
with their errors, grouped by error type, and ``raise_first()`` for Java's behaviour.

A call's futures are settled by its own deadline (``timeout_ms``), so the wait is bounded without a timeout of its
own; ``timeout=`` bounds it further, and raises ``TimeoutError`` naming the topics still pending.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeoutError  # the builtin's alias only since 3.11
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallOutcomes", "TopicOutcome", "collect_outcomes"]


@dataclass(frozen=True, slots=True)
class TopicOutcome:
    """One topic's outcome: ``error`` is None when the change was applied, else what its future raised (a typed
    error of ``throttled_admin``, a ``KafkaException`` with the broker's error, or ``CancelledError``)."""

    topic: str
    error: BaseException | None = None

    @property
    def applied(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class CallOutcomes:
    """Every topic of a call with its outcome, in the order of the call's futures."""

    outcomes: tuple[TopicOutcome, ...]
    # by topic, so that looking every topic of a bulk call up (100,000) is not quadratic
    _by_topic: dict[str, TopicOutcome] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_topic", {outcome.topic: outcome for outcome in self.outcomes})

    def __iter__(self) -> Iterator[TopicOutcome]:
        return iter(self.outcomes)

    def __len__(self) -> int:
        return len(self.outcomes)

    def __getitem__(self, topic: str) -> TopicOutcome:
        return self._by_topic[topic]

    @property
    def applied(self) -> list[str]:
        """The topics whose change was applied, in the call's order."""
        return [outcome.topic for outcome in self.outcomes if outcome.error is None]

    @property
    def failed(self) -> dict[str, BaseException]:
        """The topics that were not applied (or whose outcome is unknown), with their errors, in the call's order."""
        return {outcome.topic: outcome.error for outcome in self.outcomes if outcome.error is not None}

    def by_error(self) -> dict[str, list[str]]:
        """The failed topics grouped by their error's type name (``"ThrottlingQuotaExceededException"``: [...])."""
        groups: dict[str, list[str]] = {}
        for topic, error in self.failed.items():
            groups.setdefault(type(error).__name__, []).append(topic)
        return groups

    def first_error(self) -> BaseException | None:
        """The first failed topic's error in the call's order (kadm's ``Error()``), None when every topic applied."""
        return next(iter(self.failed.values()), None)

    def raise_first(self) -> None:
        """Raise the first failed topic's error, as Java's ``all().get()`` does; return when every topic applied."""
        error = self.first_error()
        if error is not None:
            raise error


def collect_outcomes(futures: Mapping[str, Future[Any]], timeout: float | None = None) -> CallOutcomes:
    """Wait for every future of a call and return what each topic ended as.

    ``timeout``: the most seconds to wait in all (default: until the call's own deadline has settled every topic);
    ``TimeoutError`` names the topics still pending then."""
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout: expected None or seconds >= 0, got {timeout!r}")
    deadline = None if timeout is None else time.monotonic() + timeout
    outcomes: list[TopicOutcome] = []
    pending: list[str] = []
    for topic, future in futures.items():
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            error = future.exception(timeout=left)
        except CancelledError as cancelled:
            error = cancelled
        except FutureTimeoutError:
            pending.append(topic)
            continue
        outcomes.append(TopicOutcome(topic, error))
    if pending:
        shown = ", ".join(pending[:5]) + (f" and {len(pending) - 5} more" if len(pending) > 5 else "")
        raise TimeoutError(f"{len(pending)} of {len(futures)} topics still pending after {timeout} s: {shown}")
    return CallOutcomes(tuple(outcomes))
