"""KPL aggregation: encode/decode round trip, the KCL's pass-through rules for non-aggregated and corrupt records."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_samza_source.core.errors import InternalError
from spark_samza_source.kinesis.kpl import (
    DIGEST_SIZE,
    MAGIC,
    UserRecord,
    aggregate,
    aggregate_put_entry,
    deaggregate,
    deaggregate_tuples,
    effective_hash_key,
    is_aggregated,
)

hash_keys = st.integers(min_value=0, max_value=2**128 - 1).map(str)
user_records = st.builds(
    UserRecord,
    partition_key=st.text(min_size=1, max_size=20),
    data=st.binary(max_size=300),
    explicit_hash_key=st.none() | hash_keys,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(user_records, min_size=1, max_size=40))
def test_round_trip(records):
    blob = aggregate(records)
    assert blob[:4] == MAGIC
    assert deaggregate(blob) == records
    assert deaggregate_tuples(blob) == [(r.partition_key, r.data, r.explicit_hash_key) for r in records]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=50))
def test_partition_keys_are_deduplicated_into_the_table(keys):
    blob = aggregate([(k, b"x") for k in keys])
    # one table entry per distinct key: field 1, length 1, the key
    body = blob[4:-DIGEST_SIZE]
    for k in set(keys):
        assert body.count(b"\x0a\x01" + k.encode()) == 1
    assert [r.partition_key for r in deaggregate(blob)] == keys


def _reframe(body: bytes) -> bytes:
    """magic + body + a correct MD5: corrupt protobuf that passes the digest check."""
    return MAGIC + body + hashlib.md5(body).digest()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(data):
    out = deaggregate(data)
    assert out is None or isinstance(out, list)
    out = deaggregate(_reframe(data))
    assert out is None or all(isinstance(r, UserRecord) for r in out)


def test_non_aggregated_records_pass_through():
    assert deaggregate(b"") is None
    assert deaggregate(b"plain json {}") is None
    assert deaggregate(MAGIC) is None
    assert deaggregate(MAGIC + b"\x00" * DIGEST_SIZE) is None  # not longer than magic + digest (KCL rule)
    assert not is_aggregated(b"hello")


def test_bad_md5_passes_through():
    blob = bytearray(aggregate([("k", b"v1"), ("k", b"v2")]))
    assert deaggregate(bytes(blob)) == [UserRecord("k", b"v1"), UserRecord("k", b"v2")]
    blob[-1] ^= 0xFF
    assert deaggregate(bytes(blob)) is None
    blob = bytearray(aggregate([("k", b"v1")]))
    blob[10] ^= 0x01  # corrupt the body: digest no longer matches
    assert deaggregate(bytes(blob)) is None


@pytest.mark.parametrize(
    "body, why",
    [
        (b"\x1a\x02\x1a\x00", "record without partition_key_index"),
        (b"\x0a\x01k\x1a\x02\x08\x00", "record without data"),
        (b"\x0a\x01k\x1a\x04\x08\x01\x1a\x00", "partition key index outside the table"),
        (b"\x0a\x01k\x1a\x06\x08\x00\x10\x00\x1a\x00", "explicit hash key index outside the table"),
        (b"\x0a\x05k", "length runs past the end"),
        (b"\x0a\x01k\x1a\x08\x08\x00\x1a\x00\x22\x02\x12\x00", "tag without its required key"),
        (b"\x0b", "group wire type"),
        (b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "varint longer than 10 bytes"),
    ],
)
def test_corrupt_protobuf_passes_through(body, why):
    assert deaggregate(_reframe(body)) is None, why


def test_unknown_fields_and_tags_are_skipped():
    # record: pk index 0, data "v", a tag {key "t", value "u"}, an unknown varint field 9 and fixed32 field 10
    record = b"\x08\x00\x1a\x01v\x22\x06\x0a\x01t\x12\x01u\x48\x05\x55\x01\x02\x03\x04"
    body = b"\x0a\x01k" + b"\x1a" + bytes([len(record)]) + record + b"\x21" + b"\x00" * 8  # + unknown fixed64 field 4
    assert deaggregate(_reframe(body)) == [UserRecord("k", b"v")]


def test_empty_aggregate_yields_no_user_record():
    assert deaggregate(_reframe(b"\x0a\x01k")) == []
    assert aggregate([]) != b"" and deaggregate(aggregate([])) is None  # an empty body is too short to be one


def test_invalid_utf8_keys_are_decoded_leniently():
    body = b"\x0a\x02\xff\xfe\x1a\x05\x08\x00\x1a\x01v"
    (rec,) = deaggregate(_reframe(body))
    assert rec.partition_key == "\ufffd\ufffd" and rec.data == b"v"


def test_effective_hash_key_and_put_entry():
    assert effective_hash_key("k", "42") == 42
    assert effective_hash_key("k", None) == int(hashlib.md5(b"k").hexdigest(), 16)
    entry = aggregate_put_entry([("p1", b"a"), ("p2", b"b", "7")])
    assert entry["PartitionKey"] == "p1"
    assert entry["ExplicitHashKey"] == str(int(hashlib.md5(b"p1").hexdigest(), 16))
    assert deaggregate(entry["Data"]) == [UserRecord("p1", b"a"), UserRecord("p2", b"b", "7")]
    with pytest.raises(InternalError):  # the encoder serves our own tools: an empty aggregate is their bug
        aggregate_put_entry([])
    with pytest.raises(TypeError):
        aggregate([("k",)])
