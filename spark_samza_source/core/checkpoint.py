"""Checkpoints: the committed position of every (task, SSP), mirrored to the metadata store for tools.

Written by both coordinators at ``commit``; read by the CLI (``checkpoint show``), ``lag`` and the KCL lease-table
mirror. The Spark offset log stays the source of truth; this mirror lets operators see where each task stands
without parsing Spark's checkpoint directory (docs/architecture.md §9). Positions are opaque JSON (a Kafka offset,
a Kinesis position, or a per-shard map for an overloaded slot).

Layout: namespace ``checkpoint``, one key per task (the task name), through ``core/large_values.py`` (a task of
thousands of SSPs is stored in chunks behind a pointer, one version at a time)::

    "Partition 0" -> {"batchId": 12, "positions": [{"partition": 0, "position": 42, "stream": "orders",
                      "system": "kafka"}], "task": "Partition 0", "timestamp": 1700000000000, "version": 1}

A newer format version raises :class:`FormatVersionError`.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..options.namespaces import CHECKPOINTS
from . import errors
from .damage import rule_for_namespace
from .errors import SamzaSourceError
from .json_text import loads
from .large_values import LargeValues
from .model import SystemStreamPartition, TaskName, ssp_order
from .startpoint import JAVA_LONG_MAX, current_time_ms, truncate_json
from .store import DamagedRecord, MetadataStore

__all__ = ["CHECKPOINT_FORMAT_VERSION", "NAMESPACE", "Checkpoint", "CheckpointMirror", "parse_mirror_record"]

CHECKPOINT_FORMAT_VERSION = 1
#: The metadata-store namespace of the checkpoint mirror.
NAMESPACE = CHECKPOINTS

log = logging.getLogger(__name__)

_MAX_DEPTH = 32


def _detached(value: Any) -> Any:
    """``value`` detached from the caller's objects: a JSON copy of a nested dict or list; an int or a string as
    it is (immutable: a Kafka commit holds 10,000 of them, and a JSON round trip each took ~0.1 s)."""
    if type(value) in (int, str):
        return value
    return json.loads(json.dumps(value))


def _check_json_value(value: Any, where: str, depth: int = 0) -> None:
    """Positions must survive a JSON round trip unchanged: JSON types, string keys, finite numbers."""
    if depth > _MAX_DEPTH:
        raise errors.checkpoint_invalid(f"{where}: position nests deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise errors.checkpoint_invalid(f"{where}: position contains a non-finite number {value!r}")
        return
    if isinstance(value, list):
        for item in value:
            _check_json_value(item, where, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise errors.checkpoint_invalid(f"{where}: position map keys must be strings, got {key!r:.50}")
            _check_json_value(item, where, depth + 1)
        return
    raise errors.checkpoint_invalid(f"{where}: position must be a JSON value, got {type(value).__name__} {value!r:.80}")


def _check_int(value: Any, what: str, *, optional: bool = False) -> int | None:
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= JAVA_LONG_MAX:
        raise errors.checkpoint_invalid(f"checkpoint {what} must be a non-negative integer, got {truncate_json(value)}")
    return value


def _check_version(value: Any, where: str) -> None:
    version = value.get("version") if isinstance(value, dict) else None
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise errors.checkpoint_invalid(f"{where}: lacks a positive integer 'version': {truncate_json(value)}")
    if version > CHECKPOINT_FORMAT_VERSION:
        raise errors.format_version_unknown(
            f"{where}: checkpoint format version {version} is newer than this release understands "
            f"({CHECKPOINT_FORMAT_VERSION}); upgrade spark-samza-source"
        )


@dataclass(frozen=True)
class Checkpoint:
    """task -> SSP -> position, plus the Spark batch it came from (when known) and when it was committed.

    ``batch_id`` is the Spark offset-log version (micro-batch id) of the committed offset, or None when the
    committer does not know it (PySpark's ``commit(end)`` receives only the offset). ``timestamp_ms`` is epoch
    milliseconds of the commit. Containers are copied and sorted on construction, so equality and JSON are
    deterministic and later changes to the caller's dicts do not leak in.
    """

    positions: Mapping[TaskName, Mapping[SystemStreamPartition, Any]]
    batch_id: int | None = None
    timestamp_ms: int = field(default_factory=current_time_ms)

    __hash__ = None  # type: ignore[assignment]  # positions may hold dicts

    def __post_init__(self) -> None:
        if not isinstance(self.positions, Mapping):
            raise errors.checkpoint_invalid(f"checkpoint positions must be a mapping, got {self.positions!r:.80}")
        tasks: dict[TaskName, dict[SystemStreamPartition, Any]] = {}
        for task, ssps in self.positions.items():
            try:
                name = task if isinstance(task, TaskName) else TaskName(task)
            except SamzaSourceError as err:
                raise errors.checkpoint_invalid(f"checkpoint task: {err.detail}") from None
            if not isinstance(ssps, Mapping):
                raise errors.checkpoint_invalid(
                    f"checkpoint task {name}: positions must be a mapping of SSP -> position")
            for ssp, position in ssps.items():
                if not isinstance(ssp, SystemStreamPartition):
                    raise errors.checkpoint_invalid(
                        f"checkpoint task {name}: {ssp!r:.80} is not a SystemStreamPartition")
                _check_json_value(position, f"checkpoint task {name}, {ssp}")
            # a JSON copy detaches nested dicts/lists from the caller's objects
            tasks[name] = {ssp: _detached(ssps[ssp]) for ssp in sorted(ssps, key=ssp_order)}
        object.__setattr__(self, "positions", dict(sorted(tasks.items())))
        _check_int(self.batch_id, "batchId", optional=True)
        _check_int(self.timestamp_ms, "timestamp")

    @classmethod
    def from_pairs(
        cls,
        positions: Mapping[tuple[TaskName, SystemStreamPartition], Any],
        batch_id: int | None = None,
        timestamp_ms: int | None = None,
    ) -> Checkpoint:
        """Build from a (task, SSP) -> position mapping, the shape of ``KafkaOffset.positions``."""
        nested: dict[TaskName, dict[SystemStreamPartition, Any]] = {}
        for (task, ssp), position in positions.items():
            nested.setdefault(task, {})[ssp] = position
        if timestamp_ms is None:
            return cls(nested, batch_id)
        return cls(nested, batch_id, timestamp_ms)

    def position(self, task: TaskName | str, ssp: SystemStreamPartition) -> Any:
        """The position of ``ssp`` in ``task``, or None when the checkpoint has none."""
        name = task if isinstance(task, TaskName) else TaskName(task)
        return self.positions.get(name, {}).get(ssp)

    # ---- JSON ----------------------------------------------------------------------------------------
    def _header(self) -> dict[str, Any]:
        return {"batchId": self.batch_id, "timestamp": self.timestamp_ms, "version": CHECKPOINT_FORMAT_VERSION}

    def to_json(self) -> dict[str, Any]:
        """The whole checkpoint as one JSON object (sorted, deterministic)."""
        return {**self._header(), "tasks": {t.name: _positions_json(p) for t, p in self.positions.items()}}

    def to_json_str(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, value: Any) -> Checkpoint:
        """Parse :meth:`to_json`; invalid input raises :class:`CheckpointFormatError` or FormatVersionError."""
        if not isinstance(value, dict):
            raise errors.checkpoint_invalid(f"a checkpoint must be a JSON object, got {truncate_json(value)}")
        _check_version(value, "checkpoint")
        _no_extra(value, {"batchId", "tasks", "timestamp", "version"}, "checkpoint")
        tasks = value.get("tasks")
        if not isinstance(tasks, dict):
            raise errors.checkpoint_invalid(f"checkpoint lacks a 'tasks' object: {truncate_json(value)}")
        positions = {
            name: _positions_from_json(items, f"checkpoint task {name!r:.100}") for name, items in tasks.items()
        }
        return cls(positions, *_header_from_json(value))

    @classmethod
    def from_json_str(cls, text: str | bytes) -> Checkpoint:
        return cls.from_json(loads(text, errors.checkpoint_invalid, "checkpoint"))


def _no_extra(value: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(value) - allowed)
    if extra:
        raise errors.checkpoint_invalid(f"{where}: unknown properties {extra!r:.200}: {truncate_json(value)}")


def _header_from_json(value: dict) -> tuple[int | None, int]:
    if "timestamp" not in value:
        raise errors.checkpoint_invalid(f"checkpoint lacks 'timestamp': {truncate_json(value)}")
    batch_id = _check_int(value.get("batchId"), "batchId", optional=True)
    timestamp = _check_int(value["timestamp"], "timestamp")
    assert timestamp is not None
    return batch_id, timestamp


def _positions_json(positions: Mapping[SystemStreamPartition, Any]) -> list[dict[str, Any]]:
    return [{**ssp.to_json(), "position": position} for ssp, position in positions.items()]


def _positions_from_json(items: Any, where: str) -> dict[SystemStreamPartition, Any]:
    if not isinstance(items, list):
        raise errors.checkpoint_invalid(f"{where}: positions must be a list, got {truncate_json(items)}")
    out: dict[SystemStreamPartition, Any] = {}
    for item in items:
        if not isinstance(item, dict) or "position" not in item:
            raise errors.checkpoint_invalid(
                f"{where}: expected {{system, stream, partition, position}}, got {truncate_json(item)}"
            )
        _no_extra(item, {"system", "stream", "partition", "position"}, where)
        try:
            ssp = SystemStreamPartition.from_json({k: v for k, v in item.items() if k != "position"})
        except (SamzaSourceError, TypeError) as err:
            raise errors.checkpoint_invalid(f"{where}: {_detail(err)}") from None
        if ssp in out:
            raise errors.checkpoint_invalid(f"{where}: {ssp} appears twice")
        _check_json_value(item["position"], f"{where}, {ssp}")
        out[ssp] = item["position"]
    return out


def _detail(err: Exception) -> str:
    return err.detail if isinstance(err, SamzaSourceError) else str(err)


#: what repairs a damaged mirror record (the rule's row in docs/guarantees.md)
MIRROR_REPAIR = rule_for_namespace(NAMESPACE).repair


def parse_mirror_record(key: str, value: Any, where: str) -> tuple[int | None, int, dict[SystemStreamPartition, Any]]:
    """(batch id, timestamp, positions) of one task's mirror record; the kind's error when it is not one."""
    _check_version(value, where)
    _no_extra(value, {"batchId", "positions", "task", "timestamp", "version"}, where)
    if value.get("task") != key:
        raise errors.checkpoint_invalid(f"{where}: its 'task' is {truncate_json(value.get('task'))}")
    batch_id, timestamp = _header_from_json(value)
    return batch_id, timestamp, _positions_from_json(value.get("positions"), where)


class CheckpointMirror:
    """Writes and reads the checkpoint mirror through a ``MetadataStore`` (one key per task)."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        #: location -> what is wrong, for every damaged record this mirror has met (said once each in a WARN;
        #: ``damagedMirrorRecords`` in the query's progress)
        self.damaged: dict[str, str] = {}
        #: the damaged records the last :meth:`read` left out
        self.skipped: list[DamagedRecord] = []
        self._written: dict[str, list] = {}  # task -> positions JSON this mirror last stored
        #: task -> its record as stored (a pointer when chunked), known since the first write's listing, so a
        #: replaced version's chunks are deleted without a read per task
        self._stored: dict[str, Any] = {}
        self._values = LargeValues(store)
        self._task_set: frozenset[str] | None = None

    def write(self, checkpoint: Checkpoint) -> None:
        """Store every task's record, then remove records of tasks the checkpoint no longer has.

        Not atomic across tasks: a crash part-way leaves some tasks at the previous checkpoint, which
        :meth:`read` reports conservatively (the oldest batch id among the tasks). A mirror instance skips
        tasks whose positions did not change since it last wrote them (a commit on every batch with 1,000 mostly
        idle tasks would otherwise rewrite 1,000 records): their record keeps its older batch id, with the
        same, still exact positions.
        """
        current = frozenset(t.name for t in checkpoint.positions)
        if self._task_set is None:  # the first write of this run: say what it is about to write over
            listed = self._store.scan(NAMESPACE)
            self._stored = dict(listed.values)
            self._warn_damaged([d for d in listed.damaged if d.key in current], "is written again by this commit")
        header = checkpoint._header()
        for task, positions in checkpoint.positions.items():
            as_json = _positions_json(positions)
            if self._written.get(task.name) == as_json:
                continue
            record = {**header, "positions": as_json, "task": task.name}
            self._stored[task.name] = self._values.put(NAMESPACE, task.name, record,
                                                       replaced=self._stored.get(task.name))
            self._written[task.name] = as_json
        if current == self._task_set:
            return
        found = self._store.scan(NAMESPACE)
        for key, value in found.values.items():
            if key not in current:
                self._values.delete_if_equal(NAMESPACE, key, value)
                self._written.pop(key, None)
                self._stored.pop(key, None)
        self._warn_damaged([d for d in found.damaged if d.key not in current], "is left in place")
        self._task_set = current

    def _warn_damaged(self, damaged: list[DamagedRecord], fate: str) -> None:
        """One WARN per damaged record, once per mirror: the rule's verdict for the mirror is skip (a copy for
        tools; the query's own checkpoint is Spark's), and nothing damaged is written over without a word."""
        for bad in damaged:
            if bad.location not in self.damaged:
                self.damaged[bad.location] = str(bad.error)
                log.warning("damaged checkpoint mirror record (kind: checkpoint mirror) at %s %s: %s. Repair: %s",
                            bad.location, fate, bad.error, MIRROR_REPAIR)

    def read(self) -> Checkpoint | None:
        """The mirrored checkpoint, or None when nothing was mirrored yet.

        If tasks disagree (a write interrupted part-way), ``batch_id`` and ``timestamp_ms`` are the oldest among
        the tasks (None if any task lacks a batch id): every task's position is at least that recent. A damaged
        record (a newer release's too) is left out with one WARN and listed in :attr:`skipped` (the damaged-record
        rule: skip), so it never hides the other tasks' records.
        """
        found, _ = self._values.scan(NAMESPACE)
        self.skipped = list(found.damaged)
        positions: dict[TaskName, dict[SystemStreamPartition, Any]] = {}
        batch_ids: list[int | None] = []
        timestamps: list[int] = []
        for key, value in found.values.items():
            where = f"checkpoint mirror in {self._store.uri} (job {self._store.job_name!r}) key {key!r:.200}"
            try:
                batch_id, timestamp, task_positions = parse_mirror_record(key, value, where)
            except SamzaSourceError as err:
                message = err.detail if err.detail.startswith(where) else f"{where}: {err.detail}"
                self.skipped.append(DamagedRecord(NAMESPACE, key, f"key {key!r:.200}",
                                                  errors.metadata_value_invalid(message)))
                continue
            positions[TaskName(key)] = task_positions
            batch_ids.append(batch_id)
            timestamps.append(timestamp)
        self._warn_damaged(self.skipped, "is left out")
        if not positions:
            return None
        batch = None if any(b is None for b in batch_ids) else min(b for b in batch_ids if b is not None)
        return Checkpoint(positions, batch, min(timestamps))
