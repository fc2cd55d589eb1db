"""The result table's columns, in Spark and in Arrow, and the conversion of results into them."""

from __future__ import annotations

import math
from typing import Any

from throttled_admin.provisioning import RowResult

__all__ = ["arrow_schema", "result_batch", "spark_schema"]

# (name, Spark SQL type, Arrow type name): the RowResult fields, epoch seconds as UTC timestamps.
_COLUMNS = (
    ("cluster", "string"),
    ("topic", "string"),
    ("action", "string"),
    ("status", "string"),
    ("error_code", "int"),
    ("error_message", "string"),
    ("attempts", "int"),
    ("throttle_time_ms", "bigint"),
    ("started_at", "timestamp"),
    ("finished_at", "timestamp"),
    ("mutations", "int"),
    ("detail", "string"),
    ("predicted_s", "double"),
    ("error_name", "string"),
    ("quota_debt_ms", "bigint"),
)


def spark_schema() -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromDDL(", ".join(f"{name} {kind}" for name, kind in _COLUMNS))


def arrow_schema() -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "double": pa.float64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([(name, types[kind]) for name, kind in _COLUMNS])


def _microseconds(epoch_s: float | None) -> int | None:
    """Epoch seconds as whole microseconds, rounded as ``datetime.fromtimestamp`` rounds them (half to even on the
    fraction), so a timestamp reads the same as a ``datetime`` of it would."""
    if epoch_s is None:
        return None
    fraction, whole = math.modf(epoch_s)
    return int(whole) * 1_000_000 + round(fraction * 1_000_000)


def result_batch(results: list[RowResult]) -> Any:
    """The results as one Arrow record batch of ``arrow_schema()``, built a column at a time: a dict and two
    ``datetime`` objects per row were a tenth of a fleet's Python workers' samples (docs/benchmarks.md)."""
    import pyarrow as pa

    schema = arrow_schema()
    columns = []
    for (name, kind), field in zip(_COLUMNS, schema, strict=True):
        values = [getattr(result, name) for result in results]
        if kind == "timestamp":
            columns.append(pa.array([_microseconds(v) for v in values], pa.int64()).cast(field.type))
        else:
            columns.append(pa.array(values, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
