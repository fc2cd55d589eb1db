"""Helpers for the CLI tests: run ``python -m throttled_admin`` as a user would, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).absolute().parent.parent


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    # The package under test, whether or not it is installed in the interpreter running the tests.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("COLUMNS", None)
    return env


def run_cli(*args: str, timeout_s: float = 90.0) -> Run:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "throttled_admin", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=cli_env(),
        cwd=REPO,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


def broker_banner(*args: str) -> str:
    """The first line ``python -m throttled_admin.testing --port 0 ARGS`` prints (its banner); the broker is then
    stopped."""
    with subprocess.Popen(
        [sys.executable, "-m", "throttled_admin.testing", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=cli_env(),
        cwd=REPO,
    ) as proc:
        try:
            assert proc.stdout is not None
            return proc.stdout.readline()
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def topics(bootstrap: str, *args: str, timeout_s: float = 90.0) -> Run:
    return run_cli("topics", "--bootstrap-server", bootstrap, *args, timeout_s=timeout_s)
