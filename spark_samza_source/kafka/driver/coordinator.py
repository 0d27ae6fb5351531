"""The driver side of the samza-kafka source: Samza's JobCoordinator, run inside Spark's source runner.

Each trigger it discovers partitions (so expansion is seen at every trigger), recomputes the job model with the
configured grouper, picks up Startpoints (at query start, then after each poll interval), resolves them with
the Kafka visitor, and hands everything to the pure planner. ``commit`` deletes the startpoints a committed
batch applied (only if unchanged since) and mirrors committed positions to the metadata store and,
optionally, to the consumer group ``samza-<job.name>``, both written behind (``JobCoordinator.commit``).

Spark calls ``commit`` one batch late and never for the last batch of a run, so the startpoints recorded as
applied in the offset a run *starts from* are deleted on the first trigger too (the restart path); the offset
also carries every applied startpoint's creation timestamp, so none can be applied twice.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from typing import overload

from ...core.broadcast import effective_broadcast
from ...core.checkpoint import Checkpoint
from ...core.copartition import check_copartitioning
from ...core.errors import (
    InternalError,
    PartitionExpansionError,
    SamzaSourceError,
)
from ...core.expansion import resolve_expansion_algorithm
from ...core.grouping import resolve_grouper
from ...core.jobmodel import JobModel
from ...core.jobmodel_store import JobModelStore
from ...core.model import SystemStream, SystemStreamPartition, TaskName, TaskSsp, ssp_order
from ...metadata.lease import offset_identity
from ...options.common import BROADCAST, JOB_NAME, RETRY_TIMEOUT
from ...source.job_coordinator import JobCoordinator, WritesBehind
from .. import errors
from ..input_partition import KafkaRange
from ..options import (
    ASSIGN,
    COMMIT_OFFSETS_TO_KAFKA,
    DRAIN_FIRST,
    DROP_TOPICS,
    EXPANSION_SETTLE,
    JOB_MODEL_RESET,
    SUBSCRIBE,
    SUBSCRIBE_PATTERN,
    SYSTEM,
    KafkaSourceOptions,
)
from ..positions import Watermarks
from .admin import KafkaAdmin
from .input_splits import spread_tasks
from .offset import REBASE_NEW_PARTITION, REBASE_STARTPOINT, KafkaOffset, Rebase
from .planner import (
    NonMultipleGrowth,
    PlanResult,
    PlanRules,
    ResolvedStartpoint,
    plan_next,
    recreated_topic_error,
    recreated_topics,
)
from .startpoints import KafkaStartpointResolver, kafka_startpoint_problem

log = logging.getLogger(__name__)


class MinRowsGate:
    """``minOffsetsPerTrigger`` + ``maxTriggerDelay``: hold a batch back until enough rows wait or it is late.

    PySpark has only built-in read limits and no composite one, so the rule is kept here rather than by the engine.
    """

    def __init__(self, min_rows: int | None, max_delay_ms: int, clock) -> None:
        self.min_rows = min_rows
        self.max_delay_ms = max_delay_ms
        self._clock = clock
        self._last_batch_at = clock()

    def allows(self, available_rows: int) -> bool:
        if self.min_rows is None or available_rows >= self.min_rows:
            return True
        return (self._clock() - self._last_batch_at) * 1000 >= self.max_delay_ms

    def batch_planned(self) -> None:
        self._last_batch_at = self._clock()


class KafkaCoordinator(JobCoordinator[KafkaOffset, KafkaSourceOptions, KafkaRange]):
    """Plans batches for one query. Lives in Spark's long-lived driver-side Python runner."""

    def __init__(self, options: KafkaSourceOptions, *, clock=time.monotonic, wall_ms=None) -> None:
        super().__init__(options, clock=clock)
        self._wall_ms = wall_ms or (lambda: int(time.time() * 1000))  # epoch ms, as on the Kinesis side
        self._admin: KafkaAdmin | None = None
        self._algorithm = resolve_expansion_algorithm(options.expansion_algorithm)
        self._grouper = resolve_grouper(options.grouper, expansion_algorithm=self._algorithm)
        self.latest_watermarks: dict[SystemStreamPartition, Watermarks] = {}
        self._last_model: JobModel | None = None
        self._job_models: JobModelStore | None = None
        self._group_mirror_failing = False  # the group mirror's last write failed: warned once already
        self._initial: KafkaOffset | None = None  # what initial_offset returned, until the first plan
        self._until: dict[SystemStreamPartition, int] | None = None  # Trigger.AvailableNow's end offsets
        self._gate: MinRowsGate | None = None  # minOffsetsPerTrigger / maxTriggerDelay
        # failOnDataLoss=false, since this run began: (SSP key, first lost offset) -> end of the lost range
        # (exclusive), and topics found deleted and re-created (read again from their start) -> new topic ID
        self._data_loss: dict[tuple[str, int], int] = {}
        self._recreated: dict[str, str] = {}
        #: topic -> the last growth by other than a multiple seen in this run (``nonMultipleGrowth`` in the progress)
        self._non_multiple: dict[str, dict[str, int]] = {}

    # ---- lazily opened clients -------------------------------------------------------------------------
    @property
    def admin(self) -> KafkaAdmin:
        if self._admin is None:
            self._admin = KafkaAdmin(self.options.client_conf, api_timeout_ms=self.options.retry_timeout_ms,
                                     timeout_option=RETRY_TIMEOUT.name)
        return self._admin

    def close(self) -> None:
        """Close the admin client if one was opened (a batch read's planner is done with the coordinator)."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # ---- discovery ---------------------------------------------------------------------------------------
    def discover(self, previous: JobModel | None) -> tuple[list[SystemStreamPartition], frozenset]:
        """Every SSP the query reads now (broadcast ones included), and which of them are broadcast.

        A stream read only as broadcast input in ``previous`` keeps every partition it gains broadcast.
        """
        opts = self.options
        if opts.assign is not None:
            counts = self.admin.list_partition_counts(topics=list(opts.assign))
            ssps = []
            for topic, parts in opts.assign.items():
                for p in parts:
                    if p >= counts[topic]:
                        raise errors.assigned_partition_missing(topic, p, counts[topic], assign_option=ASSIGN.name)
                    ssps.append(SystemStreamPartition(SYSTEM, topic, p))
        else:
            if opts.topics is not None:
                counts = self.admin.list_partition_counts(topics=list(opts.topics))
            elif opts.pattern is not None:
                counts = self.admin.list_partition_counts(pattern=re.compile(opts.pattern))
            else:  # the options name exactly one of assign, subscribe, subscribePattern
                raise InternalError("samza-kafka options without assign, subscribe or subscribePattern")
            ssps = [SystemStreamPartition(SYSTEM, t, p) for t, n in counts.items() for p in range(n)]
        broadcast_streams = {b.stream for b in opts.broadcast}
        if previous is not None:
            broadcast_streams |= {b.stream for b in previous.broadcast}
        if broadcast_streams - set(counts):
            counts.update(self.admin.list_partition_counts(topics=sorted(broadcast_streams - set(counts))))
        for b in opts.broadcast:
            if b.partition >= counts.get(b.stream, 0):
                raise errors.broadcast_partition_missing(b.system, b.stream, b.partition, counts.get(b.stream, 0),
                                                         broadcast_option=BROADCAST.name)
        stream_counts = {SystemStream(SYSTEM, t): n for t, n in counts.items()}
        broadcast = effective_broadcast(opts.broadcast, previous, stream_counts)
        return sorted(set(ssps) | broadcast, key=ssp_order), broadcast

    def group(self, previous: JobModel | None, ssps: list[SystemStreamPartition], broadcast) -> JobModel:
        """The configured grouper's job model of ``ssps`` from ``previous``: neither checked nor stored (a batch
        read groups with it and writes nothing)."""
        return self._grouper.group(previous, ssps, broadcast)

    def job_model(self, previous: JobModel | None, ssps: list[SystemStreamPartition], broadcast) -> JobModel:
        """The next job model of the streaming query: grouped, checked for co-partitioning, stored when it changed."""
        model = self.group(previous, ssps, broadcast)
        if previous is not None and model == previous:
            model = previous  # the same value: what it computed once (its JSON, its maps) serves this plan too
        self._last_model = model
        if self.options.copartition:
            check_copartitioning(self.options.copartition, model, self._algorithm)
        if previous is None or model != previous:
            diff = model.diff(previous)
            if previous is not None:
                log.info("job model changed for %s: %s", self.options.job_name, "; ".join(diff.describe()))
            self.job_models.write(model)
        return model

    @property
    def job_models(self) -> JobModelStore:
        """The job model stored for this job.name (``core/jobmodel_store.py``)."""
        if self._job_models is None:
            self._job_models = JobModelStore(self.store)
        return self._job_models

    def stored_job_model(self, quiet: bool = False) -> JobModel | None:
        """The job model an earlier query of this job.name stored, unless jobModel.reset says to start afresh
        (logged unless ``quiet``: a batch read and Trigger.AvailableNow ask without starting anything)."""
        job = self.options.job_name
        reset = self.options.job_model_reset
        try:
            model = self.job_models.current()
        except SamzaSourceError as err:
            if not reset:
                raise errors.stored_job_model_unreadable(err, job, reset_option=JOB_MODEL_RESET.name) from None
            self._log_reset(quiet)  # unreadable, and replaced anyway
            return None
        if model is None:
            if not quiet:
                log.info("job model: none stored for %s=%s; grouping the current partitions", JOB_NAME.name, job)
            return None
        if reset:
            self._log_reset(quiet)
            return None
        if not quiet:
            log.info("job model: restored the one stored for %s=%s (%d tasks); set %s=true to regroup",
                     JOB_NAME.name, job, len(model.tasks), JOB_MODEL_RESET.name)
        return model

    def _log_reset(self, quiet: bool) -> None:
        if not quiet:
            log.warning("job model: the one stored for %s=%s is replaced (%s=true): tasks are regrouped "
                        "from the current partitions", JOB_NAME.name, self.options.job_name, JOB_MODEL_RESET.name)

    @overload
    def without_dropped_topics(self, previous: JobModel, ssps, *, stored_model: bool = False) -> JobModel: ...

    @overload
    def without_dropped_topics(self, previous: None, ssps, *, stored_model: bool = False) -> None: ...

    def without_dropped_topics(self, previous: JobModel | None, ssps, *, stored_model: bool = False,
                               ) -> JobModel | None:
        """``previous`` without the topics that left the job: gone from the cluster or from the subscription.

        Only topics named in ``dropTopics`` may leave (their tasks and positions are forgotten, every other
        topic keeps its tasks and positions); any other topic that left fails here, naming the option, before
        the grouper would report it as a stream that disappeared. The one rule for a streaming query and for a
        batch read that starts from the stored job model (``bounded_read.py``).
        """
        if previous is None:
            return None
        present = {s.stream for s in ssps}
        gone = sorted({s.stream for s in previous.ssps()} - present)
        if not gone:
            return previous
        allowed = set(self.options.drop_topics)
        refused = [t for t in gone if t not in allowed]
        if refused:
            counts = {t: len([s for s in previous.ssps() if s.stream == t]) for t in refused}
            raise errors.topics_left_job(
                refused, counts, self.options.job_name, bool(stored_model), subscribe_option=SUBSCRIBE.name,
                subscribe_pattern_option=SUBSCRIBE_PATTERN.name, assign_option=ASSIGN.name,
                drop_topics_option=DROP_TOPICS.name, reset_option=JOB_MODEL_RESET.name)
        for topic in gone:
            log.warning("topic '%s' leaves job %s (%s): its partitions are removed from the job model and their "
                        "positions forgotten; the other topics keep their tasks and positions", topic,
                        self.options.job_name, DROP_TOPICS.name)
        return previous.without_streams(gone)

    def _check_restorable(self, stored: JobModel, ssps: list[SystemStreamPartition], broadcast) -> None:
        """Fail at query start, naming the reset option, when the stored model cannot carry on (a topic shrank,
        vanished or is no longer subscribed)."""
        try:
            self._grouper.group(stored, ssps, broadcast)
        except PartitionExpansionError as err:
            raise errors.stored_job_model_not_restorable(err, self.options.job_name,
                                                         reset_option=JOB_MODEL_RESET.name) from None

    def topic_ids(self, model: JobModel, more=()) -> dict[str, str]:
        """The Kafka topic ID of every topic ``model`` (and the SSPs ``more``) reads."""
        topics = {s.stream for s in model.ssps()} | {s.stream for s in more}
        return self.admin.topic_ids(topics)

    def watermarks(self, ssps) -> dict[SystemStreamPartition, Watermarks]:
        return self._keep_watermarks(ssps, {}, frozenset())

    def _keep_watermarks(self, ssps, fetched: Mapping[tuple[str, int], tuple[int, int]], asked: frozenset,
                         ) -> dict[SystemStreamPartition, Watermarks]:
        """The watermarks of ``ssps``: from ``fetched`` (answers to the partitions ``asked``), the rest looked up
        now. A partition asked for and not answered does not exist (the planner reports it)."""
        raw = dict(fetched)
        more = [(s.stream, s.partition) for s in ssps if (s.stream, s.partition) not in asked]
        if more:
            raw.update(self.admin.watermarks(more))
        marks = {s: Watermarks(*raw[(s.stream, s.partition)]) for s in ssps if (s.stream, s.partition) in raw}
        self.latest_watermarks = marks
        return marks

    # ---- Spark entry points ----------------------------------------------------------------------------
    def first_offset(self) -> KafkaOffset:
        """Where a query with no checkpoint starts: startingOffsets, overridden by any Startpoint.

        The job model is the one stored for ``job.name`` when there is one (SEP-5: the previous model is the
        input of every grouper, so a new checkpoint keeps the same tasks); partitions added since are left to
        the first plan, which handles them as an expansion.
        """
        stored = self.stored_job_model()
        ssps, broadcast = self.discover(stored)
        discovered = list(ssps)
        stored = self.without_dropped_topics(stored, ssps, stored_model=True)
        if stored is not None:
            self._check_restorable(stored, ssps, broadcast)
            streams = {s.system_stream for s in stored.ssp_to_task()}
            stored_ssps = stored.ssps()
            ssps = [s for s in ssps if s in broadcast or s.system_stream not in streams or s in stored_ssps]
        model = self.job_model(stored, ssps, broadcast)
        marks = self.watermarks(model.ssps())
        starts = self._starting_positions(model, marks, discovered)
        positions = {(t, s): starts[s] for t, group in model.tasks.items() for s in group}
        self._initial = KafkaOffset(model, positions, topic_ids=self.topic_ids(model)).remember()
        return self._initial

    def plan_batch(self, start: KafkaOffset, *, max_rows: int | None) -> KafkaOffset:
        initial, self._initial = self._initial, None
        planned = self._plan(start, max_rows)
        if planned is start:
            return start
        if initial is not None and start.to_json_str() == initial.to_json_str():
            planned = _record_first_batch_starts(start, planned)
        if self._until is None and self.options.min_offsets_per_trigger is not None:
            if self._gate is None:
                self._gate = MinRowsGate(self.options.min_offsets_per_trigger, self.options.max_trigger_delay_ms,
                                         self._clock)
            rows = sum(planned.positions.values()) - sum(
                start.positions.get(k, planned.positions[k]) for k in planned.positions
            )
            if not planned.rebases and not self._gate.allows(rows):
                return start
            self._gate.batch_planned()
        return planned.remember()  # Spark hands it back three times (partitions, commit, the next latestOffset)

    def _plan(self, start: KafkaOffset, max_rows: int | None) -> KafkaOffset:
        ssps, broadcast = self.discover(start.job_model)
        previous = self.without_dropped_topics(start.job_model, ssps)
        # the watermarks of the partitions just discovered and the topic IDs, in one round trip: the job model
        # is grouped from these very partitions, so it rarely needs any other
        asked = frozenset((s.stream, s.partition) for s in ssps)
        topics = {s.stream for s in previous.ssps()} | {s.stream for s in ssps}
        fetched, topic_ids = self.admin.watermarks_and_topic_ids(asked, topics)
        recreated = recreated_topics(start, topic_ids)
        if recreated and self.options.fail_on_data_loss:  # before grouping: a re-created topic may have fewer
            topic = min(recreated)                          # partitions, which the grouper would misreport
            raise recreated_topic_error(topic, recreated[topic])
        model = self.job_model(previous, ssps, broadcast)
        marks = self._keep_watermarks(model.ssps(), fetched, asked)
        startpoints = self._due_startpoints(model, start, marks)
        now_ms = self._wall_ms()
        result = plan_next(
            start,
            model,
            marks,
            startpoints=startpoints,
            max_rows=max_rows,
            now_ms=now_ms,
            topic_ids=topic_ids,
            rules=PlanRules(
                ordering=self.options.ordering,
                fail_on_data_loss=self.options.fail_on_data_loss,
                expansion_algorithm=self._algorithm,
                settle_ms=self.options.expansion_settle_ms,
                until=self._until,
            ),
        )
        self._count_data_loss(result.data_loss)
        for topic, (_old, new) in result.recreated.items():
            self._recreated[topic] = new
        for (task, ssp), sp in result.applied.items():
            log.info("startpoint applied: %s in %s starts at offset %d (created %d)",
                     ssp, task, result.offset.rebases[(task, ssp)].position, sp.creation_timestamp)
        _log_barriers(start, result, now_ms)
        for growth in result.non_multiple_growths:
            self._warn_non_multiple_growth(growth)
        return result.offset

    def _warn_non_multiple_growth(self, growth: NonMultipleGrowth) -> None:
        """Say loudly that per-key order is not kept for a while, and keep it in the progress."""
        topic = growth.stream.stream
        self._non_multiple[topic] = {"from": growth.before, "to": growth.after, "seenAtMs": growth.seen_at_ms,
                                     "cutAtMs": growth.cut_at_ms}
        if self.options.ordering != DRAIN_FIRST:
            window = "every record of a moved key can be read out of order (expansion.ordering=none)"
        else:
            window = (f"records of a moving key produced until the growth is cut, {EXPANSION_SETTLE.name} "
                      f"({(growth.cut_at_ms - growth.seen_at_ms) / 1000:.0f} s) after it was seen, may be read "
                      "out of order")
        log.warning(
            "topic '%s' grew from %d to %d partitions, which is not a multiple of %d: keys move between partitions "
            "that existed before, so %s. To keep per-key order, grow a topic by a multiple of its current "
            "partition count (%d -> %d); or set %s to at least how long your producers take to refresh their "
            "metadata. Recorded in the progress: latestOffset[\"nonMultipleGrowth\"].",
            topic, growth.before, growth.after, growth.before, window, growth.before, 2 * growth.before,
            EXPANSION_SETTLE.name)

    def commit_batch(self, end: KafkaOffset) -> WritesBehind:
        """Nothing guards a Kafka commit; both mirrors of ``end`` are for tools, so they are written behind."""
        checkpoint = Checkpoint.from_pairs(end.positions)
        group: dict[tuple[str, int], int] | None = None
        if self.options.commit_offsets_to_kafka:
            group = {}
            for (_task, ssp), pos in end.positions.items():
                tp = (ssp.stream, ssp.partition)
                group[tp] = min(pos, group.get(tp, pos))
        return lambda: self._write_mirrors(checkpoint, group)

    def _write_mirrors(self, checkpoint: Checkpoint, group: dict[tuple[str, int], int] | None) -> None:
        self.mirror_checkpoint(checkpoint)
        if group:
            try:
                self.admin.commit_group_offsets(self.options.group_id, group)
            except Exception as err:  # a mirror for tools: never fail the query for it (docs/security.md)
                self._group_mirror_failed(err)
            else:
                if self._group_mirror_failing:
                    log.info("offsets are mirrored to consumer group %s again", self.options.group_id)
                self._group_mirror_failing = False

    def _group_mirror_failed(self, err: Exception) -> None:
        """Warn once while the group mirror keeps failing (a principal without READ on the group fails every
        commit alike), then at DEBUG: the query reads on, its positions are in the metadata store and Spark's
        checkpoint; only lag tools reading the group lose sight of it."""
        level = logging.DEBUG if self._group_mirror_failing else logging.WARNING
        self._group_mirror_failing = True
        log.log(level, "could not mirror offsets to consumer group %s: %s. The query reads on (its positions are in "
                "the metadata store); lag tools reading the group see stale offsets. Grant the query's principal "
                "READ on the group (docs/security.md), or set %s=false; further failures are logged at DEBUG until "
                "a mirror succeeds", self.options.group_id, err, COMMIT_OFFSETS_TO_KAFKA.name)

    def batch_reads(self, start: KafkaOffset, end: KafkaOffset) -> list[tuple[TaskName, list[KafkaRange]]]:
        out = []
        for task, ssps in end.job_model.tasks.items():
            ranges = []
            for ssp in sorted(ssps, key=ssp_order):
                until = end.positions[(task, ssp)]
                begin = end.start_of(task, ssp, start)
                if begin is None:
                    begin = until
                if until > begin:
                    ranges.append(KafkaRange(ssp.stream, ssp.partition, begin, until))
            out.append((task, ranges))
        return spread_tasks(out, self.options.min_partitions, self.options.copartition)

    def lease_identity(self, offset: KafkaOffset) -> str:
        return offset_identity(offset.canonical_text())

    def applied_startpoints(self, offset: KafkaOffset):
        for (task, ssp), rebase in offset.rebases.items():
            if rebase.reason == REBASE_STARTPOINT and rebase.creation_timestamp is not None:
                yield task, ssp, rebase.creation_timestamp

    def prepare_available_now(self) -> None:
        marks = self.watermarks(self.discover(self._last_model or self.stored_job_model(quiet=True))[0])
        self._until = {s: m.high for s, m in marks.items()}
        log.info("Trigger.AvailableNow: reading up to the end offsets seen now (%d partitions)", len(self._until))

    def system_progress(self) -> dict:
        """The high watermarks by SSP key, plus ``"dataLoss": {SSP key: records skipped since this run started}``
        and ``"recreatedTopics": {topic: new topic ID}`` once ``failOnDataLoss=false`` skipped anything, and
        ``"nonMultipleGrowth": {topic: {"from", "to", "seenAtMs", "cutAtMs"}}`` once a topic grew by other than a
        multiple of its partition count in this run. No SSP
        key lacks a '.', so these entries cannot collide with one."""
        out: dict = {s.key: m.high for s, m in sorted(self.latest_watermarks.items())}
        if self._data_loss:
            lost: dict[str, int] = {}
            for (ssp_key, lost_from), lost_until in self._data_loss.items():
                lost[ssp_key] = lost.get(ssp_key, 0) + lost_until - lost_from
            out["dataLoss"] = dict(sorted(lost.items()))
        if self._recreated:
            out["recreatedTopics"] = dict(sorted(self._recreated.items()))
        if self._non_multiple:
            out["nonMultipleGrowth"] = dict(sorted(self._non_multiple.items()))
        return out

    def _count_data_loss(self, losses) -> None:
        for loss in losses:
            key = (loss.ssp.key, loss.lost_from)
            # re-planned from the same start (a held-back batch): the same loss again, perhaps grown
            self._data_loss[key] = max(self._data_loss.get(key, loss.lost_until), loss.lost_until)

    # ---- helpers -------------------------------------------------------------------------------------
    def _due_startpoints(
        self, model: JobModel, start: KafkaOffset, marks: Mapping[SystemStreamPartition, Watermarks]
    ) -> dict[TaskSsp, ResolvedStartpoint]:
        resolver = KafkaStartpointResolver(marks, self.admin.offsets_for_times)

        def resolve(task, ssp, startpoint):
            if ssp not in marks:
                return {}
            return {(task, ssp): ResolvedStartpoint(startpoint.apply(ssp, resolver), startpoint.creation_timestamp)}

        return self.due_startpoints(model, start.applied, resolve, problem=kafka_startpoint_problem)

    def _starting_positions(
        self,
        model: JobModel,
        marks: Mapping[SystemStreamPartition, Watermarks],
        discovered: list[SystemStreamPartition] | None = None,
    ) -> dict[SystemStreamPartition, int]:
        """Where each SSP of a new checkpoint starts: the ``startingOffsets`` / ``startingTimestamp`` /
        ``startingOffsetsByTimestamp`` strategy (``starting.py``) decides, given the watermarks and the broker's
        offsets-for-times lookup. Starts below the log start skipped with ``failOnDataLoss=false`` are counted in
        the progress like the planner's losses."""
        starts = self.options.starting.starts(model, marks, self.admin.offsets_for_times,
                                              fail_on_data_loss=self.options.fail_on_data_loss, assigned=discovered)
        self._count_data_loss(starts.data_loss)
        return starts.positions


