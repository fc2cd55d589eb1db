"""``throttled-admin topics``: kafka-topics.sh's create, delete, alter, describe and list.

Each action does what ``TopicCommand.TopicService`` does (messages, --if-exists / --if-not-exists, regex
selection), through ThrottledAdminClient with quota retry off unless --retry-on-quota-violation.
"""

from __future__ import annotations

import argparse
import base64
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin._config import ConfigResource  # not re-exported under a name mypy accepts

from throttled_admin import NewPartitions, NewTopic, NotYetVisibleError, TopicValueError
from throttled_admin._kafka.java_order import hash_map_order
from throttled_admin._kafka.topic_configs import config_problem
from throttled_admin.cli._args import parse_replica_assignment, parse_topic_configs, topic_pattern
from throttled_admin.cli._output import ErrorInfo, Output, describe_error
from throttled_admin.cli._session import AdminSession

__all__ = ["TopicsFailed", "run_topics"]

# org.apache.kafka.common.internals.Topic.INTERNAL_TOPICS
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_PAST_TENSE = {"create": "created", "alter": "altered", "delete": "deleted"}
_WAITED = ("create", "alter")  # waited for until every broker shows the change (wait_for_metadata)


class TopicsFailed(Exception):
    """The command failed; the report has been printed already. Exit 1."""


@dataclass(frozen=True)
class TopicResult:
    topic: str
    operation: str
    status: str  # created, exists, altered, deleted, failed
    error: ErrorInfo | None = None
    throttle_time_ms: int | None = None  # the broker's throttle_time_ms on the request's response
    hint: str | None = None
    visible: bool | None = None  # a create or grow: shown by every broker by --timeout-ms (None for other actions)
    lagging: tuple[int, ...] = ()  # ... if not, the brokers known not to list it yet

    def as_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"topic": self.topic, "operation": self.operation, "status": self.status}
        if self.error is not None:
            record.update(self.error.as_dict())
            if record["throttle_time_ms"] is None:
                record["throttle_time_ms"] = self.throttle_time_ms
        else:
            record.update(dict.fromkeys(("error_code", "error_name", "error_message")))
            record["throttle_time_ms"] = self.throttle_time_ms
        if self.hint is not None:
            record["hint"] = self.hint
        if self.visible is not None:  # created by the controller; listed by every broker yet?
            record["visible"] = self.visible
            if not self.visible:
                record["not_visible_on"] = list(self.lagging)
        return record


