"""What PySpark itself derives from and checks in a Python data source's ``read()`` output, for the schema tests of
both sources: each compares the package's Arrow schema with PySpark's own derivation, not with a copy of it."""

from __future__ import annotations

import inspect

import pyarrow as pa
import pyspark

__all__ = ["CHECKS_READ_TYPES", "spark_derived_arrow_schema"]

#: PySpark 4.2.1 and 4.3 check every type of a read()'s first batch (SPARK-55583); 4.0 and 4.1 only its column
#: count and names, so there a wrong type would fail later in the JVM: the schema must be exact on every version
CHECKS_READ_TYPES = tuple(int(x) for x in pyspark.__version__.split(".")[:2]) >= (4, 2)


def spark_derived_arrow_schema(schema) -> pa.Schema:
    """The Arrow schema PySpark's ``records_to_arrow_batches`` derives: ``to_arrow_schema(schema, timezone="UTC")``
    from 4.2, ``to_arrow_schema(schema)`` on 4.0 / 4.1 (whose ``to_arrow_schema`` has no ``timezone`` and makes
    timestamps UTC by default)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)
