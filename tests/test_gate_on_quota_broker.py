"""Issue 37's gate on QuotaBroker: a restart drops the connection that carried the throttle (docs/semantics.md,
"The gate ends with its connection"). Whether the debt survives the restart is the broker's to say, in the probe's
answer: Kafka's restart starts its quota sensors fresh, and so does QuotaBroker's ``restart()``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka.admin import AdminClient

from tests.gate_helpers import BIG, Disconnects, outcomes, throttled_client
from throttled_admin import NewTopic, ThrottlingQuotaExceededException
from throttled_admin.testing import QuotaBroker


def restarted(quota_broker: Callable[..., Any]) -> tuple[QuotaBroker, Disconnects, Any]:
    """A client throttled about 49 s on node 0's connection, and the broker restarted under it."""
    broker: QuotaBroker = quota_broker(controller_mutation_rate=1.0)
    watch = Disconnects()
    gone = watch.expect(0)
    admin, _ = throttled_client(broker.bootstrap_servers, "gate", "big", watch)
    broker.restart()
    assert gone.wait(30), f"librdkafka reported no disconnect: {watch.lines}"
    return broker, watch, admin


def test_a_debt_that_survives_the_restart_is_the_probes_throttle_and_the_gate_keeps_it(
    quota_broker: Callable[..., Any],
) -> None:
    """A non-controller node of a quorum restarted: the fresh answer carries the debt, never guessed away. (Drawn
    again by another client of the entity after the restart, so the test holds whether the restart kept it.)"""
    broker, _, admin = restarted(quota_broker)
    other = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "client.id": "gate", "log_level": 0})
    other.create_topics([NewTopic("other", BIG, 1)])["other"].result(30)
    with admin:
        told = outcomes(admin, ["probe", "next"], timeout_s=10.0)
    assert told["probe"] is None, "the probe: admitted (an old client's request), and throttled"
    refused = told["next"]
    assert isinstance(refused, ThrottlingQuotaExceededException), refused
    assert refused.throttle_time_ms > 30_000, "the fresh answer's throttle, kept"


def test_after_a_restart_that_forgave_the_debt_the_next_call_goes_at_once(quota_broker: Callable[..., Any]) -> None:
    _, _, admin = restarted(quota_broker)
    with admin:
        told = outcomes(admin, ["after-1", "after-2"], timeout_s=10.0)
    assert told == {"after-1": None, "after-2": None}
