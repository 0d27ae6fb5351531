"""The stream reader skeleton both sources share: the thin glue between Spark's calls and the job coordinator.

Spark runs a stream reader twice: once on the driver (``initialOffset`` / ``latestOffset`` / ``partitions`` /
``commit``, in one long-lived Python process) and once per task on executors, unpickled, for ``read``. Only the
parsed options and the schema travel: :class:`SamzaStreamReader` pickles exactly those and rebuilds itself with
``__init__``; the coordinator is created on first use, on the driver only. A system subclass names its format,
its offset class, its input partition class and its coordinator, and implements ``read``.

PySpark 4.0 and 4.1 have no admission control: ``latestOffset()`` comes without a start or a limit. The reader then
follows Spark's calls to know where the next batch starts
(:class:`~spark_samza_source.core.next_batch.NextBatchStart`) and applies its own limit (the options'
``max_rows_per_batch``, the one ``getDefaultReadLimit`` gives 4.2+).

The read limit is Spark's on one side and a row cap on the other: this module turns one into the other
(``getDefaultReadLimit``, ``latestOffset``) and hands the cap to the coordinator, whose planner applies it.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader

from ..core.errors import FormatVersionError, OffsetFormatError
from ..core.next_batch import NextBatchStart, canonical
from .contracts import OffsetCodec, StreamCoordinator
from .offset_json import COMMIT_END, LATEST_START, PARTITIONS_END, PARTITIONS_START, OffsetRole, offset_problem
from .partition import TaskInputPartition
from .pyspark_compat import SupportsTriggerAvailableNow

__all__ = ["SamzaStreamReader"]


class SamzaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's calls, one line each, over a system's :class:`~spark_samza_source.source.job_coordinator.JobCoordinator`.

    Subclasses set ``FORMAT`` (``samza-kafka``), ``offset_class`` (``from_json`` / ``to_json``) and
    ``partition_class`` (a :class:`TaskInputPartition`), and define ``_make_coordinator`` and ``read``.
    """

    FORMAT: str
    offset_class: OffsetCodec[Any]
    partition_class: type[TaskInputPartition]

    def __init__(self, options: Any, schema: Any) -> None:
        self.options = options
        self.schema = schema
        self._coordinator: StreamCoordinator[Any] | None = None  # driver only, created lazily (never pickled)
        # PySpark 4.0 / 4.1 only (latestOffset without a start): where the next batch starts, and the initial offset
        # the first plan of a new checkpoint started from (Spark asks initialOffset() only after that plan)
        self._next_batch = NextBatchStart()
        self._planned_initial: dict | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["options"], state["schema"])

    @abstractmethod
    def _make_coordinator(self) -> StreamCoordinator[Any]:
        """The system's driver-side coordinator for ``self.options``."""

    @abstractmethod
    def read(self, partition: TaskInputPartition) -> Iterator:  # type: ignore[override]  # Spark hands back ours
        """Executors: the rows of one Samza task's share of the batch."""

    @property
    def coordinator(self) -> StreamCoordinator[Any]:
        """The driver's coordinator, created on first use (a reader unpickled on an executor never makes one)."""
        if self._coordinator is None:
            self._coordinator = self._make_coordinator()
        return self._coordinator

    # ---- driver -----------------------------------------------------------------------------------------
    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        max_rows = self.options.max_rows_per_batch
        return ReadMaxRows(max_rows) if max_rows is not None else ReadAllAvailable()

    def initialOffset(self) -> dict:
        if self._planned_initial is not None:  # PySpark 4.0 / 4.1: batch 0 was planned from this one
            return self._planned_initial
        return self.coordinator.initial_offset().to_json()

    def prepareForTriggerAvailableNow(self) -> None:
        self.coordinator.prepare_available_now()

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        """PySpark 4.2+ passes ``start`` and ``limit`` (the parameters make its runner choose admission control);
        4.0 and 4.1 pass nothing, and the source applies its own limit from where it knows the batch starts."""
        if start is None:
            return self._latest_offset_without_admission_control()
        return self._plan(start, _max_rows_of(limit))

    def _plan(self, start: dict, max_rows: int | None) -> dict:
        previous = self._decode(start, LATEST_START)
        planned = self.coordinator.latest_offset(previous, max_rows=max_rows)
        return start if planned is previous else planned.to_json()  # the very same dict: "no new batch"

    def _latest_offset_without_admission_control(self) -> dict:
        start = self._next_batch.start
        from_initial = start is None
        if from_initial:  # a new checkpoint: Spark asks for initialOffset() once this batch is planned
            if self._planned_initial is None:
                self._planned_initial = self.coordinator.initial_offset().to_json()
            start = self._planned_initial
        end = self._plan(start, self.options.max_rows_per_batch)
        self._next_batch.planned(start, end, from_initial=from_initial)
        return end

    def reportLatestOffset(self) -> dict | None:
        """``sources[i].latestOffset`` in Spark's progress (see the coordinator's ``progress_report``)."""
        return None if self._coordinator is None else self._coordinator.progress_report()

    def partitions(self, start: dict, end: dict) -> list[TaskInputPartition]:
        self._next_batch.spark_ran(start, end, source=self.FORMAT)  # (4.0 / 4.1 need it; harmless after)
        if canonical(start) == canonical(end):
            return []  # Spark compares offsets as JSON strings: equal ones are an empty batch
        first, last = self._decode(start, PARTITIONS_START), self._decode(end, PARTITIONS_END)
        plan = self.coordinator.partitions(first, last)
        return [self.partition_class(task.name, tuple(reads)) for task, reads in plan]

    def commit(self, end: dict) -> None:
        end_offset = self._decode(end, COMMIT_END)  # before the coordinator: a bad offset needs none
        self.coordinator.commit(end_offset)

    def decode_offset(self, value: Any) -> Any:
        """The system's offset from its JSON; raises :class:`OffsetFormatError` saying what is wrong with it."""
        return self.offset_class.from_json(value)

    def offset_file(self, value: Any) -> str | None:
        """The file of ``<checkpoint>/offsets/`` that ``value`` came from, when the offset says (None: unknown)."""
        return None

    def _decode(self, value: Any, role: OffsetRole) -> Any:
        """The system's offset from the JSON Spark handed over; an error says which offset file it came from."""
        try:
            return self.decode_offset(value)
        except FormatVersionError:
            raise
        except OffsetFormatError as err:
            raise offset_problem(self.FORMAT, role, err.detail, self.offset_file(value), err.condition) from None


def _max_rows_of(limit: Any) -> int | None:
    """The row cap a ReadLimit asks for, or None for ReadAllAvailable (and anything without a row cap)."""
    value = getattr(limit, "max_rows", None)
    return int(value) if value is not None else None
