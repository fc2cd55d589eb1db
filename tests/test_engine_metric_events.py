"""The engine's metric events (``_engine/metric_events.py``): frozen records, equal by value, that a sink consumes."""

from __future__ import annotations

import dataclasses

import pytest

from throttled_admin._engine import MetricEvent, RecordingSink
from throttled_admin._engine.metric_events import (
    BackedOff,
    CallFinished,
    MutationsAdmitted,
    QuotaViolations,
    RequestSent,
    ResponseThrottle,
    Retried,
)

EVENTS: list[MetricEvent] = [
    ResponseThrottle(2, 250.0),
    ResponseThrottle(None, 0.0),
    QuotaViolations("CreateTopics", 3),
    Retried("DeleteTopics"),
    RequestSent("CreatePartitions", 4, 7),
    MutationsAdmitted("CreateTopics", 5),
    BackedOff("CreateTopics", 0.25),
    CallFinished("CreateTopics", 1.5, "THROTTLING_QUOTA_EXCEEDED"),
    CallFinished("DeleteTopics", 0.5, None),
]


def test_each_event_reaches_its_sink_method_with_its_fields_in_place() -> None:
    sink = RecordingSink()
    for event in EVENTS:
        event.report(sink)
    assert sink.events == EVENTS
    assert sink.of(CallFinished) == EVENTS[-2:]


def test_events_are_frozen_and_equal_by_value() -> None:
    assert QuotaViolations("CreateTopics", 1) == QuotaViolations("CreateTopics", 1)
    assert QuotaViolations("CreateTopics", 1) != QuotaViolations("DeleteTopics", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Retried("CreateTopics").operation = "DeleteTopics"  # type: ignore[misc]
