"""PySpark 4 warns that it does not fully support pandas 3 whenever its Arrow paths check the pandas
version (mapInArrow, createDataFrame). The pipeline never hands pandas objects to Spark, so for callers
the warning is noise (and an error under ``-W error``); it is ignored only around those calls."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PANDAS3_WARNING", "pandas3_warning_ignored"]

PANDAS3_WARNING = "PySpark does not yet fully support pandas"


@contextmanager
def pandas3_warning_ignored() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", PANDAS3_WARNING, FutureWarning)
        yield
