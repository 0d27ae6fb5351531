"""Pure planning of the next micro-batch of a partitioned log (Kafka): docs/architecture.md §4-7.

``plan_next`` takes the previous offset, the job model computed for this trigger, the watermarks observed,
the startpoints already resolved to positions, and the read limit; it returns the next offset. It does no
I/O, so every rule here (startpoint rebases, drain-first expansion barriers, data-loss handling, the read
limit split in proportion to backlog) is unit-tested without a broker.

``plan_next`` is a pipeline of phases over one frozen :class:`PlanInputs` (the query's fixed rules in
:class:`PlanRules`), each a function of its own: recreated topics (``recreated_in_model``), start positions
(``start_positions``), barriers and cuts (``barriers_and_cuts``), read caps (``read_caps``, then
``split_read_limit``) and the next offset (``next_offset``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ...core.errors import DataLossError
from ...core.expansion import DefaultPartitionExpansionAlgorithm, PartitionExpansionAlgorithm, checked_feeders
from ...core.jobmodel import JobModel
from ...core.model import SystemStream, SystemStreamPartition, TaskName, TaskSsp, ssp_order
from ...options.common import FAIL_ON_DATA_LOSS
from .. import errors
from ..options import DRAIN_FIRST
from ..positions import DataLoss, Watermarks
from .offset import (
    REBASE_DATA_LOSS,
    REBASE_NEW_PARTITION,
    REBASE_NEW_TASK,
    REBASE_STARTPOINT,
    Barrier,
    KafkaOffset,
    Rebase,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResolvedStartpoint:
    """A startpoint for one (task, SSP), already resolved by the system's visitor to a position."""

    position: int
    creation_timestamp: int


def recreated_topics(previous: KafkaOffset, topic_ids: Mapping[str, str]) -> dict[str, tuple[str, str]]:
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
    return errors.topic_recreated(topic, ids)


@dataclass
class PlanResult:
    offset: KafkaOffset
    data_loss: list[DataLoss] = field(default_factory=list)
    recreated: dict[str, tuple[str, str]] = field(default_factory=dict)  # topic -> (old ID, new ID)
    applied: dict[TaskSsp, ResolvedStartpoint] = field(default_factory=dict)
    released_barriers: list[SystemStreamPartition] = field(default_factory=list)
    new_barriers: list[SystemStreamPartition] = field(default_factory=list)
    non_multiple_growths: list[NonMultipleGrowth] = field(default_factory=list)


@dataclass(frozen=True)
class NonMultipleGrowth:
    """A stream seen grown to a count that is not a multiple of the one before (4 -> 6). Keys then move between
    partitions that existed before too, so records of a moving key produced between the growth and its cut
    (``cut_at_ms``: ``expansion.settleTime`` after it was seen) may be read out of order."""

    stream: SystemStream
    before: int
    after: int
    seen_at_ms: int
    cut_at_ms: int


@dataclass(frozen=True)
class PlanRules:
    """How a query plans, the same at every trigger.

    ``ordering``: ``drain-first`` holds a grown partition until its feeders drained to the cut; ``none`` reads
    everything at once. ``expansion_algorithm`` names the partitions that feed a grown one (default:
    ``hash % N``); a growth is cut ``settle_ms`` after it is seen, so producers with stale metadata have written
    their last old-layout records before it. ``until`` caps every SSP (``Trigger.AvailableNow``: the high
    watermarks seen when it was prepared; SSPs missing from it are not read).
    """

    ordering: str = DRAIN_FIRST
    fail_on_data_loss: bool = True
    expansion_algorithm: PartitionExpansionAlgorithm | None = None
    settle_ms: int = 0
    until: Mapping[SystemStreamPartition, int] | None = None


@dataclass(frozen=True)
class PlanInputs:
    """What one trigger plans from; every phase reads it and none changes it."""

    previous: KafkaOffset
    job_model: JobModel
    watermarks: Mapping[SystemStreamPartition, Watermarks]
    startpoints: Mapping[TaskSsp, ResolvedStartpoint]
    topic_ids: Mapping[str, str]
    now_ms: int
    rules: PlanRules

    def model_streams(self) -> set[str]:
        return {s.stream for s in self.job_model.ssps()}


