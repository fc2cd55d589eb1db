"""Which client settings hold secrets, and text with their values hidden: the CLI and provisioning print none.

A key is secret when its name says so: a password, passphrase, secret, token or credential, a JAAS line (a password in
it), or a private key given as PEM (``ssl.key.pem``, ``sasl.oauthbearer.assertion.private.key.pem``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["is_secret_key", "redact"]

_SECRET_KEY = re.compile(r"password|passphrase|secret|token|credential|jaas|key\.pem$", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def redact(text: str, secrets: Iterable[str], marker: str = "***") -> str:
    """``text`` with every secret value replaced by ``marker``, the longest first (a secret that holds another is
    hidden whole), for messages that might echo a setting's value."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, marker)
    return text
