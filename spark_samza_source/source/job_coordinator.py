"""The Samza JobCoordinator both sources share: what every job does on the driver, whichever system it reads.

``KafkaCoordinator`` and ``KinesisCoordinator`` derive from :class:`JobCoordinator`. It owns the job's metadata
store and this driver's job lease (held by every Spark call), the startpoints' life cycle (poll at the
configured interval -> resolve with the system's visitor -> the planner applies them -> delete once the batch that
applied them is committed) and the checkpoint mirror. A system class adds discovery, planning and reading: the
abstract methods below. The stream reader skeleton (``source/stream_reader.py``) calls the four Spark entry points.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.checkpoint import Checkpoint, CheckpointMirror
from ..core.errors import SamzaSourceError
from ..core.jobmodel import JobModel
from ..core.model import SystemStreamPartition, TaskName
from ..core.startpoint import Startpoint
from ..core.startpoint_manager import StartpointManager, startpoint_key
from ..core.store import MetadataStore
from .job_options import JobOptions
from .write_behind import WriteBehind

if TYPE_CHECKING:
    from ..metadata.lease import JobLease

log = logging.getLogger(__name__)

Offset = TypeVar("Offset")
#: the system's options class: the common options (``JobOptions``) and its own
Options = TypeVar("Options", bound=JobOptions)
#: what one task reads in a batch (samza-kafka: a ``KafkaRange``; samza-kinesis: a ``PlannedShardRead``)
Read = TypeVar("Read")
Resolved = TypeVar("Resolved")

#: the writes for tools a commit leaves to the write-behind thread (``JobCoordinator.commit``)
WritesBehind = Callable[[], None]


class JobCoordinator(ABC, Generic[Offset, Options, Read]):
    """Plans batches for one query, in Spark's long-lived driver-side Python runner.

    Typed by the system's offset, options (a :class:`~spark_samza_source.source.job_options.JobOptions`) and what
    one task reads, so a type checker holds both systems to the same shape.
    """

    def __init__(self, options: Options, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self._clock = clock
        self._store: MetadataStore | None = None
        self._lease: JobLease | None = None
        self._startpoints: StartpointManager | None = None
        self._mirror: CheckpointMirror | None = None
        self._write_behind: WriteBehind | None = None
        self._last_startpoint_poll: float | None = None
        self._deleted: set[tuple[TaskName, SystemStreamPartition, int]] = set()
        self._reported: set[tuple[TaskName, SystemStreamPartition, int]] = set()
        #: startpoint key -> why it can never apply, as of the last poll (``malformedStartpoints`` in the progress)
        self.malformed_startpoints: dict[str, str] = {}

    # ---- the job's resources, opened on first use ------------------------------------------------------
    @property
    def store(self) -> MetadataStore:
        if self._store is None:
            from ..metadata import open_store

            self._store = open_store(self.options.metadata_store, self.options.job_name)
        return self._store

    @property
    def lease(self) -> JobLease:
        """This driver's job lease (one query per job.name and store): held by every Spark call."""
        if self._lease is None:
            from ..metadata.lease import JobLease

            self._lease = JobLease(self.store, ttl_ms=self.options.job_lease_ttl_ms)
        return self._lease

    @property
    def startpoints(self) -> StartpointManager:
        if self._startpoints is None:
            self._startpoints = StartpointManager(self.store, ttl_ms=self.options.startpoint_ttl_ms)
        return self._startpoints

    @property
    def write_behind(self) -> WriteBehind:
        """Where :meth:`commit` runs the writes for tools a system's ``commit_batch`` returns (off Spark's
        ``walCommit`` phase; settled at the next ``latestOffset``)."""
        if self._write_behind is None:
            self._write_behind = WriteBehind(f"samza-mirrors-{self.options.job_name}")
        return self._write_behind

    def settle_writes(self) -> None:
        """Wait for the writes :meth:`commit` handed to :attr:`write_behind`; raise what one of them raised."""
        if self._write_behind is not None:
            self._write_behind.settle()

    @property
    def checkpoint_mirror(self) -> CheckpointMirror:
        if self._mirror is None:
            self._mirror = CheckpointMirror(self.store)
        return self._mirror

    # ---- what a system defines ----------------------------------------------------------------------------
    @abstractmethod
    def first_offset(self) -> Offset:
        """Where a query with no checkpoint starts (``initial_offset`` holds the lease before it asks)."""

    @abstractmethod
    def plan_batch(self, start: Offset, *, max_rows: int | None) -> Offset:
        """The end of the next batch from ``start``, or ``start`` itself (the same object) for "no new batch"."""

    @abstractmethod
    def batch_reads(self, start: Offset, end: Offset) -> list[tuple[TaskName, list[Read]]]:
        """One entry per task of ``end``'s job model, in task order: what that task reads in the batch."""

    @abstractmethod
    def commit_batch(self, end: Offset) -> WritesBehind | None:
        """The system's part of committing the batch ending at ``end`` (see :meth:`commit` for the rule).

        Write here what must fail this very commit (a guard, such as the KCL lease table's check for a live
        KCL worker); return the writes for tools (the checkpoint mirror with :meth:`mirror_checkpoint`, the
        system's own mirrors, clean-up), built from ``end`` and this driver's state now: they run behind."""

    @abstractmethod
    def lease_identity(self, offset: Offset) -> str:
        """Which query ``offset`` belongs to, as the lease records it (``metadata.lease``)."""

    @abstractmethod
    def applied_startpoints(self, offset: Offset) -> Iterable[tuple[TaskName, SystemStreamPartition, int]]:
        """(task, SSP, creation timestamp) of every startpoint the batch ending at ``offset`` applied."""

    def batch_identities(self, start: Offset, end: Offset) -> tuple[str, ...]:
        """The identities a batch's ``partitions`` call holds the lease with: both ends by default, so a driver
        that restarts to replay a batch whose end it planned but never saw planned is still recognised by the
        start (which it held in ``latestOffset``)."""
        return self.lease_identity(start), self.lease_identity(end)

    def prepare_available_now(self) -> None:
        """``Trigger.AvailableNow`` starts: fix what "available now" means."""

    def system_progress(self) -> dict[str, Any]:
        """What this system adds to ``sources[i].latestOffset`` in Spark's progress."""
        return {}

    # ---- the Spark entry points, in the order Spark calls them --------------------------------------------
    def initial_offset(self) -> Offset:
        """A new checkpoint: the lease first (one query per job.name and store, before anything is written),
        then the system's ``first_offset``."""
        self.lease.hold()
        return self.first_offset()

    def latest_offset(self, start: Offset, *, max_rows: int | None = None) -> Offset:
        self.lease.hold(self.lease_identity(start))
        self.settle_writes()  # the previous commit's mirrors are written (or their error raised) before planning
        self.delete_applied_startpoints(start)  # Spark never calls commit for a run's last batch: catch up here
        return self.plan_batch(start, max_rows=max_rows)

    def partitions(self, start: Offset, end: Offset) -> list[tuple[TaskName, list[Read]]]:
        self.lease.hold(*self.batch_identities(start, end))
        return self.batch_reads(start, end)

    def commit(self, end: Offset) -> None:
        """The one commit path of both systems (docs/architecture.md §9).

        Synchronous, on Spark's ``walCommit`` path, so a failure fails the commit: holding the lease, deleting the
        startpoints ``end`` applied (only if unchanged) and the system's guards (``commit_batch``). Written
        behind, while the next batch runs: the writes for tools ``commit_batch`` returns, on one thread, a newer
        commit's writes replacing older ones still waiting (they are absolute). The next ``latestOffset`` waits
        for them before it plans and raises what one raised, so a failed write fails the query one call later
        and the mirrors never trail by more than the batch in flight."""
        self.lease.hold(self.lease_identity(end))
        self.delete_applied_startpoints(end)
        behind = self.commit_batch(end)
        if behind is not None:
            self.write_behind.submit(behind)

    def progress_report(self) -> dict[str, Any] | None:
        """``sources[i].latestOffset`` in Spark's progress: the system's figures, ``"malformedStartpoints": N``
        while the store holds startpoints that can never apply (skipped, logged once each), and
        ``"damagedMirrorRecords": N`` once the checkpoint mirror met damaged records (skipped, logged once each)."""
        out = dict(self.system_progress())
        if self.malformed_startpoints:
            out["malformedStartpoints"] = len(self.malformed_startpoints)
        if self._mirror is not None and self._mirror.damaged:
            out["damagedMirrorRecords"] = len(self._mirror.damaged)
        return out or None

    def mirror_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Mirror committed positions to the store, for tools (the Spark offset log stays the truth)."""
        self.checkpoint_mirror.write(checkpoint)

    # ---- startpoints: poll -> resolve -> (the planner applies) -> delete -----------------------------------
    def due_startpoints(
        self,
        model: JobModel,
        applied: Mapping[tuple[TaskName, SystemStreamPartition], int],
        resolve: Callable[[TaskName, SystemStreamPartition, Startpoint], Mapping[Any, Resolved]],
        *,
        problem: Callable[[Startpoint], str | None] = lambda startpoint: None,
    ) -> dict[Any, Resolved]:
        """The startpoints to apply in the next batch, resolved; empty between polls (``startpoint.pollInterval``).

        ``model`` is the job model to fan task-less startpoints out over; ``applied`` maps (task, SSP) to the
        creation timestamp of the startpoint applied there last, so a startpoint whose deletion was lost (the run
        stopped before its commit) is deleted instead of applied twice. ``resolve`` turns one startpoint into
        what the planner needs (keyed as the system likes; empty to skip it this time) or raises
        :class:`SamzaSourceError` when it cannot: as Samza, the startpoint is then reported once and the
        checkpoint kept. ``problem`` names what makes a startpoint unusable by this system (it stays in the store,
        reported as malformed).
        """
        now = self._clock()
        if (self._last_startpoint_poll is not None
                and now - self._last_startpoint_poll < self.options.startpoint_poll_ms / 1000):
            return {}
        self._last_startpoint_poll = now
        effective = self.startpoints.fan_out(model)  # warns once per malformed value itself
        malformed = {bad.key: bad.error for bad in effective.malformed}
        resolved: dict[Any, Resolved] = {}
        for (ssp, task), startpoint in effective.items():
            created = startpoint.creation_timestamp
            why = problem(startpoint)
            if why is not None:
                key = startpoint_key(ssp, task)
                malformed[key] = why
                self._report_once(task, ssp, created, "skipping malformed startpoint %s for %s in %s (metadata "
                                  "store %s, key %r): %s; it stays in the store until replaced or deleted "
                                  "(samza-source startpoint delete)", startpoint.to_json_str(), ssp, task,
                                  self.store.uri, key, why)
                continue
            if created <= applied.get((task, ssp), -1):
                self.startpoints.delete_if_unchanged(ssp, task, created)
                continue
            try:
                resolved.update(resolve(task, ssp, startpoint))
            except SamzaSourceError as err:
                self._report_once(task, ssp, created, "ignoring startpoint for %s in %s: %s", ssp, task, err)
        self.malformed_startpoints = dict(sorted(malformed.items()))
        return resolved

    def delete_applied_startpoints(self, offset: Offset) -> None:
        """Delete the startpoints the batch ending at ``offset`` applied, each only if unchanged since (a newer one
        written meanwhile stays), once per process."""
        for task, ssp, created in self.applied_startpoints(offset):
            marker = (task, ssp, created)
            if marker in self._deleted:
                continue
            deleted = self.startpoints.delete_if_unchanged(ssp, task, created)
            log.info("startpoint for %s in %s %s", ssp, task,
                     "deleted after its batch committed" if deleted else "already gone or replaced by a newer one")
            self._deleted.add(marker)

    def _report_once(self, task: TaskName, ssp: SystemStreamPartition, created: int, message: str, *args) -> None:
        if (task, ssp, created) not in self._reported:
            self._reported.add((task, ssp, created))
            log.warning(message, *args)