@dataclass(frozen=True)
class StartPositions:
    """Phase 2's answer: where each (task, SSP) starts this batch, and why when it is not where it stopped.

    ``applied`` is the offset's record of startpoint creation timestamps in force; ``newly_applied`` the
    startpoints taken in this plan. ``missing`` SSPs are in the job model but not reported by the broker.
    """

    starts: Mapping[TaskSsp, int]
    rebases: Mapping[TaskSsp, Rebase] = field(default_factory=dict)
    applied: Mapping[TaskSsp, int] = field(default_factory=dict)
    newly_applied: Mapping[TaskSsp, ResolvedStartpoint] = field(default_factory=dict)
    missing: frozenset[SystemStreamPartition] = frozenset()
    data_loss: tuple[DataLoss, ...] = ()

    def lowest(self) -> dict[SystemStreamPartition, int]:
        """The lowest start over the tasks holding an SSP (a broadcast SSP has several)."""
        out: dict[SystemStreamPartition, int] = {}
        for (_task, ssp), start in self.starts.items():
            out[ssp] = min(start, out.get(ssp, start))
        return out


@dataclass(frozen=True)
class BarrierPlan:
    """Phase 3's answer: the barriers in force after this plan, those it added and the SSPs it released."""

    barriers: Mapping[SystemStreamPartition, tuple[Barrier, ...]]
    new: tuple[SystemStreamPartition, ...] = ()
    released: tuple[SystemStreamPartition, ...] = ()


def plan_next(
    previous: KafkaOffset,
    job_model: JobModel,
    watermarks: Mapping[SystemStreamPartition, Watermarks],
    *,
    startpoints: Mapping[TaskSsp, ResolvedStartpoint] | None = None,
    max_rows: int | None = None,
    now_ms: int = 0,
    topic_ids: Mapping[str, str] | None = None,
    rules: PlanRules = PlanRules(),
) -> PlanResult:
    """Plan the batch after ``previous``, in five phases over one frozen :class:`PlanInputs`.

    ``now_ms`` is the wall clock (epoch ms) that settle times are measured against. ``topic_ids`` (topic ->
    Kafka topic ID now) are recorded in the offset; a topic whose ID differs from the one ``previous``
    recorded was re-created: data loss (its SSPs restart at the log start when ``rules.fail_on_data_loss`` is
    false). Raises :class:`DataLossError` when ``rules.fail_on_data_loss`` and an unread range is gone.
    Returns ``previous`` itself (same object) when nothing changes, so Spark sees an equal offset string and
    plans no empty batch.
    """
    inputs = PlanInputs(previous, job_model, watermarks, dict(startpoints or {}), dict(topic_ids or {}), now_ms,
                        rules)
    recreated = recreated_in_model(inputs)
    starts = start_positions(inputs, recreated)
    barriers = barriers_and_cuts(inputs, starts)
    ends = split_read_limit(starts.starts, read_caps(inputs, starts, barriers.barriers), max_rows)
    return PlanResult(
        offset=next_offset(inputs, starts, barriers.barriers, ends),
        data_loss=list(starts.data_loss),
        recreated=recreated,
        applied=dict(starts.newly_applied),
        released_barriers=list(barriers.released),
        new_barriers=list(barriers.new),
        non_multiple_growths=non_multiple_growths(inputs),
    )


def non_multiple_growths(inputs: PlanInputs) -> list[NonMultipleGrowth]:
    """The streams this plan sees grown by other than a multiple of their previous partition count."""
    before = inputs.previous.job_model.partition_counts()
    cut_at = inputs.now_ms + inputs.rules.settle_ms
    return [NonMultipleGrowth(stream, before[stream], count, inputs.now_ms, cut_at)
            for stream, count in sorted(inputs.job_model.partition_counts().items(), key=lambda kv: str(kv[0]))
            if stream in before and count > before[stream] and count % before[stream] != 0]


