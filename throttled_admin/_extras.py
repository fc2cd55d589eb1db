"""What an optional feature needs installed, said in words that are true wherever throttled_admin is installed.

The requirements of pyproject.toml's extras, written out (tests/test_extras.py checks they agree): an installed
wheel has no checkout to run ``pip install -e '.[cli]'`` in, and the PyPI project named ``throttled-admin`` is
not this one, so a hint names the packages themselves and gives the checkout's command beside them.
"""

from __future__ import annotations

__all__ = ["REQUIREMENTS", "install_hint"]

_TESTING = ("kafka-python>=3.0.12,<4",)
_SPARK = ("pyspark[connect]>=4.0", "pandas>=2.2,<3", "pyarrow>=18")
_CLI = ("rich>=13",)
_PLOT = ("matplotlib>=3.8",)
_METRICS = ("opentelemetry-sdk>=1.30", "opentelemetry-exporter-prometheus>=0.51b0")

REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "testing": _TESTING,
    "spark": _SPARK,
    "cli": _CLI,
    "plot": _PLOT,
    "metrics": _METRICS,
    "demo": (*_TESTING, *_SPARK, *_CLI, *_PLOT, *_METRICS),
}


def install_hint(extra: str) -> str:
    """``pip install 'rich>=13' (throttled_admin's 'cli' extra; in a checkout: pip install -e '.[cli]')``."""
    packages = " ".join(f"'{requirement}'" for requirement in REQUIREMENTS[extra])
    return f"pip install {packages} (throttled_admin's '{extra}' extra; in a checkout: pip install -e '.[{extra}]')"
