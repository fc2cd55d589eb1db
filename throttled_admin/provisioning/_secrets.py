"""Which of a profile's settings are secrets, and text with their values hidden: nothing in provisioning prints
one."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["is_secret_key", "redact"]

_SECRET_KEY = re.compile(r"password|secret|token|credential|jaas", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    """sasl.password, sasl.oauthbearer.client.secret, ssl.key.password, sasl.jaas.config (a password in it) and
    their kind."""
    return bool(_SECRET_KEY.search(key))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ***, for messages that might echo a conf value."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
