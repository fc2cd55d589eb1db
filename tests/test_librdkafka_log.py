"""The client reads librdkafka's log on its way: every line still reaches the conf's logger, or stderr in
librdkafka's format, filtered by the caller's log_level; FAIL lines also reach the client."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from throttled_admin._driver.librdkafka_log import tap_logs
from throttled_admin._driver.secret_hider import SecretHider

LINE = "[thrd:b:1/bootstrap]: b:1/bootstrap: Disconnected (after 0ms in state UP)"


def run_now(job: Callable[[], None]) -> None:
    job()


def tapped(conf: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The conf with the tap installed, and the FAIL lines it passes to the client."""
    fail_lines: list[str] = []
    conf = dict(conf)
    tap_logs(conf, fail_lines.append, run_now, SecretHider({}).text)
    return conf, fail_lines


def emit(conf: dict[str, Any], level: int, facility: str, line: str = LINE) -> None:
    conf["logger"].log(level, "%s [%s] %s", facility, "rdkafka#producer-1", line)


def test_without_a_logger_lines_go_to_stderr_in_librdkafkas_format(capsys: pytest.CaptureFixture[str]) -> None:
    conf, fail_lines = tapped({})
    emit(conf, logging.INFO, "FAIL")
    emit(conf, logging.DEBUG, "BROKER")  # above the default level 6
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    level, _, facility, name, rest = err[0].split("|", 4)
    assert (level, facility, name, rest) == ("%6", "FAIL", "rdkafka#producer-1", f" {LINE}")
    assert fail_lines == [LINE]


def test_a_low_log_level_still_lets_the_client_read_fail_lines_but_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    conf, fail_lines = tapped({"log_level": 0})
    assert conf["log_level"] == 6
    emit(conf, logging.INFO, "FAIL")
    assert capsys.readouterr().err == ""
    assert fail_lines == [LINE]


def test_the_logger_from_conf_gets_every_line_and_one_that_raises_is_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[str] = []

    class Logger:
        def log(self, level: int, fmt: str, *args: Any) -> None:
            received.append(fmt % args)
            raise RuntimeError("handler broke")

    conf, _ = tapped({"logger": Logger(), "debug": "broker"})
    emit(conf, logging.DEBUG, "BROKER")
    emit(conf, logging.INFO, "FAIL")
    assert received == [f"BROKER [rdkafka#producer-1] {LINE}", f"FAIL [rdkafka#producer-1] {LINE}"]
    assert [r.message for r in caplog.records].count(
        "the logger from conf raised; it is contained (later failures are not logged)"
    ) == 1
