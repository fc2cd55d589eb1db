"""A plan (``PlanRow``s, e.g. from ``read_plan``) as a DataFrame with the columns ``apply_plan`` reads."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from throttled_admin.provisioning import PlanRow
from throttled_admin.spark._quiet import pandas3_warning_ignored

__all__ = ["PLAN_DDL", "plan_dataframe"]

PLAN_DDL = (
    "cluster string, action string, topic string, partitions int, replication_factor int, "
    "configs map<string,string>, source string"
)


def plan_dataframe(spark: Any, rows: Iterable[PlanRow], num_partitions: int | None = None) -> Any:
    """``rows`` as a DataFrame (``source`` keeps each row's file and line for error messages), in
    ``num_partitions`` partitions when given. Classic and Spark Connect sessions alike."""
    data = [(r.cluster, r.action, r.topic, r.partitions, r.replication_factor, r.configs, r.source) for r in rows]
    with pandas3_warning_ignored():
        frame = spark.createDataFrame(data, PLAN_DDL)
    return frame if num_partitions is None else frame.repartition(num_partitions)
