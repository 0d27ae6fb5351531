"""The ``samza-kafka`` DataSource and its stream reader: thin glue between Spark and the coordinator.

Spark runs ``latestOffset``/``partitions``/``commit`` in one long-lived Python process on the driver (the
coordinator lives there), and ``read`` on executors in a *second*, pickled reader instance that only sees what
``__init__`` set: so ``__init__`` keeps nothing but the parsed options.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from ..core.errors import FormatVersionError, OffsetFormatError
from ..core.model import SystemStreamPartition
from ..spark.limits import MinRowsGate, default_read_limit, max_rows_of
from ..spark.partition import TaskInputPartition
from ..spark.reader_glue import OptionsOnlyPickling, claim_once
from .offset import REBASE_NEW_PARTITION, LogOffset, Rebase
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
        install_offset_json_guard()
        return SamzaKafkaStreamReader(KafkaSourceOptions.parse(self.options), schema)


class SamzaKafkaStreamReader(OptionsOnlyPickling, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: KafkaSourceOptions, schema) -> None:
        self.options = options
        self.schema = schema
        self._coordinator = None  # driver only, created lazily (never pickled to executors)
        self._gate: MinRowsGate | None = None
        self._until: dict[SystemStreamPartition, int] | None = None
        # failOnDataLoss=false: records skipped because they were gone when a batch was planned, for
        # reportLatestOffset; (SSP key, first lost offset) -> end of the lost range (exclusive), since this run began
        self._data_loss: dict[tuple[str, int], int] = {}
        self._initial: dict | None = None  # what initialOffset returned, until the first latestOffset
        # failOnDataLoss=false: topics found deleted and re-created (read again from their start) -> new topic ID
        self._recreated: dict[str, str] = {}
        log.info("created reader: %s", options.describe())

    def _make_coordinator(self):
        from .coordinator import KafkaCoordinator

        return KafkaCoordinator(self.options)

    # ---- driver -----------------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        self._initial = self.coordinator.initial_offset().to_json()
        self._count_data_loss_list(self.coordinator.initial_data_loss)
        return self._initial

    def getDefaultReadLimit(self):
        return default_read_limit(self.options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._until = self.coordinator.available_now_target()
        log.info("Trigger.AvailableNow: reading up to the end offsets seen now (%d partitions)", len(self._until))

    def latestOffset(self, start: dict, limit) -> dict:
        previous = parse_offset(start, LATEST_START)
        planned = self.coordinator.latest_offset(previous, max_rows=max_rows_of(limit), until=self._until)
        self._count_data_loss(self.coordinator.last_plan)
        for topic, (_old, new) in (getattr(self.coordinator.last_plan, "recreated", None) or {}).items():
            self._recreated[topic] = new
        initial, self._initial = self._initial, None
        if planned is previous:
            return start  # hand Spark back the very same dict: equal offset strings mean "no new batch"
        if initial is not None and start == initial:
            planned = _record_first_batch_starts(previous, planned)
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
        """The high watermarks by SSP key (``progress.sources[i].latestOffset``), plus:

        - ``"dataLoss": {SSP key: records skipped since this run started}`` once a batch (or ``startingOffsets``)
          skipped lost records (``failOnDataLoss=false``);
        - ``"recreatedTopics": {topic: new topic ID}`` for topics found deleted and re-created (read again from
          their start, ``failOnDataLoss=false``);
        - ``"malformedStartpoints": N`` while the store holds startpoints that can never apply (unknown ``@type``,
          a negative offset ...; skipped, logged once each at WARN).

        No SSP key lacks a '.', so these entries cannot collide with one."""
        marks = self.coordinator.latest_watermarks
        out: dict[str, Any] = {s.key: m.high for s, m in sorted(marks.items())}
        if self._data_loss:
            lost: dict[str, int] = {}
            for (ssp_key, lost_from), lost_until in self._data_loss.items():
                lost[ssp_key] = lost.get(ssp_key, 0) + lost_until - lost_from
            out["dataLoss"] = dict(sorted(lost.items()))
        if self._recreated:
            out["recreatedTopics"] = dict(sorted(self._recreated.items()))
        malformed = self.coordinator.malformed_startpoints
        if malformed:
            out["malformedStartpoints"] = len(malformed)
        return out or None

    def _count_data_loss(self, plan) -> None:
        self._count_data_loss_list(getattr(plan, "data_loss", None) or ())

    def _count_data_loss_list(self, losses) -> None:
        for loss in losses:
            key = (loss.ssp.key, loss.lost_from)
            # re-planned from the same start (a held-back batch): the same loss again, perhaps grown
            self._data_loss[key] = max(self._data_loss.get(key, loss.lost_until), loss.lost_until)

    def partitions(self, start: dict, end: dict):
        if json.dumps(start, sort_keys=True) == json.dumps(end, sort_keys=True):
            return []
        plan = self.coordinator.partitions(parse_offset(start, PARTITIONS_START), parse_offset(end, PARTITIONS_END))
        return [TaskInputPartition(task.name, tuple(ranges)) for task, ranges in plan]

    def commit(self, end: dict) -> None:
        self.coordinator.commit(parse_offset(end, COMMIT_END))

    # ---- executors --------------------------------------------------------------------------------------
    def read(self, partition: TaskInputPartition) -> Iterator:
        from .reader import read_ranges

        batches = read_ranges(
            self.options.client_conf,
            partition.task,
            partition.ranges,
            include_headers=self.options.include_headers,
            fail_on_data_loss=self.options.fail_on_data_loss,
            max_rows_per_batch=self.options.max_rows_per_arrow_batch,
            poll_timeout_ms=self.options.poll_timeout_ms,
        )
        marker = self.options.fail_in_read_once_marker
        if marker and any(r.size > 0 for r in partition.ranges):
            return _die_once_in_read(marker, partition.task, batches)
        return batches


# Which offset Spark handed over, and where in the checkpoint it comes from. Spark passes the offset's JSON, not
# its file, and never the checkpoint location: the messages say which file of <checkpoint>/offsets/ it is.
# (Each file there is "v1", a line of Spark's metadata, then one line per source: this source's offset.)
LATEST_START = ("the start offset of the next batch (latestOffset)",
                "the newest batch file in <checkpoint>/offsets/ (the highest number)")
PARTITIONS_START = ("the start offset of the batch being planned (partitions)",
                    "the batch file before the newest in <checkpoint>/offsets/ (on a restart: the second highest "
                    "number)")
PARTITIONS_END = ("the end offset of the batch being planned (partitions)",
                  "the newest batch file in <checkpoint>/offsets/ (the highest number)")
COMMIT_END = ("the end offset of the batch being committed (commit)",
              "a batch file in <checkpoint>/offsets/ whose number is also in <checkpoint>/commits/ (the highest)")
_BY_RUNNER_FUNCTION = {
    "latest_offset_func": LATEST_START,
    "latest_offset_admission_control_func": LATEST_START,
    "partitions_func": PARTITIONS_START,  # its second offset (the end) is told apart below
    "commit_func": COMMIT_END,
}


def _offset_problem(role: tuple[str, str], problem: str) -> OffsetFormatError:
    what, where = role
    return OffsetFormatError(
        f"samza-kafka cannot use {what} that Spark read from the query's checkpoint: {problem}. It is in {where}, "
        "on the line after Spark's metadata line. Spark does not tell the source the checkpoint location or the "
        "batch number, so check that file: restore it from a backup, or remove that batch's files from "
        "<checkpoint>/offsets/ and <checkpoint>/commits/ so the batch is planned again; or start a new "
        "checkpoint (the job model and startpoints are kept in the metadata store for the same job.name)"
    )


def parse_offset(value, role: tuple[str, str]) -> LogOffset:
    """``LogOffset.from_json`` whose error says which offset Spark handed over and which file it comes from."""
    try:
        return LogOffset.from_json(value)
    except FormatVersionError:
        raise
    except OffsetFormatError as err:
        raise _offset_problem(role, str(err)) from None


class _OffsetJson:
    """Stands in for the ``json`` module inside PySpark's streaming source runner (see
    :func:`install_offset_json_guard`): offsets that are not JSON fail with this source's error."""

    def __init__(self, real) -> None:
        self._real = real

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def loads(self, text, *args, **kwargs):
        try:
            return self._real.loads(text, *args, **kwargs)
        except (ValueError, RecursionError) as err:
            caller = sys._getframe(1)
            role = _BY_RUNNER_FUNCTION.get(caller.f_code.co_name)
            if role is None:
                raise
            if role is PARTITIONS_START and "start_offset" in caller.f_locals:
                role = PARTITIONS_END
            raise _offset_problem(role, f"it is not valid JSON ({err!s:.200})") from None


