"""Apply a topic plan on Spark and write the outcome of every row as Parquet.

    python examples/spark_provision.py plan.yaml profiles.yaml --output results.parquet
    spark-submit examples/spark_provision.py plan.csv profiles.yaml --output results.parquet
    SPARK_REMOTE=sc://host:15002 python examples/spark_provision.py plan.csv profiles.yaml --output results.parquet \
        --execution driver    # Spark Connect, serverless: the admin calls from this process, not from tasks

The plan (JSON, YAML or CSV) is checked before anything is sent: a malformed file stops with its file,
row and field named. profiles.yaml maps each plan cluster to its librdkafka conf (credentials stay in the
task closures, never in a DataFrame). Exit code 0 when every row was applied, unchanged or planned, 1 when one
failed or was not sent, 2 for a bad file.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", help="plan file: .json, .yaml/.yml or .csv")
    parser.add_argument("profiles", help="profiles file: .json or .yaml/.yml")
    parser.add_argument("--output", required=True, help="Parquet directory for the results (overwritten)")
    parser.add_argument("--allow-delete", action="store_true", help="carry out delete rows")
    parser.add_argument("--dry-run", action="store_true", help="report what would change and how long it takes")
    parser.add_argument("--master", help="Spark master for plain python runs (default local[2])")
    parser.add_argument(
        "--timeout",
        type=float,
        help="each cluster's time budget in seconds (default: twice the predicted time plus 60 s); rows the quota "
        "would hold past it end not_sent",
    )
    parser.add_argument(
        "--execution",
        choices=("executors", "driver"),
        default="executors",
        help="where the admin calls are made: in Spark tasks (default), or in this process (driver), for "
        "executors without network access: Spark Connect, serverless (docs/pipeline.md)",
    )
    args = parser.parse_args(argv)
    if args.timeout is not None and not 0 < args.timeout < float("inf"):
        parser.error(f"--timeout: expected a positive number of seconds, got {args.timeout}")

    from throttled_admin.provisioning import PlanError, read_plan, read_profiles
    from throttled_admin.spark import apply_plan, local_session, plan_dataframe

    try:
        rows = read_plan(args.plan)
        profiles = read_profiles(args.profiles)
    except PlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if ("PYSPARK_GATEWAY_PORT" in os.environ or "SPARK_REMOTE" in os.environ) and not args.master:
        # Under spark-submit the JVM is already up and spark-submit's --master decides where tasks run; with
        # SPARK_REMOTE the session is a Spark Connect client of that server.
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("throttled-admin-provision").getOrCreate()
    else:
        spark = local_session("throttled-admin-provision", args.master or "local[2]")
    try:
        results = apply_plan(
            plan_dataframe(spark, rows),
            profiles,
            allow_delete=args.allow_delete,
            dry_run=args.dry_run,
            execution=args.execution,
            timeout_s=args.timeout,
        )
        results.write.mode("overwrite").parquet(args.output)
        counts = {row["status"]: row["count"] for row in results.groupBy("status").count().collect()}
        failed = (
            results.filter("status IN ('failed', 'not_sent')")
            .select("cluster", "topic", "status", "error_name", "error_message")
            .collect()
        )
        predicted = _predicted(results) if args.dry_run else []
    finally:
        spark.stop()
    for row in failed[:20]:
        # The pipeline's words name its Python parameter (allow_delete=True); this script's flag is --allow-delete.
        why = "refused: pass --allow-delete to delete topics" if row["error_name"] == "DELETE_NOT_ALLOWED" else None
        print(f"{row['status']}: {row['cluster']}/{row['topic']}: {why or row['error_message']}")
    print(f"{len(rows)} rows: " + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
    if predicted:
        # clusters run at the same time: the plan takes as long as its slowest cluster
        seconds = [row["predicted_s"] for row in predicted]
        total = "?" if None in seconds else f"{max(seconds):.1f} s"
        print("predicted duration (at each cluster's quota, from a full burst; ? = no mutation_rate in its profile):")
        for row in predicted:
            when = "?" if row["predicted_s"] is None else f"{row['predicted_s']:.1f} s"
            print(f"  {row['cluster']}: {row['mutations']} mutations, {when}")
        print(f"  total (clusters in parallel): {total}")
    print(f"results written to {args.output}")
    return 1 if counts.get("failed") or counts.get("not_sent") else 0  # as `throttled-admin apply`


def _predicted(results: Any) -> list[Any]:
    """A dry run's prediction per cluster: its planned mutations, and when the last of them is admitted (null when
    the quota rate is unknown: a row's predicted_s is then null)."""
    from pyspark.sql import functions as F

    planned = results.filter("status = 'planned'")
    unknown = F.max(F.col("predicted_s").isNull().cast("int")) == 1
    rows: list[Any] = (
        planned.groupBy("cluster")
        .agg(
            F.sum("mutations").alias("mutations"),
            F.when(unknown, None).otherwise(F.max("predicted_s")).alias("predicted_s"),
        )
        .orderBy("cluster")
        .collect()
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
