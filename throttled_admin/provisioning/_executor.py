"""Apply one group's rows (one cluster, one principal: one quota entity) with one ThrottledAdminClient
paced to the entity's quota. Never raises for a row: every row ends with a result."""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException

# The public names live in confluent_kafka.admin, which re-exports them without __all__ (mypy --strict).
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType
from opentelemetry.metrics import MeterProvider

from throttled_admin import (
    MutationQuota,
    NewPartitions,
    NewTopic,
    OutcomeUnknownError,
    ThrottledAdminClient,
    ThrottlingQuotaExceededException,
)
from throttled_admin._client import ReadingClient
from throttled_admin._driver.futures import TopicFuture
from throttled_admin._driver.metadata_read import ContactWatch, read_failure
from throttled_admin._kafka.topic_configs import TOPIC_CONFIGS, config_problem
from throttled_admin._kafka.topic_names import collision_key
from throttled_admin.provisioning._brokers import away_refusal, registered_brokers, wait_for_brokers
from throttled_admin.provisioning._budget import Budget, check_timeout
from throttled_admin.provisioning._cluster_read import names_to_read, read_cluster_topics
from throttled_admin.provisioning._decide import Change, TopicState, decide
from throttled_admin.provisioning._plan import PlanRow, row_problem
from throttled_admin.provisioning._profile import Profile, redact
from throttled_admin.provisioning._progress import AdmittedRate, Progress, ProgressCallback
from throttled_admin.provisioning._results import PLAN_CONFLICT, PLAN_ERROR, RowResult, as_given
from throttled_admin.provisioning._standing import owed_ms
from throttled_admin.provisioning._stop import NOT_COMPARED, STOPPED, PlanStop, _Member, wait_unless_stopped

__all__ = ["BURST_WINDOWS", "execute", "metric_attributes", "predicted_seconds", "run_group"]

log = logging.getLogger("throttled_admin.provisioning")

#: Kafka's burst: controller.quota.window.num (11) one-second windows of the rate.
BURST_WINDOWS = 11
#: A change is sent again after an unknown outcome (the cluster read shows it missing) until this many of its
#: attempts had no definite answer; re-sends after a wait for a node that was away, or for the quota, count apart.
MAX_ATTEMPTS = 3
#: Verifying reads the cluster (metadata, configs) up to this many times before a row gives up.
READ_ATTEMPTS = 3
#: While rows are pending, how often the group looks for mutations the broker has admitted (progress).
PROGRESS_POLL_S = 0.1
_UNKNOWN_CODES = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError.REQUEST_TIMED_OUT)
_GROWS = ("create", "grow")  # the changes that place replicas on brokers


def predicted_seconds(mutations: int, rate: float | None, burst: float | None = None) -> float | None:
    """When the last of ``mutations`` is admitted by a full KIP-599 bucket: T = max(0, M - B) / R."""
    if rate is None or rate <= 0:
        return None
    burst = BURST_WINDOWS * rate if burst is None else burst
    return max(0.0, mutations - burst) / rate


def _error(exc: BaseException | None) -> tuple[int | None, str]:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return int(exc.args[0].code()), str(exc.args[0].str())
    return None, f"{type(exc).__name__}: {exc}"


def _error_name(exc: BaseException) -> str:
    """A failure's ``error_name``: Kafka's name of its code, else the exception's type."""
    code = _error(exc)[0]
    return KafkaError(code).name() if code is not None else type(exc).__name__


def _metric(metrics: dict[str, float], name: str) -> float:
    value = metrics.get(name, 0.0)
    return 0.0 if value is None or math.isnan(value) else float(value)


@dataclass
class _Run:
    """One row on its way: the change it needs and what has happened so far."""

    index: int
    change: Change
    started_at: float = 0.0
    backoff_at_start_ms: float = 0.0
    attempts: int = 0
    pending: int = 0
    error: tuple[int | None, str] | None = None  # a definite failure
    error_name: str | None = None  # its name when it has no Kafka code
    unknown: tuple[int | None, str] | None = None  # the last answer that left the outcome unknown
    unknowns: int = 0  # attempts with no definite answer (lost, or PossiblyAppliedError): up to MAX_ATTEMPTS
    verify: bool = False  # an outcome is unknown: read the cluster before deciding
    # Kafka's answer that the cluster already had the change (TOPIC_ALREADY_EXISTS, a delete's UNKNOWN_TOPIC)
    existed: tuple[int | None, str] | None = None
    notes: list[str] = field(default_factory=list)
    held_ms: int | None = None  # the quota held it past the budget (ThrottlingQuotaExceededException): for how long
    budget_moves: int = 0  # how often a default budget moved on for it (_held_again)
    debt_ms: int | None = None  # the quota's hold when it was given up: its result's quota_debt_ms
    # given up (not_sent): when the quota would have admitted every row left, in seconds from the group's start (its
    # result's predicted_s); None when the rate is unknown
    needed_s: float | None = None
    away: bool = False  # refused INVALID_REPLICATION_FACTOR while a node was away: waits for it (_await_brokers)
    withdrawn: bool = False  # a change of it not sent, for the plan's stop (withdrawn, or never handed over)
    # the refusal (quota, node away: nothing applied) of the attempt before the one sent again, until answered
    refused: tuple[int | None, str] | None = None


