"""An answer of many topics, every one applied, settled after the next request is handed over (issue 40).

Settling an answered topic (its verdict, its history, its future's settlement) costs the engine 8-10 us; for a
request of 2,000 topics that was most of the gap between an answer and the next write. When the answer leaves
nothing that the next request depends on (no throttle for the gate, no split for the batch cap, no topic queued
again, no deadline passed, no wait_for_metadata reads to plan), ``LateSettlement`` holds it: the step that takes
it composes the next request, the driver writes it, and the engine's next step (at once: the same step wakes at
``now``) settles the held topics first, before any deadline is looked at; ``close()`` settles them too. Either
way they are settled as the broker answered: applied. An answer of fewer topics than
``EngineConfig.settle_after_send_from`` (a 1-topic or 50-topic call's) is settled in the step that takes it,
with no extra step.
"""

from __future__ import annotations

from throttled_admin._engine.after_answer import Response
from throttled_admin._engine.classify import Outcome
from throttled_admin._engine.request import Request
from throttled_admin._engine.work import TopicRef

__all__ = ["LateSettlement"]

_ALL_APPLIED = {Outcome.SUCCESS}


class LateSettlement:
    """At most one answered request whose topics are still to be settled."""

    def __init__(self, from_topics: int) -> None:
        self.from_topics = from_topics
        # the held answer (an attribute, not a property: every step looks, issue 39)
        self.held: tuple[Request, Response] | None = None
        # the last answer taken (every topic applied: settled, or being settled), and each answer's topics as
        # ``holds`` reads them, made when first asked
        self._taken: Request | None = None
        self._refs: list[tuple[Request, frozenset[TopicRef]]] = []

    def hold(self, request: Request, response: Response, now: float) -> bool:
        """Hold ``request``'s answer (True) if it is large, answered, every topic applied, with no throttle, no
        split, every call's deadline still ahead and none waiting for metadata (its reads are planned in the step
        that takes the answer)."""
        if len(request.topics) < self.from_topics or request.answered_at is None or self.held is not None:
            return False
        if response.throttle_s > 0 or response.split:
            return False
        if set(response.outcomes.values()) != _ALL_APPLIED:
            return False
        specs = [call.spec for call in {topic.call for topic in request.topics}]  # a Call hashes by identity
        if not all(spec.deadline > now and not spec.wait_for_metadata for spec in specs):
            return False
        self.held = request, response
        return True

    def holds(self, ref: TopicRef) -> bool:
        """Whether the topic is of the held answer, or of the last one taken (which the step that took it may still
        be settling): applied, and settled so. Asked only by close() from a frame that cannot wait for a step."""
        held = None if self.held is None else self.held[0]
        return any(ref in self._refs_of(request) for request in (held, self._taken) if request is not None)

    def _refs_of(self, request: Request) -> frozenset[TopicRef]:
        """The request's topics, made once (a close asks about every topic pending); the last two kept."""
        for known, refs in self._refs:
            if known is request:
                return refs
        refs = frozenset(topic.ref for topic in request.topics)
        self._refs = [*self._refs[-1:], (request, refs)]
        return refs

    def take(self) -> tuple[Request, Response]:
        """The held answer (``held`` is not None), to settle now; held no longer."""
        held, self.held = self.held, None
        assert held is not None, "nothing held"
        self._taken = held[0]
        return held
