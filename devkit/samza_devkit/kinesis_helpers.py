"""boto3 Kinesis helpers shared by the integration tests, the demo and the benchmarks.

They talk to any Kinesis endpoint (moto in server mode, or a real one) exactly as an application would: create a
stream and wait until it is ACTIVE, put records (optionally routed with explicit hash keys, or KPL-aggregated),
split and merge shards, and read a shard back with a plain ``GetRecords`` loop (the reference the reader is
compared with).

moto 5.2's resharding differs from Kinesis (verified against moto 5.2.5 in server mode):

* ``PutRecord(s)`` after ``SplitShard`` / ``MergeShards`` still lands in the *closed parent*: moto picks the first
  shard whose hash range holds the key without checking that it is open, so children never receive records and
  the parent's ``EndingSequenceNumber`` (moto reports its current last sequence number) keeps moving;
* ``SplitShard`` re-puts the parent's records into the parent (new arrival timestamps, same sequence numbers);
  ``MergeShards`` copies both parents' records into the child (real Kinesis leaves them in the parents);
* ``MergeShards`` accepts two shards only when the first is below the second (its adjacency check is wrong the
  other way round), and a hash key equal to a shard's ``EndingHashKey`` matches no shard;
* sequence numbers are small per-shard counters (1, 2, 3 ...), not Kinesis' 56-digit numbers, and a closed empty
  shard has ``StartingSequenceNumber`` = ``EndingSequenceNumber`` = "0";
* ``GetRecords`` never returns a null ``NextShardIterator`` at the end of a closed shard (AWS's API reference:
  "If set to null, the shard has been closed and the requested iterator does not return any more data"), nor
  trims old data;
* ``ListShards`` with ``NextToken`` alone (as AWS requires) fails with ``InvalidToken``;
* nothing is locked: a ``GetRecords`` that iterates a shard while a ``PutRecords`` appends to it fails with HTTP
  500 ("OrderedDict mutated during iteration"), and two concurrent puts to one shard can take the same sequence
  number (the later overwrites the earlier: a lost record); finding a shard's last sequence number copies all its
  keys, so filling a shard is quadratic.

:func:`apply_moto_kinesis_fixes` patches the first four and the last (only for the process it runs in: call it
in the moto server process before it starts serving, e.g. in ``samza_devkit/moto_server.py``).  The patched
``GetRecords`` returns a null ``NextShardIterator`` in the response that reaches a closed shard's last record (or
at once for a closed shard with nothing after the iterator): AWS allows that and the later order kinesalite
uses (null one call after the last records), so between the two emulators the reader sees both.  The reader and
admin cope with the rest as real Kinesis allows (ending sequence numbers, ``StreamName`` retried with
``NextToken``).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import boto3

from spark_samza_source.kinesis import kpl

from .waits import deadline_after

__all__ = [
    "put_round",
    "Put",
    "kinesis_client",
    "dynamodb_client",
    "unique_stream_name",
    "create_stream",
    "wait_active",
    "wait_until_new_shards_exist_now",
    "delete_stream",
    "list_shards",
    "hash_key_of",
    "put_records",
    "put_aggregated",
    "split_shard",
    "merge_shards",
    "read_shard_raw",
    "offset_log",
    "apply_moto_kinesis_fixes",
    "moto_kinesis_fixes",
    "FaultyEndpoint",
]

TIMEOUT_S = 60.0
MAX_PUT_ENTRIES = 500
MAX_PUT_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class Put:
    """One acknowledged Kinesis record (for an aggregate: ``users`` holds its user records)."""

    shard_id: str
    sequence: str
    partition_key: str
    data: bytes
    explicit_hash_key: str | None = None
    users: tuple[kpl.UserRecord, ...] = ()


def kinesis_client(endpoint: str | None, region: str = "us-east-1"):
    return boto3.client("kinesis", endpoint_url=endpoint, region_name=region)


def dynamodb_client(endpoint: str | None, region: str = "us-east-1"):
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name=region)


def unique_stream_name(prefix: str = "s") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def wait_active(client, stream: str, timeout_s: float = TIMEOUT_S) -> None:
    deadline = deadline_after(timeout_s)
    while True:
        status = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"]
        if status == "ACTIVE":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream {stream!r} still {status} after {timeout_s:.0f}s")
        time.sleep(0.2)


def create_stream(client, name: str, shards: int, *, timeout_s: float = TIMEOUT_S) -> str:
    client.create_stream(StreamName=name, ShardCount=shards)
    wait_active(client, name, timeout_s)
    return name


def delete_stream(client, name: str) -> None:
    with contextlib.suppress(client.exceptions.ResourceNotFoundException):
        client.delete_stream(StreamName=name, EnforceConsumerDeletion=True)


def recreate_stream(client, name: str, shards: int, *, timeout_s: float = TIMEOUT_S) -> None:
    """Delete stream ``name`` and create it again under the same name, with a creation time (and so an identity)
    of its own. kinesalite reports creation times in whole seconds and behind the clock (2-3 s, measured): a
    stream re-created within the same reported second kept the old one's creation time, so the source could not
    tell the two apart (real Kinesis reports milliseconds). So the stream is deleted and created again until its
    creation time differs; a stream still being deleted is retried, all until ``timeout_s``."""
    def created_at():
        return client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamCreationTimestamp"]

    old = created_at()
    deadline = deadline_after(timeout_s)
    while True:
        delete_stream(client, name)
        while True:
            try:
                create_stream(client, name, shards, timeout_s=timeout_s)
                break
            except client.exceptions.ResourceInUseException:  # still being deleted
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.25)
        if created_at() != old:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"stream {name!r} re-created for {timeout_s:g}s kept its creation time {old}")
        time.sleep(0.25)


def list_shards(client, stream: str) -> list[dict[str, Any]]:
    """Raw ``ListShards`` entries (all pages). A later page is asked with ``NextToken`` alone, as AWS requires
    (kinesis-mock and kinesalite refuse the stream name beside it); moto, which wants the name with the token
    (``InvalidToken`` otherwise), is asked again with it, as the source's admin does."""
    out: list[dict[str, Any]] = []
    page = client.list_shards(StreamName=stream)
    with_name = False
    while True:
        out.extend(page["Shards"])
        token = page.get("NextToken")
        if not token:
            return out
        try:
            page = client.list_shards(**({"StreamName": stream} if with_name else {}), NextToken=token)
        except client.exceptions.ClientError as err:
            if with_name or err.response.get("Error", {}).get("Code") != "InvalidToken":
                raise
            with_name = True
            page = client.list_shards(StreamName=stream, NextToken=token)


