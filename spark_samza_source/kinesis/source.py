"""The ``samza-kinesis`` DataSource and its stream reader: thin glue between Spark and the coordinator.

``read`` runs on executors in a pickled reader that only holds the parsed options: each task reads its shards
from the batch's start positions, yielding rows as they arrive, and records where each shard stopped
(put-if-absent); a retried or speculative attempt reads exactly to the recorded end, and an attempt that read past
an end another attempt recorded first fails, so Spark discards its rows (``batch_ends``, docs/architecture.md §8).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from ..spark.partition import TaskInputPartition
from ..spark.reader_glue import OptionsOnlyPickling
from .options import KinesisSourceOptions
from .schema import kinesis_schema

log = logging.getLogger(__name__)


class SamzaKinesisDataSource(DataSource):
    """``spark.readStream.format("samza-kinesis")``: Samza task semantics and KCL-style resharding."""

    @classmethod
    def name(cls) -> str:
        return "samza-kinesis"

    def schema(self):
        KinesisSourceOptions.parse(self.options)  # fail at analysis time on bad options
        return kinesis_schema()

    def streamReader(self, schema) -> SamzaKinesisStreamReader:
        return SamzaKinesisStreamReader(KinesisSourceOptions.parse(self.options), schema)


class SamzaKinesisStreamReader(OptionsOnlyPickling, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: KinesisSourceOptions, schema) -> None:
        self.options = options
        self.schema = schema
        self._coordinator = None
        self._available_now = False

    def _make_coordinator(self):
        from .coordinator import KinesisCoordinator

        return KinesisCoordinator(self.options)

    # ---- driver -----------------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        return self.coordinator.initial_offset().to_json()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True
        self.coordinator.prepare_available_now()

    def latestOffset(self, start: dict, limit) -> dict:
        previous = _load_offset(start, "latestOffset", "the start of the next batch: the last offset in the "
                                "checkpoint's offsets/ directory")
        planned = self.coordinator.latest_offset(previous)
        return start if planned is previous else planned.to_json()

    def reportLatestOffset(self) -> dict | None:
        """None, unless this run skipped data with ``failOnDataLoss=false`` (a re-created stream, expired
        shards): then ``{"dataLoss": {...}}``, so it shows in the progress as ``sources[i].latestOffset``; and
        ``"malformedStartpoints": N`` while the store holds startpoints that can never apply.

        Otherwise None on purpose: Kinesis has no per-shard "latest offset" to report.

        The only measures are ``GetRecords`` from a position (records or ``MillisBehindLatest``), and those calls
        count against the shard's 5 reads/s that this query's readers need; the executors' recorded batch ends
        are already the next offset's starts, so reporting them would only repeat ``endOffset``. Lag is measured
        on demand instead: ``samza-source lag --stream ...`` (see ``spark_samza_source.ops.lag``).
        """
        if self._coordinator is None:
            return None
        return self._coordinator.data_loss_report()

    def partitions(self, start: dict, end: dict):
        if start == end:
            return []
        plan = self.coordinator.partitions(_load_offset(end, "partitions", "the end of the batch to run"))
        return [TaskInputPartition(task.name, tuple(reads)) for task, reads in plan]

    def commit(self, end: dict) -> None:
        self.coordinator.commit(_load_offset(end, "commit", "the end of the batch being committed"))

    # ---- executors --------------------------------------------------------------------------------------
    def read(self, partition: TaskInputPartition) -> Iterator:
        if not partition.ranges:
            return iter(())
        from .task import read_task

        return read_task(self.options, partition)


def _load_offset(value, call: str, role: str):
    """The offset Spark hands to ``call``, or an :class:`OffsetFormatError` naming the offset log file and what is
    wrong with it (PySpark's runner parses the file's JSON before the source sees it: a file that is not JSON at all
    fails there, with PySpark's own error)."""
    from .offset import FormatVersionError, KinesisOffset, OffsetFormatError

    batch = value.get("batch") if isinstance(value, dict) else None
    where = (f"offsets/{batch - 1} in the checkpoint location (samza-kinesis batch {batch})"
             if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0 else
             "an entry of the checkpoint location's offsets/ directory")
    fix = (" To fix: restore that file from a backup, or, if it is the newest entry and its batch was never "
           "committed (no commits/ file with the same number), delete it so the batch is planned again; otherwise "
           "start with a new checkpoint location (a startpoint or startingPosition says where)")
    try:
        offset = KinesisOffset.from_json(value)
    except FormatVersionError:
        raise
    except OffsetFormatError as err:
        raise OffsetFormatError(f"samza-kinesis cannot use the offset Spark passed to {call} ({role}), {where}: "
                                f"{err}.{fix}") from None
    if not offset.shards:
        raise OffsetFormatError(f"samza-kinesis cannot use the offset Spark passed to {call} ({role}), {where}: it "
                                "lists no shards, and a Kinesis stream always has at least one (a damaged or "
                                f"hand-edited file? reading on from it would re-read the whole stream).{fix}")
    return offset
