"""What ``throttled_admin.testing`` says when its extra (kafka-python) is not installed: an ImportError naming
the extra for code that imports it, and one line on stderr (exit 2, no traceback) for
``python -m throttled_admin.testing``."""

from __future__ import annotations

import itertools
import sys

from throttled_admin._extras import install_hint

__all__ = ["MESSAGE", "missing_extra"]

MESSAGE = f"throttled_admin.testing needs kafka-python: {install_hint('testing')}"
_MODULE = "throttled_admin.testing"


def _run_as_main() -> bool:
    """``python -m throttled_admin.testing``: runpy imports the package first, with sys.argv[0] set to '-m'."""
    argv = list(getattr(sys, "orig_argv", []))
    named = any(a == "-m" and b == _MODULE for a, b in itertools.pairwise(argv)) or f"-m{_MODULE}" in argv
    return sys.argv[:1] == ["-m"] and named


def missing_extra(exc: ImportError) -> BaseException:
    """The exception to raise for the missing extra (``exc`` is kafka-python's ImportError)."""
    if _run_as_main():
        print(f"python -m {_MODULE}: error: {MESSAGE}", file=sys.stderr)
        return SystemExit(2)
    return ImportError(MESSAGE)
