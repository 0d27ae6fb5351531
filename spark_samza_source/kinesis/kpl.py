"""KPL aggregation: de-aggregate Kinesis records written by the Kinesis Producer Library, and aggregate for tests.

Format (``amazon-kinesis-producer/aggregation-format.md``; the KCL's ``AggregatorUtil`` is the reference reader)::

    f3 89 9a c2  |  protobuf AggregatedRecord  |  MD5(protobuf bytes), 16 bytes

    message AggregatedRecord { repeated string partition_key_table = 1; repeated string explicit_hash_key_table = 2;
                               repeated Record records = 3; }
    message Record { required uint64 partition_key_index = 1; optional uint64 explicit_hash_key_index = 2;
                     required bytes data = 3; repeated Tag tags = 4; }
    message Tag { required string key = 1; optional string value = 2; }

The protobuf subset is decoded here by hand (varints and length-delimited fields; unknown fields of any valid wire
type are skipped, as protobuf does), so the package needs no protobuf dependency.

Behaviour, as the KCL's:

* a record is an aggregate when it starts with the magic, is longer than magic + digest, and the trailing MD5
  matches; otherwise (too short, no magic, bad MD5, protobuf that does not parse, a missing required field) it is
  an ordinary record and passes through unchanged;
* user records are numbered 0, 1, ... in their order in ``records`` (the sub-sequence number); a record that is
  not aggregated is user record 0 of itself;
* an aggregate that holds no user record yields nothing;
* string fields are decoded leniently (invalid UTF-8 becomes U+FFFD), as protobuf-java does for proto2 strings.

One deliberate difference: a partition-key or explicit-hash-key index that points outside its table makes the KCL
log an error and keep the user records decoded before it; here the whole record passes through unchanged instead,
so a corrupt aggregate never yields a partial, silently truncated set of user records.

Filtering user records by the shard's hash-key range (the KCL drops an aggregate whose user records do not all
belong to the shard: the KPL put it on the wrong shard after a reshard and re-put it) is done by the reader with
:func:`effective_hash_key`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.errors import InternalError

__all__ = [
    "MAGIC",
    "DIGEST_SIZE",
    "UserRecord",
    "deaggregate",
    "deaggregate_tuples",
    "aggregate",
    "aggregate_put_entry",
    "effective_hash_key",
    "is_aggregated",
]

MAGIC = b"\xf3\x89\x9a\xc2"
DIGEST_SIZE = 16
_MIN_SIZE = len(MAGIC) + DIGEST_SIZE + 1  # the KCL requires more than magic + digest bytes


class _Corrupt(Exception):
    """The protobuf part does not parse; the record is then treated as not aggregated."""


@dataclass(frozen=True)
class UserRecord:
    """One user record: what the producer put (``partition_key``, optional ``explicit_hash_key``, ``data``)."""

    partition_key: str
    data: bytes
    explicit_hash_key: str | None = None


# ---- decoding ---------------------------------------------------------------------------------------------------
def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _Corrupt("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Corrupt("varint longer than 10 bytes")


def _skip(buf: bytes, pos: int, end: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 2:
        n, pos = _varint(buf, pos, end)
        pos += n
    elif wire == 5:
        pos += 4
    else:  # 3/4 (groups) and 6/7 are not valid here
        raise _Corrupt(f"unsupported wire type {wire}")
    if pos > end:
        raise _Corrupt("field runs past the end of its message")
    return pos


def _delimited(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """(start, stop) of a length-delimited field's payload starting at ``pos``."""
    n, pos = _varint(buf, pos, end)
    stop = pos + n
    if stop > end:
        raise _Corrupt("length-delimited field runs past the end of its message")
    return pos, stop


def _check_tag(buf: bytes, pos: int, end: int) -> None:
    has_key = False
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 2:
            has_key = True
        pos = _skip(buf, pos, end, wire)
    if not has_key:
        raise _Corrupt("Tag without its required key")


def _parse_record(buf: bytes, pos: int, end: int) -> tuple[int, int | None, bytes]:
    pk_index: int | None = None
    ehk_index: int | None = None
    data: bytes | None = None
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # every key of this message fits one byte; one-byte values are the common case
            pos += 1
        else:
            key, pos = _varint(buf, pos, end)
        if key == 0x08 or key == 0x10:  # partition_key_index / explicit_hash_key_index, varint
            if pos < end and buf[pos] < 0x80:
                value = buf[pos]
                pos += 1
            else:
                value, pos = _varint(buf, pos, end)
            if key == 0x08:
                pk_index = value
            else:
                ehk_index = value
        elif key == 0x1A:  # data, length-delimited
            if pos < end and buf[pos] < 0x80:
                stop = pos + 1 + buf[pos]
                pos += 1
                if stop > end:
                    raise _Corrupt("length-delimited field runs past the end of its message")
            else:
                pos, stop = _delimited(buf, pos, end)
            data = buf[pos:stop]
            pos = stop
        elif key == 0x22:  # tags
            start, pos = _delimited(buf, pos, end)
            _check_tag(buf, start, pos)
        else:
            pos = _skip(buf, pos, end, key & 7)
    if pk_index is None or data is None:
        raise _Corrupt("Record without its required partition_key_index or data")
    return pk_index, ehk_index, data


