"""Bulk topic provisioning: a plan (rows of cluster, action, topic, partitions, replication factor,
configs) applied per quota entity, with one result per row.

    rows = read_plan("plan.yaml")
    profiles = read_profiles("profiles.yaml")
    results = apply_plan(rows, profiles)
    print(summarize(results))

The same executor runs on Spark executors through ``throttled_admin.spark.apply_plan``.
"""

from throttled_admin.provisioning._apply import apply_plan, group_rows
from throttled_admin.provisioning._executor import execute, predicted_seconds
from throttled_admin.provisioning._plan import ACTIONS, PlanError, PlanRow, row_problem
from throttled_admin.provisioning._profile import Profile
from throttled_admin.provisioning._progress import Progress, ProgressCallback
from throttled_admin.provisioning._readers import read_plan, read_profiles
from throttled_admin.provisioning._results import (
    DELETE_NOT_ALLOWED,
    PLAN_CONFLICT,
    PLAN_ERROR,
    RESULT_FIELDS,
    STATUSES,
    RowResult,
    summarize,
)
from throttled_admin.provisioning._stop import STOPPED, PlanStop

__all__ = [
    "ACTIONS",
    "DELETE_NOT_ALLOWED",
    "PLAN_CONFLICT",
    "PLAN_ERROR",
    "RESULT_FIELDS",
    "STATUSES",
    "STOPPED",
    "PlanError",
    "PlanRow",
    "PlanStop",
    "Profile",
    "Progress",
    "ProgressCallback",
    "RowResult",
    "apply_plan",
    "execute",
    "group_rows",
    "predicted_seconds",
    "read_plan",
    "read_profiles",
    "row_problem",
    "summarize",
]
