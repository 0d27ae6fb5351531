"""The task a streaming samza-kinesis query gave each shard, kept in the metadata store for batch reads.

Why: a backfill (``spark.read`` with the streaming query's ``job.name`` and ``metadata.store``) must put every
record in the task the streaming query put it in, as samza-kafka's batch reads take the stored job model. A new
job model made at planning time would not: its task count is the open-shard count *now* (4 shards split into 8
give 8 tasks where the query kept its 4), and the hash-range cut follows the shards listed now. The query's
offset knows each shard's task (the readable ones' and, for drained ones, the task they were drained from), so
the driver writes that map at commit, when it changed, and a batch read reads it back.

One record per stream, namespace ``shard-tasks``, key the stream name (stored through ``core/large_values.py``:
in chunks behind a pointer when a stream of thousands of shards makes it large)::

    {"format": 1, "stream": "clicks", "streamIdentity": {"arn": ..., "createdMs": ...} | null,
     "numTasks": 4, "batch": 17, "shards": {"shardId-000000000000": "Task-0", ...}}

A record of another incarnation of the stream (deleted and re-created since) is not used: shard ids restart. A
damaged record fails the batch read naming it (the damaged-record rule, docs/guarantees.md): making tasks afresh
instead would silently give the backfill another ``task`` column than the streaming query's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.damage import rule_for_namespace
from ...core.large_values import LargeValues
from ...core.startpoint import truncate_json
from ...core.store import DAMAGE_ERRORS, MetadataStore, is_damage
from ...options.namespaces import SHARD_TASKS
from .. import errors
from .mapper import task_index
from .offset import KinesisOffset, StreamIdentity

__all__ = ["NAMESPACE", "ShardTasks", "ShardTasksMirror"]

NAMESPACE = SHARD_TASKS
FORMAT_VERSION = 1


@dataclass(frozen=True)
class ShardTasks:
    """Shard id -> task name of a streaming query, with its task count and the stream incarnation it read."""

    stream: str
    identity: StreamIdentity | None
    num_tasks: int
    batch: int
    shards: dict[str, str]

    @classmethod
    def of_offset(cls, offset: KinesisOffset) -> ShardTasks:
        shards = {}
        for sid in offset.shards:
            task = offset.task_of(sid) or offset.last_task_of(sid)
            if task is not None:
                shards[sid] = task.name
        return cls(offset.stream, offset.stream_identity, offset.num_tasks, offset.batch, shards)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT_VERSION, "stream": self.stream,
                "streamIdentity": self.identity.to_json() if self.identity else None,
                "numTasks": self.num_tasks, "batch": self.batch, "shards": dict(sorted(self.shards.items()))}

    @classmethod
    def from_json(cls, value: Any, where: str, stream: str | None = None) -> ShardTasks:
        """The record; the kind's error (docs/guarantees.md, the damaged-record rule: fail) for anything a batch
        read cannot trust, since regrouping instead would silently change its ``task`` column."""
        if not isinstance(value, dict):
            raise errors.shard_tasks_invalid(where, f"it is {type(value).__name__}, not a shard-task record",
                                             SHARD_TASKS_REPAIR)
        if isinstance(value.get("format"), int) and not isinstance(value["format"], bool) \
                and value["format"] > FORMAT_VERSION:
            raise errors.shard_tasks_version_unknown(where, value["format"], FORMAT_VERSION)
        problem = _shard_tasks_problem(value, stream)
        if problem is not None:
            raise errors.shard_tasks_invalid(where, problem, SHARD_TASKS_REPAIR)
        identity = StreamIdentity.from_json(value["streamIdentity"]) if value.get("streamIdentity") else None
        return cls(str(value["stream"]), identity, value["numTasks"], int(value["batch"]), dict(value["shards"]))


#: what repairs a damaged shard-task record (the rule's row in docs/guarantees.md)
SHARD_TASKS_REPAIR = rule_for_namespace(NAMESPACE).repair


def _shard_tasks_problem(value: dict[str, Any], stream: str | None) -> str | None:
    """What makes ``value`` not a shard-task record of ``stream``, or None."""
    if value.get("format") != FORMAT_VERSION:
        return f"format {truncate_json(value.get('format'))}, where this release writes {FORMAT_VERSION}"
    num_tasks, shards, batch = value.get("numTasks"), value.get("shards"), value.get("batch")
    if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 1:
        return f"numTasks {truncate_json(num_tasks)} is not a count of tasks"
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 0:
        return f"batch {truncate_json(batch)} is not a batch number"
    if not isinstance(shards, dict):
        return f"shards {truncate_json(shards)} is not a map of shard id to task"
    for sid, task in shards.items():
        index = task_index(task) if isinstance(task, str) else None
        if index is None or index >= num_tasks:
            return f"shard {sid!r:.100} is in task {truncate_json(task)}, not one of its {num_tasks} tasks"
    if not isinstance(value.get("stream"), str) or (stream is not None and value["stream"] != stream):
        return f"it is the record of stream {truncate_json(value.get('stream'))} (copied from another job?)"
    try:
        if value.get("streamIdentity"):
            StreamIdentity.from_json(value["streamIdentity"])
    except (KeyError, TypeError, ValueError):  # OffsetFormatError (the identity) is a ValueError
        return f"streamIdentity {truncate_json(value.get('streamIdentity'))} is not a stream's identity"
    return None


class ShardTasksMirror:
    """Writes the committed offset's shard -> task map when it changed; reads it for batch reads."""

    def __init__(self, store: MetadataStore, stream: str) -> None:
        self._store = store
        self._stream = stream
        self._written: dict[str, Any] | None = None  # the map part this mirror last stored (without the batch)
        self._values = LargeValues(store)

    def write(self, offset: KinesisOffset) -> None:
        record = ShardTasks.of_offset(offset).to_json()
        unchanged = {k: v for k, v in record.items() if k != "batch"}
        if unchanged == self._written:
            return
        self._values.put(NAMESPACE, self._stream, record)
        self._written = unchanged

    def read(self) -> ShardTasks | None:
        """The stored record, None when none was stored; the kind's error when it is damaged (the store's own
        error, for bytes it cannot read, is carried in the message with its location)."""
        where = (f"the shard-task record of stream {self._stream!r} (namespace {NAMESPACE!r}, key "
                 f"{self._stream!r}) in {self._store.uri} (job {self._store.job_name!r})")
        try:
            value = self._values.get(NAMESPACE, self._stream)
        except DAMAGE_ERRORS as exc:
            if not is_damage(exc):
                raise
            raise errors.shard_tasks_invalid(where, str(exc), SHARD_TASKS_REPAIR) from None
        if value is None:
            return None
        return ShardTasks.from_json(value, where, self._stream)