class _Group:
    """The state of one execute() call, so the steps below stay small."""

    def __init__(
        self,
        rows: Sequence[PlanRow],
        profile: Profile,
        progress: ProgressCallback | None,
        timeout_s: float | None = None,
        on_result: Callable[[int, RowResult], None] | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.timeout_s = timeout_s
        self.budget = Budget(timeout_s, None, self.started)  # set again once the rows' mutations are known
        self.brokers_at_start: int | None = None  # the brokers the cluster had at the group's first read
        self.rows = rows
        self.profile = profile
        self.secrets = profile.secrets()
        self.progress = progress
        self.on_result = on_result
        self.results: dict[int, RowResult] = {}
        self.ended: Counter[str] = Counter()  # the results' statuses, counted as they come (the progress reports)
        self.admitted = AdmittedRate()  # the client's mutations-admitted-total over time
        self.heard = (0.0,) * len(_HEARD)  # the broker's throttles and refusals, as last reported (``report``)
        self.metrics: dict[str, float] = {}  # the client's, as last read: the last report's, once it is closed
        self.watch = ContactWatch()  # what librdkafka says about the connections of the group's client
        self.runs: dict[int, _Run] = {}  # by row index, once the rows are decided
        self.futures: dict[Future[Any], tuple[_Run, str]] = {}  # the changes handed to the client, not yet settled
        self.lock = threading.Lock()  # a hand-over to the client against a stop (stop()), and ``futures``
        self.stopping = threading.Event()  # set by a stop: the group's waits for the cluster wake on it
        self.unsent: set[int] = set()  # the rows a stop found never sent

    def stop(self) -> list[int]:
        """Hand nothing more to the client and withdraw every change it has not sent yet (``PlanStop``, from another
        thread): the rows never sent, by index (those of an earlier stop too). Their results come as the group's
        thread settles them."""
        with self.lock:
            self.stopping.set()
            withdrawn = Counter(run.index for future, (run, _) in list(self.futures.items()) if future.cancel())
            self.unsent.update(
                index
                for index in range(len(self.rows))
                if index not in self.results
                and ((run := self.runs.get(index)) is None or run.attempts <= withdrawn[index])
            )
            return sorted(self.unsent)

    @property
    def stopped(self) -> bool:
        """The plan's stop came: nothing more is handed to the client."""
        return self.stopping.is_set()

    def finish(self, index: int, status: str, **fields: Any) -> None:
        row = self.rows[index]
        message = fields.pop("error_message", None)
        if fields.get("detail"):  # a dry run's may quote an exception (_standing)
            fields["detail"] = redact(fields["detail"], self.secrets)
        if status == "failed" and fields.get("error_name") is None:
            code = fields.get("error_code")
            fields["error_name"] = KafkaError(code).name() if code is not None else "UNKNOWN_ERROR"
        if (before := self.results.get(index)) is not None:
            self.ended[before.status] -= 1
        self.ended[status] += 1
        self.results[index] = RowResult(
            cluster=row.cluster,
            topic=as_given(row.topic),
            action=as_given(row.action),
            status=status,
            error_message=None if message is None else redact(message, self.secrets),
            **fields,
        )
        if self.on_result is not None:
            _call_user(self.on_result, index, self.results[index])

    def fail_all(self, message: str, code: int | None = None, name: str | None = None, status: str = "failed") -> None:
        now = time.time()
        for index in range(len(self.rows)):
            if index not in self.results:
                self.finish(
                    index,
                    status,
                    error_code=code,
                    error_name=name,
                    error_message=message,
                    started_at=now,
                    finished_at=now,
                )

    def report(
        self,
        admin: ThrottledAdminClient | None,
        metrics: dict[str, float] | None = None,
        *,
        only_if_admitted: bool = False,
    ) -> None:
        """Progress as the client's metrics have it: mutations the broker admitted (counted as its answers come,
        not when rows finish, which may be seconds later with ``wait_for_metadata``) and their rate over the
        quota's window. ``metrics``: the client's, when just read; with no ``admin`` (closed), as last read.
        ``only_if_admitted``: nothing when no mutation was admitted, and the broker throttled or refused nothing new,
        since the last report (refused rows wait out a throttle: the report says so then, not when the wait ends)."""
        if self.progress is None:
            return
        if metrics is None:
            metrics = admin.metrics() if admin is not None else self.metrics
        self.metrics = metrics
        now = time.monotonic()
        before = self.admitted.total
        if "mutations-admitted-total" in metrics:
            self.admitted.update(int(_metric(metrics, "mutations-admitted-total")), now)
        heard = tuple(_metric(metrics, name) for name in _HEARD)
        if only_if_admitted and self.admitted.total == before and heard == self.heard:
            return
        self.heard = heard
        rate = metrics.get("mutation-rate")
        quota = self.profile.mutation_rate if rate is None or math.isnan(rate) else float(rate)
        _call_user(
            self.progress,
            Progress(
                cluster=self.profile.name,
                rows_done=len(self.results),
                rows_total=len(self.rows),
                mutations_admitted=self.admitted.total,
                mutations_per_s=self.admitted.rate(now),
                quota_rate=quota,
                throttle_time_ms=round(_metric(metrics, "throttle-time-max")),
                last_throttle_ms=round(_metric(metrics, "throttle-time-last")),
                throttled_responses=int(_metric(metrics, "throttled-response-total")),
                refused_by_quota=int(_metric(metrics, "quota-violation-total")),
                rows_not_sent=self.ended["not_sent"],
                rows_failed=self.ended["failed"],
            ),
        )


#: The client's metrics of the broker's throttles and refusals: a change is reported even with nothing admitted.
_HEARD = ("throttled-response-total", "quota-violation-total")  # (throttle-time-max: a windowed max, it decays)


def _call_user(callback: Callable[..., None], *args: Any) -> None:
    """The application's ``progress`` or ``on_result``: an exception it raises is logged and the group goes on, every
    row to its result (it ended the group's run, whose rows then failed as "unexpected error", and telling them so
    raised it again, out of ``execute`` and ``apply_plan``)."""
    try:
        callback(*args)
    except Exception:
        log.exception("a progress or on_result callback raised; the plan goes on")


def _read_configs(admin: ThrottledAdminClient, names: Iterable[str], timeout_s: float) -> dict[str, dict[str, str]]:
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in sorted(set(names))]
    if not resources:
        return {}
    configs: dict[str, dict[str, str]] = {}
    for resource, future in admin.describe_configs(resources, request_timeout=timeout_s).items():
        try:
            entries = future.result()
        except KafkaException as exc:  # unknown: the alter then sets every planned value
            log.debug("describe_configs %s failed: %s", resource.name, _error(exc)[1])
            continue
        configs[resource.name] = {name: entry.value for name, entry in entries.items() if entry.value is not None}
    return configs


def _known_config_names(admin: ThrottledAdminClient, topics: Iterable[str], timeout_s: float) -> set[str]:
    """The topic config names the cluster knows, from DescribeConfigs of one of its topics (no quota cost).
    A cluster with no topic it lets us describe is taken to know Kafka 4.4's."""
    for name in sorted(topics)[:3]:
        resource = ConfigResource(ResourceType.TOPIC, name)
        try:
            return set(admin.describe_configs([resource], request_timeout=timeout_s)[resource].result())
        except KafkaException as exc:  # e.g. not authorized for this topic: try another
            log.debug("describe_configs %s failed: %s", name, _error(exc)[1])
    return set(TOPIC_CONFIGS)


