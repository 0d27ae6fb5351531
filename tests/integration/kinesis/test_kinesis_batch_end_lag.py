"""MillisBehindLatest recorded with each shard's batch end (``microbatch_ends``), against moto and the real stores.

The reader's figure where a shard's read stopped is what the driver reports as the query's Kinesis lag, so it must
be Kinesis' own answer at that point (checked against a ``GetRecords`` that ends at the same record), the first
attempt's figure must hold like its end, a drained shard is 0 behind, and ends recorded before the figure was kept
(or with a damaged one) still read.
"""

from __future__ import annotations

import time

import pytest

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.kinesis.executor.reader import shard_read_args
from spark_samza_source.kinesis.executor.recorded_reads import read_and_record
from spark_samza_source.kinesis.microbatch_ends import NAMESPACE, BatchEnds, RecordedEnd
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.metadata import open_store

SHARD0 = "shardId-000000000000"
TASK = "Task-0"
FAST = {"min_call_interval_ms": 0}
GAP_S = 1.0


@pytest.fixture(params=["file", "dynamodb"])
def ends(request, tmp_path):
    uri = f"file://{tmp_path}/meta" if request.param == "file" else request.getfixturevalue("dynamodb_store_uri")
    store = open_store(uri, "lag-etl")
    yield BatchEnds(store, stream="clicks/q1")
    store.close()


def test_the_figure_is_kept_beside_the_end_and_the_first_one_holds(ends):
    a, b = ShardPosition.after_sequence("10"), ShardPosition.after_sequence("20")
    assert ends.record(4, SHARD0, a, task=TASK, millis_behind_latest=1500) == a
    assert ends.record(4, SHARD0, b, task=TASK, millis_behind_latest=0) == a  # another attempt: both lose
    ends.record(4, "shardId-000000000001", ShardPosition.shard_end(), millis_behind_latest=0)
    ends.record(4, "shardId-000000000002", a)  # a read that made no GetRecords call: no figure
    assert ends.recorded_for(4) == {
        SHARD0: RecordedEnd(a, 1500),
        "shardId-000000000001": RecordedEnd(ShardPosition.shard_end(), 0),
        "shardId-000000000002": RecordedEnd(a, None),
    }
    assert ends.ends_for(4) == {sid: rec.end for sid, rec in ends.recorded_for(4).items()}


def test_ends_recorded_without_a_figure_or_with_a_damaged_one_still_read(ends):
    a = ShardPosition.after_sequence("10")
    ends.store.put(NAMESPACE, ends.key(6, SHARD0), {"end": a.to_json(), "task": TASK, "recordedAtMs": 1})  # older
    for n, bad in enumerate([-5, "1500", True, 1.5]):
        ends.store.put(NAMESPACE, ends.key(6, f"shardId-00000000010{n}"),
                       {"end": a.to_json(), "millisBehindLatest": bad})
    found = ends.recorded_for(6)
    assert len(found) == 5 and all(rec == RecordedEnd(a, None) for rec in found.values())


def millis_behind_at(client, stream: str, shard: str, sequence: str) -> int:
    """What Kinesis answers for a GetRecords that ends with the record ``sequence``."""
    iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="AT_SEQUENCE_NUMBER",
                                         StartingSequenceNumber=sequence)["ShardIterator"]
    resp = client.get_records(ShardIterator=iterator, Limit=1)
    assert [r["SequenceNumber"] for r in resp["Records"]] == [sequence]
    return resp["MillisBehindLatest"]


def test_a_read_records_kinesis_answer_where_it_stopped_behind_then_zero_at_the_tip(kinesis, make_stream, tmp_path):
    """Behind (the read stops 20 records into a chunk put GAP_S before the next one) vs caught up (0); a retry
    that reads exactly to the recorded end leaves the first attempt's figure."""
    stream = make_stream(1)
    kh.put_records(kinesis, stream, [b"first"] * 40)
    time.sleep(GAP_S)
    kh.put_records(kinesis, stream, [b"second"] * 40)
    ends = BatchEnds(open_store(f"file://{tmp_path}/meta", "lag-etl"))

    behind = read_and_record(ends, 1, kinesis,
                             *shard_read_args(stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_records=20,
                                             **FAST))
    [recorded] = ends.recorded_for(1).values()
    assert recorded.end == behind.end and behind.records == 20
    expected = millis_behind_at(kinesis, stream, SHARD0, behind.end.sequence)
    assert recorded.millis_behind_latest == expected >= GAP_S * 1000 * 0.9

    # exact: to the recorded end, records nothing new
    retry = read_and_record(ends, 1, kinesis,
                            *shard_read_args(stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_records=80,
                                            **FAST))
    assert retry.end == behind.end and ends.recorded_for(1)[SHARD0].millis_behind_latest == expected

    tip = read_and_record(ends, 2, kinesis,
                          *shard_read_args(stream, SHARD0, behind.end, task=TASK, max_records=1000, **FAST))
    assert tip.records == 60
    assert ends.recorded_for(2)[SHARD0].millis_behind_latest == 0


def test_a_drained_shard_is_recorded_zero_behind_even_without_a_call(kinesis, make_stream, tmp_path):
    stream = make_stream(1)
    ends = BatchEnds(open_store(f"file://{tmp_path}/meta", "lag-etl"))
    at_end = shard_read_args(stream, SHARD0, ShardPosition.shard_end(), task=TASK, **FAST)
    done = read_and_record(ends, 3, kinesis, *at_end)
    assert done.calls == 0 and done.millis_behind_latest is None  # Kinesis said nothing ...
    assert ends.recorded_for(3)[SHARD0] == RecordedEnd(ShardPosition.shard_end(), 0)  # ... nothing is left
