"""One handler per Kafka API the test broker speaks. Messages are kafka-python's protocol classes;
a handler turns a decoded request into a response object plus what the request log records."""

from __future__ import annotations

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
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
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

from throttled_admin.testing._cluster import TOPIC_CONFIG_DEFAULTS, ApiError, Cluster, CreateSpec
from throttled_admin.testing._quotas import QUOTA_KEY, QuotaEntity, QuotaManager, RequestQuota

__all__ = ["API_SPECS", "ApiSpec", "BrokerContext", "Handled", "RequestContext", "api_versions_unsupported"]

ANONYMOUS = "ANONYMOUS"


@dataclass
class BrokerContext:
    """What every handler may read: the cluster state, quotas and the listeners of every node."""

    cluster: Cluster
    quotas: QuotaManager
    enforcement: str  # "by-version" | "strict" | "permissive"
    users: dict[str, str] | None
    addresses: dict[int, tuple[str, int]]  # node id -> (host, port)


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


@dataclass
class Handled:
    response: Any
    mutations: int = 0
    throttle_time_ms: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    authenticated_as: str | None = None  # a successful SaslAuthenticate
    handshake_mechanism: str | None = None
    close: bool = False  # close the connection once the response is sent


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
    if mode == "strict":
        return True
    if mode == "permissive" or spec.strict_since is None:
        return False
    return ctx.api_version >= spec.strict_since


def _request_quota(ctx: RequestContext) -> RequestQuota:
    strict = _is_strict(ctx, API_SPECS[ctx.api_key])
    return ctx.broker.quotas.request_quota(ctx.principal, ctx.client_id, strict=strict)


def _not_controller(ctx: RequestContext) -> ApiError | None:
    if ctx.injected_error is not None:
        return ApiError(ctx.injected_error, "Injected by QuotaBroker fault injection.")
    if ctx.node_id != ctx.broker.cluster.controller_id:
        return ApiError.of(kerr.NotControllerError, "This is not the correct controller for this cluster.")
    return None


def _duplicates(names: list[str]) -> set[str]:
    seen: set[str] = set()
    return {n for n in names if n in seen or seen.add(n)}  # type: ignore[func-returns-value]


DUPLICATE = ApiError.of(kerr.InvalidRequestError, "Duplicate topic name.")


# -- ApiVersions ---------------------------------------------------------------------------------


def _api_keys(response_class: Any) -> list[Any]:
    return [
        response_class.ApiVersion(api_key=key, min_version=spec.min_version, max_version=spec.max_version)
        for key, spec in sorted(API_SPECS.items())
    ]


def handle_api_versions(request: Any, ctx: RequestContext) -> Handled:
    error = ctx.injected_error or 0
    return Handled(
        ApiVersionsResponse(
            version=ctx.api_version, error_code=error, api_keys=_api_keys(ApiVersionsResponse), throttle_time_ms=0
        )
    )


def api_versions_unsupported() -> Any:
    """Kafka answers an ApiVersions version it does not know with a v0 body and UNSUPPORTED_VERSION,
    listing its versions so the client can pick one (KIP-511)."""
    return ApiVersionsResponse(
        version=0, error_code=kerr.UnsupportedVersionError.errno, api_keys=_api_keys(ApiVersionsResponse)
    )


# -- Metadata ------------------------------------------------------------------------------------


def handle_metadata(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    R = MetadataResponse
    brokers = [
        R.MetadataResponseBroker(node_id=node, host=host, port=port, rack=None)
        for node, (host, port) in sorted(ctx.broker.addresses.items())
    ]
    topics = []
    with cluster.lock:
        if request.topics is None or (ctx.api_version == 0 and not request.topics):
            wanted: list[tuple[str | None, uuid.UUID | None]] = [(name, None) for name in cluster.topics]
        else:
            wanted = [(t.name, getattr(t, "topic_id", None)) for t in request.topics]
        for name, topic_id in wanted:
            topic = cluster.topics.get(name) if name else None
            if topic is None and topic_id is not None and topic_id.int != 0:
                topic = cluster.by_id(topic_id)
            if topic is None or ctx.injected_error is not None:
                code = ctx.injected_error or (
                    kerr.UnknownTopicOrPartitionError.errno if name else kerr.UnknownTopicIdError.errno
                )
                topics.append(R.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=[]))
                continue
            partitions = [
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
        controller_id=cluster.controller_id,
        topics=topics,
        authorized_operations=None,
        error_code=0,
    )
    return Handled(response)


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
    ctx: RequestContext, keys: list[str], apply: Apply, *, duplicate: Check, invalid: Check | None = None
) -> _Mutations:
    """ControllerApis' order, per distinct topic in request order: a malformed entry, then a repeated one
    (``duplicate``), then a non-controller node fail uncharged; every other topic is validated, charged
    (KIP-599) and applied by ``apply(index, quota)``."""
    quota = _request_quota(ctx)
    refused = _not_controller(ctx)
    dupes = _duplicates(keys)
    first = {key: index for index, key in reversed(list(enumerate(keys)))}
    indices = sorted(first.values())
    errors, charged = [], 0
    for index in indices:
        error = invalid(index) if invalid is not None else None
        if error is None and keys[index] in dupes:
            error = duplicate(index)
        if error is None and refused is not None:
            error = refused
        if error is None:
            error, cost = apply(index, quota)
            charged += cost
        errors.append(error)
    return _Mutations(indices, errors, charged, quota.throttle_time_ms())