def hash_key_of(client, stream: str, shard_id: str) -> str:
    """An explicit hash key that routes a record to ``shard_id`` (its starting hash key)."""
    for shard in list_shards(client, stream):
        if shard["ShardId"] == shard_id:
            return shard["HashKeyRange"]["StartingHashKey"]
    raise KeyError(f"no shard {shard_id} in stream {stream!r}")


def _entry(item: Any, explicit_hash_key: str | None, index: int) -> dict[str, Any]:
    if isinstance(item, dict):
        entry = dict(item)
    elif isinstance(item, (bytes, bytearray)):
        entry = {"Data": bytes(item), "PartitionKey": f"pk-{index}"}
    elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
        entry = {"PartitionKey": item[0], "Data": bytes(item[1])}
        if len(item) == 3 and item[2] is not None:
            entry["ExplicitHashKey"] = str(item[2])
    else:
        raise TypeError(f"a record is bytes, (partition_key, data[, explicit_hash_key]) or a PutRecords entry, "
                        f"got {item!r:.80}")
    if explicit_hash_key is not None and "ExplicitHashKey" not in entry:
        entry["ExplicitHashKey"] = str(explicit_hash_key)
    return entry


def put_records(client, stream: str, records: Iterable[Any], *, explicit_hash_key: str | int | None = None,
                attempts: int = 10) -> list[Put]:
    """Put records in order with ``PutRecords`` (500 entries / 5 MiB per call) and return what was acknowledged.

    Records are ``bytes`` (partition key ``pk-<i>``), ``(partition_key, data[, explicit_hash_key])`` tuples or
    ready ``PutRecords`` entries.  ``explicit_hash_key`` routes every record without its own to one shard.
    Entries a call rejects (throttling) are put again, in order, up to ``attempts`` times.
    """
    ehk = None if explicit_hash_key is None else str(explicit_hash_key)
    entries = [_entry(item, ehk, i) for i, item in enumerate(records)]
    acked: list[Put] = []
    chunk: list[dict[str, Any]] = []
    size = 0

    def flush() -> None:
        pending = list(chunk)
        for _ in range(attempts):
            resp = client.put_records(StreamName=stream, Records=pending)
            retry = []
            for entry, result in zip(pending, resp["Records"], strict=True):
                if "SequenceNumber" in result:
                    acked.append(Put(result["ShardId"], result["SequenceNumber"], entry["PartitionKey"],
                                     entry["Data"], entry.get("ExplicitHashKey")))
                else:
                    retry.append(entry)
            if not retry:
                return
            pending = retry
            time.sleep(0.2)
        raise RuntimeError(f"{len(pending)} records were still rejected by stream {stream!r} after {attempts} tries")

    for entry in entries:
        entry_size = len(entry["Data"]) + len(entry["PartitionKey"].encode())
        if chunk and (len(chunk) == MAX_PUT_ENTRIES or size + entry_size > MAX_PUT_BYTES):
            flush()
            chunk, size = [], 0
        chunk.append(entry)
        size += entry_size
    if chunk:
        flush()
    return acked


