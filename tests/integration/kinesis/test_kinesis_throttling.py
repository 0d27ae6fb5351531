"""Throttling answered by the server: one retry policy per call, bounded, and counted.

The moto server itself answers ``ProvisionedThroughputExceededException`` / ``LimitExceededException`` over HTTP
(``aws_faults``, devkit's fault injection), so botocore parses a real error response and its retry handler runs:
had botocore's retries been left on under our loops, the server would count more requests than the reader
reports. Time is bounded by counting: the reader's and the admin's sleeps go through an injected ``sleep`` that
records what they asked for (and sleeps for real), so "a throttled batch never waits past maxFetchTimePerShard"
is a sum of recorded sleeps, not a stopwatch.
"""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.kinesis.client import AwsClientSettings, clear_client_cache, dynamodb_client, kinesis_client
from spark_samza_source.kinesis.driver.admin import KinesisAdmin
from spark_samza_source.kinesis.errors import KinesisThrottledError
from spark_samza_source.kinesis.executor.reader import (
    DEFAULT_MIN_CALL_INTERVAL_MS,
    STOP_CAUGHT_UP,
    STOP_MAX_FETCH_TIME,
)
from spark_samza_source.kinesis.executor.shard_reads import read_shard
from spark_samza_source.kinesis.positions import ShardPosition

SHARD0 = "shardId-000000000000"
TASK = "Partition 0"
PTEE = "ProvisionedThroughputExceededException"
THROTTLES = [PTEE, "LimitExceededException"]


class Sleeps:
    """An injectable ``sleep`` that sleeps and records how long it was asked to."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        time.sleep(seconds)

    @property
    def total(self) -> float:
        return sum(self.asked)


@pytest.fixture
def settings(moto_server, aws_region):
    clear_client_cache()
    yield AwsClientSettings(region=aws_region, endpoint_url=moto_server)
    clear_client_cache()


@pytest.fixture
def client(settings):
    """The product's own Kinesis client (its botocore retry configuration is what is under test)."""
    return kinesis_client(settings)


@pytest.fixture
def stream300(kinesis, make_stream):
    stream = make_stream(1)
    puts = kh.put_records(kinesis, stream, [(f"pk-{i % 7}", f"r-{i}".encode()) for i in range(300)])
    return stream, puts


def sequences(result) -> list[str]:
    return result.table().column("sequenceNumber").to_pylist()


# ---- botocore: the Kinesis client never retries, the DynamoDB client does -------------------------------------
@pytest.mark.parametrize("code", THROTTLES)
def test_the_kinesis_client_makes_one_attempt_per_call(client, make_stream, aws_faults, code):
    stream = make_stream(1)
    rule = aws_faults.add("ListShards", code=code, times=1)
    with pytest.raises(ClientError) as caught:
        client.list_shards(StreamName=stream)
    assert caught.value.response["Error"]["Code"] == code
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert aws_faults.counts(rule) == {"seen": 1, "failed": 1}  # botocore did not try again underneath