# Phase 1: recreated topics.

def recreated_in_model(inputs: PlanInputs) -> dict[str, tuple[str, str]]:
    """The job model's topics that were deleted and re-created since ``inputs.previous``: topic -> (old, new ID).

    Raises (the alphabetically first such topic) when data loss fails the query; otherwise logs each one.
    """
    streams = inputs.model_streams()
    recreated = {t: ids for t, ids in recreated_topics(inputs.previous, inputs.topic_ids).items() if t in streams}
    if recreated and inputs.rules.fail_on_data_loss:
        topic = min(recreated)
        raise recreated_topic_error(topic, recreated[topic])
    for topic, (old_id, new_id) in recreated.items():
        log.warning("data loss: topic '%s' was deleted and re-created (topic ID %s, was %s); reading the new topic "
                    "from its start", topic, new_id, old_id)
    return recreated


# Phase 2: start positions.

@dataclass(frozen=True)
class _Start:
    position: int
    rebase: Rebase | None = None
    loss: DataLoss | None = None


def start_positions(inputs: PlanInputs, recreated: Mapping[str, tuple[str, str]]) -> StartPositions:
    """Where every (task, SSP) of the job model starts: a due startpoint, else the log start of a re-created
    topic, else where it stopped (checked against the log's bounds). An SSP the broker no longer reports keeps
    its position and is marked missing (or fails the query)."""
    starts: dict[TaskSsp, int] = {}
    rebases: dict[TaskSsp, Rebase] = {}
    applied = dict(inputs.previous.applied)
    newly_applied: dict[TaskSsp, ResolvedStartpoint] = {}
    missing: set[SystemStreamPartition] = set()
    losses: list[DataLoss] = []
    for task, ssps in inputs.job_model.tasks.items():
        for ssp in sorted(ssps, key=ssp_order):
            key = (task, ssp)
            marks = inputs.watermarks.get(ssp)
            if marks is None:
                kept = unreported_start(inputs, task, ssp)
                if kept is not None:
                    starts[key] = kept
                    missing.add(ssp)
                continue
            sp = due_startpoint(inputs, key)
            if sp is not None:
                start = startpoint_start(sp, marks, key)
                applied[key] = sp.creation_timestamp
                newly_applied[key] = sp
            elif ssp.stream in recreated:
                start = _Start(marks.low, Rebase(marks.low, REBASE_DATA_LOSS))
            else:
                start = checked_against_log(carried_start(inputs, key, marks), key, marks,
                                            inputs.rules.fail_on_data_loss)
            starts[key] = start.position
            if start.rebase is not None:
                rebases[key] = start.rebase
            if start.loss is not None:
                losses.append(start.loss)
    return StartPositions(
        starts, rebases, {k: v for k, v in applied.items() if k in starts}, newly_applied, frozenset(missing),
        tuple(losses),
    )


def unreported_start(inputs: PlanInputs, task: TaskName, ssp: SystemStreamPartition) -> int | None:
    """The position kept for an SSP the broker no longer reports (None: never read), or raise."""
    if inputs.rules.fail_on_data_loss:
        raise errors.partition_gone(ssp, task)
    previous = inputs.previous
    kept = previous.positions.get((task, ssp))
    if kept is None:
        kept = previous.position_of(ssp)
    if kept is not None:
        log.warning("%s is not reported by the broker; not reading it this batch", ssp)
    return kept


def due_startpoint(inputs: PlanInputs, key: TaskSsp) -> ResolvedStartpoint | None:
    """The startpoint for ``key`` if it is newer than the one the offset last applied there."""
    sp = inputs.startpoints.get(key)
    if sp is not None and sp.creation_timestamp > inputs.previous.applied.get(key, -1):
        return sp
    return None