def metric_attributes(profile: Profile) -> dict[str, str]:
    """What labels a group's metric series: the profile's cluster name and the principal's user name (not a
    secret), the same on every run, so a fleet's dashboard tells tenants and clusters apart without a new series
    per run."""
    labels = {"throttled_admin.cluster": profile.name}
    if profile.principal:
        labels["throttled_admin.principal"] = profile.principal
    return labels


def _new_client(
    profile: Profile, watch: ContactWatch, meter_provider: MeterProvider | None, dry_run: bool = False
) -> ThrottledAdminClient:
    """One client per quota entity, paced to the profile's rate (learned from throttles when None), its
    connections watched by ``watch`` so a read of the cluster fails fast (a conf's own callbacks still run). A dry
    run's client changes nothing (``ReadingClient``)."""
    conf: dict[str, Any] = dict(profile.conf)
    theirs_error, theirs_throttle = conf.get("error_cb"), conf.get("throttle_cb")

    def on_error(error: KafkaError) -> None:
        watch.on_error(error)
        if callable(theirs_error):
            theirs_error(error)

    def on_throttle(event: Any) -> None:
        watch.on_throttle(event)
        if callable(theirs_throttle):
            theirs_throttle(event)

    conf["error_cb"], conf["throttle_cb"] = on_error, on_throttle
    return (ReadingClient if dry_run else ThrottledAdminClient)(
        conf,
        mutation_quota=MutationQuota(rate=profile.mutation_rate),
        meter_provider=meter_provider,
        metric_attributes=metric_attributes(profile),
    )


def execute(
    rows: Sequence[PlanRow],
    profile: Profile,
    *,
    allow_delete: bool = False,
    dry_run: bool = False,
    progress: ProgressCallback | None = None,
    meter_provider: MeterProvider | None = None,
    timeout_s: float | None = None,
    on_result: Callable[[int, RowResult], None] | None = None,
    stop: PlanStop | None = None,
) -> list[RowResult]:
    """Apply ``rows`` (one group: they all use ``profile``) and return one result per row, in order.

    Reads the cluster's topics (and the configs of topics whose rows set configs), decides per row, then
    sends creates, grows, deletes and config changes through one client paced with ``MutationQuota``.
    A create whose outcome is unknown is checked by reading the cluster again (and re-sent only if the
    topic is missing). ``dry_run``: nothing is changed; rows that need a change are ``planned`` with
    ``detail`` and ``predicted_s``. ``meter_provider``: where the client's metrics go (else the global provider),
    labelled with ``metric_attributes(profile)``. ``timeout_s``: the group's time budget from its start (default:
    twice the predicted time plus a minute, moved on by a throttle the client learns, 3 times a row at most); rows
    the quota would hold past it end ``not_sent``. ``on_result(index, result)``: as each row's result is known.
    ``stop``: a ``PlanStop`` that can end the group early, sending nothing more."""
    member = None if stop is None else stop._member(range(len(rows)))
    return run_group(
        rows,
        profile,
        allow_delete=allow_delete,
        dry_run=dry_run,
        progress=progress,
        meter_provider=meter_provider,
        timeout_s=timeout_s,
        on_result=on_result,
        member=member,
    )


def run_group(
    rows: Sequence[PlanRow],
    profile: Profile,
    *,
    allow_delete: bool,
    dry_run: bool,
    progress: ProgressCallback | None,
    meter_provider: MeterProvider | None,
    timeout_s: float | None,
    on_result: Callable[[int, RowResult], None] | None,
    member: _Member | None,
) -> list[RowResult]:
    """``execute``, as one group of ``apply_plan``'s: ``member``, its place in the plan's stop."""
    group = _Group(list(rows), profile, progress, check_timeout(timeout_s), on_result)
    log.debug("group %s: %d rows (dry_run=%s, allow_delete=%s)", profile.name, len(group.rows), dry_run, allow_delete)
    candidates = _check_rows(group)
    if member is not None and not member.join(group):
        group.fail_all("not sent: the plan was stopped first", name=STOPPED, status="not_sent")
    elif candidates:
        try:
            admin = _new_client(profile, group.watch, meter_provider, dry_run)
        except Exception as exc:  # e.g. an invalid librdkafka setting: every row learns why
            group.fail_all(f"cannot create the admin client: {_error(exc)[1]}", _error(exc)[0], _error_name(exc))
        else:
            with admin:
                try:
                    _run_group(group, admin, candidates, allow_delete=allow_delete, dry_run=dry_run)
                except Exception as exc:  # a bug of ours must still leave every row with a result
                    log.exception("group %s: unexpected error", profile.name)
                    group.fail_all(f"unexpected error while applying the plan: {_error(exc)[1]}", name=_error_name(exc))
                if not admin.closed:  # the last report's: the broker's rate and throttles, not the profile's
                    group.metrics = admin.metrics()
    group.report(None)
    log.debug("group %s: done", profile.name)
    return [group.results[i] for i in range(len(group.rows))]


def _check_rows(group: _Group) -> list[int]:
    """Rows that can be applied; the rest fail now, before anything is sent."""
    candidates: list[int] = []
    seen: dict[str, int] = {}
    keys: dict[str, str] = {}
    now = time.time()
    for index, row in enumerate(group.rows):
        problem = row_problem(row)
        if problem is None and row.topic in seen:
            first = seen[row.topic]
            problem = ("topic", f"{row.topic!r} is already planned by {group.rows[first].where(first)}")
        if problem is None and keys.get(collision_key(row.topic), row.topic) != row.topic:
            other = keys[collision_key(row.topic)]
            problem = ("topic", f"{row.topic!r} collides with {other!r} ('.' and '_' are the same to Kafka)")
        if problem is not None:
            field_name, message = problem
            group.finish(
                index,
                "failed",
                error_name=PLAN_ERROR,
                error_message=f"{row.where(index)}: field {field_name!r}: {message}",
                started_at=now,
                finished_at=now,
            )
            continue
        seen[row.topic] = index
        keys.setdefault(collision_key(row.topic), row.topic)
        candidates.append(index)
    return candidates


