"""Pure planning of samza-kinesis micro-batches: lineage, shard mapping, startpoints.

No boto3, no Spark, no I/O: the coordinator lists the shards, reads what executors recorded, resolves startpoints
to shard positions and hands everything in; every rule is unit-tested without Kinesis.

- ``initial_offset`` makes batch 0 (never read); ``plan_next(offset N, shards, ends recorded for N)`` makes batch
  ``N + 1``; ``tasks_for_batch(end)`` is what ``partitions(start, end)`` builds, from the end offset alone.
- Lineage: a shard is readable once every parent is drained (learnt from the previous batch's recorded ends),
  otherwise blocked; a known shard gone before it was drained is data loss (``fail_on_data_loss``).
- Startpoints apply when newer than the one recorded in ``applied`` for their (task, SSP), never twice.
- The job model is kept unless ``num_tasks`` changes or ``new_job_model=True`` (then 1:1 again, ``mapper.build``).

Design and reasons: docs/architecture.md §4, §6 and §8.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.errors import DataLossError
from ..core.model import SystemStreamPartition, TaskName, TaskSsp
from ..spec.common import FAIL_ON_DATA_LOSS_OPTION, JOB_NAME_OPTION, METADATA_STORE_OPTION
from .errors import KinesisPlanError
from .mapper import LINEAGE, ShardPartitionMapper, check_assignment, task_name
from .offset import (
    BLOCKED,
    DRAINED,
    READABLE,
    AppliedStartpoint,
    KinesisOffset,
    ShardState,
    slot_owned,
)
from .positions import ShardPosition
from .shards import ShardInfo, index_shards, lineage_order

log = logging.getLogger(__name__)

__all__ = [
    "KinesisPlan", "ShardLoss", "ShardStartpoint", "initial_offset", "plan_next", "recreated_stream_offset",
    "tasks_for_batch",
]


@dataclass(frozen=True)
class ShardStartpoint:
    """A (task, slot SSP) startpoint resolved by the caller to a position in one shard of that slot."""

    position: ShardPosition
    creation_timestamp: int
    task: TaskName
    ssp: SystemStreamPartition


@dataclass(frozen=True)
class ShardLoss:
    """A shard that disappeared from ListShards before it was drained (``fail_on_data_loss=False``)."""

    shard_id: str
    position: ShardPosition
    status: str

    def describe(self) -> str:
        return (f"shard {self.shard_id} ({self.status}, next position: {self.position}) is no longer listed by "
                "ListShards before it was read to its end: its unread records expired past the stream's retention")


@dataclass
class KinesisPlan:
    offset: KinesisOffset
    has_work: bool  # some shard is readable in ``offset`` (it may still have no new records)
    new_shards: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)  # readable now, blocked or unknown before
    drained: list[str] = field(default_factory=list)  # drained by the batch just completed (or a startpoint)
    expired: list[str] = field(default_factory=list)  # drained shards no longer listed, dropped from the offset
    data_loss: list[ShardLoss] = field(default_factory=list)
    applied: dict[TaskSsp, AppliedStartpoint] = field(default_factory=dict)
    new_job_model: bool = False
    overloaded: list[TaskSsp] = field(default_factory=list)  # slots holding several shards


def initial_offset(
    shards: Sequence[ShardInfo],
    num_tasks: int | None = None,
    starting: Mapping[str, ShardPosition] | ShardPosition | None = None,
    assignment: str = LINEAGE,
    *,
    stream: str,
    system: str = "kinesis",
    slots_per_task: int | None = None,
    default_position: ShardPosition | None = None,
    latest_timestamp_ms: int | None = None,
    query_id: str | None = None,
    stream_identity=None,
) -> KinesisOffset:
    """Batch 0 (never read) of a query without a checkpoint, with the first job model.

    ``starting``: one position for every shard (default ``TRIM_HORIZON``), or shard id -> position (e.g. seeded
    from a KCL lease table, ``SHARD_END`` for finished shards); shards missing from the mapping start at
    ``default_position`` (default ``TRIM_HORIZON``). ``num_tasks=None``: the open-shard count (at least 1).
    ``latest_timestamp_ms``: record the time ``LATEST`` was resolved to (the caller passes ``AT_TIMESTAMP``).
    """
    check_assignment(assignment)
    listed = index_shards(shards)
    default = default_position or ShardPosition.trim_horizon()
    if starting is None:
        starting = ShardPosition.trim_horizon()
    if isinstance(starting, ShardPosition):
        starts = {sid: starting for sid in listed}
    else:
        unknown = sorted(set(starting) - set(listed))
        if unknown:
            log.info("starting positions for %d shards not listed by ListShards are ignored: %s",
                     len(unknown), ", ".join(unknown[:20]))
        starts = {sid: starting.get(sid, default) for sid in listed}
    for sid, pos in starts.items():
        if not isinstance(pos, ShardPosition):
            raise KinesisPlanError(f"starting position of shard {sid} must be a ShardPosition, got {pos!r:.80}")
    statuses = _statuses(starts, listed)
    if num_tasks is None:
        num_tasks = max(1, sum(1 for s in listed.values() if not s.closed))
    live = [listed[sid] for sid, status in statuses.items() if status != DRAINED]
    mapper = ShardPartitionMapper.build(num_tasks, live, assignment, slots_per_task)
    return KinesisOffset(
        batch=0,
        stream=stream,
        system=system,
        mapper=mapper,
        shards={sid: ShardState(starts[sid], statuses[sid], listed[sid].ending_sequence) for sid in listed},
        generation=1,
        latest_timestamp_ms=latest_timestamp_ms,
        query_id=query_id,
        stream_identity=stream_identity,
    )


def recreated_stream_offset(previous: KinesisOffset, shards: Sequence[ShardInfo], identity) -> KinesisOffset:
    """The next offset after ``previous.stream`` was deleted and re-created (``failOnDataLoss=false``): every
    shard of the new stream from ``TRIM_HORIZON``, a new job model (generation + 1, the same task count), the
    query id and the startpoints already applied kept."""
    fresh = initial_offset(shards, previous.num_tasks, ShardPosition.trim_horizon(), stream=previous.stream,
                           system=previous.system, query_id=previous.query_id)
    return KinesisOffset(
        batch=previous.batch + 1,
        stream=previous.stream,
        system=previous.system,
        mapper=fresh.mapper,
        shards=fresh.shards,
        generation=previous.generation + 1,
        applied={k: v for k, v in previous.applied.items()
                 if slot_owned(fresh.mapper, previous.system, previous.stream, *k)},
        latest_timestamp_ms=previous.latest_timestamp_ms,
        query_id=previous.query_id,
        stream_identity=identity,
    )


def plan_next(
    previous: KinesisOffset,
    shards: Sequence[ShardInfo],
    recorded_ends: Mapping[str, ShardPosition],
    *,
    startpoints: Mapping[str, ShardStartpoint] | None = None,
    fail_on_data_loss: bool = True,
    assignment: str = LINEAGE,
    num_tasks: int | None = None,
    new_job_model: bool = False,
    slots_per_task: int | None = None,
) -> KinesisPlan:
    """Plan batch ``previous.batch + 1``.

    ``shards``: ``ListShards`` now. ``recorded_ends``: shard -> position recorded by executors for
    ``previous.batch`` (call only once that batch completed); every shard readable in ``previous`` must have
    one and no other shard may (:class:`KinesisPlanError`), except for batch 0, which is never read (its
    ends are ignored). ``num_tasks``/``new_job_model``/``slots_per_task``: see the module docstring.
    """
    check_assignment(assignment)
    listed = index_shards(shards)
    startpoints = dict(startpoints or {})
    first = previous.batch == 0
    plan_new_shards: list[str] = []
    drained: list[str] = []
    # drained shard -> task index it was in when drained: carried forward, and learnt below for new drains
    last_task = {sid: state.last_task for sid, state in previous.shards.items() if state.last_task is not None}
    expired: list[str] = []
    losses: list[ShardLoss] = []

    # 1. where every known shard starts now
    if first:
        if recorded_ends:
            log.warning("ignoring %d ends recorded for batch 0, which is never read (stale metadata?)",
                        len(recorded_ends))
        starts = {sid: state.start for sid, state in previous.shards.items()}
    else:
        _check_ends(previous, recorded_ends)
        starts = {}
        for sid, state in previous.shards.items():
            if state.status == READABLE:
                end = recorded_ends[sid]
                starts[sid] = end
                if end.is_shard_end:
                    drained.append(sid)
                    _learn_task(last_task, previous, sid)
                    if sid in listed and not listed[sid].closed:
                        log.warning("shard %s was read to its end but ListShards still lists it as open", sid)
            else:
                starts[sid] = state.start

    # 2. shards no longer listed: expired after their drain, or lost
    for sid in [s for s in starts if s not in listed]:
        position = starts.pop(sid)
        if position.is_shard_end:
            expired.append(sid)
            continue
        status = previous.shards[sid].status
        loss = ShardLoss(sid, position, status)
        if fail_on_data_loss:
            raise DataLossError(
                f"samza-kinesis stream {previous.stream}: {loss.describe()}. The query stops so nothing is skipped "
                f"silently; to continue without it restart with {FAIL_ON_DATA_LOSS_OPTION}=false"
            )
        log.warning("data loss: %s; continuing without it", loss.describe())
        losses.append(loss)

    # 3. shards seen for the first time (children of a reshard) start at TRIM_HORIZON
    for sid in listed:
        if sid not in starts:
            starts[sid] = ShardPosition.trim_horizon()
            plan_new_shards.append(sid)

    # 4. startpoints
    applied_map = dict(previous.applied)
    applied_now: dict[TaskSsp, tuple[int, dict[str, ShardPosition]]] = {}
    for sid, sp in sorted(startpoints.items()):
        if not isinstance(sp, ShardStartpoint) or not isinstance(sp.position, ShardPosition) or not (
            isinstance(sp.creation_timestamp, int) and not isinstance(sp.creation_timestamp, bool)
        ):
            raise KinesisPlanError(f"startpoint for shard {sid} must be a ShardStartpoint with a ShardPosition "
                                   f"and an int creation timestamp, got {sp!r:.200}")
        key = (sp.task, sp.ssp)
        if sp.creation_timestamp <= previous.applied.get(key, -1):
            continue  # applied before: never twice
        ts, positions = applied_now.get(key, (sp.creation_timestamp, {}))
        applied_now[key] = (max(ts, sp.creation_timestamp), positions)
        applied_map[key] = applied_now[key][0]
        if sid not in starts:
            log.warning("startpoint on %s in %s for shard %s ignored: the shard is not listed", sp.ssp, sp.task, sid)
        elif starts[sid].is_shard_end:
            log.warning("startpoint on %s in %s for shard %s ignored: the shard was read to its end", sp.ssp,
                        sp.task, sid)
        else:
            starts[sid] = positions[sid] = sp.position
            if sp.position.is_shard_end:
                drained.append(sid)
                _learn_task(last_task, previous, sid)

    # 5. lineage
    statuses = _statuses(starts, listed)
    released = sorted(
        sid for sid, status in statuses.items()
        if status == READABLE and (sid not in previous.shards or previous.shards[sid].status == BLOCKED)
    )

    # 6. the mapping
    generation = previous.generation
    rebuild = new_job_model or (num_tasks is not None and num_tasks != previous.mapper.num_tasks)
    live = [sid for sid, status in statuses.items() if status != DRAINED]
    if rebuild:
        mapper = ShardPartitionMapper.build(num_tasks or previous.mapper.num_tasks, [listed[s] for s in live],
                                            assignment, slots_per_task)
        generation += 1
        last_task = {}  # the tasks of the old model mean nothing in the new one
    else:
        mapper = previous.mapper.copy()
        for sid in previous.mapper.assignments():
            if statuses.get(sid, DRAINED) == DRAINED:
                mapper.release(sid)
        retired = {sid: task for sid, task in last_task.items() if statuses.get(sid) == DRAINED}
        mapper.place_many(lineage_order(listed[s] for s in live if s not in mapper), listed, assignment, retired)

    stream, system = previous.stream, previous.system
    offset = KinesisOffset(
        batch=previous.batch + 1,
        stream=stream,
        system=system,
        mapper=mapper,
        shards={
            sid: ShardState(starts[sid], statuses[sid], listed[sid].ending_sequence,
                            last_task.get(sid) if statuses[sid] == DRAINED else None)
            for sid in starts
        },
        generation=generation,
        startpoints={k: AppliedStartpoint(ts, pos) for k, (ts, pos) in applied_now.items()},
        applied={k: v for k, v in applied_map.items() if slot_owned(mapper, system, stream, *k)},
        latest_timestamp_ms=previous.latest_timestamp_ms,
        query_id=previous.query_id,
        stream_identity=previous.stream_identity,
    )
    return KinesisPlan(
        offset=offset,
        has_work=any(status == READABLE for status in statuses.values()),
        new_shards=sorted(plan_new_shards),
        released=released,
        drained=sorted(set(drained)),
        expired=sorted(expired),
        data_loss=losses,
        applied=dict(offset.startpoints),
        new_job_model=rebuild,
        overloaded=[(task_name(mapper.task_of_slot(s)), offset.ssp(s)) for s in mapper.overloaded_slots()],
    )


def tasks_for_batch(offset: KinesisOffset) -> list[tuple[TaskName, list[tuple[str, ShardPosition]]]]:
    """What the batch ending at ``offset`` reads: every task in order (idle ones with an empty list), each with
    its readable shards (by slot, then shard id) and their start positions. Built from ``offset`` alone."""
    mapper = offset.mapper
    per = mapper.slots_per_task
    by_task: list[list[tuple[int, str, ShardPosition]]] = [[] for _ in range(mapper.num_tasks)]
    for sid, state in offset.shards.items():
        if state.status == READABLE:
            slot = mapper.slot_of(sid)
            by_task[slot // per].append((slot, sid, state.start))
    return [
        (task_name(i), [(sid, start) for _, sid, start in sorted(reads, key=lambda r: (r[0], r[1]))])
        for i, reads in enumerate(by_task)
    ]


# ---- helpers ---------------------------------------------------------------------------------------------
def _learn_task(last_task: dict[str, int], previous: KinesisOffset, sid: str) -> None:
    """Remember the task ``sid`` is in as it is drained (it is released from its slot in this plan)."""
    task = previous.mapper.task_of(sid)
    if task is not None:
        last_task[sid] = task


def _statuses(starts: Mapping[str, ShardPosition], listed: Mapping[str, ShardInfo]) -> dict[str, str]:
    """drained (at SHARD_END), readable (every parent drained or unknown), else blocked."""
    out: dict[str, str] = {}
    for sid, position in starts.items():
        if position.is_shard_end:
            out[sid] = DRAINED
            continue
        ready = all(p == sid or p not in starts or starts[p].is_shard_end for p in listed[sid].parent_ids)
        out[sid] = READABLE if ready else BLOCKED
    return out


def _check_ends(previous: KinesisOffset, recorded_ends: Mapping[str, ShardPosition]) -> None:
    missing = [sid for sid, state in previous.shards.items() if state.status == READABLE and sid not in recorded_ends]
    if missing:
        raise KinesisPlanError(
            f"batch {previous.batch} of stream {previous.stream} read shard(s) {', '.join(missing[:20])} but no end "
            f"was recorded for them; plan the next batch only after batch {previous.batch} completed. If it did, "
            f"the metadata store lost them (namespace kinesis-batch-ends): was '{METADATA_STORE_OPTION}' changed "
            "for this checkpoint, or the store wiped? Reading on would re-read or skip records, so the query stops"
        )
    for sid, end in recorded_ends.items():
        state = previous.shards.get(sid)
        if state is None or state.status != READABLE:
            raise KinesisPlanError(
                f"an end was recorded for shard {sid} in batch {previous.batch} of stream {previous.stream}, which "
                f"did not read it ({'unknown shard' if state is None else state.status}); stale metadata from "
                f"another query with the same {JOB_NAME_OPTION}?"
            )
        if not isinstance(end, ShardPosition):
            raise KinesisPlanError(f"recorded end of shard {sid} must be a ShardPosition, got {end!r:.80}")
