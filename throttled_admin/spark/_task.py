"""The admin work on a batch of plan records, wherever it runs: in a Spark task (``mapInArrow``, execution
"executors") or in the process that called ``apply_plan`` (execution "driver"). Both run this same function
on the same Arrow records, so both modes give the same rows under the same rules."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

from throttled_admin.provisioning import PLAN_ERROR, PlanRow, Profile, RowResult
from throttled_admin.provisioning import apply_plan as apply_rows
from throttled_admin.provisioning._readers import parse_configs_text
from throttled_admin.provisioning._results import as_given
from throttled_admin.spark._reach import reachable, unreachable_message
from throttled_admin.spark._schema import result_batch
from throttled_admin.spark._sealed import Sealed

__all__ = ["make_task"]

#: librdkafka's RD_KAFKA_RESP_ERR__TRANSPORT, as a cluster the client cannot connect to reports it.
_TRANSPORT = -195


def _row(record: dict[str, Any]) -> PlanRow | RowResult:
    configs = record.get("configs")
    source = record.get("source") or f"plan_df: row {record['cluster']}/{record['topic']}"
    if isinstance(configs, str):
        try:
            configs = parse_configs_text(configs)
        except ValueError as exc:
            return RowResult(
                as_given(record["cluster"]),
                as_given(record["topic"]),
                as_given(record["action"]),
                "failed",
                error_message=f"{source}: field 'configs': {exc}",
                error_name=PLAN_ERROR,
            )
    elif configs is not None:
        configs = dict(configs)  # Arrow hands a map over as (key, value) pairs
    return PlanRow(
        cluster=record["cluster"],
        action=record["action"],
        topic=record["topic"],
        partitions=record.get("partitions"),
        replication_factor=record.get("replication_factor"),
        configs=configs,
        source=source,
    )


def _cut_off(rows: list[tuple[int, PlanRow]], profiles: dict[str, Profile], driver_reaches: frozenset[str]) -> Any:
    """Rows whose cluster the driver reached and this process cannot: failed at once, not sent, saying so."""
    lists = {profiles[row.cluster].bootstrap_servers for _, row in rows} & driver_reaches
    if not lists:
        return {}
    here = reachable(lists)
    now = time.time()
    cut = {}
    for i, row in rows:
        servers = profiles[row.cluster].bootstrap_servers
        if servers in lists and not here[servers]:
            message = f"not sent: {unreachable_message(servers)}"
            cut[i] = RowResult(
                row.cluster, row.topic, row.action, "failed", _TRANSPORT, message, 0, 0, now, now,
                error_name="_TRANSPORT",
            )  # fmt: skip
    return cut


def _attempt() -> int:
    """This Spark task's attempt, 0 for its first (and on the driver, where no task runs). Within its stage: a stage
    Spark runs again (its shuffle's output lost with an executor) numbers its tasks from 0 again."""
    from pyspark import TaskContext  # (imported where it runs: a task, or the driver, has pyspark)

    context = TaskContext.get()
    return context.attemptNumber() if context is not None else 0


def _retried(results: list[RowResult], attempt: int) -> list[RowResult]:
    """A retried task's rows found as planned may be what a lost attempt applied (it read the cluster again and
    applied nothing twice), or may have been as planned before the job: ``unchanged`` is true of this attempt, and
    ``detail`` says what it cannot tell."""
    if attempt == 0:
        return results
    note = f"task attempt {attempt + 1}: an earlier attempt of this task may have applied it"
    return [
        dataclasses.replace(r, detail=f"{r.detail}; {note}" if r.detail else note) if r.status == "unchanged" else r
        for r in results
    ]


def make_task(
    profiles: dict[str, Profile],
    allow_delete: bool,
    dry_run: bool,
    max_entities: int,
    driver_reaches: frozenset[str] = frozenset(),
    timeout_s: float | None = None,
) -> Any:
    """A ``mapInArrow`` function: record batches of plan rows in, one batch of result rows out.
    ``driver_reaches``: the ``bootstrap.servers`` values the driver connected to before the job (empty when
    this runs on the driver); their rows fail at once here when this process cannot connect to them.
    ``timeout_s``: each group's time budget, from its start in the task (``provisioning.apply_plan``'s). The profiles
    are in the function ``Sealed``: shipped to executors, its pickle shows no secret of theirs."""
    sealed = Sealed(profiles)  # (the function below refers to these only)

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        attempt = 0 if dry_run else _attempt()  # (a dry run applies nothing: no attempt of it did)
        profiles = sealed.open()
        records = [record for batch in batches for record in batch.to_pylist()]
        parsed = [_row(record) for record in records]
        results: list[RowResult | None] = [r if isinstance(r, RowResult) else None for r in parsed]
        runnable = [(i, r) for i, r in enumerate(parsed) if isinstance(r, PlanRow)]
        known = [(i, r) for i, r in runnable if r.cluster in profiles]
        for i, row in runnable:
            if row.cluster not in profiles:
                results[i] = RowResult(
                    row.cluster,
                    row.topic,
                    row.action,
                    "failed",
                    error_message=f"{row.source}: field 'cluster': no profile named {row.cluster!r}",
                    error_name=PLAN_ERROR,
                )
        cut = _cut_off(known, profiles, driver_reaches)
        for i, result in cut.items():
            results[i] = result
        known = [(i, r) for i, r in known if i not in cut]
        # This batch's quota entities concurrently, one thread each (apply_plan's groups), at most max_entities.
        done = apply_rows(
            [row for _, row in known],
            profiles,
            allow_delete=allow_delete,
            dry_run=dry_run,
            max_concurrent_entities=max_entities,
            timeout_s=timeout_s,
        )
        for (i, _), result in zip(known, done, strict=True):
            results[i] = result
        final = _retried([r for r in results if r is not None], attempt)
        if final:
            yield result_batch(final)

    return run_partition
