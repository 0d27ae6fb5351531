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

from ..core.errors import DataLossError
from ..core.expansion import DefaultPartitionExpansionAlgorithm, PartitionExpansionAlgorithm, checked_feeders
from ..core.jobmodel import JobModel
from ..core.model import SystemStream, SystemStreamPartition, TaskSsp
from ..spec.common import FAIL_ON_DATA_LOSS_OPTION
from ..spec.kafka import DRAIN_FIRST
from .offset import (
    REBASE_DATA_LOSS,
    REBASE_NEW_PARTITION,
    REBASE_NEW_TASK,
    REBASE_STARTPOINT,
    Barrier,
    LogOffset,
    Rebase,
)
from .positions import DataLoss, Watermarks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResolvedStartpoint:
    """A startpoint for one (task, SSP), already resolved by the system's visitor to a position."""

    position: int
    creation_timestamp: int


def recreated_topics(previous: LogOffset, topic_ids: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Topics whose ID differs from the one ``previous`` recorded: deleted and re-created under the same name.

    topic -> (recorded ID, current ID). A topic without a recorded ID (an offset written before IDs were
    recorded) or without a current one (not reported) is never counted as re-created.
    """
    out: dict[str, tuple[str, str]] = {}
    for topic, now in sorted(topic_ids.items()):
        before = previous.topic_ids.get(topic)
        if before is not None and now and before != now:
            out[topic] = (before, now)
    return out


def recreated_topic_error(topic: str, ids: tuple[str, str]) -> DataLossError:
    return DataLossError(
        f"topic '{topic}' was deleted and re-created: its topic ID is {ids[1]}, the checkpoint's positions belong "
        f"to topic ID {ids[0]}. Records of the old topic the query had not read are gone, and its positions mean "
        "nothing in the new one. The query stops so nothing is skipped silently. To read the new topic from its "
        f"start with the loss reported, restart with {FAIL_ON_DATA_LOSS_OPTION}=false; or write a Startpoint for "
        "each of its partitions to choose where to begin"
    )


@dataclass
class PlanResult:
    offset: LogOffset
    data_loss: list[DataLoss] = field(default_factory=list)
    recreated: dict[str, tuple[str, str]] = field(default_factory=dict)  # topic -> (old ID, new ID)
    applied: dict[TaskSsp, ResolvedStartpoint] = field(default_factory=dict)
    released_barriers: list[SystemStreamPartition] = field(default_factory=list)
    new_barriers: list[SystemStreamPartition] = field(default_factory=list)


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
    expansion_algorithm: PartitionExpansionAlgorithm | None = None,
    now_ms: int = 0,
    settle_ms: int = 0,
    topic_ids: Mapping[str, str] | None = None,
) -> PlanResult:
    """Plan the batch after ``previous``.

    ``until`` caps every SSP (``Trigger.AvailableNow``: the high watermarks seen when it was prepared; SSPs
    missing from it are not read). ``expansion_algorithm`` names the partitions that feed a grown one
    (default: ``hash % N``); a growth seen now is cut ``settle_ms`` after ``now_ms`` (wall clock, epoch ms),
    so producers with stale metadata have written their last old-layout records before it.
    ``topic_ids`` (topic -> Kafka topic ID now) are recorded in the offset; a topic whose ID differs from the
    one ``previous`` recorded was re-created: data loss (its SSPs restart at the log start with
    ``fail_on_data_loss`` false). Raises :class:`DataLossError` when ``fail_on_data_loss`` and an unread range
    is gone. Returns
    ``previous`` itself (same object) when nothing changes, so Spark sees an equal offset string and plans no
    empty batch.
    """
    startpoints = dict(startpoints or {})
    result = PlanResult(offset=previous)
    prev_counts = previous.job_model.partition_counts()
    starts: dict[TaskSsp, int] = {}
    rebases: dict[TaskSsp, Rebase] = {}
    applied = {k: v for k, v in previous.applied.items()}
    missing: set[SystemStreamPartition] = set()
    topic_ids = dict(topic_ids or {})
    recreated = recreated_topics(previous, topic_ids)
    model_streams = {s.stream for s in job_model.ssps()}
    recreated = {t: ids for t, ids in recreated.items() if t in model_streams}
    if recreated and fail_on_data_loss:
        topic = min(recreated)
        raise recreated_topic_error(topic, recreated[topic])
    for topic, (old_id, new_id) in recreated.items():
        log.warning("data loss: topic '%s' was deleted and re-created (topic ID %s, was %s); reading the new topic "
                    "from its start", topic, new_id, old_id)
    result.recreated = recreated

    for task, ssps in job_model.tasks.items():
        for ssp in sorted(ssps):
            key = (task, ssp)
            marks = watermarks.get(ssp)
            if marks is None:
                if fail_on_data_loss:
                    raise DataLossError(
                        f"{ssp} (task {task}) is in the job model but the broker no longer reports it "
                        "(partition or topic deleted?). Check the topic; to go on without it, restart with "
                        f"{FAIL_ON_DATA_LOSS_OPTION}=false"
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
            if ssp.stream in recreated:
                starts[key] = marks.low
                rebases[key] = Rebase(marks.low, REBASE_DATA_LOSS)
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
                    advice = (f"To continue from the earliest available offset ({marks.low}), restart with "
                              f"{FAIL_ON_DATA_LOSS_OPTION}=false, or write a Startpoint for this partition.")
                    described = loss.describe()
                else:  # offsets went backwards: the topic was re-created or truncated, or the offset was edited
                    loss = DataLoss(ssp, task, marks.high, start)
                    described = (
                        f"{ssp} (task {task}): the position to read next, {start}, is past the end of the log "
                        f"({marks.high}, the next offset to be written): the topic was re-created or truncated, or "
                        "the checkpoint's offset was edited"
                    )
                    advice = (
                        "Records the query has not read may be gone, and which ones cannot be told from here. "
                        "Write a Startpoint for this partition to say where to go on: StartpointUpcoming to read "
                        f"only new records (offset {marks.high}), StartpointSpecific for an offset you choose, or "
                        f"StartpointOldest to re-read the whole partition from offset {marks.low} (which is also "
                        f"what {FAIL_ON_DATA_LOSS_OPTION}=false does, reporting the loss)."
                    )
                if fail_on_data_loss:
                    raise DataLossError(f"{described}. The query stops so nothing is skipped silently. {advice}")
                log.warning("data loss: %s; continuing from offset %d", described, marks.low)
                result.data_loss.append(loss)
                start = marks.low
                rebases[key] = Rebase(start, REBASE_DATA_LOSS)
            starts[key] = start

    applied = {k: v for k, v in applied.items() if k in starts}

    lowest_start: dict[SystemStreamPartition, int] = {}
    for (_task, ssp), start in starts.items():
        lowest_start[ssp] = min(start, lowest_start.get(ssp, start))
    start_of = lowest_start.get  # the lowest start over the tasks holding an SSP (broadcast: several)

    def cut_position(ssp: SystemStreamPartition) -> int:
        """Where a growth is cut in ``ssp``: its high watermark now (its start if the broker lost it)."""
        if ssp in watermarks and ssp not in missing:
            return watermarks[ssp].high
        return lowest_start.get(ssp, 0)

    barriers = _carry_barriers(previous, job_model)
    if ordering == DRAIN_FIRST:
        for held, barrier in _growth_barriers(
            prev_counts, job_model, expansion_algorithm, start_of, now_ms + settle_ms
        ):
            barriers[held] = barriers.get(held, ()) + (barrier,)
            result.new_barriers.append(held)
    # The plan that ends a growth's settle time cuts it: from here on the feeders' targets are fixed.
    for held, chain in list(barriers.items()):
        if any(b.settling and now_ms >= b.settle_until for b in chain):
            barriers[held] = tuple(
                b.cut(cut_position(held), {f: cut_position(f) for f in b.feeders})
                if b.settling and now_ms >= b.settle_until else b
                for b in chain
            )
    result.released_barriers = _release_drained(barriers, start_of)

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
        holds = [b.hold_at for b in barriers.get(ssp, ()) if b.hold_at is not None]
        caps[key] = max(start, min([high, *holds]))
    ends = split_read_limit(starts, caps, max_rows)

    # Topic IDs: the ones seen now, else the ones recorded before, for the topics the job model reads. A change
    # of IDs alone plans no batch (an offset written before IDs were recorded gets them with the next batch).
    ids = {t: topic_ids.get(t) or previous.topic_ids.get(t) for t in sorted(model_streams)}
    new_offset = LogOffset(job_model, ends, rebases, barriers, applied, {t: i for t, i in ids.items() if i})
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


def _carry_barriers(previous: LogOffset, job_model: JobModel) -> dict[SystemStreamPartition, tuple[Barrier, ...]]:
    """The barriers still in force, restricted to SSPs (held and feeding) the job model still has."""
    ssps = job_model.ssps()
    out: dict[SystemStreamPartition, tuple[Barrier, ...]] = {}
    for held, chain in previous.barriers.items():
        if held not in ssps:
            continue
        kept = []
        for b in chain:
            feeders = {f: t for f, t in b.feeders.items() if f in ssps}
            if feeders:
                kept.append(b if len(feeders) == len(b.feeders) else
                            Barrier(b.grown_to, b.hold_at, feeders, b.settle_until))
        if kept:
            out[held] = tuple(kept)
    return out


def _growth_barriers(
    prev_counts: Mapping[SystemStream, int],
    job_model: JobModel,
    algorithm: PartitionExpansionAlgorithm | None,
    start_of: Callable[[SystemStreamPartition], int | None],
    settle_until: int,
) -> list[tuple[SystemStreamPartition, Barrier]]:
    """One barrier for every partition of a grown stream that may now hold keys of other partitions.

    A new partition is held from its start; a partition that existed before (growth that is not a multiple
    of the previous count moves keys between old partitions too) is read freely up to the cut. While the
    growth settles its targets are unknown (None); the caller cuts it once ``settle_until`` has passed (in
    this same plan when there is no settle time).
    """
    algorithm = algorithm or DefaultPartitionExpansionAlgorithm()
    out: list[tuple[SystemStreamPartition, Barrier]] = []
    for stream, count in job_model.partition_counts().items():
        before = prev_counts.get(stream)
        if before is None or count <= before:
            continue
        initial = job_model.initial_partition_counts.get(stream, before)
        for partition in range(count):
            held = SystemStreamPartition(stream.system, stream.stream, partition)
            start = start_of(held)
            if start is None:
                continue
            others = checked_feeders(algorithm, stream, partition, count, before, initial) - {partition}
            if not others:
                continue
            feeders = {SystemStreamPartition(stream.system, stream.stream, f): None for f in others}
            hold_at = start if partition >= before else None
            out.append((held, Barrier(count, hold_at, feeders, settle_until)))
    return out


def _release_drained(
    barriers: dict[SystemStreamPartition, tuple[Barrier, ...]],
    start_of: Callable[[SystemStreamPartition], int | None],
) -> list[SystemStreamPartition]:
    """Drop (in place) every cut barrier whose feeders started this batch at or past their targets.

    A feeder still held by a barrier of an *earlier* growth has not delivered everything its own feeders
    gave it, even if it reached the target (an empty partition reaches any target at once), so it does not
    count as drained until that barrier is gone. Returns the SSPs left with no barrier at all.
    """
    def drained(b: Barrier) -> bool:
        if b.settling:
            return False
        for feeder, target in b.feeders.items():
            start = start_of(feeder)
            if start is not None and start < target:
                return False
            if any(other.grown_to < b.grown_to for other in barriers.get(feeder, ())):
                return False
        return True

    released: list[SystemStreamPartition] = []
    changed = True
    while changed:
        changed = False
        for held, chain in list(barriers.items()):
            kept = tuple(b for b in chain if not drained(b))
            if len(kept) == len(chain):
                continue
            changed = True
            if kept:
                barriers[held] = kept
            else:
                del barriers[held]
                released.append(held)
    return released


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
