"""Differential scenarios on what a client reads: DescribeConfigs of a topic and of the broker, Metadata after
create and delete, ApiVersions ranges, and SASL failures."""

from __future__ import annotations

from tests.real_kafka.differential import SMALL, STRICT, Exact, Run, T, scenario

C, D, G = STRICT["create"], STRICT["delete"], STRICT["grow"]
TOPIC, BROKER = 2, 4
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
METADATA, API_VERSIONS, DESCRIBE_CONFIGS = 3, 18, 32
ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 33, 44
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
SERVED = (
    METADATA, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, DESCRIBE_CONFIGS, ALTER_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, SASL_HANDSHAKE, SASL_AUTHENTICATE,
)  # fmt: skip
BROKER_KEYS = [
    "num.partitions",
    "default.replication.factor",
    "auto.create.topics.enable",
    "controller.quota.window.num",
    "controller.quota.window.size.seconds",
    "log.retention.hours",
    "log.retention.ms",
    "message.max.bytes",
    "node.id",
    "broker.id",
    "process.roles",
    "delete.topic.enable",
    "create.topic.policy.class.name",
    "min.insync.replicas",
    "sasl.jaas.config",
]


# -- DescribeConfigs ---------------------------------------------------------------------------------------------


@scenario("describe-configs", "a topic without overrides: every config")
def _(run: Run) -> None:
    run.setup(("a", 1))
    run.describe_configs(run.connect(), 4, [(TOPIC, "a", None)])


@scenario("describe-configs", "a topic with overrides, with synonyms")
def _(run: Run) -> None:
    run.setup(T("a", 1, configs={"retention.ms": "1000", "cleanup.policy": "compact", "segment.bytes": "2000000"}))
    keys = ["retention.ms", "cleanup.policy", "segment.bytes", "max.message.bytes", "min.insync.replicas"]
    run.describe_configs(run.connect(), 4, [(TOPIC, "a", keys)], synonyms=True, fields=("value", "source", "synonyms"))


@scenario("describe-configs", "chosen keys, one unknown, and the documentation")
def _(run: Run) -> None:
    run.setup(("a", 1))
    keys = ["retention.ms", "no.such.config", "compression.type"]
    run.describe_configs(
        run.connect(), 4, [(TOPIC, "a", keys)], documentation=True, fields=("value", "type", "documentation")
    )


@scenario("describe-configs", "a missing topic and an illegal name")
def _(run: Run) -> None:
    run.describe_configs(run.connect(), 4, [(TOPIC, "missing", None), (TOPIC, Exact(".."), None)])


@scenario("describe-configs", "DescribeConfigs v1, no config types")
def _(run: Run) -> None:
    run.setup(T("a", 1, configs={"retention.ms": "1000"}))
    run.describe_configs(run.connect(), 1, [(TOPIC, "a", ["retention.ms", "cleanup.policy"])], fields=("value",))


@scenario("describe-configs", "the broker: chosen static and default configs", setup=SMALL)
def _(run: Run) -> None:
    run.describe_configs(run.connect(), 4, [(BROKER, str(run.node()), BROKER_KEYS)])


@scenario("describe-configs", "a broker that is not this one, and one that is not a number")
def _(run: Run) -> None:
    run.describe_configs(run.connect(), 4, [(BROKER, "5", None), (BROKER, "abc", None)])


@scenario("describe-configs", "the cluster's default broker resource (empty name)")
def _(run: Run) -> None:
    run.describe_configs(run.connect(), 4, [(BROKER, "", None)], synonyms=True, fields=("value", "source", "synonyms"))


@scenario("describe-configs", "CreateTopics v7 results: every effective config and its source", setup=SMALL)
def _(run: Run) -> None:
    plain, override = T("plain", -1), T("override", 1, configs={"retention.ms": "1000", "cleanup.policy": "compact"})
    run.create(run.connect(), C, plain, override, validate_only=True, configs=True)


# -- Metadata after create and delete ------------------------------------------------------------------------------


@scenario("metadata", "after a create: counts, -1 resolved to num.partitions", setup=SMALL)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 2), ("b", -1))
    run.wait_visible(c, ["a", "b"])


@scenario("metadata", "after a delete", setup=SMALL)
def _(run: Run) -> None:
    run.setup(("a", 1), ("b", 1))
    c = run.connect()
    run.delete(c, D, "a")
    run.wait_visible(c, ["a"], gone=True)
    run.metadata(c, 12, ["a", "b"])


@scenario("metadata", "every topic, after creates, a grow and a delete (v1)", setup=SMALL)
def _(run: Run) -> None:
    run.setup(("a", 1), ("b", 1))
    c = run.connect()
    run.create(c, C, ("c", 2))
    run.grow(c, G, ("a", 4))
    run.delete(c, D, "b")
    run.wait_visible(c, ["c"])
    run.wait_visible(c, ["b"], gone=True)
    run.wait_partitions(c, "a", 4)
    run.metadata(c, 1, None)


@scenario("metadata", "auto-creation: Metadata v4 allowing it", setup=SMALL)
def _(run: Run) -> None:
    c = run.connect()
    run.metadata(c, 4, ["auto"], auto_create=True)
    run.wait_visible(c, ["auto"])


@scenario("metadata", "no auto-creation: Metadata v12 not allowing it", setup=SMALL)
def _(run: Run) -> None:
    c = run.connect()
    run.metadata(c, 12, ["missing"], auto_create=False)
    run.metadata(c, 12, ["missing"], auto_create=False)


