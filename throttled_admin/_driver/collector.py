"""Python's cyclic garbage collector held off while a bulk call is checked, queued and sent, until it returns.

A call of many topics makes a few objects a topic that live as long as the call (its checked copy, the engine's
record, its future). Made in one go, they set off collections that trace every one of them again as it is promoted
from generation to generation, and the first often falls in the call's checks: a full collection of 11-15 ms for a
call of 10,000 topics, 17-26 ms for 50,000, paid there for objects the application made just before, and for 50,000
another of 30-45 ms before ``create_topics`` returns (issue 40). Held off until the call returns, one collection does
the work later, while the broker is busy with the requests in flight, and the first request goes sooner.

This is what Mercurial's ``util.nogc`` does while it builds large dicts. The collector's switch is the process's, so
it is touched only for calls of ``BULK_CALL_FROM`` topics or more, only if it is on, and always put back: a thread
that turns it off meanwhile (rare: an application that runs without it) finds it on again when the call returns.
"""

from __future__ import annotations

import gc

__all__ = ["BULK_CALL_FROM", "hold", "let_go"]

#: The fewest topics of a call for which the collector is held off: a bulk call's (``SECOND_LANE_FROM`` too).
BULK_CALL_FROM = 1000


def hold(topics: object) -> bool:
    """Turn the collector off if it is on and ``topics`` is a list of at least ``BULK_CALL_FROM`` items (a call's
    input, not yet checked): True if it did; give that to ``let_go`` in a ``finally`` (no context manager: a few
    microseconds on every 1-topic call)."""
    if isinstance(topics, list) and len(topics) >= BULK_CALL_FROM and gc.isenabled():
        gc.disable()
        return True
    return False


def let_go(held: bool) -> None:
    """The collector on again if ``hold`` turned it off."""
    if held:
        gc.enable()
