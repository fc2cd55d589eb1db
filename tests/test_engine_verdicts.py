"""What becomes of a topic of an answered request (``_engine/verdict.py``, rule f of the engine), as a table.

Each row is one case of the rules in docs/semantics.md; the engine carries the verdicts out (tests/test_engine_rules.py
and tests/test_engine_model.py check the outcomes a caller sees)."""

from __future__ import annotations

import itertools

import pytest

from throttled_admin._engine.classify import Outcome
from throttled_admin._engine.verdict import Verdict, verdict

FLAGS = ("split", "cancelled", "cannot_connect", "outcome_unknown")

# (outcome, what the engine knows of the topic and its request: the flags that are true) -> verdict
ROWS = [
    # applied is applied: a topic cancelled in flight may still complete (rule j), after an unanswered attempt too
    (Outcome.SUCCESS, (), Verdict.APPLIED),
    (Outcome.SUCCESS, ("cancelled", "outcome_unknown"), Verdict.APPLIED),
    # error 89: the handler decides between waiting out the throttle and settling (retry off, cancelled)
    (Outcome.THROTTLED, ("cancelled",), Verdict.THROTTLED),
    # refused whole for the batch cap: sent again in smaller requests, unless its caller cancelled it (rule j)
    (Outcome.TOO_LARGE, ("split",), Verdict.RESEND_SMALLER),
    (Outcome.TOO_LARGE, ("split", "cancelled"), Verdict.FINAL),
    # refused alone (a single topic above the cap): the broker's answer is final
    (Outcome.TOO_LARGE, (), Verdict.FINAL),
    # never built while connections fail before their handshake: "cannot connect" at once, not at the deadline...
    (Outcome.NOT_SENT, ("cannot_connect",), Verdict.CANNOT_CONNECT),
    # ... unless an earlier attempt may have been handed over: that is retried (or settled as outcome unknown)
    (Outcome.NOT_SENT, ("cannot_connect", "outcome_unknown"), Verdict.RETRY),
    (Outcome.NOT_SENT, (), Verdict.RETRY),
    # not applied (NOT_CONTROLLER, the controller's timeout) and a lost answer: retried while time is left
    (Outcome.NOT_APPLIED, ("cannot_connect",), Verdict.RETRY),
    (Outcome.UNKNOWN, ("cancelled",), Verdict.RETRY),
    # the broker's last word
    (Outcome.FINAL, FLAGS, Verdict.FINAL),
]


def decide(outcome: Outcome, flags: tuple[str, ...]) -> Verdict:
    """The verdict with the named flags true and the others false."""
    known = {flag: flag in flags for flag in FLAGS}
    return verdict(outcome, **known)


@pytest.mark.parametrize(("outcome", "flags", "expected"), ROWS)
def test_each_case_of_rule_f_has_its_verdict(outcome: Outcome, flags: tuple[str, ...], expected: Verdict) -> None:
    assert decide(outcome, flags) is expected


def test_a_verdict_follows_from_the_outcome_and_what_the_engine_knows_of_the_topic() -> None:
    """Success and error 89 do not depend on the rest; only a batch-cap refusal can be sent again smaller, and only
    a request never built can say "cannot connect"."""
    for outcome, chosen in itertools.product(Outcome, itertools.product(*[(False, True)] * len(FLAGS))):
        flags = tuple(flag for flag, true in zip(FLAGS, chosen, strict=True) if true)
        got = decide(outcome, flags)
        if outcome is Outcome.SUCCESS:
            assert got is Verdict.APPLIED
        elif outcome is Outcome.THROTTLED:
            assert got is Verdict.THROTTLED
        resend = outcome is Outcome.TOO_LARGE and "split" in flags and "cancelled" not in flags
        assert (got is Verdict.RESEND_SMALLER) == resend
        assert (got is Verdict.CANNOT_CONNECT) <= (outcome is Outcome.NOT_SENT)
