"""``apply_plan`` on Spark: the plan is a DataFrame, each quota entity's rows run in exactly one task (or,
with ``execution="driver"``, in the calling process), and the results come back as a DataFrame.

How the work is laid out with executors (docs/pipeline.md says why, and when the driver fits better):
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
  applied is then as planned, and those rows end ``unchanged`` (or ``created`` etc. when verified), their
  ``detail`` saying an earlier attempt may have applied them (``_task``: a retry within the stage, not a dry run);
- profiles, credentials included, travel in the task's closure (pickled by Spark with the function), sealed
  (``_sealed``), never in a DataFrame, a column, a literal or the query plan;
- the driver first checks which clusters it can connect to; a task that cannot connect to one of those
  fails its rows at once, saying that executors lack egress (``_reach``).

With the driver, Spark reads the selected plan columns into this process (``toArrow``), the same task
function runs here with at most ``max_concurrent_entities`` entities at once, and its rows become a
DataFrame of local data: no profile goes anywhere, and nothing needs network from Spark's side.
"""

from __future__ import annotations

from typing import Any, Literal

from throttled_admin.provisioning import PlanError
from throttled_admin.provisioning._apply import MAX_CONCURRENT_ENTITIES, check_entities
from throttled_admin.provisioning._budget import check_timeout
from throttled_admin.provisioning._profile import ProfilesArg, as_profiles
from throttled_admin.spark._quiet import pandas3_warning_ignored
from throttled_admin.spark._reach import reachable
from throttled_admin.spark._schema import arrow_schema, spark_schema
from throttled_admin.spark._task import make_task

__all__ = ["EXECUTIONS", "Execution", "apply_plan"]

Execution = Literal["executors", "driver"]
EXECUTIONS = ("executors", "driver")

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


def _task_slots(spark: Any) -> int:
    """How many tasks run at once: ``defaultParallelism``. A Spark Connect session has no ``sparkContext``:
    there ``spark.range`` without a partition count is split into ``defaultParallelism`` partitions (leaf
    nodes' default parallelism), and counting them is one small job."""
    from pyspark.sql import functions as F

    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return max(1, int(spark.sparkContext.defaultParallelism))

    return max(1, int(spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).distinct().count()))


def _run_on_driver(spark: Any, selected: Any, task: Any) -> Any:
    """The plan's rows read by Spark into this process (``toArrow``), the task run here over them, and its
    result rows handed back to Spark as a DataFrame of local data (nothing runs again when it is used)."""
    import pyarrow as pa

    table = selected.toArrow()
    batches = list(task(iter(table.to_batches())))
    results = pa.Table.from_batches(batches, schema=arrow_schema())
    with pandas3_warning_ignored():  # an Arrow table: no row-by-row conversion in Python
        return spark.createDataFrame(results, spark_schema())


def apply_plan(
    plan_df: Any,
    profiles: ProfilesArg,
    *,
    allow_delete: bool = False,
    dry_run: bool = False,
    max_concurrent_entities: int = MAX_CONCURRENT_ENTITIES,
    execution: Execution = "executors",
    timeout_s: float | None = None,
) -> Any:
    """Apply the plan in ``plan_df`` (columns cluster, action, topic and optionally partitions,
    replication_factor, configs as map<string,string> or 'k=v;k=v', source) and return one result row per
    plan row (the RowResult columns). ``profiles`` as for ``throttled_admin.provisioning.apply_plan``:
    cluster name -> ``Profile`` or conf mapping. Works on a classic session and on Spark Connect.

    ``execution``: where the admin calls are made. ``"executors"`` (the default): in Spark tasks, one per
    quota entity group, spread over the cluster; a cluster this process reaches and a task cannot fails
    its rows at once ("executors cannot reach HOST:PORT; ..."). ``"driver"``: in this Python process (on
    Spark Connect, the client), for compute whose tasks have no network (serverless); Spark still reads
    and checks the plan and the results come back as a DataFrame.

    The job runs when this is called, and its results are kept (``localCheckpoint`` with executors, local
    data with the driver): using the returned DataFrame again never re-runs the provisioning. Rows whose
    cluster has no profile, or that are invalid, end ``failed``. ``max_concurrent_entities``: how many
    quota entities one task (with executors) or this process (with the driver) runs at once (one thread
    and one client each); more wait for a free one. ``timeout_s``: each group's time budget from its start, as
    ``throttled_admin.provisioning.apply_plan``'s: rows the quota would hold past it end ``not_sent``."""
    from pyspark.sql import functions as F

    if execution not in EXECUTIONS:
        raise ValueError(f"execution: expected 'executors' or 'driver', got {execution!r}")
    checked = as_profiles(profiles)
    timeout_s = check_timeout(timeout_s)
    if isinstance(max_concurrent_entities, bool) or not isinstance(max_concurrent_entities, int):
        raise TypeError(f"max_concurrent_entities: expected an int >= 1, got {max_concurrent_entities!r}")
    if max_concurrent_entities < 1:
        raise ValueError(f"max_concurrent_entities: expected an int >= 1, got {max_concurrent_entities}")
    optional = _check_columns(plan_df)
    # Two profiles of one entity that differ fail here, before any task sends (a task would find it only after
    # other tasks had applied their rows)
    planned = sorted(row["cluster"] for row in plan_df.select("cluster").distinct().collect() if row["cluster"])
    check_entities(checked, [name for name in planned if name in checked])
    spark = plan_df.sparkSession
    columns = [F.col(name) for name in (*_REQUIRED, *optional)]
    if execution == "driver":
        task = make_task(checked, allow_delete, dry_run, max_concurrent_entities, timeout_s=timeout_s)
        return _run_on_driver(spark, plan_df.select(*columns), task)
    entity_numbers: dict[tuple[str, str], int] = {}
    group_of = {
        name: entity_numbers.setdefault(checked[name].group_key, len(entity_numbers)) for name in sorted(checked)
    }
    partitions = max(1, min(len(entity_numbers), _task_slots(spark)))
    # A literal map of profile name -> entity number; unknown clusters get -1 and fail in their task.
    numbers = F.create_map(*[F.lit(x) for name, n in sorted(group_of.items()) for x in (name, n)]) if group_of else None
    group = F.coalesce(numbers[F.col("cluster")], F.lit(-1)) if numbers is not None else F.lit(-1)
    tagged = plan_df.select(*columns).withColumn(_GROUP, group).repartition(partitions, _GROUP).drop(_GROUP)
    # Which clusters this process reaches: the tasks tell those they cannot reach from a cluster that is down.
    probed = reachable(profile.bootstrap_servers for profile in checked.values())
    driver_reaches = frozenset(servers for servers, ok in probed.items() if ok)
    task = make_task(checked, allow_delete, dry_run, max_concurrent_entities, driver_reaches, timeout_s)
    with pandas3_warning_ignored():
        results = tagged.mapInArrow(task, spark_schema())
    return results.localCheckpoint(eager=True)
