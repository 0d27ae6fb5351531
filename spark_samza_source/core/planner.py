"""Pure planning of the next micro-batch of a partitioned log (Kafka): docs/architecture.md §4-7.

``plan_next`` takes the previous offset, the job model computed for this trigger, the watermarks observed,
the startpoints already resolved to positions, and the read limit; it returns the next offset. It does no
I/O, so every rule here (startpoint rebases, drain-first expansion barriers, data-loss handling, the read
limit split in proportion to backlog) is unit-tested without a broker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .errors import SamzaSourceError
from .jobmodel import JobModel
from .model import SystemStreamPartition, TaskName
from .offset import (
    REBASE_DATA_LOSS,
    REBASE_NEW_PARTITION,
    REBASE_NEW_TASK,
    REBASE_STARTPOINT,
    Barrier,
    LogOffset,
    Rebase,
    TaskSsp,
)

log = logging.getLogger(__name__)

DRAIN_FIRST = "drain-first"
NO_ORDERING = "none"


class DataLossError(SamzaSourceError):
    """Records the query had not read yet are gone (deleted, expired, or the topic was re-created)."""


@dataclass(frozen=True)
class Watermarks:
    """Offsets observed for one partition: ``low`` = log start offset, ``high`` = next offset to be written."""

    low: int
    high: int


@dataclass(frozen=True)
class ResolvedStartpoint:
    """A startpoint for one (task, SSP), already resolved by the system's visitor to a position."""

    position: int
    creation_timestamp: int


@dataclass(frozen=True)
class DataLoss:
    ssp: SystemStreamPartition
    task: TaskName
    lost_from: int
    lost_until: int  # exclusive

    def describe(self) -> str:
        return (
            f"{self.ssp} (task {self.task}): offsets {self.lost_from}..{self.lost_until - 1} are no longer "
            "available (deleted by retention or delete_records, or the topic was re-created)"
        )


@dataclass
class PlanResult:
    offset: LogOffset
    data_loss: list[DataLoss] = field(default_factory=list)
    applied: dict[TaskSsp, ResolvedStartpoint] = field(default_factory=dict)
    released_barriers: list[SystemStreamPartition] = field(default_factory=list)
    new_barriers: list[SystemStreamPartition] = field(default_factory=list)


SiblingFn = Callable[[SystemStreamPartition, int, int], SystemStreamPartition]
"""(new ssp, current count, previous count) -> the SSP that held its keys before this expansion."""


def default_sibling(ssp: SystemStreamPartition, current: int, previous: int) -> SystemStreamPartition:
    return SystemStreamPartition(ssp.system, ssp.stream, ssp.partition % previous)


