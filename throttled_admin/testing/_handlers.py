"""One handler per Kafka API the test broker speaks. Messages are kafka-python's protocol classes;
a handler turns a decoded request into a response object plus what the request log records."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import errors as kerr
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.admin.cluster import DescribeQuorumRequest, DescribeQuorumResponse
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from throttled_admin._kafka.refusals import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_BATCH_MESSAGE,
    TOO_MANY_ADDED_PARTITIONS_MESSAGE,
    TOO_MANY_PARTITIONS_MESSAGE,
)
from throttled_admin._kafka.topic_names import topic_name_error
from throttled_admin.testing._cluster import (
    CLUSTER_METADATA_TOPIC,
    THROTTLED,
    ApiError,
    Cluster,
    Created,
    CreateSpec,
)
from throttled_admin.testing._configs import ConfigEntry, ConfigSource, effective_topic_configs
from throttled_admin.testing._configs_requests import AlterResource, ResourceType, alter_resources, describe_resource
from throttled_admin.testing._quotas import QUOTA_KEYS, QuotaEntity, QuotaManager, RequestQuota, quota_value_error
from throttled_admin.testing._redpanda import RedpandaQuota, redpanda_error
from throttled_admin.testing._sasl import SaslFailure, ScramCredentials, evaluate_plain, generic_failure, new_exchange

__all__ = [
    "API_SPECS",
    "ApiSpec",
    "BrokerContext",
    "Handled",
    "RequestContext",
    "api_versions_unsupported",
]

ANONYMOUS = "ANONYMOUS"
# KRaft's batch cap (``_kafka/refusals.py``: QuorumController's MAX_RECORDS_PER_USER_OP and
# ReplicationControlManager's MAX_PARTITIONS_PER_BATCH, one number): past it the whole operation fails and nothing
# is applied or charged. QuotaBroker(max_records_per_op=...) sets both, for clusters that use another cap.
TOO_LARGE = ApiError.of(kerr.PolicyViolationError, TOO_LARGE_BATCH_MESSAGE)
TOO_MANY_PARTITIONS = ApiError.of(kerr.PolicyViolationError, TOO_MANY_PARTITIONS_MESSAGE)
TOO_MANY_ADDED = ApiError.of(kerr.PolicyViolationError, TOO_MANY_ADDED_PARTITIONS_MESSAGE)  # Kafka 4.4's check


@dataclass
class BrokerContext:
    """What every handler may read: the cluster state, quotas and the listeners of every node."""

    cluster: Cluster
    quotas: QuotaManager
    enforcement: str  # "by-version" | "strict" | "permissive" | "redpanda"
    users: dict[str, str] | None
    addresses: dict[int, tuple[str, int]]  # node id -> (host, port)
    sasl_mechanisms: tuple[str, ...] = ("PLAIN",)  # Kafka's sasl.enabled.mechanisms, when ``users`` is set
    scram_credentials: ScramCredentials = field(default_factory=lambda: ScramCredentials({}))
    max_records_per_op: int = MAX_RECORDS_PER_USER_OP  # KRaft's cap on one operation's records and partitions
    cap_message: str | None = None  # the cap's refusal in other words than Kafka 4.4's three (all of them)


@dataclass
class RequestContext:
    broker: BrokerContext
    node_id: int
    api_key: int
    api_version: int
    client_id: str
    principal: str
    sasl_mechanism: str | None = None
    injected_error: int | None = None  # fault injection: every topic/resource fails with this code
    injected_after_apply: bool = False  # ... after the mutation was applied and charged (a controller failing over)
    injected_message: str | None = None  # ... with these words (default: that QuotaBroker injected it)
    metadata_error: int | None = None  # fault injection: Metadata v13+'s top-level error_code (KIP-1102)
    # KRaft's controller deadline (ControllerRequestContext): received_at + the request's timeout_ms, on the
    # time.monotonic() clock; a mutation not handled by then fails with REQUEST_TIMED_OUT and changes nothing.
    deadline: float | None = None
    reauthenticating: bool = False  # a SASL exchange on a connection that has already authenticated
    # A slow CreateTopicPolicy (fault injection): called with each topic name the controller is about to create,
    # after the request's deadline was checked; it may take as long as it likes, as a policy's validate() may.
    create_policy: Callable[[str], None] | None = None
    sasl_exchange: Any = None  # a SCRAM exchange under way on the connection (its first round answered)


@dataclass
class Handled:
    response: Any
    mutations: int = 0
    throttle_time_ms: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    authenticated_as: str | None = None  # a successful SaslAuthenticate
    handshake_mechanism: str | None = None
    sasl_exchange: Any = None  # a SCRAM exchange that goes on with the connection's next SaslAuthenticate
    close: bool = False  # close the connection once the response is sent
    mutes: bool = True  # the connection is muted for ``throttle_time_ms`` (KIP-219); Redpanda's mutations do not
    all_topics: bool = False  # a Metadata request for every topic of the cluster


Handler = Callable[[Any, RequestContext], Handled]


@dataclass(frozen=True)
class ApiSpec:
    request: Any
    response: Any
    min_version: int
    max_version: int
    handler: Handler
    strict_since: int | None = None  # KIP-599: first version whose clients get error 89
    client_throttles_since: int | None = None  # KIP-219: first version whose clients back off themselves


def _is_strict(ctx: RequestContext, spec: ApiSpec) -> bool:
    mode = ctx.broker.enforcement
    if mode in ("strict", "redpanda"):
        return True
    if mode == "permissive" or spec.strict_since is None:
        return False
    return ctx.api_version >= spec.strict_since


def _redpanda(ctx: RequestContext) -> bool:
    return ctx.broker.enforcement == "redpanda"


def _request_quota(ctx: RequestContext, *, validate_only: bool = False) -> RequestQuota:
    quotas = ctx.broker.quotas
    if _redpanda(ctx):
        # Redpanda answers validate_only before its quota: not charged.
        return (
            RequestQuota(quotas, None, strict=True)
            if validate_only
            else RedpandaQuota(quotas, quotas.bucket_for(ctx.principal, ctx.client_id))
        )
    strict = _is_strict(ctx, API_SPECS[ctx.api_key])
    return quotas.request_quota(ctx.principal, ctx.client_id, strict=strict)


def _not_controller(ctx: RequestContext) -> ApiError | None:
    """The injected error, if any. KRaft brokers forward mutations to the active controller, so every node
    accepts them; NOT_CONTROLLER (41) now only comes from fault injection (``fail_next``)."""
    if ctx.injected_error is not None and not ctx.injected_after_apply:
        return _injected(ctx)
    return None


def _injected(ctx: RequestContext) -> ApiError:
    """The error ``fail_next`` injected, in its words."""
    assert ctx.injected_error is not None
    after = ", after applying" if ctx.injected_after_apply else ""
    return ApiError(ctx.injected_error, ctx.injected_message or f"Injected by QuotaBroker fault injection{after}.")


def _deadline_passed(ctx: RequestContext) -> bool:
    """KafkaEventQueue times an event out when its deadline (``requestTimeoutMsToDeadlineNs``: now +
    timeout_ms, with no special case for 0 or negative values) has passed before the controller runs it."""
    return ctx.deadline is not None and time.monotonic() >= ctx.deadline


TIMED_OUT = ApiError.of(kerr.RequestTimedOutError)  # a TimeoutException without a message: null in the response


def _duplicates(names: list[str]) -> set[str]:
    seen: set[str] = set()
    return {n for n in names if n in seen or seen.add(n)}  # type: ignore[func-returns-value]


DUPLICATE = ApiError.of(kerr.InvalidRequestError, "Duplicate topic name.")
# Errors.INVALID_REQUEST's default message: what Kafka sends for a request it cannot handle at all.
MALFORMED_REQUEST = (
    "This most likely occurs because of a request being malformed by the client library or the message was sent "
    "to an incompatible broker. See the broker logs for more details."
)
THROTTLING_QUOTA_EXCEEDED = int(kerr.ThrottlingQuotaExceededError.errno)
THROTTLED_NO_MESSAGE = ApiError(THROTTLING_QUOTA_EXCEEDED)


# -- ApiVersions ---------------------------------------------------------------------------------


def _api_keys(response_class: Any, redpanda: bool = False) -> list[Any]:
    """The APIs served, Kafka 4.4's ranges; Redpanda has no KRaft quorum to describe (DescribeQuorum)."""
    return [
        response_class.ApiVersion(api_key=key, min_version=spec.min_version, max_version=spec.max_version)
        for key, spec in sorted(API_SPECS.items())
        if not (redpanda and key == DescribeQuorumRequest.API_KEY)
    ]