@scenario("metadata", "Metadata v0 always allows auto-creation", setup=SMALL)
def _(run: Run) -> None:
    c = run.connect()
    run.metadata(c, 0, ["auto"])
    run.wait_visible(c, ["auto"])


@scenario("metadata", "Metadata v13 and v10 after a create", setup=SMALL)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 2))
    run.wait_visible(c, ["a"])
    run.metadata(c, 13, ["a", "missing"])
    run.metadata(c, 10, ["a"])


@scenario("api-versions", "ApiVersions v4")
def _(run: Run) -> None:
    run.api_versions(run.connect(), 4, [CREATE_TOPICS, DELETE_TOPICS, METADATA])


@scenario("metadata", "auto-creation of an illegal name", setup=SMALL)
def _(run: Run) -> None:
    run.metadata(run.connect(), 4, [Exact("..")], auto_create=True)


@scenario("metadata", "auto-creation is charged to the client's quota", setup=SMALL, rate=4)
def _(run: Run) -> None:
    c = run.connect()
    run.create(c, C, ("a", 11))
    run.metadata(c, 9, ["auto"], auto_create=True)
    run.metadata(c, 9, ["auto"], auto_create=False, step="Metadata v9 again")


# -- ApiVersions ----------------------------------------------------------------------------------------------------


@scenario("api-versions", "the three mutations")
def _(run: Run) -> None:
    run.api_versions(run.connect(), 3, [CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS])


@scenario("api-versions", "Metadata and DescribeConfigs")
def _(run: Run) -> None:
    run.api_versions(run.connect(), 3, [METADATA, DESCRIBE_CONFIGS])


@scenario(
    "api-versions",
    "ApiVersions itself",
    deliberate={"ranges": "ApiVersions v5 is not offered: kafka-python 3, QuotaBroker's codec, stops at v4"},
)
def _(run: Run) -> None:
    run.api_versions(run.connect(), 3, [API_VERSIONS])


@scenario("api-versions", "AlterConfigs and IncrementalAlterConfigs")
def _(run: Run) -> None:
    run.api_versions(run.connect(), 3, [ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS])


@scenario("api-versions", "the client quota APIs")
def _(run: Run) -> None:
    run.api_versions(run.connect(), 3, [DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS])


@scenario(
    "api-versions",
    "the SASL APIs",
    deliberate={"ranges": "SaslHandshake v0 (raw SASL tokens after the handshake, no SaslAuthenticate) is not served"},
)
def _(run: Run) -> None:
    run.api_versions(run.connect(), 3, [SASL_HANDSHAKE, SASL_AUTHENTICATE])


@scenario("api-versions", "ApiVersions v0")
def _(run: Run) -> None:
    run.api_versions(run.connect(), 0, [CREATE_TOPICS, METADATA])


@scenario("api-versions", "a version no broker knows gets a v0 answer listing the versions")
def _(run: Run) -> None:
    run.raw_api_versions(run.connect(), 127)


@scenario("api-versions", "a request below Kafka 4's oldest version closes the connection")
def _(run: Run) -> None:
    c = run.connect()
    c.wire.send(run.create_request(1, [T("a", 1)]))
    run.note("CreateTopics v1", closed=c.closed_by_broker())
    c = run.connect()
    c.wire.send(run.delete_request(0, ["a"]))
    run.note("DeleteTopics v0", closed=c.closed_by_broker())


# -- SASL failures --------------------------------------------------------------------------------------------------


def _refused(run: Run, token: bytes, mechanism: str = "PLAIN") -> None:
    c = run.connect(user="")
    run.handshake(c, mechanism)
    run.sasl_authenticate(c, token)
    run.note("then", closed=c.closed_by_broker())


@scenario("sasl", "a wrong password", sasl=True)
def _(run: Run) -> None:
    _refused(run, b"\0alice\0wrong")


@scenario("sasl", "an unknown user", sasl=True)
def _(run: Run) -> None:
    _refused(run, b"\0mallory\0secret")


@scenario("sasl", "an empty password and an empty user", sasl=True)
def _(run: Run) -> None:
    _refused(run, b"\0alice\0")
    _refused(run, b"\0\0alice-secret")


@scenario("sasl", "a malformed PLAIN token", sasl=True)
def _(run: Run) -> None:
    _refused(run, b"alice")


@scenario("sasl", "an authorization id other than the user", sasl=True)
def _(run: Run) -> None:
    _refused(run, b"bob\0alice\0alice-secret")


@scenario("sasl", "an unsupported mechanism", sasl=True)
def _(run: Run) -> None:
    c = run.connect(user="")
    run.handshake(c, "GSSAPI", mechanisms=True)
    run.note("then", closed=c.closed_by_broker())


@scenario("sasl", "a request before authenticating", sasl=True)
def _(run: Run) -> None:
    c = run.connect(user="")
    c.wire.send(run.metadata_request(12, ["a"]))
    run.note("Metadata v12 before SaslHandshake", closed=c.closed_by_broker())


@scenario("sasl", "SaslHandshake on a listener without SASL")
def _(run: Run) -> None:
    c = run.connect()
    run.handshake(c, "PLAIN")
    run.metadata(c, 12, ["a"], step="Metadata v12 on the same connection")


@scenario("sasl", "authenticated, then a second exchange on the same connection", sasl=True)
def _(run: Run) -> None:
    c = run.connect(user="alice")
    run.handshake(c, "PLAIN", step="SaslHandshake again", mechanisms=True)
    run.note("then", closed=c.closed_by_broker(timeout_s=1))
