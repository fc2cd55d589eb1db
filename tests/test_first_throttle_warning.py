"""A client without ``MutationQuota`` says so at its first throttle (issue 38, item 4): on Apache Kafka
librdkafka's CreateTopics is admitted whole and the principal throttled afterwards, with no error to see."""

from __future__ import annotations

import logging

import pytest

from tests.support import BrokerFactory
from throttled_admin import MutationQuota, NewTopic, ThrottledAdminClient

SECRET = "first-throttle-secret"


def _first_throttle_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "throttled_admin.throttle_notice"
        and r.levelno == logging.WARNING
        and "MutationQuota" in r.getMessage()
    ]


def test_one_warning_at_the_first_throttle_and_the_counter_counts_it(
    quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)  # by-version: admitted, then throttled
    conf = {"bootstrap.servers": broker.bootstrap_servers, "client.id": "unpaced", "sasl.password": SECRET}
    caplog.set_level(logging.WARNING, logger="throttled_admin")
    with ThrottledAdminClient(conf) as client:
        for i in range(3):
            assert client.create_topics([NewTopic(f"w{i}", 12, 1)])[f"w{i}"].exception(60) is None
        stats = client.metrics()
    creates = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
    throttled = sum(1 for r in creates if r.throttle_time_ms > 0)
    assert throttled >= 2
    assert stats["throttled-response-total"] == throttled
    assert stats["quota-violation-total"] == 0  # admitted: no error 89, yet throttled
    [warning] = _first_throttle_warnings(caplog)  # once, not per throttle
    message = warning.getMessage()
    assert "mutation_quota=MutationQuota()" in message  # how to pace
    assert "controller mutation quota" in message  # what it means
    assert SECRET not in message
    assert "unpaced" not in message  # nothing from conf


def test_no_such_warning_with_mutation_quota(quota_broker: BrokerFactory, caplog: pytest.LogCaptureFixture) -> None:
    broker = quota_broker(controller_mutation_rate=10, quota_window_num=1)
    conf = {"bootstrap.servers": broker.bootstrap_servers}
    caplog.set_level(logging.WARNING, logger="throttled_admin")
    # A learned rate starts unknown: the first requests are throttled, and the client already paces by them.
    with ThrottledAdminClient(conf, mutation_quota=MutationQuota()) as client:
        for i in range(3):
            assert client.create_topics([NewTopic(f"p{i}", 12, 1)])[f"p{i}"].exception(60) is None
        stats = client.metrics()
    assert stats["throttled-response-total"] >= 1
    assert _first_throttle_warnings(caplog) == []


def test_the_command_line_leaves_the_notice_to_its_own_lines(caplog: pytest.LogCaptureFixture) -> None:
    """``throttled-admin topics`` says what a throttle means in kafka-topics.sh's words and its own WARNING line: the
    client's notice is silenced while a command's session is open, and only then."""
    from throttled_admin.cli._session import AdminSession

    notice = logging.getLogger("throttled_admin.throttle_notice")
    caplog.set_level(logging.WARNING, logger=notice.name)
    with AdminSession({"bootstrap.servers": "127.0.0.1:1"}, retry_on_quota_violation=False, timeout_ms=1000):
        notice.warning("during the command: mutation_quota=MutationQuota()")
    notice.warning("after it: mutation_quota=MutationQuota()")
    assert [r.getMessage() for r in _first_throttle_warnings(caplog)] == ["after it: mutation_quota=MutationQuota()"]