def _read_s(group: _Group) -> float:
    """How long a read of the cluster may wait for its answer now: the profile's ``request_timeout_s``, within what
    is left of the group's budget (``apply --timeout 3`` on a cluster that never answers: 3 s in all)."""
    return group.budget.cap_s(group.profile.request_timeout_s, time.monotonic())


def _run_group(
    group: _Group, admin: ThrottledAdminClient, candidates: list[int], *, allow_delete: bool, dry_run: bool
) -> None:
    try:
        # The group's own names and what may collide with them, not every topic of the cluster (_cluster_read).
        topics = read_cluster_topics(
            admin, group.watch, names_to_read(group.rows[i] for i in candidates), _read_s(group)
        )
        wanted = [group.rows[i].topic for i in candidates if group.rows[i].configs and group.rows[i].topic in topics]
        configs = _read_configs(admin, wanted, _read_s(group))
    except Exception as exc:  # nothing has been sent: every row says why
        code, why = read_failure(exc)  # "cannot connect to ...", the SASL message, "cannot read the cluster's ..."
        group.fail_all(f"not sent: {why}", code, _error_name(exc))
        return
    existing_keys = {collision_key(name): name for name in topics}
    runs: list[_Run] = []
    for index in candidates:
        row = group.rows[index]
        state = topics.get(row.topic)
        if state is not None and row.topic in configs:
            state = TopicState(state.partitions, state.replication_factor, configs[row.topic])
        change = decide(row, state, allow_delete=allow_delete)
        other = existing_keys.get(collision_key(row.topic))
        if change.kind == "create" and other is not None and other != row.topic:
            change = Change(
                row,
                "fail",
                reason=f"{row.topic!r} collides with the existing topic {other!r}",
                error_name=PLAN_CONFLICT,
            )
        runs.append(_Run(index, change))
        group.runs[index] = runs[-1]
    # Creates first, then grows, then deletes: the order the plan's new topics become usable.
    order = {"create": 0, "grow": 1, "reconfigure": 2, "delete": 3}
    runs.sort(key=lambda r: (order.get(r.change.kind, 9), r.index))
    if dry_run:
        try:
            _check_configs(group, admin, runs, topics)
        except Exception as exc:
            group.fail_all(
                f"cannot read the cluster's topic configs: {_error(exc)[1]}", _error(exc)[0], _error_name(exc)
            )
            return
        creates = [group.rows[r.index].topic for r in runs if r.change.kind == "create"]
        needed = any(r.change.mutations for r in runs if r.change.kind not in ("none", "fail"))
        debt = owed_ms(admin, creates[0] if creates else None, _read_s(group)) if needed else (0, None)
        _plan_only(group, runs, *debt)
        return
    now = time.time()
    for run in runs:
        if run.change.kind in ("none", "fail"):
            status = "unchanged" if run.change.kind == "none" else "failed"
            message = run.change.reason if run.change.kind == "fail" else None
            group.finish(
                run.index,
                status,
                error_name=run.change.error_name,
                error_message=message,
                started_at=now,
                finished_at=now,
                detail=run.change.detail,
            )
    applied = [r for r in runs if r.change.kind not in ("none", "fail")]
    total = sum(r.change.mutations for r in applied)
    group.budget = Budget(group.timeout_s, predicted_seconds(total, group.profile.mutation_rate), group.started)
    _apply(group, admin, applied)


def _check_configs(group: _Group, admin: ThrottledAdminClient, runs: list[_Run], topics: dict[str, TopicState]) -> None:
    """A dry run's config check: a row setting a config name the cluster does not know, or a value Kafka
    refuses, fails as the real run would, with Kafka's message (INVALID_CONFIG)."""
    wanted = [r for r in runs if r.change.kind in ("create", "grow", "reconfigure") and group.rows[r.index].configs]
    if not wanted:
        return
    # Any topic of the cluster tells the config names it knows: one of the group's, else one the cluster lists.
    described = topics or read_cluster_topics(admin, group.watch, None, _read_s(group))
    known = _known_config_names(admin, described, _read_s(group))
    for run in wanted:
        problem = config_problem(group.rows[run.index].configs or {}, known)
        if problem is not None:
            run.change = Change(group.rows[run.index], "fail", reason=problem)
            run.error = (int(KafkaError.INVALID_CONFIG), problem)


def _plan_only(group: _Group, runs: list[_Run], debt_ms: int | None, unknown: str | None) -> None:
    """Each row ``planned``, ``predicted_s`` when its mutations would be admitted: from a full burst, or after the
    principal's debt ``debt_ms`` (with no burst left), which each row's ``quota_debt_ms`` reports. What holds for the
    group (the debt, an unknown rate or debt) is said in the first planned row's ``detail`` only, not down a table."""
    rate = group.profile.mutation_rate
    total = 0
    now = time.time()
    said: list[str] = []
    if predicted_seconds(0, rate) is None:
        said.append("(quota rate unknown: no prediction)")
    if debt_ms:
        said.append(f"(after the principal's quota debt of {debt_ms} ms)")
    if unknown:
        said.append(f"({unknown})")
    for run in runs:
        change = run.change
        if change.kind in ("none", "fail"):
            status = "unchanged" if change.kind == "none" else "failed"
            code = run.error[0] if run.error is not None else None
            group.finish(
                run.index,
                status,
                error_code=code,
                error_name=change.error_name,
                error_message=change.reason,
                started_at=now,
                finished_at=now,
                detail=change.detail,
            )
            continue
        total += change.mutations
        predicted = predicted_seconds(total, rate, burst=0.0 if debt_ms else None)
        if predicted is not None and debt_ms:
            predicted += debt_ms / 1000
        notes, said = [change.detail, *said], []
        group.finish(
            run.index,
            "planned",
            started_at=now,
            finished_at=now,
            mutations=change.mutations,
            detail=" ".join(notes),
            predicted_s=predicted,
            quota_debt_ms=debt_ms or None,
        )
    log.debug(
        "group %s: dry run, %d mutations, predicted %s s", group.profile.name, total, predicted_seconds(total, rate)
    )


