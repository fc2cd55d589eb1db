"""Helpers shared by the test files: the repository's root, free loopback ports, and waiting on a condition.

Test files import these from here, never from conftest.py (which holds only fixtures and hooks)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["REPO", "free_port", "port_open", "wait_until"]

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Callable[[], bool], timeout_s: float = 30.0, interval_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
