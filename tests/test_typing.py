"""A user's code typed against confluent-kafka's AdminClient accepts a ThrottledAdminClient, under mypy --strict."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from confluent_kafka.admin import AdminClient

import throttled_admin
from throttled_admin import ThrottledAdminClient
from throttled_admin.admin import AdminClient as PortedAdminClient

# A module as a user writes it against confluent-kafka, then hands our client to.
USER_MODULE = textwrap.dedent(
    """
    from concurrent.futures import Future
    from typing import Any

    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin._config import ConfigResource
    from confluent_kafka.admin._resource import ResourceType
    from confluent_kafka.admin._metadata import ClusterMetadata
    from confluent_kafka.cimpl import NewTopic

    from throttled_admin import MutationQuota, ThrottledAdminClient


    def provision(admin: AdminClient, names: list[str]) -> dict[str, Future[Any]]:
        return admin.create_topics([NewTopic(name, 3, 1) for name in names])


    def inspect(admin: AdminClient) -> tuple[ClusterMetadata, dict[ConfigResource, Future[Any]]]:
        metadata = admin.list_topics(timeout=5)
        configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "orders")])
        return metadata, configs


    def main() -> None:
        client = ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9092"}, mutation_quota=MutationQuota(rate=5))
        with client:
            for future in provision(client, ["orders"]).values():
                future.result()
            inspect(client)
        admin: AdminClient = client
        admin.delete_topics(["orders"])
    """
)

# The same client with a misspelt method: no ``__getattr__`` lets it through any more.
MISSPELT = textwrap.dedent(
    """
    from throttled_admin import ThrottledAdminClient

    client = ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:9092"})
    client.list_topicz(timeout=5)
    """
)


def test_user_module_typed_against_admin_client_passes_mypy_strict(tmp_path: Path) -> None:
    (tmp_path / "user_module.py").write_text(USER_MODULE)
    (tmp_path / "misspelt.py").write_text(MISSPELT)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--show-error-codes",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "user_module.py",
            "misspelt.py",
        ],
        cwd=tmp_path,
        # mypy does not follow setuptools' editable-install finder: point it at the package's source.
        env={**os.environ, "MYPYPATH": str(Path(throttled_admin.__file__).resolve().parent.parent)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert [line for line in lines if line.startswith("user_module.py")] == [], done.stdout + done.stderr
    misspelt = [line for line in lines if line.startswith("misspelt.py")]
    assert len(misspelt) == 1, done.stdout + done.stderr
    assert "list_topicz" in misspelt[0]
    assert "[attr-defined]" in misspelt[0]
    assert [line for line in lines if not line.startswith(("user_module.py", "misspelt.py"))] == [], done.stdout


def test_isinstance_and_dir() -> None:
    client = ThrottledAdminClient({"bootstrap.servers": "127.0.0.1:1"})
    try:
        assert isinstance(client, AdminClient)
        assert isinstance(client, PortedAdminClient)
        for name in (
            "list_topics",
            "describe_configs",
            "incremental_alter_configs",
            "describe_topics",
            "describe_cluster",
        ):
            assert name in dir(client)
            # Inherited: confluent-kafka's own method and signature, behind a fork check (in a forked child
            # librdkafka's handle is dead; the check raises instead of letting the call hang) and the tracking of
            # its futures, which close() fails if still pending.
            ours, theirs = getattr(ThrottledAdminClient, name), getattr(AdminClient, name)
            assert ours.__wrapped__ is theirs
            assert inspect.signature(ours) == inspect.signature(theirs)
    finally:
        client.close()
