"""The benchmarks' floor: Python streaming data sources with the samza-kafka schema that do no I/O at all.

Whatever a query over them costs is Spark's own cost for a Python source (planning, the offset and commit logs,
task scheduling, the Arrow hand-over from the Python worker, the sink): no source can make the same query faster.

* ``samza-benchmark-floor`` (throughput): ``tasks`` input partitions per batch of ``rowsPerTask`` rows each, for
  ``batches`` batches.  The rows are PREBUILT: each Python worker builds one Arrow batch the first time and
  re-yields it (in slices of ``sliceRows``, as many rows per Arrow batch as samza-kafka yields by default), so
  the source spends nothing per row.
* ``samza-benchmark-rate-floor`` (latency): records "arrive" at ``rate`` per second from the moment the driver
  creates the reader: ``latestOffset`` counts the records due by now, ``read`` builds them with the timestamp
  each was due at, so ``collection time - timestamp`` is the latency any source would show at best.

Imported by name on Spark's Python workers (the benchmarks put this directory on ``PYTHONPATH`` before the
session starts, see :func:`expose_to_workers`), so the prebuilt batches live in this module and survive between
tasks of a reused worker.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

__all__ = ["FloorSource", "RateFloorSource", "expose_to_workers"]

VALUE_SIZE = 100
DEFAULT_SLICE_ROWS = 10_000  # samza-kafka's maxRowsPerArrowBatch default
_PREBUILT: dict[tuple[int, int], pa.RecordBatch] = {}  # (rows, value size) -> the batch this worker built once


def expose_to_workers() -> None:
    """Put this directory on ``PYTHONPATH`` so the Spark JVM started next hands it to its Python processes."""
    here = str(Path(__file__).resolve().parent)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if here not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([here, *paths])


def _kafka_rows(offsets: pa.Array, timestamps_us: pa.Array, value_size: int = VALUE_SIZE) -> pa.RecordBatch:
    """Rows of the samza-kafka schema (no headers) with the given offsets and timestamps (epoch microseconds)."""
    from spark_samza_source.kafka.schema import kafka_arrow_schema

    schema, n = kafka_arrow_schema(False), len(offsets)
    return pa.RecordBatch.from_arrays([
        pa.nulls(n, pa.binary()), pa.array([b"x" * value_size] * n, pa.binary()), pa.array(["t"] * n),
        pa.array([0] * n, pa.int32()), offsets, timestamps_us.cast(schema.field("timestamp").type),
        pa.array([0] * n, pa.int32()), pa.array(["Partition 0"] * n)], schema=schema)


def prebuilt(rows: int, value_size: int = VALUE_SIZE) -> pa.RecordBatch:
    """The batch of ``rows`` rows this process built the first time it was asked for one."""
    batch = _PREBUILT.get((rows, value_size))
    if batch is None:
        zeros = pa.array([0] * rows, pa.int64())
        batch = _PREBUILT[(rows, value_size)] = _kafka_rows(zeros, zeros, value_size)
    return batch


class CountPartition(InputPartition):
    def __init__(self, rows: int, slice_rows: int, value_size: int = VALUE_SIZE) -> None:
        self.rows, self.slice_rows, self.value_size = rows, slice_rows, value_size


class FloorReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]) -> None:
        self.tasks = int(options.get("tasks", 4))
        self.rows_per_task = int(options["rowsPerTask"])
        self.batches = int(options["batches"])
        self.slice_rows = int(options.get("sliceRows", DEFAULT_SLICE_ROWS))
        self.value_size = int(options.get("valueSize", VALUE_SIZE))

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def latestOffset(self, start: dict, limit) -> dict:
        return {"batch": min(self.batches, start["batch"] + 1)}

    def partitions(self, start: dict, end: dict) -> list:
        if start == end:
            return []
        return [CountPartition(self.rows_per_task, self.slice_rows, self.value_size) for _ in range(self.tasks)]

    def commit(self, end: dict) -> None:
        pass

    def read(self, partition: CountPartition):
        batch = prebuilt(partition.rows, partition.value_size)
        for at in range(0, partition.rows, partition.slice_rows):
            yield batch.slice(at, partition.slice_rows)


class FloorSource(DataSource):
    """Throughput floor: options ``rowsPerTask``, ``batches``, ``tasks`` (4), ``sliceRows`` (10,000), ``valueSize``
    (100 bytes)."""

    @classmethod
    def name(cls) -> str:
        return "samza-benchmark-floor"

    def schema(self):
        from spark_samza_source.kafka.schema import kafka_schema

        return kafka_schema(False)

    def streamReader(self, schema):
        return FloorReader(self.options)


class RatePartition(InputPartition):
    def __init__(self, origin_us: int, rate: float, first: int, end: int) -> None:
        self.origin_us, self.rate, self.first, self.end = origin_us, rate, first, end


class RateFloorReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.rate = float(options["rate"])
        self.tasks = int(options.get("tasks", 4))
        self.origin_us = int(time.time() * 1e6)

    def initialOffset(self) -> dict:
        return {"n": 0}

    def latestOffset(self, start: dict, limit) -> dict:
        return {"n": int((time.time() * 1e6 - self.origin_us) * self.rate / 1e6)}

    def partitions(self, start: dict, end: dict) -> list:
        first, last = start["n"], end["n"]
        if last <= first:
            return []
        cuts = [first + (last - first) * t // self.tasks for t in range(self.tasks + 1)]
        return [RatePartition(self.origin_us, self.rate, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]

    def commit(self, end: dict) -> None:
        pass

    def read(self, partition: RatePartition):
        import pyarrow.compute as pc

        if partition.end <= partition.first:
            return
        offsets = pa.array(range(partition.first, partition.end), pa.int64())
        since_us = pc.floor(pc.multiply(offsets.cast(pa.float64()), 1e6 / partition.rate))
        yield _kafka_rows(offsets, pc.add(since_us.cast(pa.int64(), safe=False), partition.origin_us))


class RateFloorSource(DataSource):
    """Latency floor: option ``rate`` (records per second), ``tasks`` (4)."""

    @classmethod
    def name(cls) -> str:
        return "samza-benchmark-rate-floor"

    def schema(self):
        from spark_samza_source.kafka.schema import kafka_schema

        return kafka_schema(False)

    def streamReader(self, schema):
        return RateFloorReader(self.options)
