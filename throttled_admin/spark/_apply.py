"""``apply_plan`` on Spark: the plan is a DataFrame, each quota entity's rows run in exactly one task,
and the results come back as a DataFrame.

How the work is laid out (docs/pipeline.md says why):
- the driver numbers the quota entities (bootstrap servers, principal) from the profiles and tags each
  row with its entity's number (a literal map of profile name to number: no credentials);
- the plan is repartitioned by that number into min(entities, task slots) partitions, so all rows of an
  entity land in one partition, and every partition runs in the first wave of tasks;
- each task (``mapInArrow``) runs its entities concurrently, one thread and one client each, at most
  ``max_concurrent_entities`` at a time: the work is waiting on brokers and quotas, not CPU, so a 2-core
  executor drives 8 entities at once instead of in 4 waves, and a task with thousands holds a bounded number
  of clients;
- only DataFrame operations (``repartition``, ``mapInArrow``, ``localCheckpoint``): no ``sparkContext`` and
  no RDD, so a Spark Connect session works as a classic one does;
- a task Spark retries (a lost executor or Python worker) runs its entities again: what the lost attempt
  applied is then as planned, and those rows end ``unchanged`` (or ``created`` etc. when verified);
- profiles, credentials included, travel in the task's closure (pickled by Spark with the function),
  never in a DataFrame, a column, a literal or the query plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from throttled_admin.provisioning import PLAN_ERROR, PlanError, PlanRow, Profile, RowResult
from throttled_admin.provisioning import apply_plan as apply_rows
from throttled_admin.provisioning._apply import MAX_CONCURRENT_ENTITIES
from throttled_admin.provisioning._profile import ProfilesArg, as_profiles
from throttled_admin.provisioning._readers import parse_configs_text
from throttled_admin.spark._quiet import pandas3_warning_ignored
from throttled_admin.spark._schema import arrow_schema, result_records, spark_schema

__all__ = ["apply_plan"]

_REQUIRED = ("cluster", "action", "topic")
_INTEGERS = ("partitions", "replication_factor")
_GROUP = "_throttled_admin_group"


def _check_columns(plan_df: Any) -> list[str]:
    """The plan's optional columns present; a missing or mistyped column fails before any job runs."""
    from pyspark.sql.types import IntegerType, LongType, MapType, ShortType, StringType

    fields = {f.name: f.dataType for f in plan_df.schema.fields}
    for name in _REQUIRED:
        if name not in fields:
            raise PlanError(
                f"plan_df: missing column {name!r}; a plan has cluster, action, topic, "
                "partitions, replication_factor, configs"
            )
        if not isinstance(fields[name], StringType):
            raise PlanError(f"plan_df: column {name!r} must be a string, got {fields[name].simpleString()}")
    optional = []
    for name in _INTEGERS:
        if name in fields:
            if not isinstance(fields[name], (IntegerType, LongType, ShortType)):
                raise PlanError(f"plan_df: column {name!r} must be an integer, got {fields[name].simpleString()}")
            optional.append(name)
    if "configs" in fields:
        kind = fields["configs"]
        is_map = isinstance(kind, MapType) and isinstance(kind.keyType, StringType)
        if not (is_map and isinstance(kind.valueType, StringType)) and not isinstance(kind, StringType):
            raise PlanError(
                f"plan_df: column 'configs' must be map<string,string> or a 'k=v;k=v' string, got {kind.simpleString()}"
            )
        optional.append("configs")
    if "source" in fields:
        optional.append("source")
    return optional


def _row(record: dict[str, Any]) -> PlanRow | RowResult:
    configs = record.get("configs")
    source = record.get("source") or f"plan_df: row {record['cluster']}/{record['topic']}"
    if isinstance(configs, str):
        try:
            configs = parse_configs_text(configs)
        except ValueError as exc:
            return RowResult(
                str(record["cluster"]),
                str(record["topic"]),
                str(record["action"]),
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


def _make_task(profiles: dict[str, Profile], allow_delete: bool, dry_run: bool, max_entities: int) -> Any:
    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

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
        # This task's quota entities concurrently, one thread each (apply_plan's groups), at most max_entities.
        done = apply_rows(
            [row for _, row in known],
            profiles,
            allow_delete=allow_delete,
            dry_run=dry_run,
            max_concurrent_entities=max_entities,
        )
        for (i, _), result in zip(known, done, strict=True):
            results[i] = result
        final = [r for r in results if r is not None]
        if final:
            yield pa.RecordBatch.from_pylist(result_records(final), schema=arrow_schema())

    return run_partition


def _task_slots(spark: Any) -> int:
    """How many tasks run at once: ``defaultParallelism``. A Spark Connect session has no ``sparkContext``:
    there ``spark.range`` without a partition count is split into ``defaultParallelism`` partitions (leaf
    nodes' default parallelism), and counting them is one small job."""
    from pyspark.sql import functions as F

    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return max(1, int(spark.sparkContext.defaultParallelism))

    return max(1, int(spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).distinct().count()))


def apply_plan(
    plan_df: Any,
    profiles: ProfilesArg,
    *,
    allow_delete: bool = False,
    dry_run: bool = False,
    max_concurrent_entities: int = MAX_CONCURRENT_ENTITIES,
) -> Any:
    """Apply the plan in ``plan_df`` (columns cluster, action, topic and optionally partitions,
    replication_factor, configs as map<string,string> or 'k=v;k=v', source) and return one result row per
    plan row (the RowResult columns). ``profiles`` as for ``throttled_admin.provisioning.apply_plan``:
    cluster name -> ``Profile`` or conf mapping. Works on a classic session and on Spark Connect.

    The job runs when this is called, and its results are kept (``localCheckpoint``): using the returned
    DataFrame again never re-runs the provisioning. Rows whose cluster has no profile, or that are
    invalid, end ``failed``. ``max_concurrent_entities``: how many quota entities one task runs at once
    (one thread and one client each); more wait for a free one."""
    from pyspark.sql import functions as F

    checked = as_profiles(profiles)
    if isinstance(max_concurrent_entities, bool) or not isinstance(max_concurrent_entities, int):
        raise TypeError(f"max_concurrent_entities: expected an int >= 1, got {max_concurrent_entities!r}")
    if max_concurrent_entities < 1:
        raise ValueError(f"max_concurrent_entities: expected an int >= 1, got {max_concurrent_entities}")
    optional = _check_columns(plan_df)
    entity_numbers: dict[tuple[str, str], int] = {}
    group_of = {
        name: entity_numbers.setdefault(checked[name].group_key, len(entity_numbers)) for name in sorted(checked)
    }
    spark = plan_df.sparkSession
    partitions = max(1, min(len(entity_numbers), _task_slots(spark)))
    # A literal map of profile name -> entity number; unknown clusters get -1 and fail in their task.
    numbers = F.create_map(*[F.lit(x) for name, n in sorted(group_of.items()) for x in (name, n)]) if group_of else None
    group = F.coalesce(numbers[F.col("cluster")], F.lit(-1)) if numbers is not None else F.lit(-1)
    columns = [F.col(name) for name in (*_REQUIRED, *optional)]
    tagged = plan_df.select(*columns).withColumn(_GROUP, group).repartition(partitions, _GROUP).drop(_GROUP)
    task = _make_task(checked, allow_delete, dry_run, max_concurrent_entities)
    with pandas3_warning_ignored():
        results = tagged.mapInArrow(task, spark_schema())
    return results.localCheckpoint(eager=True)
