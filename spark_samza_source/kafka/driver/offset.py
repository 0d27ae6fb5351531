"""The source offset of a partitioned log (Kafka): everything needed to rebuild a batch's input partitions.

Built by the pure planner (``kafka.planner``) from ``latestOffset``, parsed back by the Kafka coordinator and the
CLI. Spark compares offsets as JSON *strings*, so the JSON form is deterministic (sorted keys and lists, no
floats), and one offset is self-contained: ``partitions(start, end)`` rebuilds the same tasks and ranges on replay.

Fields: ``job_model`` (task -> SSPs, initial partition counts); ``positions`` (per (task, SSP) the next offset to
read); ``rebases`` (SSPs whose batch does not start at the previous end: startpoint, new partition, broadcast SSP
in a new task, data-loss skip); ``barriers`` (drain-first barriers in force); ``applied`` (last startpoint
creation timestamp per (task, SSP), so none applies twice); ``topicIds`` (optional: topic -> Kafka topic ID,
so a topic deleted and re-created under the same name is told apart).

Why each field exists: docs/architecture.md §4.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...core.errors import FormatVersionError, OffsetFormatError
from ...core.jobmodel import JobModel
from ...core.json_text import decode_offset, loads
from ...core.model import SystemStreamPartition, TaskName, TaskSsp, by_task_json, parse_ssp_key, ssp_order
from .. import errors

# 3: the job model's task list is left out when the positions spell it out (every task holds an SSP and every
#    (task, SSP) has a position): about half the size for one-partition tasks.
# 2: barriers name every feeding partition (1: one sibling). Versions 1 and 2 are still read.
OFFSET_FORMAT_VERSION = 3
#: decoded offsets kept by canonical JSON text: Spark hands the driver the same few offsets several times per batch
#: (latestOffset's start, partitions' start and end, commit's end), and decoding 1,000 partitions takes ~20 ms
_RECENT_MAX = 16
_recent: OrderedDict[str, KafkaOffset] = OrderedDict()
_recent_lock = threading.Lock()

REBASE_STARTPOINT = "startpoint"
REBASE_NEW_PARTITION = "new-partition"
REBASE_NEW_TASK = "new-task"
REBASE_DATA_LOSS = "data-loss"
REBASE_REASONS = (REBASE_STARTPOINT, REBASE_NEW_PARTITION, REBASE_NEW_TASK, REBASE_DATA_LOSS)


@dataclass(frozen=True)
class Rebase:
    """Where a (task, SSP) starts in the batch that ends at the offset holding this rebase, and why."""

    position: int
    reason: str
    creation_timestamp: int | None = None  # the Startpoint's, for reason "startpoint"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"position": self.position, "reason": self.reason}
        if self.creation_timestamp is not None:
            out["creationTimestamp"] = self.creation_timestamp
        return out


@dataclass(frozen=True)
class Barrier:
    """Drain-first ordering for one SSP after its stream grew to ``grown_to`` partitions.

    The held SSP is read freely below ``hold_at`` (None: no cap, an old partition while the growth settles)
    and past it only once every feeder (a partition whose keys it may now hold) has been read up to its
    target. Targets are None while the growth settles (until ``settle_until``, epoch ms): the plan that ends
    the settle time fixes them, and ``hold_at``, at the high watermarks it sees (the cut).
    """

    grown_to: int
    hold_at: int | None
    feeders: Mapping[SystemStreamPartition, int | None]
    settle_until: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "feeders", dict(sorted(self.feeders.items())))

    @property
    def settling(self) -> bool:
        return self.settle_until is not None

    def cut(self, hold_at: int, targets: Mapping[SystemStreamPartition, int]) -> Barrier:
        """The same barrier with its cut fixed: ``hold_at`` if none yet, feeder targets from ``targets``."""
        held = self.hold_at if self.hold_at is not None else hold_at
        return Barrier(self.grown_to, held, {f: targets[f] for f in self.feeders})

    def to_json(self) -> dict[str, Any]:
        return {
            "feeders": {f.key: t for f, t in self.feeders.items()},
            "grownTo": self.grown_to,
            "holdAt": self.hold_at,
            "settleUntil": self.settle_until,
        }


@dataclass(frozen=True)
class KafkaOffset:
    job_model: JobModel
    positions: Mapping[TaskSsp, int]
    rebases: Mapping[TaskSsp, Rebase] = field(default_factory=dict)
    barriers: Mapping[SystemStreamPartition, tuple[Barrier, ...]] = field(default_factory=dict)
    applied: Mapping[TaskSsp, int] = field(default_factory=dict)
    # topic -> Kafka topic ID seen when this offset was planned (optional: offsets written before topic IDs were
    # recorded have none); tells a topic deleted and re-created under the same name from the one read before
    topic_ids: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        task_keys: dict[TaskName, tuple] = {}

        def order(item: tuple[TaskSsp, Any]) -> tuple:
            # key-based sort: comparing TaskNames pairwise re-splits their names on every comparison; and a task's
            # key is computed once, not once per SSP (10,000 positions of a wide job share 100 tasks)
            (task, ssp), _ = item
            key = task_keys.get(task)
            if key is None:
                key = task_keys[task] = task.sort_key
            return key, ssp_order(ssp)

        for name in ("positions", "rebases", "applied"):
            object.__setattr__(self, name, dict(sorted(getattr(self, name).items(), key=order)))
        object.__setattr__(self, "barriers", dict(sorted(self.barriers.items())))
        object.__setattr__(self, "topic_ids", dict(sorted(self.topic_ids.items())))

    # ---- queries -------------------------------------------------------------------------------------
    def position_of(self, ssp: SystemStreamPartition) -> int | None:
        """The lowest position of ``ssp`` in any task (broadcast SSPs have one per task)."""
        return self._lowest_position_by_ssp.get(ssp)

    @cached_property
    def _lowest_position_by_ssp(self) -> dict[SystemStreamPartition, int]:
        # built once per offset: a grouper change moves every SSP to another task, and a scan of all positions per
        # moved SSP made planning quadratic in the partition count
        lowest: dict[SystemStreamPartition, int] = {}
        for (_, ssp), position in self.positions.items():
            if position < lowest.get(ssp, position + 1):
                lowest[ssp] = position
        return lowest

    def start_of(self, task: TaskName, ssp: SystemStreamPartition, previous: KafkaOffset | None) -> int | None:
        """Where the batch ending at ``self`` starts reading (task, ssp): a rebase, else the previous end."""
        rebase = self.rebases.get((task, ssp))
        if rebase is not None:
            return rebase.position
        if previous is None:
            return None
        if (task, ssp) in previous.positions:
            return previous.positions[(task, ssp)]
        return previous.position_of(ssp)  # the SSP moved between tasks: its progress moves with it

    # ---- JSON ----------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Format 3: sorted keys and lists; the job model's task list left out when the positions spell it out (the
        reader rebuilds it from them). Every other section is written, empty or not, as tools read them."""
        out = {
            "applied": by_task_json(self.applied, int),
            "barriers": {ssp.key: [b.to_json() for b in held] for ssp, held in sorted(self.barriers.items())},
            "jobModel": _job_model_json(self.job_model, self.positions),
            "positions": by_task_json(self.positions, int),
            "rebases": by_task_json(self.rebases, lambda r: r.to_json()),
            "version": OFFSET_FORMAT_VERSION,
        }
        if self.topic_ids:  # optional: written only when known
            out["topicIds"] = dict(self.topic_ids)
        return dict(sorted(out.items()))

    def to_json_str(self) -> str:
        """The canonical JSON text of :meth:`to_json` (computed once: offsets are immutable)."""
        text = self.__dict__.get("_text")
        if text is None:
            text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
            object.__setattr__(self, "_text", text)
        return text

    def canonical_text(self) -> str:
        """The canonical JSON text of the offset as Spark's offset log holds it: the text it was decoded from (an
        offset of an earlier format keeps its own text, so a query restarted after an upgrade is still known by
        it), else its own encoding."""
        return self.__dict__.get("_source_text") or self.to_json_str()

    def remember(self) -> KafkaOffset:
        """Keep this offset for :meth:`from_json` of its own JSON (Spark hands it back as the next start)."""
        _remember(self.to_json_str(), self)
        return self

    @classmethod
    def from_json(cls, value: Any) -> KafkaOffset:
        """Parse an offset; only :class:`OffsetFormatError` or :class:`FormatVersionError` escape. An offset seen
        recently (decoded or remembered) is returned as it is: offsets are immutable."""
        text = _canonical_text(value)
        if text is not None:
            with _recent_lock:
                hit = _recent.get(text)
                if hit is not None:
                    _recent.move_to_end(text)
                    return hit
        offset = decode_offset(cls._from_json, value, source="samza-kafka",
                               keep=(FormatVersionError, OffsetFormatError))
        if text is not None:
            object.__setattr__(offset, "_source_text", text)
            _remember(text, offset)
        return offset

    @classmethod
    def _from_json(cls, value: Any) -> KafkaOffset:
        if not isinstance(value, dict):
            raise errors.offset_invalid(f"offset must be a JSON object, got {type(value).__name__}")
        version = value.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise errors.offset_invalid("offset lacks an integer 'version'")
        if version > OFFSET_FORMAT_VERSION:
            raise errors.offset_version_unknown(version, OFFSET_FORMAT_VERSION)
        job_model = JobModel.from_json(_with_tasks(value["jobModel"], value.get("positions"), version))

        def nested(obj: Any, conv) -> dict[TaskSsp, Any]:
            if not isinstance(obj, dict):
                raise errors.offset_invalid("expected an object of task -> {ssp: value}")
            out: dict[TaskSsp, Any] = {}
            for task_name, inner in obj.items():
                if not isinstance(inner, dict):
                    raise errors.offset_invalid(f"task {task_name!r:.80} must map to an object")
                task = TaskName.from_json(task_name)
                for key, item in inner.items():
                    out[(task, parse_ssp_key(key))] = conv(item)
            return out

        positions = nested(value["positions"], _as_int)
        model_pairs = job_model.task_ssp_pairs
        if model_pairs and not positions:
            # An offset this source wrote always has positions; none would re-read every partition from its start.
            raise errors.offset_invalid(
                f"'positions' is empty while the job model has {len(job_model.tasks)} task(s) reading "
                f"{len(job_model.ssps())} partition(s); the offset was edited or damaged"
            )
        stray = sorted(k for k in positions if k not in model_pairs)
        if stray:
            task, ssp = stray[0]
            raise errors.offset_invalid(
                f"'positions' has {ssp.key} in task {task.name!r}, which the offset's job model does not give that "
                "task; the offset was edited or damaged"
            )
        rebases = nested(value.get("rebases", {}), _rebase_from_json)
        applied = nested(value.get("applied", {}), _as_int)
        barriers_json = value.get("barriers", {})
        if not isinstance(barriers_json, dict):
            raise errors.offset_invalid("'barriers' must be an object")
        barriers = {}
        for key, item in barriers_json.items():
            held: tuple[Barrier, ...]
            if version == 1:  # one sibling per new partition, held from its start
                if not isinstance(item, dict):
                    raise errors.offset_invalid(f"barrier {key!r:.80} must be an object")
                held = (Barrier(0, 0, {parse_ssp_key(item["sibling"]): _as_int(item["drainTo"])}),)
            else:
                if not isinstance(item, list) or not item:
                    raise errors.offset_invalid(f"barriers of {key!r:.80} must be a non-empty list")
                held = tuple(_barrier_from_json(b) for b in item)
            barriers[parse_ssp_key(key)] = held
        topic_ids = value.get("topicIds", {})
        if not isinstance(topic_ids, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v for k, v in topic_ids.items()
        ):
            raise errors.offset_invalid(
                f"'topicIds' must be an object of topic -> topic ID string, got {topic_ids!r:.120}")
        return cls(job_model, positions, rebases, barriers, applied, topic_ids)

    @classmethod
    def from_json_str(cls, text: str) -> KafkaOffset:
        return cls.from_json(loads(text, errors.offset_invalid, "offset"))


