"""Pure planning of samza-kinesis micro-batches: lineage, shard mapping, startpoints.

No boto3, no Spark, no I/O: the coordinator lists the shards, reads what executors recorded, resolves startpoints
to shard positions and hands everything in; every rule is unit-tested without Kinesis.

- ``initial_offset`` makes batch 0 (never read); ``plan_next(offset N, shards, ends recorded for N)`` makes batch
  ``N + 1``; ``tasks_for_batch(end)`` is what ``partitions(start, end)`` builds, from the end offset alone.
- Lineage: a shard is readable once every parent is drained (learnt from the previous batch's recorded ends),
  otherwise blocked; a known shard gone before it was drained is data loss (``fail_on_data_loss``).
- Startpoints apply when newer than the one recorded in ``applied`` for their (task, SSP), never twice.
- The job model is kept unless ``num_tasks`` changes or ``new_job_model=True`` (then 1:1 again, ``mapper.build``).
- ``plan_next`` is a pipeline of phases over one frozen :class:`PlanInputs`, each a function of its own:
  positions after the batch, unlisted shards (expired or lost), new shards, startpoints, lineage, the mapping.

Design and reasons: docs/architecture.md §4, §6 and §8.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.model import SystemStreamPartition, TaskName, TaskSsp
from ...core.split import split_tasks
from ...options.common import JOB_NAME, METADATA_STORE
from .. import errors
from ..errors import KinesisPlanError
from ..positions import ShardPosition
from ..shards import ShardInfo, index_shards, lineage_order
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

log = logging.getLogger(__name__)

__all__ = [
    "KinesisPlan", "ShardLoss", "ShardStartpoint", "initial_offset", "plan_next", "recreated_stream_offset",
    "spread_shards",
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
    latest_timestamp_ms: int | None = None,
    query_id: str | None = None,
    stream_identity=None,
) -> KinesisOffset:
    """Batch 0 (never read) of a query without a checkpoint, with the first job model.

    ``starting``: one position for every shard (default ``TRIM_HORIZON``), or shard id -> position (e.g. seeded
    from a KCL lease table, ``SHARD_END`` for finished shards); shards missing from the mapping start at
    ``TRIM_HORIZON``. ``num_tasks=None``: the open-shard count (at least 1).
    ``latest_timestamp_ms``: record the time ``LATEST`` was resolved to (the caller passes ``AT_TIMESTAMP``).

    Nine parameters: the first four say what batch 0 reads and how shards map onto tasks; the keyword-only rest
    are recorded verbatim in the offset (its stream and system, when ``LATEST`` was resolved, the query and the
    stream incarnation), so grouping them would only rename the offset's own fields.
    """
    check_assignment(assignment)
    listed = index_shards(shards)
    default = ShardPosition.trim_horizon()
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
    mapper = ShardPartitionMapper.build(num_tasks, live, assignment)
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


@dataclass(frozen=True)
class PlanInputs:
    """What one plan starts from; every phase reads it and none changes it."""

    previous: KinesisOffset
    listed: Mapping[str, ShardInfo]  # ListShards now, by shard id
    recorded_ends: Mapping[str, ShardPosition]
    startpoints: Mapping[str, ShardStartpoint]
    fail_on_data_loss: bool = True


@dataclass(frozen=True)
class ShardStarts:
    """Where every known shard starts, as the phases refine it, with what they learnt on the way.

    ``drained``: shards read to their end by the batch just completed or set there by a startpoint;
    ``last_task``: drained shard -> the task index it was in when drained (carried from plan to plan).
    """

    starts: Mapping[str, ShardPosition]
    drained: tuple[str, ...] = ()
    last_task: Mapping[str, int] = field(default_factory=dict)

    def with_drained(self, previous: KinesisOffset, sid: str, starts: Mapping[str, ShardPosition]) -> ShardStarts:
        last_task = dict(self.last_task)
        _learn_task(last_task, previous, sid)
        return ShardStarts(starts, (*self.drained, sid), last_task)


@dataclass(frozen=True)
class UnlistedShards:
    """Phase 2's answer: shards no longer listed, dropped after their drain (expired) or lost before it."""

    expired: tuple[str, ...] = ()
    losses: tuple[ShardLoss, ...] = ()


