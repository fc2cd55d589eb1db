"""What becomes of a topic of an answered request (``_engine/verdict.py``, rule f of the engine), as a table.

Each row is one case of the rules in docs/semantics.md; the engine carries the verdicts out (tests/test_engine_rules.py
and tests/test_engine_model.py check the outcomes a caller sees)."""

from __future__ import annotations

import itertools

import pytest

from throttled_admin._engine.classify import Outcome
from throttled_admin._engine.verdict import Verdict, verdict

# (outcome, split, cancelled, cannot_connect, outcome_unknown) -> verdict, and why
ROWS = [
    # applied is applied: a topic cancelled in flight may still complete (rule j), after an unanswered attempt too
    ((Outcome.SUCCESS, False, False, False, False), Verdict.APPLIED),
    ((Outcome.SUCCESS, False, True, False, True), Verdict.APPLIED),
    # error 89: the handler decides between waiting out the throttle and settling (retry off, cancelled)
    ((Outcome.THROTTLED, False, True, False, False), Verdict.THROTTLED),
    # refused whole for the batch cap: sent again in smaller requests, unless its caller cancelled it (rule j)
    ((Outcome.TOO_LARGE, True, False, False, False), Verdict.RESEND_SMALLER),
    ((Outcome.TOO_LARGE, True, True, False, False), Verdict.FINAL),
    # refused alone (a single topic above the cap): the broker's answer is final
    ((Outcome.TOO_LARGE, False, False, False, False), Verdict.FINAL),
    # never built while connections fail before their handshake: "cannot connect" at once, not at the deadline...
    ((Outcome.NOT_SENT, False, False, True, False), Verdict.CANNOT_CONNECT),
    # ... unless an earlier attempt may have been handed over: that is retried (or settled as outcome unknown)
    ((Outcome.NOT_SENT, False, False, True, True), Verdict.RETRY),
    ((Outcome.NOT_SENT, False, False, False, False), Verdict.RETRY),
    # not applied (NOT_CONTROLLER, the controller's timeout) and a lost answer: retried while time is left
    ((Outcome.NOT_APPLIED, False, False, True, False), Verdict.RETRY),
    ((Outcome.UNKNOWN, False, True, False, False), Verdict.RETRY),
    # the broker's last word
    ((Outcome.FINAL, True, False, True, True), Verdict.FINAL),
]


@pytest.mark.parametrize(("case", "expected"), ROWS)
def test_each_case_of_rule_f_has_its_verdict(case: tuple[Outcome, bool, bool, bool, bool], expected: Verdict) -> None:
    outcome, split, cancelled, cannot_connect, outcome_unknown = case
    got = verdict(
        outcome, split=split, cancelled=cancelled, cannot_connect=cannot_connect, outcome_unknown=outcome_unknown
    )
    assert got is expected


def test_a_verdict_follows_from_the_outcome_and_what_the_engine_knows_of_the_topic() -> None:
    """Success and error 89 do not depend on the rest; only a batch-cap refusal can be sent again smaller, and only
    a request never built can say "cannot connect"."""
    for outcome, *flags in itertools.product(Outcome, *[(False, True)] * 4):
        split, cancelled, cannot_connect, outcome_unknown = flags
        got = verdict(
            outcome, split=split, cancelled=cancelled, cannot_connect=cannot_connect, outcome_unknown=outcome_unknown
        )
        if outcome is Outcome.SUCCESS:
            assert got is Verdict.APPLIED
        elif outcome is Outcome.THROTTLED:
            assert got is Verdict.THROTTLED
        assert (got is Verdict.RESEND_SMALLER) == (outcome is Outcome.TOO_LARGE and split and not cancelled)
        assert (got is Verdict.CANNOT_CONNECT) <= (outcome is Outcome.NOT_SENT)
