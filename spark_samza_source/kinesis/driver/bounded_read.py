"""The driver side of a samza-kinesis batch read: every shard of the stream's lineage, in its task, in range.

It plans through the streaming coordinator's public methods: ``ListShards``, the ``starting.py``
strategies (default ``TRIM_HORIZON`` for a batch), and the planner's first job model (``initial_offset``: the
shard-to-task mapping a new streaming query starts with). With ``job.name``, the tasks the job's streaming query
gave each shard (``shard_tasks.py``, read from its metadata store) come first, so a backfill's ``task`` column is
the streaming query's even after resharding changed the open-shard count. Closed and open shards are all read,
parents before children within a task. The end is fixed here, once: ``LATEST`` is the planning time, so every task
stops at the same instant. Pushed filters (``core/bounded_filters.py``) prune shards and tasks, and
``approximateArrivalTimestamp >=`` starts each shard at ``AT_TIMESTAMP`` (Spark still applies the filter). With
``minPartitions`` a task's lineage families (a shard with its ancestors and descendants) spread over Spark
partitions; a family is never cut, so its parents are still read before their children. Nothing is written to
the metadata store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ...core.bounded_filters import PushedFilters
from ...core.model import TaskName
from ..input_partition import PlannedShardRead
from ..options import ENDING_POSITION, SYSTEM, KinesisBoundedOptions
from ..positions import AT_TIMESTAMP, TRIM_HORIZON, ShardPosition
from ..schema import TASK_COLUMN
from ..shards import lineage_families, lineage_order
from .coordinator import KinesisCoordinator
from .offset import DRAINED
from .planner import initial_offset, spread_families
from .shard_tasks import ShardTasks

log = logging.getLogger(__name__)

__all__ = ["SHARD_ID_COLUMN", "TIMESTAMP_COLUMN", "plan_bounded_read"]

SHARD_ID_COLUMN = "shardId"
TIMESTAMP_COLUMN = "approximateArrivalTimestamp"


def plan_bounded_read(options: KinesisBoundedOptions, pushed: PushedFilters, *, wall_ms=None,
                    ) -> list[tuple[TaskName, list[PlannedShardRead]]]:
    """(task, shard reads) for every task, in task order; each task's reads in lineage order."""
    source = options.source
    now = int(time.time() * 1000) if wall_ms is None else wall_ms
    coordinator = KinesisCoordinator(source, wall_ms=lambda: now)
    shards = coordinator.list_shards()
    starts = coordinator.starting_positions(shards)
    stored = _stored_shard_tasks(coordinator) if options.use_stored_job_model else None
    offset = initial_offset(shards, stored.num_tasks if stored else source.tasks, starts.positions,
                            source.assignment, stream=source.stream, system=SYSTEM)
    task_of = _stored_tasks_first(stored, offset, shards) if stored else offset.task_of
    until = options.ending.until_ms - 1 if options.ending.until_ms is not None else now
    reads: dict[TaskName, list[PlannedShardRead]] = {t: [] for t in offset.task_names}
    for info in lineage_order(shards):
        sid = info.shard_id
        state = offset.shards[sid]
        task = task_of(sid)
        if state.status == DRAINED or task is None:
            continue
        if not pushed.allows(SHARD_ID_COLUMN, sid) or not pushed.allows(TASK_COLUMN, task.name):
            continue
        ending = info.ending_sequence
        wanted_end = options.ending.per_shard.get(sid)
        if wanted_end is not None:
            ending = wanted_end if ending is None else str(min(int(ending), int(wanted_end)))
        start = _narrowed(state.start, pushed.min_timestamp_ms)
        reads[task].append(PlannedShardRead(0, None, sid, start, ending, until))
    unknown = sorted(set(options.ending.per_shard) - {s.shard_id for s in shards})
    if unknown:
        log.warning("%s names shards the stream does not list: %s", ENDING_POSITION.name, ", ".join(unknown[:20]))
    return spread_families(list(reads.items()), source.min_partitions, lineage_families(shards))


def _stored_shard_tasks(coordinator: KinesisCoordinator) -> ShardTasks | None:
    """The streaming query's shard -> task map, if this job stored one for this incarnation of the stream."""
    stored = coordinator.shard_tasks.read()
    if stored is None:
        log.info("batch read: no tasks stored for stream %r by job %r; tasks made for this read",
                 coordinator.options.stream, coordinator.options.job_name)
        return None
    identity = coordinator.stream_identity()
    if stored.identity is not None and stored.identity != identity:
        log.warning("batch read: the tasks job %r stored are those of an earlier stream %r (%s; now %s), deleted "
                    "and re-created since; tasks made for this read", coordinator.options.job_name,
                    coordinator.options.stream, stored.identity.describe(), identity.describe())
        return None
    log.info("batch read: the tasks of job %r (%d tasks, %d shards known, as of batch %d)",
             coordinator.options.job_name, stored.num_tasks, len(stored.shards), stored.batch)
    return stored


def _stored_tasks_first(stored: ShardTasks, offset, shards) -> Callable[[str], TaskName | None]:
    """shard -> task: the stored task; else (a shard the query has not planned yet) its parent's, as a streaming
    query's lineage assignment places it; else the task of this read's job model (same task count)."""
    resolved: dict[str, TaskName | None] = {}
    for info in lineage_order(shards):
        sid = info.shard_id
        if sid in stored.shards:
            resolved[sid] = TaskName(stored.shards[sid])
            continue
        inherited = [resolved[p] for p in info.parent_ids if resolved.get(p) is not None]
        resolved[sid] = inherited[0] if inherited else offset.task_of(sid)
    return resolved.get


def _narrowed(start: ShardPosition, min_ms: int | None) -> ShardPosition:
    """``start``, moved to ``AT_TIMESTAMP(min_ms)`` when that is later (a sequence position is kept)."""
    if min_ms is None:
        return start
    if start.type == TRIM_HORIZON or (start.type == AT_TIMESTAMP and (start.timestamp_ms or 0) < min_ms):
        return ShardPosition.at_timestamp(min_ms)
    return start