def put_aggregated(client, stream: str, aggregates: Iterable[Sequence[Any]], *,
                   explicit_hash_key: str | int | None = None) -> list[Put]:
    """Put each element of ``aggregates`` (a list of user records, see ``kpl.aggregate``) as one KPL aggregate.

    Routed like the KPL (first user record's hash key) unless ``explicit_hash_key`` is given.
    """
    groups = [[kpl._as_user_record(u) for u in group] for group in aggregates]
    entries = []
    for group in groups:
        entry = kpl.aggregate_put_entry(group)
        if explicit_hash_key is not None:
            entry["ExplicitHashKey"] = str(explicit_hash_key)
        entries.append(entry)
    acked = put_records(client, stream, entries)
    return [Put(p.shard_id, p.sequence, p.partition_key, p.data, p.explicit_hash_key, tuple(g))
            for p, g in zip(acked, groups, strict=True)]


def split_shard(client, stream: str, shard_id: str, new_starting_hash_key: str | int | None = None) -> str:
    """Split ``shard_id`` (at the middle of its hash range by default) and wait until the stream is ACTIVE."""
    if new_starting_hash_key is None:
        for shard in list_shards(client, stream):
            if shard["ShardId"] == shard_id:
                lo, hi = int(shard["HashKeyRange"]["StartingHashKey"]), int(shard["HashKeyRange"]["EndingHashKey"])
                new_starting_hash_key = (lo + hi + 1) // 2
                break
        else:
            raise KeyError(f"no shard {shard_id} in stream {stream!r}")
    client.split_shard(StreamName=stream, ShardToSplit=shard_id, NewStartingHashKey=str(new_starting_hash_key))
    wait_active(client, stream)
    wait_until_new_shards_exist_now(client, stream)
    return str(new_starting_hash_key)


def merge_shards(client, stream: str, shard_id: str, adjacent_shard_id: str) -> None:
    client.merge_shards(StreamName=stream, ShardToMerge=shard_id, AdjacentShardToMerge=adjacent_shard_id)
    wait_active(client, stream)
    wait_until_new_shards_exist_now(client, stream)


# kinesalite's sequence numbers (version 2): hex "2", 9 hex digits of the shard's creation time in seconds, ...,
# "2" at the end; 47 hex digits in all
_KINESALITE_SEQUENCE_HEX_DIGITS = 47
_FUTURE_CREATION_BRIDGED_S = 2.0