@dataclass(frozen=True)
class StartpointsApplied:
    """Phase 4's answer: the starts after due startpoints, the ones taken now, and the offset's record of them."""

    shards: ShardStarts
    taken: Mapping[TaskSsp, AppliedStartpoint]
    applied: Mapping[TaskSsp, int]


@dataclass(frozen=True)
class NextMapping:
    """Phase 6's answer: the shard -> slot mapping of the next offset and its generation."""

    mapper: ShardPartitionMapper
    generation: int
    rebuilt: bool
    last_task: Mapping[str, int]


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
) -> KinesisPlan:
    """Plan batch ``previous.batch + 1``, in six phases over one frozen :class:`PlanInputs`.

    ``shards``: ``ListShards`` now. ``recorded_ends``: shard -> position recorded by executors for
    ``previous.batch`` (call only once that batch completed); every shard readable in ``previous`` must have
    one and no other shard may (:class:`KinesisPlanError`), except for batch 0, which is never read (its
    ends are ignored). ``num_tasks``/``new_job_model``: see the module docstring.
    """
    check_assignment(assignment)
    inputs = PlanInputs(previous, index_shards(shards), recorded_ends, dict(startpoints or {}), fail_on_data_loss)
    positions = positions_after_batch(inputs)
    unlisted = drop_unlisted(inputs, positions.starts)
    listed_starts = {sid: pos for sid, pos in positions.starts.items() if sid in inputs.listed}
    starts, new_shards = with_new_shards(inputs.listed, listed_starts)
    taken = apply_startpoints(inputs, ShardStarts(starts, positions.drained, positions.last_task))
    statuses = _statuses(taken.shards.starts, inputs.listed)
    rebuild = new_job_model or (num_tasks is not None and num_tasks != previous.mapper.num_tasks)
    mapping = next_mapping(inputs, statuses, taken.shards.last_task, assignment,
                           (num_tasks or previous.mapper.num_tasks) if rebuild else None)
    offset = next_offset(inputs, taken, statuses, mapping)
    return KinesisPlan(
        offset=offset,
        has_work=any(status == READABLE for status in statuses.values()),
        new_shards=sorted(new_shards),
        released=released_shards(previous, statuses),
        drained=sorted(set(taken.shards.drained)),
        expired=sorted(unlisted.expired),
        data_loss=list(unlisted.losses),
        applied=dict(offset.startpoints),
        new_job_model=mapping.rebuilt,
        overloaded=[(task_name(mapping.mapper.task_of_slot(s)), offset.ssp(s))
                    for s in mapping.mapper.overloaded_slots()],
    )


# 1. positions: where every known shard starts now

def positions_after_batch(inputs: PlanInputs) -> ShardStarts:
    """Every known shard's start: a readable shard's recorded end, else where it was. Batch 0 was never read."""
    previous = inputs.previous
    # drained shard -> task index it was in when drained: carried forward, and learnt below for new drains
    last_task = {sid: state.last_task for sid, state in previous.shards.items() if state.last_task is not None}
    if previous.batch == 0:
        if inputs.recorded_ends:
            log.warning("ignoring %d ends recorded for batch 0, which is never read (stale metadata?)",
                        len(inputs.recorded_ends))
        return ShardStarts({sid: state.start for sid, state in previous.shards.items()}, (), last_task)
    _check_ends(previous, inputs.recorded_ends)
    starts: dict[str, ShardPosition] = {}
    drained: list[str] = []
    for sid, state in previous.shards.items():
        if state.status != READABLE:
            starts[sid] = state.start
            continue
        end = starts[sid] = inputs.recorded_ends[sid]
        if end.is_shard_end:
            drained.append(sid)
            _learn_task(last_task, previous, sid)
            if sid in inputs.listed and not inputs.listed[sid].closed:
                log.warning("shard %s was read to its end but ListShards still lists it as open", sid)
    return ShardStarts(starts, tuple(drained), last_task)


# 2. lineage ends: shards no longer listed, expired after their drain, or lost