def _rest_predicted_s(group: _Group, admin: ThrottledAdminClient, runs: Iterable[_Run]) -> float | None:
    """When the last of ``runs``' mutations would be admitted at the configured (or learned) rate from an empty
    bucket: after a throttle there is no burst left."""
    rate = group.profile.mutation_rate
    if rate is None:
        learned = admin.metrics().get("mutation-rate")
        rate = None if learned is None or math.isnan(learned) else float(learned)
    mutations = sum(r.change.mutations for r in runs if r.index not in group.results)
    return predicted_seconds(mutations, rate, burst=0.0)


def _probe(runs: list[_Run]) -> _Run | None:
    """The row sent alone first while the principal's standing is unknown (issue 38): the one of fewest mutations,
    so that a principal that owes quota is told by one small answer, not by the whole plan deepening its debt. None
    when at most one row costs quota."""
    costly = [run for run in runs if run.change.kind in ("create", "grow", "delete")]
    return min(costly, key=lambda run: (run.change.mutations, run.index)) if len(costly) > 1 else None


def _apply(group: _Group, admin: ThrottledAdminClient, runs: list[_Run]) -> None:
    budget = group.budget
    request_timeout = group.profile.request_timeout_s
    futures = group.futures
    if any(run.change.kind in ("create", "grow") for run in runs):
        # The count the group's first read already had (its first contact's DescribeCluster), else one read now.
        known = group.watch.brokers
        group.brokers_at_start = (
            known if known is not None else registered_brokers(admin, request_timeout, group.stopping)
        )

    def start(run: _Run, backoff_ms: float) -> None:
        run.started_at = run.started_at or time.time()
        if not run.attempts:
            run.backoff_at_start_ms = backoff_ms
        run.attempts += 1
        run.pending += 1

    def submit(kind: str, batch: list[_Run], call: Any, items: list[Any], **kwargs: Any) -> list[Future[Any]]:
        if not batch:
            return []
        backoff_ms = _metric(admin.metrics(), "backoff-time-ms-total")  # one read a call, not one a topic
        with group.lock:  # (a stop withdraws what was handed over before it, and nothing is handed over after)
            if group.stopped:
                for run in batch:
                    run.withdrawn = True
                return []
            for run in batch:
                start(run, backoff_ms)
            try:
                result = call(items, **kwargs)
            except Exception as exc:  # the client's own input check: no request was sent
                for run in batch:
                    run.pending -= 1
                    run.error, run.error_name = _error(exc), _error_name(exc)
                return []
            by_name = {_name(key): value for key, value in result.items()}
            for run in batch:
                futures[by_name[group.rows[run.index].topic]] = (run, kind)
        return [by_name[group.rows[run.index].topic] for run in batch]

    def alter(batch: list[tuple[_Run, dict[str, str]]]) -> list[Future[Any]]:
        # Not paced and without the client's deadline: its wait for an answer is what is left of the budget.
        resources = [_alter_resource(group.rows[r.index].topic, values) for r, values in batch]
        limit = budget.cap_s(request_timeout, time.monotonic())
        return submit("alter", [r for r, _ in batch], admin.incremental_alter_configs, resources, request_timeout=limit)

    def send(work: list[tuple[_Run, Change]]) -> None:
        """Send each run's ``change`` (the whole change, or what a verification found still missing)."""
        creates = [run for run, change in work if change.kind == "create"]
        grows = [run for run, change in work if change.kind == "grow"]
        # A grow's config change goes once the grow is admitted (_drain's ``then``): a grow held past the budget then
        # leaves its whole row not sent.
        alters = [(run, change.alter) for run, change in work if change.kind == "reconfigure"]
        deletes = [run for run, change in work if change.kind == "delete"]
        topics = [_new_topic(group.rows[r.index]) for r in creates]
        # One deadline for what is left of the group's budget: the client refuses at once, sending nothing, what
        # the broker's throttle or the pacing would hold past it.
        timeout_ms = budget.timeout_ms(time.monotonic())
        # A pipeline writes to what it provisions: a change is done when every broker shows it (wait_for_metadata).
        wait = {"request_timeout": request_timeout, "timeout_ms": timeout_ms, "wait_for_metadata": True}
        submit("create", creates, admin.create_topics, topics, **wait)
        grown = [NewPartitions(group.rows[r.index].topic, group.rows[r.index].partitions or 0) for r in grows]
        submit("grow", grows, admin.create_partitions, grown, **wait)
        alter(alters)
        names = [group.rows[r.index].topic for r in deletes]
        submit("delete", deletes, admin.delete_topics, names, **wait)

    first = _probe(runs)
    if first is not None:  # its answer tells the principal's standing: the rest then waits for any debt it owes
        before = admin.metrics()
        send([(first, first.change)])
        # Every broker's ids of the other creates' names, read while the first row is answered (its own read goes
        # first): the rows sent after its answer then go at once, not after a read of their own before their send
        # (wait_for_metadata's incarnations: 0.4 s an entity before its burst in issue 40's fleet).
        admin._read_ahead([group.rows[r.index].topic for r in runs if r is not first and r.change.kind == "create"])
        _await_answer(group, admin, list(futures), before)
        debt_s = _metric(admin.metrics(), "throttle-time-max") / 1000  # the group's client is new: this answer's
        budget.cover(debt_s, _rest_predicted_s(group, admin, runs), time.monotonic())
    send([(run, run.change) for run in runs if run is not first])
    while True:
        _drain(group, admin, lambda run: alter([(run, run.change.alter)]) if run.change.alter else [])
        if group.stopped:  # nothing more is sent: what is left ends as the stop left it (_settle)
            break
        retry = _verify_unknown(group, admin, [r for r in runs if r.verify])
        retry += _await_brokers(group, admin, [r for r in runs if r.away])
        if not group.stopped:  # (a stop in the waits above: the held rows end as it left them, below)
            retry += _held_again(group, admin, [r for r in runs if r.held_ms is not None])
        if not retry:
            break
        send(retry)
    left = [run for run in runs if run.index not in group.results]
    metrics = admin.metrics() if left else {}
    for run in left:
        _settle(group, run, metrics)


