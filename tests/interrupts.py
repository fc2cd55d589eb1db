"""Ctrl-C at a chosen bytecode: a signal handler that raises (KeyboardInterrupt) runs between two bytecodes of the
main thread, so a test that raises before each such point of a function in turn tries every one where it can land
(``sys.settrace`` with opcode events, on the chosen thread only).

CPython 3.11+ runs a pending signal handler only where it checks its eval breaker: as a function starts (RESUME),
as a call returns, and at a backward jump (``ceval.c``). Raising before every instruction, as these tests did at
first, also tried points no signal reaches, and one of them is a false deadlock: between a ``with lock:`` body's
end and the call of the lock's ``__exit__`` (outside the block's exception-table range), the lock stays held by the
cut thread; the scheduler's thread, taking the next turn first, then waits on it for good (a CI run of 474880b,
``test_ctrl_c_at_any_bytecode_of_a_wait_that_takes_the_answer_loses_nothing[Scheduler.settle]``). On 3.10 a signal
can land there, a hazard of every ``with lock:`` in CPython before 3.11, not of this client."""

from __future__ import annotations

import dis
import itertools
import signal
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def offsets(function: Callable[..., Any]) -> list[int]:
    """Where a signal handler's exception can be raised in ``function`` (module docstring): the first instruction
    after RESUME, each instruction after a call, and each backward jump (every instruction before 3.11)."""
    instructions = list(dis.get_instructions(function))
    if sys.version_info < (3, 11):
        return [instruction.offset for instruction in instructions]
    points = []
    for previous, instruction in itertools.pairwise(instructions):
        after = previous.opname == "RESUME" or previous.opname.startswith("CALL")
        if after or "JUMP_BACKWARD" in instruction.opname:
            points.append(instruction.offset)
    return points


@contextmanager
def sigint_handler(handler: Any) -> Iterator[None]:
    """While inside, ``handler`` handles SIGINT (on the main thread, where Python runs it); the one there before is
    put back after."""
    inherited = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, inherited)


@contextmanager
def interrupt_at(code: types.CodeType, offset: int, *, by_signal: bool = False) -> Iterator[list[bool]]:
    """While inside: KeyboardInterrupt before the instruction at ``offset`` of ``code`` runs, the first time this
    thread reaches it; ``by_signal``, a real SIGINT raised there instead, for whatever handler is in place (the main
    thread's: Python runs it at once). The list yielded says whether it was reached. The thread's tracer
    (coverage.py's, under ``make test``) is put back after."""
    reached: list[bool] = []
    thread = threading.current_thread()

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "opcode" and frame.f_lasti == offset and not reached and threading.current_thread() is thread:
            reached.append(True)
            if by_signal:
                signal.raise_signal(signal.SIGINT)
                return local
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
