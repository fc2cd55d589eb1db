"""The result table's columns, in Spark and in Arrow, and the conversion of results into them."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from throttled_admin.provisioning import RowResult

__all__ = ["arrow_schema", "result_records", "spark_schema"]

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


def _when(epoch_s: float | None) -> datetime | None:
    return None if epoch_s is None else datetime.fromtimestamp(epoch_s, tz=timezone.utc)


def result_records(results: list[RowResult]) -> list[dict[str, Any]]:
    records = []
    for result in results:
        record = result.as_dict()
        record["started_at"] = _when(result.started_at)
        record["finished_at"] = _when(result.finished_at)
        records.append(record)
    return records
