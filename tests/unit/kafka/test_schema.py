"""The Arrow schema of samza-kafka batches is exactly what PySpark 4.3 checks ``read()`` output against."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

from samza_devkit.spark_arrow import CHECKS_READ_TYPES, spark_derived_arrow_schema
from spark_samza_source.kafka.schema import kafka_arrow_schema, kafka_schema

SPARK_KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


@pytest.mark.parametrize("include_headers", [False, True])
def test_arrow_schema_is_what_spark_derives(include_headers):
    expected = spark_derived_arrow_schema(kafka_schema(include_headers))
    assert kafka_arrow_schema(include_headers).equals(expected)


@pytest.mark.parametrize("include_headers", [False, True])
def test_columns_types_and_nullability(include_headers):
    schema = kafka_schema(include_headers)
    names = SPARK_KAFKA_COLUMNS + (["headers"] if include_headers else []) + ["task"]
    assert schema.fieldNames() == names
    assert all(f.nullable for f in schema.fields)
    arrow = kafka_arrow_schema(include_headers)
    assert [str(arrow.field(n).type) for n in SPARK_KAFKA_COLUMNS + ["task"]] == [
        "binary", "binary", "string", "int32", "int64", "timestamp[us, tz=UTC]", "int32", "string"]
    assert all(f.nullable for f in arrow)
    if include_headers:
        header = arrow.field("headers").type.value_type
        assert [(f.name, str(f.type)) for f in header] == [("key", "string"), ("value", "binary")]
        assert schema["headers"].simpleString() == "headers:array<struct<key:string,value:binary>>"


def _batch(include_headers: bool) -> pa.RecordBatch:
    schema = kafka_arrow_schema(include_headers)
    cols = {
        "key": pa.array([b"k", None], pa.binary()),
        "value": pa.array([None, b"v"], pa.binary()),
        "topic": pa.array(["t", "t"]),
        "partition": pa.array([0, 0], pa.int32()),
        "offset": pa.array([5, 6], pa.int64()),
        "timestamp": pa.array([1_000_000, 2_000_000], pa.int64()).cast(schema.field("timestamp").type),
        "timestampType": pa.array([0, 1], pa.int32()),
        "headers": pa.array([[("h", b"x")], None], schema.field("headers").type) if include_headers else None,
        "task": pa.array(["Partition 0", "Partition 0"]),
    }
    return pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


class _FakeSource:
    @classmethod
    def name(cls) -> str:
        return "samza-kafka"


@pytest.mark.parametrize("include_headers", [False, True])
def test_pyspark_accepts_batches_with_this_schema(include_headers):
    """Run PySpark's own executor-side check (``records_to_arrow_batches``) on a batch of this schema."""
    batch = _batch(include_headers)
    out = list(records_to_arrow_batches(iter([batch]), 10_000, kafka_schema(include_headers), _FakeSource()))
    assert out == [batch]


def test_pyspark_rejects_a_naive_timestamp():
    """The check is real: the same batch with a timezone-less timestamp is refused (PySpark 4.2.1+)."""
    batch = _batch(False)
    naive = batch.set_column(5, "timestamp", batch.column(5).cast(pa.timestamp("us")))
    if not CHECKS_READ_TYPES:  # 4.0 / 4.1 pass it on: the exact schema is this package's to keep there
        assert list(records_to_arrow_batches(iter([naive]), 10_000, kafka_schema(False), _FakeSource())) == [naive]
        return
    with pytest.raises(Exception, match="DATA_SOURCE_RETURN_SCHEMA_MISMATCH"):
        list(records_to_arrow_batches(iter([naive]), 10_000, kafka_schema(False), _FakeSource()))
