"""The row schema of ``samza-kinesis``.

The AWS connector's five columns (``awslabs/spark-sql-kinesis-connector``, ``KinesisClientFactory.kinesisSchema``)
are here with their names and types, so queries written for ``format("aws-kinesis")`` that select by name work
unchanged: ``data``, ``streamName``, ``partitionKey``, ``sequenceNumber``, ``approximateArrivalTimestamp``; the
first four in the connector's positions, the fifth one place later. We add:

* ``subSequenceNumber`` (long, placed after ``sequenceNumber``): the index of a user record inside a KPL-aggregated
  Kinesis record (0, 1, ...); 0 for a record that is not aggregated, as the KCL numbers them.  ``(sequenceNumber,
  subSequenceNumber)`` identifies a user record uniquely within a shard;
* ``shardId`` (as Databricks' connector and the open AWS PR #68);
* ``task``: the Samza task name, i.e. the Spark input partition that read the row.

All columns are nullable (Spark's default).  ``read()`` yields ``pyarrow.RecordBatch``es, and PySpark 4.3 rejects
the first batch unless its schema equals ``to_arrow_schema(schema, timezone="UTC")`` exactly (SPARK-55583), so the
Arrow schema is derived from the Spark schema with that very call, never written a second time by hand.
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType, TimestampType

from ..source.pyspark_compat import spark_arrow_schema

__all__ = ["kinesis_schema", "kinesis_arrow_schema", "COLUMNS", "TASK_COLUMN"]

TASK_COLUMN = "task"
COLUMNS = (
    "data",
    "streamName",
    "partitionKey",
    "sequenceNumber",
    "subSequenceNumber",
    "approximateArrivalTimestamp",
    "shardId",
    TASK_COLUMN,
)


def kinesis_schema() -> StructType:
    """Spark schema of the source (see the module documentation for the column choices)."""
    return StructType([
        StructField("data", BinaryType(), True),
        StructField("streamName", StringType(), True),
        StructField("partitionKey", StringType(), True),
        StructField("sequenceNumber", StringType(), True),
        StructField("subSequenceNumber", LongType(), True),
        StructField("approximateArrivalTimestamp", TimestampType(), True),
        StructField("shardId", StringType(), True),
        StructField(TASK_COLUMN, StringType(), True),
    ])


@lru_cache(maxsize=1)
def kinesis_arrow_schema() -> pa.Schema:
    """The Arrow schema every RecordBatch of the source has: exactly what PySpark checks ``read()`` output against
    (``approximateArrivalTimestamp`` becomes ``timestamp[us, tz=UTC]``)."""
    return spark_arrow_schema(kinesis_schema())