def handle_api_versions(request: Any, ctx: RequestContext) -> Handled:
    error = ctx.injected_error or 0
    keys = _api_keys(ApiVersionsResponse, _redpanda(ctx))
    return Handled(ApiVersionsResponse(version=ctx.api_version, error_code=error, api_keys=keys, throttle_time_ms=0))


def api_versions_unsupported() -> Any:
    """Kafka answers an ApiVersions version it does not know with a v0 body and UNSUPPORTED_VERSION, listing
    the versions of ApiVersions alone so the client can pick one and then learn the rest (KIP-511,
    ``ApiVersionsRequest.getErrorResponse``)."""
    own = [key for key in _api_keys(ApiVersionsResponse) if key.api_key == ApiVersionsRequest.API_KEY]
    return ApiVersionsResponse(version=0, error_code=kerr.UnsupportedVersionError.errno, api_keys=own)


# -- Metadata ------------------------------------------------------------------------------------


def _auto_create_allowed(request: Any, ctx: RequestContext) -> bool:
    """``KafkaApis.handleTopicMetadataRequest``: the broker's ``auto.create.topics.enable`` and the request's
    flag (Metadata < v4 has none and always allows it)."""
    return ctx.broker.cluster.auto_create_topics and bool(getattr(request, "allow_auto_topic_creation", True))


