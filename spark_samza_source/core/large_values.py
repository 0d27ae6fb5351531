"""Stored values of any size on every store: large values are compressed, cut into chunks and published by one
small pointer record, so no store's item limit is reached and no reader ever sees half of a new version.

Why: the job model of a ``GroupByPartitionFixedTasks`` job over 10,000 partitions is 553 KB of JSON (1.04 MB with
``GroupBySystemStreamPartition``), and DynamoDB refuses items over 400 KB. Compression alone shrinks those 20-30
times (zlib: 28 KB and 37 KB) but is no bound: a model of some hundred thousand partitions, or of long topic names
that compress worse, would reach the limit again. Chunks bound every item; compression keeps their count (and the
store calls per read) at one for every job measured (docs/performance.md). Splitting per stream was not chosen:
it would bound a record by the largest stream, not by a constant, and only the job model has streams to split by.

Layout. A value whose canonical JSON text is at most :data:`INLINE_MAX_BYTES` is stored as it always was (the
format every earlier release wrote and reads: small jobs see no change). A larger one is stored as

- chunks in namespace ``value-chunks``, key ``<namespace>/<key>/<version id>/<index, 6 digits>``, value
  ``{"chunkOf": <version id>, "index": i, "data": <base64 of part i of the zlib-compressed JSON text>}``;
- then, under its own namespace and key, the pointer
  ``{"chunkedValue": 1, "id": <version id>, "chunks": n, "encoding": "zlib", "size": <JSON bytes>,
  "sha256": <hex digest of the JSON text>}``.

One version, atomically: the chunks of a new version go under a fresh version id first, and the pointer is
flipped by one put of one small record (atomic on every store); only then are the replaced version's chunks
deleted. A reader follows the pointer it read: one that reads it before the flip reads the old version whole,
one after it the new one whole. A reader whose chunk vanished under it (the writer cleaned up the version it was
reading) reads the pointer again and follows the new one. A chunk still missing under an unchanged pointer, or
chunks that do not add up to the pointer's digest, are damage: :func:`metadata_value_invalid` naming the pointer
and the chunk, which the kind's reader turns into its own verdict (``core/damage.py``, docs/guarantees.md): the
job model fails, the checkpoint mirror skips the record. A pointer of a newer format raises
``SAMZA_FORMAT_VERSION_UNKNOWN``. A writer that dies between its chunks and its flip leaves chunks no pointer
names: never read, and left in place (one version's chunks, a few hundred KB at most; their keys start with the
pointer's namespace and key). Finding them would take a listing of the chunk namespace, which reads every chunk's
value on these stores: too dear for a write path that runs at commit.

Like the other store classes in ``core/`` it does no I/O of its own: everything goes through the
``MetadataStore`` it is given, so the memory, file, object, S3 and DynamoDB stores behave the same.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
import zlib
from dataclasses import dataclass
from typing import Any

from ..options.namespaces import VALUE_CHUNKS
from . import errors
from .store import DamagedRecord, JsonValue, MetadataStore, StoreScan, is_damage

__all__ = ["CHUNK_CHARS", "INLINE_MAX_BYTES", "LargeValues", "Pointer", "canonical_text", "encode_chunks",
           "is_pointer"]

#: the pointer format this release writes and reads
POINTER_FORMAT = 1
#: values whose JSON text is at most this many bytes are stored inline, in the format of every earlier release:
#: a quarter of DynamoDB's 400 KB item limit, so an inline item never comes near it
INLINE_MAX_BYTES = 100 * 1024
#: base64 characters per chunk: 256 KiB, under DynamoDB's 400 KB item with its keys and attribute names
CHUNK_CHARS = 256 * 1024
_MAX_RESOLVE_ATTEMPTS = 3
_POINTER_KEY = "chunkedValue"
_UNREAD = object()  # put's ``replaced`` when the caller has not read the record it replaces


def canonical_text(value: JsonValue) -> bytes:
    """The value's JSON text as every writer spells it (sorted, compact), whose digest the pointer holds."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def is_pointer(raw: Any) -> bool:
    """True for a stored pointer record (of any format version), false for an inline value."""
    return isinstance(raw, dict) and _POINTER_KEY in raw