def _topic_id(uuid: Any) -> str | None:
    """Kafka's Uuid.toString (URL-safe base64, no padding); confluent-kafka's str() uses the standard
    alphabet, which kafka-topics.sh users would not recognise."""
    if uuid is None:
        return None
    high = uuid.get_most_significant_bits() & 0xFFFFFFFFFFFFFFFF
    low = uuid.get_least_significant_bits() & 0xFFFFFFFFFFFFFFFF
    if high == 0 and low == 0:
        return None
    raw = high.to_bytes(8, "big") + low.to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class TopicsCommand:
    def __init__(self, args: argparse.Namespace, action: str, session: AdminSession, out: Output) -> None:
        self.args = args
        self.action = action
        self.session = session
        self.out = out
        self.timeout_s = args.timeout_ms / 1000
        self._admitted_over_quota = False

    # -- selection -------------------------------------------------------------------------------

    def _cluster_topics(self) -> Mapping[str, Any]:
        metadata = self.session.list_topics()
        return metadata.topics  # type: ignore[no-any-return]

    def _select(self, topics: Mapping[str, Any]) -> list[str]:
        """TopicService.getTopics: sorted names matching --topic (whole-name regex), internals optionally out."""
        pattern = topic_pattern(self.args.topic) if self.args.topic is not None else None
        names = sorted(topics)
        return [
            name
            for name in names
            if (pattern is None or pattern.fullmatch(name))
            and not (self.args.exclude_internal and name in INTERNAL_TOPICS)
        ]

    def _ensure_found(self, found: list[str]) -> None:
        if self.args.topic and not found and not self.args.if_exists:
            # kafka-topics.sh: an IllegalArgumentException, reported as every failure ("Error while executing
            # topic command : ..." on stdout), exit 1.
            info = ErrorInfo(
                KafkaError.UNKNOWN_TOPIC_OR_PART,
                "UNKNOWN_TOPIC_OR_PART",
                f"Topic '{self.args.topic}' does not exist as expected",
            )
            self._report([TopicResult(self.args.topic, self.action, "failed", info)])

    # -- mutations -------------------------------------------------------------------------------

    def _mutation_kwargs(self) -> dict[str, Any]:
        return {
            "retry_on_quota_violation": bool(self.args.retry_on_quota_violation),
            "timeout_ms": self.args.timeout_ms,
        }

    def _collect(
        self,
        operation: str,
        futures: Mapping[str, Future[None]],
        tolerate: Callable[[BaseException], bool] = lambda exc: False,
    ) -> None:
        self.session.wait(futures, on_throttled=self._waiting if self.args.retry_on_quota_violation else None)
        # The largest throttle_time_ms the broker sent this command (a fresh client: its mutation requests).
        # librdkafka's CreateTopics v4 is admitted and throttled where a newer version would be refused.
        throttle_ms = self.session.throttle_time_ms()
        self._admitted_over_quota = throttle_ms > 0 and self.session.quota_violations() == 0
        results: list[TopicResult] = []
        waited = operation in _WAITED  # (a create, a grow: until every broker shows it)
        for topic in sorted(futures):
            exc = futures[topic].exception()
            status = _PAST_TENSE[operation]
            if exc is None:
                results.append(
                    TopicResult(topic, operation, status, throttle_time_ms=throttle_ms, visible=waited or None)
                )
            elif isinstance(exc, NotYetVisibleError) and waited:
                # The controller applied it (kafka-topics.sh says so once the controller accepts): exit 0, with a
                # warning that some broker does not show it yet.
                results.append(
                    TopicResult(
                        topic, operation, status, throttle_time_ms=throttle_ms, visible=False, lagging=exc.brokers
                    )
                )
            elif tolerate(exc):
                results.append(
                    TopicResult(topic, operation, "exists", describe_error(exc, self.args.deadline), throttle_ms)
                )
            else:
                info = describe_error(exc, self.args.deadline)
                results.append(TopicResult(topic, operation, "failed", info, throttle_ms, self._hint(info)))
        self._report(results)

    def _waiting(self, throttle_ms: int) -> None:
        """--retry-on-quota-violation: say what the command waits for, and how long (on stderr)."""
        self.out.error(
            f"The broker refused the change over the principal's controller mutation quota "
            f"(THROTTLING_QUOTA_EXCEEDED): waiting {throttle_ms} ms for its throttle to end, then sending it again "
            f"(--retry-on-quota-violation, within {self.args.deadline})."
        )

    def _hint(self, info: ErrorInfo) -> str | None:
        """Why --retry-on-quota-violation did not help: the throttle outlasts the deadline."""
        if info.code != KafkaError.THROTTLING_QUOTA_EXCEEDED or not self.args.retry_on_quota_violation:
            return None
        throttle = f"{info.throttle_time_ms} ms" if info.throttle_time_ms is not None else "longer"
        return (
            f"The broker's throttle ({throttle}) outlasts {self.args.deadline}: "
            "--retry-on-quota-violation waits out a throttle only within the deadline, so it was not sent "
            "again. Retry later, or give a --timeout-ms longer than the throttle."
        )

    def _report(self, results: list[TopicResult]) -> None:
        failed = [r for r in results if r.status == "failed"]
        if self.out.json_mode:
            for result in results:
                self.out.record(result.as_dict())
        else:
            for result in results:
                if result.status == "created":
                    self.out.line(f"Created topic {result.topic}.")
                if result.visible is False:
                    self.out.line(visibility_warning(result, self.args.deadline))
            throttled = max((r.throttle_time_ms or 0 for r in results if r.status != "failed"), default=0)
            if throttled > 0 and self._admitted_over_quota:
                # Admitted and throttled, never refused: without this line the throttle would go unseen.
                self.out.line(throttle_warning(throttled))
            if failed and failed[0].error is not None:
                # kafka-topics.sh reports the first failure only (all().get() throws one exception).
                self.out.command_error(failed[0].error)
                if failed[0].hint is not None:
                    self.out.line(failed[0].hint)
        if failed:
            raise TopicsFailed

    def create(self) -> None:
        name = self.args.topic
        configs = parse_topic_configs(self.args.config or [])
        problem = config_problem(configs)
        if problem is not None:
            # kafka-topics.sh checks them first (LogConfig.validate), so a name or value it refuses is said even of
            # a topic that exists, and with --if-not-exists, which hid a misspelt name (helper 119)
            info = ErrorInfo(KafkaError.INVALID_CONFIG, "INVALID_CONFIG", problem)
            self._report([TopicResult(name, self.action, "failed", info)])
        if not self.out.json_mode and ("." in name or "_" in name):
            self.out.line(
                "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
                "('_') could collide. To avoid issues it is best to use either, but not both."
            )
        if self.args.replica_assignment:
            assignment = parse_replica_assignment(self.args.replica_assignment)
            topic = NewTopic(name, len(assignment), replica_assignment=assignment, config=configs)
        else:
            partitions = self.args.partitions if self.args.partitions is not None else -1
            replication = self.args.replication_factor if self.args.replication_factor is not None else -1
            topic = NewTopic(name, partitions, replication, config=configs)
        # usable on every broker when it says created (kafka-python 3's wait_for_metadata)
        futures = self.session.admin.create_topics([topic], **self._mutation_kwargs(), wait_for_metadata=True)

        def already_exists(exc: BaseException) -> bool:
            return bool(self.args.if_not_exists) and _code(exc) == KafkaError.TOPIC_ALREADY_EXISTS

        self._collect("create", futures, already_exists)

    def alter(self) -> None:
        topics = self._cluster_topics()
        found = self._select(topics)
        self._ensure_found(found)
        if not found:
            return
        if self.args.partitions < 1:
            # librdkafka cannot send a count below 1; kafka-topics.sh sends it, and Kafka's controller refuses it so
            self._report([_not_an_increase(name, len(topics[name].partitions), self.args.partitions) for name in found])
        assignment = parse_replica_assignment(self.args.replica_assignment) if self.args.replica_assignment else None
        new_partitions = []
        for name in found:
            if assignment is None:
                new_partitions.append(NewPartitions(name, self.args.partitions))
            else:
                # The assignment lists every partition; only those past the current count are new.
                current = len(topics[name].partitions)
                added = assignment[current:]
                if len(added) >= self.args.partitions:  # a topic keeps at least its first partition
                    total = self.args.partitions
                    raise TopicValueError(
                        name,
                        "replica_assignment",
                        f"has {len(added)} entries, but growing to {total} partitions adds at most {total - 1}",
                        value=added,
                        maximum=total - 1,
                    )
                new_partitions.append(NewPartitions(name, self.args.partitions, replica_assignment=added))
        # every broker shows the new count when it says altered (a --describe or a next --alter reads it)
        futures = self.session.admin.create_partitions(
            new_partitions, **self._mutation_kwargs(), wait_for_metadata=True
        )
        self._collect("alter", futures)

    def delete(self) -> None:
        found = self._select(self._cluster_topics())
        self._ensure_found(found)
        if not found:
            return
        futures = self.session.admin.delete_topics(found, **self._mutation_kwargs())
        self._collect("delete", futures)

    # -- reads -----------------------------------------------------------------------------------

    def list(self) -> None:
        found = self._select(self._cluster_topics())
        if self.out.json_mode:
            for name in found:
                self.out.record({"topic": name})
        else:
            self.out.line("\n".join(found))  # one empty line when there are none, as kafka-topics.sh

    def describe(self) -> None:
        found = self._select(self._cluster_topics())
        self._ensure_found(found)
        if not found:
            return
        admin = self.session.admin
        descriptions = admin.describe_topics(TopicCollection(found), request_timeout=self.timeout_s)
        configs = admin.describe_configs(
            [ConfigResource("topic", name) for name in found], request_timeout=self.timeout_s
        )
        self.session.wait(descriptions)
        self.session.wait(configs)
        configs_by_topic = {resource.name: future for resource, future in configs.items()}
        for name in found:
            description = descriptions[name].result()
            entries = configs_by_topic[name].result()
            # kafka-topics.sh's order: its Config's HashMap, filled in the order the broker sent the entries
            overrides = {key: entries[key].value for key in hash_map_order(entries) if not entries[key].is_default}
            partitions = sorted(description.partitions, key=lambda p: p.id)
            replication = len(partitions[0].replicas) if partitions else 0
            topic_id = _topic_id(description.topic_id)
            rows = [
                {
                    "partition": p.id,
                    "leader": p.leader.id if p.leader is not None and p.leader.id >= 0 else None,
                    "replicas": [node.id for node in p.replicas],
                    "isr": [node.id for node in p.isr],
                }
                for p in partitions
            ]
            if self.out.json_mode:
                self.out.record(
                    {
                        "topic": name,
                        "topic_id": topic_id,
                        "partition_count": len(partitions),
                        "replication_factor": replication,
                        "configs": overrides,
                        "partitions": rows,
                    }
                )
                continue
            header = f"Topic: {name}"
            if topic_id is not None:
                header += f"\tTopicId: {topic_id}"
            header += f"\tPartitionCount: {len(partitions)}\tReplicationFactor: {replication}"
            header += "\tConfigs: " + ",".join(f"{key}={value}" for key, value in overrides.items())
            self.out.line(header)
            for row in rows:
                leader = "none" if row["leader"] is None else row["leader"]
                # Kafka 4 prints the ELR fields; librdkafka does not report them, hence N/A as Kafka prints
                # for a broker that does not send them.
                self.out.line(
                    f"\tTopic: {name}\tPartition: {row['partition']}\tLeader: {leader}"
                    f"\tReplicas: {','.join(map(str, row['replicas']))}\tIsr: {','.join(map(str, row['isr']))}"
                    "\tElr: N/A\tLastKnownElr: N/A"
                )


