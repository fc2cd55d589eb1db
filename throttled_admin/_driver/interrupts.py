"""A second Ctrl-C held back while the clean-up of a call cut short by the first runs (``Scheduler._abandon``).

Python runs a signal's handler on the main thread only, between two bytecodes; the default SIGINT handler raises
KeyboardInterrupt there. A call cut short by Ctrl-C takes back what of it is not sent; a second Ctrl-C in the middle
of that would leave the rest queued, to be sent for a caller who never got its futures. So, on the main thread, the
clean-up runs with a handler that only notes a SIGINT, and the signal is raised again as it ends, for whatever
handler was there before (the application's own, or the default: KeyboardInterrupt from the clean-up's end). A
SIGINT before the handler is in place (a few bytecodes) still cuts, as anywhere else. Off the main thread no handler
can run, and where Python did not install the handler (one set from C) it is left alone.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["sigint_held"]


@contextmanager
def sigint_held() -> Iterator[None]:
    """While inside, a SIGINT is noted, not handled; it is raised again on the way out (module docstring)."""
    caught: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    held = previous is not None and threading.current_thread() is threading.main_thread()
    if held:
        try:
            signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
        except ValueError:  # (not the main interpreter)
            held = False
    try:
        yield
    finally:
        if held and previous is not None:
            signal.signal(signal.SIGINT, previous)
            if caught:
                signal.raise_signal(signal.SIGINT)  # (its handler runs at once, here)
