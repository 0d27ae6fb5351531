"""The job coordinator both sources derive from (``source/job_coordinator.py``), without servers: a minimal system
over a ``memory:`` store, so the startpoint life cycle and the lease are checked once for every system.

The Kafka and Kinesis integration tests exercise the same code through real queries; these pin its rules:
polling at the interval, a startpoint applied before is deleted rather than applied again, one that cannot be
resolved or is malformed is reported once and kept, deletion after commit only if unchanged and once per process.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field

import pytest

from spark_samza_source.core.checkpoint import Checkpoint
from spark_samza_source.core.errors import SamzaSourceError
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.core.startpoint import StartpointOldest, StartpointSpecific
from spark_samza_source.metadata.lease import KEY, NAMESPACE
from spark_samza_source.source.job_coordinator import JobCoordinator
from spark_samza_source.source.job_options import JobOptions

SSP0 = SystemStreamPartition("toy", "s", 0)
SSP1 = SystemStreamPartition("toy", "s", 1)
T0, T1 = TaskName("Partition 0"), TaskName("Partition 1")
#: creation timestamps a minute old: within the startpoint TTL
C5, C6 = (int(time.time() * 1000) - 60_000 + k for k in (5_000, 6_000))
MODEL = JobModel({T0: frozenset({SSP0}), T1: frozenset({SSP1})})


@dataclass(frozen=True)
class ToyOffset:
    """An offset: its batch, and (task, SSP) -> creation timestamp of the startpoint the batch applied."""

    batch: int
    applied: dict = field(default_factory=dict)


class ToyCoordinator(JobCoordinator[ToyOffset, JobOptions, object]):
    """The smallest system: plans nothing, resolves a Specific startpoint to its position, refuses 'bad'."""

    def __init__(self, options, clock):
        super().__init__(options, clock=clock)
        self.committed: list[int] = []

    def first_offset(self):
        return ToyOffset(0)

    def plan_batch(self, start, *, max_rows):
        resolved = self.due_startpoints(MODEL, start.applied, self._resolve, problem=self._problem)
        return ToyOffset(start.batch + 1, {k: v[1] for k, v in resolved.items()}) if resolved else start

    def batch_reads(self, start, end):
        return [(task, []) for task in MODEL.tasks]

    def commit_batch(self, end):
        self.committed.append(end.batch)
        checkpoint = Checkpoint.from_pairs({(T0, SSP0): end.batch})
        return lambda: self.mirror_checkpoint(checkpoint)

    def lease_identity(self, offset):
        return f"offset:toy-{offset.batch}"

    def applied_startpoints(self, offset):
        return [(task, ssp, created) for (task, ssp), created in offset.applied.items()]

    @staticmethod
    def _resolve(task, ssp, startpoint):
        if getattr(startpoint, "position", None) == "bad":
            raise SamzaSourceError("position 'bad' does not exist")
        return {(task, ssp): (getattr(startpoint, "position", "oldest"), startpoint.creation_timestamp)}

    @staticmethod
    def _problem(startpoint):
        return "negative positions are not offsets" if getattr(startpoint, "position", "").startswith("-") else None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(poll_ms: int = 10_000, store: str | None = None):
    options = JobOptions(job_name="toy", metadata_store=store or f"memory:{uuid.uuid4().hex}", fail_on_data_loss=True,
                         startpoint_ttl_ms=3_600_000, startpoint_poll_ms=poll_ms, job_lease_ttl_ms=60_000,
                         retry_timeout_ms=60_000)
    clock = Clock()
    return ToyCoordinator(options, clock), clock


def test_startpoints_are_polled_at_the_interval_and_applied_once():
    coordinator, clock = make()
    start = coordinator.initial_offset()
    coordinator.startpoints.write(SSP0, StartpointSpecific("7", creation_timestamp=C5))
    first = coordinator.latest_offset(start)
    assert first.applied == {(T0, SSP0): C5}
    coordinator.startpoints.write(SSP1, StartpointOldest(creation_timestamp=C6))
    assert coordinator.latest_offset(first) is first  # within the poll interval: not polled again
    clock.now += 10.0
    second = coordinator.latest_offset(first)
    assert second.applied == {(T1, SSP1): C6}


def test_a_startpoint_applied_before_is_deleted_not_applied_again():
    coordinator, clock = make(poll_ms=0)
    coordinator.startpoints.write(SSP0, StartpointSpecific("7", creation_timestamp=C5))
    replayed = ToyOffset(3, {(T0, SSP0): C5})  # a run that applied it and stopped before its commit
    coordinator.initial_offset()
    assert coordinator.due_startpoints(MODEL, replayed.applied, ToyCoordinator._resolve) == {}
    assert coordinator.startpoints.read(SSP0, T0) is None


def test_an_unresolvable_startpoint_is_reported_once_and_kept(caplog):
    coordinator, clock = make(poll_ms=0)
    start = coordinator.initial_offset()
    coordinator.startpoints.write(SSP0, StartpointSpecific("bad", creation_timestamp=C5))
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.source.job_coordinator"):
        assert coordinator.latest_offset(start) is start
        assert coordinator.latest_offset(start) is start
    warnings = [r.getMessage() for r in caplog.records if "ignoring startpoint" in r.getMessage()]
    assert len(warnings) == 1 and "position 'bad' does not exist" in warnings[0]
    assert coordinator.startpoints.read(SSP0, T0) is not None  # as Samza: reported, the checkpoint kept


def test_a_malformed_startpoint_is_counted_in_the_progress_and_kept():
    coordinator, clock = make(poll_ms=0)
    start = coordinator.initial_offset()
    coordinator.startpoints.write(SSP1, StartpointSpecific("-3", creation_timestamp=C5))
    assert coordinator.progress_report() is None
    assert coordinator.latest_offset(start) is start
    assert coordinator.progress_report() == {"malformedStartpoints": 1}
    assert list(coordinator.malformed_startpoints.values()) == ["negative positions are not offsets"]
    assert coordinator.startpoints.read(SSP1, T1) is not None


def test_a_damaged_checkpoint_mirror_record_is_left_in_place_said_once_and_counted_in_the_progress(tmp_path, caplog):
    """Backs Guarantees (docs/guarantees.md, the damaged-record rule: the checkpoint mirror skips): the commit goes
    on, the damaged record is neither written over nor deleted without a WARN, and the progress counts it."""
    from samza_devkit.damaged_records import plant

    coordinator, clock = make(poll_ms=0, store=tmp_path.as_uri())
    plant(coordinator.store, "checkpoint", "Partition 9", "truncated")
    start = coordinator.initial_offset()
    end = coordinator.latest_offset(start)
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.core.checkpoint"):
        coordinator.commit(end)
        coordinator.settle_writes()
    said = [r.getMessage() for r in caplog.records if "damaged checkpoint mirror record" in r.getMessage()]
    assert len(said) == 1 and "Partition%209.json" in said[0] and "is left in place" in said[0]
    assert coordinator.progress_report() == {"damagedMirrorRecords": 1}
    assert list(coordinator.checkpoint_mirror.read().positions) == [T0]
    assert (tmp_path / "toy" / "checkpoint" / "Partition%209.json").exists()  # never deleted silently


def test_commit_deletes_only_the_applied_startpoint_and_mirrors_the_checkpoint(caplog):
    coordinator, clock = make(poll_ms=0)
    start = coordinator.initial_offset()
    coordinator.startpoints.write(SSP0, StartpointSpecific("7", creation_timestamp=C5))
    coordinator.startpoints.write(SSP1, StartpointSpecific("8", creation_timestamp=C5))
    end = coordinator.latest_offset(start)
    coordinator.startpoints.write(SSP1, StartpointSpecific("9", creation_timestamp=C6), T1)  # newer, meanwhile
    coordinator.commit(end)
    assert coordinator.startpoints.read(SSP0, T0) is None
    assert coordinator.startpoints.read(SSP1, T1).position == "9"  # survives, applies next
    assert coordinator.committed == [1]
    coordinator.settle_writes()
    # positions only: the mirror stamps its own write time, which may be a millisecond after from_pairs's
    assert coordinator.checkpoint_mirror.read().positions == Checkpoint.from_pairs({(T0, SSP0): 1}).positions
    with caplog.at_level(logging.INFO, logger="spark_samza_source.source.job_coordinator"):
        coordinator.commit(end)  # Spark commits again, or the next run's first trigger: the store is not asked again
    assert not [r for r in caplog.records if "startpoint for" in r.getMessage()]


class WriteBehindToy(ToyCoordinator):
    """A system whose mirror write waits for a gate."""

    def commit_batch(self, end):
        checkpoint = Checkpoint.from_pairs({(T0, SSP0): end.batch})
        return lambda: self._write(checkpoint)

    def _write(self, checkpoint):
        self.gate.wait(10)
        self.mirror_checkpoint(checkpoint)


def test_mirror_writes_handed_to_the_write_behind_are_done_before_the_next_plan():
    coordinator, clock = make()
    coordinator.__class__ = WriteBehindToy
    coordinator.gate = threading.Event()
    start = coordinator.initial_offset()
    coordinator.commit(ToyOffset(4))  # returns while the write waits for the gate
    assert coordinator.checkpoint_mirror.read() is None
    threading.Timer(0.2, coordinator.gate.set).start()
    coordinator.latest_offset(start)  # the barrier: waits for the write
    assert coordinator.checkpoint_mirror.read().positions == Checkpoint.from_pairs({(T0, SSP0): 4}).positions


class FailingWriteToy(ToyCoordinator):
    """A system whose write behind fails."""

    def commit_batch(self, end):
        return lambda: (_ for _ in ()).throw(SamzaSourceError("metadata store unreachable"))


def test_a_failed_mirror_write_fails_the_next_plan():
    coordinator, clock = make()
    coordinator.__class__ = FailingWriteToy
    start = coordinator.initial_offset()
    coordinator.commit(ToyOffset(3))  # the commit itself succeeds: its write runs behind
    with pytest.raises(SamzaSourceError, match="metadata store unreachable"):
        coordinator.latest_offset(start)
    assert coordinator.latest_offset(start) is start  # reported once; the query's next call goes on


def test_every_spark_call_holds_the_lease_with_the_offsets_identity():
    coordinator, clock = make()
    start = coordinator.initial_offset()
    coordinator.latest_offset(ToyOffset(5))
    coordinator.partitions(start, ToyOffset(1))
    coordinator.commit(ToyOffset(7))
    held = coordinator.store.get(NAMESPACE, KEY)
    assert {"offset:toy-0", "offset:toy-1", "offset:toy-5", "offset:toy-7"} <= set(held["query"])
    coordinator.lease.release()


class LeaseCheckingToy(ToyCoordinator):
    """A system that looks, when asked for its first offset, whether the job lease is in the store already."""

    def first_offset(self):
        self.lease_held_first = self.store.get(NAMESPACE, KEY) is not None
        return super().first_offset()


def test_a_new_checkpoint_holds_the_lease_before_the_system_plans_its_first_offset():
    # the skeleton takes the lease: no system can forget it
    coordinator, clock = make()
    coordinator.__class__ = LeaseCheckingToy
    assert coordinator.initial_offset() == ToyOffset(0)
    assert coordinator.lease_held_first is True
    coordinator.lease.release()
