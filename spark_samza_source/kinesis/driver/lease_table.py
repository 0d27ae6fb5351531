"""A KCL-compatible DynamoDB lease table: mirror our committed positions into it, and seed a query from it.

Schema, as the KCL writes it (``DynamoDBLeaseSerializer`` / ``DynamoDBMultiStreamLeaseSerializer`` in
awslabs/amazon-kinesis-client, KCL 1.x to 3.x): table key ``leaseKey`` (S, HASH), PAY_PER_REQUEST; one item per
shard::

    leaseKey                      S   shard id (multi-stream tables: "account:stream:creationEpoch:shardId")
    checkpoint                    S   sequence number, or a sentinel: TRIM_HORIZON, LATEST, AT_TIMESTAMP, SHARD_END
    checkpointSubSequenceNumber   N   user record within a KPL aggregate
    leaseCounter                  N   bumped by every write of the lease; workers detect lost leases by it
    leaseOwner                    S   worker id
    ownerSwitchesSinceCheckpoint  N
    parentShardId                 SS  parent shard ids (two after a merge); absent when none
    childShardIds                 SS  (KCL >= 2.3, read only)       startingHashKey / endingHashKey  S  (KCL >= 2.3)
    pendingCheckpoint(+SubSequenceNumber, +State)   two-phase checkpoints (removed by our writes, as KCL's own)
    streamName / shardId          S   multi-stream tables only
    throughputKBps                N   KCL 3.x (left alone)      checkpointOwner  S  KCL 3.x handoff (removed by us)
    entityType                    S   KCL 3.5+: "LEASE"; other entity types in the table are not leases (skipped)

KCL 3.x also adds the index ``LeaseOwnerToLeaseKeyIndex`` (``leaseOwner`` HASH, ``leaseKey`` RANGE) to the table
when it starts on it, so ``leaseOwner`` must always be a string (it is, in every write here), and keeps
``<table>-CoordinatorState`` and ``<table>-WorkerMetricStats`` beside it (KCL 3.0 to 3.4), which we never touch.

**What a checkpoint means.** The KCL checkpoint ``(S, n)`` says: user records up to and including sub-record n of
Kinesis record S are processed.  A KCL worker resumes with an ``AT_SEQUENCE_NUMBER`` iterator on S and drops every
user record whose (sequence, sub) is <= (S, n) (``ProcessTask.filterAndGetMaxExtendedSequenceNumber``); a record
that is not aggregated has sub 0.  Mapping to and from :class:`ShardPosition` (exact both ways):

    ShardPosition                 checkpoint     checkpointSubSequenceNumber
    AFTER_SEQUENCE_NUMBER(S, n)   S              n                 (n >= 0: inside an aggregate)
    AFTER_SEQUENCE_NUMBER(S, -1)  S              2^63-1            ("every sub-record of S": KCL skips all of S)
    AT_SEQUENCE_NUMBER(S)         S              -1                (KCL keeps (S, 0) > (S, -1): S is read)
    TRIM_HORIZON / SHARD_END      sentinel       0
    AT_TIMESTAMP(t)               AT_TIMESTAMP   0   + our own attribute samzaAtTimestampMs = t (KCL ignores it)

Reading a KCL-written table: ``(S, n)`` with n >= 0 -> ``AFTER_SEQUENCE_NUMBER(S, n)`` (for a record that is not
aggregated, skipping sub-record 0 skips the record: resuming *right after* KCL's checkpoint); a missing sub ->
``AFTER_SEQUENCE_NUMBER(S, -1)``; ``LATEST`` -> ``latest`` (default AT_TIMESTAMP(now), the replayable form);
``AT_TIMESTAMP`` without our attribute -> the ``at_timestamp_ms`` argument, else an error naming the shard.

**Write policy (never clobber a live worker).** ``write_checkpoints`` reads the table once (consistent scan), then
writes each changed lease with a conditional write on the ``leaseCounter`` it saw (``attribute_not_exists`` for
a new lease), bumping the counter, setting ``leaseOwner`` to ours and ``ownerSwitchesSinceCheckpoint`` to 0, and
removing any pending checkpoint.  A lease is *not* written, and reported in a :class:`KclLeaseConflictError`
raised after all other leases were written, when

* its counter moved since this process last wrote it (some other worker wrote it in between; the memory of our
  own writes is kept per process and table, so a new ``KclLeaseTable`` per commit is fine), or
* the conditional write fails (it moved between our read and our write), or
* another owner holds it and ``take_over=False``.

With ``take_over=True`` (default) a lease held by another owner that this process has not written before is taken
over (logged): the usual migration, a stopped KCL application's table, and the first commit after a restart.
Stop the KCL application first: a live KCL worker renews its leases every few seconds, which this policy detects
at our next write; the query's coordinator then fails the query with the error, which names the lease's owner (a
KCL worker beside the query would read the same shards).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ...core.damage import KCL_LEASE_MIRROR_RULE, KCL_LEASE_START_RULE
from .. import errors
from ..calls import error_code
from ..client import AwsClientSettings
from ..errors import KinesisSourceError
from ..options import KCL_LEASE_TABLE
from ..positions import (
    AFTER_SEQUENCE_NUMBER,
    AT_SEQUENCE_NUMBER,
    AT_TIMESTAMP,
    SHARD_END,
    TRIM_HORIZON,
    ShardPosition,
)

__all__ = ["KclLeaseTable", "LATEST_SENTINEL", "WHOLE_RECORD_SUB", "to_kcl_checkpoint", "from_kcl_checkpoint"]

log = logging.getLogger(__name__)

LATEST_SENTINEL = "LATEST"
_SENTINELS = (TRIM_HORIZON, LATEST_SENTINEL, AT_TIMESTAMP, SHARD_END)
WHOLE_RECORD_SUB = 2**63 - 1  # checkpointSubSequenceNumber meaning "every sub-record of the record"
TIMESTAMP_ATTR = "samzaAtTimestampMs"
_KEY = "leaseKey"
#: lease writes in flight at once: the DynamoDB client's connection pool holds 10 (``max_pool_connections``), so
#: more threads would wait for a connection, not add writes in flight
_LEASE_WRITERS = 10
_WRITTEN: dict[tuple[str | None, str | None, str], dict[str, int]] = {}
_WRITTEN_LOCK = threading.Lock()


def to_kcl_checkpoint(position: ShardPosition) -> tuple[str, int]:
    """(checkpoint, checkpointSubSequenceNumber) for ``position`` (see the module table)."""
    if position.type in (AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER):
        assert position.sequence is not None  # a position of these two types has one (ShardPosition checks)
        if position.type == AFTER_SEQUENCE_NUMBER:
            return position.sequence, WHOLE_RECORD_SUB if position.sub < 0 else position.sub
        return position.sequence, -1
    return position.type, 0  # TRIM_HORIZON, AT_TIMESTAMP, SHARD_END


def from_kcl_checkpoint(checkpoint: str, sub: int | None, *, timestamp_ms: int | None = None,
                        latest: ShardPosition | None = None, shard_id: str = "?") -> ShardPosition:
    """The position right after a KCL checkpoint (see the module table)."""
    if checkpoint == SHARD_END:
        return ShardPosition.shard_end()
    if checkpoint == TRIM_HORIZON:
        return ShardPosition.trim_horizon()
    if checkpoint == LATEST_SENTINEL:
        return latest if latest is not None else ShardPosition.at_timestamp(int(time.time() * 1000))
    if checkpoint == AT_TIMESTAMP:
        if timestamp_ms is None:
            raise errors.kcl_timestamp_unknown(shard_id)
        return ShardPosition.at_timestamp(timestamp_ms)
    if not (checkpoint.isascii() and checkpoint.isdigit()):
        raise errors.kcl_checkpoint_invalid(shard_id, checkpoint, _SENTINELS)
    if sub is None or sub >= WHOLE_RECORD_SUB:
        return ShardPosition.after_sequence(checkpoint, -1)
    if sub < 0:
        return ShardPosition.at_sequence(checkpoint)
    return ShardPosition.after_sequence(checkpoint, sub)


class _DamagedLeaseRow(Exception):
    """A lease row attribute of the wrong DynamoDB type (a hand edit, another tool's row under a shard's key):
    what is wrong, for the damaged-record rule (``core.damage``: fail when a query starts from the table, skip when
    the mirror meets it)."""


def _n(item: Mapping[str, Any], name: str) -> int | None:
    """A number attribute, None when absent; any other type is damage (DynamoDB itself keeps N values numeric,
    but an integer attribute may hold a fraction)."""
    value = item.get(name)
    if value is None:
        return None
    number = value.get("N") if isinstance(value, Mapping) and len(value) == 1 else None
    if isinstance(number, str) and number.lstrip("-").isdigit():
        return int(number)
    raise _DamagedLeaseRow(f"attribute {name} is {_shape(value)}, not an integer number")


def _s(item: Mapping[str, Any], name: str) -> str | None:
    """A string attribute, None when absent; any other type is damage."""
    value = item.get(name)
    if value is None:
        return None
    text = value.get("S") if isinstance(value, Mapping) and len(value) == 1 else None
    if not isinstance(text, str):
        raise _DamagedLeaseRow(f"attribute {name} is {_shape(value)}, not a string")
    return text


def _checkpoint(item: Mapping[str, Any]) -> str | None:
    """The row's checkpoint: a sequence number or a sentinel, None when absent; anything else is damage."""
    checkpoint = _s(item, "checkpoint")
    if checkpoint is not None and checkpoint not in _SENTINELS and not (checkpoint.isascii() and checkpoint.isdigit()):
        raise _DamagedLeaseRow(f"checkpoint {checkpoint[:40]!r} is neither a sequence number nor one of "
                              f"{list(_SENTINELS)}")
    return checkpoint