def _await_answer(
    group: _Group, admin: ThrottledAdminClient, sent: list[Future[Any]], before: dict[str, float]
) -> None:
    """Until the broker has answered the first row (the client's metrics count its admission or its throttle as the
    answer comes), or its future is done: not until every broker lists it (``wait_for_metadata``), which may take
    seconds more and tells nothing of the quota. Woken by the answer itself (``_on_answer``) or by the future,
    not by polling the metrics (the rest of the rows waited up to a poll longer, and a fleet's entities each read
    the metrics about four times over); with progress shown, also every ``PROGRESS_POLL_S`` to report."""
    marks = ("mutations-admitted-total", "throttle-time-max", "quota-violation-total")
    heard = threading.Event()
    for future in sent:
        _when_settled(future, lambda _: heard.set())
    stop = admin._on_answer(heard.set)
    poll_s = PROGRESS_POLL_S if group.progress is not None else None
    try:
        while True:
            heard.clear()  # (before looking: what comes after the look wakes the wait below)
            if all(future.done() for future in sent):
                return
            metrics = admin.metrics()
            if any(_metric(metrics, name) > _metric(before, name) for name in marks):
                return
            group.report(admin, metrics, only_if_admitted=True)
            heard.wait(poll_s)
    finally:
        stop()


#: How many times a default budget moves on for one row held by a throttle the client learned.
MAX_BUDGET_MOVES = 3


def _held_again(group: _Group, admin: ThrottledAdminClient, runs: list[_Run]) -> list[tuple[_Run, Change]]:
    """Rows the quota held past the budget (``ThrottlingQuotaExceededException``, nothing applied): under the default
    budget, which covers every throttle the client learns, sent again (at most ``MAX_BUDGET_MOVES`` times); under
    the user's, they end (``not_sent`` when never written)."""
    retry: list[tuple[_Run, Change]] = []
    now = time.monotonic()
    predicted = _rest_predicted_s(group, admin, runs) if runs else None
    metrics = admin.metrics() if runs else {}
    for run in runs:
        held_ms = run.held_ms or 0
        if run.budget_moves < MAX_BUDGET_MOVES and group.budget.cover(held_ms / 1000, predicted, now):
            run.budget_moves += 1
            run.held_ms = None
            run.refused, run.error = run.error or run.refused, None
            retry.append((run, run.change))
        else:
            run.debt_ms, run.held_ms = held_ms, None
            if predicted is not None:  # the hold, then every row left at the rate (no burst left)
                run.needed_s = round(now - group.started + held_ms / 1000 + predicted, 3)
            _settle(group, run, metrics)
    return retry


def _await_brokers(group: _Group, admin: ThrottledAdminClient, runs: list[_Run]) -> list[tuple[_Run, Change]]:
    """Rows refused INVALID_REPLICATION_FACTOR while a node was away: wait, within the budget, until the cluster has
    the brokers it had when the group started, and send them again; at the budget's end they keep Kafka's answer,
    and at the plan's stop, which ends the wait, they end ``not_sent`` (STOPPED, Kafka's refusal kept)."""
    if not runs:
        return []
    at_start = group.brokers_at_start
    assert at_start is not None
    back, waited_s = wait_for_brokers(
        admin,
        at_start,
        group.budget.end,
        group.profile.request_timeout_s,
        lambda: group.report(admin, only_if_admitted=True),
        group.stopping,
    )
    metrics = admin.metrics()
    waited = (
        f"waited {waited_s:.1f} s for a broker that was away (INVALID_REPLICATION_FACTOR with {at_start - 1} or fewer"
    )
    stopped = group.stopped  # (read once: a stop may come meanwhile)
    back = back and not stopped
    for run in runs:
        if stopped:  # refused, and not sent again for the stop (_end_stopped: ``away`` still set)
            run.notes.append(f"{waited} of {at_start} brokers registered), until the plan was stopped")
            _settle(group, run, metrics)
        elif back:
            run.away = False
            run.notes.append(f"{waited} of {at_start} brokers registered)")
            run.refused, run.error = run.error, None
        else:
            run.away = False
            run.notes.append(
                f"{waited} of {at_start} brokers registered), until its budget ({group.budget.describe()}) ended"
            )
            _settle(group, run, metrics)
    return [(run, run.change) for run in runs if back]


def _name(key: Any) -> str:
    # create/delete/create_partitions key futures by topic name, incremental_alter_configs by ConfigResource.
    return key.name if isinstance(key, ConfigResource) else str(key)


def _new_topic(row: PlanRow) -> NewTopic:
    return NewTopic(
        row.topic,
        num_partitions=row.partitions if row.partitions is not None else -1,
        replication_factor=row.replication_factor if row.replication_factor is not None else -1,
        config=dict(row.configs or {}),
    )


def _alter_resource(topic: str, values: dict[str, str]) -> ConfigResource:
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in sorted(values.items())]
    return ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)


def _drain(group: _Group, admin: ThrottledAdminClient, then: Callable[[_Run], list[Future[Any]]]) -> None:
    """Wait for every outstanding future (``group.futures``), settling rows as their last operation completes; a row
    with an unknown outcome is left for ``_verify_unknown``. ``then(run)``: what a grow sends once applied (its config
    change), the futures it added to ``group.futures``."""
    futures = group.futures
    poll_s = PROGRESS_POLL_S if group.progress is not None else None
    # Each future says when it is done (one callback each), instead of a wait() on all of them per turn: a long
    # throttle with progress shown then costs a look at the metrics every poll, not one per pending row.
    finished: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
    for pending in list(futures):
        _when_settled(pending, finished.put)
    while futures:
        try:
            done = [finished.get(timeout=poll_s)]
        except queue.Empty:  # the broker may have admitted mutations of rows still pending (their visibility, say)
            group.report(admin, only_if_admitted=True)
            continue
        while not finished.empty():
            done.append(finished.get_nowait())
        metrics = admin.metrics()  # once a turn, after the futures taken settled: every row settled in it reads it
        for future in done:
            with group.lock:
                run, kind = futures.pop(future)
            run.pending -= 1
            if future.cancelled():  # withdrawn by the plan's stop: never sent
                run.attempts -= 1
                run.withdrawn = True
            exc = None if future.cancelled() else future.exception()
            if not future.cancelled() and not isinstance(exc, ThrottlingQuotaExceededException):
                run.refused = None  # answered, or lost: what it sent before may be applied now
            if exc is None and kind == "grow" and not run.withdrawn:
                for follow in then(run):
                    _when_settled(follow, finished.put)
            if exc is not None:
                code, message = _error(exc)
                labelled = (code, f"{kind}: {message}" if kind == "alter" else message)
                if _outcome_unknown(exc, run):
                    run.verify, run.unknown = True, labelled
                    run.unknowns += 1
                elif isinstance(exc, ThrottlingQuotaExceededException) and run.error is None:
                    # Nothing applied. Never written: not an attempt. Refused with 89: Kafka's answer if it ends here.
                    run.attempts -= exc.sent is False
                    run.held_ms = exc.throttle_time_ms
                    run.error = None if exc.sent is False else labelled
                elif kind in _GROWS and code == KafkaError.INVALID_REPLICATION_FACTOR and run.error is None:
                    run.error = labelled
                    run.away = away_refusal(message, group.brokers_at_start)
                elif kind == "create" and code == KafkaError.TOPIC_ALREADY_EXISTS:
                    run.verify, run.existed = True, labelled  # someone's topic: is it the one planned?
                elif kind == "delete" and code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    run.verify, run.existed = True, labelled  # deleted by someone else: the cluster is as planned?
                elif run.error is None:
                    run.error = labelled
            if run.pending == 0 and not (run.verify or run.away or run.held_ms is not None):
                _settle(group, run, metrics)
        group.report(admin, metrics)


