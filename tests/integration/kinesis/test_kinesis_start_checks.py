"""Where a new samza-kinesis query starts: per-shard startingPosition (unknown shards, sequence numbers that are
not the shard's, shards not named), AT_TIMESTAMP in the future. Against the real emulators, driver side only
(``KinesisCoordinator.initial_offset`` is what Spark's ``initialOffset`` runs), plus the reader on a timestamp
Kinesis' clock has not reached."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kinesis.client import kinesis_client
from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.executor.reader import STOP_CAUGHT_UP
from spark_samza_source.kinesis.executor.shard_reads import read_shard
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import AT_TIMESTAMP, SHARD_END, TRIM_HORIZON, ShardPosition

pytestmark = [pytest.mark.both_emulators]

S0, S1 = "shardId-000000000000", "shardId-000000000001"
HOUR_MS = 3_600_000


@pytest.fixture
def coordinator_for(kinesis_endpoint, moto_server, tmp_path):
    """``coordinator_for(stream, **options)``: the driver side of a samza-kinesis query on the test's emulator."""
    def make(stream: str, **extra: str) -> KinesisCoordinator:
        options = {
            "streamName": stream, "endpointUrl": kinesis_endpoint, "dynamodbEndpointUrl": moto_server,
            "region": "us-east-1", "awsAccessKeyId": "testing", "awsSecretKey": "testing",
            "job.name": f"job-{uuid.uuid4().hex[:8]}", "metadata.store": f"file://{tmp_path / 'metadata'}",
            **extra,
        }
        return KinesisCoordinator(KinesisSourceOptions.parse(options))

    return make


def test_an_unknown_shard_id_fails_naming_it(make_stream, coordinator_for):
    stream = make_stream(2)
    typo = "shardId-00000000001"  # one zero short
    coordinator = coordinator_for(stream, startingPosition=json.dumps({S0: "TRIM_HORIZON", typo: "TRIM_HORIZON"}))
    with pytest.raises(ConfigError) as err:
        coordinator.initial_offset()
    text = str(err.value)
    assert "option 'startingPosition'" in text and repr(typo) in text and stream in text
    assert S1 in text  # the shards the stream does have, so the typo is easy to fix


def test_shards_not_named_start_at_latest_but_descendants_of_a_named_shard_at_trim_horizon(
        kinesis, make_stream, coordinator_for):
    stream = make_stream(2)
    kh.put_records(kinesis, stream, [b"a", b"b"], explicit_hash_key=0)  # into shard 0
    kh.split_shard(kinesis, stream, S0)  # shard 0 closes; its children hold what follows it
    listed = {s["ShardId"]: s for s in kh.list_shards(kinesis, stream)}
    kids = sorted(sid for sid in listed if sid not in (S0, S1))
    assert len(kids) == 2 and all(listed[k]["ParentShardId"] == S0 for k in kids)

    coordinator = coordinator_for(stream, startingPosition=json.dumps({S0: "TRIM_HORIZON"}))
    before = int(time.time() * 1000)
    offset = coordinator.initial_offset()
    starts = {sid: state.start for sid, state in offset.shards.items()}
    assert starts[S0].type == TRIM_HORIZON  # named
    for kid in kids:  # the records after shard 0's end: starting them "now" would skip them
        assert starts[kid].type == TRIM_HORIZON, kid
    # not named: LATEST, as Spark's Kafka source starts partitions not named in startingOffsets at latest
    assert starts[S1].type == AT_TIMESTAMP and starts[S1].timestamp_ms >= before
    assert offset.latest_timestamp_ms == starts[S1].timestamp_ms

    # naming only shard 1: the closed shard 0 (not named, not below a named shard) is done, its children start at
    # the query's start like any shard not named
    offset = coordinator_for(stream, startingPosition=json.dumps({S1: "TRIM_HORIZON"})).initial_offset()
    starts = {sid: state.start for sid, state in offset.shards.items()}
    assert starts[S1].type == TRIM_HORIZON and starts[S0].type == SHARD_END
    assert all(starts[kid].type == AT_TIMESTAMP for kid in kids)


