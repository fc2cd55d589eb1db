"""The client's side of SASL/PLAIN and SASL/SCRAM-SHA-256/512 (RFC 4616, RFC 5802, RFC 7677), as tokens in and out:
``broker_connection`` carries them in SaslAuthenticate requests. No sockets here.

An exchange is ``first()`` (the client's first token), then ``respond(challenge)`` for each server token until it
returns None (done). A server that does not prove it knows the password (SCRAM's ServerSignature) fails the
exchange. No message here ever holds the password.
"""

from __future__ import annotations

import base64
import hmac
import secrets

from throttled_admin._kafka import scram

__all__ = ["SUPPORTED_MECHANISMS", "SaslError", "SaslExchange", "exchange_for"]

SUPPORTED_MECHANISMS = ("PLAIN", *scram.MECHANISMS)


class SaslError(Exception):
    """The SASL exchange failed on the client's side (a server answer that does not check out)."""


class SaslExchange:
    """PLAIN: one token, no challenge."""

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password

    def __repr__(self) -> str:
        return f"{type(self).__name__}(username={self._username!r})"

    def first(self) -> bytes:
        return b"\x00" + self._username.encode() + b"\x00" + self._password.encode()

    def respond(self, challenge: bytes) -> bytes | None:
        return None


class ScramExchange(SaslExchange):
    """SCRAM: client-first, server-first -> client-final, server-final (checked) -> done."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        super().__init__(username, password)
        self._hash = scram.MECHANISMS[mechanism]
        self._nonce = nonce or secrets.token_urlsafe(24)  # printable, no ","
        self._first_bare = f"n={scram.sasl_name(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first(self) -> bytes:
        return ("n,," + self._first_bare).encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._final(challenge)
        self._check_server_final(challenge)
        return None

    def _final(self, server_first: bytes) -> bytes:
        try:
            text = server_first.decode()
            fields = scram.attributes(text)
            nonce, salt, iterations = fields["r"], base64.b64decode(fields["s"], validate=True), int(fields["i"])
        except (UnicodeError, ValueError, KeyError) as exc:
            raise SaslError("the broker's SCRAM server-first message does not parse") from exc
        if "m" in fields or not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce) or iterations < 1:
            raise SaslError("the broker's SCRAM server-first message is not valid")
        if iterations < scram.MIN_ITERATIONS:
            # As Kafka's ScramSaslClient: a proof computed with fewer iterations than Kafka's minimum for a
            # credential is cheaper to brute-force offline, and no Kafka broker asks for one.
            raise SaslError(
                f"the broker's SCRAM server-first message requested {iterations} iterations, "
                f"less than the minimum {scram.MIN_ITERATIONS}"
            )
        salted = scram.salted_password(self._hash, self._password, salt, iterations)
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        client_key = scram.client_key(self._hash, salted)
        client_signature = scram.signature(self._hash, scram.stored_key(self._hash, client_key), auth_message)
        proof = base64.b64encode(scram.xor(client_key, client_signature)).decode()
        self._server_signature = scram.signature(self._hash, scram.server_key(self._hash, salted), auth_message)
        return f"{without_proof},p={proof}".encode()

    def _check_server_final(self, server_final: bytes) -> None:
        try:
            fields = scram.attributes(server_final.decode())
        except (UnicodeError, ValueError) as exc:
            raise SaslError("the broker's SCRAM server-final message does not parse") from exc
        if "e" in fields:
            raise SaslError(f"the broker refused the SCRAM exchange: {fields['e']}")
        try:
            verifier = base64.b64decode(fields.get("v", ""), validate=True)
        except ValueError as exc:
            raise SaslError("the broker's SCRAM server-final message does not parse") from exc
        assert self._server_signature is not None
        if not hmac.compare_digest(verifier, self._server_signature):
            raise SaslError("the broker's SCRAM signature is wrong: it does not know the user's credentials")


def exchange_for(mechanism: str, username: str, password: str) -> SaslExchange:
    """A fresh exchange for one connection (``mechanism``: one of SUPPORTED_MECHANISMS)."""
    if mechanism == "PLAIN":
        return SaslExchange(username, password)
    return ScramExchange(mechanism, username, password)
