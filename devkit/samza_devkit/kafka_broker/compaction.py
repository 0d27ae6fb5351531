"""Log compaction for topics with ``cleanup.policy`` ``compact`` or ``compact,delete``, as Kafka's LogCleaner does it.

What a compaction pass of a partition keeps (Kafka's ``LogCleaner.shouldRetainRecord`` and
``MemoryRecords.filterTo``):

- of each key, only the record with the highest offset; records without a key are dropped (a compacted topic
  refuses them on produce, see ``keyless_record_error``, so only records written before the topic became compacted
  could have none);
- a tombstone (null value) stays while its batch has no delete horizon or the horizon is still ahead; the first
  pass that keeps a tombstone stamps its batch with ``now + delete.retention.ms`` as Kafka does since KIP-534
  (attribute bit 6, the batch's base timestamp holding the horizon, record timestamp deltas relative to it), so a
  tombstone is removed by the first pass at or after that horizon, and a tombstone younger than
  ``delete.retention.ms`` is never removed;
- every record keeps its offset: a rewritten batch keeps its base offset and its last offset delta (Kafka's
  ``overrideLastOffset``), so a consumer's position moves past removed offsets, and the log end offset never moves;
- a batch left without records is dropped, except the last batch of each idempotent producer, which stays as an
  empty batch header (record count 0) for producer state, as Kafka keeps it; consumers see such empty batches
  from Kafka too;
- the last batch of the log is never cleaned: it stands for Kafka's active segment, which the cleaner never
  touches and which holds the log end offset.  This is Kafka with the smallest segments (``segment.bytes`` so small
  that each batch rolls a segment of its own): everything but the active segment is cleanable.  So the offset
  before the high watermark always holds a record, as on Kafka, and the log end offset survives restarts;
- batches of transactions (transactional or control bit) are copied unchanged and take no part in the key map
  (aborted-record and marker removal belong to transaction support): a key whose newest record is transactional
  keeps its older non-transactional records -- more than Kafka keeps, never less.

Simplification, documented: the cleanable part is every batch but the last at the time of the pass (Kafka also
stops before the first unstable offset and records younger than ``min.compaction.lag.ms``).
``min.cleanable.dirty.ratio``, ``max.compaction.lag.ms``, ``min.compaction.lag.ms`` and ``segment.*`` are stored
but not enforced; passes run when asked
(``KafkaDevBroker.compact``) or every ``compaction_interval_s``.  Rewritten batches are written uncompressed (Kafka
re-compresses with the original codec), with a new CRC-32C; the log start offset is not moved by compaction.

Crash safety: the compacted log and index are written to ``<partition>/compacted.tmp/``, fsynced, and the
directory renamed to ``<partition>/compacted/`` (the commit point); the files are then moved over ``log`` and
``index``.  ``finish_interrupted_swap`` (called when a partition is opened) completes a committed swap and
discards an uncommitted one, so a crash at any point leaves either the old or the new log, never a mix.
"""

from __future__ import annotations

import os
import shutil
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch

__all__ = ["CompactionResult", "compact_partition", "finish_interrupted_swap", "is_compacted",
           "keyless_record_error"]

_HEADER = struct.Struct(">qiibIhiqqqhii")  # the v2 batch header, as log.BATCH_HEADER
_ENTRY = struct.Struct(">qiqiqI")  # an index entry, as log._ENTRY
_ATTRS_AFTER_CRC = 21  # the CRC-32C covers the batch from the attributes on
_ATTR_TIMESTAMP_TYPE = 0x08
_ATTR_TRANSACTIONAL = 0x10
_ATTR_CONTROL = 0x20
_ATTR_DELETE_HORIZON = 0x40
_SWAP_TMP = "compacted.tmp"
_SWAP = "compacted"


def is_compacted(configs: dict[str, str]) -> bool:
    """``cleanup.policy`` lists ``compact`` (``compact`` or ``compact,delete``)."""
    return "compact" in [p.strip() for p in configs.get("cleanup.policy", "delete").split(",")]


