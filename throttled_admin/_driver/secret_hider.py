"""What librdkafka says, with the client's secrets hidden: its errors and log lines may quote a setting, or what a
server echoed of one. An identity provider refusing an OIDC token request may quote the request's HTTP Basic
credentials (base64 of client id and secret), which librdkafka passes on in the error of every call (``Failed to
acquire SASL OAUTHBEARER token: <the body>``) and in a log line that also names the token endpoint's URL, with any
credentials it carries (red-team 133). ``_kafka.secrets.secret_values`` says what gives a secret away."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException

from throttled_admin._kafka.secrets import SECRET_SETTINGS, redact, secret_values

__all__ = ["SecretHider"]


class SecretHider:
    """Hides the secrets of one client's conf. Its repr names none (the client holds one)."""

    __slots__ = ("_secrets",)

    def __init__(self, conf: Mapping[str, object]) -> None:
        self._secrets = sorted(secret_values(conf))

    def __repr__(self) -> str:
        return f"<SecretHider of {len(self._secrets)} value(s)>"

    def also(self, secret: str) -> None:
        """A secret given after the client was made (``set_sasl_credentials``' password): hidden too from now on."""
        if secret and secret not in self._secrets:
            self._secrets = sorted([*self._secrets, secret])  # (one assignment: a reader sees the old list or the new)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by ``***`` (settings' names kept whole: ``redact``)."""
        return redact(text, self._secrets, keep=SECRET_SETTINGS) if self._secrets else text

    def error(self, error: KafkaError) -> KafkaError:
        """``error`` itself, or the same error in words that hide a secret it quoted."""
        said = error.str()
        hidden = self.text(said)
        if hidden == said:
            return error
        return KafkaError(
            error.code(),
            hidden,
            fatal=error.fatal(),
            retriable=error.retriable(),
            txn_requires_abort=error.txn_requires_abort(),
        )

    def exception(self, exc: BaseException) -> BaseException:
        """``exc`` itself, or, a ``KafkaException`` whose error quoted a secret, one whose error hides it."""
        if not (self._secrets and isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError)):
            return exc
        error = self.error(exc.args[0])
        return exc if error is exc.args[0] else KafkaException(error)