def _handled(response: Any, keys: list[str], done: _Mutations) -> Handled:
    errors = {key: error.code for key, error in zip(keys, done.errors, strict=True)}
    return Handled(response, mutations=done.charged, throttle_time_ms=done.throttle_time_ms, errors=errors)


def _duplicate_name(index: int) -> ApiError:
    return DUPLICATE


def handle_create_topics(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    validate_only = bool(getattr(request, "validate_only", False))
    topics = list(request.topics)

    def apply(index: int, quota: RequestQuota) -> tuple[ApiError, int]:
        t = topics[index]
        spec = CreateSpec(
            t.name,
            t.num_partitions,
            t.replication_factor,
            [a.broker_ids for a in sorted(t.assignments, key=lambda a: a.partition_index)],
            {c.name: c.value for c in t.configs},
        )
        return cluster.create_topic(spec, quota, validate_only=validate_only)

    done = _mutate(ctx, [t.name for t in topics], apply, duplicate=_duplicate_name)
    R = CreateTopicsResponse.CreatableTopicResult
    results = []
    for index, error in zip(done.indices, done.errors, strict=True):
        t = topics[index]
        created = cluster.topics.get(t.name) if error.code == 0 else None
        results.append(
            R(
                name=t.name,
                topic_id=created.topic_id if created else None,
                error_code=error.code,
                error_message=error.message,
                num_partitions=created.partition_count if created else -1,
                replication_factor=len(created.replicas[0]) if created else -1,
                configs=None if created is None else [],
            )
        )
    response = CreateTopicsResponse(version=ctx.api_version, throttle_time_ms=done.throttle_time_ms, topics=results)
    return _handled(response, [r.name for r in results], done)


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
    return _handled(response, [r.name or str(r.topic_id) for r in results], done)


def handle_create_partitions(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    topics = list(request.topics)

    def apply(index: int, quota: RequestQuota) -> tuple[ApiError, int]:
        t = topics[index]
        assignments = None if t.assignments is None else [a.broker_ids for a in t.assignments]
        return cluster.create_partitions(t.name, t.count, assignments, quota, validate_only=bool(request.validate_only))

    done = _mutate(ctx, [t.name for t in topics], apply, duplicate=_duplicate_name)
    R = CreatePartitionsResponse.CreatePartitionsTopicResult
    results = [
        R(name=topics[index].name, error_code=error.code, error_message=error.message)
        for index, error in zip(done.indices, done.errors, strict=True)
    ]
    response = CreatePartitionsResponse(
        version=ctx.api_version, throttle_time_ms=done.throttle_time_ms, results=results
    )
    return _handled(response, [r.name for r in results], done)


# -- DescribeConfigs -----------------------------------------------------------------------------

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SOURCE_TOPIC_CONFIG, SOURCE_DEFAULT = 1, 5


def handle_describe_configs(request: Any, ctx: RequestContext) -> Handled:
    cluster = ctx.broker.cluster
    R = DescribeConfigsResponse.DescribeConfigsResult
    C = R.DescribeConfigsResourceResult
    results = []
    for res in request.resources:
        configs: list[Any] = []
        error = ApiError(0)
        if ctx.injected_error is not None:
            error = ApiError(ctx.injected_error, "Injected by QuotaBroker fault injection.")
        elif res.resource_type == TOPIC_RESOURCE:
            with cluster.lock:
                topic = cluster.topics.get(res.resource_name)
                if topic is None:
                    error = ApiError.of(kerr.UnknownTopicOrPartitionError, f"Topic {res.resource_name} does not exist.")
                else:
                    keys = res.configuration_keys
                    for name, default in sorted(TOPIC_CONFIG_DEFAULTS.items()):
                        if keys is not None and name not in keys:
                            continue
                        value = topic.configs.get(name, default)
                        source = SOURCE_TOPIC_CONFIG if name in topic.configs else SOURCE_DEFAULT
                        configs.append(
                            C(
                                name=name,
                                value=value,
                                read_only=False,
                                is_default=source == SOURCE_DEFAULT,
                                config_source=source,
                                is_sensitive=False,
                                synonyms=[],
                                config_type=0,
                                documentation=None,
                            )
                        )
        elif res.resource_type == BROKER_RESOURCE:
            if not res.resource_name or int(res.resource_name) not in cluster.node_ids:
                error = ApiError.of(kerr.InvalidRequestError, f"Unknown broker {res.resource_name!r}.")
        else:
            error = ApiError.of(kerr.InvalidRequestError, f"Unsupported resource type {res.resource_type}.")
        results.append(
            R(
                error_code=error.code,
                error_message=error.message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=configs,
            )
        )
    response = DescribeConfigsResponse(version=ctx.api_version, throttle_time_ms=0, results=results)
    return Handled(response, errors={r.resource_name: r.error_code for r in results})


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
            values=[E.ValueData(key=QUOTA_KEY, value=rate)],
        )
        for entity, rate in ctx.broker.quotas.quotas().items()
        if _matches(entity, list(request.components), bool(request.strict))
    ]
    response = R(version=ctx.api_version, throttle_time_ms=0, error_code=0, error_message=None, entries=entries)
    return Handled(response)