def drop_unlisted(inputs: PlanInputs, starts: Mapping[str, ShardPosition]) -> UnlistedShards:
    """The shards ListShards no longer reports: expired if drained, else data loss (raised or reported)."""
    expired: list[str] = []
    losses: list[ShardLoss] = []
    for sid, position in starts.items():
        if sid in inputs.listed:
            continue
        if position.is_shard_end:
            expired.append(sid)
            continue
        loss = ShardLoss(sid, position, inputs.previous.shards[sid].status)
        _fail_or_report(inputs, loss)
        losses.append(loss)
    return UnlistedShards(tuple(expired), tuple(losses))


def _fail_or_report(inputs: PlanInputs, loss: ShardLoss) -> None:
    if inputs.fail_on_data_loss:
        raise errors.planned_data_loss(inputs.previous.stream, loss.describe())
    # with failOnDataLoss=false the loss goes into the plan; the coordinator logs and counts it once


# 3. shards seen for the first time (children of a reshard) start at TRIM_HORIZON

def with_new_shards(
    listed: Mapping[str, ShardInfo], starts: Mapping[str, ShardPosition]
) -> tuple[dict[str, ShardPosition], list[str]]:
    """``starts`` with every listed shard not in it at ``TRIM_HORIZON``; and those new shards."""
    out = dict(starts)
    new = [sid for sid in listed if sid not in out]
    for sid in new:
        out[sid] = ShardPosition.trim_horizon()
    return out, new


# 4. drained parents and startpoints

def apply_startpoints(inputs: PlanInputs, shards: ShardStarts) -> StartpointsApplied:
    """Move every shard with a startpoint newer than the one its (task, SSP) last applied; never twice.

    A startpoint on a shard not listed or already read to its end is recorded as applied but moves nothing.
    """
    previous = inputs.previous
    applied = dict(previous.applied)
    taken: dict[TaskSsp, tuple[int, dict[str, ShardPosition]]] = {}
    for sid, sp in sorted(inputs.startpoints.items()):
        _check_startpoint(sid, sp)
        key = (sp.task, sp.ssp)
        if sp.creation_timestamp <= previous.applied.get(key, -1):
            continue  # applied before: never twice
        ts, positions = taken.get(key, (sp.creation_timestamp, {}))
        taken[key] = (max(ts, sp.creation_timestamp), positions)
        applied[key] = taken[key][0]
        if sid not in shards.starts:
            log.warning("startpoint on %s in %s for shard %s ignored: the shard is not listed", sp.ssp, sp.task, sid)
        elif shards.starts[sid].is_shard_end:
            log.warning("startpoint on %s in %s for shard %s ignored: the shard was read to its end", sp.ssp,
                        sp.task, sid)
        else:
            positions[sid] = sp.position
            starts = {**shards.starts, sid: sp.position}
            shards = (shards.with_drained(previous, sid, starts) if sp.position.is_shard_end
                      else ShardStarts(starts, shards.drained, shards.last_task))
    return StartpointsApplied(shards, {k: AppliedStartpoint(ts, pos) for k, (ts, pos) in taken.items()}, applied)


def _check_startpoint(sid: str, sp: object) -> None:
    if not isinstance(sp, ShardStartpoint) or not isinstance(sp.position, ShardPosition) or not (
        isinstance(sp.creation_timestamp, int) and not isinstance(sp.creation_timestamp, bool)
    ):
        raise KinesisPlanError(f"startpoint for shard {sid} must be a ShardStartpoint with a ShardPosition "
                               f"and an int creation timestamp, got {sp!r:.200}")


# 5. lineage: which shards are readable (see ``_statuses``), and which of them were not before

def released_shards(previous: KinesisOffset, statuses: Mapping[str, str]) -> list[str]:
    """Shards readable now that were blocked or unknown in ``previous``."""
    return sorted(
        sid for sid, status in statuses.items()
        if status == READABLE and (sid not in previous.shards or previous.shards[sid].status == BLOCKED)
    )


# 6. the mapping