def _when_settled(future: Future[Any], put: Callable[[Future[Any]], None]) -> None:
    """``put(future)`` once the future is settled. A topic's future calls it on the thread that settles it (the
    client's, mostly): ``put`` never blocks, so it needs no hop through the client's pool for done-callbacks, which
    starts a thread for each callback that finds no idle one, and settled topics come in bursts (every topic a
    metadata read found visible): 39 % of a Python worker's samples went to those threads (the fleet benchmark's
    profile of issue 29: git log -p docs/benchmarks.md). Other futures (``incremental_alter_configs``) call it from
    librdkafka's thread, as before."""
    if isinstance(future, TopicFuture):
        future.add_settled_callback(put)
    else:
        future.add_done_callback(put)


# A re-send's answer that our own earlier attempt would also explain: created, grown, deleted already.
_ALREADY_DONE = (KafkaError.TOPIC_ALREADY_EXISTS, KafkaError.INVALID_PARTITIONS, KafkaError.UNKNOWN_TOPIC_OR_PART)


def _outcome_unknown(exc: BaseException, run: _Run) -> bool:
    """Whether the cluster must be read to know what became of the change, by the error's type and code.

    Sent and not answered (``OutcomeUnknownError``), or an answer after an attempt whose outcome was unknown
    (``PossiblyAppliedError``: whatever it says, the earlier attempt may have applied the change), or our
    own re-send answered "already done". Not sent (``_TIMED_OUT`` before sending, ``_TRANSPORT``) is read
    too: the cluster then says the change is missing and it is sent again."""
    if isinstance(exc, OutcomeUnknownError):  # PossiblyAppliedError and a close with the request in flight too
        return True
    code = _error(exc)[0]
    if code in _ALREADY_DONE:
        return run.attempts > 1
    return code in _UNKNOWN_CODES


def _final_wait_s(group: _Group) -> float:
    """How long a verification waits for the client to know no lost request can still be applied: a request
    librdkafka gave up on holds its connection up to socket.timeout.ms (and the client's sentinel 2 s more), and
    may be applied up to its controller deadline after the connection closes."""
    socket_timeout_s = float(group.profile.conf.get("socket.timeout.ms", 60000)) / 1000
    return socket_timeout_s + 2.0 + group.profile.request_timeout_s


def _wait_final(group: _Group, admin: ThrottledAdminClient, timeout_s: float) -> bool:
    """``admin.wait_until_final(timeout_s)``, ended by the plan's stop (False): up to a minute, a request's
    controller deadline, that a ``PlanStop`` waited out before its call returned."""
    return wait_unless_stopped(admin.wait_until_final, timeout_s, lambda: group.stopped or admin.closed)