@dataclass(frozen=True)
class Pointer:
    """The small record that publishes one version of a chunked value."""

    id: str
    chunks: int
    size: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {_POINTER_KEY: POINTER_FORMAT, "id": self.id, "chunks": self.chunks, "encoding": "zlib",
                "size": self.size, "sha256": self.sha256}

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Pointer:
        version = raw.get(_POINTER_KEY)
        if isinstance(version, int) and not isinstance(version, bool) and version > POINTER_FORMAT:
            raise errors.format_version_unknown(
                f"{where}: chunked value format {version} is newer than this release understands "
                f"({POINTER_FORMAT}); upgrade spark-samza-source")
        ok = (version == POINTER_FORMAT and raw.get("encoding") == "zlib" and isinstance(raw.get("id"), str)
              and raw["id"].isalnum() and _count(raw.get("chunks"), 1) and _count(raw.get("size"), 0)
              and isinstance(raw.get("sha256"), str) and len(raw["sha256"]) == 64)
        if not ok:
            raise errors.metadata_value_invalid(f"{where}: not a chunked-value pointer: {json.dumps(raw)[:300]}")
        return cls(raw["id"], raw["chunks"], raw["size"], raw["sha256"])


def _count(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def encode_chunks(text: bytes, chunk_chars: int = CHUNK_CHARS) -> list[str]:
    """The base64 parts of the compressed ``text``, each at most ``chunk_chars`` long."""
    data = base64.b64encode(zlib.compress(text, 6)).decode("ascii")
    return [data[i:i + chunk_chars] for i in range(0, len(data), chunk_chars)] or [""]


def _chunk_key(namespace: str, key: str, version_id: str, index: int) -> str:
    return f"{namespace}/{key}/{version_id}/{index:06d}"


class LargeValues:
    """Reads and writes values of any size under (namespace, key) of one store, in the layout above."""

    def __init__(self, store: MetadataStore, *, inline_max_bytes: int = INLINE_MAX_BYTES,
                 chunk_chars: int = CHUNK_CHARS) -> None:
        self._store = store
        self._inline_max = inline_max_bytes
        self._chunk_chars = chunk_chars

    @property
    def store(self) -> MetadataStore:
        return self._store

    # ---- writing ----------------------------------------------------------------------------------------------
    def put(self, namespace: str, key: str, value: JsonValue, *, replaced: Any = _UNREAD) -> JsonValue:
        """Store ``value`` as one version and return the record as stored (the value itself, or its pointer).

        ``replaced`` is the record it replaces as stored (None: absent) when the caller knows it, which saves a
        read; otherwise the store is asked, so that a replaced version's chunks are deleted."""
        text = canonical_text(value)
        if replaced is _UNREAD:
            replaced = self._store.get(namespace, key)
        record = value
        if len(text) > self._inline_max:
            record = self._write_chunks(namespace, key, text).to_json()
        self._store.put(namespace, key, record)  # for a pointer, the flip: readers see the new version whole
        self._delete_chunks_of(namespace, key, replaced)
        return record

    def _write_chunks(self, namespace: str, key: str, text: bytes) -> Pointer:
        parts = encode_chunks(text, self._chunk_chars)
        version_id = uuid.uuid4().hex
        for index, data in enumerate(parts):
            self._store.put(VALUE_CHUNKS, _chunk_key(namespace, key, version_id, index),
                            {"chunkOf": version_id, "index": index, "data": data})
        return Pointer(version_id, len(parts), len(text), hashlib.sha256(text).hexdigest())

    def delete_if_equal(self, namespace: str, key: str, raw: Any) -> bool:
        """Remove the record if it still is ``raw`` (as stored: a pointer or an inline value), then its chunks."""
        removed = self._store.delete_if_equal(namespace, key, raw)
        if removed:
            self._delete_chunks_of(namespace, key, raw)
        return removed

    def _delete_chunks_of(self, namespace: str, key: str, raw: Any) -> None:
        """Delete the chunks of a replaced pointer (nothing for an inline value or an unreadable pointer: the
        chunks of a damaged one are left for its repair to look at)."""
        if not is_pointer(raw):
            return
        try:
            old = Pointer.from_json(raw, self._where(namespace, key))
        except errors.SamzaSourceError:
            return
        for index in range(old.chunks):
            self._store.delete(VALUE_CHUNKS, _chunk_key(namespace, key, old.id, index))

    # ---- reading ----------------------------------------------------------------------------------------------
    def get(self, namespace: str, key: str) -> JsonValue | None:
        """The value under ``key`` (None when absent), whole, whichever format it is stored in."""
        return self.resolve(namespace, key, self._store.get(namespace, key))

    def resolve(self, namespace: str, key: str, raw: Any) -> JsonValue:
        """The value a raw record stands for: itself when inline, else the version its pointer publishes."""
        for _ in range(_MAX_RESOLVE_ATTEMPTS):
            if not is_pointer(raw):
                return raw
            pointer = Pointer.from_json(raw, self._where(namespace, key))
            parts = self._read_chunks(namespace, key, pointer)
            if parts is not None:
                return self._decode(namespace, key, pointer, parts)
            again = self._store.get(namespace, key)
            if again == raw:  # the same version, and a chunk of it missing: damage, not a race
                missing = self._missing_chunk(namespace, key, pointer)
                raise errors.metadata_value_invalid(
                    f"{self._where(namespace, key)}: chunk {missing} of the {pointer.chunks} of stored version "
                    f"{pointer.id} is missing (namespace {VALUE_CHUNKS!r}, key "
                    f"{_chunk_key(namespace, key, pointer.id, missing)!r})")
            raw = again  # a writer published a newer version and removed the one read: follow the new pointer
        raise errors.metadata_write_contended(
            f"{self._where(namespace, key)}: replaced {_MAX_RESOLVE_ATTEMPTS} times while it was being read")

    def scan(self, namespace: str) -> tuple[StoreScan, dict[str, Any]]:
        """The namespace's records with pointers resolved (a damaged chunk set lands among the damaged records,
        beside the store's own), and the raw records as stored, for conditional deletes."""
        found = self._store.scan(namespace)
        resolved = StoreScan(damaged=list(found.damaged))
        for key, raw in found.values.items():
            try:
                resolved.values[key] = self.resolve(namespace, key, raw)
            except Exception as exc:
                if not is_damage(exc):
                    raise
                resolved.damaged.append(DamagedRecord(namespace, key, f"key {key!r:.200}", exc))
        return resolved, found.values

    def _read_chunks(self, namespace: str, key: str, pointer: Pointer) -> list[str] | None:
        parts = []
        for index in range(pointer.chunks):
            chunk = self._store.get(VALUE_CHUNKS, _chunk_key(namespace, key, pointer.id, index))
            if chunk is None:
                return None
            if not (isinstance(chunk, dict) and chunk.get("chunkOf") == pointer.id and chunk.get("index") == index
                    and isinstance(chunk.get("data"), str)):
                raise errors.metadata_value_invalid(
                    f"{self._where(namespace, key)}: chunk {index} of stored version {pointer.id} is not that "
                    f"chunk: {json.dumps(chunk)[:200]}")
            parts.append(chunk["data"])
        return parts

    def _missing_chunk(self, namespace: str, key: str, pointer: Pointer) -> int:
        for index in range(pointer.chunks):
            if self._store.get(VALUE_CHUNKS, _chunk_key(namespace, key, pointer.id, index)) is None:
                return index
        return 0

    def _decode(self, namespace: str, key: str, pointer: Pointer, parts: list[str]) -> JsonValue:
        where = self._where(namespace, key)
        try:
            text = zlib.decompress(base64.b64decode("".join(parts), validate=True))
        except (binascii.Error, ValueError, zlib.error) as exc:
            raise errors.metadata_value_invalid(f"{where}: the {pointer.chunks} chunk(s) of stored version "
                                                f"{pointer.id} do not decode ({exc})") from None
        if len(text) != pointer.size or hashlib.sha256(text).hexdigest() != pointer.sha256:
            raise errors.metadata_value_invalid(
                f"{where}: the {pointer.chunks} chunk(s) of stored version {pointer.id} do not add up to the value "
                "its pointer names (size or sha256 differ)")
        return json.loads(text)

    def _where(self, namespace: str, key: str) -> str:
        return (f"chunked value at key {key!r:.200} of namespace {namespace!r} of job {self._store.job_name!r} in "
                f"metadata store {self._store.uri}")
