"""Shared checks of the reliability tests: every topic's outcome must agree with what the broker holds.

A reported success must be in the broker; a reported failure must not be, unless the error itself says the
outcome is unknown ("outcome unknown") or that "an earlier attempt" whose response was lost may have applied it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from throttled_admin import OutcomeUnknownError, ThrottledAdminClient
from throttled_admin.testing import QuotaBroker

__all__ = [
    "MUTATION_APIS",
    "admin_for",
    "assert_truthful",
    "error_code",
    "error_text",
    "hedged",
    "mutation_requests",
    "outcomes",
]

MUTATION_APIS = {19: "CreateTopics", 20: "DeleteTopics", 37: "CreatePartitions"}
Outcomes = dict[str, BaseException | None]


def outcomes(futures: Mapping[str, Future[None]], timeout_s: float = 90.0) -> Outcomes:
    """Every future's outcome; a future still pending after ``timeout_s`` fails the test (a hang)."""
    return {name: future.exception(timeout_s) for name, future in futures.items()}


def error_text(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return str(exc.args[0].str())
    return str(exc)


def error_code(exc: BaseException | None) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return int(exc.args[0].code())
    return None


def hedged(exc: BaseException) -> bool:
    """True when the error admits that the broker may have applied the topic."""
    if isinstance(exc, OutcomeUnknownError):
        return True
    text = error_text(exc)
    return "outcome unknown" in text or "earlier attempt" in text


def assert_truthful(
    kind: str,
    results: Outcomes,
    held: Mapping[str, int],
    *,
    before: Mapping[str, int] | None = None,
    wanted: Mapping[str, int] | None = None,
) -> None:
    """``kind``: "create" (wanted = partition counts), "delete", or "grow" (wanted = new totals, ``before`` the
    counts before the call). ``held``: the broker's topics (name -> partitions) after everything settled."""
    before = before or {}
    wanted = wanted or {}
    lies: list[str] = []
    for name, exc in results.items():
        if kind == "create":
            applied = name in held and (name not in wanted or held[name] == wanted[name])
            present_before = name in before
            if exc is None and not applied:
                lies.append(f"{name}: reported created, broker holds {held.get(name)}")
            elif exc is not None and not hedged(exc) and name in held and not present_before:
                lies.append(f"{name}: reported failed ({error_text(exc)}), broker holds it")
        elif kind == "delete":
            if exc is None and name in held:
                lies.append(f"{name}: reported deleted, broker still holds it")
            elif exc is not None and not hedged(exc) and name not in held and name in before:
                lies.append(f"{name}: reported failed ({error_text(exc)}), broker deleted it")
        elif kind == "grow":
            grown = held.get(name) == wanted[name]
            if exc is None and not grown:
                lies.append(f"{name}: reported grown to {wanted[name]}, broker holds {held.get(name)}")
            elif exc is not None and not hedged(exc) and grown and before.get(name) != wanted[name]:
                lies.append(f"{name}: reported failed ({error_text(exc)}), broker grew it")
        else:
            raise ValueError(kind)
    assert not lies, f"{len(lies)} untruthful outcome(s): " + "; ".join(lies[:10])


@contextmanager
def admin_for(broker: QuotaBroker, conf: dict[str, Any] | None = None, **kwargs: Any) -> Iterator[ThrottledAdminClient]:
    admin = ThrottledAdminClient({"bootstrap.servers": broker.bootstrap_servers, **(conf or {})}, **kwargs)
    try:
        yield admin
    finally:
        admin.close()


def mutation_requests(broker: QuotaBroker, api_key: int | None = None) -> list[Any]:
    return [r for r in broker.request_log() if r.api_key in MUTATION_APIS and (api_key is None or r.api_key == api_key)]
