"""The PySpark versions this package is tested with, checked when a query is defined (``load()``).

The wheel does not pin PySpark (its ``spark`` extra does), so that installing it on a platform that provides Spark
keeps that platform's Spark; the check below is what stops a Spark the package was never run on from failing
later in a way nobody can trace back to the version. The range is what ``make test`` (4.3) and ``make compat``
(4.2) run; docs/deployment.md, "Compatibility", says what passed.
"""

from __future__ import annotations

import re

from ..core.errors import UnsupportedSparkError

__all__ = ["SUPPORTED_PYSPARK", "check_spark_version"]

#: [lowest, first unsupported) (major, minor) of PySpark; the ``spark`` extra in pyproject.toml says the same
SUPPORTED_PYSPARK = ((4, 2), (4, 4))


def supported_range() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_PYSPARK
    return f">={lo_major}.{lo_minor},<{hi_major}.{hi_minor}"


def check_spark_version(version: str | None = None) -> None:
    """Raise :class:`UnsupportedSparkError` naming ``version`` (default: the running PySpark's) and the range."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    match = re.match(r"(\d+)\.(\d+)", version)
    if match and SUPPORTED_PYSPARK[0] <= (int(match.group(1)), int(match.group(2))) < SUPPORTED_PYSPARK[1]:
        return
    raise UnsupportedSparkError(
        f"this Spark runs PySpark {version}, but spark-samza-source supports PySpark {supported_range()} (the "
        "versions its tests run on). Use a Spark in that range (pip install 'spark-samza-source[spark]' installs "
        "one), or a release of spark-samza-source made for your Spark")
