"""``throttled_admin.admin`` mirrors ``confluent_kafka.admin``: same public names, same objects, our AdminClient."""

from __future__ import annotations

import subprocess
import sys
import typing
from types import ModuleType

import confluent_kafka.admin as confluent_admin

import throttled_admin
import throttled_admin.admin as our_admin

ADDITIONS = {
    "ThrottledAdminClient",
    "MutationQuota",
    "CreateTopicsOptions",
    "CreatePartitionsOptions",
    "DeleteTopicsOptions",
    "ThrottlingQuotaExceededException",
    "NotSentError",
    "NotSentReason",
    "CannotConnectError",
    "OutcomeUnknownError",
    "OutcomeUnknownReason",
    "PossiblyAppliedError",
    "NotYetVisibleError",
    "ClientClosedError",
    "ClientClosedNotSentError",
    "ClientClosedOutcomeUnknownError",
}


def public_names(module: ModuleType) -> set[str]:
    """The names a user imports from the module: not private, not a module, not a ``typing`` helper the module
    happens to import for its own annotations (confluent_kafka.admin has no ``__all__``)."""
    names = set()
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_") or isinstance(value, ModuleType):
            continue
        if getattr(value, "__module__", None) == "typing" or value is typing.Any:
            continue
        names.add(name)
    return names


def test_every_public_name_of_confluent_kafka_admin_is_there() -> None:
    assert public_names(our_admin) == public_names(confluent_admin) | ADDITIONS
    assert set(our_admin.__all__) == public_names(our_admin)


def test_each_name_is_the_same_object_except_admin_client() -> None:
    for name in public_names(confluent_admin) - {"AdminClient"}:
        assert getattr(our_admin, name) is getattr(confluent_admin, name), name
    assert our_admin.AdminClient is throttled_admin.ThrottledAdminClient
    assert issubclass(our_admin.AdminClient, confluent_admin.AdminClient)
    for name in ADDITIONS:
        assert getattr(our_admin, name) is getattr(throttled_admin, name), name


def test_porting_is_one_import_line() -> None:
    # The module a user would have written against confluent-kafka, with its import line changed.
    program = (
        "from throttled_admin.admin import AdminClient, NewTopic, ConfigResource, ResourceType\n"
        "admin = AdminClient({'bootstrap.servers': '127.0.0.1:1'})\n"
        "from throttled_admin import ThrottledAdminClient\n"
        "assert isinstance(admin, ThrottledAdminClient)\n"
        "assert ConfigResource(ResourceType.TOPIC, 't').name == 't'\n"
        "admin.close()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
