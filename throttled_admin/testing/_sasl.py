"""The test broker's SASL mechanisms, as Kafka's servers evaluate a client's tokens: PLAIN (``PlainSaslServer``) and
SCRAM-SHA-256/512 (``ScramSaslServer``, RFC 5802). A mechanism's exchange is ``evaluate(token)`` until it returns
the authenticated user; Kafka's own messages come back for what it refuses, and no message holds a password.

SCRAM credentials are made from the listener's ``users`` as ``kafka-configs --alter --add-config
'SCRAM-SHA-256=[password=...]'`` makes them: a random salt and 4096 iterations per user and mechanism, once.
"""

from __future__ import annotations

import base64
import hmac
import os
import secrets
from dataclasses import dataclass

from throttled_admin._kafka import scram

__all__ = ["MECHANISMS", "SaslFailure", "ScramCredentials", "evaluate_plain", "generic_failure", "new_exchange"]

MECHANISMS = ("PLAIN", *scram.MECHANISMS)


class SaslFailure(Exception):
    """The token is refused. ``message``: Kafka's, for the client; None where Kafka sends its generic one (a
    SaslException, whose own text may tell whether the user exists)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message)
        self.message = message


def generic_failure(mechanism: str, reauthenticating: bool) -> str:
    """``SaslServerAuthenticator``'s answer to a SaslException: the phase and the mechanism, nothing else."""
    phase = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"


def evaluate_plain(token: bytes, users: dict[str, str], principal: str | None) -> str:
    """``PlainSaslServer.evaluateResponse`` and, on re-authentication (``principal``: the connection's),
    ``ensurePrincipalUnchanged``: the authenticated user."""
    tokens = token.split(b"\x00")
    if len(tokens) != 3:
        raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    authzid, user, password = (t.decode("utf-8", "replace") for t in tokens)
    if not user:
        raise SaslFailure("Authentication failed: username not specified")
    if not password:
        raise SaslFailure("Authentication failed: password not specified")
    if users.get(user) != password:
        raise SaslFailure("Authentication failed: Invalid username or password")
    if authzid and authzid != user:
        raise SaslFailure("Authentication failed: Client requested an authorization id that is different from username")
    _ensure_unchanged(user, principal)
    return user


def _ensure_unchanged(user: str, principal: str | None) -> None:
    if principal is not None and user != principal:
        raise SaslFailure(f"Cannot change principals during re-authentication from User.{principal}: User.{user}")


@dataclass(frozen=True)
class _Credential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


class ScramCredentials:
    """Each user's SCRAM credential per mechanism, made on first use from the listener's passwords."""

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self._made: dict[tuple[str, str], _Credential] = {}

    def get(self, user: str, mechanism: str) -> _Credential | None:
        password = self._users.get(user)
        if password is None:
            return None
        credential = self._made.get((user, mechanism))
        if credential is None:
            hash_name, salt = scram.MECHANISMS[mechanism], os.urandom(16)
            salted = scram.salted_password(hash_name, password, salt, scram.MIN_ITERATIONS)
            client_key = scram.client_key(hash_name, salted)
            credential = _Credential(
                salt,
                scram.MIN_ITERATIONS,
                scram.stored_key(hash_name, client_key),
                scram.server_key(hash_name, salted),
            )
            self._made[(user, mechanism)] = credential
        return credential


class _ScramExchange:
    """``ScramSaslServer``: client-first -> server-first, client-final -> server-final (the user)."""

    def __init__(self, mechanism: str, credentials: ScramCredentials, principal: str | None) -> None:
        self._mechanism = mechanism
        self._hash = scram.MECHANISMS[mechanism]
        self._credentials = credentials
        self._principal = principal
        self._first: tuple[str, str, str, _Credential] | None = None  # (client-first-bare, server-first, user, cred)
        self.user: str | None = None  # set once the exchange has succeeded

    def evaluate(self, token: bytes) -> bytes:
        if self._first is None:
            return self._server_first(token)
        return self._server_final(token)

    def _server_first(self, token: bytes) -> bytes:
        try:
            text = token.decode()
            gs2, _, bare = text.partition(",")
            authzid, _, bare = bare.partition(",")
            fields = scram.attributes(bare)
            user, nonce = scram.username(fields["n"]), fields["r"]
        except (UnicodeError, ValueError, KeyError):
            raise SaslFailure() from None
        if gs2 != "n" or not nonce:  # no channel binding over Kafka
            raise SaslFailure()
        credential = self._credentials.get(user, self._mechanism)
        if credential is None:
            raise SaslFailure()  # "Authentication failed: Invalid user credentials", not sent to the client
        if authzid and (not authzid.startswith("a=") or authzid[2:] != user):
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        salt = base64.b64encode(credential.salt).decode()
        server_first = f"r={nonce}{secrets.token_urlsafe(18)},s={salt},i={credential.iterations}"
        self._first = (bare, server_first, user, credential)
        return server_first.encode()

    def _server_final(self, token: bytes) -> bytes:
        assert self._first is not None
        bare, server_first, user, credential = self._first
        try:
            text = token.decode()
            without_proof, _, proof_field = text.rpartition(",")
            fields = scram.attributes(text)
            proof = base64.b64decode(fields["p"], validate=True)
        except (UnicodeError, ValueError, KeyError):
            raise SaslFailure() from None
        if not proof_field.startswith("p=") or fields.get("r") != scram.attributes(server_first)["r"]:
            raise SaslFailure()  # "Invalid client nonce in the final client message."
        auth_message = f"{bare},{server_first},{without_proof}".encode()
        client_signature = scram.signature(self._hash, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise SaslFailure()
        client_key = scram.xor(proof, client_signature)
        if not hmac.compare_digest(scram.stored_key(self._hash, client_key), credential.stored_key):
            raise SaslFailure()  # "Invalid client credentials"
        _ensure_unchanged(user, self._principal)
        self.user = user
        server_signature = scram.signature(self._hash, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


def new_exchange(mechanism: str, credentials: ScramCredentials, principal: str | None) -> _ScramExchange:
    """A SCRAM exchange for one connection's authentication (``principal``: the connection's, on
    re-authentication)."""
    return _ScramExchange(mechanism, credentials, principal)
