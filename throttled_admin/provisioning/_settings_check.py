"""A profile's librdkafka settings checked by librdkafka itself, before anything is sent: a misspelt key, or a value
librdkafka refuses, is an error naming the key, not a failure of every row at run time. A secret's value is never
echoed."""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence

from confluent_kafka import KafkaError, KafkaException, Producer

from throttled_admin._kafka.secrets import SECRET_SETTINGS, is_secret_key, is_setting_name, redact
from throttled_admin.provisioning._plan import PlanError

__all__ = ["PROFILE_FIELDS", "check_settings", "nameable_key", "unnamed_key"]

PROFILE_FIELDS = ("mutation_rate", "request_timeout_s")
#: Candidates for "did you mean" besides PROFILE_FIELDS: the librdkafka settings a profile usually holds.
_COMMON_SETTINGS = (
    "bootstrap.servers",
    "client.id",
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "sasl.oauthbearer.method",
    "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.scope",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "enable.ssl.certificate.verification",
    "request.timeout.ms",
    "socket.timeout.ms",
    "socket.connection.setup.timeout.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "retry.backoff.ms",
    "metadata.max.age.ms",
    "broker.address.family",
    "client.dns.lookup",
    "log_level",
    "debug",
)
_MISSPELT = 0.8  # how close a key with no dot is to a known one to be named as its misspelling (``mutation_rte``)
_PLAIN_KEY = re.compile(r"[a-z0-9._-]+")  # a key as settings' names are written (no '=', no-break space, capital)
_UNKNOWN_SETTING = re.compile(r'No such configuration property: "([^"]*)"')
_NAMED = re.compile(r'configuration property "([^"]*)"', re.IGNORECASE)  # "Invalid value for ...", "Configuration ..."
# librdkafka's refusals that name a setting by what it is, not by its key, and show no value of it: the profile's
# keys they can be about
_MEANT = (
    ("Java JAAS configuration is not supported", ("sasl.jaas.config",)),
    ("SASL mechanism", ("sasl.mechanisms", "sasl.mechanism")),
)
# librdkafka's log during the check goes nowhere (its conf warnings, a log_level of the profile's own)
_QUIET = logging.getLogger(f"{__name__}.quiet")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def _refusal(conf: dict[str, str]) -> str | None:
    """librdkafka's words refusing ``conf`` (an unconnected client is built and dropped), None when it takes it."""
    try:
        Producer({**conf, "logger": _QUIET})
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        return (error.str() if error is not None else str(exc)).strip().removeprefix("Failed to create producer: ")
    return None


def _culprit(conf: dict[str, str], message: str) -> tuple[str | None, bool]:
    """The profile's key that ``message`` refuses: a key it means (then True: its words show no value), else the
    property it names (or the key written for it, where librdkafka names its alias: linger.ms for
    queue.buffering.max.ms), else a key it mentions."""
    meant = next((k for words, keys in _MEANT if words in message for k in keys if k in conf), None)
    if meant is not None:
        return meant, True
    if _NAMED.search(message) is not None:
        return _named_culprit(conf, message), False
    # the first key the message names (`max.in.flight` must be set <= 5 when `enable.idempotence` ...), the longer
    # of two at one place (sasl.mechanisms, not sasl.mechanism)
    mentioned = [(message.find(key), -len(key), key) for key in conf if key in message]
    return (min(mentioned)[2] if mentioned else None), False


def _hidden(message: str, values: list[str], names: Iterable[str] = ()) -> str:
    """``message`` with each of ``values`` hidden (``names`` left whole: ``redact``'s ``keep``), and the start of one
    where librdkafka cut its words short within it (at about 256 bytes: a long value's head ends them)."""
    message = redact(message, values, keep=[*names, *SECRET_SETTINGS])
    for value in values:
        cut = next((n for n in range(len(value), 7, -1) if message.endswith(value[:n])), None)
        if cut is not None:
            message = message[:-cut] + "***"
    return message


def nameable_key(key: object) -> bool:
    """Whether an error may name a profile's key: a field of ours, or words between dots as settings' names are written
    (``is_setting_name``). Another may be a value written as a key: in a YAML flow map, ``sasl.password:pw`` with no
    space after ':' is one key, and a password on a line of its own is a key (red-team 133)."""
    return isinstance(key, str) and (key in PROFILE_FIELDS or is_setting_name(key))


def unnamed_key(where: str, problem: str, keys: Iterable[object]) -> str:
    """An error about a key ``nameable_key`` may not show: ``problem``, and the profile's keys it may show."""
    shown = ", ".join(str(key) for key in keys if nameable_key(key)) or "none"
    return (
        f"{where}: a key that is not a setting's name {problem}, not shown (it may hold a value: a password written as "
        f"a key, or after ':' with no space in a YAML map); the keys beside it: {shown}"
    )


