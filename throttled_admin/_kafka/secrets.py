"""Which client settings hold secrets, and text with their values hidden: the CLI and provisioning print none.

A key is secret when its name says so: a password, passphrase, secret, token or credential, a JAAS line (a password in
it), or a private key given as PEM (``ssl.key.pem``, ``sasl.oauthbearer.assertion.private.key.pem``, Java's
``ssl.keystore.key``), or librdkafka's ``sasl.oauthbearer.config`` (a client secret in it; librdkafka hides it too)."""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Iterable, Mapping

__all__ = ["SECRET_SETTINGS", "SHORT_SECRET", "is_secret_key", "is_setting_name", "redact", "secret_values"]

_SECRET_KEY = re.compile(
    r"password|passphrase|secret|token|credential|jaas|key\.pem$|keystore\.key$|oauthbearer\.config$", re.IGNORECASE
)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


#: The settings that hold secrets, librdkafka's and Java's, by name: messages name them (``sasl.username and
#: sasl.password must be set``), and a secret equal to a word of one must not cut it (``redact``'s ``keep``)
SECRET_SETTINGS = (
    "sasl.username", "sasl.password", "sasl.jaas.config", "sasl.oauthbearer.config", "sasl.oauthbearer.client.secret",
    "ssl.key.password", "ssl.key.pem", "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key",
)  # fmt: skip

# What a setting's name looks like, librdkafka's and Java's alike (``sasl.password``, ``ssl.key.pem``)
_SETTING_NAME = re.compile(r"[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)+")


def is_setting_name(key: str) -> bool:
    """Whether ``key`` reads as a setting's name: a message may name it. Another key of a file is never named: it may
    be a value written on a line of its own (a password under ``ssl.keystore.password=``), or hold one (a password
    after a no-break space or an escaped '=', which are no separators)."""
    return _SETTING_NAME.fullmatch(key) is not None


#: A secret shorter than this is hidden only where it stands alone (see ``redact``).
SHORT_SECRET = 8
# A short secret stands alone unless a host name, an address, a number or a word goes on before it or after it: a
# letter, digit, '-' or '/' beside it, '.' or '@' before it, '.' or ':' and then a letter or digit after it. So it is
# hidden in 'alice:kafka@broker', 'password:kafka' and 'is kafka.', and left in 'kafka:9092', 'kafka-1', '127.0.0.1'.
_ALONE = r"(?<![\w.@/-]){}(?![\w/-]|[.:]\w)"


def redact(text: str, secrets: Iterable[str], marker: str = "***", keep: Iterable[str] = ()) -> str:
    """``text`` with every secret value replaced by ``marker``, the longest first (a secret that holds another is
    hidden whole), for messages that might echo a setting's value. A secret of fewer than ``SHORT_SECRET`` characters
    only where it stands alone, not inside a host name, an address, a number or a word: hidden wherever it occurs,
    the password ``kafka`` turned ``kafka:9092`` into ``***:9092``, and ``1`` every address into ``***27.0.0.***``,
    mangling the text and saying what the password was. ``keep``: names left whole (settings' names: the password
    ``password`` made ``sasl.password`` into ``sasl.***``, which said what it was), but one a secret holds."""
    secrets = list(secrets)
    names = sorted({name for name in keep if name and not any(name in secret for secret in secrets)}, key=len)[::-1]
    if names:
        pieces = re.split("(" + "|".join(map(re.escape, names)) + ")", text)
        return "".join(piece if index % 2 else redact(piece, secrets, marker) for index, piece in enumerate(pieces))
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= SHORT_SECRET:
            text = text.replace(secret, marker)
        else:
            text = re.sub(_ALONE.format(re.escape(secret)), lambda _: marker, text)
    return text


def secret_values(settings: Mapping[str, object]) -> set[str]:
    """Every text that gives away a secret of ``settings``, to hide in messages: each secret setting's value; in a URL
    one, the parts that carry credentials (``_url_credentials``); in ``sasl.oauthbearer.config``, each field's value
    and the rest of the line from each field on, as librdkafka quotes them refusing one (``non-integral
    'lifeSeconds=': <value>``, ``Unrecognized sasl.oauthbearer.config beginning at: <the rest>``); and the HTTP Basic
    credentials an OIDC token request carries (base64 of client id:secret), which an identity provider may echo."""
    values: set[str] = set()
    texts = {key: _text(value) for key, value in settings.items()}
    client, secret = texts.get("sasl.oauthbearer.client.id"), texts.get("sasl.oauthbearer.client.secret")
    if isinstance(client, str) and isinstance(secret, str) and secret:
        values.add(base64.b64encode(f"{client}:{secret}".encode()).decode())
    for key, value in texts.items():
        if is_secret_key(key) and isinstance(value, str) and value:
            values.add(value)
            values.update(_url_credentials(value))
            if key.endswith("oauthbearer.config"):
                values.update(_fields(value))
    return values


def _text(value: object) -> object:
    """A setting's value as librdkafka takes it: a number as its digits (a Profile made in code may hold a password
    of digits, or a numeric client id), anything else as it is."""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


# sasl.oauthbearer.config's fields that hold no secret: who the principal is and its scope (the name the broker
# charges and names, shown as sasl.username's is), and a lifetime, which librdkafka quotes only when it is no number
_NAMES_AND_SCOPES = frozenset({"principal", "principalClaimName", "scope", "scopeClaimName"})


def _fields(config: str) -> list[str]:
    """A ``name=value ...`` line's values but those that hold no secret (a wrong one hidden all the same), and its
    rest from each field on."""
    found = []
    for field in re.finditer(r"\S+", config):
        found.append(config[field.start() :].rstrip())
        name, _, value = field.group().partition("=")
        if name not in _NAMES_AND_SCOPES and not (name == "lifeSeconds" and value.isdigit()):
            found.append(value)
    return [value for value in found if value]


def _url_credentials(value: str) -> list[str]:
    """A URL's parts that carry credentials, hidden on their own (a message may quote one, as curl's do): its user's
    password, its query and each query value. Its host and path carry none (``Could not resolve host: idp.example``
    stays readable)."""
    try:
        url = urllib.parse.urlsplit(value)
        password = url.password
    except ValueError:
        return []
    if url.scheme.lower() not in ("http", "https") or not url.netloc:
        return []
    values = [v for _, v in urllib.parse.parse_qsl(url.query, keep_blank_values=False)]
    return [part for part in (password, url.query, *values) if part]
