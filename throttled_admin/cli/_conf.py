"""Client settings from --bootstrap-server and --command-config, and the secrets they hold.

kafka-topics.sh passes its --command-config properties to the Java Admin client; here they go into the
librdkafka conf. Java-only SASL settings are translated where librdkafka has an equivalent, so one file
serves both tools: ``sasl.jaas.config`` with a PlainLoginModule or ScramLoginModule becomes
``sasl.username`` / ``sasl.password``. Java's other settings are the Java client's: beside librdkafka's own for the
same thing (``ssl.ca.location`` for a TrustStore, ``sasl.oauthbearer.*`` or ``sasl.kerberos.*`` for another login
module) they are left out; alone, the file is refused, naming the setting (``java_only``), as librdkafka's words
name neither ("Java TrustStores are not supported, ...").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from throttled_admin._kafka.secrets import SECRET_SETTINGS, is_secret_key, is_setting_name, redact, secret_values
from throttled_admin.cli._jaas import login_module as jaas_module
from throttled_admin.cli._jaas import read as read_jaas
from throttled_admin.cli._jaas import unescape
from throttled_admin.cli._java_settings import DEFAULT_API_TIMEOUT, has_tls, left_out, notice
from throttled_admin.cli._properties import Settings

__all__ = [
    "Redactor",
    "build_conf",
    "checked_conf",
    "credentials_twice",
    "is_secret_key",
    "jaas_problem",
    "java_only",
    "python_only",
]

_JAAS_OPTION = re.compile(r"""(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s;]+))""")
_REDACTED = "[hidden]"
_TRANSLATED_MODULES = ("PlainLoginModule", "ScramLoginModule")
_HOSTNAME_CHECK = "ssl.endpoint.identification.algorithm"
# librdkafka's own ways to trust a CA (a TrustStore's librdkafka equivalents)
_CA_SETTINGS = ("ssl.ca.location", "ssl.ca.pem", "ssl.ca.certificate.stores")
# A login module librdkafka has settings of its own for: those of them Java does not read too (Java reads
# sasl.kerberos.service.name, and sasl.oauthbearer.* on Kafka 3.1 and later, so only librdkafka's own names count).
_MODULE_SETTINGS = {
    "OAuthBearerLoginModule": (
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.token.endpoint.url",
        "enable.sasl.oauthbearer.unsecure.jwt",
    ),
    "Krb5LoginModule": ("sasl.kerberos.keytab", "sasl.kerberos.principal", "sasl.kerberos.kinit.cmd"),
}


def _jaas_options(jaas: str) -> list[tuple[str, str]]:
    """(name, value as written) of everything in a JAAS line that looks like an option, comments included: a lenient
    reading, for ``Redactor`` alone (it hides what may be a secret even in a line that does not parse)."""
    options = []
    for match in _JAAS_OPTION.finditer(jaas):
        options.append((match.group(1), next(group for group in match.groups()[1:] if group is not None)))
    return options


def _jaas_credentials(jaas: str) -> dict[str, str]:
    """username and password of a PlainLoginModule or ScramLoginModule line, as Java reads them; none of another
    module's line, or of a line that does not read (``jaas_problem`` refuses it first)."""
    if jaas_module(jaas) not in _TRANSLATED_MODULES:
        return {}
    options, problem = read_jaas(jaas)
    return {} if problem is not None else {k: v for k, v in options.items() if k in ("username", "password")}


def jaas_problem(jaas: str) -> str | None:
    """What Java's JAAS parser would refuse in a ``sasl.jaas.config`` line of a login module the CLI reads
    (PlainLoginModule, ScramLoginModule): ``CLASS FLAG (NAME=VALUE)* ;``, one login module, comments allowed; None
    when it reads, and for another module (Java's to read)."""
    return read_jaas(jaas)[1] if jaas_module(jaas) in _TRANSLATED_MODULES else None


def credentials_twice(properties: Mapping[str, str]) -> str | None:
    """Why the properties name two principals: a sasl.jaas.config line's username or password that differs from
    librdkafka's own sasl.username or sasl.password beside it (Java reads the line, librdkafka its own settings: the
    principal would depend on the client); None when they agree or only one gives them. Names, never values."""
    jaas = properties.get("sasl.jaas.config")
    if jaas is None:
        return None
    credentials = _jaas_credentials(jaas)
    differ = [
        f"sasl.{k}"
        for k in ("username", "password")
        if k in credentials and properties.get(f"sasl.{k}", credentials[k]) != credentials[k]
    ]
    if not differ:
        return None
    return (
        f"{' and '.join(differ)} differ{'s' if len(differ) == 1 else ''} from sasl.jaas.config's (Java reads the JAAS "
        "line, librdkafka its own settings): keep one"
    )


# confluent-kafka's own keys, for Python objects (a callback, a dict): a properties file's string is none
_PYTHON_OBJECTS = (
    "error_cb", "throttle_cb", "stats_cb", "oauth_cb", "logger", "on_delivery", "on_commit", "default.topic.config",
)  # fmt: skip


