"""The Java Admin client's settings that librdkafka has no name for, in a --command-config file.

kafka-topics.sh hands its --command-config file to Java's Admin client, so a file written for it may hold Java's
tuning (``default.api.timeout.ms``, ``receive.buffer.bytes``, ``metrics.num.samples``, ...). librdkafka refuses
each as "No such configuration property", which failed a command that kafka-topics.sh runs. Each such setting
(Kafka 4.4's ``AdminClientConfig.configNames()`` that librdkafka 2.16 does not know) is one of:

- **left out**: it tunes only the Java client (timers, buffers, metrics, the JVM's TLS internals), is a Java
  producer's or consumer's (a file shared with them), names Java's own default, asks for what librdkafka does anyway,
  or is an ``ssl.*`` setting where the connection has no TLS (librdkafka's own too), so librdkafka's defaults serve;
  the command names it on stderr, as Java warns of a setting it does not use;
- **taken**: ``default.api.timeout.ms`` is the deadline of kafka-topics.sh's calls, which ``topics --timeout-ms``
  is; the file's value is the command's deadline unless --timeout-ms is given (``_args.command_timeout``);
- **refused**: it changes whom the client reaches, how it proves who it is, or what it trusts, in a way librdkafka
  cannot follow (a Java class, a provider, a JKS keystore, TLS 1.3 only): leaving it out would connect otherwise
  than the file asks, so the file is refused, naming it, never its value (a value may hold the next line of a
  password after a stray ``\\``).

``ssl.truststore.*`` and ``sasl.jaas.config`` are read in ``_conf`` (librdkafka's equivalents beside them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from throttled_admin._kafka.secrets import is_setting_name

__all__ = ["DEFAULT_API_TIMEOUT", "has_tls", "java_refusal", "left_out", "notice"]

#: Java's deadline of an Admin call: ``topics --timeout-ms`` when that is not given
DEFAULT_API_TIMEOUT = "default.api.timeout.ms"

_NONE = "librdkafka has no such setting"
_NO_JMX = "librdkafka reports no JMX metrics"
_OPENSSL = "librdkafka's TLS is OpenSSL's"
_CLASS = "librdkafka cannot load a Java class"
# Left out, and why
_LEFT_OUT: dict[str, str] = {
    "bootstrap.resolve.timeout.ms": _NONE,
    "metadata.cluster.check.enable": "librdkafka never checks that a broker is of the cluster it bootstrapped from",
    "metric.reporters": _NO_JMX,
    "metrics.num.samples": _NO_JMX,
    "metrics.recording.level": _NO_JMX,
    "metrics.sample.window.ms": _NO_JMX,
    "receive.buffer.bytes": "librdkafka's is socket.receive.buffer.bytes",
    "send.buffer.bytes": "librdkafka's is socket.send.buffer.bytes",
    "socket.connection.setup.timeout.max.ms": "librdkafka's is socket.connection.setup.timeout.ms",
    "sasl.kerberos.ticket.renew.jitter": "librdkafka's is sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.ticket.renew.window.factor": "librdkafka's is sasl.kerberos.min.time.before.relogin",
    "sasl.login.connect.timeout.ms": _NONE,
    "sasl.login.read.timeout.ms": _NONE,
    "sasl.login.refresh.buffer.seconds": _NONE,
    "sasl.login.refresh.min.period.seconds": _NONE,
    "sasl.login.refresh.window.factor": _NONE,
    "sasl.login.refresh.window.jitter": _NONE,
    "sasl.login.retry.backoff.max.ms": _NONE,
    "sasl.login.retry.backoff.ms": _NONE,
    # The Java client's check of the token it fetched (with Kafka's own login callback handler, which a file gives
    # only beside librdkafka's sasl.oauthbearer.method=oidc, which fetches the token here: ``_login_handler``)
    "sasl.oauthbearer.allow.unverified.audience": _NONE,
    "sasl.oauthbearer.allow.unverified.issuer": _NONE,
    "sasl.oauthbearer.clock.skew.seconds": _NONE,
    "sasl.oauthbearer.expected.audience": _NONE,
    "sasl.oauthbearer.expected.issuer": _NONE,
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": _NONE,
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": _NONE,
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": _NONE,
    "sasl.oauthbearer.jwks.endpoint.url": _NONE,
    "sasl.oauthbearer.scope.claim.name": _NONE,
    # The JVM's TLS internals
    "ssl.keymanager.algorithm": _OPENSSL,
    "ssl.trustmanager.algorithm": _OPENSSL,
    "ssl.secure.random.implementation": _OPENSSL,
    "ssl.provider": _OPENSSL,
    "ssl.protocol": f"{_OPENSSL}, which offers TLS 1.2 and 1.3",
}
# Refused, and why
_REFUSED: dict[str, str] = {
    "bootstrap.controllers": "librdkafka reaches brokers only; give the brokers in --bootstrap-server",
    "config.providers": "librdkafka would take a ${provider:...} reference as the value itself; write the values",
    "security.providers": "librdkafka's TLS and SASL are OpenSSL's and Cyrus SASL's",
    "sasl.client.callback.handler.class": _CLASS,
    "sasl.login.class": _CLASS,
    "sasl.oauthbearer.jwt.retriever.class": _CLASS,
    "sasl.oauthbearer.jwt.validator.class": _CLASS,
    "sasl.oauthbearer.assertion.template.file": "librdkafka makes no client assertion from a template",
    "ssl.engine.factory.class": _CLASS,
    "ssl.keystore.certificate.chain": "give the chain in librdkafka's ssl.certificate.pem",
    "ssl.keystore.key": "give the key in librdkafka's ssl.key.pem",
}
# The Java producer's and consumer's own settings (Kafka 4.4's, not the Admin client's; a client.properties shared
# with them): no admin client reads them, Java's included, and librdkafka's admin handle would act on some
# (enable.idempotence asks the cluster for a producer id)
_PRODUCER_CONSUMER = frozenset(
    {
        "acks", "allow.auto.create.topics", "auto.commit.interval.ms", "auto.offset.reset", "batch.size",
        "buffer.memory", "buffer.memory.allocation.strategy", "check.crcs", "client.rack", "compression.gzip.level",
        "compression.lz4.level", "compression.type", "compression.zstd.level", "delivery.timeout.ms",
        "enable.auto.commit", "enable.idempotence", "exclude.internal.topics", "fetch.max.bytes",
        "fetch.max.wait.ms", "fetch.min.bytes", "group.id", "group.instance.id", "group.protocol",
        "group.remote.assignor", "heartbeat.interval.ms", "interceptor.classes",
        "internal.throw.on.fetch.stable.offset.unsupported", "isolation.level", "key.deserializer",
        "key.serializer", "linger.ms", "max.block.ms", "max.in.flight.requests.per.connection",
        "max.partition.fetch.bytes", "max.poll.interval.ms", "max.poll.records", "max.request.size",
        "metadata.max.idle.ms", "partition.assignment.strategy", "partitioner.adaptive.partitioning.enable",
        "partitioner.availability.timeout.ms", "partitioner.class", "partitioner.ignore.keys",
        "partitioner.rack.aware", "session.timeout.ms", "share.acknowledgement.mode", "share.acquire.mode",
        "transaction.timeout.ms", "transaction.two.phase.commit.enable", "transactional.id", "value.deserializer",
        "value.serializer",
    }
)  # fmt: skip
# Java's own defaults for a setting refused otherwise: given, they change nothing
_JAVA_DEFAULTS = {
    "sasl.login.class": "org.apache.kafka.common.security.authenticator.DefaultLogin",
    "sasl.client.callback.handler.class": "org.apache.kafka.common.security.authenticator.SaslClientCallbackHandler",
    "sasl.oauthbearer.jwt.retriever.class": "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
    "sasl.oauthbearer.jwt.validator.class": "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator",
    "config.providers": "",
    "bootstrap.controllers": "",
}
# Kafka's own login callback handler for OAUTHBEARER over OIDC (and its name before Kafka 3.4's move)
_KAFKA_OIDC_HANDLERS = {
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
}

# A verdict: (refused, why)
_Verdict = tuple[bool, str]


def _protocols(value: str, properties: Mapping[str, str]) -> _Verdict:
    """``ssl.enabled.protocols``: librdkafka offers TLS 1.2 and 1.3, so a list naming TLS 1.2 is met (and one that
    also names older versions, which OpenSSL 3 refuses anyway), as is an empty one (Java's default); TLS 1.3 alone
    is not."""
    protocols = {word.strip() for word in value.split(",") if word.strip()}
    if not protocols or "TLSv1.2" in protocols:
        return False, f"{_OPENSSL}, which offers TLS 1.2 and 1.3"
    return True, f"{_OPENSSL}, which offers TLS 1.2 and 1.3 and cannot be limited to a list without TLSv1.2"


def _keystore_type(value: str, properties: Mapping[str, str]) -> _Verdict:
    """``ssl.keystore.type``: librdkafka reads a PKCS#12 keystore at ssl.keystore.location; with none there, the
    type is moot (JKS is Java's default, given or not)."""
    if "ssl.keystore.location" not in properties:
        return False, "no ssl.keystore.location to read"
    kind = value.upper()
    if kind == "PKCS12":
        return False, "librdkafka reads PKCS12 at ssl.keystore.location"
    if kind == "PEM":
        return True, "librdkafka reads PKCS12 at ssl.keystore.location; give PEM in ssl.key.location and " + (
            "ssl.certificate.location"
        )
    return True, "librdkafka reads a PKCS12 keystore only (keytool -importkeystore -deststoretype PKCS12 converts one)"


def _urlencode(value: str, properties: Mapping[str, str]) -> _Verdict:
    """``sasl.oauthbearer.header.urlencode``: false (Java's default) is what librdkafka does."""
    if value.lower() in ("", "false"):
        return False, "librdkafka does not URL-encode the client's id and secret either"
    return True, "librdkafka does not URL-encode the client's id and secret"


def _login_handler(value: str, properties: Mapping[str, str]) -> _Verdict:
    """``sasl.login.callback.handler.class``: Kafka's own OIDC handler beside librdkafka's
    ``sasl.oauthbearer.method=oidc`` is the same token fetch (Java needs the line, librdkafka its method)."""
    oidc = properties.get("sasl.oauthbearer.method", "").lower() == "oidc"
    if oidc and value in _KAFKA_OIDC_HANDLERS:
        return False, "librdkafka's sasl.oauthbearer.method=oidc fetches the token"
    return True, _CLASS


_BY_VALUE: dict[str, Callable[[str, Mapping[str, str]], _Verdict]] = {
    "ssl.enabled.protocols": _protocols,
    "ssl.keystore.type": _keystore_type,
    "sasl.oauthbearer.header.urlencode": _urlencode,
    "sasl.login.callback.handler.class": _login_handler,
}


def has_tls(properties: Mapping[str, str]) -> bool:
    """Whether the connection is TLS (``security.protocol`` SSL or SASL_SSL; PLAINTEXT when not given)."""
    return properties.get("security.protocol", "PLAINTEXT").upper().endswith("SSL")


def _verdict(key: str, properties: Mapping[str, str]) -> _Verdict | None:
    """Whether a setting is left out (False) or refused (True), and why; None for one passed to librdkafka. Without
    TLS every ``ssl.*`` setting is moot, librdkafka's own too (Java builds no TLS context then; librdkafka checked
    a keystore's password all the same)."""
    if key.startswith("ssl.") and not has_tls(properties):
        return False, "security.protocol has no TLS"
    if key in _LEFT_OUT:
        return False, _LEFT_OUT[key]
    if key in _PRODUCER_CONSUMER:
        return False, "a Java producer's or consumer's setting: no admin client reads it"
    if _JAVA_DEFAULTS.get(key) == properties[key]:
        return False, "Java's default"
    if key in _REFUSED:
        return True, _REFUSED[key]
    check = _BY_VALUE.get(key)
    return None if check is None else check(properties[key], properties)


def java_refusal(properties: Mapping[str, str]) -> str | None:
    """Why the file cannot serve librdkafka as it serves Java: the first Java-only setting it cannot do without,
    named with the reason (never the value); None when there is none."""
    for key in properties:
        verdict = _verdict(key, properties)
        if verdict is not None and verdict[0]:
            return f"{key} is the Java client's: {verdict[1]}"
    return None


def left_out(properties: Mapping[str, str]) -> dict[str, str]:
    """The settings librdkafka does without, each with why (in the file's order)."""
    out = {}
    for key in properties:
        verdict = _verdict(key, properties)
        if verdict is not None and not verdict[0]:
            out[key] = verdict[1]
    return out


def _shown(key: str) -> str:
    """``key`` as the warning names it: a setting's name (one of ours, ``acks`` too), or not at all (an ``ssl.*`` key
    of another shape may be or hold a value)."""
    known = key in _LEFT_OUT or key in _PRODUCER_CONSUMER or key in _BY_VALUE or key in _JAVA_DEFAULTS
    return key if known or is_setting_name(key) else "a key that is no setting's name"


def notice(path: str | None, properties: Mapping[str, str], *, takes_timeout: bool) -> str | None:
    """The warning that names what of the file is left out (None when nothing is); ``takes_timeout``: the command
    takes default.api.timeout.ms as its own (``topics``), else it is left out too."""
    out = left_out(properties)
    if not takes_timeout and DEFAULT_API_TIMEOUT in properties:
        out[DEFAULT_API_TIMEOUT] = "apply's deadline is its --timeout"
    if not out:
        return None
    named = "; ".join(f"{_shown(key)} ({why})" for key, why in out.items())
    return f"WARNING: --command-config {path}: not passed to librdkafka: {named}."
