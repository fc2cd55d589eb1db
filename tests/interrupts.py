"""Ctrl-C at a chosen bytecode: a signal handler that raises (KeyboardInterrupt) runs between two bytecodes of the
main thread, so a test that raises before each instruction of a function in turn tries every point where one can
land (``sys.settrace`` with opcode events, on the chosen thread only)."""

from __future__ import annotations

import dis
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def offsets(function: Callable[..., Any]) -> list[int]:
    """Where each instruction of ``function`` starts."""
    return [instruction.offset for instruction in dis.get_instructions(function)]


@contextmanager
def interrupt_at(code: types.CodeType, offset: int) -> Iterator[list[bool]]:
    """While inside: KeyboardInterrupt before the instruction at ``offset`` of ``code`` runs, the first time this
    thread reaches it. The list yielded says whether it was reached. The thread's tracer (coverage.py's, under
    ``make test``) is put back after."""
    reached: list[bool] = []
    thread = threading.current_thread()

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "opcode" and frame.f_lasti == offset and not reached and threading.current_thread() is thread:
            reached.append(True)
            raise KeyboardInterrupt
        return local

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        if frame.f_code is code and threading.current_thread() is thread:
            frame.f_trace_opcodes = True
            return local
        return None

    tracing = sys.gettrace()
    sys.settrace(calls)
    try:
        yield reached
    finally:
        sys.settrace(tracing)