def test_a_sequence_number_beyond_a_closed_shards_range_fails(kinesis, make_stream, coordinator_for):
    stream = make_stream(2)
    kh.put_records(kinesis, stream, [b"a", b"b"], explicit_hash_key=0)
    kh.split_shard(kinesis, stream, S0)
    ending = {s["ShardId"]: s for s in kh.list_shards(kinesis, stream)}[S0]["SequenceNumberRange"][
        "EndingSequenceNumber"]
    beyond = str(int(ending) + 10**6)
    coordinator = coordinator_for(stream, startingPosition=json.dumps(
        {S0: {"type": "AFTER_SEQUENCE_NUMBER", "sequence": beyond, "sub": -1}}))
    with pytest.raises(ConfigError) as err:
        coordinator.initial_offset()
    text = str(err.value)
    assert "option 'startingPosition'" in text and S0 in text and beyond in text
    assert "does not belong to the shard" in text and ending in text


# moto accepts any shard's sequence numbers; kinesalite refuses them, as AWS does (docs/kinesis-emulators.md)
@pytest.mark.emulators("kinesalite")
def test_a_sequence_number_of_another_shard_fails(kinesis, make_stream, coordinator_for):
    stream = make_stream(2)
    high = kh.list_shards(kinesis, stream)[1]["HashKeyRange"]["StartingHashKey"]
    acks = kh.put_records(kinesis, stream, [b"a"], explicit_hash_key=high)
    assert acks[0].shard_id == S1
    # shard 1's sequence numbers lie above shard 0's StartingSequenceNumber, so only Kinesis can tell
    coordinator = coordinator_for(stream, startingPosition=json.dumps(
        {S0: {"type": "AFTER_SEQUENCE_NUMBER", "sequence": acks[0].sequence, "sub": -1}}))
    with pytest.raises(ConfigError) as err:
        coordinator.initial_offset()
    text = str(err.value)
    assert "option 'startingPosition'" in text and S0 in text and acks[0].sequence in text
    assert "Kinesis refuses that sequence number for this shard" in text and "testing" not in text


def test_at_timestamp_in_the_future_fails_as_kinesis_refuses_it(make_stream, coordinator_for):
    stream = make_stream(1)
    coordinator = coordinator_for(stream, startingPosition="AT_TIMESTAMP:2999-01-01T00:00:00Z")
    with pytest.raises(ConfigError) as err:
        coordinator.initial_offset()
    text = str(err.value)
    assert "option 'startingPosition'" in text and "2999-01-01T00:00:00.000Z" in text and "in the future" in text

    future_ms = int(time.time() * 1000) + HOUR_MS
    coordinator = coordinator_for(stream, startingPosition=json.dumps(
        {S0: {"type": "AT_TIMESTAMP", "timestampMs": future_ms}}))
    with pytest.raises(ConfigError, match=rf"option 'startingPosition' for shard {S0}: AT_TIMESTAMP .* future"):
        coordinator.initial_offset()


def test_a_timestamp_later_than_kinesis_clock_reads_nothing_yet_and_later_records_from_it(
        kinesis, kinesis_endpoint, make_stream):
    """The driver resolves LATEST and Timestamp startpoints by its own clock; Kinesis' clock may be behind it (AWS
    and kinesalite then refuse the iterator): the read finds nothing yet instead of failing the task."""
    stream = make_stream(1)
    kh.put_records(kinesis, stream, [b"before"])
    client = kinesis_client({"endpoint_url": kinesis_endpoint, "region": "us-east-1", "access_key_id": "testing",
                             "secret_key": "testing"})
    start = ShardPosition.at_timestamp(int(time.time() * 1000) + HOUR_MS)
    result = read_shard(client, stream, S0, start, task="Task-0", max_fetch_time_ms=2000)
    assert result.records == 0 and result.end == start and result.stop == STOP_CAUGHT_UP