def startpoint_start(sp: ResolvedStartpoint, marks: Watermarks, key: TaskSsp) -> _Start:
    """A startpoint's position, clamped into the log's bounds."""
    position = min(max(sp.position, marks.low), marks.high)
    if position != sp.position:
        task, ssp = key
        log.warning("startpoint for %s in %s resolved to %d, clamped into [%d, %d]",
                    ssp, task, sp.position, marks.low, marks.high)
    return _Start(position, Rebase(position, REBASE_STARTPOINT, sp.creation_timestamp))


def carried_start(inputs: PlanInputs, key: TaskSsp, marks: Watermarks) -> _Start:
    """Where ``key`` stopped: its own position, else its SSP's under another task, else the log start."""
    previous = inputs.previous
    task, ssp = key
    if key in previous.positions:
        return _Start(previous.positions[key])
    position = previous.position_of(ssp)
    if position is None:
        return _Start(marks.low, Rebase(marks.low, REBASE_NEW_PARTITION))
    if ssp in inputs.job_model.broadcast:
        return _Start(position, Rebase(position, REBASE_NEW_TASK))
    return _Start(position)  # moved between tasks (non-fixed grouper): progress moves along


def checked_against_log(start: _Start, key: TaskSsp, marks: Watermarks, fail_on_data_loss: bool) -> _Start:
    """``start`` if it lies within the log, else data loss: raise, or (``failOnDataLoss=false``) go on and report it.

    Below the log start (retention, deleteRecords): go on from the log start. Past the log end (the same topic,
    its log cut back below offsets already read: an unclean leader election truncated it, or the checkpoint was
    edited; a re-created topic is told by its topic ID, earlier): go on from the *new end*, as Spark's own Kafka
    source does. The offsets below that end were handed to Spark once already; what the new log holds there was
    written after the truncation and cannot be told apart from what was read, so reading it again would deliver a
    second record under an offset already delivered (a duplicate offset for every idempotent sink keyed by it).
    The records the new log holds there are reported as lost instead: a gap named in the log and the progress."""
    position = start.position
    if marks.low <= position <= marks.high:
        return start
    task, ssp = key
    if position < marks.low:
        loss = DataLoss(ssp, task, position, marks.low)
        advice = (f"To continue from the earliest available offset ({marks.low}), restart with "
                  f"{FAIL_ON_DATA_LOSS.name}=false, or write a Startpoint for this partition.")
        described = loss.describe()
    else:  # offsets went backwards: the topic was re-created or truncated, or the offset was edited
        loss = DataLoss(ssp, task, marks.high, position)
        described = (
            f"{ssp} (task {task}): the position to read next, {position}, is past the end of the log "
            f"({marks.high}, the next offset to be written): the topic was re-created or truncated, or "
            "the checkpoint's offset was edited"
        )
        advice = (
            "Records the query has not read may be gone, and which ones cannot be told from here. "
            "Write a Startpoint for this partition to say where to go on: StartpointUpcoming to read "
            f"only new records (offset {marks.high}), StartpointSpecific for an offset you choose, or "
            f"StartpointOldest to re-read the whole partition from offset {marks.low}. With "
            f"{FAIL_ON_DATA_LOSS.name}=false the query goes on from the new end ({marks.high}), as Spark's Kafka "
            "source does, reporting the loss."
        )
    if fail_on_data_loss:
        raise (errors.planned_data_loss if position < marks.low else errors.offset_past_log_end)(described, advice)
    go_on = marks.low if position < marks.low else marks.high
    log.warning("data loss: %s; continuing from offset %d", described, go_on)
    return _Start(go_on, Rebase(go_on, REBASE_DATA_LOSS), loss)


# Phase 3: barriers and cuts.