def keyless_record_error(records: bytes, batches) -> tuple[int, str] | None:
    """(index of the first record without a key, Kafka's message) in a produced record set, or None.

    Kafka's LogValidator refuses such a record for a compacted topic with INVALID_RECORD and a record error naming
    its index in the request.  Batches whose codec has no Python package here (lz4/snappy/zstd) are not checked."""
    index = 0
    for start, size, _delta, _max_ts in batches:
        try:
            keys = [record.key for record in DefaultRecordBatch(records[start:start + size])]
        except Exception:  # the codec is missing here: stored unchecked, as every other batch of such a codec
            return None
        for key in keys:
            if key is None:
                return index, "Compacted topic cannot accept message without key"
            index += 1
    return None


@dataclass
class CompactionResult:
    """What one pass did to one partition."""

    records_before: int = 0
    records_after: int = 0
    tombstones_removed: int = 0
    batches_dropped: int = 0
    batches_rewritten: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Batch:
    header: tuple
    data: bytes

    @property
    def attrs(self) -> int:
        return self.header[5]

    @property
    def untouchable(self) -> bool:
        return bool(self.attrs & (_ATTR_TRANSACTIONAL | _ATTR_CONTROL))

    @property
    def producer_id(self) -> int:
        return self.header[9]

    @property
    def delete_horizon(self) -> int | None:
        return self.header[7] if self.attrs & _ATTR_DELETE_HORIZON else None