def _parse_aggregate(buf: bytes, pos: int, end: int) -> list[tuple[str, bytes, str | None]]:
    pks: list[str] = []
    ehks: list[str] = []
    raw: list[tuple[int, int | None, bytes]] = []
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 2 and field in (1, 2, 3):
            start, pos = _delimited(buf, pos, end)
            if field == 3:
                raw.append(_parse_record(buf, start, pos))
            else:
                (pks if field == 1 else ehks).append(buf[start:pos].decode("utf-8", "replace"))
        else:
            pos = _skip(buf, pos, end, wire)
    n_pks, n_ehks = len(pks), len(ehks)
    out = []
    for pk_index, ehk_index, data in raw:
        if pk_index >= n_pks or (ehk_index is not None and ehk_index >= n_ehks):
            raise _Corrupt("a key index points outside its table")
        out.append((pks[pk_index], data, ehks[ehk_index] if ehk_index is not None else None))
    return out


def deaggregate_tuples(data: bytes) -> list[tuple[str, bytes, str | None]] | None:
    """:func:`deaggregate` as ``(partition_key, data, explicit_hash_key)`` tuples (the reader's fast path)."""
    if len(data) < _MIN_SIZE or data[:4] != MAGIC:
        return None
    body_end = len(data) - DIGEST_SIZE
    body = data[4:body_end]
    if hashlib.md5(body).digest() != data[body_end:]:
        return None
    try:
        return _parse_aggregate(body, 0, len(body))
    except _Corrupt:
        return None


def deaggregate(data: bytes) -> list[UserRecord] | None:
    """The user records of a KPL aggregate, or None when ``data`` is not a (valid) aggregate.

    None means: use the Kinesis record as it is (one user record, sub-sequence number 0).
    """
    users = deaggregate_tuples(data)
    return None if users is None else [UserRecord(pk, d, ehk) for pk, d, ehk in users]


def is_aggregated(data: bytes) -> bool:
    """True when ``data`` is a valid KPL aggregate (magic, matching MD5, parsable protobuf)."""
    return deaggregate(data) is not None


def effective_hash_key(partition_key: str, explicit_hash_key: str | None) -> int:
    """The 128-bit hash key Kinesis routes a record by: the explicit hash key, else MD5 of the partition key."""
    if explicit_hash_key is not None:
        return int(explicit_hash_key)
    return int.from_bytes(hashlib.md5(partition_key.encode("utf-8")).digest(), "big")


# ---- encoding (tests, helpers, demo) --------------------------------------------------------------------------------
def _put_varint(out: bytearray, value: int) -> None:
    if value < 0:
        raise InternalError("protobuf varints here are unsigned")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put_bytes(out: bytearray, field: int, payload: bytes) -> None:
    _put_varint(out, (field << 3) | 2)
    _put_varint(out, len(payload))
    out += payload


def _as_user_record(item: UserRecord | Sequence) -> UserRecord:
    if isinstance(item, UserRecord):
        return item
    if isinstance(item, (tuple, list)) and len(item) in (2, 3):
        return UserRecord(*item)
    raise TypeError(f"expected a UserRecord or (partition_key, data[, explicit_hash_key]), got {item!r:.80}")


def aggregate(records: Iterable[UserRecord | Sequence]) -> bytes:
    """Encode user records as one KPL aggregate (magic + protobuf + MD5), as the KPL does.

    Records are ``UserRecord``s or ``(partition_key, data[, explicit_hash_key])`` tuples.  Partition keys and
    explicit hash keys are de-duplicated into their tables, like the KPL.  The result is what goes into the
    ``Data`` of one Kinesis record (see :func:`aggregate_put_entry` for its partition and explicit hash keys).
    """
    users = [_as_user_record(r) for r in records]
    pk_index: dict[str, int] = {}
    ehk_index: dict[str, int] = {}
    body = bytearray()
    encoded_records = bytearray()
    for user in users:
        if not isinstance(user.data, (bytes, bytearray, memoryview)):
            raise TypeError(f"user record data must be bytes, got {type(user.data).__name__}")
        if user.partition_key not in pk_index:
            pk_index[user.partition_key] = len(pk_index)
            _put_bytes(body, 1, user.partition_key.encode("utf-8"))
        rec = bytearray()
        _put_varint(rec, 1 << 3)
        _put_varint(rec, pk_index[user.partition_key])
        if user.explicit_hash_key is not None:
            if user.explicit_hash_key not in ehk_index:
                ehk_index[user.explicit_hash_key] = len(ehk_index)
                _put_bytes(body, 2, user.explicit_hash_key.encode("ascii"))
            _put_varint(rec, 2 << 3)
            _put_varint(rec, ehk_index[user.explicit_hash_key])
        _put_bytes(rec, 3, bytes(user.data))
        _put_bytes(encoded_records, 3, bytes(rec))
    body += encoded_records
    payload = bytes(body)
    return MAGIC + payload + hashlib.md5(payload).digest()


def aggregate_put_entry(records: Iterable[UserRecord | Sequence]) -> dict[str, object]:
    """A ``PutRecords`` entry carrying ``records`` as one aggregate, routed like the KPL routes it: partition key of
    the first user record, explicit hash key = the first user record's effective hash key."""
    users = [_as_user_record(r) for r in records]
    if not users:
        raise InternalError("an aggregate needs at least one user record")
    first = users[0]
    return {
        "Data": aggregate(users),
        "PartitionKey": first.partition_key,
        "ExplicitHashKey": str(effective_hash_key(first.partition_key, first.explicit_hash_key)),
    }
