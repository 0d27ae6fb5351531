"""The driver side of samza-kinesis: lists shards, decides batches with the pure planner, mirrors progress.

Kinesis has no "latest offset" to plan against, so the offset of batch N carries the positions batch N starts
from; executors record where each shard stopped (``BatchEnds``, put-if-absent) and ``latest_offset`` turns those
recorded ends into the next batch's starts (docs/architecture.md §8). To avoid an empty batch every trigger, a
batch is planned only when the previous one made progress, something changed (new shards, released children,
startpoints), a closed shard still has to reach ``SHARD_END``, or a probe finds records waiting.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Mapping, Sequence

from botocore.exceptions import ClientError

from ...core.checkpoint import Checkpoint
from ...core.jobmodel import JobModel
from ...metadata.lease import offset_identity, query_identity
from ...options.common import FAIL_ON_DATA_LOSS
from ...options.namespaces import STREAM_CONSUMERS
from ...source.job_coordinator import JobCoordinator, WritesBehind
from .. import errors
from ..calls import error_code, iterator_request
from ..client import AwsClientSettings, dynamodb_client, kinesis_client
from ..input_partition import PlannedShardRead
from ..microbatch_ends import BatchEnds, batch_ends_for
from ..options import KCL_LEASE_TABLE, STARTING_POSITION, SYSTEM, KinesisSourceOptions
from ..positions import ShardPosition
from ..shards import ShardInfo
from ..starting import Starts
from .admin import KinesisAdmin
from .childless import ChildlessShards
from .consumers import StreamConsumer, StreamConsumers
from .known_ends import KnownEnds
from .lease_table import KclLeaseTable
from .offset import READABLE, KinesisOffset, StreamIdentity
from .planner import (
    ShardStartpoint,
    initial_offset,
    plan_next,
    recreated_stream_offset,
    spread_shards,
    tasks_for_batch,
)
from .progress import millis_behind_report
from .shard_tasks import ShardTasksMirror
from .startpoints import KinesisStartpointResolver

log = logging.getLogger(__name__)

PROBE_BUDGET_S = 0.25  # time one trigger may spend probing idle shards for new records


class KinesisCoordinator(JobCoordinator[KinesisOffset, KinesisSourceOptions, PlannedShardRead]):
    def __init__(self, options: KinesisSourceOptions, *, clock=time.monotonic, wall_ms=None) -> None:
        super().__init__(options, clock=clock)
        self.settings = AwsClientSettings.from_settings(options.client_settings())
        self._wall_ms = wall_ms or (lambda: int(time.time() * 1000))
        self._admin: KinesisAdmin | None = None
        self._shard_info: dict[str, ShardInfo] = {}
        self._first_plan = True
        self._listed_at: float | None = None  # when plan_batch last listed the shards (describeShardInterval)
        self._last_probe: dict[str, float] = {}
        self._job_model_key: tuple | None = None
        self._job_model_cache: JobModel | None = None
        self._available_now_started = False
        self._lease_table: KclLeaseTable | None = None
        self._shard_tasks: ShardTasksMirror | None = None
        self.available_now_until_ms: int | None = None
        self._identity_checked = False  # the stream identity was compared with an offset in this process
        self.data_loss: dict[str, list[str]] = {}  # reported in the progress (reportLatestOffset)
        self._childless = ChildlessShards()
        self._known_ends = KnownEnds()  # batch ends read once, for the plan, the commit and the clean-up
        #: (batch, {shard id: MillisBehindLatest}) where the reads of the last batch planned from ended
        self.millis_behind: tuple[int, dict[str, int]] | None = None
        self._consumer: StreamConsumer | None = None  # enhanced fan-out: the stream consumer tasks read through

    # ---- clients ---------------------------------------------------------------------------------------
    @property
    def admin(self) -> KinesisAdmin:
        if self._admin is None:
            self._admin = KinesisAdmin(kinesis_client(self.settings), settings=self.settings)
        return self._admin

    def consumer_arn(self) -> str | None:
        """The ARN of the stream consumer the tasks subscribe through (enhanced fan-out), registered or reused
        and ACTIVE, once per driver; None with polling. Never part of the offset: a checkpoint may switch
        between polling and fan-out, and a re-registered consumer gets a new ARN."""
        name = self.options.consumer_name
        if name is None:
            return None
        if self._consumer is None:
            arn, _ = self.admin.stream_identity(self.options.stream)
            self._consumer = StreamConsumers(self.admin, self.options.stream, arn).ensure_active(name)
            # remembered for 'samza-source consumers list / deregister': the source never deregisters it
            self.store.put(STREAM_CONSUMERS, f"{self.options.stream}/{name}",
                           {"stream": self.options.stream, "streamArn": arn, **self._consumer.to_json()})
            log.info("samza-kinesis %s: reading stream %r with enhanced fan-out through stream consumer %r (%s)",
                     self.options.job_name, self.options.stream, name, self._consumer.arn)
        return self._consumer.arn

    def lease_identity(self, offset: KinesisOffset) -> str:
        if offset.query_id:
            return query_identity(offset.query_id)
        return offset_identity(offset.to_json_str())  # an offset from before query ids: its digest identifies it

    def batch_identities(self, start: KinesisOffset, end: KinesisOffset) -> tuple[str, ...]:
        """Only the end's: every offset of a query carries the query's id, except the start of batch 0, which
        Spark recomputes with ``initialOffset()`` (a fresh id) and which identifies nothing."""
        return (self.lease_identity(end),)

    def applied_startpoints(self, offset: KinesisOffset):
        for (task, ssp), applied in offset.startpoints.items():
            yield task, ssp, applied.creation_timestamp

    @property
    def shard_tasks(self) -> ShardTasksMirror:
        """The shard -> task map of the committed offset, for batch reads of this job (``shard_tasks.py``)."""
        if self._shard_tasks is None:
            self._shard_tasks = ShardTasksMirror(self.store, self.options.stream)
        return self._shard_tasks

    def batch_ends(self, offset: KinesisOffset) -> BatchEnds:
        return batch_ends_for(self.store, self.options.stream, offset.query_id)

    def list_shards(self) -> list[ShardInfo]:
        shards = self.admin.list_shards(self.options.stream)
        self._shard_info = {s.shard_id: s for s in shards}
        return shards

    def _shards_for_plan(self) -> list[ShardInfo]:
        """The shards for the next plan: listed anew unless the last list is younger than describeShardInterval
        (default 0: every plan lists). A list a little old is what every plan sees anyway (the shards change while
        a batch runs); a reshard is found at the next list, and parents are still drained before children."""
        interval_s = self.options.describe_shard_interval_ms / 1000.0
        now = self._clock()
        if self._listed_at is not None and self._shard_info and now - self._listed_at < interval_s:
            return list(self._shard_info.values())
        shards = self.list_shards()
        self._listed_at = now
        return shards

    # ---- Spark entry points ----------------------------------------------------------------------------
    def first_offset(self) -> KinesisOffset:
        shards = self.list_shards()
        self.consumer_arn()  # fan-out: registered (and ACTIVE) before the first batch, a bad name fails the start
        starts = self.starting_positions(shards)
        positions, latest_ms = starts.positions, starts.latest_timestamp_ms
        offset = initial_offset(
            shards, self.options.tasks, positions, self.options.assignment, stream=self.options.stream,
            system=SYSTEM, latest_timestamp_ms=latest_ms, query_id=uuid.uuid4().hex,
            stream_identity=self.stream_identity(),
        )
        self._identity_checked = True
        log.info("samza-kinesis %s: %d shards, %d tasks", self.options.job_name, len(shards), offset.num_tasks)
        return offset

    def starting_positions(self, shards: list[ShardInfo]) -> Starts:
        """Where each of ``shards`` starts under the option ``startingPosition`` (``starting.py``), with its checks
        against Kinesis (a sequence number of another shard is refused) and the KCL lease table for ``kcl``: for
        a new checkpoint and for a batch read alike."""
        return self.options.starting.starts(shards, stream=self.options.stream, now_ms=self._wall_ms,
                                            check_sequences=self._check_sequences_with_kinesis,
                                            kcl_checkpoints=self._kcl_positions)

    def plan_batch(self, start: KinesisOffset, *, max_rows: int | None) -> KinesisOffset:
        identity = self.stream_identity()
        if start.stream_identity is not None and start.stream_identity != identity:
            self._stream_recreated(start.stream_identity, identity, "planning the next batch")
            shards = self.list_shards()
            self._identity_checked = True
            return recreated_stream_offset(start, shards, identity)
        self._identity_checked = True
        shards = self._shards_for_plan()
        found = self._known_ends.recorded_for(self.batch_ends(start), start.batch) if start.batch > 0 else {}
        recorded = {sid: rec.end for sid, rec in found.items()}
        self._note_millis_behind(start.batch, found)
        self._report_read_losses(start.batch, found)
        startpoints = self._due_startpoints(start)
        # A restart maps shards 1:1 again (the proposal's step 5) when splits had overloaded slots.
        rebuild = self._first_plan and bool(start.mapper.overloaded_slots())
        self._first_plan = False
        plan = plan_next(
            start, shards, recorded, startpoints=startpoints, fail_on_data_loss=self.options.fail_on_data_loss,
            assignment=self.options.assignment, num_tasks=self.options.tasks, new_job_model=rebuild,
        )
        if start.stream_identity is None:  # an offset of an earlier release: record the stream from now on
            plan.offset = dataclasses.replace(plan.offset, stream_identity=identity)
        self._report_shard_losses(plan.data_loss)
        self._check_childless(shards, plan.offset)
        if not plan.has_work:
            return start if not (plan.drained or plan.new_shards or plan.released or plan.applied) else plan.offset
        if self._worth_a_batch(start, recorded, plan):
            return plan.offset
        return start

    def _report_read_losses(self, batch: int, recorded: Mapping) -> None:
        """What the executors' reads of ``batch`` skipped with failOnDataLoss=false (recorded beside their ends):
        into the progress as ``dataLoss.readsSkipped`` ("<shard> in batch <n>"), logged once here as well, since
        the executor's own WARN is in a log few people read."""
        reported = self.data_loss.setdefault("readsSkipped", [])
        for sid, rec in sorted(recorded.items()):
            entry = f"{sid} in batch {batch}"
            if rec.data_loss and entry not in reported:
                log.warning("data loss reported by the read of %s: %s", entry, "; ".join(rec.data_loss))
                reported.append(entry)
        if not reported:
            del self.data_loss["readsSkipped"]

    def _check_childless(self, shards: Sequence[ShardInfo], offset: KinesisOffset) -> None:
        """A drained closed shard listed without children past the grace (:mod:`.childless`): data loss."""
        drained = [sid for sid, state in offset.shards.items() if state.start.is_shard_end]
        for sid, waited in self._childless.past_grace(shards, drained, self._wall_ms()).items():
            ending = next((info.ending_sequence for info in shards if info.shard_id == sid), None)
            if self.options.fail_on_data_loss:
                raise errors.closed_shard_without_children(self.options.stream, sid, ending, waited)
            reported = self.data_loss.setdefault("shardsClosedWithoutChildren", [])
            if sid not in reported:
                log.warning("data loss: %s; continuing without them", errors.describe_childless(sid, ending, waited))
                reported.append(sid)

    def _report_shard_losses(self, losses) -> None:
        """Log and count each expired shard once: a plan held back is planned again at the next trigger, from
        the same start, and finds the same loss."""
        expired = self.data_loss.setdefault("shardsExpired", [])
        for loss in losses:
            if loss.shard_id not in expired:
                log.warning("data loss: %s; continuing without it", loss.describe())
                expired.append(loss.shard_id)
        if not expired:
            del self.data_loss["shardsExpired"]

    def commit_batch(self, end: KinesisOffset) -> WritesBehind:
        """The KCL lease table is written here, in the commit: a conflict means a live KCL worker uses the table,
        and the query must fail before its next batch reads the shards beside it (docs/migration.md, "From a KCL
        application"). The checkpoint mirror, the shard -> task map and the clean-up of the recorded ends of
        committed batches are for tools and housekeeping: written behind."""
        # the plan just before (Spark plans batch N + 1, then commits batch N) read these ends: not listed again
        ends = {sid: rec.end for sid, rec in self._known_ends.recorded_for(self.batch_ends(end), end.batch).items()}
        reached = {sid: ends.get(sid, state.start) for sid, state in end.shards.items()}
        if self.options.kcl_lease_table:
            self._write_kcl_leases(self.options.kcl_lease_table, reached)
        checkpoint = self._checkpoint_of(end, reached)
        return lambda: self._write_mirrors(end, checkpoint)

    @staticmethod
    def _checkpoint_of(end: KinesisOffset, reached: Mapping[str, ShardPosition]) -> Checkpoint:
        """Every (task, slot SSP)'s reached position: a shard's, or {shard id: position} for an overloaded slot."""
        positions: dict = {}
        for sid, position in reached.items():
            task, ssp = end.task_of(sid), end.slot_ssp(sid)
            if task is not None and ssp is not None:
                positions.setdefault((task, ssp), {})[sid] = position.to_json()
        checkpoint = {k: (next(iter(v.values())) if len(v) == 1 else v) for k, v in positions.items()}
        return Checkpoint.from_pairs(checkpoint, batch_id=end.batch)

    def _write_kcl_leases(self, table_name: str, reached: Mapping[str, ShardPosition]) -> None:
        if self._lease_table is None:
            table = KclLeaseTable(dynamodb_client(self.settings), table_name, settings=self.settings)
            table.ensure_table()
            self._lease_table = table
        lease = {}
        for sid, position in reached.items():
            info = self._shard_info.get(sid)
            lease[sid] = (position, info.parent_ids if info else ())
        ranges = {sid: (i.hash_start, i.hash_end) for sid, i in self._shard_info.items()}
        self._lease_table.write_checkpoints(lease, owner=f"samza-{self.options.job_name}", hash_ranges=ranges)

    def _write_mirrors(self, end: KinesisOffset, checkpoint: Checkpoint) -> None:
        """On the write-behind thread: ``end`` and ``checkpoint`` are immutable; nothing else of the driver's."""
        self.mirror_checkpoint(checkpoint)
        self.shard_tasks.write(end)
        self._known_ends.clean_up_before(self.batch_ends(end), end.batch)

    def batch_reads(self, start: KinesisOffset, end: KinesisOffset):
        """(task, [:class:`PlannedShardRead`]) for the batch ending at ``end`` (which holds its starts): frozen,
        self-validating values that executors unpickle without any of the planner's classes."""
        if not self._identity_checked:  # a restart replaying its last planned batch: latest_offset did not run
            self._identity_checked = True
            identity = self.stream_identity()
            if end.stream_identity is not None and end.stream_identity != identity:
                self._stream_recreated(end.stream_identity, identity, f"replaying batch {end.batch} after a restart")
                # failOnDataLoss=false: the replayed batch reads nothing (its positions belong to the old stream);
                # the next plan starts the new stream from TRIM_HORIZON
                return [(task, []) for task, _ in tasks_for_batch(end)]
        out = []
        consumer_arn = self.consumer_arn()
        for task, reads in tasks_for_batch(end):
            out.append((task, [PlannedShardRead(end.batch, end.query_id, sid, start, end.shards[sid].ending_sequence,
                                                self.available_now_until_ms, consumer_arn) for sid, start in reads]))
        return spread_shards(out, self.options.min_partitions)

    def prepare_available_now(self) -> None:
        self.available_now_until_ms = self._wall_ms()
        self._available_now_started = False

    # ---- stream identity, start checks --------------------------------------------------------------------
    def stream_identity(self) -> StreamIdentity:
        arn, created_ms = self.admin.stream_identity(self.options.stream)
        return StreamIdentity(arn, created_ms)

    def _stream_recreated(self, old: StreamIdentity, identity: StreamIdentity, when: str) -> None:
        """Fail (failOnDataLoss) or log and count the re-creation, once per (old, new) stream: a restart that
        replays its last batch finds it in ``batch_reads``, and the next plan, from that batch's end (which still
        names the old stream), finds it again."""
        change = f"{old.describe()} -> {identity.describe()}"
        if change in self.data_loss.get("streamRecreated", ()):
            return
        what = (f"samza-kinesis stream {self.options.stream!r} was deleted and re-created since the query read it "
                f"(found while {when}): the checkpoint's positions belong to {old.describe()}, "
                f"the stream now is {identity.describe()}. The old stream's unread records are gone, and its "
                "sequence numbers mean nothing in the new one")
        if self.options.fail_on_data_loss:
            raise errors.stream_recreated(what)
        log.warning("data loss: %s; reading the new stream from TRIM_HORIZON (%s=false)", what,
                    FAIL_ON_DATA_LOSS.name)
        self.data_loss.setdefault("streamRecreated", []).append(change)

    def _check_sequences_with_kinesis(self, named: Mapping[str, ShardPosition]) -> None:
        """Ask Kinesis for an iterator at every sequence number the per-shard option names: real Kinesis refuses
        one that belongs to another shard (its sequence numbers encode the shard) with InvalidArgumentException.
        One call per named sequence number, only when a query starts."""
        for sid, pos in sorted(named.items()):
            if pos.sequence is None:
                continue
            request = iterator_request(pos) or {}  # a sequence position always has one
            try:
                self.admin.call(f"GetShardIterator for shard {sid}", self.admin.client.get_shard_iterator,
                                 StreamName=self.options.stream, ShardId=sid, **request)
            except ClientError as err:
                if error_code(err) != "InvalidArgumentException":
                    raise
                raise errors.starting_sequence_refused(STARTING_POSITION.name, sid, self.options.stream, pos,
                                                       self.settings.scrub(err)) from None

    def system_progress(self) -> dict:
        """How far behind the tip the last batch's reads ended (``kinesis.progress``: per shard and min / avg /
        max ``MillisBehindLatest``), what this run skipped with failOnDataLoss=false (``"dataLoss"``), and how many
        KCL lease rows the mirror left alone as damaged (``"damagedKclLeaseRows"``).

        Kinesis has no per-shard "latest offset" to report, and asking costs ``GetRecords`` calls from the shards'
        5 reads/s that this query's readers need; but every answer the readers got carries ``MillisBehindLatest``,
        and the executors record the one where each shard's read ended beside its batch end. So the figures
        describe the batch before the one this progress belongs to (the one ``latest_offset`` planned from).
        A record count per shard is measured on demand: ``samza-source lag --stream ...`` (``ops.lag``)."""
        out: dict = {}
        if self._consumer is not None:
            out["consumer"] = {"name": self._consumer.name, "arn": self._consumer.arn}
        if self.millis_behind is not None:
            out.update(millis_behind_report(self.millis_behind[1], self.millis_behind[0]))
        if self.data_loss:
            out["dataLoss"] = {k: list(v) for k, v in sorted(self.data_loss.items())}
        if self._lease_table is not None and self._lease_table.damaged:
            out["damagedKclLeaseRows"] = len(self._lease_table.damaged)
        return out

    def _note_millis_behind(self, batch: int, recorded: Mapping) -> None:
        """Keep the ``MillisBehindLatest`` the executors recorded with batch ``batch``'s ends (shards whose read
        made no call have none); an earlier batch's figures stay when this one has none (a replan of a batch
        whose ends were cleaned up)."""
        millis = {sid: rec.millis_behind_latest for sid, rec in recorded.items()
                  if rec.millis_behind_latest is not None}
        if millis:
            self.millis_behind = (batch, millis)

    # ---- helpers -----------------------------------------------------------------------------------------
    def _worth_a_batch(self, start: KinesisOffset, recorded: Mapping[str, ShardPosition], plan) -> bool:
        if plan.new_shards or plan.released or plan.applied or plan.drained or plan.new_job_model:
            return True
        if self.available_now_until_ms is not None and not self._available_now_started:
            self._available_now_started = True
            return True  # the trigger's first batch reads whatever arrived before it started
        if start.batch == 0:
            pass  # nothing read yet: probe below
        elif any(recorded.get(sid, state.start) != state.start for sid, state in start.shards.items()
                 if state.status == READABLE):
            return True  # the last batch made progress: there is likely more
        if self.available_now_until_ms is not None:
            return False  # AvailableNow: a batch without progress means everything before its start was read
        readable = [(sid, state) for sid, state in plan.offset.shards.items()
                    if state.status == READABLE and not state.start.is_shard_end]
        if any(state.ending_sequence is not None for _, state in readable):
            return True  # a closed shard must be planned once more to reach SHARD_END
        # Probe idle shards, least recently probed first, for at most PROBE_BUDGET_S per trigger (an idle stream
        # with hundreds of shards must not stall every trigger); a probe costs GetRecords calls against the
        # shard's 5 reads/s, so each shard is probed at most once a second.
        deadline = self._clock() + PROBE_BUDGET_S
        for sid, state in sorted(readable, key=lambda item: self._last_probe.get(item[0], -1e9)):
            now = self._clock()
            if now >= deadline:
                break
            if now - self._last_probe.get(sid, -1e9) < 1.0:
                continue
            found = self.admin.has_records(self.options.stream, sid, state.start)
            self._last_probe[sid] = self._clock()
            if found:
                return True
        return False

    def _job_model_of(self, offset: KinesisOffset) -> JobModel:
        """The offset's JobModel, built once per model shape: tasks x slots SSPs grow with the square of the
        shard count, and a new offset object arrives at every trigger."""
        key = (offset.stream, offset.generation, offset.num_tasks, offset.slots_per_task)
        if self._job_model_key != key or self._job_model_cache is None:
            self._job_model_cache = offset.job_model
            self._job_model_key = key
        return self._job_model_cache

    def _kcl_positions(self) -> dict[str, ShardPosition]:
        if not self.options.kcl_lease_table:
            raise errors.kcl_lease_table_not_set(starting_position_option=STARTING_POSITION.name,
                                                 lease_table_option=KCL_LEASE_TABLE.name)
        table = KclLeaseTable(dynamodb_client(self.settings), self.options.kcl_lease_table, settings=self.settings)
        positions = table.read_checkpoints(stream=self.options.stream)
        log.info("starting from %d KCL checkpoints in %s", len(positions), self.options.kcl_lease_table)
        return positions

    def _due_startpoints(self, start: KinesisOffset) -> dict[str, ShardStartpoint]:
        resolver = KinesisStartpointResolver(self._wall_ms())

        def resolve(task, ssp, startpoint):
            shards = start.shards_in_slot(task, ssp)
            position = startpoint.apply(ssp, resolver)
            if position.type == "AT_SEQUENCE_NUMBER" and len(shards) > 1:
                raise errors.startpoint_sequence_for_several_shards(ssp, task, shards)
            return {sid: ShardStartpoint(position, startpoint.creation_timestamp, task, ssp) for sid in shards}

        return self.due_startpoints(self._job_model_of(start), start.applied, resolve)