def compact_partition(plog, delete_retention_ms: int, now_ms: int | None = None) -> CompactionResult:
    """One compaction pass over ``plog`` (a ``log.PartitionLog``), replacing its files and reloading it."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    batches = [_Batch(_HEADER.unpack_from(d), d) for d in _stored_batches(plog)]
    latest = _latest_offsets(batches)
    keep_empty = _batches_kept_when_empty(batches)
    result = CompactionResult()
    out: list[bytes] = []
    for i, batch in enumerate(batches):
        result.records_before += batch.header[12]
        active = i == len(batches) - 1
        kept = batch.data if batch.untouchable or active else _clean(batch, latest, now, delete_retention_ms,
                                                             i in keep_empty, result)
        if kept is None:
            result.batches_dropped += 1
            continue
        result.records_after += _HEADER.unpack_from(kept)[12]
        out.append(kept)
    _swap_in(plog, out)
    return result


def _stored_batches(plog) -> list[bytes]:
    with open(plog.dir / "log", "rb") as fh:
        return [_pread(fh, plog.positions[i], plog.sizes[i]) for i in range(len(plog.base_offsets))]


def _pread(fh, pos: int, size: int) -> bytes:
    fh.seek(pos)
    return fh.read(size)


def _latest_offsets(batches: list[_Batch]) -> dict[bytes, int]:
    """Key -> offset of its newest record (Kafka's offset map), over the batches a pass may clean."""
    latest: dict[bytes, int] = {}
    for batch in batches:
        if batch.untouchable:
            continue
        for record in DefaultRecordBatch(batch.data):
            if record.key is not None:
                latest[record.key] = record.offset
    return latest


def _batches_kept_when_empty(batches: list[_Batch]) -> set[int]:
    """Indexes of the batches kept as empty headers: each idempotent producer's last batch."""
    last_of_producer: dict[int, int] = {}
    for i, batch in enumerate(batches):
        if batch.producer_id >= 0:
            last_of_producer[batch.producer_id] = i
    return set(last_of_producer.values())


def _clean(batch: _Batch, latest: dict[bytes, int], now: int, delete_retention_ms: int, keep_empty: bool,
           result: CompactionResult) -> bytes | None:
    """The batch after cleaning: unchanged bytes, a rewritten batch, an empty header, or None (dropped)."""
    records = list(DefaultRecordBatch(batch.data))
    horizon = batch.delete_horizon
    kept = []
    for record in records:
        if record.key is None or latest.get(record.key) != record.offset:
            continue
        if record.value is None and horizon is not None and now >= horizon:
            result.tombstones_removed += 1
            continue
        kept.append(record)
    has_tombstone = any(r.value is None for r in kept)
    if len(kept) == len(records) and not (has_tombstone and horizon is None):
        return batch.data
    if not kept:
        return _empty_header(batch) if keep_empty else None
    result.batches_rewritten += 1
    if has_tombstone and horizon is None:
        horizon = now + delete_retention_ms
    return _rewrite(batch, kept, horizon if has_tombstone else None)


def _empty_header(batch: _Batch) -> bytes:
    """Kafka's ``DefaultRecordBatch.writeEmptyHeader``: the header alone, offsets and producer fields kept."""
    (base, _len, epoch, magic, _crc, attrs, delta, _first, max_ts, pid, pepoch, seq, _n) = batch.header
    attrs = attrs & (_ATTR_TIMESTAMP_TYPE | _ATTR_TRANSACTIONAL | _ATTR_CONTROL)
    return _seal(bytearray(_HEADER.pack(base, _HEADER.size - 12, epoch, magic, 0, attrs, delta, max_ts, max_ts,
                                        pid, pepoch, seq, 0)))


def _rewrite(batch: _Batch, kept: list, horizon: int | None) -> bytes:
    """A batch of ``kept`` at their own offsets, uncompressed, base offset and last offset delta unchanged."""
    (base, _len, epoch, magic, _crc, attrs, delta, _first, max_ts, pid, pepoch, seq, _n) = batch.header
    log_append = bool(attrs & _ATTR_TIMESTAMP_TYPE)
    attrs = attrs & (_ATTR_TIMESTAMP_TYPE | _ATTR_TRANSACTIONAL | _ATTR_CONTROL)  # codec none
    if horizon is not None:
        attrs |= _ATTR_DELETE_HORIZON
    first_ts = horizon if horizon is not None else kept[0].timestamp
    if not log_append:  # CreateTime: the retained records' own maximum, as MemoryRecordsBuilder computes it
        max_ts = max(r.timestamp for r in kept)
    body = b"".join(_encode_record(r, r.offset - base, 0 if log_append else r.timestamp - first_ts) for r in kept)
    header = _HEADER.pack(base, _HEADER.size - 12 + len(body), epoch, magic, 0, attrs, delta, first_ts, max_ts,
                          pid, pepoch, seq, len(kept))
    return _seal(bytearray(header + body))


def _seal(buf: bytearray) -> bytes:
    from .log import _crc32c

    struct.pack_into(">I", buf, 17, _crc32c(memoryview(buf)[_ATTRS_AFTER_CRC:]))
    return bytes(buf)


def _encode_record(record, offset_delta: int, timestamp_delta: int) -> bytes:
    parts = [b"\x00", _varint(timestamp_delta), _varint(offset_delta), _bytes(record.key), _bytes(record.value),
             _varint(len(record.headers))]
    for key, value in record.headers:
        parts += [_bytes(key.encode("utf-8")), _bytes(value)]
    body = b"".join(parts)
    return _varint(len(body)) + body


def _bytes(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def _varint(value: int) -> bytes:
    """Zig-zag varint (the record format's varint and varlong)."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# ------------------------------------------------------------------------------------------ swapping files
def _swap_in(plog, batches: list[bytes]) -> None:
    """Replace ``plog``'s log and index by ``batches`` crash-safely (module docstring) and reload it."""
    staging = plog.dir / _SWAP_TMP
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    entries, pos = [], 0
    for data in batches:
        header = _HEADER.unpack_from(data)
        entries.append(_ENTRY.pack(header[0], header[6], pos, len(data), header[8], zlib.crc32(data)))
        pos += len(data)
    _write_synced(staging / "log", b"".join(batches))
    _write_synced(staging / "index", b"".join(entries))
    plog.persist_log_start()  # compaction never moves the log start, though the first batch may be gone
    os.replace(staging, plog.dir / _SWAP)
    _fsync_dir(plog.dir)
    finish_interrupted_swap(plog.dir)
    plog.reload()


def finish_interrupted_swap(directory: Path) -> None:
    """Complete a committed swap (``compacted/`` exists), discard an uncommitted one (``compacted.tmp/``)."""
    shutil.rmtree(directory / _SWAP_TMP, ignore_errors=True)
    committed = directory / _SWAP
    if not committed.is_dir():
        return
    for name in ("log", "index"):
        if (committed / name).exists():
            os.replace(committed / name, directory / name)
    _fsync_dir(directory)
    shutil.rmtree(committed, ignore_errors=True)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
