"""A local SparkSession set up for admin work: small, quiet, and using this interpreter for workers."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from throttled_admin.spark._quiet import PANDAS3_WARNING, pandas3_warning_ignored

__all__ = ["LOCAL_TASK_ATTEMPTS", "local_session", "with_retries"]


#: Task attempts in local mode, as ``spark.task.maxFailures`` (4) on a cluster: local[N] alone runs each
#: task once, so one lost Python worker would fail the whole job.
LOCAL_TASK_ATTEMPTS = 4
_LOCAL = re.compile(r"local\[(\d+|\*)\]")


def with_retries(master: str) -> str:
    """``local[N]`` (and ``local``) as ``local[N,4]``, so Spark retries a failed task locally too; any other
    master (``local[N,F]``, ``spark://``, ...) as given."""
    if master == "local":
        master = "local[1]"
    match = _LOCAL.fullmatch(master)
    return f"local[{match.group(1)},{LOCAL_TASK_ATTEMPTS}]" if match else master


def local_session(app_name: str = "throttled-admin", master: str = "local[2]", **conf: str) -> Any:
    """``SparkSession.builder.getOrCreate()`` for local runs and tests: the UI off, few shuffle partitions, bound
    to 127.0.0.1 only, the workers on this Python (otherwise Spark starts ``python3`` from PATH, which may lack
    pyarrow), and task retries (``local[2]`` runs as ``local[2,4]``: a task is tried up to 4 times, as on a cluster).
    Under ``spark-submit`` use ``SparkSession.builder.getOrCreate()`` instead: the cluster decides."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark picks a non-loopback interface for what the driver settings below do not cover, and warns that it did
    # when the host name resolves to 127.0.0.1; read by the JVM this starts.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name).master(with_retries(master))
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # its carriage-return bars garble line-oriented output
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        # PySpark 4's workers warn about pandas 3 on import; the pipeline does not use pandas.
        "spark.executorEnv.PYTHONWARNINGS": f"ignore:{PANDAS3_WARNING}:FutureWarning",
        **conf,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    with pandas3_warning_ignored():  # PySpark 4 checks the pandas version while starting up
        return builder.getOrCreate()
