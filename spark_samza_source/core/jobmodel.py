"""The job model: which task holds which SSPs, and each stream's partition count at the first model.

A job model is plain, immutable data. It is written into every Spark offset (so a replay rebuilds exactly the
same input partitions) and mirrored into the metadata store for tools. Broadcast SSPs appear in every task,
so an SSP may belong to several tasks; every other SSP belongs to exactly one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from . import errors
from .json_text import loads
from .model import SystemStream, SystemStreamPartition, TaskName, ssp_order

JOB_MODEL_FORMAT_VERSION = 1


@dataclass(frozen=True)
class JobModel:
    """task -> SSPs, plus the partition count each stream had when the first job model was computed."""

    tasks: Mapping[TaskName, frozenset[SystemStreamPartition]]
    initial_partition_counts: Mapping[SystemStream, int] = field(default_factory=dict)
    broadcast: frozenset[SystemStreamPartition] = frozenset()

    def __post_init__(self) -> None:
        # Normalise into sorted, immutable containers so equality and JSON are deterministic.
        tasks = {t if isinstance(t, TaskName) else TaskName(t): s if isinstance(s, frozenset) else frozenset(s)
                 for t, s in self.tasks.items()}
        # sort with a key computed once per task: comparing TaskNames pairwise re-splits their names
        object.__setattr__(self, "tasks", dict(sorted(tasks.items(), key=lambda item: item[0].sort_key)))
        object.__setattr__(self, "initial_partition_counts", dict(sorted(self.initial_partition_counts.items())))
        object.__setattr__(self, "broadcast", frozenset(self.broadcast))

    def __hash__(self) -> int:
        return hash(self.to_json_str())

    def without_streams(self, streams: Iterable[str]) -> JobModel:
        """This model with every SSP of the named streams removed (tasks left with no SSP are removed too):
        the stream leaves the job, every other stream keeps its tasks."""
        gone = set(streams)
        tasks = {t: frozenset(s for s in ssps if s.stream not in gone) for t, ssps in self.tasks.items()}
        return JobModel(
            {t: ssps for t, ssps in tasks.items() if ssps},
            {s: n for s, n in self.initial_partition_counts.items() if s.stream not in gone},
            frozenset(s for s in self.broadcast if s.stream not in gone),
        )

    # ---- queries -------------------------------------------------------------------------------------
    @property
    def task_names(self) -> list[TaskName]:
        return list(self.tasks)

    def ssps(self) -> frozenset[SystemStreamPartition]:
        """Every SSP of the model, broadcast ones included."""
        out: set[SystemStreamPartition] = set()
        for ssps in self.tasks.values():
            out |= ssps
        return frozenset(out)

    def tasks_for(self, ssp: SystemStreamPartition) -> list[TaskName]:
        """The tasks holding ``ssp`` (several for a broadcast SSP), sorted."""
        return [t for t, ssps in self.tasks.items() if ssp in ssps]

    def ssp_to_task(self) -> dict[SystemStreamPartition, TaskName]:
        """The mapping of every non-broadcast SSP to its single task (what the fixed-task groupers consume)."""
        out: dict[SystemStreamPartition, TaskName] = {}
        for task, ssps in self.tasks.items():
            for ssp in ssps:
                if ssp not in self.broadcast:
                    out[ssp] = task
        return out

    def partition_counts(self) -> dict[SystemStream, int]:
        """Current partition count per stream, counted from the SSPs in the model (broadcast excluded)."""
        return dict(self._partition_counts)

    @cached_property
    def _partition_counts(self) -> dict[SystemStream, int]:
        # counted once per model: a plan asks several times, and each count walks every SSP (10,000 for a wide job)
        counts: dict[SystemStream, int] = {}
        for ssp in self.ssp_to_task():
            counts[ssp.system_stream] = counts.get(ssp.system_stream, 0) + 1
        return dict(sorted(counts.items()))

    @cached_property
    def task_ssp_pairs(self) -> frozenset[tuple[TaskName, SystemStreamPartition]]:
        """Every (task, SSP) of the model (once per model: an offset's JSON compares them with its positions)."""
        return frozenset((task, ssp) for task, ssps in self.tasks.items() for ssp in ssps)

    # ---- JSON ----------------------------------------------------------------------------------------
    @cached_property
    def _tasks_json(self) -> dict[str, tuple[dict[str, Any], ...]]:
        # once per model: the driver writes the same job model into every batch's offset; the SSP objects' JSON
        # dicts are shared by every to_json() of this model (read, never changed, by its callers)
        return {t.name: tuple(s.to_json() for s in sorted(ssps, key=ssp_order)) for t, ssps in self.tasks.items()}

    def to_json(self) -> dict[str, Any]:
        """Deterministic JSON (sorted keys and lists), as Spark compares offsets as strings."""
        return {
            "broadcast": [s.to_json() for s in sorted(self.broadcast)],
            "initialPartitionCounts": {str(k): v for k, v in sorted(self.initial_partition_counts.items())},
            "tasks": {name: list(ssps) for name, ssps in self._tasks_json.items()},
            "version": JOB_MODEL_FORMAT_VERSION,
        }

    def to_json_str(self) -> str:
        import json

        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, value: Any) -> JobModel:
        if not isinstance(value, dict):
            raise errors.job_model_invalid(f"job model JSON must be an object, got {type(value).__name__}")
        version = value.get("version", JOB_MODEL_FORMAT_VERSION)
        if not isinstance(version, int) or version > JOB_MODEL_FORMAT_VERSION:
            raise errors.format_version_unknown(
                f"job model format version {version!r} is newer than this release understands "
                f"({JOB_MODEL_FORMAT_VERSION}); upgrade spark-samza-source"
            )
        tasks_json = value.get("tasks")
        if not isinstance(tasks_json, dict):
            raise errors.job_model_invalid("job model JSON lacks a 'tasks' object")
        counts_json = value.get("initialPartitionCounts", {})
        broadcast_json = value.get("broadcast", [])
        if not isinstance(counts_json, dict) or not isinstance(broadcast_json, list):
            raise errors.job_model_invalid(
                "job model JSON: 'initialPartitionCounts' must be an object, 'broadcast' a list")
        tasks: dict[TaskName, frozenset[SystemStreamPartition]] = {}
        for name, ssps in tasks_json.items():
            if not isinstance(ssps, list):
                raise errors.job_model_invalid(f"job model JSON: task {name!r} must map to a list of SSPs")
            tasks[TaskName.from_json(name)] = frozenset(SystemStreamPartition.from_json(s) for s in ssps)
        counts: dict[SystemStream, int] = {}
        for stream_key, count in counts_json.items():
            system, sep, stream = str(stream_key).partition(".")
            if not sep or not isinstance(count, int) or isinstance(count, bool) or count <= 0:
                raise errors.job_model_invalid(
                    f"job model JSON: bad initial partition count {stream_key!r}: {count!r}; "
                    "expected 'system.stream': positive int"
                )
            counts[SystemStream(system, stream)] = count
        return cls(tasks, counts, frozenset(SystemStreamPartition.from_json(s) for s in broadcast_json))

    @classmethod
    def from_json_str(cls, text: str) -> JobModel:
        return cls.from_json(loads(text, errors.job_model_invalid, "job model"))

    # ---- diff ----------------------------------------------------------------------------------------
    def diff(self, previous: JobModel | None) -> JobModelDiff:
        """What changed since ``previous``: for logs and ``samza-source jobmodel show``."""
        before = previous.ssp_to_task() if previous else {}
        after = self.ssp_to_task()
        new = {s: t for s, t in after.items() if s not in before}
        removed = {s: t for s, t in before.items() if s not in after}
        moved = {s: (before[s], t) for s, t in after.items() if s in before and before[s] != t}
        prev_tasks = set(previous.tasks) if previous else set()
        return JobModelDiff(
            new_ssps=dict(sorted(new.items())),
            removed_ssps=dict(sorted(removed.items())),
            moved_ssps=dict(sorted(moved.items())),
            new_tasks=sorted(set(self.tasks) - prev_tasks),
            removed_tasks=sorted(prev_tasks - set(self.tasks)),
        )


@dataclass(frozen=True)
class JobModelDiff:
    new_ssps: dict[SystemStreamPartition, TaskName]
    removed_ssps: dict[SystemStreamPartition, TaskName]
    moved_ssps: dict[SystemStreamPartition, tuple[TaskName, TaskName]]
    new_tasks: list[TaskName]
    removed_tasks: list[TaskName]

    @property
    def empty(self) -> bool:
        return not (self.new_ssps or self.removed_ssps or self.moved_ssps or self.new_tasks or self.removed_tasks)

    def describe(self) -> list[str]:
        """Human-readable lines, one per change."""
        lines = [f"new task {t}" for t in self.new_tasks]
        lines += [f"removed task {t}" for t in self.removed_tasks]
        lines += [f"{s} -> {t} (new)" for s, t in self.new_ssps.items()]
        lines += [f"{s} moved {a} -> {b}" for s, (a, b) in self.moved_ssps.items()]
        lines += [f"{s} removed (was in {t})" for s, t in self.removed_ssps.items()]
        return lines
