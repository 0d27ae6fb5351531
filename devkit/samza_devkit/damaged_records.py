"""Damaged records planted in a real metadata store, and each stored kind read the way the query reads it: what
the damaged-record rule's tests (docs/guarantees.md) drive on the ``file:``, ``s3://`` and ``dynamodb://`` stores.

``plant`` writes bytes the store did not write, behind its back, where a key's record lives (a file, an object,
an item), the way a full disk, a hand edit, another release or a copy from another job would. A ``KindCase``
seeds valid records of one kind, names the key to damage, and reads the kind as the query does: a *skip* kind
returns what it kept and what it skipped, a *fail* kind raises.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spark_samza_source.core.checkpoint import Checkpoint, CheckpointMirror
from spark_samza_source.core.damage import Verdict, rule_for_namespace
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.jobmodel_store import JobModelStore
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.core.startpoint import StartpointOldest
from spark_samza_source.core.startpoint_manager import StartpointManager, startpoint_key
from spark_samza_source.core.store import MetadataStore
from spark_samza_source.kinesis.driver.shard_tasks import ShardTasks, ShardTasksMirror
from spark_samza_source.kinesis.microbatch_ends import BatchEnds
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.metadata.dynamodb import DynamoDBMetadataStore, sort_key
from spark_samza_source.metadata.filesystem import FileSystemMetadataStore, encode_key
from spark_samza_source.metadata.lease import JobLease
from spark_samza_source.metadata.s3 import S3MetadataStore
from spark_samza_source.options.namespaces import (
    BATCH_ENDS,
    CHECKPOINTS,
    JOB_MODEL,
    JOB_MODEL_CURRENT,
    LEASE,
    LEASE_KEY,
    SHARD_TASKS,
    STARTPOINTS,
)

__all__ = ["DAMAGES", "KINDS", "KindCase", "damaged_bytes", "plant", "plant_envelope"]

#: the ways a record is damaged that every store can hold: a store-level verdict, whatever the kind
DAMAGES = ("truncated", "random-bytes", "newer-format", "another-key")


def damaged_bytes(damage: str, key: str, value: Any) -> bytes:
    """The bytes of ``key``'s envelope holding ``value``, damaged as ``damage`` says."""
    envelope = {"format": 1, "key": key, "value": value}
    if damage == "newer-format":
        envelope["format"] = 99
    if damage == "another-key":
        envelope["key"] = key + "-copied"
    data = json.dumps(envelope).encode()
    if damage == "truncated":
        return data[: len(data) // 2]
    if damage == "random-bytes":
        return os.urandom(48) + b"\xff\x00"
    return data


def plant(store: MetadataStore, namespace: str, key: str, damage: str, value: Any = None) -> None:
    """Put ``key``'s record in ``store``, damaged as ``damage`` says, without going through the store."""
    plant_envelope(store, namespace, key, damaged_bytes(damage, key, {"was": "here"} if value is None else value))


def plant_envelope(store: MetadataStore, namespace: str, key: str, data: bytes) -> None:
    """Put raw bytes where ``store`` keeps ``key``'s record (DynamoDB: the envelope's parts as attributes)."""
    if isinstance(store, FileSystemMetadataStore):
        directory = os.path.join(store.root, store.job_name, namespace)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, encode_key(key) + ".json"), "wb") as f:
            f.write(data)
    elif isinstance(store, S3MetadataStore):
        store._client.put_object(Bucket=store.bucket, Key=store._object_key(namespace, key), Body=data)
    elif isinstance(store, DynamoDBMetadataStore):
        store._client.put_item(TableName=store.table, Item=_item(store, namespace, key, data))
    else:
        raise TypeError(f"cannot plant a damaged record in {type(store).__name__}")


def _item(store: DynamoDBMetadataStore, namespace: str, key: str, data: bytes) -> dict[str, Any]:
    """The item a DynamoDB store would hold for the (possibly damaged) envelope ``data``."""
    try:
        envelope = json.loads(data)
    except ValueError:
        envelope = None
    item: dict[str, Any] = {"pk": {"S": f"{store.job_name}/{namespace}"}, "sk": {"S": sort_key(key)}}
    if not isinstance(envelope, dict):  # torn or random: the value attribute is what holds it
        item.update({"key": {"S": key}, "value": {"S": data.decode("latin-1")}, "format": {"N": "1"}})
        return item
    item.update({"key": {"S": envelope["key"]}, "value": {"S": json.dumps(envelope["value"])},
                 "format": {"N": str(envelope["format"])}})
    return item


# ---- the kinds, read as the query reads them ------------------------------------------------------------------
ORDERS_0 = SystemStreamPartition("kafka", "orders", 0)
ORDERS_1 = SystemStreamPartition("kafka", "orders", 1)
P0, P1 = TaskName("Partition 0"), TaskName("Partition 1")
MODEL = JobModel({P0: {ORDERS_0}, P1: {ORDERS_1}})
STREAM = "clicks"