def plan_next(
    previous: LogOffset,
    job_model: JobModel,
    watermarks: Mapping[SystemStreamPartition, Watermarks],
    *,
    startpoints: Mapping[TaskSsp, ResolvedStartpoint] | None = None,
    max_rows: int | None = None,
    until: Mapping[SystemStreamPartition, int] | None = None,
    ordering: str = DRAIN_FIRST,
    fail_on_data_loss: bool = True,
    sibling_of: SiblingFn = default_sibling,
) -> PlanResult:
    """Plan the batch after ``previous``.

    ``until`` caps every SSP (``Trigger.AvailableNow``: the high watermarks seen when it was prepared; SSPs
    missing from it are not read). Raises :class:`DataLossError` when ``fail_on_data_loss`` and an unread
    range is gone. Returns ``previous`` itself (same object) when nothing changes, so Spark sees an equal
    offset string and plans no empty batch.
    """
    startpoints = dict(startpoints or {})
    result = PlanResult(offset=previous)
    prev_counts = previous.job_model.partition_counts()
    starts: dict[TaskSsp, int] = {}
    rebases: dict[TaskSsp, Rebase] = {}
    applied = {k: v for k, v in previous.applied.items()}
    missing: set[SystemStreamPartition] = set()

    for task, ssps in job_model.tasks.items():
        for ssp in sorted(ssps):
            key = (task, ssp)
            marks = watermarks.get(ssp)
            if marks is None:
                if fail_on_data_loss:
                    raise DataLossError(
                        f"{ssp} (task {task}) is in the job model but the broker no longer reports it "
                        "(partition or topic deleted?). Check the topic; to go on without it, restart with "
                        "failOnDataLoss=false"
                    )
                kept = previous.positions.get(key, previous.position_of(ssp))
                if kept is not None:
                    log.warning("%s is not reported by the broker; not reading it this batch", ssp)
                    starts[key] = kept
                    missing.add(ssp)
                continue
            sp = startpoints.get(key)
            if sp is not None and sp.creation_timestamp > previous.applied.get(key, -1):
                position = min(max(sp.position, marks.low), marks.high)
                if position != sp.position:
                    log.warning("startpoint for %s in %s resolved to %d, clamped into [%d, %d]",
                                ssp, task, sp.position, marks.low, marks.high)
                starts[key] = position
                rebases[key] = Rebase(position, REBASE_STARTPOINT, sp.creation_timestamp)
                applied[key] = sp.creation_timestamp
                result.applied[key] = sp
                continue
            if key in previous.positions:
                start = previous.positions[key]
            elif ssp in job_model.broadcast and previous.position_of(ssp) is not None:
                start = previous.position_of(ssp)
                rebases[key] = Rebase(start, REBASE_NEW_TASK)
            elif previous.position_of(ssp) is not None:
                start = previous.position_of(ssp)  # moved between tasks (non-fixed grouper): progress moves along
            else:
                start = marks.low
                rebases[key] = Rebase(start, REBASE_NEW_PARTITION)
            if start < marks.low or start > marks.high:
                if start < marks.low:
                    loss = DataLoss(ssp, task, start, marks.low)
                else:  # offsets went backwards: the topic was re-created or truncated
                    loss = DataLoss(ssp, task, marks.high, start)
                if fail_on_data_loss:
                    raise DataLossError(
                        f"{loss.describe()}. The query stops so nothing is skipped silently. To continue from "
                        f"the earliest available offset ({marks.low}), restart with failOnDataLoss=false, or "
                        "write a Startpoint for this partition."
                    )
                log.warning("data loss: %s; continuing from offset %d", loss.describe(), marks.low)
                result.data_loss.append(loss)
                start = marks.low
                rebases[key] = Rebase(start, REBASE_DATA_LOSS)
            starts[key] = start

    applied = {k: v for k, v in applied.items() if k in starts}

    # Expansion barriers: carry the ones in force, add one per partition new to a stream that grew.
    barriers: dict[SystemStreamPartition, Barrier] = {
        s: b for s, b in previous.barriers.items() if s in job_model.ssps()
    }
    if ordering == DRAIN_FIRST:
        counts = job_model.partition_counts()
        for (_task, ssp), rebase in rebases.items():
            prev = prev_counts.get(ssp.system_stream)
            if rebase.reason != REBASE_NEW_PARTITION or not prev or ssp in job_model.broadcast:
                continue
            if ssp.partition < prev:
                continue
            sibling = sibling_of(ssp, counts[ssp.system_stream], prev)
            if sibling == ssp or sibling not in watermarks:
                continue
            barriers[ssp] = Barrier(sibling, watermarks[sibling].high)
            result.new_barriers.append(ssp)

    def sibling_start(sibling: SystemStreamPartition) -> int | None:
        found = [pos for (t, s), pos in starts.items() if s == sibling]
        return min(found) if found else None

    # Release barriers whose sibling had been drained before this batch starts (and is itself unblocked).
    changed = True
    while changed:
        changed = False
        for ssp, barrier in list(barriers.items()):
            sib_pos = sibling_start(barrier.sibling)
            if barrier.sibling in barriers:
                continue
            if sib_pos is None or sib_pos >= barrier.drain_to:
                del barriers[ssp]
                result.released_barriers.append(ssp)
                changed = True

    # End positions: everything available up to the cap, minus blocked SSPs, limited in proportion to backlog.
    caps: dict[TaskSsp, int] = {}
    for key, start in starts.items():
        _, ssp = key
        if ssp in missing:
            caps[key] = start
            continue
        high = watermarks[ssp].high
        if until is not None:
            high = min(high, until.get(ssp, start))
        caps[key] = start if ssp in barriers else max(start, high)
    ends = split_read_limit(starts, caps, max_rows)

    new_offset = LogOffset(job_model, ends, rebases, barriers, applied)
    if (
        not rebases
        and ends == dict(previous.positions)
        and job_model == previous.job_model
        and dict(barriers) == dict(previous.barriers)
        and applied == dict(previous.applied)
    ):
        return result  # nothing to do: hand back the previous offset itself
    # (The previous offset's own rebases belong to the batch that ended there; returning ``previous`` above
    # when nothing moved means no empty batch is planned just to drop them.)
    result.offset = new_offset
    return result


def split_read_limit(
    starts: Mapping[TaskSsp, int], caps: Mapping[TaskSsp, int], max_rows: int | None
) -> dict[TaskSsp, int]:
    """End positions reading at most ``max_rows`` in total, split in proportion to each SSP's backlog.

    Largest-remainder rounding makes the total exactly ``min(max_rows, total backlog)``: never more than the
    limit (Spark's own prorating can overshoot by one per partition), and never zero while data waits.
    """
    backlog = {k: caps[k] - starts[k] for k in starts}
    total = sum(backlog.values())
    if max_rows is None or total <= max_rows:
        return dict(caps)
    if max_rows <= 0:
        return dict(starts)
    shares = {k: max_rows * b / total for k, b in backlog.items()}
    take = {k: int(s) for k, s in shares.items()}
    leftover = max_rows - sum(take.values())
    for k in sorted(shares, key=lambda k: (-(shares[k] - take[k]), k))[:leftover]:
        take[k] += 1
    return {k: starts[k] + min(take[k], backlog[k]) for k in starts}