def _named_culprit(conf: dict[str, str], message: str) -> str | None:
    """The key ``message`` names as librdkafka's words name a property (``for configuration property "debug"``), if
    the settings hold it: where a value may be quoted, no other words of it are taken as librdkafka's."""
    named = _NAMED.search(message)
    if named is None:
        return None
    key = named.group(1)  # (or the key written for it, where librdkafka names its alias: sasl.mechanisms)
    return key if key in conf else next((k for k in conf if (alone := _refusal({k: conf[k]})) and key in alone), None)


def check_settings(
    conf: dict[str, str],
    *,
    where: str,
    fields: tuple[str, ...] = PROFILE_FIELDS,
    continued: Mapping[str, Sequence[str]] | None = None,
    lines: Mapping[str, int] | None = None,
) -> None:
    """librdkafka's own check of a profile's settings, so a misspelt key or a value it refuses is a file error naming
    the key, with the closest known key or librdkafka's reason, and not a failure of every row. A secret's value is
    never shown: librdkafka's words are left out for a secret key, and any secret's value hidden in them. ``fields``:
    the keys of ours the settings' file may hold besides librdkafka's (a profile's; none in --command-config).
    ``continued``: the keys of a properties file whose values went on over a continued line, each with what of it
    came from those lines (a commented-out JAAS line's password after a stray '\\'): hidden, and while one is in
    ``conf`` librdkafka's words, which may quote any value, are left out unless they show none. ``lines``: a
    properties file's line of each key: an unknown key is named only where it reads as a misspelt setting (a close
    one is known), else by its line (a password written on a line of its own is a key there)."""
    check = {key: value for key, value in conf.items() if key != "bootstrap.servers"}
    message = _refusal(check)
    if message is None:
        return
    continued = continued or {}
    unknown = _UNKNOWN_SETTING.search(message)
    if unknown is not None:
        key = unknown.group(1)
        known = [*fields, *_COMMON_SETTINGS]
        close = difflib.get_close_matches(key.lower(), known, n=1)  # (``SASL.MECHANISM``: 'sasl.mechanism')
        # (named where it reads as a misspelt setting given a value: a password on a line of its own has none)
        misspelt = close and _PLAIN_KEY.fullmatch(key) and conf.get(key)
        if lines is not None and not misspelt and key not in PROFILE_FIELDS:
            line = f":{lines[key]}" if key in lines else ""
            raise PlanError(
                f"{where}{line}: a key librdkafka does not know, not shown (it may be a value written on a line of its "
                "own, or hold one after a separator Java does not take, as a no-break space)"
            ) from None
        hint = f"; did you mean {close[0]!r}?" if close else ""
        # named where it reads as a setting's name, or as a misspelt one (very close: 'password1' is not), and not
        # as a secret's (``sasl.password.hunter2``, review 135) unless it misspells a setting that holds none
        # (``sasl.oauthbearer.token.endpoint.ur``: "token", review 136)
        misread = difflib.get_close_matches(key, known, n=1, cutoff=_MISSPELT) if _PLAIN_KEY.fullmatch(key) else []
        secret = is_secret_key(key) and not (misread and misread[0] not in SECRET_SETTINGS)
        if secret or not (nameable_key(key) or misread):
            raise PlanError(unnamed_key(where, "that librdkafka does not know", conf) + hint) from None
        holds = f"librdkafka settings, {' and '.join(fields)}" if fields else "librdkafka settings only"
        raise PlanError(f"{where}: field {key!r}: unknown key (it holds {holds}){hint}") from None
    hidden = [value for key, value in conf.items() if is_secret_key(key) and value]
    hidden += [piece for key, pieces in continued.items() if key in conf for piece in pieces]
    message = _hidden(message, hidden, conf)
    spliced = any(key in conf for key in continued)  # (any value may be quoted, and read as librdkafka's words)
    key, value_free = _culprit(check, message) if not spliced else (_named_culprit(check, message), False)
    if key is None:
        words = " (its words left out: they may quote a value continued over a line)" if spliced else f": {message}"
        raise PlanError(f"{where}: librdkafka refuses the settings{words}") from None
    if (is_secret_key(key) or spliced) and not value_free:
        over = ", which goes on over a continued line" if key in continued else ""
        raise PlanError(f"{where}: field {key!r}: librdkafka refuses its value{over}") from None
    raise PlanError(f"{where}: field {key!r}: librdkafka refuses it: {message}") from None