def _canonical_text(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


def _remember(text: str, offset: KafkaOffset) -> None:
    with _recent_lock:
        _recent[text] = offset
        _recent.move_to_end(text)
        while len(_recent) > _RECENT_MAX:
            _recent.popitem(last=False)


def _job_model_json(model: JobModel, positions: Mapping[TaskSsp, int]) -> dict[str, Any]:
    """The job model as format 3 writes it: without ``tasks`` when every task holds an SSP and the positions have
    exactly the model's (task, SSP) pairs (then they spell the tasks out), with their count instead."""
    out = model.to_json()
    pairs = model.task_ssp_pairs
    if all(model.tasks.values()) and len(pairs) == len(positions) and pairs == positions.keys():
        del out["tasks"]
        out["taskSsps"] = len(pairs)  # what the positions must hold: an edited or damaged offset fails to read
    return out


def _with_tasks(model_json: Any, positions_json: Any, version: int) -> Any:
    """A format-3 job model without ``tasks``: rebuilt from the positions (task -> its SSP keys)."""
    if version < 3 or not isinstance(model_json, dict) or "tasks" in model_json:
        return model_json
    if not isinstance(positions_json, dict) or not all(isinstance(v, dict) for v in positions_json.values()):
        raise errors.offset_invalid("the job model has no 'tasks' and 'positions' is not an object of task -> "
                                "{ssp: offset} to rebuild them from")
    expected = _as_int(model_json.get("taskSsps"))
    held = sum(len(inner) for inner in positions_json.values())
    if held != expected:
        holds = "is empty" if held == 0 else f"holds {held} (task, SSP) pair(s)"
        raise errors.offset_invalid(f"'positions' {holds} while the job model has {expected} (task, SSP) pair(s); the "
                                "offset was edited or damaged")
    tasks = {task: [parse_ssp_key(key).to_json() for key in inner] for task, inner in positions_json.items()}
    return {**{k: v for k, v in model_json.items() if k != "taskSsps"}, "tasks": tasks}


def _as_int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise errors.offset_invalid(f"expected an integer position, got {value!r:.80}")
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else _as_int(value)


def _barrier_from_json(value: Any) -> Barrier:
    if not isinstance(value, dict) or not isinstance(value.get("feeders"), dict) or not value["feeders"]:
        raise errors.offset_invalid(f"bad barrier {value!r:.120}")
    feeders = {parse_ssp_key(k): _optional_int(v) for k, v in value["feeders"].items()}
    settle_until = _optional_int(value.get("settleUntil"))
    if (settle_until is None) == any(t is None for t in feeders.values()):
        raise errors.offset_invalid(f"bad barrier {value!r:.120}: feeder targets are null exactly while it settles")
    return Barrier(_as_int(value["grownTo"]), _optional_int(value.get("holdAt")), feeders, settle_until)


def _rebase_from_json(value: Any) -> Rebase:
    if not isinstance(value, dict) or value.get("reason") not in REBASE_REASONS:
        raise errors.offset_invalid(f"bad rebase {value!r:.120}")
    ts = value.get("creationTimestamp")
    return Rebase(_as_int(value["position"]), value["reason"], None if ts is None else _as_int(ts))