def kinesalite_shard_created_s(starting_sequence: str) -> int | None:
    """The creation time (epoch seconds) kinesalite encodes in a shard's ``StartingSequenceNumber``, or None for
    a sequence number in another emulator's format."""
    digits = format(int(starting_sequence), "x")
    if len(digits) != _KINESALITE_SEQUENCE_HEX_DIGITS or digits[0] != "2" or digits[-1] != "2":
        return None
    return int(digits[1:10], 16)


def wait_until_new_shards_exist_now(client, stream: str) -> None:
    """Bridge kinesalite's future-dated children. kinesalite creates the children of a split or merge "1 s from
    now" (whole seconds) and stamps a record put into a shard with max(its clock, the shard's creation time), so
    for up to a second after a reshard the children's records carry an ``ApproximateArrivalTimestamp`` in the
    future. AWS stamps a record when it arrives. A ``Trigger.AvailableNow`` run reads the records that arrived
    before it started, and would leave such records for a later run: wait until every open shard's creation time
    has passed, so records put after a reshard are stamped as AWS stamps them (docs/kinesis-emulators.md)."""
    created = [kinesalite_shard_created_s(s["SequenceNumberRange"]["StartingSequenceNumber"])
               for s in list_shards(client, stream) if "EndingSequenceNumber" not in s["SequenceNumberRange"]]
    latest = max((c for c in created if c is not None), default=None)
    if latest is None:
        return
    wait = latest - time.time()
    if 0 < wait <= _FUTURE_CREATION_BRIDGED_S:  # further ahead is not the future-dating bridged here
        time.sleep(wait + 0.01)


def read_shard_raw(client, stream: str, shard_id: str, *, iterator_type: str = "TRIM_HORIZON",
                   limit: int = 10_000, min_interval_s: float = 0.0, **iterator_args: Any) -> list[dict[str, Any]]:
    """Every record of a shard through a plain ``GetRecords`` loop, until a call returns fewer records than
    ``limit`` with ``MillisBehindLatest == 0`` (or the iterator ends).  The baseline the reader is measured
    against; ``min_interval_s`` spaces calls like the reader does (Kinesis allows 5 reads/s per shard)."""
    iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard_id, ShardIteratorType=iterator_type,
                                         **iterator_args)["ShardIterator"]
    out: list[dict[str, Any]] = []
    last = 0.0
    while iterator:
        wait = last + min_interval_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        last = time.monotonic()
        resp = client.get_records(ShardIterator=iterator, Limit=limit)
        out.extend(resp["Records"])
        if len(resp["Records"]) < limit and resp.get("MillisBehindLatest") == 0:
            break
        iterator = resp.get("NextShardIterator")
    return out


def offset_log(checkpoint: str) -> dict[int, Any]:
    """Every samza-kinesis offset in a Spark query's offset log, by Spark batch id in batch order (the offset
    logged for batch N says what batch N does with each shard: read it from its start, wait for its parents, or
    nothing, drained)."""
    import json
    from pathlib import Path

    from spark_samza_source.kinesis.driver.offset import KinesisOffset
    folder = Path(checkpoint) / "offsets"
    ids = sorted(int(f.name) for f in folder.iterdir() if f.name.isdigit())
    return {i: KinesisOffset.from_json(json.loads((folder / str(i)).read_text().strip().splitlines()[-1]))
            for i in ids}


