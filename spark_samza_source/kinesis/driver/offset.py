"""The samza-kinesis Spark offset: a self-contained, deterministic description of one micro-batch.

The offset of batch ``N`` says where batch ``N`` **starts**: ``partitions(start, end)`` builds the input
partitions from the END offset alone (``planner.tasks_for_batch(end)``); each task records where it stopped, and
planning batch ``N + 1`` turns those recorded ends into the next starts. Batch 0 is never read.

JSON fields (sorted keys, no floats): ``batch``; ``jobModel`` (generation, numTasks, slotsPerTask, system,
stream); ``shards`` (per shard: ``start``, ``status`` readable / blocked / drained, ``endingSequence``, ``slot``,
``task``); ``startpoints`` applied in this batch per (task, slot SSP); ``applied`` (last startpoint creation
timestamp per (task, SSP), carried forward); ``latestTimestampMs``; ``version``.

Built by the pure planner, parsed by the coordinator and the CLI. Design: docs/architecture.md §4 and §8.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeGuard

from ...core.errors import OffsetFormatError
from ...core.jobmodel import JobModel
from ...core.json_text import decode_offset, loads
from ...core.model import SystemStream, SystemStreamPartition, TaskName, TaskSsp, by_task_json, parse_ssp_key
from .. import errors
from ..errors import MapperError
from ..positions import ShardPosition
from .mapper import ShardPartitionMapper, task_index, task_name

KINESIS_OFFSET_FORMAT_VERSION = 2  # 2: drained shards carry ``lastTask``; version 1 offsets are read as before

READABLE = "readable"
BLOCKED = "blocked"
DRAINED = "drained"
STATUSES = (READABLE, BLOCKED, DRAINED)

__all__ = [
    "BLOCKED", "DRAINED", "KINESIS_OFFSET_FORMAT_VERSION", "READABLE", "STATUSES", "AppliedStartpoint",
    "KinesisOffset", "OffsetFormatError", "ShardState", "StreamIdentity",
]


@dataclass(frozen=True)
class StreamIdentity:
    """Which incarnation of a stream name the offset's positions belong to (``DescribeStreamSummary``)."""

    arn: str
    created_ms: int

    def __post_init__(self) -> None:
        if not isinstance(self.arn, str) or not self.arn or len(self.arn) > 2048:
            raise errors.offset_invalid(f"streamIdentity arn must be a non-empty string, got {self.arn!r:.80}")
        if not _is_int(self.created_ms, 0):
            raise errors.offset_invalid(f"streamIdentity createdMs must be an int >= 0, got {self.created_ms!r:.80}")

    def to_json(self) -> dict[str, Any]:
        return {"arn": self.arn, "createdMs": self.created_ms}

    @classmethod
    def from_json(cls, value: Any) -> StreamIdentity:
        value = _obj(value, "streamIdentity")
        if set(value) != {"arn", "createdMs"}:
            raise errors.offset_invalid(f"streamIdentity must have exactly 'arn' and 'createdMs', got {sorted(value)}")
        return cls(value["arn"], value["createdMs"])

    def describe(self) -> str:
        from datetime import UTC, datetime

        created = datetime.fromtimestamp(self.created_ms / 1000, UTC).isoformat(timespec="milliseconds")
        return f"{self.arn} created {created.replace('+00:00', 'Z')}"


@dataclass(frozen=True)
class ShardState:
    """What the batch ending at the offset does with one shard."""

    start: ShardPosition
    status: str
    ending_sequence: str | None = None  # from ListShards, once the shard is closed (the reader drains to it)
    last_task: int | None = None  # drained only: index of the task it was in when drained (lineage of children)

    def __post_init__(self) -> None:
        if not isinstance(self.start, ShardPosition):
            raise errors.offset_invalid(f"a shard's start must be a ShardPosition, got {self.start!r:.80}")
        if self.status not in STATUSES:
            raise errors.offset_invalid(f"shard status must be one of {STATUSES}, got {self.status!r:.80}")
        if (self.status == DRAINED) != self.start.is_shard_end:
            raise errors.offset_invalid(f"a shard is drained exactly when it starts at SHARD_END: {self!r:.200}")
        if self.ending_sequence is not None and not (
            isinstance(self.ending_sequence, str) and self.ending_sequence.isascii() and self.ending_sequence.isdigit()
        ):
            raise errors.offset_invalid(f"endingSequence must be a decimal string, got {self.ending_sequence!r:.80}")
        if self.last_task is not None and not (_is_int(self.last_task, 0) and self.status == DRAINED):
            raise errors.offset_invalid(f"only a drained shard has a lastTask (a task index >= 0): {self!r:.200}")


