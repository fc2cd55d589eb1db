"""``apply_plan`` on Spark: the plan is a DataFrame, each quota entity's rows run in exactly one task,
and the results come back as a DataFrame.

How the work is laid out (docs/pipeline.md says why):
- the driver numbers the quota entities (bootstrap servers, principal) from the profiles and tags each
  row with its entity's number (a literal map of profile name to number: no credentials);
- the plan is repartitioned by that number into min(entities, task slots) partitions, so all rows of an
  entity land in one partition, and every partition runs in the first wave of tasks;
- each task (``mapInArrow``) runs all of its entities at once, one thread each: the work is waiting on
  brokers and quotas, not CPU, so a 2-core executor drives 8 entities concurrently instead of in 4 waves;
- profiles, credentials included, travel in the task's closure (pickled by Spark with the function),
  never in a DataFrame, a column, a literal or the query plan.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from throttled_admin.provisioning import PlanError, PlanRow, Profile, RowResult
from throttled_admin.provisioning import apply_plan as apply_rows
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
    source = record.get("source") or f"plan_df row {record['cluster']}/{record['topic']}"
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


def _make_task(profiles: dict[str, Profile], allow_delete: bool, dry_run: bool) -> Any:
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
                )
        # All of this task's quota entities at once, one thread each (apply_plan's groups).
        done = apply_rows([row for _, row in known], profiles, allow_delete=allow_delete, dry_run=dry_run)
        for (i, _), result in zip(known, done, strict=True):
            results[i] = result
        final = [r for r in results if r is not None]
        if final:
            yield pa.RecordBatch.from_pylist(result_records(final), schema=arrow_schema())

    return run_partition


def apply_plan(
    plan_df: Any, profiles: Mapping[str, Profile], *, allow_delete: bool = False, dry_run: bool = False
) -> Any:
    """Apply the plan in ``plan_df`` (columns cluster, action, topic and optionally partitions,
    replication_factor, configs as map<string,string> or 'k=v;k=v', source) and return one result row per
    plan row (the RowResult columns).

    The job runs when this is called, and its results are kept (``localCheckpoint``): using the returned
    DataFrame again never re-runs the provisioning. Rows whose cluster has no profile, or that are
    invalid, end ``failed``."""
    from pyspark.sql import functions as F

    optional = _check_columns(plan_df)
    profiles = dict(profiles)
    entity_numbers: dict[tuple[str, str], int] = {}
    group_of = {
        name: entity_numbers.setdefault(profiles[name].group_key, len(entity_numbers)) for name in sorted(profiles)
    }
    spark = plan_df.sparkSession
    slots = max(1, int(spark.sparkContext.defaultParallelism))
    partitions = max(1, min(len(entity_numbers), slots))
    # A literal map of profile name -> entity number; unknown clusters get -1 and fail in their task.
    numbers = F.create_map(*[F.lit(x) for name, n in sorted(group_of.items()) for x in (name, n)]) if group_of else None
    group = F.coalesce(numbers[F.col("cluster")], F.lit(-1)) if numbers is not None else F.lit(-1)
    columns = [F.col(name) for name in (*_REQUIRED, *optional)]
    tagged = plan_df.select(*columns).withColumn(_GROUP, group).repartition(partitions, _GROUP).drop(_GROUP)
    task = _make_task(profiles, allow_delete, dry_run)
    with pandas3_warning_ignored():
        results = tagged.mapInArrow(task, spark_schema())
    return results.localCheckpoint(eager=True)
