"""The ``samza-kafka`` DataSource and its stream reader: thin glue between Spark and the coordinator.

The driver calls (``initialOffset`` / ``latestOffset`` / ``partitions`` / ``commit``) are the shared skeleton's
(``source/stream_reader.py``) over :class:`~spark_samza_source.kafka.driver.coordinator.KafkaCoordinator`; this module
names the offset and partition classes and runs ``read`` on executors, in a pickled reader holding only the
parsed options: each task reads its offset ranges with ``reader.read_ranges``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ..source.bounded_reader import PushdownBoundedReader, SamzaBoundedReader
from ..source.data_source import SamzaDataSource
from ..source.fault_hooks import reporting_batches
from ..source.stream_reader import SamzaStreamReader
from ..source.worker_heap import freezing_after_read
from .driver.offset import KafkaOffset
from .input_partition import KafkaTaskPartition
from .options import BOUNDED_ONLY_OPTIONS, KafkaSourceOptions
from .schema import TASK_COLUMN, kafka_schema

log = logging.getLogger(__name__)

FORMAT = "samza-kafka"


class SamzaKafkaStreamReader(SamzaStreamReader):
    FORMAT = FORMAT
    offset_class = KafkaOffset
    partition_class = KafkaTaskPartition

    def __init__(self, options: KafkaSourceOptions, schema) -> None:
        super().__init__(options, schema)
        log.info("created reader: %s", options.describe())

    def _make_coordinator(self):
        from .driver.coordinator import KafkaCoordinator

        _name_a_crash()
        return KafkaCoordinator(self.options)

    # ---- executors --------------------------------------------------------------------------------------
    def read(self, partition: KafkaTaskPartition) -> Iterator:  # type: ignore[override]  # ours
        return read_task_ranges(self.options, partition)


def read_task_ranges(options: KafkaSourceOptions, partition: KafkaTaskPartition) -> Iterator:
    """Executors: one task's offset ranges, as Arrow batches (a streaming batch and a batch read alike)."""
    from .executor.reader import KafkaReadSettings, read_ranges

    settings = KafkaReadSettings(include_headers=options.include_headers,
                                 fail_on_data_loss=options.fail_on_data_loss,
                                 max_rows_per_batch=options.max_rows_per_arrow_batch,
                                 poll_timeout_ms=options.poll_timeout_ms, read_path=options.read_path)
    batches = read_ranges(options.client_conf, partition.task, partition.reads, settings)
    return freezing_after_read(reporting_batches(options.fault_hooks, batches, task=partition.task,
                                                 planned_rows=sum(r.size for r in partition.reads)))


class SamzaKafkaBoundedReader(SamzaBoundedReader):
    """``spark.read.format("samza-kafka")``: every task's ranges between the starting and ending options."""

    partition_class = KafkaTaskPartition
    filter_columns = {"value_columns": {"topic": str, "partition": int, TASK_COLUMN: str},
                      "timestamp_column": "timestamp", "offset_column": "offset"}

    @staticmethod
    def parse_options(raw, use_stored_job_model: bool):
        from .options import KafkaBoundedOptions

        return KafkaBoundedOptions.parse(raw, use_stored_job_model)

    def plan(self):
        from .driver.bounded_read import plan_bounded_read

        return plan_bounded_read(self.options, self.pushed)

    def read(self, partition: KafkaTaskPartition) -> Iterator:  # type: ignore[override]  # ours
        return read_task_ranges(self.options.source, partition)


class SamzaKafkaPushdownBoundedReader(PushdownBoundedReader, SamzaKafkaBoundedReader):
    """The batch reader with ``pushFilters`` (``spark.sql.python.filterPushdown.enabled`` on)."""


class SamzaKafkaDataSource(SamzaDataSource):
    """``spark.readStream.format("samza-kafka")`` and ``spark.read``: Samza task semantics over Kafka."""

    FORMAT = FORMAT
    options_class = KafkaSourceOptions
    stream_reader_class = SamzaKafkaStreamReader
    bounded_only_options = BOUNDED_ONLY_OPTIONS
    bounded_reader_class = SamzaKafkaBoundedReader
    pushdown_bounded_reader_class = SamzaKafkaPushdownBoundedReader

    def schema(self):
        return kafka_schema(self.schema_options().include_headers)


def _name_a_crash() -> None:
    """A C library aborting the driver's Python process (librdkafka's assertions do, on a replicated cluster that
    loses nodes) ends the query with Spark's bare EOFException / STREAM_FAILED and no cause: with the fault
    handler on, the process writes which fatal signal killed it and the Python stack it was in (the admin call
    under way) to its stderr, which Spark keeps in the driver's log beside librdkafka's own assertion text."""
    import faulthandler

    if not faulthandler.is_enabled():
        faulthandler.enable()
