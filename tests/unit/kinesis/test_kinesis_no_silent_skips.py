"""No silent skips on samza-kinesis, the pure parts: the stream identity in the offset (and offsets without it),
the re-created stream's next offset, per-shard start rules, and the errors for offsets the source cannot use."""

import dataclasses
import json

import pytest

from spark_samza_source.core.errors import ConfigError, OffsetFormatError
from spark_samza_source.kinesis.driver.offset import KinesisOffset, StreamIdentity
from spark_samza_source.kinesis.driver.planner import initial_offset, recreated_stream_offset
from spark_samza_source.kinesis.positions import ShardPosition as P
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.kinesis.source import SamzaKinesisStreamReader
from spark_samza_source.kinesis.starting import check_not_future, per_shard_starts

ID = StreamIdentity("arn:aws:kinesis:us-east-1:123456789012:stream/clicks", 1_700_000_000_000)
HALF = 2**127


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


SHARDS = [ShardInfo(sid(0), (), 0, HALF - 1, "100", "200"), ShardInfo(sid(1), (), HALF, 2**128 - 1, "150"),
          ShardInfo(sid(2), (sid(0),), 0, HALF // 2 - 1, "300"), ShardInfo(sid(3), (sid(0),), HALF // 2, HALF - 1,
                                                                            "310")]


def test_the_stream_identity_round_trips_and_offsets_without_it_still_load():
    offset = initial_offset(SHARDS, stream="clicks", query_id="q1", stream_identity=ID)
    text = offset.to_json_str()
    assert '"streamIdentity":{"arn":"arn:aws:kinesis:us-east-1:123456789012:stream/clicks","createdMs":1700000000000}' \
        in text
    assert KinesisOffset.from_json_str(text).stream_identity == ID
    old = json.loads(text)
    del old["streamIdentity"]  # as written by the release before
    assert KinesisOffset.from_json(old).stream_identity is None
    with pytest.raises(OffsetFormatError, match="createdMs"):
        KinesisOffset.from_json({**old, "streamIdentity": {"arn": "x", "createdMs": "yesterday"}})


def test_a_recreated_stream_starts_every_shard_at_trim_horizon_in_a_new_job_model():
    before = initial_offset(SHARDS, 2, stream="clicks", query_id="q1", stream_identity=ID)
    before = dataclasses.replace(before, batch=9)
    new_id = StreamIdentity(ID.arn, ID.created_ms + 5000)
    after = recreated_stream_offset(before, [ShardInfo(sid(0), (), 0, 2**128 - 1, "1")], new_id)
    assert after.batch == 10 and after.generation == before.generation + 1 and after.query_id == "q1"
    assert after.stream_identity == new_id and after.num_tasks == 2
    assert {s: st.start for s, st in after.shards.items()} == {sid(0): P.trim_horizon()}


def test_per_shard_starts_rules():
    starts = per_shard_starts({sid(0): P.after_sequence("150")}, SHARDS, latest_timestamp_ms=5, stream="clicks",
                         option="startingPosition")
    assert starts == {sid(0): P.after_sequence("150"), sid(1): P.at_timestamp(5), sid(2): P.trim_horizon(),
                      sid(3): P.trim_horizon()}
    for seq in ("99", "201"):  # below the start, above the end of the closed shard 0
        with pytest.raises(ConfigError, match=rf"shard {sid(0)} .* does not belong to the shard"):
            per_shard_starts({sid(0): P.at_sequence(seq)}, SHARDS, latest_timestamp_ms=5, stream="clicks",
                         option="startingPosition")
    with pytest.raises(ConfigError, match=r"'shardId-9' that stream 'clicks' does not have"):
        per_shard_starts({"shardId-9": P.trim_horizon()}, SHARDS, latest_timestamp_ms=5, stream="clicks",
                         option="startingPosition")
    with pytest.raises(ConfigError, match="in the future"):
        per_shard_starts({sid(1): P.at_timestamp(6)}, SHARDS, latest_timestamp_ms=5, stream="clicks",
                         option="startingPosition")
    check_not_future(5, 5, "x")  # now itself is fine


def test_offsets_the_source_cannot_use_name_the_offsets_file_and_the_fix():
    good = initial_offset(SHARDS, stream="clicks", query_id="q1").to_json()
    damaged = {**good, "batch": 4, "shards": {}}
    reader = SamzaKinesisStreamReader(None, None)  # the offsets fail before any coordinator is made
    with pytest.raises(OffsetFormatError) as err:
        reader.latestOffset(damaged, None)
    assert "offsets/3 in the checkpoint location" in str(err.value) and "lists no shards" in str(err.value)
    assert "latestOffset" in str(err.value)
    with pytest.raises(OffsetFormatError) as err:
        reader.commit({**good, "batch": 2, "shards": {sid(0): {"start": {"type": "SIDEWAYS"}, "status": "drained"}}})
    text = str(err.value)
    assert "offsets/1" in text and "commit" in text and "SIDEWAYS" in text and "new checkpoint location" in text