def barriers_and_cuts(inputs: PlanInputs, starts: StartPositions) -> BarrierPlan:
    """The expansion barriers after this plan: those carried over, plus one per partition of a stream that grew
    (drain-first only), with every growth whose settle time has ended cut, and the drained ones released."""
    lowest = starts.lowest()
    barriers = _carry_barriers(inputs.previous, inputs.job_model)
    new: list[SystemStreamPartition] = []
    rules = inputs.rules
    if rules.ordering == DRAIN_FIRST:
        prev_counts = inputs.previous.job_model.partition_counts()
        for held, barrier in _growth_barriers(
            prev_counts, inputs.job_model, rules.expansion_algorithm, lowest.get, inputs.now_ms + rules.settle_ms
        ):
            barriers[held] = barriers.get(held, ()) + (barrier,)
            new.append(held)

    def cut_position(ssp: SystemStreamPartition) -> int:
        """Where a growth is cut in ``ssp``: its high watermark now (its start if the broker lost it)."""
        if ssp in inputs.watermarks and ssp not in starts.missing:
            return inputs.watermarks[ssp].high
        return lowest.get(ssp, 0)

    barriers = cut_settled(barriers, inputs.now_ms, cut_position)
    released = _release_drained(barriers, lowest.get)
    return BarrierPlan(barriers, tuple(new), tuple(released))


def cut_settled(
    barriers: Mapping[SystemStreamPartition, tuple[Barrier, ...]],
    now_ms: int,
    cut_position: Callable[[SystemStreamPartition], int],
) -> dict[SystemStreamPartition, tuple[Barrier, ...]]:
    """Cut every barrier whose settle time has ended: from here on the feeders' targets are fixed."""
    def settled(b: Barrier) -> bool:
        return b.settle_until is not None and now_ms >= b.settle_until

    out = dict(barriers)
    for held, chain in barriers.items():
        if any(settled(b) for b in chain):
            out[held] = tuple(
                b.cut(cut_position(held), {f: cut_position(f) for f in b.feeders}) if settled(b) else b
                for b in chain
            )
    return out


# Phase 4: caps.

def read_caps(
    inputs: PlanInputs, starts: StartPositions, barriers: Mapping[SystemStreamPartition, tuple[Barrier, ...]]
) -> dict[TaskSsp, int]:
    """How far each (task, SSP) may read: its high watermark, lowered to the ``until`` cap and to any barrier's
    hold; a missing SSP reads nothing. The read limit is applied after, in proportion to backlog."""
    until = inputs.rules.until
    caps: dict[TaskSsp, int] = {}
    for key, start in starts.starts.items():
        _, ssp = key
        if ssp in starts.missing:
            caps[key] = start
            continue
        high = inputs.watermarks[ssp].high
        if until is not None:
            high = min(high, until.get(ssp, start))
        holds = [b.hold_at for b in barriers.get(ssp, ()) if b.hold_at is not None]
        caps[key] = max(start, min([high, *holds]))
    return caps


# Phase 5: the next offset.

def next_offset(
    inputs: PlanInputs,
    starts: StartPositions,
    barriers: Mapping[SystemStreamPartition, tuple[Barrier, ...]],
    ends: Mapping[TaskSsp, int],
) -> KafkaOffset:
    """The offset ending this batch, or ``inputs.previous`` itself when nothing moved.

    Topic IDs: the ones seen now, else the ones recorded before, for the topics the job model reads. A change
    of IDs alone plans no batch (an offset written without IDs gets them with the next batch). The previous
    offset's own rebases belong to the batch that ended there, so they do not count as a change either.
    """
    previous = inputs.previous
    if (
        not starts.rebases
        and dict(ends) == dict(previous.positions)
        and inputs.job_model == previous.job_model
        and dict(barriers) == dict(previous.barriers)
        and dict(starts.applied) == dict(previous.applied)
    ):
        return previous
    ids = {t: inputs.topic_ids.get(t) or previous.topic_ids.get(t) for t in sorted(inputs.model_streams())}
    return KafkaOffset(inputs.job_model, dict(ends), dict(starts.rebases), dict(barriers), dict(starts.applied),
                     {t: i for t, i in ids.items() if i})


def _carry_barriers(previous: KafkaOffset, job_model: JobModel) -> dict[SystemStreamPartition, tuple[Barrier, ...]]:
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
            assert target is not None  # a barrier's feeder targets are None exactly while it settles
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
