"""The row schema of ``samza-kafka``: Spark's Kafka source columns plus ``task``.

Spark's own Kafka source (``KafkaRecordToRowConverter``) defines ``key``, ``value``, ``topic``, ``partition``,
``offset``, ``timestamp``, ``timestampType`` and, with ``includeHeaders``, ``headers``; we keep their names,
types, order and nullability (all nullable) so queries written for ``format("kafka")`` work unchanged, and
append ``task`` (the Samza task name, i.e. the Spark input partition that read the row).

``read()`` yields ``pyarrow.RecordBatch``es, and PySpark 4.3 rejects the first batch unless its schema equals
``to_arrow_schema(schema, timezone="UTC")`` exactly (``pyspark/sql/worker/plan_data_source_read.py``,
SPARK-55583).  The Arrow schema is therefore *derived* from the Spark schema with that very call
(``pyspark_compat.spark_arrow_schema``, which makes the same schema on 4.0 and 4.1), never written a second time
by hand.
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..source.pyspark_compat import spark_arrow_schema

__all__ = ["kafka_schema", "kafka_arrow_schema", "TASK_COLUMN", "HEADERS_COLUMN"]

TASK_COLUMN = "task"
HEADERS_COLUMN = "headers"

_HEADER_TYPE = StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)])


def kafka_schema(include_headers: bool) -> StructType:
    """Spark schema of the source: Kafka columns (as Spark's ``kafka`` source), optional headers, then ``task``."""
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
    if include_headers:
        fields.append(StructField(HEADERS_COLUMN, ArrayType(_HEADER_TYPE, containsNull=True), True))
    fields.append(StructField(TASK_COLUMN, StringType(), True))
    return StructType(fields)


@lru_cache(maxsize=4)
def kafka_arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema every RecordBatch of the source must have: exactly what PySpark checks against.

    Same call as ``records_to_arrow_batches`` in PySpark 4.3: ``to_arrow_schema(schema, timezone="UTC")``
    (``timestamp`` becomes ``timestamp[us, tz=UTC]``; the same schema on 4.0 / 4.1, see ``spark_arrow_schema``).
    """
    return spark_arrow_schema(kafka_schema(include_headers))
