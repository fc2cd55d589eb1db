"""A call's topics taken in (``Engine.submit``, ``Engine.extend``): the engine's own records made from the driver's
values, queued under rule a, and the ids of their names asked for when a create waits for them before its send.

A bulk call may come in two parts (issue 40): its first topics, then, once its first request is on its way, the rest,
queued behind what is queued then. Cut short (Ctrl-C on the caller's thread) while a part is taken in, none of that
part stays: a call that was never queued leaves no trace, and a rest cut short leaves the call as it was.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from throttled_admin._engine.queue import WorkQueue
from throttled_admin._engine.view_reads import ViewReads
from throttled_admin._engine.work import CREATE_TOPICS, Call, Topic, TopicSpec, TopicSpecs, cost_with_default

__all__ = ["take_in"]


def take_in(
    call: Call,
    topics: Iterable[TopicSpec],
    queue: WorkQueue,
    views: ViewReads,
    default_partitions: int | None,
    *,
    more: bool = False,
    rest: bool = False,
) -> list[Topic]:
    """The engine's records of ``topics`` (the whole call, or its first part if ``more``; its rest if ``rest``),
    queued; a create of -1 partitions costs ``default_partitions`` when that is known."""
    own: list[Topic] = []
    try:
        given = TopicSpecs.of(topics)
        own = _records(call, given, default_partitions)
        reads_ids = call.spec.wait_for_metadata and not call.kind.validate_only and call.kind.operation is CREATE_TOPICS
        if reads_ids:  # incarnations: the ids before the send (``visibility``)
            views.want_ids(own)
        if rest:
            queue.extend(call, own)
        else:  # rule a: held behind its name while an earlier pending call names it too
            queue.add(call, own, more=more)
        if reads_ids:  # ... or those read ahead, by a create that holds its name (``read_ahead``)
            views.take_ahead(own, call.spec.started_at)
        else:
            views.named(given.names)
    except BaseException:  # cut short (Ctrl-C on the caller's thread, a bulk call's long submit)
        if rest and not call.whole:  # inside ``extend``: none of the rest stays
            queue.take_back(call, own)
            views.forget_all(own)
        elif not rest and queue.calls.get(call.id) is not call:  # inside ``add``: none of it stays
            queue.discard(own)
            views.forget_all(own)
        raise  # (queued whole, perhaps sent by a signal handler's turn: the driver takes back what is not sent)
    return own


def _records(call: Call, given: TopicSpecs, default_partitions: int | None) -> list[Topic]:
    own = list(map(Topic, given.names, given.items, itertools.repeat(call), given.costs, given.records))
    if default_partitions is not None and call.kind.operation is CREATE_TOPICS:
        for topic in own:
            if topic.cost is None:
                cost_with_default(topic, default_partitions)  # -1 partitions: the cluster's default, known already
    return own
