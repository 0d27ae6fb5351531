"""Comparing two Spark outputs in the tests: the same schema and the same rows, in any order, every column.

chispa does the comparing and, on a difference, prints both sides row by row with the differing cells marked.
``pyspark.testing.assertDataFrameEqual`` would do the same, but PySpark 4.3's imports ``pyspark.pandas`` whenever
pandas is installed, and that import fails with the pandas 3 ``pyspark[connect]`` brings (docs/contributing.md).

The rows are collected once per side and put in order here, by the columns that identify a record, rather than by
chispa's ``ignore_row_order`` (a Spark sort of every column, two more jobs per side): the suite's time is mostly
Spark jobs.
"""

from __future__ import annotations

from collections.abc import Sequence

from chispa import assert_basic_rows_equality
from chispa.schema_comparer import assert_schema_equality
from pyspark.sql import DataFrame, Row

__all__ = ["assert_same_collected_rows", "assert_same_rows"]


def assert_same_rows(actual: DataFrame, expected: DataFrame, key: Sequence[str]) -> None:
    """``actual`` and ``expected`` have the same columns and types (nullability aside: a Parquet sink read back
    makes every column nullable) and the same rows, compared whole; ``key``: columns that identify a row, to put
    both sides in one order."""
    assert_schema_equality(actual.schema, expected.schema, ignore_nullable=True)
    assert_same_collected_rows(actual.collect(), expected.collect(), key)


def assert_same_collected_rows(actual: Sequence[Row], expected: Sequence[Row], key: Sequence[str]) -> None:
    """The same check on rows already collected from two outputs of one schema (what a ``foreachBatch`` sink or a
    read made under a setting that must not leak into the other kept)."""
    def in_order(rows: Sequence[Row]) -> list[Row]:
        return sorted(rows, key=lambda row: tuple(row[name] for name in key))

    assert_basic_rows_equality(in_order(actual), in_order(expected))
