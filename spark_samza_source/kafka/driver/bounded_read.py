"""The driver side of a samza-kafka batch read: every task's offset ranges between the starting and ending options.

It plans through the streaming coordinator's public methods: partition discovery and admin calls, the configured
grouper, the job model stored for ``job.name`` (read, never written: a backfill gets the streaming query's fixed
tasks, partitions added since grouped as the streaming query groups them, a topic no longer read refused unless
``dropTopics`` names it, as the streaming query does), and the ``starting.py`` strategies for both ends. Pushed
filters (``core/bounded_filters.py``) then narrow it: whole topic partitions and tasks are pruned, offset comparisons
cut the ranges, and ``timestamp >=`` starts each partition at ``offsetsForTimes`` (only records that cannot match
are skipped; Spark still applies the filter).
"""

from __future__ import annotations

import logging

from ...core.bounded_filters import PushedFilters
from ...core.jobmodel import JobModel
from ...core.model import SystemStreamPartition, TaskName
from .. import errors
from ..input_partition import KafkaRange
from ..options import KafkaBoundedOptions
from ..schema import TASK_COLUMN
from .coordinator import KafkaCoordinator
from .input_splits import spread_tasks

log = logging.getLogger(__name__)

__all__ = ["plan_bounded_read"]


def plan_bounded_read(options: KafkaBoundedOptions, pushed: PushedFilters) -> list[tuple[TaskName, list[KafkaRange]]]:
    """(task, ranges) for every task of the job model, in task order, ranges in SSP order; with ``minPartitions``
    a task may have several entries (``input_splits.py``)."""
    coordinator = KafkaCoordinator(options.source)
    try:
        return _plan(coordinator, options, pushed)
    finally:
        coordinator.close()


def _plan(coordinator: KafkaCoordinator, options: KafkaBoundedOptions, pushed: PushedFilters):
    source = options.source
    stored = coordinator.stored_job_model(quiet=True) if options.use_stored_job_model else None
    ssps, broadcast = coordinator.discover(stored)
    discovered = list(ssps)
    # as the streaming query: a topic of the stored model that is no longer read leaves only through dropTopics;
    # the others keep their tasks, and partitions added since are grouped as its next plan groups them
    stored = coordinator.without_dropped_topics(stored, ssps, stored_model=True)
    model: JobModel = coordinator.group(stored, ssps, broadcast)
    if stored is not None:
        log.info("batch read: tasks of the job model stored for %s (%d tasks)", source.job_name, len(model.tasks))
    marks = coordinator.watermarks(model.ssps())
    missing = sorted(set(model.ssps()) - set(marks))
    if missing:
        raise errors.bounded_read_partitions_unreported(missing)
    lookup = coordinator.admin.offsets_for_times
    starts = source.starting.starts(model, marks, lookup, fail_on_data_loss=source.fail_on_data_loss,
                                    assigned=discovered).positions
    ends = options.ending.starts(model, marks, lookup, fail_on_data_loss=source.fail_on_data_loss,
                                 assigned=discovered).positions
    backwards = [f"{s}: starts at {starts[s]}, ends at {ends[s]}" for s in sorted(starts) if ends[s] < starts[s]]
    if backwards:
        raise errors.bounded_read_starts_after_ends(backwards)
    wanted = [s for s in sorted(model.ssps()) if _ssp_allowed(pushed, s)]
    if pushed.min_timestamp_ms is not None and wanted:
        found = lookup({(s.stream, s.partition): pushed.min_timestamp_ms for s in wanted})
        for s in wanted:
            first = found.get((s.stream, s.partition))
            starts[s] = max(starts[s], marks[s].high if first is None or first < 0 else first)
    out: list[tuple[TaskName, list[KafkaRange]]] = []
    for task, group in model.tasks.items():
        if not pushed.allows(TASK_COLUMN, task.name):
            continue
        ranges = []
        for s in sorted(group):
            if not _ssp_allowed(pushed, s):
                continue
            begin, end = starts[s], ends[s]
            if pushed.offset_from is not None:
                begin = max(begin, pushed.offset_from)
            if pushed.offset_until is not None:
                end = min(end, pushed.offset_until)
            if end > begin:
                ranges.append(KafkaRange(s.stream, s.partition, begin, end))
        out.append((task, ranges))
    return spread_tasks(out, source.min_partitions, source.copartition)


def _ssp_allowed(pushed: PushedFilters, ssp: SystemStreamPartition) -> bool:
    return pushed.allows("topic", ssp.stream) and pushed.allows("partition", ssp.partition)
