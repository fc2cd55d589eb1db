"""The demo's fleet: tenants with small, different quotas on two embedded QuotaBroker clusters, the plan
that provisions their topics, and what the brokers' request logs say each tenant was admitted."""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from throttled_admin.provisioning import PlanRow, Profile
from throttled_admin.provisioning._executor import BURST_WINDOWS

if TYPE_CHECKING:
    from throttled_admin.testing import QuotaBroker

__all__ = [
    "BASELINE",
    "CLUSTERS",
    "TENANTS",
    "Admitted",
    "Baseline",
    "Tenant",
    "admitted_series",
    "embedded_fleet",
    "fleet_plan",
    "steady_rate",
]


@dataclass(frozen=True)
class Tenant:
    """``rate``: the broker's quota for the tenant's SASL user (mutations/s); ``pace``: the rate its
    profile gives the client, or None to let the client learn it from throttles."""

    name: str
    rate: float
    pace: float | None
    share: float  # of the plan's topics
    partitions: int


TENANTS = (
    Tenant("payments", 5.0, 5.0, 0.3, 2),
    Tenant("search", 10.0, 10.0, 0.3, 3),
    Tenant("analytics", 20.0, 20.0, 0.4, 3),
)
CLUSTERS = ("east", "west")


@dataclass(frozen=True)
class Baseline:
    """What pacing is measured against: ``tenant``'s rows of the plan on ``cluster``, sent at once by bare
    confluent-kafka under a SASL user of their own (``user``) with the same quota, on the same broker."""

    user: str
    cluster: str
    tenant: Tenant


BASELINE = Baseline("payments-unpaced", "east", TENANTS[0])
SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"}


def profile_name(cluster: str, tenant: str) -> str:
    return f"{cluster}-{tenant}"


def fleet_plan(topics: int, profiles: dict[str, Profile], prefix: str = "demo") -> list[PlanRow]:
    """About ``topics`` ensure rows: each tenant's share, split evenly over the clusters. Profiles not
    named cluster-tenant (a --profiles file) get an even share with the middle tenant's layout."""
    rows: list[PlanRow] = []
    known = {profile_name(c, t.name): t for c in CLUSTERS for t in TENANTS}
    if set(profiles) <= set(known):
        for name in profiles:
            tenant = known[name]
            count = math.ceil(topics * tenant.share / len(CLUSTERS))
            rows += [
                PlanRow(name, "ensure", f"{prefix}.{tenant.name}.{i:04d}", tenant.partitions) for i in range(count)
            ]
        return rows
    per_profile = math.ceil(topics / len(profiles))
    for name in profiles:
        rows += [PlanRow(name, "ensure", f"{prefix}.{name}.{i:04d}", 3) for i in range(per_profile)]
    return rows


@contextmanager
def embedded_fleet() -> Iterator[tuple[dict[str, QuotaBroker], dict[str, Profile], dict[str, str]]]:
    """Two QuotaBroker clusters with SASL/PLAIN; every tenant has a user (random password) and its quota
    on both, and the baseline's user its tenant's quota on its cluster. Yields (cluster name -> broker, profile
    name -> Profile, the baseline's librdkafka conf)."""
    from throttled_admin.testing import QuotaBroker  # the testing extra: only for the embedded fleet

    passwords = {t.name: secrets.token_urlsafe(16) for t in TENANTS}
    passwords[BASELINE.user] = secrets.token_urlsafe(16)
    with ExitStack() as stack:
        brokers = {c: stack.enter_context(QuotaBroker(users=passwords)) for c in CLUSTERS}
        profiles: dict[str, Profile] = {}
        for cluster, broker in brokers.items():
            for tenant in TENANTS:
                broker.set_quota(user=tenant.name, controller_mutation_rate=tenant.rate)
                conf = {
                    "bootstrap.servers": broker.bootstrap_servers,
                    "client.id": f"demo-{tenant.name}",
                    **SASL,
                    "sasl.username": tenant.name,
                    "sasl.password": passwords[tenant.name],
                }
                name = profile_name(cluster, tenant.name)
                profiles[name] = Profile(name, conf, tenant.pace)
        baseline = brokers[BASELINE.cluster]
        baseline.set_quota(user=BASELINE.user, controller_mutation_rate=BASELINE.tenant.rate)
        unpaced = {
            "bootstrap.servers": baseline.bootstrap_servers,
            "client.id": "demo-unpaced",
            **SASL,
            "sasl.username": BASELINE.user,
            "sasl.password": passwords[BASELINE.user],
        }
        yield dict(brokers), profiles, unpaced


@dataclass(frozen=True)
class Admitted:
    """One quota entity's admitted mutations: (seconds since ``origin``, cumulative count) steps, and the
    throttles the broker answered it with. ``tenant`` is the SASL user (the baseline's user for the baseline),
    ``rate`` its quota."""

    cluster: str
    tenant: str
    rate: float
    steps: list[tuple[float, int]]
    requests: int
    throttled_responses: int
    max_throttle_ms: int

    @property
    def paced(self) -> bool:
        return self.tenant != BASELINE.user


def steady_rate(steps: list[tuple[float, int]], rate: float) -> float | None:
    """The rate after the burst: the mutations admitted past a full bucket of 11 R (KIP-599's burst, which the
    broker admits at once) per second from the first admission to the last; R for a run on its quota envelope.
    None when they all came at once (or all fit in the burst)."""
    if not steps:
        return None
    took, past_burst = steps[-1][0] - steps[0][0], steps[-1][1] - BURST_WINDOWS * rate
    return past_burst / took if took > 0 and past_burst > 0 else None


def admitted_series(brokers: dict[str, QuotaBroker], origin: float) -> list[Admitted]:
    """From the brokers' request logs: every CreateTopics' charged mutations at the time the broker
    processed it (``received_at``), per (cluster, SASL user)."""
    series = []
    for cluster, broker in brokers.items():
        log = [r for r in broker.request_log() if r.api_name == "CreateTopics"]
        users = [(tenant.name, tenant.rate) for tenant in TENANTS]
        if cluster == BASELINE.cluster and any(r.principal == BASELINE.user for r in log):
            users.append((BASELINE.user, BASELINE.tenant.rate))
        for user, rate in users:
            mine = [r for r in log if r.principal == user]
            total, steps = 0, []
            for record in mine:
                total += record.mutations
                steps.append((record.received_at - origin, total))
            throttled = [r.throttle_time_ms for r in mine if r.throttle_time_ms > 0]
            series.append(Admitted(cluster, user, rate, steps, len(mine), len(throttled), max(throttled, default=0)))
    return series
