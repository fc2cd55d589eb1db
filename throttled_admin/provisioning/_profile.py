"""A connection profile: how to reach one cluster as one principal, and the quota to pace to. Its conf
holds credentials, so nothing here ever prints them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from throttled_admin._kafka.secrets import is_secret_key, redact, secret_values
from throttled_admin.provisioning._plan import PlanError
from throttled_admin.provisioning._settings_check import check_settings, nameable_key, unnamed_key

__all__ = ["Profile", "ProfilesArg", "as_profiles", "conf_value", "is_secret_key", "profile_from_conf", "redact"]


@dataclass(frozen=True)
class Profile:
    """``conf`` is a librdkafka configuration (``bootstrap.servers``, ``sasl.username``, ...).
    ``mutation_rate``: the principal's controller mutation quota in mutations/s, or None to learn it from
    the broker's throttle feedback. ``request_timeout_s``: how long one request may go unanswered before
    its outcome counts as unknown (and is verified by reading the cluster)."""

    name: str
    conf: dict[str, str] = field(repr=False)
    mutation_rate: float | None = None
    request_timeout_s: float = 30.0

    def __repr__(self) -> str:
        shown = {k: ("***" if is_secret_key(k) else _shown(v)) for k, v in self.conf.items()}
        return (
            f"Profile(name={self.name!r}, conf={shown!r}, mutation_rate={self.mutation_rate!r}, "
            f"request_timeout_s={self.request_timeout_s!r})"
        )

    __str__ = __repr__

    @property
    def bootstrap_servers(self) -> str:
        return str(self.conf.get("bootstrap.servers", ""))

    @property
    def principal(self) -> str:
        """Whom the broker charges: the SASL user (or OAuth client), else the connection is ANONYMOUS."""
        return str(self.conf.get("sasl.username") or self.conf.get("sasl.oauthbearer.client.id") or "")

    @property
    def group_key(self) -> tuple[str, str]:
        """One quota entity: rows sharing it run in one group, with one client, never from two places."""
        return (self.bootstrap_servers, self.principal)

    def secrets(self) -> list[str]:
        """What would give a secret of ``conf`` away in a message (``secret_values``), to hide."""
        return sorted(secret_values(self.conf))


def _shown(value: Any) -> Any:
    """A setting's value as a repr shows it: a scalar as it is, anything else by its kind alone (a callback such as
    ``oauth_cb`` may be bound to a credential: ``functools.partial(fetch, client_secret=...)``, helper 129)."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else f"<{type(value).__name__}>"


#: What ``apply_plan`` takes: cluster name -> a ``Profile`` or a conf mapping as profiles.yaml has it.
ProfilesArg = Mapping[str, Profile | Mapping[str, Any]]


def conf_value(value: Any) -> str | None:
    """A YAML/JSON/Python scalar as Kafka spells it (``1000`` -> "1000", ``False`` -> "false"), else None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return None


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


def profile_from_conf(name: str, raw: Mapping[str, Any], where: str = "") -> Profile:
    """A profile from a librdkafka conf mapping plus the optional ``mutation_rate`` (mutations/s, None to
    learn it) and ``request_timeout_s`` keys. ``PlanError`` names the profile and the key, never a value
    (it may be a secret)."""
    label = f"{where}profile {name!r}"
    conf: dict[str, str] = {}
    mutation_rate: float | None = None
    request_timeout_s = 30.0
    for key, value in raw.items():
        if key == "mutation_rate":
            if value is not None and not _positive(value):
                raise PlanError(f"{label}: field 'mutation_rate': must be a number > 0, got {value!r}")
            mutation_rate = None if value is None else float(value)
        elif key == "request_timeout_s":
            if not _positive(value):
                raise PlanError(f"{label}: field 'request_timeout_s': must be a number > 0, got {value!r}")
            request_timeout_s = float(value)
        elif key == "bootstrap.servers" and not isinstance(value, str):  # (a number is a host name to librdkafka)
            raise PlanError(f"{label}: field 'bootstrap.servers': must be a string of HOST:PORT entries")
        else:
            text = conf_value(value)
            if not isinstance(key, str) or text is None:
                if not nameable_key(key):
                    raise PlanError(unnamed_key(label, "whose value is no string, number or boolean", raw))
                raise PlanError(f"{label}: field {key!r}: must be a string, number or boolean")
            conf[key] = text
    check_settings(conf, where=label)
    if not conf.get("bootstrap.servers"):
        raise PlanError(f"{label}: field 'bootstrap.servers': missing")
    return Profile(name, conf, mutation_rate, request_timeout_s)


def as_profiles(profiles: ProfilesArg) -> dict[str, Profile]:
    """Cluster name -> ``Profile``, from ``Profile`` values or conf mappings (see ``profile_from_conf``).
    ``TypeError`` for any other value, ``PlanError`` for a ``Profile`` stored under another name (rows would
    be reported under one name and run under the other) or a bad conf; before anything is sent."""
    if not isinstance(profiles, Mapping):
        raise TypeError(
            f"profiles: expected a mapping of cluster name to Profile or conf, got {type(profiles).__name__}"
        )
    result: dict[str, Profile] = {}
    for name, value in profiles.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"profiles: cluster names must be non-empty strings, got {name!r}")
        if isinstance(value, Profile):
            if value.name != name:
                raise PlanError(
                    f"profile {name!r}: the Profile given is named {value.name!r}; a Profile's name must be "
                    "its cluster's key in the mapping"
                )
            result[name] = value
        elif isinstance(value, Mapping):
            result[name] = profile_from_conf(name, value)
        else:  # the value itself is not shown: it may hold a secret
            raise TypeError(
                f"profile {name!r}: expected a Profile or a mapping of librdkafka settings "
                f"(with optional mutation_rate, request_timeout_s), got {type(value).__name__}"
            )
    return result
