"""The ``samza-kafka`` DataSource and its stream reader: thin glue between Spark and the coordinator.

Spark runs ``latestOffset``/``partitions``/``commit`` in one long-lived Python process on the driver (the
coordinator lives there), and ``read`` on executors in a *second*, pickled reader instance that only sees what
``__init__`` set: so ``__init__`` keeps nothing but the parsed options.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ..core.offset import LogOffset
from ..source.data_source import SamzaDataSource
from ..source.stream_reader import SamzaStreamReader
from ..spark.limits import default_read_limit
from ..spark.reader_glue import claim_once
from .input_partition import KafkaTaskPartition
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
        marker = self.options.fail_in_read_once_marker
        if marker and any(r.size > 0 for r in partition.reads):
            return _die_once_in_read(marker, partition.task, batches)
        return batches


class SamzaKafkaDataSource(SamzaDataSource):
    """``spark.readStream.format("samza-kafka")``: Samza task semantics over Kafka."""

    FORMAT = FORMAT
    options_class = KafkaSourceOptions
    stream_reader_class = SamzaKafkaStreamReader

    def schema(self):
        return kafka_schema(self.parsed_options().include_headers)


def _die_once_in_read(marker: str, task: str, batches: Iterator) -> Iterator:
    """The test-only fault hook (option ``testing.failInReadOnce``, off by default): the first task attempt that
    gets here while ``marker`` does not exist creates it and kills its own Python worker process with
    ``os._exit(1)`` right after handing Spark its first batch -- a worker dying in the middle of ``read()``, with
    part of the task's rows already sent. Spark fails the attempt and retries the task; the marker makes it once."""
    first = True
    for batch in batches:
        yield batch
        if first:
            first = False
            _exit_once(marker, task)
    if first:
        _exit_once(marker, task)


def _exit_once(marker: str, task: str) -> None:
    import os

    if not claim_once(marker, f"{task}\t{os.getpid()}"):
        return
    log.warning("testing.failInReadOnce: killing this Python worker (pid %d) inside read() of task %r",
                os.getpid(), task)
    os._exit(1)
