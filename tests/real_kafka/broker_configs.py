"""Regenerate QuotaBroker's broker config set, ``throttled_admin/testing/broker_configs.json``, from Apache Kafka's
own answer: ``make broker-configs`` (or ``.venv/bin/python -m tests.real_kafka.broker_configs [--check]``).

It starts a single-node KRaft Kafka from the fetched jars (``make kafka``; :class:`tests.real_kafka.broker.KafkaCluster`
with the default :class:`BrokerSpec`, the ``kafka_broker`` fixture's set-up), sends DescribeConfigs v4 for its
BROKER resource with synonyms and documentation, and writes one row per broker config, sorted by name:

- ``type``, ``read_only``, ``sensitive`` and ``documentation`` as the broker sent them;
- ``default``: the value of the config's DEFAULT_CONFIG synonym, or its value when nothing overrides it; null when
  it has none (``node.id``, ``advertised.listeners``, a PASSWORD). Values of this broker's own server.properties
  (its ports, log directory, node id: STATIC_BROKER_CONFIG) never become a default;
- entries that are not broker configs are left out: Kafka also describes every other line of server.properties
  (the listeners' JAAS configs), with no type and no documentation.

``--check`` writes nothing: it exits 1, naming the configs that differ, when the file is not what the broker says.
The ``kafka`` test ``tests/test_broker_config_set.py`` does the same check against the run's shared broker.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.real_kafka.broker import KAFKA_VERSION, REPO, BrokerSpec, classpath, running_cluster
from tests.wire import WireClient

DATA_FILE = REPO / "throttled_admin" / "testing" / "broker_configs.json"
BROKER_RESOURCE = 4
DEFAULT_CONFIG = 5
CONFIG_TYPES = {
    0: "UNKNOWN",
    1: "BOOLEAN",
    2: "STRING",
    3: "INT",
    4: "SHORT",
    5: "LONG",
    6: "DOUBLE",
    7: "LIST",
    8: "CLASS",
    9: "PASSWORD",
}
SOURCE = (
    "Apache Kafka {version}'s DescribeConfigs v4 of a BROKER resource (include_synonyms, include_documentation), "
    "written by tests/real_kafka/broker_configs.py (make broker-configs): default = the DEFAULT_CONFIG synonym's value"
)


def describe_broker(bootstrap_servers: str, broker_id: int) -> list[Any]:
    """Every config entry of DescribeConfigs v4 of ``broker_id``, with synonyms and documentation."""
    from kafka.protocol.admin.configs import DescribeConfigsRequest

    R = DescribeConfigsRequest.DescribeConfigsResource
    request = DescribeConfigsRequest(
        version=4,
        resources=[R(resource_type=BROKER_RESOURCE, resource_name=str(broker_id), configuration_keys=None)],
        include_synonyms=True,
        include_documentation=True,
    )
    with WireClient(bootstrap_servers, client_id="broker-configs") as wire:
        [result] = wire.request(request).results
    if result.error_code:
        raise RuntimeError(f"DescribeConfigs failed: error {result.error_code} {result.error_message}")
    return list(result.configs)


def _default(entry: Any) -> str | None:
    for synonym in entry.synonyms:
        if synonym.source == DEFAULT_CONFIG:
            return str(synonym.value) if synonym.value is not None else None
    return entry.value if entry.config_source == DEFAULT_CONFIG else None


def rows(entries: list[Any]) -> list[dict[str, Any]]:
    """The file's rows for a broker's described entries."""
    return [
        {
            "name": e.name,
            "type": CONFIG_TYPES[e.config_type],
            "default": _default(e),
            "read_only": bool(e.read_only),
            "sensitive": bool(e.is_sensitive),
            "documentation": e.documentation,
        }
        for e in sorted(entries, key=lambda e: e.name)
        if e.documentation is not None  # a server.properties line that is not a broker config
    ]


def data_of(entries: list[Any]) -> dict[str, Any]:
    return {"kafka_version": KAFKA_VERSION, "source": SOURCE.format(version=KAFKA_VERSION), "configs": rows(entries)}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def differences(current: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What differs between two versions of the file, one line per config (empty: the same)."""
    old = {row["name"]: row for row in current["configs"]}
    new = {row["name"]: row for row in wanted["configs"]}
    lines = [f"only in the file: {name}" for name in sorted(old.keys() - new.keys())]
    lines += [f"only in Kafka {KAFKA_VERSION}: {name}" for name in sorted(new.keys() - old.keys())]
    for name in sorted(old.keys() & new.keys()):
        fields = [field for field in new[name] if old[name].get(field) != new[name][field]]
        if fields:
            lines.append(f"{name}: {', '.join(fields)} differ")
    if current.get("kafka_version") != wanted["kafka_version"]:
        lines.append(f"kafka_version: {current.get('kafka_version')} in the file")
    return lines


@dataclass(frozen=True)
class ConfigDefinition:
    """One ``ConfigDef.define`` of the 4.4.0 jars, as tests/real_kafka/java/ConfigDefDump.java prints it."""

    kind: str  # BROKER (KafkaConfig.configDef()) or TOPIC (LogConfig's)
    name: str
    type: str
    default: str  # ConfigDef.convertToString; "<none>" for a required config, "null" for a null default
    validator: str  # the validator's toString, "" when none


def config_definitions() -> list[ConfigDefinition]:
    """Kafka's own config definitions, in definition order (the validators DescribeConfigs does not send)."""
    out = subprocess.run(
        ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", classpath(), "ConfigDefDump"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return [ConfigDefinition(*line.split("\t")) for line in out.splitlines()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if the file differs")
    parser.add_argument("--output", type=Path, default=DATA_FILE)
    args = parser.parse_args(argv)
    with running_cluster(BrokerSpec(), "broker-configs-") as cluster:
        entries = describe_broker(cluster.bootstrap_servers, cluster.brokers[0].node_id)
    wanted = data_of(entries)
    current = json.loads(args.output.read_text(encoding="utf-8")) if args.output.exists() else {"configs": []}
    changes = differences(current, wanted)
    if args.check:
        print("\n".join(changes) if changes else f"{args.output} is Kafka {KAFKA_VERSION}'s broker config set")
        return 1 if changes else 0
    args.output.write_text(render(wanted), encoding="utf-8")
    print(f"{args.output}: {len(wanted['configs'])} broker configs of Kafka {KAFKA_VERSION} ({len(changes)} changes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
