"""The bounded-read skeleton both sources share (``spark.read``): one Spark partition per Samza task, as streaming.

A bounded read is a single plan: the system's planner (``kafka/driver/bounded_read.py``,
``kinesis/driver/bounded_read.py``) finds what each task reads between the starting and the ending options, narrowed
by the pushed filters, and the executors run the same read paths as a micro-batch (``kafka/executor/reader.py``,
``kinesis/executor/reader.py``). A bounded read never writes to the metadata store and needs no ``job.name`` unless
it should use the job's stored job model (Kafka).

Filter pushdown: Spark refuses (``DATA_SOURCE_PUSHDOWN_DISABLED``) a reader that implements ``pushFilters`` when
``spark.sql.python.filterPushdown.enabled`` is off, and that conf is not visible to the Python worker that calls
``DataSource.reader``. Spark calls ``reader`` from one of two workers: ``data_source_pushdown_filters`` only when
pushdown is on (it then calls ``pushFilters``), ``plan_data_source_read`` otherwise (or when there are no filters
to push). :func:`called_for_filter_pushdown` tells which, so ``reader`` returns the pushdown subclass only there,
and a read works in both settings.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader

from ..core import errors
from ..core.bounded_filters import PushedFilters, push_filters
from ..options.common import JOB_NAME, METADATA_STORE
from .partition import TaskInputPartition

__all__ = [
    "BOUNDED_JOB_NAME", "PushdownBoundedReader", "SamzaBoundedReader", "bounded_raw_options",
    "refuse_bounded_only_options",
]

log = logging.getLogger(__name__)

#: The job name a batch read without ``job.name`` parses its options with: nothing is stored under it.
BOUNDED_JOB_NAME = "batch-read"


def refuse_bounded_only_options(raw: Mapping[str, str], names: Sequence[str], fmt: str) -> None:
    """A streaming query refuses the options that only say where a batch read stops (Spark's Kafka source:
    "Ending offset not valid in streaming queries")."""
    given = {str(k).lower() for k in raw}
    for name in names:
        if name.lower() in given:
            raise errors.invalid_option(
                f"option '{name}' is not valid in streaming queries: it says where a batch read "
                f"(spark.read.format('{fmt}')) stops, and a streaming query reads on. Remove it from the "
                "readStream, or use spark.read for a bounded read"
            )


def bounded_raw_options(raw: Mapping[str, str], *, strict: bool = True) -> tuple[dict[str, str], bool]:
    """The options a batch read parses with, and whether the job's metadata store is to be read.

    Without ``job.name`` the read uses no store (the grouper decides the tasks): a placeholder name and a
    process-local store let the shared option parser run unchanged, and nothing is ever written. ``strict``
    refuses ``metadata.store`` without ``job.name`` (a batch read); the schema, which serves streaming queries
    too, parses with ``strict=False`` (a streaming query then fails on the missing ``job.name`` when it starts).
    """
    out = {str(k): v for k, v in raw.items()}
    keys = {k.lower() for k in out}
    if JOB_NAME.name.lower() in keys and str(out[_key(out, JOB_NAME.name)]).strip():
        return out, True
    if METADATA_STORE.name.lower() in keys:
        if not strict:
            out[JOB_NAME.name] = BOUNDED_JOB_NAME
            return out, False
        raise errors.invalid_option(
            f"option '{METADATA_STORE.name}' is set without '{JOB_NAME.name}': a batch read uses the store only "
            f"to take the tasks of the job's stored job model, which it finds by {JOB_NAME.name}. Set "
            f"{JOB_NAME.name} to the streaming query's, or remove {METADATA_STORE.name} to group the partitions "
            "with the configured grouper"
        )
    out[JOB_NAME.name] = BOUNDED_JOB_NAME
    out[METADATA_STORE.name] = "memory:" + BOUNDED_JOB_NAME
    return out, False


def _key(raw: Mapping[str, str], name: str) -> str:
    return next(k for k in raw if k.lower() == name.lower())


class SamzaBoundedReader(DataSourceReader):
    """``spark.read``: the plan of every task's reads on the driver, the system's read path on executors.

    Subclasses set ``partition_class`` and ``filter_columns`` (keyword arguments of
    :func:`~spark_samza_source.core.bounded_filters.push_filters`) and define ``plan`` and ``read``.
    """

    partition_class: type[TaskInputPartition]
    filter_columns: dict[str, Any]

    def __init__(self, options: Any, schema: Any) -> None:
        self.options = options
        self.schema = schema
        self.pushed = PushedFilters()

    @staticmethod
    @abstractmethod
    def parse_options(raw: Any, use_stored_job_model: bool) -> Any:
        """The system's bounded options from the raw options (``SamzaDataSource.bounded_read_options``)."""

    @abstractmethod
    def plan(self) -> list[tuple[Any, list]]:
        """Driver: (task, reads) for every task, narrowed by ``self.pushed``."""

    @abstractmethod
    def read(self, partition: TaskInputPartition) -> Iterator:  # type: ignore[override]  # Spark hands back ours
        """Executors: the rows of one task's reads."""

    def partitions(self) -> list[TaskInputPartition]:
        if self.pushed.empty:
            log.info("batch read: the pushed filters (%s) match nothing; reading nothing", self.pushed.describe())
            return []
        plan = self.plan()
        parts = [self.partition_class(task.name, tuple(reads)) for task, reads in plan if reads]
        log.info("batch read: %d tasks with records to read (pushed filters: %s)", len(parts),
                 self.pushed.describe())
        return parts


class PushdownBoundedReader(SamzaBoundedReader):
    """A batch reader that takes Spark's filters (``spark.sql.python.filterPushdown.enabled`` on)."""

    def pushFilters(self, filters):
        self.pushed, unhandled = push_filters(list(filters), **self.filter_columns)
        return unhandled