# ---- moto fixes (resharding as Kinesis does it) ------------------------------------------------------------------
def _patched_methods() -> dict[str, Any]:
    from moto.kinesis.exceptions import InvalidArgumentError
    from moto.kinesis.models import Shard
    from moto.utilities.utils import md5_hash

    def get_shard_for_key(self, partition_key: str, explicit_hash_key: str):
        if not isinstance(partition_key, str) or len(partition_key) > 256:
            raise InvalidArgumentError("partition_key")
        if explicit_hash_key:
            if not isinstance(explicit_hash_key, str) or int(explicit_hash_key) >= 2**128:
                raise InvalidArgumentError("explicit_hash_key")
            key = int(explicit_hash_key)
        else:
            key = int(md5_hash(partition_key.encode("utf-8")).hexdigest(), 16)
        for shard in self.shards.values():
            if shard.is_open and shard.starting_hash <= key <= shard.ending_hash:
                return shard
        return None

    def next_id(self) -> int:
        return max(s._shard_id for s in self.shards.values()) + 1

    def split_shard(self, shard_to_split: str, new_starting_hash_key: str) -> None:
        shard = self.shards[shard_to_split]
        new_start = int(new_starting_hash_key)
        if not shard.is_open:
            raise InvalidArgumentError(f"Shard {shard_to_split} in stream {self.stream_name} has already been "
                                       "merged or split, and thus is not eligible for merging or splitting.")
        if not shard.starting_hash < new_start <= shard.ending_hash:
            raise InvalidArgumentError(f"NewStartingHashKey {new_start} is not inside the hash key range of "
                                       f"{shard_to_split}")
        first = next_id(self)
        low = Shard(first, shard.starting_hash, new_start - 1, parent=shard.shard_id)
        high = Shard(first + 1, new_start, shard.ending_hash, parent=shard.shard_id)
        shard.is_open = False  # the parent keeps its records; new records go to the children
        self.shards[low.shard_id] = low
        self.shards[high.shard_id] = high

    def merge_shards(self, shard_to_merge: str, adjacent_shard_to_merge: str) -> None:
        one, two = self.shards[shard_to_merge], self.shards[adjacent_shard_to_merge]
        if not (one.is_open and two.is_open):
            raise InvalidArgumentError("Shards that were merged or split cannot be merged")
        if one.ending_hash + 1 != two.starting_hash and two.ending_hash + 1 != one.starting_hash:
            raise InvalidArgumentError(adjacent_shard_to_merge)
        child = Shard(next_id(self), min(one.starting_hash, two.starting_hash), max(one.ending_hash, two.ending_hash),
                      parent=one.shard_id, adjacent_parent=two.shard_id)
        one.is_open = two.is_open = False  # both parents keep their records
        self.shards[child.shard_id] = child

    return {"get_shard_for_key": get_shard_for_key, "split_shard": split_shard, "merge_shards": merge_shards}


def _null_iterator_at_shard_end(get_records):
    """Wrap ``KinesisBackend.get_records``: a null ``NextShardIterator`` once a closed shard has been read to its
    last record, as Kinesis does.  Lock-free on purpose: a shard only ever goes from open to closed, and a closed
    shard never gets another record (the fixed routing), so reading ``is_open`` late only delays the null."""
    import functools

    from moto.kinesis.models import decompose_shard_iterator

    @functools.wraps(get_records)
    def wrapper(self, stream_arn, shard_iterator, limit):
        next_iterator, records, millis_behind = get_records(self, stream_arn, shard_iterator, limit)
        stream_name, shard_id, last_sequence = decompose_shard_iterator(next_iterator)
        shard = self.describe_stream(stream_arn=stream_arn, stream_name=stream_name).get_shard(shard_id)
        if not shard.is_open and int(last_sequence) >= int(shard.get_max_sequence_number()):
            next_iterator = None
        return next_iterator, records, millis_behind

    wrapper._samza_null_at_end = True
    return wrapper


_ORIGINAL_GET_RECORDS: list[Any] = []


def apply_moto_kinesis_fixes() -> dict[str, Any]:
    """Make moto's Kinesis reshard like Kinesis (see the module documentation), in this process.

    Returns the original methods (for :func:`moto_kinesis_fixes` to restore them).  Idempotent.
    """
    from moto.kinesis.models import KinesisBackend, Stream

    originals = {name: Stream.__dict__[name] for name in ("get_shard_for_key", "split_shard", "merge_shards")}
    if getattr(Stream, "_samza_fixed", False):
        return originals
    _serialize_kinesis_backend()
    for name, fn in _patched_methods().items():
        setattr(Stream, name, fn)
    if not getattr(KinesisBackend.get_records, "_samza_null_at_end", False):
        _ORIGINAL_GET_RECORDS[:] = [KinesisBackend.get_records]
        KinesisBackend.get_records = _null_iterator_at_shard_end(KinesisBackend.get_records)
    Stream._samza_fixed = True
    return originals


