"""How far a samza-kafka or samza-kinesis job is behind: committed positions against the streams' latest.

The committed positions are the checkpoint mirror (``core.checkpoint.CheckpointMirror``, namespace
``checkpoint``), written by the driver when Spark commits a batch. Spark commits a batch one batch late (when
it plans the next one) and never commits the last batch of a run, so the mirror may trail the query by one
batch: the lag reported here is an upper bound on what the query still has to read, exactly what a Kafka
consumer-group lag tool reports for the ``samza-<job>`` group that the Kafka source mirrors to.

Kafka (:func:`kafka_lag`)
    per partition: ``behind = high watermark - committed offset`` (never below 0). A broadcast partition is
    held by every task, each with its own position; its committed offset is the lowest of them (the most
    behind task), as in Samza. The high watermark is the last stable offset for ``isolation.level=
    read_committed`` clients, as ``KafkaAdmin.watermarks`` returns it.

Kinesis (:func:`kinesis_lag`)
    Kinesis exposes no "latest offset" per shard; what it offers is ``GetRecords`` and, in each response,
    ``MillisBehindLatest`` (how far the iterator is behind the tip of the shard in time). For every shard the
    committed position is read from with ``GetRecords`` and the **Kinesis records** up to the tip are counted
    (a KPL aggregate counts as one record; an aggregate the query stopped inside counts as one). Counting stops
    after ``max_records`` (the result is then a lower bound, ``capped``); calls are spaced at 5 per second per
    shard, Kinesis' read limit, so a large backlog costs time and read capacity: the query's own readers share
    that limit. ``latest`` is the sequence number of the newest record found; ``millisBehindLatest`` is what
    Kinesis answered to the first call from the committed position. A drained (``SHARD_END``) shard is 0 behind.
    The mirror stores a slot's position without its shard id when the slot holds one shard; the Spark offset
    of the same batch (``--checkpoint``) maps slots to shards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.checkpoint import Checkpoint
from ..core.jobmodel import JobModel
from ..core.model import SystemStreamPartition, TaskName
from ..core.startpoint import current_time_ms
from . import errors

__all__ = [
    "LagReport",
    "LagRow",
    "ShardBacklog",
    "kafka_lag",
    "kinesis_lag",
    "measure_shard_backlog",
    "slot_mapping_matches",
]

#: Kinesis allows 5 GetRecords calls per second per shard
KINESIS_READS_PER_SECOND = 5
#: one GetRecords call returns at most 10,000 records
_GET_RECORDS_LIMIT = 10_000


@dataclass(frozen=True)
class LagRow:
    """One partition (Kafka) or shard (Kinesis)."""

    ssp: SystemStreamPartition
    tasks: tuple[str, ...]
    committed: Any  # Kafka: the offset; Kinesis: the position's text (``after 4960...``, ``TRIM_HORIZON``)
    latest: Any  # Kafka: the high watermark; Kinesis: the newest record's sequence number
    behind: int | None  # None: could not be measured (see ``note``)
    shard: str | None = None
    millis_behind_latest: int | None = None
    capped: bool = False  # ``behind`` is a lower bound: counting stopped at the limit
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "behind": self.behind,
            "committed": self.committed,
            "latest": self.latest,
            "partition": self.ssp.partition,
            "ssp": self.ssp.key,
            "stream": self.ssp.stream,
            "system": self.ssp.system,
            "tasks": list(self.tasks),
        }
        if self.shard is not None or self.ssp.system == "kinesis":
            out["shard"] = self.shard
            out["millisBehindLatest"] = self.millis_behind_latest
            out["capped"] = self.capped
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class LagReport:
    system: str
    rows: list[LagRow]
    batch_id: int | None = None  # the committed batch, when the mirror knows it (Kinesis)
    committed_at_ms: int | None = None
    measured_at_ms: int = field(default_factory=current_time_ms)

    @property
    def complete(self) -> bool:
        """Whether every row could be measured."""
        return all(r.behind is not None for r in self.rows)

    def totals(self) -> dict[str, Any]:
        measured = [(r, r.behind) for r in self.rows if r.behind is not None]
        behind = [b for _, b in measured]
        worst = max(measured, key=lambda row_behind: row_behind[1], default=(None, 0))[0]
        out: dict[str, Any] = {
            "behind": sum(behind),
            "maxBehind": max(behind) if behind else None,
            "maxBehindAt": (worst.shard or worst.ssp.key) if worst is not None and worst.behind else None,
            "measured": len(measured),
            "rows": len(self.rows),
        }
        if self.system == "kinesis":
            out["capped"] = any(r.capped for r in self.rows)
            millis = [r.millis_behind_latest for r in self.rows if r.millis_behind_latest is not None]
            out["maxMillisBehindLatest"] = max(millis) if millis else None
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "batchId": self.batch_id,
            "committedAt": self.committed_at_ms,
            "complete": self.complete,
            "measuredAt": self.measured_at_ms,
            "rows": [r.to_json() for r in self.rows],
            "system": self.system,
            "totals": self.totals(),
        }


# ---- Kafka ----------------------------------------------------------------------------------------------------


def committed_by_ssp(checkpoint: Checkpoint, system: str) -> dict[SystemStreamPartition, dict[TaskName, Any]]:
    """SSP -> task -> committed position, for the SSPs of ``system``."""
    out: dict[SystemStreamPartition, dict[TaskName, Any]] = {}
    for task, positions in checkpoint.positions.items():
        for ssp, position in positions.items():
            if ssp.system == system:
                out.setdefault(ssp, {})[task] = position
    return dict(sorted(out.items()))


def kafka_lag(
    checkpoint: Checkpoint,
    watermarks: Mapping[tuple[str, int], tuple[int, int]],
    job_model: JobModel | None = None,
) -> LagReport:
    """Per partition: high watermark minus the committed offset (lowest across tasks). Pure.

    ``watermarks`` maps (topic, partition) to (low, high), as ``KafkaAdmin.watermarks`` returns them; a
    partition missing from it (topic deleted) gets ``behind = None`` and a note. Partitions of ``job_model``
    (the job's current one) without a committed position yet, typically those a topic just grew by, are
    counted from their log start, where the query starts them.
    """
    rows = []
    committed_ssps = committed_by_ssp(checkpoint, "kafka")
    if job_model is not None:
        for ssp in sorted(job_model.ssps()):
            if ssp.system != "kafka" or ssp in committed_ssps:
                continue
            tasks = tuple(t.name for t in job_model.tasks_for(ssp))
            marks = watermarks.get((ssp.stream, ssp.partition))
            if marks is None:
                rows.append(LagRow(ssp, tasks, None, None, None, note="partition not found on the cluster"))
            else:
                rows.append(LagRow(ssp, tasks, None, marks[1], max(0, marks[1] - marks[0]),
                                   note="nothing committed yet: counted from the log start"))
    for ssp, per_task in committed_by_ssp(checkpoint, "kafka").items():
        tasks = tuple(t.name for t in sorted(per_task))
        bad = [p for p in per_task.values() if isinstance(p, bool) or not isinstance(p, int)]
        if bad:
            rows.append(LagRow(ssp, tasks, None, None, None, note=f"not a Kafka offset: {bad[0]!r:.60}"))
            continue
        committed = min(per_task.values())
        marks = watermarks.get((ssp.stream, ssp.partition))
        if marks is None:
            rows.append(LagRow(ssp, tasks, committed, None, None, note="partition not found on the cluster"))
            continue
        low, high = marks
        note = ""
        if committed < low:
            note = f"committed offset is below the log start ({low}): records were deleted before being read"
        rows.append(LagRow(ssp, tasks, committed, high, max(0, high - committed), note=note))
    rows.sort(key=lambda r: r.ssp)
    return LagReport("kafka", rows, checkpoint.batch_id, checkpoint.timestamp_ms)


def kafka_lag_from(checkpoint: Checkpoint, admin: Any, job_model: JobModel | None = None) -> LagReport:
    """:func:`kafka_lag` with the watermarks fetched through a ``KafkaAdmin``."""
    ssps = set(committed_by_ssp(checkpoint, "kafka"))
    if job_model is not None:
        ssps |= {s for s in job_model.ssps() if s.system == "kafka"}
    tps = sorted((s.stream, s.partition) for s in ssps)
    return kafka_lag(checkpoint, admin.watermarks(tps) if tps else {}, job_model)


# ---- Kinesis --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardBacklog:
    behind: int
    latest_sequence: str | None
    millis_behind_latest: int | None
    capped: bool = False


def measure_shard_backlog(
    admin: Any,
    stream: str,
    shard_id: str,
    position: Any,
    *,
    max_records: int = 100_000,
    max_calls: int = 200,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> ShardBacklog:
    """Count the Kinesis records after ``position`` (a ``ShardPosition``) in one shard, up to ``max_records``.

    Stops at the tip: an empty response with ``MillisBehindLatest == 0``, or the end of a closed shard (no next
    iterator). Calls are spaced at :data:`KINESIS_READS_PER_SECOND`; after ``max_calls`` calls or
    ``max_records`` records the count is returned as a lower bound (``capped``).
    """
    from ..kinesis.calls import error_code

    if position.is_shard_end:
        return ShardBacklog(0, None, 0)
    # the record of an AFTER position inside a KPL aggregate (sub >= 0) still has sub-records to read: start at it
    iterator = admin.shard_iterator(stream, shard_id, position)
    count = 0
    latest = None
    millis = None
    interval = 1.0 / KINESIS_READS_PER_SECOND
    last_call = None
    for _ in range(max_calls):
        if iterator is None:
            return ShardBacklog(count, latest, 0 if millis is None else millis)
        if last_call is not None:
            wait = last_call + interval - clock()
            if wait > 0:
                sleep(wait)
        last_call = clock()
        limit = max(1, min(_GET_RECORDS_LIMIT, max_records - count))
        try:
            resp = admin.call(f"GetRecords (lag) of shard {shard_id} of stream {stream!r}",
                               admin.client.get_records, ShardIterator=iterator, Limit=limit)
        except Exception as err:
            if error_code(err) == "ResourceNotFoundException":
                raise admin._not_found(stream, shard_id, err) from None
            if error_code(err):
                raise errors.get_records_failed(shard_id, stream, admin.where(), admin._scrub(err)) from None
            raise
        records = resp.get("Records", [])
        behind_ms = resp.get("MillisBehindLatest")
        if millis is None and behind_ms is not None:
            millis = int(behind_ms)
        count += len(records)
        if records:
            latest = records[-1]["SequenceNumber"]
        if count >= max_records:
            return ShardBacklog(count, latest, millis, capped=True)
        if not records and behind_ms == 0:
            return ShardBacklog(count, latest, millis)
        iterator = resp.get("NextShardIterator")
    return ShardBacklog(count, latest, millis, capped=True)


def _single_position(value: Any) -> bool:
    """A mirrored Kinesis slot position is one ShardPosition JSON (``{"type": ...}``) or {shard: position}."""
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def kinesis_shard_positions(
    checkpoint: Checkpoint,
    stream: str,
    slot_shards: Callable[[TaskName, SystemStreamPartition], list[str]] | None,
) -> list[tuple[TaskName, SystemStreamPartition, str | None, Any, str]]:
    """(task, slot SSP, shard or None, ShardPosition, note) for every shard of ``stream`` in the mirror.

    ``slot_shards`` names the shards of a (task, slot) in the job model of the mirrored batch (from the Spark
    offset); without it a slot that holds one shard cannot be mapped to its shard id.
    """
    from ..kinesis.positions import ShardPosition

    out: list[tuple[TaskName, SystemStreamPartition, str | None, Any, str]] = []
    for ssp, per_task in committed_by_ssp(checkpoint, "kinesis").items():
        if ssp.stream != stream:
            continue
        for task, value in sorted(per_task.items()):
            if _single_position(value):
                shards = slot_shards(task, ssp) if slot_shards is not None else []
                if len(shards) == 1:
                    out.append((task, ssp, shards[0], ShardPosition.from_json(value), ""))
                else:
                    note = ("the mirror does not name the shard of a one-shard slot: pass --checkpoint DIR"
                            if slot_shards is None else
                            f"the checkpoint's offset maps this slot to {len(shards)} shards, not one")
                    out.append((task, ssp, None, ShardPosition.from_json(value), note))
            elif isinstance(value, dict):
                for shard, pos in sorted(value.items()):
                    out.append((task, ssp, shard, ShardPosition.from_json(pos), ""))
    return out


def slot_mapping_matches(
    checkpoint: Checkpoint, stream: str, slot_shards: Callable[[TaskName, SystemStreamPartition], list[str]]
) -> bool:
    """Whether ``slot_shards`` (a batch's slot -> shards mapping) gives every mirrored slot of ``stream`` the
    shards its position names: one shard for a plain position, exactly the listed shards for a per-shard map."""
    for ssp, per_task in committed_by_ssp(checkpoint, "kinesis").items():
        if ssp.stream != stream:
            continue
        for task, value in per_task.items():
            shards = slot_shards(task, ssp)
            if _single_position(value):
                if len(shards) != 1:
                    return False
            elif not isinstance(value, dict) or set(value) != set(shards):
                return False
    return True


def kinesis_lag(
    checkpoint: Checkpoint,
    stream: str,
    measure: Callable[[str, Any], ShardBacklog],
    slot_shards: Callable[[TaskName, SystemStreamPartition], list[str]] | None = None,
) -> LagReport:
    """Per shard: the records between the committed position and the tip (``measure(shard, position)``)."""
    rows = []
    for task, ssp, shard, position, note in kinesis_shard_positions(checkpoint, stream, slot_shards):
        if shard is None:
            rows.append(LagRow(ssp, (task.name,), str(position), None, None, note=note))
            continue
        backlog = measure(shard, position)
        rows.append(LagRow(ssp, (task.name,), str(position), backlog.latest_sequence, backlog.behind, shard=shard,
                           millis_behind_latest=backlog.millis_behind_latest, capped=backlog.capped))
    return LagReport("kinesis", rows, checkpoint.batch_id, checkpoint.timestamp_ms)
