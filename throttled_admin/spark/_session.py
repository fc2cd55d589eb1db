"""A local SparkSession set up for admin work: small, quiet, and using this interpreter for workers."""

from __future__ import annotations

import os
import sys
from typing import Any

from throttled_admin.spark._quiet import PANDAS3_WARNING, pandas3_warning_ignored

__all__ = ["local_session"]


def local_session(app_name: str = "throttled-admin", master: str = "local[2]", **conf: str) -> Any:
    """``SparkSession.builder.getOrCreate()`` for local runs and tests: the UI off, few shuffle partitions,
    and the workers on this Python (otherwise Spark starts ``python3`` from PATH, which may lack pyarrow).
    Under ``spark-submit`` use ``SparkSession.builder.getOrCreate()`` instead: the cluster decides."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master)
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
