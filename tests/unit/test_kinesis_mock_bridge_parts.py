"""The pure parts of the devkit's kinesis-mock bridge, without servers: event-stream encoding (checked by botocore's
decoder, which validates lengths and both CRCs), splitting a byte stream that arrives in arbitrary pieces, and
reading the stream a request or ARN names."""

from __future__ import annotations

import struct

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from samza_devkit.aws_event_stream import MessageSplitter, encode_message, event_message, exception_message
from samza_devkit.kinesis_shard_catalog import DEFAULT_ACCOUNT, StreamRef, child_shards_of

_AUTH = ("AWS4-HMAC-SHA256 Credential={key}/20261126/eu-west-1/kinesis/aws4_request, "
         "SignedHeaders=host;x-amz-date, Signature=abc")


def test_encoded_messages_decode_with_botocore_and_a_flipped_bit_is_caught():
    initial = encode_message({":message-type": "event", ":event-type": "initial-response"}, b"{}")
    event = event_message("SubscribeToShardEvent", {"Records": [], "MillisBehindLatest": 0})
    decoder = EventStreamBuffer()
    decoder.add_data(initial + event)
    first, second = list(decoder)
    assert first.headers == {":message-type": "event", ":event-type": "initial-response"} and first.payload == b"{}"
    assert second.headers[":content-type"] == "application/json"
    assert second.payload == b'{"Records":[],"MillisBehindLatest":0}'
    assert struct.unpack(">I", initial[:4])[0] == len(initial)
    corrupted = EventStreamBuffer()
    corrupted.add_data(initial[:-5] + bytes([initial[-5] ^ 1]) + initial[-4:])  # a payload bit: message CRC
    with pytest.raises(ChecksumMismatch):
        list(corrupted)


def test_an_exception_message_is_what_botocore_reports_as_an_error():
    decoder = EventStreamBuffer()
    decoder.add_data(exception_message("ResourceInUseException", "taken over"))
    (message,) = list(decoder)
    response = message.to_response_dict()
    assert response["status_code"] == 400
    assert message.headers[":exception-type"] == "ResourceInUseException"
    assert message.payload == b'{"message": "taken over"}'


@given(payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=5), cuts=st.lists(st.integers(1, 64)))
def test_the_splitter_returns_whole_messages_whatever_the_pieces(payloads, cuts):
    raw = [encode_message({":message-type": "event", ":event-type": f"e{i}"}, p) for i, p in enumerate(payloads)]
    stream, splitter, got, position = b"".join(raw), MessageSplitter(), [], 0
    for size in cuts + [len(b"".join(raw))]:
        splitter.add(stream[position:position + size])
        position += size
        got.extend(splitter)
    assert [m.raw for m in got] == raw
    assert [m.payload for m in got] == payloads
    assert [m.event_type for m in got] == [f"e{i}" for i in range(len(payloads))]


def test_the_stream_of_an_arn_or_a_consumer_arn():
    stream = StreamRef("us-east-1", "000000000000", "clicks")
    assert StreamRef.from_arn("arn:aws:kinesis:us-east-1:000000000000:stream/clicks") == stream
    assert StreamRef.from_arn("arn:aws:kinesis:us-east-1:000000000000:stream/clicks/consumer/c1:1795653076") == stream
    with pytest.raises(ValueError, match="not a Kinesis stream or consumer ARN"):
        StreamRef.from_arn("arn:aws:dynamodb:us-east-1:000000000000:table/t")


def test_the_stream_a_request_names_is_scoped_as_kinesis_mock_scopes_it():
    by_name = StreamRef.from_request({"StreamName": "clicks"}, _AUTH.format(key="testing"))
    assert by_name == StreamRef("eu-west-1", DEFAULT_ACCOUNT, "clicks")  # a key that is no account: the default
    by_account_key = StreamRef.from_request({"StreamName": "clicks"}, _AUTH.format(key="123456789012"))
    assert by_account_key.account == "123456789012"
    by_token = StreamRef.from_request({"NextToken": "clicks::shardId-000000000001"}, _AUTH.format(key="testing"))
    assert by_token.name == "clicks"
    assert StreamRef.from_request({"StreamName": "clicks"}, "") is None  # unsigned: no region to look in


def test_child_shards_of_a_split_and_a_merge():
    shards = [
        {"ShardId": "s0", "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": "9"}},
        {"ShardId": "s1", "ParentShardId": "s0", "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": "4"}},
        {"ShardId": "s2", "ParentShardId": "s0", "HashKeyRange": {"StartingHashKey": "5", "EndingHashKey": "9"}},
        {"ShardId": "s3", "ParentShardId": "s1", "AdjacentParentShardId": "s2",
         "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": "9"}},
    ]
    assert [c["ShardId"] for c in child_shards_of("s0", shards)] == ["s1", "s2"]
    assert child_shards_of("s1", shards) == [{"ShardId": "s3", "ParentShards": ["s1", "s2"],
                                              "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": "9"}}]
    assert child_shards_of("s2", shards)[0]["ParentShards"] == ["s1", "s2"]
    assert child_shards_of("s3", shards) == []
