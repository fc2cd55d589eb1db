"""The suite's distribution over pytest-xdist's workers (the Makefile's ``PYTEST_ARGS``): every test of a file runs
on one worker, so a file's module-scoped fixture (a Spark session, a Spark Connect server) starts once. Under pytest
9.2, ``--dist loadgroup`` silently stopped grouping (pytest-xdist issue 1386): the Spark Connect file started three
servers of about 30 s each."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

from tests.support import REPO

FILE = "tests/test_token_bucket.py"  # many quick tests, no broker


def _makefile_dist() -> list[str]:
    """The ``--dist`` option of the Makefile's PYTEST_ARGS."""
    line = re.search(r"^PYTEST_ARGS \?= (.*)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert line is not None, "the Makefile sets PYTEST_ARGS"
    args = shlex.split(line.group(1))
    at = args.index("--dist")
    return args[at : at + 2]


def test_the_makefiles_distribution_runs_a_files_tests_on_one_worker() -> None:
    command = [sys.executable, "-m", "pytest", "-n", "2", *_makefile_dist(), "-v", "-p", "no:cacheprovider", FILE]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    workers = re.findall(r"^\[(gw\d+)\] .*PASSED ", result.stdout, re.MULTILINE)  # the worker of each test
    assert len(workers) > 5, result.stdout[-2000:]
    assert set(workers) == {workers[0]}, workers