def python_only(properties: Mapping[str, str]) -> str | None:
    """Why the properties cannot serve confluent-kafka: a key of its for a Python object (it raised a TypeError, a
    traceback), named; None when they can."""
    key = next((key for key in properties if key in _PYTHON_OBJECTS), None)
    return (
        None if key is None else f"{key} is confluent-kafka's for a Python object, which a properties file cannot give"
    )


def java_only(properties: Mapping[str, str]) -> str | None:
    """Why the properties cannot serve librdkafka: a Java-only setting with nothing of librdkafka's for the same thing
    beside it, named (the setting's name, never its value); None when they can."""
    if has_tls(properties) and not any(key in properties for key in _CA_SETTINGS):
        for key in properties:
            if key.startswith("ssl.truststore."):
                shown = key if is_setting_name(key) else "ssl.truststore.*"
                return (
                    f"{shown} is the Java client's: librdkafka reads no TrustStore; give the CA certificate as a PEM "
                    "file in ssl.ca.location"
                )
    jaas = properties.get("sasl.jaas.config")
    if jaas is not None:
        module = jaas_module(jaas)
        own_keys = _MODULE_SETTINGS.get(module, ())
        if module not in _TRANSLATED_MODULES and not any(key in properties for key in own_keys):
            own = f"librdkafka's own ({', '.join(own_keys[:2])}, ...)" if own_keys else "librdkafka's own SASL settings"
            return (
                f"sasl.jaas.config's {module} is the Java client's: only PlainLoginModule and ScramLoginModule are "
                f"translated; give {own}"
            )
    return None


def build_conf(properties: Mapping[str, str], bootstrap_server: str | None) -> dict[str, str]:
    """The librdkafka conf: the properties, Java's sasl.jaas.config translated, bootstrap.servers on top
    (kafka-topics.sh lets --bootstrap-server override the file, as here). Java-only settings beside librdkafka's own
    for the same thing are left out (``java_only`` refuses them alone), as are the Java client's tuning, every ssl.*
    setting without TLS, and default.api.timeout.ms (``_java_settings``: a command takes that as its own). An empty
    ssl.endpoint.identification.algorithm, Java's "no host name check", is librdkafka's ``none``."""
    dropped = {*left_out(properties), DEFAULT_API_TIMEOUT}
    conf = {
        key: value for key, value in properties.items() if not key.startswith("ssl.truststore.") and key not in dropped
    }
    if conf.get(_HOSTNAME_CHECK) == "":  # Java's way to turn the broker's host name check off; librdkafka's is none
        conf[_HOSTNAME_CHECK] = "none"
    jaas = conf.pop("sasl.jaas.config", None)
    if jaas is not None:
        credentials = _jaas_credentials(jaas)
        if "username" in credentials:
            conf.setdefault("sasl.username", credentials["username"])
        if "password" in credentials:
            conf.setdefault("sasl.password", credentials["password"])
    if bootstrap_server is not None:
        conf["bootstrap.servers"] = bootstrap_server
    return conf


def checked_conf(
    path: str | None, settings: Settings, bootstrap_server: str | None, *, takes_timeout: bool
) -> tuple[dict[str, str], str | None]:
    """``build_conf``'s conf, checked by librdkafka where a --command-config file gave it (a setting it refuses:
    a PlanError naming the file and the setting, as a profile's; librdkafka's words left out where they may quote a
    value continued over a line), and the warning to print once it passed (``_java_settings.notice``): ``topics``
    and ``apply`` read the file so alike."""
    conf = build_conf(settings.values, bootstrap_server)
    if path is not None:
        from throttled_admin.provisioning._settings_check import check_settings

        check_settings(
            conf, where=f"--command-config {path}", fields=(), continued=settings.continued, lines=settings.lines
        )
    return conf, notice(path, settings.values, takes_timeout=takes_timeout)


class Redactor:
    """Replaces every secret value of the given settings in text that is about to be printed.

    The client never prints secrets itself; this is the last line of defence for messages the CLI does
    not control (librdkafka configuration errors echo values, broker messages could too)."""

    def __init__(self, settings: Iterable[Mapping[str, str]] = ()) -> None:
        self._secrets: set[str] = set()
        self._names: set[str] = set(SECRET_SETTINGS)  # (left whole: a secret equal to a word of one)
        for mapping in settings:
            self.add(mapping)

    def add(self, settings: Mapping[str, str]) -> None:
        self._names.update(key for key in settings if is_setting_name(key))
        self._secrets.update(secret_values(settings))
        for key, value in settings.items():
            if is_secret_key(key) and isinstance(value, str) and value:
                # A JAAS line's password too, both as written (escaped) and as meant.
                for name, raw in _jaas_options(value):
                    if name == "password" and raw:
                        self._secrets.update({raw, unescape(raw)})

    def hide(self, values: Iterable[str]) -> None:
        """Hide ``values`` too: a properties file's values continued over a line (their tails came from other lines,
        a password after a stray '\\', perhaps)."""
        self._secrets.update(value for value in values if value)

    def __call__(self, text: str) -> str:
        return redact(text, self._secrets, _REDACTED, keep=self._names)
