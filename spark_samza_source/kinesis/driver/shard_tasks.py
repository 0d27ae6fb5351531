"""The task a streaming samza-kinesis query gave each shard, kept in the metadata store for batch reads.

Why: a backfill (``spark.read`` with the streaming query's ``job.name`` and ``metadata.store``) must put every
record in the task the streaming query put it in, as samza-kafka's batch reads take the stored job model. A new
job model made at planning time would not: its task count is the open-shard count *now* (4 shards split into 8
give 8 tasks where the query kept its 4), and the hash-range cut follows the shards listed now. The query's
offset knows each shard's task (the readable ones' and, for drained ones, the task they were drained from), so
the driver writes that map at commit, when it changed, and a batch read reads it back.

One record per stream, namespace ``shard-tasks``, key the stream name::

    {"format": 1, "stream": "clicks", "streamIdentity": {"arn": ..., "createdMs": ...} | null,
     "numTasks": 4, "batch": 17, "shards": {"shardId-000000000000": "Task-0", ...}}

A record of another incarnation of the stream (deleted and re-created since) is not used: shard ids restart.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ...core.store import MetadataStore
from ...options.namespaces import SHARD_TASKS
from .. import errors
from .mapper import task_index
from .offset import KinesisOffset, StreamIdentity

log = logging.getLogger(__name__)

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
    def from_json(cls, value: Any, where: str) -> ShardTasks | None:
        """The record, or None (with a warning) when it is not one a batch read can trust."""
        if not isinstance(value, dict):
            log.warning("%s is not a shard-task record; the batch read makes its own tasks", where)
            return None
        if isinstance(value.get("format"), int) and value["format"] > FORMAT_VERSION:
            raise errors.shard_tasks_version_unknown(where, value["format"], FORMAT_VERSION)
        try:
            shards = value["shards"]
            num_tasks = value["numTasks"]
            ok = (value.get("format") == FORMAT_VERSION and isinstance(num_tasks, int) and num_tasks >= 1
                  and isinstance(shards, dict)
                  and all(isinstance(s, str) and (i := task_index(t)) is not None and i < num_tasks
                          for s, t in shards.items()))
            identity = StreamIdentity.from_json(value["streamIdentity"]) if value.get("streamIdentity") else None
            if ok:
                return cls(str(value["stream"]), identity, num_tasks, int(value["batch"]), dict(shards))
        except (KeyError, TypeError, ValueError):  # OffsetFormatError (the identity) is a ValueError
            pass
        log.warning("%s is malformed; the batch read makes its own tasks", where)
        return None


class ShardTasksMirror:
    """Writes the committed offset's shard -> task map when it changed; reads it for batch reads."""

    def __init__(self, store: MetadataStore, stream: str) -> None:
        self._store = store
        self._stream = stream
        self._written: dict[str, Any] | None = None  # the map part this mirror last stored (without the batch)

    def write(self, offset: KinesisOffset) -> None:
        record = ShardTasks.of_offset(offset).to_json()
        unchanged = {k: v for k, v in record.items() if k != "batch"}
        if unchanged == self._written:
            return
        self._store.put(NAMESPACE, self._stream, record)
        self._written = unchanged

    def read(self) -> ShardTasks | None:
        value = self._store.get(NAMESPACE, self._stream)
        if value is None:
            return None
        return ShardTasks.from_json(value, f"the shard-task record of stream {self._stream!r} in "
                                           f"{self._store.uri} (job {self._store.job_name!r})")
