"""The Arrow schema of samza-kinesis batches is exactly what PySpark 4.3 checks ``read()`` output against."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

from samza_devkit.spark_arrow import CHECKS_READ_TYPES, spark_derived_arrow_schema
from spark_samza_source.kinesis.schema import COLUMNS, kinesis_arrow_schema, kinesis_schema

AWS_CONNECTOR_COLUMNS = ["data", "streamName", "partitionKey", "sequenceNumber", "approximateArrivalTimestamp"]


def test_arrow_schema_is_what_spark_derives():
    assert kinesis_arrow_schema().equals(spark_derived_arrow_schema(kinesis_schema()))


def test_columns_types_and_nullability():
    schema = kinesis_schema()
    assert schema.fieldNames() == list(COLUMNS)
    assert [n for n in schema.fieldNames() if n in AWS_CONNECTOR_COLUMNS] == AWS_CONNECTOR_COLUMNS
    assert schema.simpleString() == (
        "struct<data:binary,streamName:string,partitionKey:string,sequenceNumber:string,subSequenceNumber:bigint,"
        "approximateArrivalTimestamp:timestamp,shardId:string,task:string>")
    arrow = kinesis_arrow_schema()
    assert [str(f.type) for f in arrow] == [
        "binary", "string", "string", "string", "int64", "timestamp[us, tz=UTC]", "string", "string"]
    assert all(f.nullable for f in arrow) and all(f.nullable for f in schema.fields)


class _FakeSource:
    @classmethod
    def name(cls) -> str:
        return "samza-kinesis"


def _batch() -> pa.RecordBatch:
    arrow = kinesis_arrow_schema()
    return pa.RecordBatch.from_arrays([
        pa.array([b"d"], pa.binary()),
        pa.array(["s"], pa.string()),
        pa.array(["pk"], pa.string()),
        pa.array(["1"], pa.string()),
        pa.array([0], pa.int64()),
        pa.array([datetime(2026, 1, 1, tzinfo=UTC)], arrow.field("approximateArrivalTimestamp").type),
        pa.array(["shardId-000000000000"], pa.string()),
        pa.array(["Partition 0"], pa.string()),
    ], schema=arrow)


def test_pyspark_accepts_batches_with_this_schema():
    """PySpark's own executor-side check (``records_to_arrow_batches``) passes our batch through unchanged."""
    batch = _batch()
    assert list(records_to_arrow_batches(iter([batch]), 10_000, kinesis_schema(), _FakeSource())) == [batch]


def test_pyspark_rejects_a_naive_timestamp():
    """The check is real: the same batch with a timezone-less timestamp is refused (PySpark 4.2.1+)."""
    batch = _batch()
    naive = batch.set_column(5, "approximateArrivalTimestamp", batch.column(5).cast(pa.timestamp("us")))
    if not CHECKS_READ_TYPES:  # 4.0 / 4.1 pass it on: the exact schema is this package's to keep there
        assert list(records_to_arrow_batches(iter([naive]), 10_000, kinesis_schema(), _FakeSource())) == [naive]
        return
    with pytest.raises(Exception, match="DATA_SOURCE_RETURN_SCHEMA_MISMATCH"):
        list(records_to_arrow_batches(iter([naive]), 10_000, kinesis_schema(), _FakeSource()))
