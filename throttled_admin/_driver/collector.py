"""Python's cyclic garbage collector held off while a bulk call is checked, queued and sent, until it returns.

A call of many topics makes a few objects a topic that live as long as the call (its checked copy, the engine's
record, its future). Made in one go, they set off collections that trace every one of them again as it is promoted
from generation to generation, and the first often falls in the call's checks: a full collection of 11-15 ms for a
call of 10,000 topics, 17-26 ms for 50,000, paid there for objects the application made just before; for 50,000 a
second of 30-45 ms came before ``create_topics`` returned (issue 40). Held off until the call returns, the first
request goes sooner, and the collections come after, on whichever thread allocates next, while the broker is busy
with the requests in flight. They still walk the call's objects three times as they are promoted: 50,000 topics on
QuotaBroker, 15-20 ms in generation 0 soon after the call returns, 17-25 in generation 1 and a full collection of
37-50 ms about a second later (``benchmarks/broker_gaps.py``, which lists a client's collections run by run); a
collection that lands as an answer comes may hold the next write back.

Mercurial's ``util.nogc`` does the same while it builds large dicts. The collector's switch is the process's, so a
call touches it only with ``BULK_CALL_FROM`` topics or more and only if it is on, and turns it on again when it
returns, however it ends (on Python 3.11 and later even when Ctrl-C lands in it: ``ThrottledAdminClient._call``).
Calls that overlap share the switch: the first to return turns it on. A thread that turns it off while a bulk call
runs finds it on again when the call returns.
"""

from __future__ import annotations

import gc

from throttled_admin._engine.config import SECOND_LANE_FROM

__all__ = ["BULK_CALL_FROM", "worth_holding"]

#: The fewest topics of a call for which the collector is held off: a bulk call's, as for its second connection.
BULK_CALL_FROM = SECOND_LANE_FROM


def worth_holding(topics: object) -> bool:
    """Whether a call of ``topics`` (its input, not yet checked) holds the collector off: a list of at least
    ``BULK_CALL_FROM`` items, and the collector on. Changes nothing: the caller turns it off inside its ``try`` and
    on in the ``finally``, so that no Ctrl-C between the two leaves it off."""
    return isinstance(topics, list) and len(topics) >= BULK_CALL_FROM and gc.isenabled()
