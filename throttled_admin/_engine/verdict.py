"""What becomes of a topic of an answered request: rule f of ``machine`` (truthful outcomes) for an answer; the
error a topic is settled with is ``outcome``'s.

``classify`` says what one result means (``Outcome``); ``verdict`` adds what the engine knows of the topic and of
the request, and names what happens next. ``Engine._settle_answered`` carries each verdict out:

=====================  ==========================================================================================
verdict                when, and what the engine does
=====================  ==========================================================================================
``APPLIED``            the broker applied it: settled, or awaiting every broker's Metadata (wait_for_metadata)
``THROTTLED``          refused for the quota (error 89, or Redpanda's form): queued again behind the throttle,
                       or settled with it (retry off, cancelled)
``RESEND_SMALLER``     the whole request refused for the controller's batch cap (``batch_cap``): queued again for
                       a smaller request, the broker's word kept should time run out first
``CANNOT_CONNECT``     never sent, and no broker has answered this client while its connections fail before
                       their handshake: "cannot connect" now, not at the deadline
``RETRY``              not applied, not sent, or its answer lost: queued again after a back-off while time is
                       left, else settled with what is known (outcome unknown after a lost answer)
``FINAL``              the broker's last word (already exists, invalid, ...): settled with it (outcome unknown
                       after an earlier unanswered attempt)
=====================  ==========================================================================================
"""

from __future__ import annotations

import enum

from throttled_admin._engine.classify import Outcome

__all__ = ["Verdict", "verdict"]


class Verdict(enum.Enum):
    APPLIED = "applied"
    THROTTLED = "throttled"
    RESEND_SMALLER = "resend smaller"
    CANNOT_CONNECT = "cannot connect"
    RETRY = "retry"
    FINAL = "final"


# The outcomes after which the same request may succeed later (after a back-off, within the deadline).
_RETRIABLE = (Outcome.NOT_APPLIED, Outcome.NOT_SENT, Outcome.UNKNOWN)


def verdict(outcome: Outcome, *, split: bool, cancelled: bool, cannot_connect: bool, outcome_unknown: bool) -> Verdict:
    """``split``: the request was refused whole for the batch cap (and is sent again in smaller ones);
    ``cancelled``: the topic's caller cancelled it (never sent again: rule j); ``cannot_connect``: no broker has
    answered this client and its connections fail before their handshake; ``outcome_unknown``: an earlier attempt
    of the topic was handed over and got no usable answer."""
    if outcome is Outcome.SUCCESS:
        return Verdict.APPLIED
    if outcome is Outcome.THROTTLED:
        return Verdict.THROTTLED
    if outcome is Outcome.TOO_LARGE and split and not cancelled:
        return Verdict.RESEND_SMALLER
    if outcome is Outcome.NOT_SENT and cannot_connect and not outcome_unknown:
        return Verdict.CANNOT_CONNECT
    if outcome in _RETRIABLE:
        return Verdict.RETRY
    return Verdict.FINAL
