"""A second Ctrl-C held back while the clean-up of a call cut short by the first runs (``Scheduler._abandon``).

Python runs a signal's handler on the main thread only, between two bytecodes; the default SIGINT handler raises
KeyboardInterrupt there. A call cut short by Ctrl-C takes back what of it is not sent; a second Ctrl-C in the middle
of that would leave the rest queued, to be sent for a caller who never got its futures. So, on the main thread, the
clean-up runs with a handler that only notes a SIGINT, and hands it as it ends to whatever handler was there before
(the application's own, called for each; or the default: KeyboardInterrupt from the clean-up's end). A SIGINT in the
points before the handler is in place (this context manager's start) cuts the hold short before the clean-up began:
``run_held`` then begins again, and raises what the SIGINT's handler raised once the clean-up has run (the caller
is told of the Ctrl-C, even if what cut the call first was something else). Not held: a SIGINT in the few points before
``run_held``'s ``try`` (the except clause that calls it, its own loop), which can still cut the clean-up; off the
main thread, where no handler runs; and a handler set from C (``getsignal`` says None), left alone. Several SIGINTs
while held are handed on one by one, in order, until a handler raises: an application's handler that counts them,
or that puts a forced exit in place for the next press, sees each as it would unheld.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["run_held", "sigint_held"]

_TRIES = 3  # (``run_held``: a hold cut short this often before its clean-up began, the clean-up runs unheld)


@contextmanager
def sigint_held() -> Iterator[None]:
    """While inside, a SIGINT is noted, not handled; it is handed on the way out (module docstring)."""
    caught: list[FrameType | None] = []

    def note(signum: int, frame: FrameType | None) -> None:
        caught.append(frame)

    previous = signal.getsignal(signal.SIGINT)
    held = previous is not None and threading.current_thread() is threading.main_thread()
    try:
        if held:
            try:
                signal.signal(signal.SIGINT, note)
            except ValueError:  # (not the main interpreter)
                held = False
        yield
    finally:
        if held and previous is not None:
            try:  # (another signal's handler may raise in signal.signal: put the previous one back all the same)
                if signal.getsignal(signal.SIGINT) is note:
                    signal.signal(signal.SIGINT, previous)
            finally:
                if signal.getsignal(signal.SIGINT) is note:
                    signal.signal(signal.SIGINT, previous)
            _hand_on(previous, caught)


def run_held(clean_up: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    """``clean_up(*args, **kwargs)`` inside ``sigint_held``, begun again if a SIGINT's handler raised (Python's
    KeyboardInterrupt, or an application's own exception: ``sys.exit``) before the clean-up began (module docstring),
    and that exception raised once it has run; after ``_TRIES`` such cuts, run unheld. What the clean-up raises, or
    a SIGINT handed on as the hold ends, is raised as it comes."""
    cut: BaseException | None = None
    for _ in range(_TRIES):
        begun = False
        try:
            with sigint_held():
                begun = True
                clean_up(*args, **kwargs)
            break
        except BaseException as exc:
            if begun:
                raise
            cut = cut or exc
    else:
        clean_up(*args, **kwargs)
    if cut is not None:
        raise cut


def _hand_on(previous: Any, caught: list[FrameType | None]) -> None:
    """The SIGINTs noted, one by one, each to the handler in place as it comes (the one there before the hold, or
    what that one put in its place: a first press's graceful stop that sets a forced exit for the next): called (a
    wakeup fd, such as a loop's from ``add_signal_handler``, was written as each came), raised again for the default
    action, dropped if ignored. The first that raises ends it: the SIGINTs after it are dropped, as a further call
    would only replace the exception on its way (CPython would call the handler again as it unwinds)."""
    for frame in caught:
        if callable(previous):
            previous(signal.SIGINT, frame)
        elif previous == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)
        previous = signal.getsignal(signal.SIGINT)
