"""SASL/SCRAM's arithmetic (RFC 5802, RFC 7677), as Kafka's ``ScramFormatter`` and ``ScramMessages`` do it: shared by
the client's broker-views reader (``_driver/sasl_client.py``) and the test broker's SCRAM listener
(``throttled_admin/testing/_sasl.py``). The conversations themselves live with each side; this is the math and the
message syntax only.

- SaltedPassword = Hi(password, salt, i) (PBKDF2 with HMAC; the password's UTF-8 bytes, no SASLprep, as Kafka);
- ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword,
  "Server Key");
- AuthMessage = client-first-message-bare + "," + server-first-message + "," + client-final-message-without-proof;
- ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage); ServerSignature = HMAC(ServerKey, AuthMessage).

Kafka refuses credentials of fewer than 4096 iterations (``ScramMechanism.minIterations``).
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = [
    "MECHANISMS",
    "MIN_ITERATIONS",
    "attributes",
    "client_key",
    "salted_password",
    "sasl_name",
    "server_key",
    "signature",
    "stored_key",
    "username",
    "xor",
]

#: SASL mechanism name -> hashlib's name of its hash.
MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def signature(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def client_key(hash_name: str, salted: bytes) -> bytes:
    return signature(hash_name, salted, b"Client Key")


def server_key(hash_name: str, salted: bytes) -> bytes:
    return signature(hash_name, salted, b"Server Key")


def stored_key(hash_name: str, key: bytes) -> bytes:
    return hashlib.new(hash_name, key).digest()


def xor(first: bytes, second: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(first, second, strict=True))


def sasl_name(user: str) -> str:
    """The user as a SCRAM ``saslname``: "=" and "," escaped (RFC 5802, 5.1)."""
    return user.replace("=", "=3D").replace(",", "=2C")


def username(name: str) -> str:
    """``ScramFormatter.username``: a ``saslname`` unescaped; ValueError for a stray "="."""
    out, index = [], 0
    while index < len(name):
        if name[index] != "=":
            out.append(name[index])
            index += 1
            continue
        escape = name[index : index + 3]
        if escape not in ("=2C", "=3D"):
            raise ValueError("Invalid username")
        out.append("," if escape == "=2C" else "=")
        index += 3
    return "".join(out)


def attributes(message: str) -> dict[str, str]:
    """A SCRAM message's "a=value" attributes, in order; ValueError when one is not of that form."""
    parsed: dict[str, str] = {}
    for part in message.split(","):
        key, equals, value = part.partition("=")
        if len(key) != 1 or not equals:
            raise ValueError("not a SCRAM message")
        parsed.setdefault(key, value)
    return parsed