def _shape(value: object) -> str:
    """A DynamoDB attribute value in a few words, never its content (a row may hold anything)."""
    if isinstance(value, Mapping) and len(value) == 1:
        kind, inner = next(iter(value.items()))
        return f"of type {kind}" if kind != "N" else f"the number {str(inner)[:24]!r}"
    return "not a DynamoDB attribute value"


@dataclass(frozen=True)
class _LeaseWrite:
    """One lease as :meth:`KclLeaseTable.write_checkpoints` writes it: the KCL checkpoint of ``position``, the
    owner, the lineage and hash range KCL keeps beside it, and the ``leaseCounter`` the write sets."""

    shard_id: str
    counter: int
    checkpoint: str
    sub: int
    position: ShardPosition
    owner: str
    parents: tuple[str, ...]
    hash_range: tuple[int, int] | None


class KclLeaseTable:
    """One KCL lease table (``table_name`` = the KCL application name) through a boto3 DynamoDB client."""

    def __init__(self, dynamodb_client: Any, table_name: str, *, settings: AwsClientSettings | None = None,
                 take_over: bool = True) -> None:
        self.client = dynamodb_client
        self.table = table_name
        self.take_over = take_over
        #: shard id -> what is wrong with its lease row, for rows the mirror left as they were (the progress'
        #: ``damagedKclLeaseRows``); a row leaves it once it reads again
        self.damaged: dict[str, str] = {}
        self._scrub = settings.scrub if settings is not None else (lambda t: str(t)[:1000])
        meta = getattr(dynamodb_client, "meta", None)
        where = (getattr(meta, "endpoint_url", None), getattr(meta, "region_name", None), table_name)
        with _WRITTEN_LOCK:  # lease key -> leaseCounter this process last wrote (shared by instances)
            self._written: dict[str, int] = _WRITTEN.setdefault(where, {})

    def _where(self) -> str:
        meta = getattr(self.client, "meta", None)
        return (f"table {self.table!r}, region {getattr(meta, 'region_name', '?')}, "
                f"endpoint {getattr(meta, 'endpoint_url', '?')}")

    def _fail(self, what: str, err: BaseException) -> KinesisSourceError:
        return errors.lease_table_failed(what, self._where(), self._scrub(err))

    # ---- table ----------------------------------------------------------------------------------------------
    def ensure_table(self, *, timeout_s: float = 120.0) -> None:
        """Create the table as the KCL does (``leaseKey`` S HASH, PAY_PER_REQUEST) unless it exists; wait ACTIVE.

        An existing table with another key schema is refused (it is not a KCL lease table).
        """
        try:
            desc = self.client.describe_table(TableName=self.table)["Table"]
        except ClientError as err:
            if error_code(err) != "ResourceNotFoundException":
                raise self._fail("DescribeTable", err) from None
            log.warning("creating a DynamoDB KCL lease table (key leaseKey, PAY_PER_REQUEST), as it does not exist: "
                        "%s; the query mirrors its committed positions there (option kcl.leaseTable)", self._where())
            try:
                self.client.create_table(
                    TableName=self.table,
                    KeySchema=[{"AttributeName": _KEY, "KeyType": "HASH"}],
                    AttributeDefinitions=[{"AttributeName": _KEY, "AttributeType": "S"}],
                    BillingMode="PAY_PER_REQUEST",
                )
            except ClientError as err2:
                if error_code(err2) != "ResourceInUseException":  # created concurrently: fine
                    raise self._fail("CreateTable", err2) from None
            desc = self._wait_active(timeout_s)
        keys = [(k["AttributeName"], k["KeyType"]) for k in desc.get("KeySchema", [])]
        if keys != [(_KEY, "HASH")]:
            raise errors.lease_table_not_kcl(self._where(), keys, _KEY)
        if desc.get("TableStatus") != "ACTIVE":
            self._wait_active(timeout_s)

    def _wait_active(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            desc = self.client.describe_table(TableName=self.table)["Table"]
            if desc.get("TableStatus") == "ACTIVE":
                return desc
            if time.monotonic() > deadline:
                raise errors.lease_table_not_active(self._where(), desc.get("TableStatus"), timeout_s)
            time.sleep(0.5)

    def _scan(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True}
        while True:
            try:
                page = self.client.scan(**request)
            except ClientError as err:
                raise self._fail("Scan", err) from None
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # ---- read -----------------------------------------------------------------------------------------------
    def read_items(self) -> dict[str, dict[str, Any]]:
        """Raw lease items by ``leaseKey``."""
        return {item[_KEY]["S"]: item for item in self._scan() if _KEY in item}

    def read_checkpoints(self, *, stream: str | None = None, at_timestamp_ms: int | None = None,
                         latest: ShardPosition | None = None) -> dict[str, ShardPosition]:
        """{shard id: the position right after its KCL checkpoint}, for a table a KCL worker (or we) wrote.

        Multi-stream tables (items with ``streamName``/``shardId``) need ``stream`` to pick one stream.  See the
        module documentation for sentinels (``latest``, ``at_timestamp_ms``).
        """
        out: dict[str, ShardPosition] = {}
        streams_seen: set[str] = set()
        for key, item in sorted(self.read_items().items()):
            try:
                entry = self._checkpoint_of_row(key, item, stream, streams_seen, at_timestamp_ms, latest)
            except _DamagedLeaseRow as damage:
                raise errors.kcl_lease_row_damaged(self._where(), key, str(damage), KCL_LEASE_START_RULE.repair,
                                                   lease_table_option=KCL_LEASE_TABLE.name) from None
            if entry is not None:
                out[entry[0]] = entry[1]
        if stream is None and len(streams_seen) > 1:
            raise errors.lease_table_of_several_streams(self._where(), sorted(streams_seen))
        return dict(sorted(out.items()))

    def _checkpoint_of_row(self, key: str, item: Mapping[str, Any], stream: str | None, streams_seen: set[str],
                           at_timestamp_ms: int | None, latest: ShardPosition | None,
                           ) -> tuple[str, ShardPosition] | None:
        """(shard id, position after its checkpoint) of one lease row; None for a row that is not a lease of
        ``stream`` or has no checkpoint."""
        if _s(item, "entityType") not in (None, "LEASE"):
            return None  # KCL 3.5+ keeps its coordinator state and worker metrics in the lease table too
        shard_id = key
        stream_id = _s(item, "streamName")
        multi_stream_shard_id = _s(item, "shardId")
        if stream_id is not None and multi_stream_shard_id is not None:  # multi-stream lease
            name = stream_id.split(":")[1] if stream_id.count(":") >= 2 else stream_id
            streams_seen.add(name)
            if stream is not None and name != stream:
                return None
            shard_id = multi_stream_shard_id
        checkpoint = _checkpoint(item)
        if checkpoint is None:
            log.warning("KCL lease %s in %s has no checkpoint; ignored", key, self._where())
            return None
        sub, stated_ms = _n(item, "checkpointSubSequenceNumber"), _n(item, TIMESTAMP_ATTR)
        return shard_id, from_kcl_checkpoint(checkpoint, sub, shard_id=shard_id, latest=latest,
                                             timestamp_ms=stated_ms if stated_ms is not None else at_timestamp_ms)

    # ---- write ----------------------------------------------------------------------------------------------
    def write_checkpoints(self, checkpoints: Mapping[str, tuple[ShardPosition, Iterable[str]]], owner: str, *,
                          hash_ranges: Mapping[str, tuple[int, int]] | None = None) -> int:
        """Mirror ``{shard id: (position, parent shard ids)}`` into the table as ``owner``; returns leases written.

        Unchanged leases (same checkpoint and owner, counter as we left it) are not written again.  Conflicts (see
        the module documentation) raise :class:`KclLeaseConflictError` after every other lease was written.
        """
        if not checkpoints:
            return 0
        current = self.read_items()
        conflicts: dict[str, str] = {}
        writes: list[tuple[_LeaseWrite, bool, int | None]] = []
        for shard_id, (position, parents) in sorted(checkpoints.items()):
            item = current.get(shard_id)
            checkpoint, sub = to_kcl_checkpoint(position)
            parent_ids = sorted(set(parents))
            try:
                seen_counter = _n(item, "leaseCounter") if item else None
                seen_owner = _s(item, "leaseOwner") if item else None
                unchanged = item is not None and (
                    _checkpoint(item), _n(item, "checkpointSubSequenceNumber"), _n(item, TIMESTAMP_ATTR)
                ) == (checkpoint, sub, position.timestamp_ms)
            except _DamagedLeaseRow as damage:
                self._leave_damaged_row(shard_id, str(damage))
                continue
            self.damaged.pop(shard_id, None)
            mine = self._written.get(shard_id)
            if item is not None:
                if mine is not None and seen_counter != mine:
                    conflicts[shard_id] = (f"{shard_id} (leaseCounter moved from {mine} to {seen_counter}, owner "
                                           f"{seen_owner!r})")
                    continue
                if seen_owner not in (None, owner) and not self.take_over:
                    conflicts[shard_id] = f"{shard_id} (held by {seen_owner!r})"
                    continue
                if mine is not None and seen_owner == owner and unchanged:
                    continue  # nothing changed since our last write
                if seen_owner not in (None, owner):
                    log.warning("taking over the KCL lease of shard %s in %s from %r (counter %s)", shard_id,
                                self._where(), seen_owner, seen_counter)
            new_counter = (seen_counter or 0) + 1
            lease = _LeaseWrite(shard_id, new_counter, checkpoint, sub, position, owner, tuple(parent_ids),
                                (hash_ranges or {}).get(shard_id))
            writes.append((lease, item is not None, seen_counter))
        written = 0
        failure: BaseException | None = None
        for (lease, _, _), outcome in zip(writes, self._write_all(writes), strict=True):
            if isinstance(outcome, BaseException):
                failure = failure or outcome
            elif outcome is None:
                self._written[lease.shard_id] = lease.counter
                written += 1
            else:
                conflicts[lease.shard_id] = (f"{lease.shard_id} (changed by someone else while we wrote it, owner "
                                             f"{outcome!r})")
        if failure is not None:  # the leases written beside it are counted above: the next commit compares to them
            raise failure
        if conflicts:
            raise errors.kcl_lease_conflict(self._where(), [conflicts[sid] for sid in sorted(conflicts)],
                                            lease_table_option=KCL_LEASE_TABLE.name)
        return written

    def _write_all(self, writes: list[tuple[_LeaseWrite, bool, int | None]]) -> list[str | None | BaseException]:
        """Each of ``writes`` through :meth:`_write`, from a bounded pool of threads: every lease is an item of its
        own with its own condition, so the writes are independent, and one after the other they cost a DynamoDB
        round trip each (89 s for 1,000 leases on moto). The outcome of each, in order: None once written, the
        holder on a conflict, or the exception it raised (all are awaited, so what was written is known)."""
        pool_size = max(1, min(_LEASE_WRITERS, len(writes)))
        outcomes: list[str | None | BaseException] = []
        with ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="samza-kcl-lease") as pool:
            futures = [pool.submit(self._write, *write) for write in writes]
            for future in futures:
                error = future.exception()
                outcomes.append(error if error is not None else future.result())
        return outcomes

    def _leave_damaged_row(self, shard_id: str, what: str) -> None:
        """The mirror's side of the damaged-record rule: a lease row it cannot read is left as it is (never written
        over: it may be a hand repair in progress, or another tool's), said once and counted in the progress."""
        if shard_id not in self.damaged:
            log.warning("KCL lease table %s: the lease row of shard %s is damaged (%s); left as it is, and this "
                        "shard's checkpoint is not mirrored until it is repaired. Repair: %s", self._where(),
                        shard_id, what, KCL_LEASE_MIRROR_RULE.repair)
        self.damaged[shard_id] = what

    def _write(self, lease: _LeaseWrite, exists: bool, seen_counter: int | None) -> str | None:
        """Write ``lease`` on condition that nobody changed it since it was read (its counter is still
        ``seen_counter``; or it still has none, or does not exist yet); None once written, else the ``leaseOwner``
        the lease has now (someone else changed it)."""
        shard_id, checkpoint, sub, position = lease.shard_id, lease.checkpoint, lease.sub, lease.position
        owner, parents, hash_range, new_counter = lease.owner, list(lease.parents), lease.hash_range, lease.counter
        values: dict[str, Any] = {
            ":cp": {"S": checkpoint}, ":sub": {"N": str(sub)}, ":c": {"N": str(new_counter)},
            ":o": {"S": owner}, ":zero": {"N": "0"},
        }
        sets = ["checkpoint = :cp", "checkpointSubSequenceNumber = :sub", "leaseCounter = :c", "leaseOwner = :o",
                "ownerSwitchesSinceCheckpoint = :zero"]
        # a pending checkpoint, and KCL 3's graceful-handoff marker (the worker that is to checkpoint before it hands
        # the lease on), belong to the owner we replace
        removes = ["pendingCheckpoint", "pendingCheckpointSubSequenceNumber", "pendingCheckpointState",
                   "checkpointOwner"]
        if parents:
            sets.append("parentShardId = :p")
            values[":p"] = {"SS": parents}
        if hash_range is not None:
            sets += ["startingHashKey = :hs", "endingHashKey = :he"]
            values[":hs"], values[":he"] = {"S": str(hash_range[0])}, {"S": str(hash_range[1])}
        if position.type == AT_TIMESTAMP:
            sets.append(f"{TIMESTAMP_ATTR} = :ts")
            values[":ts"] = {"N": str(position.timestamp_ms)}
        else:
            removes.append(TIMESTAMP_ATTR)
        request: dict[str, Any] = {
            "TableName": self.table,
            "Key": {_KEY: {"S": shard_id}},
            "UpdateExpression": f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
            "ExpressionAttributeValues": values,
        }
        if exists and seen_counter is not None:
            request["ConditionExpression"] = "leaseCounter = :seen"
            values[":seen"] = {"N": str(seen_counter)}
        elif exists:
            request["ConditionExpression"] = "attribute_exists(leaseKey) AND attribute_not_exists(leaseCounter)"
        else:
            request["ConditionExpression"] = "attribute_not_exists(leaseKey)"
        try:
            self.client.update_item(**request)
            return None
        except ClientError as err:
            if error_code(err) == "ConditionalCheckFailedException":
                return self._holder_unless_our_write(lease)
            raise self._fail(f"UpdateItem of the lease of shard {shard_id}", err) from None

    def _holder_unless_our_write(self, lease: _LeaseWrite) -> str | None:
        """After a failed condition: None if the lease holds exactly this write already, else its owner now.
        botocore retries a write whose answer was lost (a timeout, an HTTP 5xx after DynamoDB applied it); the
        retry then fails its own condition. Taking that for a conflict would drop the checkpoint from the mirror
        for good (the counter would look moved by someone else at every later commit)."""
        try:
            item = self.client.get_item(TableName=self.table, Key={_KEY: {"S": lease.shard_id}},
                                        ConsistentRead=True).get("Item")
        except ClientError as err:
            raise self._fail(f"GetItem of the lease of shard {lease.shard_id}", err) from None
        if item is None:
            return "nobody"
        try:
            found = (_n(item, "leaseCounter"), _s(item, "leaseOwner"), _s(item, "checkpoint"),
                     _n(item, "checkpointSubSequenceNumber"))
            if found == (lease.counter, lease.owner, lease.checkpoint, lease.sub):
                return None
            return _s(item, "leaseOwner") or "nobody"
        except _DamagedLeaseRow:
            return "a writer that left the row damaged"
