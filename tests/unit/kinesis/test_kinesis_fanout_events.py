"""The enhanced fan-out reader (``kinesis/executor/fanout.py``) against the event streams AWS's API reference documents
for
``SubscribeToShard``, with no server: each subscription is the bytes AWS sends (an ``initial-response`` event, then
``SubscribeToShardEvent`` events or an exception), parsed by botocore's own event-stream parser exactly as
``boto3.client("kinesis").subscribe_to_shard`` does, and handed to the reader.

Shapes (AWS API reference, SubscribeToShard / SubscribeToShardEvent): ``Records`` (``Data`` base64 in JSON,
``ApproximateArrivalTimestamp`` epoch seconds), ``ContinuationSequenceNumber`` (null at a closed shard's end, with
``ChildShards``), ``MillisBehindLatest``; errors inside the stream are exception messages
(``ResourceInUseException``, ``ResourceNotFoundException``, ``InternalFailureException``, ...).
"""

from __future__ import annotations

import base64
import time

import botocore.session
import pytest
from botocore.eventstream import EventStream
from botocore.exceptions import ClientError
from botocore.parsers import EventStreamJSONParser

from samza_devkit.aws_event_stream import event_message, exception_message
from samza_devkit.waits import scaled
from spark_samza_source.kinesis import kpl
from spark_samza_source.kinesis.errors import KinesisDataLossError, KinesisSourceError
from spark_samza_source.kinesis.executor.fanout import STOP_SUBSCRIPTION_IN_USE
from spark_samza_source.kinesis.executor.reader import (
    STOP_CAUGHT_UP,
    STOP_MAX_FETCH_TIME,
    STOP_MAX_RECORDS,
    STOP_RECORDED_END,
    STOP_SHARD_END,
    ShardRead,
    ShardReadSettings,
)
from spark_samza_source.kinesis.executor.shard_reads import open_shard_reader
from spark_samza_source.kinesis.positions import ShardPosition

CONSUMER = "arn:aws:kinesis:us-east-1:123456789012:stream/clicks/consumer/etl:1700000000"
SHARD = "shardId-000000000000"
_OPERATION = botocore.session.get_session().get_service_model("kinesis").operation_model("SubscribeToShard")
_EVENT_SHAPE = _OPERATION.output_shape.members["EventStream"]


