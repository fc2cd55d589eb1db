"""The client's core: every decision of the scheduler as a pure state machine (``machine.Engine``) and its pure parts:
calls and topics (``work``: the driver hands in a call's id and plain values, ``CallSpec`` and ``TopicSpec``; the
records built of them are the engine's own), a topic's states and attempts (``lifecycle``), what a result means
(``classify``), what then becomes of the topic (``verdict``, ``after_answer``) and the error it is settled with
(``outcome``), the pending calls and rule a's name holds (``queue``), the request in flight (``slot``), what the
answers teach (``learning``), wait_for_metadata's reads (``view_reads``), the metadata read before sending
(``metadata``), the round-trip floor (``round_trip``), the KIP-219 gate (``throttle``), the connection an abandoned
request may still hold (``connection``), pacing to the mutation quota (``pacer``; its learner's first requests:
``slow_start``), the retry back-off (``retry``), the controller's batch cap (``batch_cap``), waiting for every
broker's Metadata (``visibility``), how far a client's connections got before any broker answered it (``contact``),
the metric events the engine emits (``metric_events``), what a step says to do (``actions``: an ``Outbox`` of frozen
actions), and the engine's own settings (``config``).

No threads, no clock, no sockets: the driver (``throttled_admin._driver``) feeds it events and the time, and
carries out the actions of its ``Outbox``. It depends only on ``throttled_admin._kafka`` (Kafka's own rules) and the
error kinds (``throttled_admin._errors``); tests/test_layout.py checks that.
"""

from __future__ import annotations

from throttled_admin._engine.actions import (
    Action,
    Drain,
    Outbox,
    Probe,
    Reached,
    ReadMetadata,
    ReadViews,
    Send,
    Settle,
    WakeAt,
)
from throttled_admin._engine.classify import Outcome, classify, error_of, is_broker_answer
from throttled_admin._engine.config import EngineConfig
from throttled_admin._engine.connection import DRAIN_NAME, Drained
from throttled_admin._engine.contact import ContactFailure, broker_address, contact_failure, wrong_listener
from throttled_admin._engine.lanes import FIRST, SECOND
from throttled_admin._engine.machine import (
    CONTACT_PROBE_TIMEOUT_S,
    FIRST_CONTACT_TIMEOUT_S,
    Engine,
)
from throttled_admin._engine.metric_events import METRIC_KINDS, MetricEvent, MetricsSink, RecordingSink
from throttled_admin._engine.outcome import ALREADY_DONE
from throttled_admin._engine.pacer import MutationQuota, Pacer
from throttled_admin._engine.retry import RetryBackoff
from throttled_admin._engine.status import Status
from throttled_admin._engine.visibility import BrokerViews, TopicView
from throttled_admin._engine.work import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    CallSpec,
    Operation,
    RequestKind,
    TopicRef,
    TopicSpec,
    TopicSpecs,
)

__all__ = [
    "ALREADY_DONE",
    "CONTACT_PROBE_TIMEOUT_S",
    "CREATE_PARTITIONS",
    "CREATE_TOPICS",
    "DELETE_TOPICS",
    "DRAIN_NAME",
    "FIRST",
    "FIRST_CONTACT_TIMEOUT_S",
    "METRIC_KINDS",
    "SECOND",
    "Action",
    "BrokerViews",
    "CallSpec",
    "ContactFailure",
    "Drain",
    "Drained",
    "Engine",
    "EngineConfig",
    "MetricEvent",
    "MetricsSink",
    "MutationQuota",
    "Operation",
    "Outbox",
    "Outcome",
    "Pacer",
    "Probe",
    "Reached",
    "ReadMetadata",
    "ReadViews",
    "RecordingSink",
    "RequestKind",
    "RetryBackoff",
    "Send",
    "Settle",
    "Status",
    "TopicRef",
    "TopicSpec",
    "TopicSpecs",
    "TopicView",
    "WakeAt",
    "broker_address",
    "classify",
    "contact_failure",
    "error_of",
    "is_broker_answer",
    "wrong_listener",
]
