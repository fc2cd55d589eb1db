"""Whether the principal owes quota, for a dry run (issue 38): one validate-only create of one partition. A KRaft
controller charges validate_only against the controller mutation quota (one mutation here; Kafka 4.4, seen on the
broker: docs/semantics.md), and answers with the throttle the principal now owes. Apache Kafka admits librdkafka's
request versions and throttles (the throttle is read from the client's metrics, this client's first answer); a strict
broker refuses with error 89 and the throttle. A cluster that does not charge validate_only (Redpanda) answers 0."""

from __future__ import annotations

import uuid

from throttled_admin import NewTopic, ThrottledAdminClient, ThrottlingQuotaExceededException

__all__ = ["owed_ms"]


def owed_ms(admin: ThrottledAdminClient, name: str | None, timeout_s: float) -> tuple[int | None, str | None]:
    """(the throttle the principal owes in ms, None) from one validate-only create of ``name`` (a topic the plan
    would create; else a random name), or (None, why it cannot tell)."""
    topic = name or f"throttled-admin-dry-run-{uuid.uuid4().hex[:12]}"
    future = admin.create_topics(
        [NewTopic(topic, num_partitions=1)],
        validate_only=True,
        retry_on_quota_violation=False,
        request_timeout=timeout_s,
        timeout_ms=max(1, int(timeout_s * 1000)),
    )[topic]
    try:
        future.result()
    except ThrottlingQuotaExceededException as exc:
        return exc.throttle_time_ms, None
    except Exception as exc:
        return None, f"quota debt unknown: a validate-only create of one partition failed ({exc})"
    value = admin.metrics().get("throttle-time-max", 0.0)
    return (0 if value is None or value != value else int(value)), None
