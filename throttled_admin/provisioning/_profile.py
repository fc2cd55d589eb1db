"""A connection profile: how to reach one cluster as one principal, and the quota to pace to. Its conf
holds credentials, so nothing here ever prints them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Profile", "is_secret_key", "redact"]

_SECRET_KEY = re.compile(r"password|secret|token|credential", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    """sasl.password, sasl.oauthbearer.client.secret, ssl.key.password and their kind."""
    return bool(_SECRET_KEY.search(key))


@dataclass(frozen=True)
class Profile:
    """``conf`` is a librdkafka configuration (``bootstrap.servers``, ``sasl.username``, ...).
    ``mutation_rate``: the principal's controller mutation quota in mutations/s, or None to learn it from
    the broker's throttle feedback. ``request_timeout_s``: how long one request may go unanswered before
    its outcome counts as unknown (and is verified by reading the cluster)."""

    name: str
    conf: dict[str, str] = field(repr=False)
    mutation_rate: float | None = None
    request_timeout_s: float = 30.0

    def __repr__(self) -> str:
        shown = {k: ("***" if is_secret_key(k) else v) for k, v in self.conf.items()}
        return f"Profile(name={self.name!r}, conf={shown!r}, mutation_rate={self.mutation_rate!r})"

    __str__ = __repr__

    @property
    def bootstrap_servers(self) -> str:
        return str(self.conf.get("bootstrap.servers", ""))

    @property
    def principal(self) -> str:
        """Whom the broker charges: the SASL user (or OAuth client), else the connection is ANONYMOUS."""
        return str(self.conf.get("sasl.username") or self.conf.get("sasl.oauthbearer.client.id") or "")

    @property
    def group_key(self) -> tuple[str, str]:
        """One quota entity: rows sharing it run in one group, with one client, never from two places."""
        return (self.bootstrap_servers, self.principal)

    def secrets(self) -> list[str]:
        return [str(v) for k, v in self.conf.items() if is_secret_key(k) and str(v)]


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret value replaced by ***, for messages that might echo a conf value."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