def next_mapping(
    inputs: PlanInputs,
    statuses: Mapping[str, str],
    last_task: Mapping[str, int],
    assignment: str,
    rebuild_tasks: int | None,
) -> NextMapping:
    """The shard -> slot mapping: rebuilt 1:1 for ``rebuild_tasks`` tasks (a new generation), else the
    previous one with drained shards released and new ones placed by lineage."""
    previous, listed = inputs.previous, inputs.listed
    live = [sid for sid, status in statuses.items() if status != DRAINED]
    if rebuild_tasks is not None:
        mapper = ShardPartitionMapper.build(rebuild_tasks, [listed[s] for s in live], assignment)
        # the tasks of the old model mean nothing in the new one
        return NextMapping(mapper, previous.generation + 1, True, {})
    mapper = previous.mapper.copy()
    for sid in previous.mapper.assignments():
        if statuses.get(sid, DRAINED) == DRAINED:
            mapper.release(sid)
    retired = {sid: task for sid, task in last_task.items() if statuses.get(sid) == DRAINED}
    mapper.place_many(lineage_order(listed[s] for s in live if s not in mapper), listed, assignment, retired)
    return NextMapping(mapper, previous.generation, False, last_task)


def next_offset(
    inputs: PlanInputs, taken: StartpointsApplied, statuses: Mapping[str, str], mapping: NextMapping
) -> KinesisOffset:
    """The offset of batch ``previous.batch + 1`` from the phases' answers."""
    previous, listed, mapper = inputs.previous, inputs.listed, mapping.mapper
    stream, system = previous.stream, previous.system
    return KinesisOffset(
        batch=previous.batch + 1,
        stream=stream,
        system=system,
        mapper=mapper,
        shards={
            sid: ShardState(start, statuses[sid], listed[sid].ending_sequence,
                            mapping.last_task.get(sid) if statuses[sid] == DRAINED else None)
            for sid, start in taken.shards.starts.items()
        },
        generation=mapping.generation,
        startpoints=dict(taken.taken),
        applied={k: v for k, v in taken.applied.items() if slot_owned(mapper, system, stream, *k)},
        latest_timestamp_ms=previous.latest_timestamp_ms,
        query_id=previous.query_id,
        stream_identity=previous.stream_identity,
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
            assert slot is not None  # every undrained shard of an offset is mapped (KinesisOffset checks)
            by_task[slot // per].append((slot, sid, state.start))
    return [
        (task_name(i), [(sid, start) for _, sid, start in sorted(reads, key=lambda r: (r[0], r[1]))])
        for i, reads in enumerate(by_task)
    ]


def spread_shards(plan: Sequence[tuple[TaskName, Sequence[Any]]],
                  min_partitions: int | None) -> list[tuple[TaskName, list[Any]]]:
    """``plan`` (one entry per task, each with its shard reads) as the entries of its Spark input partitions
    (option ``minPartitions``, core/split.py): a task's shards spread over several, a shard never cut. Every
    shard is a unit of its own: a shard is readable only once its parents are drained (``_statuses``), so no
    batch holds a parent and its child, and the shards of one batch may be read in any order. A shard's backlog
    is unknown before it is read, so each weighs the same."""
    return split_tasks(plan, min_partitions, weight=lambda _read: 1, unit=lambda read: read.shard_id)


def spread_families(plan: Sequence[tuple[TaskName, Sequence[Any]]], min_partitions: int | None,
                    family_of: Mapping[str, str]) -> list[tuple[TaskName, list[Any]]]:
    """A batch read's ``plan`` (a task's reads in lineage order, parents and children together) spread as
    :func:`spread_shards` does, but a lineage family (``shards.lineage_families``) is the unit: a parent and its
    children are read by one Spark task, parent first, as a ``foreachPartition`` sink expects; unrelated
    families may go to separate ones."""
    return split_tasks(plan, min_partitions, weight=lambda _read: 1,
                       unit=lambda read: family_of.get(read.shard_id, read.shard_id))


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
            f"the metadata store lost them (namespace kinesis-batch-ends): was '{METADATA_STORE.name}' changed "
            "for this checkpoint, or the store wiped? Reading on would re-read or skip records, so the query stops"
        )
    for sid, end in recorded_ends.items():
        state = previous.shards.get(sid)
        if state is None or state.status != READABLE:
            raise KinesisPlanError(
                f"an end was recorded for shard {sid} in batch {previous.batch} of stream {previous.stream}, which "
                f"did not read it ({'unknown shard' if state is None else state.status}); stale metadata from "
                f"another query with the same {JOB_NAME.name}?"
            )
        if not isinstance(end, ShardPosition):
            raise KinesisPlanError(f"recorded end of shard {sid} must be a ShardPosition, got {end!r:.80}")
