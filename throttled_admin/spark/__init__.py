"""The provisioning pipeline on Spark (extra ``spark``: pyspark, pandas, pyarrow; Spark needs Java 17).

from throttled_admin.provisioning import read_profiles
from throttled_admin.spark import apply_plan, local_session

spark = local_session()
results = apply_plan(spark.read.json("plan.json"), read_profiles("profiles.yaml"))
results.groupBy("status").count().show()
"""

from throttled_admin.spark._apply import apply_plan
from throttled_admin.spark._schema import spark_schema
from throttled_admin.spark._session import local_session

__all__ = ["apply_plan", "local_session", "spark_schema"]