def handle_metadata(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    R = MetadataResponse
    if ctx.metadata_error is not None:
        # A top-level error (v13, KIP-1102: REBOOTSTRAP_REQUIRED) answers the request as a whole: the rest of
        # the response keeps MetadataResponseData's defaults (no brokers, no topics), nothing is auto-created.
        return Handled(
            R(
                version=ctx.api_version,
                throttle_time_ms=0,
                brokers=[],
                cluster_id=None,
                controller_id=-1,
                topics=[],
                authorized_operations=None,
                error_code=ctx.metadata_error,
            )
        )
    brokers = [
        R.MetadataResponseBroker(node_id=node, host=host, port=port, rack=None)
        for node, (host, port) in sorted(ctx.broker.addresses.items())
    ]
    topics = []
    charged = 0
    with cluster.lock:
        view = cluster.metadata_view(ctx.node_id)  # a non-controller node sees changes metadata_lag_ms late
        all_topics = request.topics is None or (ctx.api_version == 0 and not request.topics)
        if all_topics:
            wanted: list[tuple[str | None, uuid.UUID | None]] = [(name, None) for name in view.names()]
        else:
            wanted = [(t.name, getattr(t, "topic_id", None)) for t in request.topics]
        auto_create = not all_topics and ctx.injected_error is None and _auto_create_allowed(request, ctx)
        for name, topic_id in wanted:
            topic = view.get(name) if name else None
            if topic is None and topic_id is not None and topic_id.int != 0:
                topic = view.by_id(topic_id)
            if topic is None and name and auto_create:
                # AutoTopicCreationManager forwards a CreateTopics (latest version, so strict unless the
                # broker is permissive) under the client's principal; this response still says the topic
                # is unknown, and it exists from the next Metadata request on.
                strict = ctx.broker.enforcement != "permissive"
                quota = ctx.broker.quotas.request_quota(ctx.principal, ctx.client_id, strict=strict)
                before = cluster.topics.get(name)
                error = cluster.auto_create(name, quota)
                created = cluster.topics.get(name)
                charged += created.partition_count if created is not None and before is None else 0
                topics.append(R.MetadataResponseTopic(error_code=error.code, name=name, topic_id=None, partitions=[]))
                continue
            if topic is None or ctx.injected_error is not None:
                code = ctx.injected_error or (
                    kerr.UnknownTopicOrPartitionError.errno if name else kerr.UnknownTopicIdError.errno
                )
                topics.append(R.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=[]))
                continue
            built = topic.metadata_partitions
            if built is None or built[0] != topic.partition_count:  # partitions are only ever added
                entries: list[object] = [
                    R.MetadataResponseTopic.MetadataResponsePartition(
                        error_code=0,
                        partition_index=index,
                        leader_id=replicas[0],
                        leader_epoch=0,
                        replica_nodes=replicas,
                        isr_nodes=replicas,
                        offline_replicas=[],
                    )
                    for index, replicas in enumerate(topic.replicas)
                ]
                built = topic.metadata_partitions = (topic.partition_count, entries)
            partitions = built[1]
            topics.append(
                R.MetadataResponseTopic(
                    error_code=0,
                    name=topic.name,
                    topic_id=topic.topic_id,
                    is_internal=False,
                    partitions=partitions,
                    authorized_operations=None,
                )
            )
    response = R(
        version=ctx.api_version,
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.named_controller(),
        topics=topics,
        authorized_operations=None,
        error_code=0,
    )
    # The log keeps each named topic's error (a request for all topics keeps none: it names none).
    errors = {} if all_topics else {t.name: t.error_code for t in topics if t.name}
    return Handled(response, mutations=charged, errors=errors, all_topics=all_topics)


# -- the three mutations ------------------------------------------------------------------------

Apply = Callable[[int, RequestQuota], "tuple[ApiError, int]"]
Check = Callable[[int], "ApiError | None"]


@dataclass
class _Mutations:
    indices: list[int]  # the request entries answered: one per distinct topic, as Kafka's keyed results
    errors: list[ApiError]
    charged: int
    throttle_time_ms: int


