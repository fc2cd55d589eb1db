"""The Java Admin client's settings that librdkafka has no name for, in a --command-config file.

kafka-topics.sh hands its --command-config file to Java's Admin client, so a file written for it may hold Java's
tuning (``default.api.timeout.ms``, ``receive.buffer.bytes``, ``metrics.num.samples``, ...). librdkafka refuses
each as "No such configuration property", which failed a command that kafka-topics.sh runs. Each such setting
(Kafka 4.4's ``AdminClientConfig.configNames()`` that librdkafka 2.x does not know) is one of:

- **left out**: it tunes only the Java client (timers, buffers, metrics, the JVM's TLS internals), so librdkafka's
  defaults serve it; the command says so on stderr, naming it, as Java warns of a setting it does not use;
- **taken**: ``default.api.timeout.ms`` is the deadline of kafka-topics.sh's calls, which ``topics --timeout-ms``
  is; the file's value is the command's timeout unless --timeout-ms is given;
- **refused**: it changes whom the client reaches, how it proves who it is, or what it trusts, which librdkafka
  cannot do as Java would (a Java class, a provider, a JKS keystore, TLS 1.3 only): leaving it out would connect
  otherwise than the file asks, so the file is refused, naming it (never its value).

``ssl.truststore.*`` and ``sasl.jaas.config`` are read in ``_conf`` (librdkafka's equivalents beside them).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DEFAULT_API_TIMEOUT", "java_refusal", "left_out", "notice"]

#: Java's deadline of an Admin call: ``topics --timeout-ms`` when that is not given
DEFAULT_API_TIMEOUT = "default.api.timeout.ms"

_LIBRDKAFKA_HAS = "librdkafka has no such setting"
# Left out, with why when librdkafka has a setting of its own for the same thing
_LEFT_OUT: dict[str, str] = {
    "bootstrap.resolve.timeout.ms": _LIBRDKAFKA_HAS,
    "metadata.cluster.check.enable": _LIBRDKAFKA_HAS,
    "metric.reporters": "librdkafka reports no JMX metrics",
    "metrics.num.samples": "librdkafka reports no JMX metrics",
    "metrics.recording.level": "librdkafka reports no JMX metrics",
    "metrics.sample.window.ms": "librdkafka reports no JMX metrics",
    "receive.buffer.bytes": "librdkafka's is socket.receive.buffer.bytes",
    "send.buffer.bytes": "librdkafka's is socket.send.buffer.bytes",
    "socket.connection.setup.timeout.max.ms": "librdkafka's is socket.connection.setup.timeout.ms",
    "sasl.kerberos.ticket.renew.jitter": "librdkafka's is sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.ticket.renew.window.factor": "librdkafka's is sasl.kerberos.min.time.before.relogin",
    "sasl.login.connect.timeout.ms": _LIBRDKAFKA_HAS,
    "sasl.login.read.timeout.ms": _LIBRDKAFKA_HAS,
    "sasl.login.refresh.buffer.seconds": _LIBRDKAFKA_HAS,
    "sasl.login.refresh.min.period.seconds": _LIBRDKAFKA_HAS,
    "sasl.login.refresh.window.factor": _LIBRDKAFKA_HAS,
    "sasl.login.refresh.window.jitter": _LIBRDKAFKA_HAS,
    "sasl.login.retry.backoff.max.ms": _LIBRDKAFKA_HAS,
    "sasl.login.retry.backoff.ms": _LIBRDKAFKA_HAS,
    # How a broker checks a token: the client's token is librdkafka's sasl.oauthbearer.* (``_conf`` asks for them)
    "sasl.oauthbearer.allow.unverified.audience": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.allow.unverified.issuer": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.clock.skew.seconds": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.expected.audience": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.expected.issuer": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.jwks.endpoint.url": _LIBRDKAFKA_HAS,
    "sasl.oauthbearer.scope.claim.name": _LIBRDKAFKA_HAS,
    # The JVM's TLS internals: librdkafka's TLS is OpenSSL's
    "ssl.keymanager.algorithm": "librdkafka's TLS is OpenSSL's",
    "ssl.trustmanager.algorithm": "librdkafka's TLS is OpenSSL's",
    "ssl.secure.random.implementation": "librdkafka's TLS is OpenSSL's",
    "ssl.protocol": "librdkafka's TLS is OpenSSL's, which offers TLS 1.2 and 1.3",
}
_CLASS = "librdkafka cannot load a Java class"
# Refused: why librdkafka cannot do what the setting asks
_REFUSED: dict[str, str] = {
    "bootstrap.controllers": "librdkafka reaches brokers only; give the brokers in --bootstrap-server",
    "config.providers": "librdkafka would take a ${provider:...} reference as the value itself; write the values",
    "security.providers": "librdkafka's TLS and SASL are OpenSSL's and Cyrus SASL's",
    "sasl.client.callback.handler.class": _CLASS,
    "sasl.login.callback.handler.class": _CLASS,
    "sasl.login.class": _CLASS,
    "sasl.oauthbearer.jwt.retriever.class": _CLASS,
    "sasl.oauthbearer.jwt.validator.class": _CLASS,
    "sasl.oauthbearer.assertion.template.file": "librdkafka makes no client assertion from a template",
    "sasl.oauthbearer.header.urlencode": _LIBRDKAFKA_HAS,
    "ssl.engine.factory.class": _CLASS,
    "ssl.provider": "librdkafka's TLS is OpenSSL's",
    "ssl.keystore.certificate.chain": "give the chain in librdkafka's ssl.certificate.pem",
    "ssl.keystore.key": "give the key in librdkafka's ssl.key.pem",
}
# Left out or refused by their value (``java_refusal``), and why when left out
_CHECKED = {
    "ssl.enabled.protocols": "librdkafka's TLS is OpenSSL's, which offers TLS 1.2 and 1.3",
    "ssl.keystore.type": "librdkafka reads PKCS12 at ssl.keystore.location, PEM in ssl.key.pem and ssl.certificate.pem",
}


def _protocols_refusal(value: str) -> str | None:
    """Why ``ssl.enabled.protocols`` cannot be left out: librdkafka offers TLS 1.2 and 1.3, so a list naming TLS
    1.2 is met (and one that also names older versions, which OpenSSL 3 refuses anyway); TLS 1.3 alone is not."""
    protocols = {word.strip() for word in value.split(",") if word.strip()}
    if "TLSv1.2" in protocols:
        return None
    return f"librdkafka's TLS offers TLS 1.2 and 1.3 and cannot be limited to {', '.join(sorted(protocols))}"


def _keystore_refusal(value: str) -> str | None:
    """Why ``ssl.keystore.type`` cannot be left out: librdkafka reads a PKCS#12 keystore at ssl.keystore.location,
    or PEM in ssl.key.pem and ssl.certificate.pem; a JKS keystore it cannot read."""
    if value.strip().upper() in ("PKCS12", "PEM"):
        return None
    return "librdkafka reads a PKCS12 keystore only (keytool -importkeystore -deststoretype PKCS12 converts one)"


def java_refusal(properties: Mapping[str, str]) -> str | None:
    """Why the file cannot serve librdkafka as it serves Java: the first Java-only setting it cannot do without,
    named with the reason (never the value); None when there is none."""
    for key, value in properties.items():
        reason = _REFUSED.get(key)
        if key == "ssl.enabled.protocols":
            reason = _protocols_refusal(value)
        elif key == "ssl.keystore.type":
            reason = _keystore_refusal(value)
        if reason is not None:
            return f"{key} is the Java client's: {reason}"
    return None


def left_out(properties: Mapping[str, str]) -> dict[str, str]:
    """The Java-only settings librdkafka does without, each with why (in the file's order)."""
    out = {}
    for key, value in properties.items():
        if key in _LEFT_OUT:
            out[key] = _LEFT_OUT[key]
        elif key in _CHECKED and java_refusal({key: value}) is None:
            out[key] = _CHECKED[key]
    return out


def notice(path: str | None, properties: Mapping[str, str], *, takes_timeout: bool) -> str | None:
    """The warning that names what of the file is left out (None when nothing is); ``takes_timeout``: the command
    takes default.api.timeout.ms as its own (``topics``), else it is left out too."""
    if path is None:
        return None
    out = left_out(properties)
    if not takes_timeout and DEFAULT_API_TIMEOUT in properties:
        out[DEFAULT_API_TIMEOUT] = "apply's deadline is its --timeout"
    if not out:
        return None
    named = "; ".join(f"{key} ({why})" for key, why in out.items())
    return f"WARNING: --command-config {path}: the Java client's settings, left out: {named}."
