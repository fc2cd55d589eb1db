"""The rule that tells a listener refusing unauthenticated clients from a broker that is restarting or flaky."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from throttled_admin._handshake_drops import DROPS, WINDOW_S, HandshakeDrops, uses_sasl


def drop(broker: str = "127.0.0.1:9092/bootstrap", up_ms: int = 0) -> str:
    closed = "Disconnected: connection closed by peer: receive 0 after POLLIN"
    return f"[thrd:{broker}]: {broker}: {closed} (after {up_ms}ms in state UP)"


def refused(broker: str = "127.0.0.1:9092/bootstrap") -> str:
    failed = "Connect to ipv4#127.0.0.1:9092 failed: Connection refused"
    return f"[thrd:{broker}]: {broker}: {failed} (after 0ms in state CONNECT)"


def feed(drops: HandshakeDrops, lines: list[str], step_s: float = 0.05) -> list[KafkaError | None]:
    return [drops.observe(line, i * step_s) for i, line in enumerate(lines)]


def test_the_same_broker_dropping_right_after_the_handshake_three_times_is_an_authentication_failure() -> None:
    results = feed(HandshakeDrops("plaintext"), [drop()] * DROPS)
    assert results[:-1] == [None] * (DROPS - 1)
    error = results[-1]
    assert error is not None
    assert error.code() == KafkaError._AUTHENTICATION
    assert error.str().startswith("127.0.0.1:9092/bootstrap: the broker closed the connection")
    assert "'plaintext'" in error.str()


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([drop(), drop(), refused(), drop(), drop()], id="a-refused-connect-between: the broker was down"),
        pytest.param([drop(), drop(up_ms=5000), drop()], id="a-connection-that-lived-between"),
        pytest.param([drop("a:1/1"), drop("b:1/2"), drop("c:1/3")], id="three-brokers-once-each"),
    ],
)
def test_a_broker_that_is_down_or_served_requests_is_not_taken_for_one_refusing_us(lines: list[str]) -> None:
    assert feed(HandshakeDrops("plaintext"), lines) == [None] * len(lines)


def test_a_response_in_between_clears_the_count() -> None:
    drops = HandshakeDrops("plaintext")
    assert feed(drops, [drop(), drop()]) == [None, None]
    drops.answered()
    assert feed(drops, [drop(), drop()]) == [None, None]


def test_drops_spread_over_more_than_the_window_do_not_count() -> None:
    assert feed(HandshakeDrops("ssl"), [drop()] * DROPS, step_s=WINDOW_S) == [None] * DROPS


@pytest.mark.parametrize(
    ("protocol", "sasl"),
    [("plaintext", False), ("SSL", False), ("SASL_PLAINTEXT", True), ("sasl_ssl", True)],
)
def test_only_clients_without_sasl_are_diagnosed(protocol: str, sasl: bool) -> None:
    assert uses_sasl(protocol) is sasl