def test_the_dynamodb_client_retries_throttling_itself(settings, aws_faults, moto_server, aws_region):
    """DynamoDB calls keep botocore's standard retries (and nothing of ours on top): the one retry policy there."""
    ddb = kh.dynamodb_client(moto_server, aws_region)
    table = kh.unique_stream_name("throttled-table")
    ddb.create_table(TableName=table, KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    try:
        rule = aws_faults.add("PutItem", code=PTEE, times=2, match=table)
        dynamodb_client(settings).put_item(TableName=table, Item={"k": {"S": "a"}})
        assert aws_faults.counts(rule) == {"seen": 3, "failed": 2}
        assert ddb.get_item(TableName=table, Key={"k": {"S": "a"}}, ConsistentRead=True).get("Item")
    finally:
        ddb.delete_table(TableName=table)


# ---- the shard reader -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("code", THROTTLES)
def test_throttled_get_records_are_retried_once_each_by_the_reader(client, settings, stream300, aws_faults, code):
    stream, puts = stream300
    rule = aws_faults.add("GetRecords", code=code, times=3)
    sleeps = Sleeps()
    res = read_shard(client, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, records_per_call=100,
                     aws_settings=settings, sleep=sleeps)
    assert sequences(res) == [p.sequence for p in puts]  # nothing lost, nothing read twice
    assert res.stop == STOP_CAUGHT_UP
    assert res.retries == 3
    # every request the server saw is one the reader counted: no retry hidden in botocore
    assert aws_faults.counts(rule) == {"seen": res.calls + res.retries, "failed": 3}
    # after a throttled call the reader waits at least the 5 reads/s pacing
    assert len([s for s in sleeps.asked if s >= DEFAULT_MIN_CALL_INTERVAL_MS / 1000 * 0.99]) >= 3


def test_a_throttled_batch_ends_at_max_fetch_time_with_what_it_read(client, settings, stream300, aws_faults):
    """Throttled for good after the first page: the batch keeps its page, ends at maxFetchTimePerShard (never
    later: the sleeps asked for add up to less than it), and the next batch goes on from there."""
    stream, puts = stream300
    rule = aws_faults.add("GetRecords", code=PTEE, skip=1)
    sleeps = Sleeps()
    max_fetch_ms = 1500
    res = read_shard(client, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, records_per_call=100,
                     max_fetch_time_ms=max_fetch_ms, max_retries=1000, aws_settings=settings, sleep=sleeps)
    assert res.stop == STOP_MAX_FETCH_TIME
    assert sequences(res) == [p.sequence for p in puts[:100]]
    assert res.end == ShardPosition.after_sequence(puts[99].sequence)
    assert sleeps.total <= max_fetch_ms / 1000
    counted = aws_faults.counts(rule)
    assert counted["seen"] == res.calls + res.retries == 1 + counted["failed"]
    # the pacing holds while throttled: at most 5 calls a second over the batch, plus the first
    assert counted["failed"] <= 1 + max_fetch_ms / DEFAULT_MIN_CALL_INTERVAL_MS
    aws_faults.clear()
    rest = read_shard(client, stream, SHARD0, res.end, task=TASK, aws_settings=settings)
    assert sequences(rest) == [p.sequence for p in puts[100:]]


def test_a_throttled_get_shard_iterator_never_waits_past_max_fetch_time(client, settings, stream300, aws_faults):
    stream, puts = stream300
    rule = aws_faults.add("GetShardIterator", code=PTEE)
    sleeps = Sleeps()
    max_fetch_ms = 800
    res = read_shard(client, stream, SHARD0, ShardPosition.after_sequence(puts[9].sequence), task=TASK,
                     max_fetch_time_ms=max_fetch_ms, max_retries=6, aws_settings=settings, sleep=sleeps)
    assert res.stop == STOP_MAX_FETCH_TIME and res.records == 0
    assert res.end == ShardPosition.after_sequence(puts[9].sequence)  # the batch is empty, nothing skipped
    assert sleeps.total <= max_fetch_ms / 1000
    assert aws_faults.counts(rule)["seen"] == len(sleeps.asked) + 1  # one request per attempt, ours only


def test_endless_throttling_with_few_retries_fails_naming_shard_and_stream(client, settings, stream300, aws_faults):
    stream, _ = stream300
    rule = aws_faults.add("GetRecords", code=PTEE)
    with pytest.raises(KinesisThrottledError, match=rf"{SHARD0}.*{stream}.*{PTEE}.*2 retries"):
        read_shard(client, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_retries=2,
                   max_fetch_time_ms=60_000, aws_settings=settings)
    assert aws_faults.counts(rule) == {"seen": 3, "failed": 3}


# ---- the admin (driver) -----------------------------------------------------------------------------------------
def test_throttled_list_shards_is_retried_by_the_admin_alone(client, settings, make_stream, aws_faults):
    stream = make_stream(2)
    rule = aws_faults.add("ListShards", code="LimitExceededException", times=3)
    sleeps = Sleeps()
    admin = KinesisAdmin(client, settings=settings, backoff_base_s=0.01, sleep=sleeps)
    assert len(admin.list_shards(stream)) == 2
    assert aws_faults.counts(rule) == {"seen": 4, "failed": 3}
    assert len(sleeps.asked) == 3
    aws_faults.clear()
    rule = aws_faults.add("ListShards", code="LimitExceededException")
    with pytest.raises(KinesisThrottledError, match=rf"ListShards of stream '{stream}'.*4 retries"):
        KinesisAdmin(client, settings=settings, max_retries=4, backoff_base_s=0.01).list_shards(stream)
    assert aws_faults.counts(rule) == {"seen": 5, "failed": 5}
