"""The ``spark`` extra installs what PySpark supports: no run warns about pandas, and Spark Connect's client
dependencies come with it."""

from __future__ import annotations

import re
import warnings

import pytest

from tests.support import REPO

pytest.importorskip("pyspark")


def spark_extra() -> list[str]:
    text = (REPO / "pyproject.toml").read_text()
    match = re.search(r"^spark = \[(.*)\]$", text, re.MULTILINE)
    assert match, "pyproject.toml has no spark extra"
    return re.findall(r'"([^"]+)"', match.group(1))


def test_the_spark_extra_pins_pandas_below_3_and_pulls_in_spark_connect() -> None:
    extra = spark_extra()
    assert any(re.fullmatch(r"pandas>=2\.2,<3", item) for item in extra), extra
    assert any(item.startswith("pyspark[connect]") for item in extra), extra


def test_pyspark_does_not_warn_about_the_installed_pandas() -> None:
    from pyspark.sql.pandas.utils import require_minimum_pandas_version

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "PySpark does not yet fully support pandas >= 3.0.0" would raise
        require_minimum_pandas_version()


def test_the_spark_connect_client_imports() -> None:
    from pyspark.sql.connect.session import SparkSession  # needs grpcio, zstandard, googleapis-common-protos

    assert SparkSession.builder is not None
