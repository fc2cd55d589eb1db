"""Stopping a plan from another thread (Ctrl-C's): what was never sent is withdrawn, and said to be."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

__all__ = ["NOT_COMPARED", "STOPPED", "STOP_LOOK_S", "PlanStop", "wait_unless_stopped"]

#: ``RowResult.error_name`` of a row that a ``PlanStop`` ended: ``not_sent`` (nothing of it applied: never sent, or
#: refused and not sent again), or ``failed`` (its outcome unknown, or part of it not sent).
STOPPED = "STOPPED"
#: How the message of a row the stop ended ends when Kafka had said its topic exists (or, for a delete, is gone): the
#: topic was not compared with the plan (``failed``, Kafka's code and words kept)
NOT_COMPARED = "(the plan was stopped before the topic was compared with the plan)"
#: How often a wait that only its own event ends (the client's, a request's answer) looks whether the plan was stopped.
STOP_LOOK_S = 0.2


def wait_unless_stopped(look: Callable[[float], bool], timeout_s: float, stopped: Callable[[], bool]) -> bool:
    """``look(seconds)``, a wait that says whether what it waits for came, in slices of ``STOP_LOOK_S`` until it came
    (True), ``timeout_s`` passed or ``stopped()`` (False): a plan's stop is an event of its own, which the waits of
    the client and of a request's answer do not wake on."""
    end = time.monotonic() + timeout_s
    while not stopped():
        left_s = end - time.monotonic()
        if look(max(0.0, min(left_s, STOP_LOOK_S))):
            return True
        if left_s <= STOP_LOOK_S:
            return False
    return False


class _Stoppable(Protocol):
    def stop(self) -> list[int]:
        """Send nothing more, withdraw what is not sent yet, and return the rows never sent (the group's indexes)."""


class PlanStop:
    """Stops the plans given it (``apply_plan(..., stop=)``, ``execute(..., stop=)``) from any thread: ``stop()``
    withdraws every change not yet sent (a paced row the quota still holds), sends nothing more, and returns at once
    the plan indexes of the rows not done and never sent: they end ``not_sent`` (``error_name`` ``STOPPED``), or
    ``unchanged`` where the cluster already had them (a dry run's, as planned). Rows in flight still get their answers
    (a row refused by the quota or while a node was away, not sent again: ``not_sent``, Kafka's code kept; a grow's
    config change left unsent, or a row waiting to be verified after a lost answer, the wait ended: ``failed``; one
    whose topic Kafka said exists, not yet compared with the plan: ``failed``, Kafka's code kept; all STOPPED), and
    the call returns once they have. A group not started yet sends nothing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._members: list[_Member] = []  # one a group

    def stop(self) -> list[int]:
        with self._lock:
            self._stopped = True
            members = list(self._members)
        return sorted(index for member in members for index in member.never_sent())

    def _member(self, indexes: Sequence[int]) -> _Member:
        """A group's place in this stop; ``indexes``: its rows' places in the plan."""
        member = _Member(self, indexes)
        with self._lock:
            self._members.append(member)
        return member


class _Member:
    """One group of a ``PlanStop``."""

    def __init__(self, owner: PlanStop, indexes: Sequence[int]) -> None:
        self._owner = owner
        self._indexes = indexes
        self._group: _Stoppable | None = None

    def join(self, group: _Stoppable) -> bool:
        """The group runs: False when the plan was stopped first (it is to send nothing)."""
        with self._owner._lock:
            if self._owner._stopped:
                return False
            self._group = group
            return True

    def never_sent(self) -> list[int]:
        group = self._group  # (joined before stop() took the members, or never: join() then refuses it)
        local = group.stop() if group is not None else range(len(self._indexes))
        return [self._indexes[i] for i in local]
