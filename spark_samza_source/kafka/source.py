"""The ``samza-kafka`` DataSource and its stream reader: thin glue between Spark and the coordinator.

The driver calls (``initialOffset`` / ``latestOffset`` / ``partitions`` / ``commit``) are the shared skeleton's
(``source/stream_reader.py``) over :class:`~spark_samza_source.kafka.coordinator.KafkaCoordinator`; this module
names the offset and partition classes and runs ``read`` on executors, in a pickled reader holding only the
parsed options: each task reads its offset ranges with ``reader.read_ranges``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ..source.data_source import SamzaDataSource
from ..source.fault_hooks import reporting_batches
from ..source.limits import default_read_limit
from ..source.stream_reader import SamzaStreamReader
from .input_partition import KafkaTaskPartition
from .offset import LogOffset
from .options import KafkaSourceOptions
from .schema import kafka_schema

log = logging.getLogger(__name__)

FORMAT = "samza-kafka"


class SamzaKafkaStreamReader(SamzaStreamReader):
    FORMAT = FORMAT
    offset_class = LogOffset
    partition_class = KafkaTaskPartition

    def __init__(self, options: KafkaSourceOptions, schema) -> None:
        super().__init__(options, schema)
        log.info("created reader: %s", options.describe())

    def _make_coordinator(self):
        from .coordinator import KafkaCoordinator

        return KafkaCoordinator(self.options)

    def getDefaultReadLimit(self):
        return default_read_limit(self.options.max_offsets_per_trigger)

    # ---- executors --------------------------------------------------------------------------------------
    def read(self, partition: KafkaTaskPartition) -> Iterator:
        from .reader import read_ranges

        batches = read_ranges(
            self.options.client_conf,
            partition.task,
            partition.reads,
            include_headers=self.options.include_headers,
            fail_on_data_loss=self.options.fail_on_data_loss,
            max_rows_per_batch=self.options.max_rows_per_arrow_batch,
            poll_timeout_ms=self.options.poll_timeout_ms,
        )
        return reporting_batches(self.options.fault_hooks, batches, task=partition.task,
                                 planned_rows=sum(r.size for r in partition.reads))


class SamzaKafkaDataSource(SamzaDataSource):
    """``spark.readStream.format("samza-kafka")``: Samza task semantics over Kafka."""

    FORMAT = FORMAT
    options_class = KafkaSourceOptions
    stream_reader_class = SamzaKafkaStreamReader

    def schema(self):
        return kafka_schema(self.parsed_options().include_headers)
