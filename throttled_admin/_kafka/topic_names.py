"""Kafka's topic-name rules (``org.apache.kafka.common.internals.Topic``), shared by the client's input
validation and the test broker, so both reject exactly what a Kafka broker rejects."""

from __future__ import annotations

import re

__all__ = ["MAX_NAME_LENGTH", "collision_key", "topic_name_error"]

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_error(name: str) -> str | None:
    """Kafka's message for an illegal topic name, or None when the name is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic name: {name}"
    if not _LEGAL.fullmatch(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
            "'.', '_' and '-'"
        )
    return None


def collision_key(name: str) -> str:
    """Topics whose names differ only in '.' versus '_' collide in Kafka's metric names."""
    return name.replace(".", "_")