def handle_alter_client_quotas(request: Any, ctx: RequestContext) -> Handled:
    R = AlterClientQuotasResponse
    E = R.EntryData
    out = []
    for entry in request.entries:
        components = [(e.entity_type, e.entity_name) for e in entry.entity]
        error = ApiError(0)
        try:
            entity = QuotaEntity.from_components(components)
            unsupported = [op.key for op in entry.ops if op.key != QUOTA_KEY]
            if unsupported:
                raise ValueError(f"QuotaBroker models only {QUOTA_KEY}; got {unsupported[0]}")
            if not request.validate_only:
                for op in entry.ops:
                    ctx.broker.quotas.set_quota(entity, None if op.remove else op.value)
        except ValueError as exc:
            error = ApiError.of(kerr.InvalidRequestError, str(exc))
        out.append(
            E(
                error_code=error.code,
                error_message=error.message,
                entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in components],
            )
        )
    return Handled(R(version=ctx.api_version, throttle_time_ms=0, entries=out))


# -- SASL (PLAIN) --------------------------------------------------------------------------------


def handle_sasl_handshake(request: Any, ctx: RequestContext) -> Handled:
    if request.mechanism != "PLAIN":
        response = SaslHandshakeResponse(
            version=ctx.api_version, error_code=kerr.UnsupportedSaslMechanismError.errno, mechanisms=["PLAIN"]
        )
        return Handled(response, close=True)
    response = SaslHandshakeResponse(version=ctx.api_version, error_code=0, mechanisms=["PLAIN"])
    return Handled(response, handshake_mechanism="PLAIN")


def handle_sasl_authenticate(request: Any, ctx: RequestContext) -> Handled:
    users = ctx.broker.users or {}
    parts = bytes(request.auth_bytes).split(b"\x00")
    user = password = None
    if len(parts) == 3:
        user, password = parts[1].decode("utf-8", "replace"), parts[2].decode("utf-8", "replace")
    if ctx.sasl_mechanism != "PLAIN" or user is None or users.get(user) != password:
        response = SaslAuthenticateResponse(
            version=ctx.api_version,
            error_code=kerr.SaslAuthenticationFailedError.errno,
            error_message="Authentication failed: Invalid username or password",
            auth_bytes=b"",
            session_lifetime_ms=0,
        )
        return Handled(response, close=True)
    response = SaslAuthenticateResponse(
        version=ctx.api_version, error_code=0, error_message=None, auth_bytes=b"", session_lifetime_ms=0
    )
    return Handled(response, authenticated_as=user)


API_SPECS: dict[int, ApiSpec] = {
    spec.request.API_KEY: spec
    for spec in (
        ApiSpec(ApiVersionsRequest, ApiVersionsResponse, 0, 3, handle_api_versions),
        ApiSpec(MetadataRequest, MetadataResponse, 0, 12, handle_metadata),
        ApiSpec(CreateTopicsRequest, CreateTopicsResponse, 0, 7, handle_create_topics, 6, 3),
        ApiSpec(DeleteTopicsRequest, DeleteTopicsResponse, 0, 6, handle_delete_topics, 5, 2),
        ApiSpec(CreatePartitionsRequest, CreatePartitionsResponse, 0, 3, handle_create_partitions, 3, 1),
        ApiSpec(DescribeConfigsRequest, DescribeConfigsResponse, 0, 4, handle_describe_configs),
        ApiSpec(DescribeClientQuotasRequest, DescribeClientQuotasResponse, 0, 1, handle_describe_client_quotas),
        ApiSpec(AlterClientQuotasRequest, AlterClientQuotasResponse, 0, 1, handle_alter_client_quotas),
        ApiSpec(SaslHandshakeRequest, SaslHandshakeResponse, 1, 1, handle_sasl_handshake),
        ApiSpec(SaslAuthenticateRequest, SaslAuthenticateResponse, 0, 2, handle_sasl_authenticate),
    )
}