def _mutate(
    ctx: RequestContext,
    keys: list[str],
    apply: Apply,
    *,
    duplicate: Check,
    invalid: Check | None = None,
    prohibited: Check | None = None,
    records: Callable[[int], int] | None = None,
    whole: Callable[[list[int]], ApiError | None] | None = None,
    validate_only: bool = False,
    own_answers_last: bool = False,
) -> _Mutations:
    """ControllerApis' order, per distinct topic in request order: a malformed entry, then a repeated one
    (``duplicate``), then one ControllerApis refuses itself (``prohibited``), then a non-controller node fail
    uncharged; every other topic is validated, charged (KIP-599) and applied by ``apply(index, quota)``. Before
    any of that the controller may refuse the whole operation, every topic it was given failing with the same
    error and nothing applied or charged: ``whole(indices)`` (the partitions a CreateTopics makes or a
    CreatePartitions adds), then ``records(index)``, the metadata records a topic makes, over
    ``max_records_per_op`` in all
    (QuorumController's bounded record list). ``own_answers_last``: the topics ControllerApis answered itself
    come after the controller's results, repeated names first (CreateTopics)."""
    quota = _request_quota(ctx, validate_only=validate_only)
    refused = _not_controller(ctx)
    spec = API_SPECS[ctx.api_key]
    throttled = redpanda_error(ctx.api_version, spec.strict_since or 0) if _redpanda(ctx) else THROTTLED_NO_MESSAGE
    dupes = _duplicates(keys)
    first = {key: index for index, key in reversed(list(enumerate(keys)))}
    indices = sorted(first.values())
    if _deadline_passed(ctx):
        # The whole controller event failed: ControllerApis answers every topic with the timeout, charges
        # nothing and applies nothing.
        return _Mutations(indices, [TIMED_OUT] * len(indices), 0, 0)
    early: dict[int, ApiError] = {}
    for index in indices:
        error = invalid(index) if invalid is not None else None
        if error is None and keys[index] in dupes:
            error = duplicate(index)
        if error is None and prohibited is not None:
            error = prohibited(index)
        if error is None and refused is not None:
            error = refused
        if error is not None:
            early[index] = error
    if own_answers_last:
        # ControllerApis.createTopics adds its own answers after the controller's results: repeated names,
        # then the prohibited ones.
        indices.sort(key=lambda index: 0 if index not in early else (1 if keys[index] in dupes else 2))
    to_controller = [index for index in indices if index not in early]
    if to_controller and refused is None:
        refusal = whole(to_controller) if whole is not None else None
        cap = ctx.broker.max_records_per_op
        if refusal is None and records is not None and sum(records(index) for index in to_controller) > cap:
            refusal = TOO_LARGE
        if refusal is not None:
            if ctx.broker.cap_message is not None:
                refusal = ApiError.of(kerr.PolicyViolationError, ctx.broker.cap_message)
            return _Mutations(indices, [early.get(index, refusal) for index in indices], 0, 0)
    errors, charged = [], 0
    for index in indices:
        error = early.get(index)
        if error is None:
            error, cost = apply(index, quota)
            charged += cost
            if error.code == THROTTLING_QUOTA_EXCEEDED:
                error = throttled  # KRaft: error 89 with a null message; Redpanda: 89 or -1 by version
        errors.append(error)
    if isinstance(quota, RedpandaQuota):
        charged += quota.refused_mutations  # Redpanda charges a refused topic too
    if ctx.injected_error is not None and ctx.injected_after_apply:
        # applied and charged, then answered as a controller that resigned before it answered: its successor
        # committed what it wrote (``fail_next(..., applied=True)``)
        errors = [_injected(ctx)] * len(errors)
    return _Mutations(indices, errors, charged, quota.throttle_time_ms())


def _handled(response: Any, keys: list[str], done: _Mutations, ctx: RequestContext) -> Handled:
    errors = {key: error.code for key, error in zip(keys, done.errors, strict=True)}
    return Handled(
        response,
        mutations=done.charged,
        throttle_time_ms=done.throttle_time_ms,
        errors=errors,
        mutes=not _redpanda(ctx),
    )


def _duplicate_name(index: int) -> ApiError:
    return DUPLICATE


