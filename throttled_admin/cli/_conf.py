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

__all__ = ["Redactor", "build_conf", "is_secret_key", "jaas_problem", "java_only"]

_SECRET_KEY = re.compile(r"password|secret|token|credential|jaas", re.IGNORECASE)
_JAAS_OPTION = re.compile(r"""(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^\s;]+))""")
_REDACTED = "[hidden]"
_JAAS_MODULE = re.compile(r"^\s*([\w.$]+)\s")  # a JAAS line's login module class, its first word
_TRANSLATED_MODULES = ("PlainLoginModule", "ScramLoginModule")
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


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


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
    if _login_module(jaas) not in _TRANSLATED_MODULES:
        return {}
    options, problem = _read_jaas(jaas)
    return {} if problem is not None else {k: v for k, v in options.items() if k in ("username", "password")}


_ESCAPE = re.compile(r"\\(?:([0-3][0-7]{0,2}|[4-7][0-7]?)|(.))", re.DOTALL)
_NAMED_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _meant(raw: str) -> str:
    """A JAAS value as written (between its quotes) as meant, as Java's StreamTokenizer reads it: a backslash escapes
    as in C (\\t, \\101 in octal), and before any other character is that character (\\", \\', \\\\)."""

    def unescaped(match: re.Match[str]) -> str:
        octal, other = match.groups()
        return chr(int(octal, 8)) if octal else _NAMED_ESCAPES.get(other, other)

    return _ESCAPE.sub(unescaped, raw)


def _login_module(jaas: str) -> str:
    """The JAAS line's login module, by its class's own name; "login module" for a line that names none (never
    another word of it: a value may be a secret)."""
    match = _JAAS_MODULE.match(jaas)
    name = match.group(1).rpartition(".")[2] if match else ""
    return name if name.endswith("LoginModule") else "login module"


_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")
# Java's tokenizer: a word starts with a letter, '_' or '$'; what starts with a digit, '.' or '-' it reads as a number
_JAAS_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/"""  # space and comments, skipped
    r"""|(?P<word>(?:[^\W\d]|\$)[\w.$-]*)|(?P<number>[\d.-][\w.$-]*)"""
    r"""|(?P<quoted>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<mark>[=;])""",
    re.DOTALL,
)


def jaas_problem(jaas: str) -> str | None:
    """What is wrong with a ``sasl.jaas.config`` line of a login module the CLI reads (PlainLoginModule,
    ScramLoginModule), as Java's JAAS parser (Kafka's ``JaasConfig``) would refuse it: ``CLASS FLAG (NAME=VALUE)* ;``,
    one login module, comments allowed; None when it reads, and for another module (Java's to read). A value is never
    quoted back (it may be the password): only an option's name, once parsed as one."""
    return _read_jaas(jaas)[1] if _login_module(jaas) in _TRANSLATED_MODULES else None


def _read_jaas(jaas: str) -> tuple[dict[str, str], str | None]:
    """A JAAS line read as Java reads it: its options by name (the last of a name wins), values as meant, and what
    is wrong with it (None when it reads): one reading for the check and for the credentials sent."""
    kinds: list[str] = []  # "word", "number", "quoted", "=", ";", or "?" for none of them (an unclosed quote)
    texts: list[str] = []
    at = 0
    while at < len(jaas) and (match := _JAAS_TOKEN.match(jaas, at)) is not None:
        at = match.end()
        if match.lastgroup is not None:
            kinds.append(match.group("mark") or match.lastgroup)
            texts.append(match.group(match.lastgroup))
    if at < len(jaas):
        kinds.append("?")
        texts.append("")
    options: dict[str, str] = {}
    return options, _jaas_grammar(kinds, texts, options)


def _jaas_grammar(kinds: list[str], texts: list[str], options: dict[str, str]) -> str | None:
    """What is wrong with the tokens, None when they read; each option read goes into ``options``."""
    if kinds[:2] != ["word", "word"]:
        return "expected a login module class and its control flag (required), as in 'PlainLoginModule required ...;'"
    if texts[1].lower() not in _JAAS_FLAGS:
        return f"the login module's control flag must be one of {', '.join(_JAAS_FLAGS)}"
    index, last = 2, None
    while index < len(kinds) and kinds[index] != ";":
        if kinds[index : index + 2] != ["word", "="] or index + 2 >= len(kinds) or kinds[index + 2] not in _VALUES:
            if kinds[index : index + 3] == ["word", "=", "number"]:
                return f"option {texts[index]!r}: a value that starts with a digit, '.' or '-' must be quoted"
            if kinds[index : index + 2] == ["word", "="]:  # (a name, in a name's place)
                return f"option {texts[index]!r}: its value is not one word or a closed quote"
            where = "the control flag" if last is None else f"option {last!r}"
            if "?" in kinds[index : index + 3]:
                return f"a quote not closed, or a character that is not a word, a quote, '=' or ';', after {where}"
            return f"expected NAME=VALUE after {where}"
        last, value = texts[index], texts[index + 2]
        options[last] = _meant(value[1:-1]) if kinds[index + 2] == "quoted" else value
        index += 3
    if index == len(kinds):
        return "it does not end with ';'"
    if index != len(kinds) - 1:
        return "text after its ';' (Kafka takes one login module)"
    return None


_VALUES = ("word", "quoted")


def java_only(properties: Mapping[str, str]) -> str | None:
    """Why the properties cannot serve librdkafka: a Java-only setting with nothing of librdkafka's for the same thing
    beside it, named (the setting's name, never its value); None when they can."""
    if not any(key in properties for key in _CA_SETTINGS):
        for key in properties:
            if key.startswith("ssl.truststore."):
                return (
                    f"{key} is the Java client's: librdkafka reads no TrustStore; give the CA certificate as a PEM "
                    "file in ssl.ca.location"
                )
    jaas = properties.get("sasl.jaas.config")
    if jaas is not None:
        module = _login_module(jaas)
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
    for the same thing are left out (``java_only`` refuses them alone)."""
    conf = {key: value for key, value in properties.items() if not key.startswith("ssl.truststore.")}
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


class Redactor:
    """Replaces every secret value of the given settings in text that is about to be printed.

    The client never prints secrets itself; this is the last line of defence for messages the CLI does
    not control (librdkafka configuration errors echo values, broker messages could too)."""

    def __init__(self, settings: Iterable[Mapping[str, str]] = ()) -> None:
        self._secrets: set[str] = set()
        for mapping in settings:
            self.add(mapping)

    def add(self, settings: Mapping[str, str]) -> None:
        for key, value in settings.items():
            if is_secret_key(key) and isinstance(value, str) and value:
                self._secrets.add(value)
                # A JAAS line's password too, both as written (escaped) and as meant.
                for name, raw in _jaas_options(value):
                    if name == "password" and raw:
                        self._secrets.update({raw, _meant(raw)})

    def __call__(self, text: str) -> str:
        # Longest first, so a secret that contains another is hidden whole.
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, _REDACTED)
        return text