def _verify_unknown(group: _Group, admin: ThrottledAdminClient, runs: list[_Run]) -> list[tuple[_Run, Change]]:
    """Read the cluster (topics, partitions, configs) for rows whose outcome is unknown and decide again:
    nothing left to do ends the row with what the cluster shows, a change still missing is sent again (up
    to MAX_ATTEMPTS), so a lost response never turns into a false failure or a duplicated change."""
    if not runs:
        return []
    timeout_s = group.profile.request_timeout_s
    topics: dict[str, TopicState] | None = None
    configs: dict[str, dict[str, str]] = {}
    reason = ""
    # A request whose answer was lost may still be applied (a controller completes what it has begun): a read
    # before the client knows it can no longer be would find the change "missing" and send it again.
    final = _wait_final(group, admin, min(_final_wait_s(group), group.budget.left_s(time.monotonic())))
    timeout_s = group.budget.cap_s(timeout_s, time.monotonic())
    # Reads change nothing and cost no quota: a dropped connection is read again.
    for _ in range(READ_ATTEMPTS if final else 0):
        if group.stopped:
            break
        try:
            topics = read_cluster_topics(admin, group.watch, [group.rows[r.index].topic for r in runs], timeout_s)
            names = [group.rows[r.index].topic for r in runs if group.rows[r.index].configs]
            configs = _read_configs(admin, [n for n in names if n in topics], timeout_s)
            break
        except Exception as exc:
            topics, reason = None, _error(exc)[1]
    if topics is None and group.stopped:  # their outcome unknown, as the stop left them (_end_stopped)
        metrics = admin.metrics()
        for run in runs:
            _settle(group, run, metrics)
        return []
    over = group.budget.left_s(time.monotonic()) == 0.0  # it cut the wait or the reads short
    retry: list[tuple[_Run, Change]] = []
    metrics = admin.metrics()  # once: nothing is waited for while these rows settle
    for run in runs:
        run.verify = False
        row = group.rows[run.index]
        if topics is None:
            code, message = run.error or run.unknown or (int(KafkaError._TIMED_OUT), "outcome unknown")
            if not final:
                reason = "the broker could still apply it when this run ended"
            if over:
                reason = f"the time budget ({group.budget.describe()}) ended first; {reason}"
            run.error = (code, f"{message} (and the cluster could not be read to verify it: {reason})")
            _settle(group, run, metrics)
            continue
        state = topics.get(row.topic)
        if state is not None and row.topic in configs:
            state = TopicState(state.partitions, state.replication_factor, configs[row.topic])
        # Only a delete this run was allowed to make was sent, so a delete still missing may be sent again.
        needed = decide(row, state, allow_delete=True)
        if needed.kind == "none":
            run.error = None
            if not run.existed:
                run.notes.append("verified by reading the cluster after an unknown outcome")
            _settle(group, run, metrics, status="unchanged" if run.existed else None)
        elif needed.kind == "fail":
            code = (run.existed or run.unknown or (None, ""))[0]
            run.error, run.error_name = (code, needed.reason or "failed"), needed.error_name
            _settle(group, run, metrics)
        elif run.error is not None:
            _settle(group, run, metrics)
        elif needed.kind == run.change.kind and _hedged_away(group, run):
            # Refused while a node was away, the refusal hedged by an earlier attempt (lost, or refused as a
            # controller failing over refuses what it applied): the cluster shows the change still to make (not a
            # grow applied with its configs to set), so the refusal stands, and the row waits for the node
            # (``_await_brokers``) as a plain one does.
            code, message = run.unknown or (None, "")
            run.error = (code, f"{message} (the cluster read after it does not show it)")
            run.unknown, run.away = None, True
        elif run.unknowns < MAX_ATTEMPTS:
            # e.g. a planned create found someone's topic: grown, not created (a grow left to set its configs stays)
            if needed.kind != run.change.kind and (run.change.kind, needed.kind) != ("grow", "reconfigure"):
                run.notes.append(f"the topic already existed (created outside this run): {needed.kind} instead")
                run.change = needed
            log.debug(
                "group %s: %s not as planned after an unknown outcome: sending again", group.profile.name, row.topic
            )
            retry.append((run, needed))
        else:
            code, message = run.unknown or (int(KafkaError._TIMED_OUT), "outcome unknown")
            why = f"after {run.unknowns} attempts with no definite answer the cluster does not show the change"
            run.error = (code, f"{message} ({why})")
            _settle(group, run, metrics)
    return retry


def _hedged_away(group: _Group, run: _Run) -> bool:
    """Whether the row's last answer, hedged (``PossiblyAppliedError``), was a refusal while a node was away."""
    code, message = run.unknown or (None, "")
    return (
        run.change.kind in _GROWS
        and code == KafkaError.INVALID_REPLICATION_FACTOR
        and away_refusal(message, group.brokers_at_start)
    )


_STATUS = {"create": "created", "grow": "grown", "reconfigure": "reconfigured", "delete": "deleted"}


def _settle(group: _Group, run: _Run, metrics: dict[str, float], status: str | None = None) -> None:
    """End ``run`` with its result; ``metrics``: the client's, read once for every row settled with it."""
    change = run.change
    now = time.time()
    throttle_ms = max(0, int(_metric(metrics, "backoff-time-ms-total") - run.backoff_at_start_ms))
    detail = "; ".join([change.detail, *run.notes])
    common: dict[str, Any] = {
        "attempts": run.attempts,
        "throttle_time_ms": throttle_ms,
        "started_at": run.started_at or now,
        "finished_at": now,
        "mutations": change.mutations,
        "detail": detail,
        "quota_debt_ms": run.debt_ms,
        "predicted_s": run.needed_s,
    }
    # (held or away: refused by the quota, held by the client, or refused while a node was away, and not sent again
    # for the stop)
    if (
        status is None
        and group.stopped
        and (run.verify or run.away or run.held_ms is not None or (run.withdrawn and not run.error))
    ):
        _end_stopped(group, run, common)
        return
    if run.error is None and run.debt_ms is not None and status is None:
        message = (
            f"not sent: the plan's time budget ({group.budget.describe()}) ended while the principal's quota held it "
            f"for {run.debt_ms} ms more; run the same plan again once that has passed (rows done come back "
            "unchanged), or with a longer budget"
        )
        group.finish(run.index, "not_sent", error_message=message, **common)
        return
    if run.error is not None and status is None:
        code, message = run.error
        name = KafkaError(code).name() if code is not None else run.error_name
        group.finish(run.index, "failed", error_code=code, error_name=name, error_message=message, **common)
        log.debug("group %s: %s failed", group.profile.name, group.rows[run.index].topic)
        return
    group.finish(run.index, status or _STATUS[change.kind], **common)


def _end_stopped(group: _Group, run: _Run, common: dict[str, Any]) -> None:
    """A row the plan's stop ended before it was done (``error_name`` STOPPED): never sent, or refused and not sent
    again (``not_sent``: nothing of it applied), its outcome unknown, or part of it not sent (``failed``)."""
    if run.attempts == 0:
        message = "not sent: the plan was stopped first"
        group.finish(run.index, "not_sent", error_name=STOPPED, error_message=message, **common)
    elif run.verify and run.unknown is None and run.existed is not None:
        # Kafka said the cluster had it (someone else's topic, or one already gone): not compared with the plan
        code, message = run.existed
        message = f"{message} {NOT_COMPARED}"
        group.finish(run.index, "failed", error_code=code, error_name=STOPPED, error_message=message, **common)
    elif run.verify:
        code, message = run.unknown or (None, "outcome unknown")
        message = f"{message} (the plan was stopped before its outcome was known)"
        group.finish(run.index, "failed", error_code=code, error_name=STOPPED, error_message=message, **common)
    elif (refusal := run.error or run.refused) is not None:
        # refused (by the quota, or while a node was away: Kafka applied nothing), and not sent again
        message = f"{refusal[1]}; not sent again: the plan was stopped first (nothing of it applied)"
        group.finish(run.index, "not_sent", error_code=refusal[0], error_name=STOPPED, error_message=message, **common)
    else:  # a change sent again (or a grow's config change) withdrawn: what was sent before may have been applied
        message = "the plan was stopped before all of its change was sent; run the same plan again to finish it"
        group.finish(run.index, "failed", error_name=STOPPED, error_message=message, **common)