def install_offset_json_guard() -> None:
    """In PySpark's streaming source runner, parse the offsets Spark hands the source through :class:`_OffsetJson`.

    The runner decodes each offset with ``json.loads`` *before* calling ``latestOffset`` / ``partitions`` /
    ``commit``; a hand-edited or damaged offset file would otherwise fail with a bare ``JSONDecodeError``
    naming no file. Only done inside that runner process (its module is ``__main__`` there), and only when it
    still has the layout this was written against (PySpark 4.2 / 4.3: a module-level ``json`` and the functions
    named in ``_BY_RUNNER_FUNCTION``); anywhere else nothing changes.
    """
    runner = sys.modules.get("__main__")
    spec = getattr(runner, "__spec__", None)
    if getattr(spec, "name", None) != "pyspark.sql.streaming.python_streaming_source_runner":
        return
    current = getattr(runner, "json", None)
    if current is None or isinstance(current, _OffsetJson) or not hasattr(runner, "partitions_func"):
        return
    runner.json = _OffsetJson(current)


def _record_first_batch_starts(initial: LogOffset, planned: LogOffset) -> LogOffset:
    """Batch 0 of a new checkpoint: record where every (task, SSP) starts as a rebase in its end offset.

    Spark's offset log holds end offsets only. When it replays an uncommitted batch 0 (the driver died during
    it) it asks ``initialOffset()`` again for the start, and that is computed afresh: ``latest`` has moved on,
    ``earliest`` has moved up if records were deleted meanwhile. Without the starts recorded here the replay
    would silently skip records (even with failOnDataLoss=true). Every SSP is new to the query in its first
    batch, hence the reason ``new-partition``; rebases the planner made (startpoints, ...) are kept.
    """
    rebases = dict(planned.rebases)
    for key in planned.positions:
        if key not in rebases and key in initial.positions:
            rebases[key] = Rebase(initial.positions[key], REBASE_NEW_PARTITION)
    if len(rebases) == len(planned.rebases):
        return planned
    return LogOffset(planned.job_model, planned.positions, rebases, planned.barriers, planned.applied,
                     planned.topic_ids)


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