@dataclass(frozen=True)
class KindCase:
    """One stored kind: valid records to seed, the key to damage, and the query's read of the kind."""

    kind: str
    namespace: str
    #: writes valid records of the kind, the damaged key's among them
    seed: Callable[[MetadataStore], None]
    damaged_key: str
    #: what the query does with the kind: a skip kind returns (kept, skipped) counts, a fail kind raises
    read: Callable[[MetadataStore], tuple[int, int]]

    @property
    def verdict(self) -> Verdict:
        return rule_for_namespace(self.namespace).verdict


def _seed_startpoints(store: MetadataStore) -> None:
    manager = StartpointManager(store)
    manager.write(ORDERS_0, StartpointOldest(), P0)
    manager.write(ORDERS_1, StartpointOldest(), P1)


def _read_startpoints(store: MetadataStore) -> tuple[int, int]:
    result = StartpointManager(store).fan_out(MODEL)
    return len(result), len(result.malformed)


def _seed_mirror(store: MetadataStore) -> None:
    CheckpointMirror(store).write(Checkpoint({P0: {ORDERS_0: 5}, P1: {ORDERS_1: 7}}, batch_id=3))


def _read_mirror(store: MetadataStore) -> tuple[int, int]:
    mirror = CheckpointMirror(store)
    checkpoint = mirror.read()
    return (0 if checkpoint is None else len(checkpoint.positions)), len(mirror.skipped)


def _seed_job_model(store: MetadataStore) -> None:
    JobModelStore(store).write(MODEL)


def _read_job_model(store: MetadataStore) -> tuple[int, int]:
    model = JobModelStore(store).current()
    return (0 if model is None else 1), 0


def _seed_lease(store: MetadataStore) -> None:
    lease = JobLease(store, heartbeat=False)
    lease.hold("query-a")


def _read_lease(store: MetadataStore) -> tuple[int, int]:
    JobLease(store, heartbeat=False).hold("query-b")
    return 1, 0


def _seed_shard_tasks(store: MetadataStore) -> None:
    store.put(SHARD_TASKS, STREAM, ShardTasks(STREAM, None, 2, 4, {"shardId-000000000000": "Task-0"}).to_json())


def _read_shard_tasks(store: MetadataStore) -> tuple[int, int]:
    return (0 if ShardTasksMirror(store, STREAM).read() is None else 1), 0


def _seed_batch_ends(store: MetadataStore) -> None:
    ends = BatchEnds(store, stream=STREAM)
    ends.record(4, "shardId-000000000000", ShardPosition.after_sequence("100"))
    ends.record(4, "shardId-000000000001", ShardPosition.after_sequence("200"))


def _read_batch_ends(store: MetadataStore) -> tuple[int, int]:
    return len(BatchEnds(store, stream=STREAM).recorded_for(4)), 0


KINDS: tuple[KindCase, ...] = (
    KindCase("startpoint", STARTPOINTS, _seed_startpoints, startpoint_key(ORDERS_1, P1), _read_startpoints),
    KindCase("checkpoint mirror", CHECKPOINTS, _seed_mirror, "Partition 1", _read_mirror),
    KindCase("job model", JOB_MODEL, _seed_job_model, JOB_MODEL_CURRENT, _read_job_model),
    KindCase("job lease", LEASE, _seed_lease, LEASE_KEY, _read_lease),
    KindCase("shard tasks", SHARD_TASKS, _seed_shard_tasks, STREAM, _read_shard_tasks),
    KindCase("batch ends", BATCH_ENDS, _seed_batch_ends, f"{4:020d}/{STREAM}/shardId-000000000001",
             _read_batch_ends),
)


def lands_on_the_rule(case: KindCase, store: MetadataStore, damage: str) -> str:
    """Seed ``case``'s kind in ``store``, damage one record as ``damage`` says, read the kind as the query does, and
    check the rule held; returns what the reader said (the error, or the skip's count) for further checks."""
    from spark_samza_source.core.errors import SamzaSourceError

    case.seed(store)
    plant(store, case.namespace, case.damaged_key, damage)
    rule = rule_for_namespace(case.namespace)
    if case.verdict is Verdict.SKIP:
        kept, skipped = case.read(store)
        assert (kept, skipped) == (1, 1), f"{case.kind}: kept {kept}, skipped {skipped}: the valid record is hidden"
        return f"kept {kept}, skipped {skipped}"
    try:
        case.read(store)
    except SamzaSourceError as err:
        message = str(err)
    else:
        raise AssertionError(f"{case.kind}: a damaged record ({damage}) was read without an error")
    assert f"kind: {case.kind}" in message, message
    assert store.job_name in message, message
    if damage == "newer-format":
        assert "upgrade" in message.lower(), message
    else:
        assert rule.repair in message, message
    return message
