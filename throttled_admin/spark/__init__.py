"""The provisioning pipeline on Spark (extra ``spark``: pyspark, pandas, pyarrow; Spark needs Java 17).

from throttled_admin.provisioning import read_plan, read_profiles
from throttled_admin.spark import apply_plan, local_session, plan_dataframe

spark = local_session()
plan_df = plan_dataframe(spark, read_plan("plan.yaml"))     # or any DataFrame with the plan's columns
results = apply_plan(plan_df, read_profiles("profiles.yaml"))
results.groupBy("status").count().show()
"""

from throttled_admin.spark._apply import apply_plan
from throttled_admin.spark._plan_df import PLAN_DDL, plan_dataframe
from throttled_admin.spark._schema import spark_schema
from throttled_admin.spark._session import local_session

__all__ = ["PLAN_DDL", "apply_plan", "local_session", "plan_dataframe", "spark_schema"]
