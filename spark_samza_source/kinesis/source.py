"""The ``samza-kinesis`` DataSource and its stream reader: thin glue between Spark and the coordinator.

``read`` runs on executors in a pickled reader that only holds the parsed options: each task reads its shards
from the batch's start positions, yielding rows as they arrive, and records where each shard stopped
(put-if-absent); a retried or speculative attempt reads exactly to the recorded end, and an attempt that read past
an end another attempt recorded first fails, so Spark discards its rows (``executor/task.py``,
``executor/recorded_reads.py``, docs/architecture.md §8). The batches pass the fault-hook seam as samza-kafka's
do (``source/fault_hooks.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..source.bounded_reader import PushdownBoundedReader, SamzaBoundedReader
from ..source.data_source import SamzaDataSource
from ..source.fault_hooks import reporting_batches
from ..source.stream_reader import SamzaStreamReader
from ..source.worker_heap import freezing_after_read
from . import errors
from .driver.offset import KinesisOffset
from .input_partition import KinesisTaskPartition
from .options import BOUNDED_ONLY_OPTIONS, KinesisSourceOptions
from .schema import TASK_COLUMN, kinesis_schema

FORMAT = "samza-kinesis"


class SamzaKinesisStreamReader(SamzaStreamReader):
    FORMAT = FORMAT
    offset_class = KinesisOffset
    partition_class = KinesisTaskPartition

    def _make_coordinator(self):
        from .driver.coordinator import KinesisCoordinator

        return KinesisCoordinator(self.options)

    def decode_offset(self, value: Any) -> KinesisOffset:
        offset = KinesisOffset.from_json(value)
        if not offset.shards:
            raise errors.offset_invalid("it lists no shards, and a Kinesis stream always has at least one (a damaged "
                                        "or hand-edited file? reading on from it would re-read the whole stream)")
        return offset

    def offset_file(self, value: Any) -> str | None:
        """Each samza-kinesis offset carries its batch number: batch N's end is ``offsets/N-1``."""
        batch = value.get("batch") if isinstance(value, dict) else None
        if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0:
            return f"offsets/{batch - 1}"
        return None

    # ---- executors --------------------------------------------------------------------------------------
    def read(self, partition: KinesisTaskPartition) -> Iterator:  # type: ignore[override]  # ours
        from .executor.task import read_task

        return freezing_after_read(reporting_batches(self.options.fault_hooks, read_task(self.options, partition),
                                                     task=partition.task, shards=len(partition.reads)))


class SamzaKinesisBoundedReader(SamzaBoundedReader):
    """``spark.read.format("samza-kinesis")``: every shard of the lineage between the starting and ending
    positions, in its task."""

    partition_class = KinesisTaskPartition
    filter_columns = {"value_columns": {"shardId": str, TASK_COLUMN: str},
                      "timestamp_column": "approximateArrivalTimestamp"}

    @staticmethod
    def parse_options(raw, use_stored_job_model: bool):
        from .options import KinesisBoundedOptions

        return KinesisBoundedOptions.parse(raw, use_stored_job_model)

    def plan(self):
        from .driver.bounded_read import plan_bounded_read

        return plan_bounded_read(self.options, self.pushed)

    def read(self, partition: KinesisTaskPartition) -> Iterator:  # type: ignore[override]  # ours
        from .executor.bounded_task import read_bounded_task

        return freezing_after_read(read_bounded_task(self.options.source, partition))


class SamzaKinesisPushdownBoundedReader(PushdownBoundedReader, SamzaKinesisBoundedReader):
    """The batch reader with ``pushFilters`` (``spark.sql.python.filterPushdown.enabled`` on)."""


class SamzaKinesisDataSource(SamzaDataSource):
    """``spark.readStream.format("samza-kinesis")``: Samza task semantics and KCL-style resharding."""

    FORMAT = FORMAT
    options_class = KinesisSourceOptions
    stream_reader_class = SamzaKinesisStreamReader
    bounded_only_options = BOUNDED_ONLY_OPTIONS
    bounded_reader_class = SamzaKinesisBoundedReader
    pushdown_bounded_reader_class = SamzaKinesisPushdownBoundedReader

    def schema(self):
        self.schema_options()  # fail at analysis time on bad options
        return kinesis_schema()
