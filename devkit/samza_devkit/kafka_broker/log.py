"""Partition logs, topic metadata and consumer-group offsets on disk.

Layout of ``data_dir``::

    topics/<topic>/topic.json                 name, topic id, partition count, configs
    topics/<topic>/<partition>/log            record batches (magic v2) back to back, as produced,
                                              base offset and partition leader epoch rewritten
    topics/<topic>/<partition>/index          one fixed-size entry per batch (see ``_ENTRY``)
    topics/<topic>/<partition>/log-start      the log start offset (moved by DeleteRecords)
    groups/<hex(group id)>.json               committed offsets of one consumer group

Durability: a batch is written to ``log`` and then its entry to ``index`` with plain ``write(2)``
calls before the Produce response is sent, so an acknowledged batch survives the broker process
dying (it is in the page cache).  ``fsync=True`` additionally fsyncs both files before the
acknowledgement (survives power loss; slow).  Small metadata files are replaced atomically.

Recovery on open: the index is trusted up to its last complete entry whose batch lies entirely
inside ``log`` and whose bytes match the entry's CRC-32 (checked for the last entries; the others are
checked for bounds).  Bytes in ``log`` beyond the last indexed batch (a crash between the two writes,
or a torn write) are scanned batch by batch: a batch is kept only if its length, magic, offset and
CRC-32C are all right; the first bad byte and everything after it are cut.  Nothing torn is ever
served.
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import struct
import time
import uuid
import zlib
from array import array
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.util import calc_crc32c

from .compaction import finish_interrupted_swap

try:  # a C CRC-32C makes validating every produced batch cheap; the pure-Python one is ~10 MB/s
    from crc32c import crc32c as _fast_crc32c  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment
    _fast_crc32c = None

__all__ = [
    "BATCH_HEADER",
    "BatchError",
    "GroupStore",
    "PartitionLog",
    "TopicState",
    "atomic_write_json",
    "crc32c_is_fast",
    "parse_batches",
]

# Record batch v2 header (DefaultRecordBatch.HEADER_STRUCT without the record count).
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
_LOG_OVERHEAD = 12  # base offset + length
_CRC_OFFSET = 17
_ATTR_OFFSET = 21
_MAX_TS_OFFSET = 35
_EPOCH_OFFSET = 12
_ATTR_TIMESTAMP_TYPE = 0x08
_ATTR_CODEC = 0x07
_MIN_BATCH = BATCH_HEADER.size  # 61 bytes, an empty batch

# Index entry: base offset, last offset delta, position in log, batch size, max timestamp,
# zlib CRC-32 of the stored batch bytes (our own integrity check; C-fast unlike CRC-32C).
_ENTRY = struct.Struct(">qiqiqI")
_VERIFY_TAIL_ENTRIES = 32

crc32c_is_fast = _fast_crc32c is not None


class BatchError(Exception):
    """A produced record set is not a sequence of valid v2 record batches."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def parse_batches(records: bytes, verify_crc: bool) -> list[tuple[int, int, int, int]]:
    """Split a produced record set into batches: (start, size, last_offset_delta, max_timestamp)."""
    from .protocol import ApiError

    out = []
    pos, end = 0, len(records)
    if end == 0:
        raise BatchError(ApiError.CORRUPT_MESSAGE, "empty record set")
    while pos < end:
        if end - pos < _MIN_BATCH:
            raise BatchError(ApiError.CORRUPT_MESSAGE, "truncated record batch header")
        (_base, length, _epoch, magic, crc, _attrs, last_delta, _first_ts, max_ts, _pid, _pepoch,
         _seq, _count) = BATCH_HEADER.unpack_from(records, pos)
        if magic != 2:
            raise BatchError(ApiError.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {magic}, only v2")
        size = length + _LOG_OVERHEAD
        if length < _MIN_BATCH - _LOG_OVERHEAD or pos + size > end:
            raise BatchError(ApiError.CORRUPT_MESSAGE, "record batch length does not match the record set")
        if last_delta < 0:
            raise BatchError(ApiError.CORRUPT_MESSAGE, "negative last offset delta")
        if verify_crc:
            view = memoryview(records)[pos + _ATTR_OFFSET:pos + size]
            if _crc32c(view) != crc:
                raise BatchError(ApiError.CORRUPT_MESSAGE, "record batch CRC-32C mismatch")
        out.append((pos, size, last_delta, max_ts))
        pos += size
    return out


def _crc32c(data) -> int:
    if _fast_crc32c is not None:
        return _fast_crc32c(data)
    return calc_crc32c(bytes(data))


def atomic_write_json(path: Path, obj, fsync: bool = True) -> None:
    """Replace ``path`` atomically (write a temp file, rename): readers see the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(obj, fh, sort_keys=True)
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())
    os.replace(tmp, path)


class PartitionLog:
    """One partition: an append-only file of record batches plus an in-memory copy of its index."""

    def __init__(self, directory: Path, fsync: bool = False):
        self.dir = directory
        self.fsync = fsync
        directory.mkdir(parents=True, exist_ok=True)
        self._log_path = directory / "log"
        self._index_path = directory / "index"
        self._start_path = directory / "log-start"
        self._open()
        self.waiters: set = set()

    def _open(self) -> None:
        self.base_offsets = array("q")
        self.positions = array("q")
        self.sizes = array("l")
        self.max_ts = array("q")
        self.prefix_max_ts = array("q")  # running max of max_ts: monotonic, bisectable
        self.next_offset = 0  # log end offset == high watermark (single replica)
        self.log_start_offset = 0
        self.recovered_bytes_cut = 0
        self._recover()
        self._wfd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._ifd = os.open(self._index_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._rfd = os.open(self._log_path, os.O_RDONLY)

    def reload(self) -> None:
        """Re-open the files after compaction replaced them (``compaction.py``); waiters are kept."""
        self.close()
        self._open()

    def persist_log_start(self) -> None:
        """Write the log start offset down, so that a log whose first batches were compacted away keeps it."""
        tmp = self._start_path.with_name("log-start.tmp")
        tmp.write_text(str(self.log_start_offset))
        os.replace(tmp, self._start_path)

    # ----------------------------------------------------------------------------- recovery
    def _recover(self) -> None:
        finish_interrupted_swap(self.dir)
        log_size = self._log_path.stat().st_size if self._log_path.exists() else 0
        raw = self._index_path.read_bytes() if self._index_path.exists() else b""
        entries = [
            _ENTRY.unpack_from(raw, i * _ENTRY.size) for i in range(len(raw) // _ENTRY.size)
        ]
        # Keep the longest prefix of entries that is contiguous in the file, with offsets increasing, and inside
        # the log file.  (Offsets may jump: compaction drops whole batches, compaction.py.)
        good = 0
        expect_pos = 0
        expect_off = entries[0][0] if entries else 0
        for base, delta, pos, size, _ts, _crc in entries:
            if pos != expect_pos or base < expect_off or pos + size > log_size or size < _MIN_BATCH:
                break
            good += 1
            expect_pos = pos + size
            expect_off = base + delta + 1
        entries = entries[:good]
        if entries:
            with open(self._log_path, "rb") as fh:
                # Check the tail entries' bytes; drop from the first mismatch on.
                first_checked = max(0, len(entries) - _VERIFY_TAIL_ENTRIES)
                for i in range(first_checked, len(entries)):
                    base, delta, pos, size, _ts, crc = entries[i]
                    fh.seek(pos)
                    if zlib.crc32(fh.read(size)) != crc:
                        entries = entries[:i]
                        break
        for base, delta, pos, size, ts, _crc in entries:
            self._add_entry(base, delta, pos, size, ts)
        end = entries[-1][2] + entries[-1][3] if entries else 0
        rebuilt = bytearray()
        if log_size > end:
            # Unindexed tail: keep only whole, CRC-valid, offset-contiguous batches.
            with open(self._log_path, "rb") as fh:
                fh.seek(end)
                tail = fh.read()
            pos = 0
            while len(tail) - pos >= _MIN_BATCH:
                (base, length, _e, magic, crc, _a, delta, _f, max_ts, _p, _pe, _s, _n) = (
                    BATCH_HEADER.unpack_from(tail, pos))
                size = length + _LOG_OVERHEAD
                if (magic != 2 or size < _MIN_BATCH or pos + size > len(tail) or delta < 0
                        or (self.base_offsets and base < self.next_offset)
                        or calc_crc32c(bytes(tail[pos + _ATTR_OFFSET:pos + size])) != crc):
                    break
                if not self.base_offsets:
                    self.next_offset = base
                self._add_entry(base, delta, end + pos, size, max_ts)
                rebuilt += _ENTRY.pack(base, delta, end + pos, size, max_ts,
                                       zlib.crc32(tail[pos:pos + size]))
                pos += size
            end += pos
        if log_size > end:
            self.recovered_bytes_cut = log_size - end
            os.truncate(self._log_path, end)
        with open(self._index_path, "wb") as fh:  # rewrite: drops partial or stale entries
            fh.write(b"".join(_ENTRY.pack(*e) for e in entries) + bytes(rebuilt))
            fh.flush()
            os.fsync(fh.fileno())
        if self._start_path.exists():  # (compaction may have removed the batch at the log start: keep it)
            self.log_start_offset = int(self._start_path.read_text().strip() or 0)
        elif self.base_offsets:
            self.log_start_offset = self.base_offsets[0]
        self.log_start_offset = min(self.log_start_offset, self.next_offset)

    def _add_entry(self, base: int, delta: int, pos: int, size: int, max_ts: int) -> None:
        self.base_offsets.append(base)
        self.positions.append(pos)
        self.sizes.append(size)
        self.max_ts.append(max_ts)
        prev = self.prefix_max_ts[-1] if self.prefix_max_ts else -1
        self.prefix_max_ts.append(max(prev, max_ts))
        self.next_offset = base + delta + 1

    # ----------------------------------------------------------------------------- writes
    @property
    def high_watermark(self) -> int:
        return self.next_offset

    @property
    def log_end_position(self) -> int:
        return self.positions[-1] + self.sizes[-1] if self.positions else 0

    def append(self, records: bytes, batches: list[tuple[int, int, int, int]],
               log_append_time: int | None) -> tuple[int, int]:
        """Append validated batches; returns (base offset of the first, log append time or -1).

        ``log_append_time`` (ms) is set for LogAppendTime topics: every batch gets the timestamp-type
        attribute and that max timestamp, and its CRC-32C is recomputed, as Kafka's LogValidator does.
        """
        buf = bytearray(records)
        first = self.next_offset
        pos = self.log_end_position
        offset = first
        new = []
        for start, size, delta, max_ts in batches:
            struct.pack_into(">q", buf, start, offset)
            struct.pack_into(">i", buf, start + _EPOCH_OFFSET, 0)  # leader epoch: always 0
            if log_append_time is not None:
                attrs = struct.unpack_from(">h", buf, start + _ATTR_OFFSET)[0] | _ATTR_TIMESTAMP_TYPE
                struct.pack_into(">h", buf, start + _ATTR_OFFSET, attrs)
                struct.pack_into(">q", buf, start + _MAX_TS_OFFSET, log_append_time)
                struct.pack_into(">I", buf, start + _CRC_OFFSET,
                                 _crc32c(memoryview(buf)[start + _ATTR_OFFSET:start + size]))
                max_ts = log_append_time
            new.append((offset, delta, pos, size, max_ts, zlib.crc32(memoryview(buf)[start:start + size])))
            pos += size
            offset += delta + 1
        # Batches are stored contiguously, so one write for the record set (they are adjacent in it).
        os.write(self._wfd, buf)
        os.write(self._ifd, b"".join(_ENTRY.pack(*e) for e in new))
        if self.fsync:
            os.fsync(self._wfd)
            os.fsync(self._ifd)
        for base, delta, p, size, ts, _crc in new:
            self._add_entry(base, delta, p, size, ts)
        return first, (log_append_time if log_append_time is not None else -1)

    def delete_records(self, offset: int) -> int:
        """Move the log start offset forward (never backward). Returns the new low watermark."""
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            tmp = self._start_path.with_name("log-start.tmp")
            tmp.write_text(str(offset))
            os.replace(tmp, self._start_path)
        return self.log_start_offset

    # ----------------------------------------------------------------------------- reads
    def _batch_index(self, offset: int) -> int:
        """Index of the batch containing ``offset`` (offset must be < next_offset)."""
        return bisect.bisect_right(self.base_offsets, offset) - 1

    def read(self, offset: int, max_bytes: int, min_one: bool, end_offset: int | None = None) -> bytes:
        """Whole stored batches from the one containing ``offset``, at most ``max_bytes`` of them
        (but at least one when ``min_one``), none starting at or after ``end_offset`` (read_committed
        fetches end at the last stable offset, always a batch boundary). Bytes come straight from the log."""
        if end_offset is not None and end_offset < self.next_offset:
            if offset >= end_offset:
                return b""
            # read a log cut at end_offset: the same code with the following batches out of reach
            return self._read_batches(offset, max_bytes, min_one, bisect.bisect_left(self.base_offsets, end_offset))
        return self._read_batches(offset, max_bytes, min_one, len(self.base_offsets))

    def _read_batches(self, offset: int, max_bytes: int, min_one: bool, stop: int) -> bytes:
        if offset >= self.next_offset or not self.base_offsets:
            return b""
        i = max(self._batch_index(offset), 0)
        start = self.positions[i]
        size = self.sizes[i]
        if size > max_bytes and not min_one:
            return b""
        # Extend over following batches while they fit: batch k ends where batch k+1 starts.
        positions, sizes = self.positions, self.sizes
        limit = start + max_bytes
        last = min(bisect.bisect_right(positions, limit, lo=i), stop) - 1
        if last >= i and positions[last] + sizes[last] > limit:
            last -= 1
        end = positions[last] + sizes[last] if last >= i else start + size
        return os.pread(self._rfd, end - start, start)

    def _records_from(self, i: int):
        data = os.pread(self._rfd, self.sizes[i], self.positions[i])
        batch = DefaultRecordBatch(data)
        ts_type_log_append = bool(batch.attributes & _ATTR_TIMESTAMP_TYPE)
        for rec in batch:
            yield rec.offset, (batch.max_timestamp if ts_type_log_append else rec.timestamp)

    def _batch_decodable(self, i: int) -> bool:
        attrs = struct.unpack(">h", os.pread(self._rfd, 2, self.positions[i] + _ATTR_OFFSET))[0]
        codec = attrs & _ATTR_CODEC
        if codec == 0 or codec == 1:  # none, gzip (stdlib)
            return True
        try:
            DefaultRecordBatch(os.pread(self._rfd, self.sizes[i], self.positions[i]))._maybe_uncompress()
            return True
        except Exception:
            return False

    def offset_for_timestamp(self, target: int) -> tuple[int, int]:
        """Kafka's ListOffsets by timestamp: the first offset >= the log start offset whose record
        timestamp is >= target, with that timestamp; (-1, -1) when there is none."""
        n = len(self.base_offsets)
        i = bisect.bisect_left(self.prefix_max_ts, target)  # first batch whose max ts >= target
        if self.log_start_offset > 0 and n:
            i = max(i, self._batch_index(min(self.log_start_offset, self.next_offset - 1)))
        while i < n:
            if self.max_ts[i] >= target:
                if not self._batch_decodable(i):
                    # Codec unavailable here (lz4/snappy/zstd without their Python packages):
                    # answer at batch granularity.
                    return max(self.base_offsets[i], self.log_start_offset), self.max_ts[i]
                for off, ts in self._records_from(i):
                    if off >= self.log_start_offset and ts >= target:
                        return off, ts
            i += 1
        return -1, -1

    def max_timestamp_offset(self) -> tuple[int, int]:
        """KIP-734 (timestamp -3): offset and timestamp of the record with the largest timestamp."""
        if self.next_offset <= self.log_start_offset or not self.base_offsets:
            return -1, -1
        best = max(self.prefix_max_ts[-1], -1)
        lo = self._batch_index(self.log_start_offset) if self.log_start_offset else 0
        for i in range(max(lo, 0), len(self.base_offsets)):
            if self.max_ts[i] == best:
                if not self._batch_decodable(i):
                    return self.base_offsets[i], best
                for off, ts in self._records_from(i):
                    if off >= self.log_start_offset and ts == best:
                        return off, ts
        return self.next_offset - 1, best

    def recent_producer_batches(self, count: int) -> list[tuple[int, int, int, int, int]]:
        """(producer id, epoch, first sequence, last sequence, base offset) of the last ``count``
        batches written by idempotent producers, oldest first: rebuilds producer state on open."""
        out = []
        for i in range(max(0, len(self.base_offsets) - count), len(self.base_offsets)):
            header = os.pread(self._rfd, BATCH_HEADER.size, self.positions[i])
            (base, _l, _e, _m, _c, _a, delta, _f, _t, pid, epoch, seq, _n) = BATCH_HEADER.unpack(header)
            if pid >= 0 and seq >= 0:
                out.append((pid, epoch, seq, (seq + delta) % 2**31, base))
        return out

    def close(self) -> None:
        for fd in (self._wfd, self._ifd, self._rfd):
            try:
                os.close(fd)
            except OSError:
                pass


TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


class TopicState:
    """A topic: id, configs and its partition logs."""

    def __init__(self, directory: Path, name: str, topic_id: uuid.UUID, configs: dict[str, str],
                 partitions: int, fsync: bool):
        self.dir = directory
        self.name = name
        self.topic_id = topic_id
        self.configs = dict(configs)
        self.fsync = fsync
        self.partitions: list[PartitionLog] = []
        self.created_ms = int(time.time() * 1000)
        self.set_partition_count(partitions)

    @property
    def log_append_time(self) -> bool:
        return self.configs.get("message.timestamp.type") == "LogAppendTime"

    @property
    def max_message_bytes(self) -> int:
        return int(self.configs.get("max.message.bytes", "1048588"))

    def set_partition_count(self, count: int) -> None:
        while len(self.partitions) < count:
            self.partitions.append(PartitionLog(self.dir / str(len(self.partitions)), fsync=self.fsync))
        self.save()

    def save(self) -> None:
        atomic_write_json(self.dir / "topic.json", {
            "name": self.name, "topic_id": str(self.topic_id), "partitions": len(self.partitions),
            "configs": self.configs,
        })

    @classmethod
    def create(cls, root: Path, name: str, partitions: int, configs: dict[str, str], fsync: bool):
        directory = root / name
        if directory.exists():  # a creation interrupted before topic.json was written: garbage
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        return cls(directory, name, uuid.uuid4(), configs, partitions, fsync)

    @classmethod
    def load(cls, directory: Path, fsync: bool) -> TopicState:
        meta = json.loads((directory / "topic.json").read_text())
        return cls(directory, meta["name"], uuid.UUID(meta["topic_id"]), meta["configs"],
                   int(meta["partitions"]), fsync)

    def close(self) -> None:
        for p in self.partitions:
            p.close()


class GroupStore:
    """Committed offsets per consumer group, one JSON file per group (rewritten atomically)."""

    def __init__(self, directory: Path, fsync: bool = False):
        self.dir = directory
        self.fsync = fsync
        directory.mkdir(parents=True, exist_ok=True)
        self.groups: dict[str, dict[tuple[str, int], tuple[int, int, str | None]]] = {}
        # groups some consumer is running in (a test's stand-in for membership, which this broker does not
        # implement): group -> that member's id; in memory only, as Kafka forgets members whose sessions end
        self.members: dict[str, str] = {}
        for path in directory.glob("*.json"):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            self.groups[data["group"]] = {
                (t, int(p)): (int(o), int(e), m) for t, p, o, e, m in data["offsets"]
            }

    def _path(self, group: str) -> Path:
        return self.dir / (group.encode("utf-8").hex() + ".json")

    def commit(self, group: str, offsets: dict[tuple[str, int], tuple[int, int, str | None]]) -> None:
        stored = self.groups.setdefault(group, {})
        stored.update(offsets)
        atomic_write_json(self._path(group), {
            "group": group,
            "offsets": [[t, p, o, e, m] for (t, p), (o, e, m) in sorted(stored.items())],
        }, fsync=self.fsync)

    def fetch(self, group: str) -> dict[tuple[str, int], tuple[int, int, str | None]]:
        return self.groups.get(group, {})

    def forget_topic(self, topic: str) -> None:
        """Drop the committed offsets of a deleted topic, as Kafka does."""
        for group, offsets in list(self.groups.items()):
            keys = [k for k in offsets if k[0] == topic]
            if keys:
                for key in keys:
                    del offsets[key]
                self.commit(group, {})