def _serialize_kinesis_backend() -> None:
    """One lock around every moto Kinesis call that reads or changes shards (Kinesis itself is consistent per
    shard), and an O(1) last sequence number.  Kept for the life of the process (idempotent)."""
    from moto.kinesis.models import KinesisBackend, Shard

    from .moto_server import serialize_methods

    serialize_methods(KinesisBackend, ("create_stream", "delete_stream", "describe_stream", "describe_stream_summary",
                                       "list_shards", "get_shard_iterator", "get_records", "put_record",
                                       "put_records", "split_shard", "merge_shards", "update_shard_count"),
                      "_samza_serialized")
    Shard.get_max_sequence_number = lambda self: next(reversed(self.records)) if self.records else 0


@contextlib.contextmanager
def moto_kinesis_fixes() -> Iterator[None]:
    """:func:`apply_moto_kinesis_fixes` for the duration of a ``with`` block (in-process moto servers in tests)."""
    from moto.kinesis.models import Stream

    already = getattr(Stream, "_samza_fixed", False)
    originals = apply_moto_kinesis_fixes()
    try:
        yield
    finally:
        if not already:
            for name, fn in originals.items():
                setattr(Stream, name, fn)
            if _ORIGINAL_GET_RECORDS:
                from moto.kinesis.models import KinesisBackend

                KinesisBackend.get_records = _ORIGINAL_GET_RECORDS.pop()
            Stream._samza_fixed = False


class FaultyEndpoint:
    """A TCP endpoint on loopback in front of ``target`` (``http://host:port``) that misbehaves on purpose, for
    outage tests: its first ``drop_first`` connections are reset at once (as a restarting load balancer does), and
    with ``hang=True`` every connection is accepted and never answered. Later connections are forwarded to
    ``target`` byte for byte. ``accepted`` counts connections, so tests count attempts instead of timing them.

    ``with FaultyEndpoint(moto, drop_first=8) as url: ...``
    """

    def __init__(self, target: str | None, *, drop_first: int = 0, hang: bool = False) -> None:
        import socket
        import threading
        from urllib.parse import urlparse

        self._target = None
        if target is not None:
            parsed = urlparse(target)
            self._target = (parsed.hostname, parsed.port)
        self.drop_first = drop_first
        self.hang = hang
        self.accepted = 0
        self._lock = threading.Lock()
        self._closing = False
        self._held: list = []
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, name="faulty-endpoint", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import socket
        import struct
        import threading

        while not self._closing:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                n = self.accepted
            if self.hang:
                self._held.append(conn)  # never answered, closed at the end
                continue
            if n <= self.drop_first or self._target is None:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
                conn.close()
                continue
            try:
                upstream = socket.create_connection(self._target)
            except OSError:
                conn.close()
                continue
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst) -> None:
        import socket

        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        import socket

        self._closing = True
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() (Linux)
        with contextlib.suppress(OSError):
            self._server.close()
        for conn in self._held:
            with contextlib.suppress(OSError):
                conn.close()

    def __enter__(self) -> FaultyEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def put_round(client, stream: str, per_shard: int, tag: str) -> list:
    """``per_shard`` records into every open shard (routed by explicit hash key, 17 partition keys), data
    ``{tag}-{shardId}-{i}``; the acks, in order."""
    acks = []
    for shard in list_shards(client, stream):
        if "EndingSequenceNumber" in shard["SequenceNumberRange"]:
            continue
        key = shard["HashKeyRange"]["StartingHashKey"]
        acks += put_records(client, stream, [(f"pk-{i % 17}", f"{tag}-{shard['ShardId']}-{i}".encode(), key)
                                             for i in range(per_shard)])
    return acks
