"""The ``samza-kafka`` DataSource and its stream reader: thin glue between Spark and the coordinator.

Spark runs ``latestOffset``/``partitions``/``commit`` in one long-lived Python process on the driver (the
coordinator lives there), and ``read`` on executors in a *second*, pickled reader instance that only sees what
``__init__`` set: so ``__init__`` keeps nothing but the parsed options.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from ..core.model import SystemStreamPartition
from ..core.offset import LogOffset
from ..spark.limits import MinRowsGate, default_read_limit, max_rows_of
from ..spark.partition import TaskInputPartition
from .options import KafkaSourceOptions
from .schema import kafka_schema

log = logging.getLogger(__name__)


class SamzaKafkaDataSource(DataSource):
    """``spark.readStream.format("samza-kafka")``: Samza task semantics over Kafka."""

    @classmethod
    def name(cls) -> str:
        return "samza-kafka"

    def schema(self):
        options = KafkaSourceOptions.parse(self.options)
        return kafka_schema(options.include_headers)

    def streamReader(self, schema) -> SamzaKafkaStreamReader:
        return SamzaKafkaStreamReader(KafkaSourceOptions.parse(self.options), schema)


class SamzaKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: KafkaSourceOptions, schema) -> None:
        self.options = options
        self.schema = schema
        self._coordinator = None  # driver only, created lazily (never pickled to executors)
        self._gate: MinRowsGate | None = None
        self._until: dict[SystemStreamPartition, int] | None = None
        log.info("created reader: %s", options.describe())

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"], state["schema"])

    @property
    def coordinator(self):
        if self._coordinator is None:
            from .coordinator import KafkaCoordinator

            self._coordinator = KafkaCoordinator(self.options)
        return self._coordinator

    # ---- driver -----------------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        return self.coordinator.initial_offset().to_json()

    def getDefaultReadLimit(self):
        return default_read_limit(self.options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._until = self.coordinator.available_now_target()
        log.info("Trigger.AvailableNow: reading up to the end offsets seen now (%d partitions)", len(self._until))

    def latestOffset(self, start: dict, limit) -> dict:
        previous = LogOffset.from_json(start)
        planned = self.coordinator.latest_offset(previous, max_rows=max_rows_of(limit), until=self._until)
        if planned is previous:
            return start  # hand Spark back the very same dict: equal offset strings mean "no new batch"
        if self._until is None and self.options.min_offsets_per_trigger is not None:
            if self._gate is None:
                self._gate = MinRowsGate(self.options.min_offsets_per_trigger, self.options.max_trigger_delay_ms,
                                         time.monotonic)
            rows = sum(planned.positions.values()) - sum(
                previous.positions.get(k, planned.positions[k]) for k in planned.positions
            )
            if not planned.rebases and not self._gate.allows(rows):
                return start
            self._gate.batch_planned()
        return planned.to_json()

    def reportLatestOffset(self) -> dict | None:
        marks = self.coordinator.latest_watermarks
        return {s.key: m.high for s, m in sorted(marks.items())} or None

    def partitions(self, start: dict, end: dict):
        if json.dumps(start, sort_keys=True) == json.dumps(end, sort_keys=True):
            return []
        plan = self.coordinator.partitions(LogOffset.from_json(start), LogOffset.from_json(end))
        return [TaskInputPartition(task.name, tuple(ranges)) for task, ranges in plan]

    def commit(self, end: dict) -> None:
        self.coordinator.commit(LogOffset.from_json(end))

    # ---- executors --------------------------------------------------------------------------------------
    def read(self, partition: TaskInputPartition) -> Iterator:
        from .reader import read_ranges

        return read_ranges(
            self.options.client_conf,
            partition.task,
            partition.ranges,
            include_headers=self.options.include_headers,
            fail_on_data_loss=self.options.fail_on_data_loss,
            max_rows_per_batch=self.options.max_rows_per_arrow_batch,
            poll_timeout_ms=self.options.poll_timeout_ms,
        )
