"""The provisioning API when a cluster cannot be used (issue 20): no broker reachable (a refused port, an
unresolvable host) or a wrong password fails every row at once with the real reason, as NOT SENT, instead of
each waiting out the profile's request_timeout_s with "Broker transport failure".

Profiles are given as dicts, with the default request_timeout_s (30 s). Times are measured and printed
(``pytest -s`` shows them), never asserted: the assertions are on the rows' statuses and messages.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError

from tests.support import BrokerFactory
from throttled_admin.provisioning import PlanRow, RowResult, apply_plan

PASSWORD = "Pw-contact-20-d41c"
WRONG = "Wrong-contact-20-9e7b"
ROWS = [
    PlanRow("dev", "create", "orders", 3),
    PlanRow("dev", "ensure", "audit", 1, configs={"retention.ms": "60000"}),
    PlanRow("dev", "delete", "old"),
]


def _refused_address() -> str:
    """127.0.0.1:PORT with nothing listening (a port the system just gave out and took back)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def _rows(cluster: str) -> list[PlanRow]:
    return [dataclasses.replace(row, cluster=cluster) for row in ROWS]


def _apply(what: str, rows: list[PlanRow], profiles: dict[str, Any]) -> list[RowResult]:
    started = time.monotonic()
    results = apply_plan(rows, profiles, allow_delete=True)
    print(f"[timing] apply_plan {what}: {time.monotonic() - started:.2f} s")
    return results


def _not_sent(results: list[RowResult]) -> None:
    assert [r.status for r in results] == ["failed"] * len(results), results
    assert all(r.attempts == 0 for r in results), results
    assert all((r.error_message or "").startswith("not sent: ") for r in results), results
    assert all("transport failure" not in (r.error_message or "") for r in results), results


def test_no_broker_reachable_fails_every_row_as_not_sent_saying_cannot_connect() -> None:
    # Both clusters in one call: apply_plan runs their groups concurrently.
    address = _refused_address()
    profiles = {"refused": {"bootstrap.servers": address}, "nowhere": {"bootstrap.servers": "nosuchhost.invalid:9092"}}
    results = _apply("refused port and unresolvable host", [*_rows("refused"), *_rows("nowhere")], profiles)
    _not_sent(results)
    for result in results:
        message = result.error_message or ""
        if result.cluster == "refused":
            assert message.startswith(f"not sent: cannot connect to {address} ("), result
            assert "Connection refused" in message, result
        else:
            assert message.startswith("not sent: cannot connect to nosuchhost.invalid:9092 (Failed to resolve"), result
        assert result.error_code == KafkaError._TRANSPORT  # as the client core's CannotConnectError


def test_a_wrong_password_fails_every_row_as_not_sent_with_the_sasl_message(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    broker = quota_broker(users={"alice": PASSWORD})
    conf = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": WRONG,
    }
    caplog.set_level(logging.DEBUG)
    results = _apply("wrong password", _rows("dev"), {"dev": conf})
    _not_sent(results)
    for result in results:
        assert "Authentication failed: Invalid username or password" in (result.error_message or ""), result
        assert result.error_code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED), result
    assert broker.topics() == {}
    assert not [r for r in broker.request_log() if r.api_name in ("CreateTopics", "DeleteTopics")]
    for text in [caplog.text, *(repr(r.as_dict()) for r in results)]:
        assert WRONG not in text
        assert PASSWORD not in text


def test_a_profile_without_sasl_on_a_sasl_listener_fails_every_row_as_not_sent(quota_broker: BrokerFactory) -> None:
    broker = quota_broker(users={"alice": PASSWORD})
    results = _apply(
        "no SASL on a SASL listener", _rows("dev"), {"dev": {"bootstrap.servers": broker.bootstrap_servers}}
    )
    _not_sent(results)
    for result in results:
        assert "the listener requires SASL authentication" in (result.error_message or ""), result
        assert result.error_code == KafkaError._AUTHENTICATION, result
    assert broker.topics() == {}
