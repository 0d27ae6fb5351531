"""Enhanced fan-out on kinesis-mock through the devkit's bridge, with boto3 as an application would use it: the
bridged emulator must behave as AWS's API reference documents ``SubscribeToShard`` (initial-response, records from
every starting position, a closed shard's stream ending with ``ChildShards`` and a null continuation, one
subscription per shard and consumer, subscriptions that end and are renewed, a cut connection).

kinesis-mock sends one event per second, so each subscription here costs about a second; the tests share one
stream per test and subscribe several consumers where they can."""

from __future__ import annotations

import time
from collections.abc import Iterator

import boto3
import pytest
import urllib3
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError, ResponseStreamingError
from botocore.parsers import ResponseParserError

from samza_devkit import kinesis_helpers as kh
from samza_devkit.kinesis_shard_catalog import ENDING_PLACEHOLDER
from samza_devkit.waits import deadline_after

# a cut connection surfaces from the event stream as one of these
_CUT_ERRORS = (urllib3.exceptions.ProtocolError, ResponseStreamingError, ConnectionError)


def _client(endpoint: str):
    return boto3.client("kinesis", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing",
                        config=Config(read_timeout=20, retries={"mode": "standard", "max_attempts": 2}))


@pytest.fixture(scope="module")
def kinesis(kinesis_mock_endpoint):
    client = _client(kinesis_mock_endpoint)
    yield client
    client.close()


@pytest.fixture
def bridge(fresh_bridge):
    return fresh_bridge


@pytest.fixture
def stream(kinesis) -> Iterator[str]:
    name = kh.create_stream(kinesis, kh.unique_stream_name("fanout"), 1)
    yield name
    kh.delete_stream(kinesis, name)


def register(kinesis, stream: str, name: str) -> str:
    """A registered, ACTIVE stream consumer's ARN."""
    arn = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    consumer = kinesis.register_stream_consumer(StreamARN=arn, ConsumerName=name)["Consumer"]["ConsumerARN"]
    deadline = deadline_after(30)
    while kinesis.describe_stream_consumer(ConsumerARN=consumer)["ConsumerDescription"]["ConsumerStatus"] != "ACTIVE":
        assert time.monotonic() < deadline, f"consumer {name} not ACTIVE after 30s"
        time.sleep(0.05)
    return consumer


def put(kinesis, stream: str, *values: str, hash_key: str = "0") -> list[str]:
    """Put ``values`` one by one (one shard: the explicit hash key routes them); their sequence numbers."""
    return [kinesis.put_record(StreamName=stream, Data=v.encode(), PartitionKey="k",
                               ExplicitHashKey=hash_key)["SequenceNumber"] for v in values]


def subscribe(kinesis, consumer: str, shard: str = "shardId-000000000000", **position):
    position.setdefault("Type", "TRIM_HORIZON")
    response = kinesis.subscribe_to_shard(ConsumerARN=consumer, ShardId=shard, StartingPosition=position)
    return response["EventStream"]


def subscribe_when_allowed(kinesis, consumer: str, shard: str = "shardId-000000000000", **position):
    """(event stream, the ResourceInUseException refusals met first): subscribes as a reader renewing a subscription
    does, waiting out AWS's 5-second rule."""
    refusals, deadline = [], deadline_after(30)
    while True:
        try:
            return subscribe(kinesis, consumer, shard, **position), refusals
        except ClientError as err:
            if err.response["Error"]["Code"] != "ResourceInUseException" or time.monotonic() > deadline:
                raise
            refusals.append(err)
            time.sleep(0.25)


def events_until(event_stream, count: int, max_events: int = 15) -> tuple[list[dict], list[dict]]:
    """(events, records) read until ``count`` records arrived (or the stream ended, or ``max_events``)."""
    events, records = [], []
    for item in event_stream:
        event = item["SubscribeToShardEvent"]
        events.append(event)
        records.extend(event["Records"])
        if len(records) >= count or len(events) >= max_events:
            break
    return events, records


def data(records: list[dict]) -> list[str]:
    return [r["Data"].decode() for r in records]


def test_kinesis_mock_still_departs_where_the_bridge_bridges(kinesis_mock_bridge, kinesis, stream):
    """Against kinesis-mock directly (the bridge's upstream): if a new version fixes these, the bridge's rewrites
    are no longer needed and docs/kinesis-emulators.md should say so."""
    raw = _client(kinesis_mock_bridge.upstream)
    try:
        consumer = register(kinesis, stream, "raw")
        with pytest.raises(ResponseParserError, match="initial-response"):
            raw.subscribe_to_shard(ConsumerARN=consumer, ShardId="shardId-000000000000",
                                   StartingPosition={"Type": "TRIM_HORIZON"})
        kh.split_shard(kinesis, stream, "shardId-000000000000")
        parent = next(s for s in raw.list_shards(StreamName=stream)["Shards"] if s["ShardId"].endswith("0"))
        assert parent["SequenceNumberRange"]["EndingSequenceNumber"] == ENDING_PLACEHOLDER
    finally:
        raw.close()


