"""Kafka's topic-name rules (``org.apache.kafka.common.internals.Topic``), shared by the client's input
validation and the test broker, so both reject exactly what a Kafka broker rejects, with Kafka 4.4's words
(``Topic.validate``'s ``InvalidTopicException`` messages, as a 4.4.0 broker sends them)."""

from __future__ import annotations

import re

__all__ = ["MAX_NAME_LENGTH", "all_legal", "collision_key", "none_collide", "topic_name_error"]

MAX_NAME_LENGTH = 249
_CHARACTERS = r"[a-zA-Z0-9._-]+"
_LEGAL = re.compile(_CHARACTERS)
_LEGAL_LINES = re.compile(rf"{_CHARACTERS}(?:\n{_CHARACTERS})*")  # legal names, one a line: a list in one match


def topic_name_error(name: str) -> str | None:
    """Kafka's message for an illegal topic name, or None when the name is legal: Kafka 4.4's
    ``Topic.validate`` wording, checked against the real broker and kafka-topics.sh
    (tests/test_cli_vs_kafka_topics.py)."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is invalid: the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _LEGAL.fullmatch(name):
        return (
            f"Topic name is invalid: '{name}' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"
        )
    return None


def all_legal(names: list[str]) -> bool:
    """True when ``topic_name_error`` passes every name (strs), checked over the whole list at once (a bulk call's
    10,000 names in one match, not 10,000)."""
    if not names or max(map(len, names)) > MAX_NAME_LENGTH or "." in names or ".." in names:
        return False
    lines = "\n".join(names)  # a name holding a newline would pass as two: the count of lines tells
    return lines.count("\n") == len(names) - 1 and _LEGAL_LINES.fullmatch(lines) is not None


def collision_key(name: str) -> str:
    """Topics whose names differ only in '.' versus '_' collide in Kafka's metric names."""
    return name.replace(".", "_")


def none_collide(names: list[str]) -> bool:
    """True when no two of ``names`` (legal names: ``all_legal``) have the same ``collision_key``, checked over the
    whole list at once (one replace of the names joined, not one call a name)."""
    keys = collision_key("\n".join(names)).split("\n")  # collision_key of each: a legal name has no newline
    return len(set(keys)) == len(names)