def handle_create_topics(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    validate_only = bool(getattr(request, "validate_only", False))
    topics = list(request.topics)
    outcomes: dict[int, Created] = {}

    def prohibited(index: int) -> ApiError | None:
        """ControllerApis.createTopics refuses the metadata topic before the controller."""
        name = topics[index].name
        if name == CLUSTER_METADATA_TOPIC:
            return ApiError.of(kerr.InvalidRequestError, f"Creation of internal topic {name} is prohibited.")
        return None

    def apply(index: int, quota: RequestQuota) -> tuple[ApiError, int]:
        t = topics[index]
        if ctx.create_policy is not None:
            ctx.create_policy(t.name)  # inside the controller's event: the deadline was checked when it began
        spec = CreateSpec(
            t.name,
            t.num_partitions,
            t.replication_factor,
            [(a.partition_index, a.broker_ids) for a in t.assignments],
            {c.name: c.value for c in t.configs},
        )
        outcomes[index] = outcome = cluster.create(spec, quota, validate_only=validate_only)
        return outcome.error, outcome.charged

    def partitions(index: int) -> int:
        """ReplicationControlManager.validateTotalNumberOfPartitions: the assignments, the default for -1, else
        the count when positive."""
        t = topics[index]
        if t.assignments:
            return len(t.assignments)
        if t.num_partitions == -1:
            return cluster.default_partitions
        return max(0, int(t.num_partitions))

    def whole(indices: list[int]) -> ApiError | None:
        """Checked first, before the names: the partitions of every topic the controller was given."""
        too_many = sum(partitions(index) for index in indices) > ctx.broker.max_records_per_op
        return TOO_MANY_PARTITIONS if too_many else None

    def records(index: int) -> int:
        """ReplicationControlManager.createTopic: a TopicRecord, a PartitionRecord each, a ConfigRecord each,
        for a topic that is created (one already there, or with an illegal name, makes none)."""
        t = topics[index]
        if t.name in cluster.topics or topic_name_error(t.name):
            return 0
        return 1 + max(1, partitions(index)) + sum(1 for c in t.configs if c.value is not None)

    done = _mutate(
        ctx,
        [t.name for t in topics],
        apply,
        duplicate=_duplicate_name,
        prohibited=prohibited,
        records=records,
        whole=whole,
        validate_only=validate_only,
        own_answers_last=True,
    )
    R = CreateTopicsResponse.CreatableTopicResult
    C = R.CreatableTopicConfigs
    shared_defaults: list[Any] = []  # one encoded list serves every topic without overrides

    def result_configs(overrides: dict[str, str]) -> list[Any]:
        if not overrides and shared_defaults:
            return shared_defaults
        configs = [
            C(name=e.name, value=e.value, read_only=False, config_source=int(e.source), is_sensitive=False)
            for e in effective_topic_configs(overrides, cluster.broker_configs)
        ]
        if not overrides:
            shared_defaults.extend(configs)
        return configs

    results = []
    for index, error in zip(done.indices, done.errors, strict=True):
        t, outcome = topics[index], outcomes.get(index)
        configs: list[Any] = []
        if error.code == 0 and outcome is not None:
            # ReplicationControlManager.createTopic: the effective configs and the resolved counts, also for
            # a validate-only request (whose topic id is generated and then discarded, as Kafka does).
            configs = result_configs({c.name: c.value for c in t.configs if c.value is not None})
        ok = error.code == 0 and outcome is not None
        results.append(
            R(
                name=t.name,
                topic_id=(outcome.topic_id or uuid.uuid4()) if ok and outcome else uuid.UUID(int=0),
                error_code=error.code,
                error_message=error.message,
                topic_config_error_code=0,
                num_partitions=outcome.partitions if ok and outcome else -1,
                replication_factor=outcome.replication_factor if ok and outcome else -1,
                configs=configs,
            )
        )
    response = CreateTopicsResponse(version=ctx.api_version, throttle_time_ms=done.throttle_time_ms, topics=results)
    return _handled(response, [r.name for r in results], done, ctx)


def handle_delete_topics(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    if ctx.api_version >= 6:
        targets = [(t.name, t.topic_id if t.topic_id is not None and t.topic_id.int else None) for t in request.topics]
    else:
        targets = [(name, None) for name in request.topic_names]
    with cluster.lock:  # resolve names and ids first; delete_topic re-checks under the lock
        resolved = [
            cluster.topics.get(name) if name else (cluster.by_id(topic_id) if topic_id is not None else None)
            for name, topic_id in targets
        ]

    def invalid(index: int) -> ApiError | None:
        name, topic_id = targets[index]
        if name and topic_id is not None:
            return ApiError.of(kerr.InvalidRequestError, "You may not specify both topic name and topic id.")
        if not name and topic_id is None:
            return ApiError.of(kerr.InvalidRequestError, "Neither topic name nor id were specified.")
        return None

    def duplicate(index: int) -> ApiError:
        by_name = bool(targets[index][0])
        return DUPLICATE if by_name else ApiError.of(kerr.InvalidRequestError, "Duplicate topic id.")

    def apply(index: int, quota: RequestQuota) -> tuple[ApiError, int]:
        if resolved[index] is None and _redpanda(ctx) and not quota.record(0):
            return THROTTLED, 0  # Redpanda checks the quota (an unknown topic costs 0) before the controller
        missing = (
            ApiError.of(kerr.UnknownTopicOrPartitionError, "This server does not host this topic-partition.")
            if targets[index][0]
            else ApiError.of(kerr.UnknownTopicIdError, "This server does not host this topic ID.")
        )
        return cluster.delete_topic(resolved[index], quota, missing=missing)

    keys = [f"name:{name}" if name else f"id:{topic_id}" for name, topic_id in targets]
    done = _mutate(ctx, keys, apply, duplicate=duplicate, invalid=invalid)
    R = DeleteTopicsResponse.DeletableTopicResult
    results = []
    for index, error in zip(done.indices, done.errors, strict=True):
        (name, topic_id), topic = targets[index], resolved[index]
        results.append(
            R(
                name=topic.name if topic is not None and error.code == 0 else name,
                topic_id=topic.topic_id if topic is not None else (topic_id or uuid.UUID(int=0)),
                error_code=error.code,
                error_message=error.message,
            )
        )
    response = DeleteTopicsResponse(version=ctx.api_version, throttle_time_ms=done.throttle_time_ms, responses=results)
    return _handled(response, [r.name or str(r.topic_id) for r in results], done, ctx)


def handle_create_partitions(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    topics = list(request.topics)

    def apply(index: int, quota: RequestQuota) -> tuple[ApiError, int]:
        t = topics[index]
        assignments = None if t.assignments is None else [a.broker_ids for a in t.assignments]
        return cluster.create_partitions(t.name, t.count, assignments, quota, validate_only=bool(request.validate_only))

    def added(index: int) -> int:
        """The partitions a grow of an existing topic adds (ReplicationControlManager.createPartitions: a
        PartitionRecord each)."""
        t = topics[index]
        existing = cluster.topics.get(t.name)
        return max(0, int(t.count) - existing.partition_count) if existing is not None else 0

    def whole(indices: list[int]) -> ApiError | None:
        """ReplicationControlManager.validateTotalNumberOfPartitions (Kafka 4.4), first: the partitions the
        request adds to existing topics, over the cap. It leaves the record cap nothing a grow could exceed."""
        return TOO_MANY_ADDED if sum(added(index) for index in indices) > ctx.broker.max_records_per_op else None

    done = _mutate(
        ctx,
        [t.name for t in topics],
        apply,
        duplicate=_duplicate_name,
        records=added,
        whole=whole,
        validate_only=bool(request.validate_only),
    )
    R = CreatePartitionsResponse.CreatePartitionsTopicResult
    results = [
        R(name=topics[index].name, error_code=error.code, error_message=error.message)
        for index, error in zip(done.indices, done.errors, strict=True)
    ]
    response = CreatePartitionsResponse(
        version=ctx.api_version, throttle_time_ms=done.throttle_time_ms, results=results
    )
    return _handled(response, [r.name for r in results], done, ctx)


# -- DescribeConfigs / IncrementalAlterConfigs / AlterConfigs --------------------------------------


def handle_describe_configs(request: Any, ctx: RequestContext) -> Handled:
    """ConfigHelper.describeConfigs, resource by resource (``_configs_requests.describe_resource``). A resource
    of a type Kafka does not know fails the whole request (KafkaApis cannot authorize a ConfigResource.Type
    UNKNOWN: every resource gets INVALID_REQUEST with the error's default message). A result's message is ''
    when none is set (DescribeConfigsResult's default), not null."""
    R = DescribeConfigsResponse.DescribeConfigsResult
    C = R.DescribeConfigsResourceResult
    S = C.DescribeConfigsSynonym
    include_synonyms = bool(getattr(request, "include_synonyms", False))
    include_documentation = bool(getattr(request, "include_documentation", False))
    malformed = any(res.resource_type not in ResourceType.NAMES for res in request.resources)
    results = []
    for res in request.resources:
        entries: list[ConfigEntry] = []
        if ctx.injected_error is not None:
            error = _injected(ctx)
        elif malformed:
            error = ApiError.of(kerr.InvalidRequestError, MALFORMED_REQUEST)
        else:
            error, entries = describe_resource(
                ctx.broker.cluster,
                ctx.node_id,
                res.resource_type,
                res.resource_name,
                res.configuration_keys,
                include_synonyms=include_synonyms,
                include_documentation=include_documentation,
            )
        configs = [
            C(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                is_default=e.source == ConfigSource.DEFAULT_CONFIG,
                config_source=int(e.source),
                is_sensitive=e.sensitive,
                synonyms=[S(name=s.name, value=s.value, source=int(s.source)) for s in e.synonyms],
                config_type=int(e.config_type),
                documentation=e.documentation,
            )
            for e in entries
        ]
        results.append(
            R(
                error_code=error.code,
                error_message=error.message or "",
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=configs,
            )
        )
    response = DescribeConfigsResponse(version=ctx.api_version, throttle_time_ms=0, results=results)
    return Handled(response, errors={r.resource_name: r.error_code for r in results})


def _alter_configs(request: Any, ctx: RequestContext, response_class: Any, *, incremental: bool) -> Handled:
    """Config changes are not KIP-599 mutations: nothing here touches the controller mutation quota."""
    resources = [
        AlterResource(
            r.resource_type,
            r.resource_name,
            [(c.name, c.config_operation if incremental else 0, c.value) for c in r.configs],
        )
        for r in request.resources
    ]
    if ctx.injected_error is not None:
        errors = [_injected(ctx)] * len(resources)
    else:
        errors = alter_resources(
            ctx.broker.cluster, resources, incremental=incremental, validate_only=bool(request.validate_only)
        )
    R = response_class.AlterConfigsResourceResponse
    results = [
        R(error_code=e.code, error_message=e.message, resource_type=r.resource_type, resource_name=r.resource_name)
        for r, e in zip(resources, errors, strict=True)
    ]
    response = response_class(version=ctx.api_version, throttle_time_ms=0, responses=results)
    return Handled(response, errors={r.resource_name: r.error_code for r in results})


def handle_incremental_alter_configs(request: Any, ctx: RequestContext) -> Handled:
    return _alter_configs(request, ctx, IncrementalAlterConfigsResponse, incremental=True)


def handle_alter_configs(request: Any, ctx: RequestContext) -> Handled:
    return _alter_configs(request, ctx, AlterConfigsResponse, incremental=False)


# -- DescribeClientQuotas / AlterClientQuotas ----------------------------------------------------

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


def _matches(entity: QuotaEntity, components: list[Any], strict: bool) -> bool:
    parts = dict(entity.components())
    for c in components:
        if c.entity_type not in parts:
            return False
        name = parts[c.entity_type]
        if c.match_type == MATCH_EXACT and name != c.match:
            return False
        if c.match_type == MATCH_DEFAULT and name is not None:
            return False
    return not strict or len(parts) == len(components)


def handle_describe_client_quotas(request: Any, ctx: RequestContext) -> Handled:
    R = DescribeClientQuotasResponse
    E = R.EntryData
    entries = [
        E(
            entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity.components()],
            values=[E.ValueData(key=key, value=value) for key, value in sorted(values.items())],
        )
        for entity, values in ctx.broker.quotas.entity_quotas().items()
        if _matches(entity, list(request.components), bool(request.strict))
    ]
    response = R(version=ctx.api_version, throttle_time_ms=0, error_code=0, error_message=None, entries=entries)
    return Handled(response)


def handle_describe_quorum(request: Any, ctx: RequestContext) -> Handled:
    """The metadata log's leader and epoch, as the active controller answers a request any node forwards to it: an
    election at each failover and restart (``Cluster.controller_epoch``, from 1 as Kafka's first election). Another
    partition, or another topic, is UNKNOWN_TOPIC_OR_PARTITION; voters and observers are the nodes serving.
    ``fail_next("DescribeQuorum", code)``: the partition's error (NOT_LEADER_OR_FOLLOWER, as a node whose view of
    the quorum lags an election answers)."""
    R = DescribeQuorumResponse
    T = R.TopicData
    P = T.PartitionData
    cluster = ctx.broker.cluster
    with cluster.lock:
        leader, epoch = cluster.controller_id, cluster.controller_epoch + 1
    voters = [P.ReplicaState(replica_id=n, replica_directory_id=None, log_end_offset=0) for n in cluster.live()]
    topics = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            if topic.topic_name == "__cluster_metadata" and partition.partition_index == 0 and not ctx.injected_error:
                data = P(partition_index=0, error_code=0, error_message=None, leader_id=leader, leader_epoch=epoch)
                data.high_watermark, data.current_voters, data.observers = 0, voters, []
            else:
                unknown = ctx.injected_error or kerr.UnknownTopicOrPartitionError.errno
                data = P(partition_index=partition.partition_index, error_code=unknown, error_message=None)
                data.leader_id, data.leader_epoch, data.high_watermark = -1, -1, -1
                data.current_voters, data.observers = [], []
            partitions.append(data)
        topics.append(T(topic_name=topic.topic_name, partitions=partitions))
    return Handled(R(version=ctx.api_version, error_code=0, error_message=None, topics=topics, nodes=[]))


def _alter_entity(entry: Any, ctx: RequestContext, validate_only: bool) -> ApiError:
    """One AlterClientQuotas entry, checked in ``ClientQuotaControlManager``'s order with its messages and
    applied all or nothing: entity, then each key and value; a removal of an unset key is a no-op."""
    ops: dict[str, float | None] = {}
    for op in entry.ops:
        if op.key in ops:
            message = f"Duplicate quota key {op.key} not updating quota for this entity"
            return ApiError.of(kerr.InvalidRequestError, message)
        ops[op.key] = None if op.remove else float(op.value)
    try:
        entity = QuotaEntity.from_components((e.entity_type, e.entity_name) for e in entry.entity)
    except ValueError as exc:
        return ApiError.of(kerr.InvalidRequestError, str(exc))
    for key, value in ops.items():
        error = quota_value_error(key, value) if value is not None else None
        if error:
            return ApiError.of(kerr.InvalidRequestError, error)
    if not validate_only:
        for key, value in ops.items():
            if value is not None or key in QUOTA_KEYS:
                ctx.broker.quotas.set_quota(entity, value, key)
    return ApiError(0)


def handle_alter_client_quotas(request: Any, ctx: RequestContext) -> Handled:
    R = AlterClientQuotasResponse
    E = R.EntryData
    out = []
    seen: set[tuple[tuple[str, str | None], ...]] = set()
    for entry in request.entries:
        components = [(e.entity_type, e.entity_name) for e in entry.entity]
        key = tuple(sorted(components, key=lambda c: (c[0], c[1] or "")))
        if key in seen:
            error = ApiError.of(kerr.InvalidRequestError, "Ignoring duplicate entity")
        else:
            seen.add(key)
            error = _alter_entity(entry, ctx, bool(request.validate_only))
        out.append(
            E(
                error_code=error.code,
                error_message=error.message,
                entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in components],
            )
        )
    return Handled(R(version=ctx.api_version, throttle_time_ms=0, entries=out))


# -- SASL (PLAIN, SCRAM) --------------------------------------------------------------------------


def _sasl_is_kafka_apis(ctx: RequestContext) -> bool:
    """A SASL request that KafkaApis answers (ILLEGAL_SASL_STATE, the connection kept): on a listener without SASL,
    or after authentication unless re-authentication is on (``connections.max.reauth.ms`` > 0; Kafka's default
    is 0, so a second exchange on an authenticated connection is refused so)."""
    if ctx.broker.users is None:
        return True
    reauth_ms = int(ctx.broker.cluster.broker_configs.get("connections.max.reauth.ms", "0").strip())
    return ctx.reauthenticating and reauth_ms <= 0


def handle_sasl_handshake(request: Any, ctx: RequestContext) -> Handled:
    if _sasl_is_kafka_apis(ctx):  # KafkaApis.handleSaslHandshakeRequest: the connection stays open
        return Handled(
            SaslHandshakeResponse(version=ctx.api_version, error_code=kerr.IllegalSaslStateError.errno, mechanisms=[])
        )
    enabled = list(ctx.broker.sasl_mechanisms)
    if request.mechanism not in enabled:
        response = SaslHandshakeResponse(
            version=ctx.api_version, error_code=kerr.UnsupportedSaslMechanismError.errno, mechanisms=enabled
        )
        return Handled(response, close=True)
    response = SaslHandshakeResponse(version=ctx.api_version, error_code=0, mechanisms=enabled)
    return Handled(response, handshake_mechanism=request.mechanism)


def _sasl_answer(ctx: RequestContext, error: int = 0, message: str | None = None, token: bytes = b"") -> Any:
    # Kafka leaves a success's message unset, which SaslAuthenticateResponseData sends as '', not null.
    if message is None and error == 0:
        message = ""
    return SaslAuthenticateResponse(
        version=ctx.api_version, error_code=error, error_message=message, auth_bytes=token, session_lifetime_ms=0
    )


def handle_sasl_authenticate(request: Any, ctx: RequestContext) -> Handled:
    """``SaslServerAuthenticator``: each token to the mechanism's exchange (``_sasl``); its refusal ends the
    connection with SASL_AUTHENTICATION_FAILED and Kafka's message. Never echoes the password."""
    users = ctx.broker.users
    if users is None or _sasl_is_kafka_apis(ctx):  # KafkaApis.handleSaslAuthenticateRequest
        message = "SaslAuthenticate request received after successful authentication"
        return Handled(_sasl_answer(ctx, kerr.IllegalSaslStateError.errno, message))
    mechanism = ctx.sasl_mechanism or "PLAIN"
    principal = ctx.principal if ctx.reauthenticating else None
    token = bytes(request.auth_bytes)
    try:
        if mechanism == "PLAIN":
            return Handled(_sasl_answer(ctx), authenticated_as=evaluate_plain(token, users, principal))
        exchange = ctx.sasl_exchange or new_exchange(mechanism, ctx.broker.scram_credentials, principal)
        answer = exchange.evaluate(token)
    except SaslFailure as exc:
        message = exc.message or generic_failure(mechanism, ctx.reauthenticating)
        return Handled(_sasl_answer(ctx, kerr.SaslAuthenticationFailedError.errno, message), close=True)
    if exchange.user is None:  # SCRAM's first round: the exchange goes on with the connection's next token
        return Handled(_sasl_answer(ctx, token=answer), sasl_exchange=exchange)
    return Handled(_sasl_answer(ctx, token=answer), authenticated_as=exchange.user)


API_SPECS: dict[int, ApiSpec] = {
    spec.request.API_KEY: spec
    for spec in (
        # Kafka 4.4.0's ranges, except ApiVersions v5 (kafka-python 3, the codec, stops at v4) and SaslHandshake
        # v0 (raw SASL tokens after the handshake, which QuotaBroker does not serve).
        ApiSpec(ApiVersionsRequest, ApiVersionsResponse, 0, 4, handle_api_versions),
        ApiSpec(MetadataRequest, MetadataResponse, 0, 13, handle_metadata),
        ApiSpec(CreateTopicsRequest, CreateTopicsResponse, 2, 7, handle_create_topics, 6, 3),  # v0-1 gone in 4.0
        ApiSpec(DeleteTopicsRequest, DeleteTopicsResponse, 1, 6, handle_delete_topics, 5, 2),  # v0 gone in 4.0
        ApiSpec(CreatePartitionsRequest, CreatePartitionsResponse, 0, 3, handle_create_partitions, 3, 1),
        ApiSpec(DescribeConfigsRequest, DescribeConfigsResponse, 1, 4, handle_describe_configs),  # v0 gone in 4.0
        ApiSpec(AlterConfigsRequest, AlterConfigsResponse, 0, 2, handle_alter_configs),
        ApiSpec(
            IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1, handle_incremental_alter_configs
        ),
        ApiSpec(DescribeClientQuotasRequest, DescribeClientQuotasResponse, 0, 1, handle_describe_client_quotas),
        ApiSpec(AlterClientQuotasRequest, AlterClientQuotasResponse, 0, 1, handle_alter_client_quotas),
        ApiSpec(SaslHandshakeRequest, SaslHandshakeResponse, 1, 1, handle_sasl_handshake),
        ApiSpec(SaslAuthenticateRequest, SaslAuthenticateResponse, 0, 2, handle_sasl_authenticate),
        ApiSpec(DescribeQuorumRequest, DescribeQuorumResponse, 0, 2, handle_describe_quorum),
    )
}