def test_records_put_before_and_after_the_subscription_arrive_in_order(kinesis, stream):
    consumer = register(kinesis, stream, "reader")
    before = put(kinesis, stream, "a", "b", "c")
    events = subscribe(kinesis, consumer)  # botocore parsed the initial-response to get here
    try:
        _, first = events_until(events, 3)
        after = put(kinesis, stream, "d", "e")
        last_events, second = events_until(events, 2)
    finally:
        events.close()
    assert data(first + second) == ["a", "b", "c", "d", "e"]
    assert [r["SequenceNumber"] for r in first + second] == before + after
    assert last_events[-1]["ContinuationSequenceNumber"] == after[-1]
    assert "ChildShards" not in last_events[-1]  # an open shard's events carry none


def test_every_starting_position(kinesis, stream):
    sequences = []
    for value in ("r0", "r1", "r2", "r3"):
        sequences += put(kinesis, stream, value)
        time.sleep(0.02)  # distinct arrival timestamps (milliseconds)
    arrivals = [r["ApproximateArrivalTimestamp"] for r in kh.read_shard_raw(kinesis, stream, "shardId-000000000000")]
    starts = {
        "trim": {"Type": "TRIM_HORIZON"},
        "at": {"Type": "AT_SEQUENCE_NUMBER", "SequenceNumber": sequences[1]},
        "after": {"Type": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": sequences[1]},
        "timestamp": {"Type": "AT_TIMESTAMP", "Timestamp": arrivals[2]},
    }
    expected = {"trim": ["r0", "r1", "r2", "r3"], "at": ["r1", "r2", "r3"], "after": ["r2", "r3"],
                "timestamp": ["r2", "r3"]}
    for name, position in starts.items():
        events = subscribe(kinesis, register(kinesis, stream, name), **position)
        try:
            _, records = events_until(events, len(expected[name]), max_events=3)
        finally:
            events.close()
        assert data(records) == expected[name], name
    latest = subscribe(kinesis, register(kinesis, stream, "latest"), Type="LATEST")
    try:
        put(kinesis, stream, "r4")
        _, records = events_until(latest, 1, max_events=4)
    finally:
        latest.close()
    assert data(records) == ["r4"]


def children_of(kinesis, stream: str, parent: str) -> list[dict]:
    """The ChildShards entries AWS would send for ``parent``, from ListShards."""
    children = []
    for shard in kh.list_shards(kinesis, stream):
        parents = [p for p in (shard.get("ParentShardId"), shard.get("AdjacentParentShardId")) if p]
        if parent in parents:
            children.append({"ShardId": shard["ShardId"], "ParentShards": parents,
                             "HashKeyRange": shard["HashKeyRange"]})
    return children


def test_a_split_parents_stream_ends_with_child_shards_and_a_null_continuation(kinesis, stream):
    consumer = register(kinesis, stream, "splitter")
    sequences = put(kinesis, stream, "a", "b")
    events = subscribe(kinesis, consumer)
    try:
        _, first = events_until(events, 2)
        sequences += put(kinesis, stream, "c")  # put between the last event and the split: must not be lost
        kh.split_shard(kinesis, stream, "shardId-000000000000")
        rest = list(events)  # the stream ends by itself
    finally:
        events.close()
    records = first + [r for item in rest for r in item["SubscribeToShardEvent"]["Records"]]
    final = rest[-1]["SubscribeToShardEvent"]
    children = children_of(kinesis, stream, "shardId-000000000000")
    assert data(records) == ["a", "b", "c"]
    assert "ContinuationSequenceNumber" not in final  # null: botocore leaves it out
    assert sorted(final["ChildShards"], key=lambda c: c["ShardId"]) == children and len(children) == 2
    assert all("ChildShards" not in item["SubscribeToShardEvent"] for item in rest[:-1])
    parent = next(s for s in kh.list_shards(kinesis, stream) if s["ShardId"] == "shardId-000000000000")
    described = kinesis.describe_stream(StreamName=stream)["StreamDescription"]["Shards"][0]
    assert parent["SequenceNumberRange"]["EndingSequenceNumber"] == sequences[-1]
    assert described["SequenceNumberRange"]["EndingSequenceNumber"] == sequences[-1]
    for name, position in (("after-last", {"Type": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": sequences[-1]}),
                           ("latest", {"Type": "LATEST"})):
        late = [item["SubscribeToShardEvent"] for item in subscribe(kinesis, register(kinesis, stream, name),
                                                                    **position)]
        assert [e["Records"] for e in late] == [[]], name  # subscribed after the end: the final event at once
        assert sorted(late[-1]["ChildShards"], key=lambda c: c["ShardId"]) == children, name


def test_merged_parents_end_with_the_child_naming_both(kinesis):
    stream = kh.create_stream(kinesis, kh.unique_stream_name("merge"), 2)
    try:
        low, high = (s["ShardId"] for s in kh.list_shards(kinesis, stream))
        consumer = register(kinesis, stream, "merger")
        kh.merge_shards(kinesis, stream, low, high)
        child = children_of(kinesis, stream, low)
        ends = {}
        for parent in (low, high):
            ends[parent] = [item["SubscribeToShardEvent"] for item in subscribe(kinesis, consumer, parent)]
        empty_parent = next(s for s in kh.list_shards(kinesis, stream) if s["ShardId"] == low)
    finally:
        kh.delete_stream(kinesis, stream)
    assert len(child) == 1 and child[0]["ParentShards"] == [low, high]
    for parent, events in ends.items():
        assert events[-1]["ChildShards"] == child and "ContinuationSequenceNumber" not in events[-1], parent
    numbers = empty_parent["SequenceNumberRange"]
    assert numbers["EndingSequenceNumber"] == numbers["StartingSequenceNumber"]  # no record: an empty range


def test_a_cut_subscription_is_renewed_from_its_continuation(kinesis, stream, bridge):
    bridge.takeover_after_s = 3.0  # AWS: 5 s; shorter to keep the test fast
    consumer = register(kinesis, stream, "cut")
    put(kinesis, stream, "a", "b")
    events = subscribe(kinesis, consumer)
    seen, _ = events_until(events, 2)
    put(kinesis, stream, "c", "d")
    assert bridge.cut(consumer_arn=consumer) == 1
    with pytest.raises(_CUT_ERRORS):
        for _ in events:
            pass
    events.close()
    renewed, refusals = subscribe_when_allowed(kinesis, consumer, Type="AFTER_SEQUENCE_NUMBER",
                                               SequenceNumber=seen[-1]["ContinuationSequenceNumber"])
    assert refusals  # AWS refuses a call made within 5 s of a successful one, as the bridge does
    try:
        _, records = events_until(renewed, 2, max_events=4)
    finally:
        renewed.close()
    assert data(records) == ["c", "d"]


def test_a_subscription_ends_at_its_time_limit_and_is_renewed(kinesis, stream, bridge):
    bridge.subscription_limit_s, bridge.takeover_after_s = 2.5, 0.0
    consumer = register(kinesis, stream, "limit")
    put(kinesis, stream, "a")
    started = time.monotonic()
    ended = [item["SubscribeToShardEvent"] for item in subscribe(kinesis, consumer)]  # ends without an error
    assert time.monotonic() - started < 60
    assert data([r for e in ended for r in e["Records"]]) == ["a"]
    assert ended[-1]["ContinuationSequenceNumber"]  # an open shard: renew from here
    put(kinesis, stream, "b")
    renewed = subscribe(kinesis, consumer, Type="AFTER_SEQUENCE_NUMBER",
                        SequenceNumber=ended[-1]["ContinuationSequenceNumber"])
    _, records = events_until(renewed, 1, max_events=3)
    renewed.close()
    assert data(records) == ["b"]


def test_a_second_subscription_is_refused_then_takes_over(kinesis, stream, bridge):
    """kinesis-mock refuses any second subscription while the first is open, inside an HTTP 200 event stream; AWS
    refuses one made within 5 s of a successful call (HTTP 400) and lets a later one take over, failing the
    first with ResourceInUseException. The bridge does what AWS does."""
    bridge.takeover_after_s = 1.5
    consumer = register(kinesis, stream, "twice")
    put(kinesis, stream, "a")
    first = subscribe(kinesis, consumer)
    events_until(first, 1)
    with pytest.raises(ClientError) as refused:
        subscribe(kinesis, consumer)
    assert refused.value.response["Error"]["Code"] == "ResourceInUseException"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    time.sleep(bridge.takeover_after_s)
    second = subscribe(kinesis, consumer)
    try:
        with pytest.raises(EventStreamError) as taken_over:
            for _ in first:
                pass
        _, records = events_until(second, 1, max_events=3)
    finally:
        first.close()
        second.close()
    assert taken_over.value.response["Error"]["Code"] == "ResourceInUseException"
    assert data(records) == ["a"]
    assert len(bridge.open_subscriptions(consumer_arn=consumer)) <= 1


def test_a_subscription_to_a_shard_the_stream_does_not_have_is_refused(kinesis, stream):
    consumer = register(kinesis, stream, "nowhere")
    with pytest.raises(ClientError) as refused:
        subscribe(kinesis, consumer, "shardId-000000000009")
    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_listing_shards_by_pages_fixes_every_pages_ending_sequence_number(kinesis):
    stream = kh.create_stream(kinesis, kh.unique_stream_name("pages"), 2)
    try:
        low, high = (s["ShardId"] for s in kh.list_shards(kinesis, stream))
        last = put(kinesis, stream, "x")[-1]  # hash key 0: the low shard
        kh.merge_shards(kinesis, stream, low, high)
        pages, token = [], None
        while True:  # one shard per page, and NextToken alone after the first, as AWS requires
            page = (kinesis.list_shards(NextToken=token, MaxResults=1) if token
                    else kinesis.list_shards(StreamName=stream, MaxResults=1))
            pages.append(page["Shards"])
            token = page.get("NextToken")
            if not token:
                break
    finally:
        kh.delete_stream(kinesis, stream)
    ending = {s["ShardId"]: s["SequenceNumberRange"].get("EndingSequenceNumber") for page in pages for s in page}
    assert len(pages) >= 3 and ending[low] == last
    assert ending[high] not in (None, ENDING_PLACEHOLDER)