def _not_an_increase(topic: str, current: int, requested: int) -> TopicResult:
    """Kafka's refusal of ``--alter --partitions`` below 1 (ReplicationControlManager), told without sending."""
    message = f"The topic {topic} currently has {current} partition(s); {requested} would not be an increase."
    return TopicResult(topic, "alter", "failed", ErrorInfo(None, "INVALID_PARTITIONS", message))


def visibility_warning(result: TopicResult, deadline: str) -> str:
    """The warning for a topic the controller created, or grew, that some broker did not show by the command's
    deadline (``deadline``: as messages name it, "--timeout-ms 60000")."""
    lagging, grown = result.lagging, result.operation == "alter"
    shows = "show its new partitions" if grown else "list it"
    if not lagging:
        who = f"no broker's metadata could be read to see whether every broker {'shows them' if grown else 'lists it'}"
    else:
        brokers = f"broker{'s' if len(lagging) > 1 else ''} {', '.join(map(str, lagging))}"
        who = f"{brokers} {'does' if len(lagging) == 1 else 'do'} not {shows} yet"
    return (
        f"WARNING: Topic {result.topic} was {'altered' if grown else 'created'}, but {who} (within {deadline}); "
        f"it is usable on every broker once they {'show them' if grown else 'list it'}."
    )


def throttle_warning(throttle_ms: int) -> str:
    """The warning for a change the broker admitted and throttled (Kafka 4 admits librdkafka's CreateTopics
    v4, DeleteTopics v4 and CreatePartitions v2 over the quota and throttles the connection instead)."""
    return (
        f"WARNING: The broker applied this change over the principal's controller mutation quota and throttled "
        f"the connection: the principal owes {throttle_ms} ms of quota (kafka-topics.sh on Kafka 4 would be refused "
        f"with THROTTLING_QUOTA_EXCEEDED until then). Retry after {throttle_ms} ms."
    )


def _code(exc: BaseException) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return int(exc.args[0].code())
    return None


def run_topics(args: argparse.Namespace, action: str, session: AdminSession, out: Output) -> None:
    """Run the action; raises TopicsFailed (reported) or KafkaException / CommandTimeout (not yet reported)."""
    command = TopicsCommand(args, action, session, out)
    getattr(command, action)()