def _log_barriers(start: KafkaOffset, result: PlanResult, now_ms: int) -> None:
    """One line per barrier that appeared, was cut or was released in this plan (operators follow growth here)."""
    before = start.barriers
    after = result.offset.barriers
    for ssp in result.new_barriers:
        for b in after.get(ssp, ()):
            if b.settling:
                log.info("partition expansion to %d: %s waits for %s; cut in %.1f s (%s)",
                         b.grown_to, ssp, ", ".join(map(str, b.feeders)),
                         max(0, (b.settle_until or now_ms) - now_ms) / 1000, EXPANSION_SETTLE.name)
    for ssp, chain in after.items():
        for b in chain:
            if not b.settling and b not in before.get(ssp, ()):
                targets = ", ".join(f"{f} to offset {t}" for f, t in b.feeders.items())
                log.info("partition expansion to %d: %s is read past offset %s once %s are read", b.grown_to, ssp,
                         b.hold_at, targets)
    for ssp in result.released_barriers:
        log.info("partition expansion: %s released (every partition feeding it was drained)", ssp)


def _record_first_batch_starts(initial: KafkaOffset, planned: KafkaOffset) -> KafkaOffset:
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
    return KafkaOffset(planned.job_model, planned.positions, rebases, planned.barriers, planned.applied,
                     planned.topic_ids)
