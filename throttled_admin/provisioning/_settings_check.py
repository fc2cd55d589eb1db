"""A profile's librdkafka settings checked by librdkafka itself, before anything is sent: a misspelt key is an
error naming it, with the closest known key, not a failure of every row at run time. Values are never echoed
(they may be secrets)."""

from __future__ import annotations

import difflib
import re

from confluent_kafka import KafkaError, KafkaException, Producer

from throttled_admin.provisioning._plan import PlanError

__all__ = ["PROFILE_FIELDS", "check_settings"]

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
_UNKNOWN_SETTING = re.compile(r'No such configuration property: "([^"]*)"')
_BAD_VALUE = re.compile(r'configuration property "([^"]*)"')


def check_settings(conf: dict[str, str], *, where: str) -> None:
    """librdkafka's own check of a profile's settings (an unconnected client is built and dropped), so a
    misspelt key is a file error naming it, with the closest known key, and not a failure of every row."""
    check = {key: value for key, value in conf.items() if key != "bootstrap.servers"}
    check["log_level"] = "0"
    try:
        Producer(check)
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        message = error.str() if error is not None else str(exc)
        unknown = _UNKNOWN_SETTING.search(message)
        if unknown is not None:
            key = unknown.group(1)
            close = difflib.get_close_matches(key, [*PROFILE_FIELDS, *_COMMON_SETTINGS], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise PlanError(
                f"{where}: field {key!r}: unknown key (a profile holds librdkafka settings, "
                f"{' and '.join(PROFILE_FIELDS)}){hint}"
            ) from None
        bad = _BAD_VALUE.search(message)
        if bad is not None:  # the value is not echoed: it may be a secret
            raise PlanError(f"{where}: field {bad.group(1)!r}: librdkafka refuses its value") from None
        raise PlanError(f"{where}: librdkafka refuses the settings") from None