@dataclass(frozen=True)
class AppliedStartpoint:
    """A startpoint on one (task, slot SSP) applied in the batch ending at the offset."""

    creation_timestamp: int
    positions: Mapping[str, ShardPosition] = field(default_factory=dict)  # shard -> where it starts now

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions", dict(sorted(self.positions.items())))

    def to_json(self) -> dict[str, Any]:
        return {
            "creationTimestamp": self.creation_timestamp,
            "shards": {s: p.to_json() for s, p in self.positions.items()},
        }


@dataclass(frozen=True, eq=False)
class KinesisOffset:
    """One samza-kinesis Spark offset. Treat as immutable (the mapper inside is copied before any change)."""

    batch: int
    stream: str
    mapper: ShardPartitionMapper
    shards: Mapping[str, ShardState]
    generation: int = 1
    system: str = "kinesis"
    startpoints: Mapping[TaskSsp, AppliedStartpoint] = field(default_factory=dict)
    applied: Mapping[TaskSsp, int] = field(default_factory=dict)
    latest_timestamp_ms: int | None = None
    # Unique per query (per checkpoint), made with batch 0 and carried forward: recorded batch ends are keyed by
    # it, so a new checkpoint under an old job.name never reads the ends an earlier query recorded.
    query_id: str | None = None
    stream_identity: StreamIdentity | None = None  # None: an offset of an earlier release (or not known yet)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shards", dict(sorted(self.shards.items())))
        object.__setattr__(self, "startpoints", dict(sorted(self.startpoints.items())))
        object.__setattr__(self, "applied", dict(sorted(self.applied.items())))
        for name in ("batch", "generation"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise errors.offset_invalid(f"offset {name} must be a non-negative int, got {value!r:.80}")
        if self.latest_timestamp_ms is not None and not _is_int(self.latest_timestamp_ms, 0):
            raise errors.offset_invalid(f"latestTimestampMs must be an int >= 0, got {self.latest_timestamp_ms!r:.80}")
        if not self.system or not self.stream or not isinstance(self.system, str) or not isinstance(self.stream, str):
            raise errors.offset_invalid(f"offset needs a non-empty system and stream, got {self.system!r}, "
                                        f"{self.stream!r}")
        for shard in self.mapper.assignments():
            state = self.shards.get(shard)
            if state is None or state.status == DRAINED:
                raise errors.offset_invalid(f"shard {shard} is mapped to a slot but is not a known, undrained shard")
        for shard, state in self.shards.items():
            if state.status != DRAINED and shard not in self.mapper:
                raise errors.offset_invalid(f"shard {shard} ({state.status}) is not mapped to any slot")
            if state.last_task is not None and state.last_task >= self.mapper.num_tasks:
                raise errors.offset_invalid(f"shard {shard}: lastTask Task-{state.last_task} is not a task of this job "
                                            f"model ({self.mapper.num_tasks} tasks)")

    # ---- the job model ---------------------------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return self.mapper.num_tasks

    @property
    def slots_per_task(self) -> int:
        return self.mapper.slots_per_task

    @property
    def task_names(self) -> list[TaskName]:
        return self.mapper.task_names()

    def ssp(self, slot: int) -> SystemStreamPartition:
        return self.mapper.ssp(slot, self.stream, self.system)

    @cached_property
    def job_model(self) -> JobModel:
        """``Task-i`` -> its slot SSPs; the initial partition count is the model's slot count."""
        per = self.mapper.slots_per_task
        tasks = {
            task_name(i): frozenset(SystemStreamPartition(self.system, self.stream, p) for p in range(i * per,
                                                                                                    (i + 1) * per))
            for i in range(self.mapper.num_tasks)
        }
        return JobModel(tasks, {SystemStream(self.system, self.stream): self.mapper.total_slots})

    def owns(self, task: TaskName, ssp: SystemStreamPartition) -> bool:
        """Whether ``ssp`` is one of ``task``'s slots in this job model."""
        return slot_owned(self.mapper, self.system, self.stream, task, ssp)

    # ---- shards ----------------------------------------------------------------------------------------
    def task_of(self, shard: str) -> TaskName | None:
        index = self.mapper.task_of(shard)
        return None if index is None else task_name(index)

    def last_task_of(self, shard: str) -> TaskName | None:
        """The task a drained shard was in when it was drained (``None`` if unknown or not drained)."""
        state = self.shards.get(shard)
        return None if state is None or state.last_task is None else task_name(state.last_task)

    def slot_ssp(self, shard: str) -> SystemStreamPartition | None:
        slot = self.mapper.slot_of(shard)
        return None if slot is None else self.ssp(slot)

    def shards_with(self, status: str) -> list[str]:
        return [s for s, state in self.shards.items() if state.status == status]

    def shards_in_slot(self, task: TaskName, ssp: SystemStreamPartition) -> list[str]:
        """The shards mapped to (task, slot SSP): those a startpoint on that key applies to."""
        if not self.owns(task, ssp):
            return []
        return self.mapper.shards_in(ssp.partition)

    def ssp_positions(self) -> dict[TaskSsp, ShardPosition | dict[str, ShardPosition]]:
        """(task, slot SSP) -> its start position: one position (1:1) or shard -> position (an overloaded slot)."""
        out: dict[TaskSsp, ShardPosition | dict[str, ShardPosition]] = {}
        for slot, members in self.mapper.used_slots().items():
            key = (task_name(self.mapper.task_of_slot(slot)), self.ssp(slot))
            if len(members) == 1:
                out[key] = self.shards[members[0]].start
            else:
                out[key] = {s: self.shards[s].start for s in members}
        return out

    # ---- JSON ------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        slot_of = self.mapper.assignments()
        per = self.mapper.slots_per_task
        shards: dict[str, Any] = {}
        for shard, state in self.shards.items():
            entry: dict[str, Any] = {}
            if state.ending_sequence is not None:
                entry["endingSequence"] = state.ending_sequence
            if state.last_task is not None:
                entry["lastTask"] = f"Task-{state.last_task}"
            slot = slot_of.get(shard)
            if slot is not None:
                entry["slot"] = slot
            entry["start"] = state.start.to_json()
            entry["status"] = state.status
            if slot is not None:
                entry["task"] = f"Task-{slot // per}"
            shards[shard] = entry
        out = {
            "applied": by_task_json(self.applied, int),
            "batch": self.batch,
            "jobModel": {
                "generation": self.generation,
                "numTasks": self.mapper.num_tasks,
                "slotsPerTask": per,
                "stream": self.stream,
                "system": self.system,
            },
            "latestTimestampMs": self.latest_timestamp_ms,
            "queryId": self.query_id,
            "shards": shards,
            "startpoints": by_task_json(self.startpoints, lambda a: a.to_json()),
            "version": KINESIS_OFFSET_FORMAT_VERSION,
        }
        if self.stream_identity is not None:
            out["streamIdentity"] = self.stream_identity.to_json()
        return dict(sorted(out.items()))

    def to_json_str(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KinesisOffset):
            return NotImplemented
        return self.to_json_str() == other.to_json_str()

    def __hash__(self) -> int:
        return hash(self.to_json_str())

    @classmethod
    def from_json(cls, value: Any) -> KinesisOffset:
        """Parse an offset; only :class:`OffsetFormatError` or :class:`FormatVersionError` escape."""
        return decode_offset(cls._from_json, value, source="samza-kinesis")

    @classmethod
    def from_json_str(cls, text: str) -> KinesisOffset:
        return cls.from_json(loads(text, errors.offset_invalid, "offset"))

    @classmethod
    def _from_json(cls, value: Any) -> KinesisOffset:
        if not isinstance(value, dict):
            raise errors.offset_invalid(f"offset must be a JSON object, got {type(value).__name__}")
        version = value.get("version")
        if not _is_int(version, 0):
            raise errors.offset_invalid("offset lacks an integer 'version'")
        if version > KINESIS_OFFSET_FORMAT_VERSION:
            raise errors.offset_version_unknown(version, KINESIS_OFFSET_FORMAT_VERSION)
        unknown = set(value) - {"applied", "batch", "jobModel", "latestTimestampMs", "queryId", "shards",
                                "startpoints", "streamIdentity", "version"}
        if unknown:
            raise errors.offset_invalid(f"unknown offset fields {sorted(unknown)!r:.200}")
        model = _obj(value.get("jobModel"), "jobModel")
        for key in ("generation", "numTasks", "slotsPerTask", "stream", "system"):
            if key not in model:
                raise errors.offset_invalid(f"jobModel lacks {key!r}")
        if not isinstance(model["stream"], str) or not isinstance(model["system"], str):
            raise errors.offset_invalid("jobModel stream and system must be strings")
        mapper = _mapper(model["numTasks"], model["slotsPerTask"])
        per = mapper.slots_per_task
        shards: dict[str, ShardState] = {}
        for shard, entry in _obj(value.get("shards"), "shards").items():
            entry = _obj(entry, f"shard {shard!r:.80}")
            extra = set(entry) - {"endingSequence", "lastTask", "slot", "start", "status", "task"}
            if extra:
                raise errors.offset_invalid(f"shard {shard!r:.80} has unknown fields {sorted(extra)}")
            if "start" not in entry or "status" not in entry:
                raise errors.offset_invalid(f"shard {shard!r:.80} lacks 'start' or 'status'")
            last = entry.get("lastTask")
            if last is not None and task_index(last) is None:
                raise errors.offset_invalid(f"shard {shard!r:.80}: lastTask must be a task name Task-<n>, "
                                            f"got {last!r:.80}")
            shards[shard] = ShardState(ShardPosition.from_json(entry["start"]), entry["status"],
                                       entry.get("endingSequence"), None if last is None else task_index(last))
            if ("slot" in entry) != ("task" in entry):
                raise errors.offset_invalid(f"shard {shard!r:.80}: 'slot' and 'task' go together")
            if "slot" in entry:
                slot = entry["slot"]
                if not _is_int(slot, 0):
                    raise errors.offset_invalid(f"shard {shard!r:.80}: slot must be an int >= 0")
                _assign(mapper, shard, slot)
                if entry["task"] != f"Task-{slot // per}":
                    raise errors.offset_invalid(
                        f"shard {shard!r:.80}: slot {slot} belongs to Task-{slot // per}, not {entry['task']!r:.80}"
                    )
        latest = value.get("latestTimestampMs")
        return cls(
            batch=_int(value.get("batch"), "batch"),
            stream=model["stream"],
            mapper=mapper,
            shards=shards,
            generation=_int(model["generation"], "generation"),
            system=model["system"],
            startpoints=_nested(value.get("startpoints", {}), _applied_startpoint),
            applied=_nested(value.get("applied", {}), lambda v: _int(v, "applied creation timestamp")),
            latest_timestamp_ms=None if latest is None else _int(latest, "latestTimestampMs"),
            query_id=_query_id(value.get("queryId")),
            stream_identity=(None if value.get("streamIdentity") is None
                             else StreamIdentity.from_json(value["streamIdentity"])),
        )


def _mapper(num_tasks: Any, slots_per_task: Any) -> ShardPartitionMapper:
    """The offset's mapper; counts the mapper refuses make the offset damaged (the mapper's own errors are bugs)."""
    try:
        return ShardPartitionMapper(num_tasks, slots_per_task)
    except MapperError as err:
        raise errors.offset_invalid(f"jobModel: {err}") from None


def _assign(mapper: ShardPartitionMapper, shard: str, slot: int) -> None:
    try:
        mapper.assign(shard, slot)
    except MapperError as err:
        raise errors.offset_invalid(f"shard {shard!r:.80}: {err}") from None


def slot_owned(
    mapper: ShardPartitionMapper, system: str, stream: str, task: TaskName, ssp: SystemStreamPartition
) -> bool:
    """Whether ``ssp`` is one of ``task``'s slot SSPs under ``mapper``'s job model."""
    index = task_index(task)
    return (
        index is not None and index < mapper.num_tasks
        and ssp.system == system and ssp.stream == stream
        and ssp.partition < mapper.total_slots and ssp.partition // mapper.slots_per_task == index
    )


def _query_id(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9-]{1,64}", value)):
        return value
    raise errors.offset_invalid(f"queryId must be 1-64 letters, digits or '-', got {value!r:.80}")


def _is_int(value: Any, minimum: int) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _int(value: Any, what: str) -> int:
    if not _is_int(value, 0):
        raise errors.offset_invalid(f"{what} must be an int >= 0, got {value!r:.80}")
    return value


def _obj(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise errors.offset_invalid(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _nested(obj: Any, conv) -> dict[TaskSsp, Any]:
    out: dict[TaskSsp, Any] = {}
    for task, inner in _obj(obj, "task -> {ssp: value}").items():
        name = TaskName.from_json(task)
        for key, item in _obj(inner, f"task {task!r:.80}").items():
            out[(name, parse_ssp_key(key))] = conv(item)
    return out


def _applied_startpoint(value: Any) -> AppliedStartpoint:
    value = _obj(value, "an applied startpoint")
    if set(value) - {"creationTimestamp", "shards"}:
        raise errors.offset_invalid(f"unknown applied startpoint fields in {value!r:.120}")
    positions = {s: ShardPosition.from_json(p) for s, p in _obj(value.get("shards", {}), "shards").items()}
    return AppliedStartpoint(_int(value.get("creationTimestamp"), "creationTimestamp"), positions)