class _RawBody:
    """What botocore reads a response body through (``.stream()`` chunks, ``.close()``)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.closed = False

    def stream(self):
        for i in range(0, len(self.data), 7):  # small chunks: messages split across reads
            yield self.data[i:i + 7]

    def close(self) -> None:
        self.closed = True


class FedKinesis:
    """A Kinesis client whose ``subscribe_to_shard`` answers with the next scripted subscription: the bytes of an
    event stream, or a ClientError raised by the call itself. The calls are kept."""

    def __init__(self, *subscriptions) -> None:
        self.subscriptions = list(subscriptions)
        self.calls: list[dict] = []

    def subscribe_to_shard(self, **request):
        self.calls.append(request)
        answer = self.subscriptions.pop(0)
        if isinstance(answer, Exception):
            raise answer
        stream = EventStream(_RawBody(answer), _EVENT_SHAPE, EventStreamJSONParser(), "SubscribeToShard")
        stream.get_initial_response()  # as botocore's parser does: AWS's first event is initial-response
        return {"EventStream": stream}


def subscription(*messages: bytes) -> bytes:
    return event_message("initial-response", {}) + b"".join(messages)


def record(seq: int, data: bytes = b"x", key: str = "k", arrival: float = 1_700_000_000.0) -> dict:
    return {"SequenceNumber": str(seq), "Data": base64.b64encode(data).decode(), "PartitionKey": key,
            "ApproximateArrivalTimestamp": arrival}


def event(*records: dict, continuation: int | None = None, behind: int = 1000, children=None) -> bytes:
    payload = {"Records": list(records), "MillisBehindLatest": behind}
    if continuation is not None:
        payload["ContinuationSequenceNumber"] = str(continuation)
    if children is not None:
        payload["ChildShards"] = children
    return event_message("SubscribeToShardEvent", payload)


def client_error(code: str, message: str = "") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message or code}}, "SubscribeToShard")


def read(client, start=None, *, recorded_end=None, ending=None, **settings):
    # the read's time budget is a wait for events already queued: a quiet machine's 5 s (samza_devkit.waits)
    settings.setdefault("max_fetch_time_ms", int(scaled(5_000)))
    settings.setdefault("sleep", lambda s: None)
    request = ShardRead("clicks", SHARD, start or ShardPosition.trim_horizon(), "Task-0",
                        ending_sequence=ending, recorded_end=recorded_end, consumer_arn=CONSUMER)
    return open_shard_reader(client, request, ShardReadSettings(**settings)).run()


def rows(result) -> list[tuple[str, int, bytes]]:
    table = result.table()
    return list(zip(table["sequenceNumber"].to_pylist(), table["subSequenceNumber"].to_pylist(),
                    table["data"].to_pylist(), strict=True))


def test_records_then_caught_up_end_after_the_last_record_and_the_start_follows_the_position():
    client = FedKinesis(subscription(event(record(1, b"a"), record(2, b"b"), continuation=2),
                                     event(record(3, b"c"), continuation=3, behind=0)))
    result = read(client)
    assert rows(result) == [("1", 0, b"a"), ("2", 0, b"b"), ("3", 0, b"c")]
    assert result.end == ShardPosition.after_sequence("3", -1) and result.stop == STOP_CAUGHT_UP
    assert result.millis_behind_latest == 0 and result.calls == 2
    assert client.calls == [{"ConsumerARN": CONSUMER, "ShardId": SHARD, "StartingPosition": {"Type": "TRIM_HORIZON"}}]
    # a position after a record starts AT it (skipped), so a trimmed record is noticed as with polling
    again = FedKinesis(subscription(event(record(3, b"c"), record(4, b"d"), continuation=4, behind=0)))
    assert rows(read(again, ShardPosition.after_sequence("3", -1))) == [("4", 0, b"d")]
    assert again.calls[0]["StartingPosition"] == {"Type": "AT_SEQUENCE_NUMBER", "SequenceNumber": "3"}


def test_kpl_aggregates_are_split_and_a_batch_may_end_and_resume_inside_one():
    aggregate = kpl.aggregate([("k1", b"u0"), ("k2", b"u1"), ("k3", b"u2")])
    first = read(FedKinesis(subscription(event(record(7, aggregate), continuation=7))), max_records=2)
    assert rows(first) == [("7", 0, b"u0"), ("7", 1, b"u1")]
    assert first.end == ShardPosition.after_sequence("7", 1) and first.stop == STOP_MAX_RECORDS
    client = FedKinesis(subscription(event(record(7, aggregate), record(8, b"plain"), continuation=8, behind=0)))
    second = read(client, first.end)
    assert rows(second) == [("7", 2, b"u2"), ("8", 0, b"plain")]
    assert client.calls[0]["StartingPosition"] == {"Type": "AT_SEQUENCE_NUMBER", "SequenceNumber": "7"}


def test_a_null_continuation_with_child_shards_is_the_shards_end():
    children = [{"ShardId": "shardId-000000000001", "ParentShards": [SHARD],
                 "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": "1"}}]
    client = FedKinesis(subscription(event(record(1), continuation=1), event(record(2), children=children)))
    result = read(client)
    assert [r[0] for r in rows(result)] == ["1", "2"]
    assert result.end.is_shard_end and result.stop == STOP_SHARD_END


def test_a_subscription_that_ends_or_is_refused_as_in_use_is_renewed_from_the_position_reached():
    client = FedKinesis(subscription(event(record(1), continuation=1)),  # ends (the 5-minute limit)
                        client_error("ResourceInUseException"),  # the previous one still counts as open
                        subscription(exception_message("ResourceInUseException", "taken over")),
                        subscription(event(record(1), record(2), continuation=2, behind=0)))
    result = read(client)
    assert [r[0] for r in rows(result)] == ["1", "2"] and result.stop == STOP_CAUGHT_UP
    assert [c["StartingPosition"] for c in client.calls[1:]] == [
        {"Type": "AT_SEQUENCE_NUMBER", "SequenceNumber": "1"}] * 3


def test_an_exact_read_stops_at_the_recorded_end_and_a_bounded_read_waits_in_use_only_until_its_deadline():
    client = FedKinesis(subscription(event(record(1), record(2), record(3), continuation=3)))
    exact = read(client, recorded_end=ShardPosition.after_sequence("2", -1))
    assert [r[0] for r in rows(exact)] == ["1", "2"] and exact.stop == STOP_RECORDED_END
    busy = FedKinesis(*[client_error("ResourceInUseException")] * 50)
    request = ShardRead("clicks", SHARD, ShardPosition.trim_horizon(), "Task-0", consumer_arn=CONSUMER,
                        until_arrival_ms=int(time.time() * 1000))  # AvailableNow: must not end empty early
    waited = open_shard_reader(busy, request, ShardReadSettings(max_fetch_time_ms=100, sleep=time.sleep)).run()
    assert waited.stop == STOP_MAX_FETCH_TIME and waited.records == 0 and waited.end == ShardPosition.trim_horizon()
    # a micro-batch read gives way at once (the subscription made less than 5 s ago, parked by another Python
    # worker, reads the shard in a later batch)
    gave_way = read(FedKinesis(client_error("ResourceInUseException")), max_fetch_time_ms=60_000)
    assert gave_way.stop == STOP_SUBSCRIPTION_IN_USE and gave_way.records == 0
    assert gave_way.end == ShardPosition.trim_horizon()


def test_errors_inside_the_stream_name_consumer_stream_and_shard():
    gone = FedKinesis(subscription(exception_message("ResourceNotFoundException", "Consumer not found")))
    with pytest.raises(KinesisSourceError) as err:
        read(gone)
    text = str(err.value)
    assert CONSUMER in text and "'clicks'" in text and SHARD in text and "deregistered" in text
    kms = FedKinesis(subscription(exception_message("KMSAccessDeniedException", "no kms:Decrypt on the key")))
    with pytest.raises(KinesisSourceError, match="KMSAccessDeniedException") as err:
        read(kms)
    assert CONSUMER in str(err.value) and SHARD in str(err.value)
    # an internal failure inside the stream is renewed, as an endpoint that did not answer
    internal = FedKinesis(subscription(event(record(1), continuation=1),
                                       exception_message("InternalFailureException", "try again")),
                          subscription(event(record(1), record(2), continuation=2, behind=0)))
    assert [r[0] for r in rows(read(internal))] == ["1", "2"]


def test_a_trimmed_resume_record_is_data_loss_as_with_polling():
    client = FedKinesis(subscription(event(record(9), continuation=9, behind=0)))
    with pytest.raises(KinesisDataLossError, match="after sequence number 5"):
        read(client, ShardPosition.after_sequence("5", -1))


def test_aws_keys_never_appear_in_an_error_and_an_exact_read_error_names_the_consumer():
    from spark_samza_source.kinesis.client import AwsClientSettings

    keys = AwsClientSettings(access_key_id="AKIAEXAMPLEKEY123456", secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRET")
    said = "denied for AKIAEXAMPLEKEY123456 signed with wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRET"
    leaky = FedKinesis(subscription(exception_message("KMSAccessDeniedException", said)))
    with pytest.raises(KinesisSourceError) as err:
        read(leaky, aws_settings=keys)
    assert "AKIAEXAMPLEKEY123456" not in str(err.value) and "bPxRfiCYSECRET" not in str(err.value)
    assert "***" in str(err.value) and CONSUMER in str(err.value)
    # the recorded end lies before the start: the exact read cannot be made, and says through which consumer
    with pytest.raises(KinesisDataLossError) as err:
        read(FedKinesis(), ShardPosition.after_sequence("9", -1), recorded_end=ShardPosition.after_sequence("5", -1))
    assert CONSUMER in str(err.value) and SHARD in str(err.value) and "'clicks'" in str(err.value)


def test_a_record_above_a_closed_shards_stated_end_is_data_loss_not_a_silent_end():
    """Backs Guarantees (docs/guarantees.md, answers that contradict each other): Kinesis listed the shard as
    closed at EndingSequenceNumber 2, yet sends record 3; ending the shard there skips 3 and records SHARD_END."""
    def contradicting():
        return FedKinesis(subscription(event(record(1, b"a"), record(3, b"c"), continuation=3, behind=0)))

    with pytest.raises(KinesisDataLossError) as caught:
        read(contradicting(), ending=2)
    message = str(caught.value)
    assert "EndingSequenceNumber 2, but returned a record at sequence number 3 above it" in message
    assert f"shard {SHARD} of stream 'clicks'" in message and "failOnDataLoss" in message
    result = read(contradicting(), ending=2, fail_on_data_loss=False)
    assert rows(result) == [("1", 0, b"a")] and result.end == ShardPosition.shard_end()
    assert len(result.lost) == 1 and "above it" in result.lost[0]  # with the WARN the executor logs
