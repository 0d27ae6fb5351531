"""read_shard and the batch-end protocol against moto in server mode (real boto3 over HTTP), or a real endpoint.

Failures (throttling, expired iterators, trimmed data) are injected through botocore's event system on the
client, so Kinesis itself behaves normally and the reader's recovery is what is measured: no record lost or
repeated.
"""

from __future__ import annotations

import logging
import threading
import time

import pyarrow as pa
import pytest
from botocore.exceptions import ClientError

from samza_devkit import kinesis_helpers as kh
from samza_devkit.waits import scaled
from spark_samza_source.core.errors import MetadataStoreError
from spark_samza_source.kinesis.errors import AttemptPassedRecordedEndError, KinesisDataLossError, KinesisThrottledError
from spark_samza_source.kinesis.executor.reader import (
    STOP_CAUGHT_UP,
    STOP_MAX_FETCH_TIME,
    STOP_MAX_RECORDS,
    STOP_RECORDED_END,
    STOP_SHARD_END,
    shard_read_args,
)
from spark_samza_source.kinesis.executor.recorded_reads import read_and_record, stream_and_record
from spark_samza_source.kinesis.executor.shard_reads import read_shard
from spark_samza_source.kinesis.kpl import UserRecord
from spark_samza_source.kinesis.microbatch_ends import BatchEnds
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.schema import kinesis_arrow_schema
from spark_samza_source.metadata import open_store

SHARD0 = "shardId-000000000000"
TASK = "Partition 0"
FAST = {"min_call_interval_ms": 0}  # pacing is tested on its own; elsewhere it would only slow the suite


@pytest.fixture
def stream5000(kinesis, make_stream):
    stream = make_stream(1)
    puts = kh.put_records(kinesis, stream, [(f"pk-{i % 37}", f"record-{i}".encode()) for i in range(5000)])
    return stream, puts


def rows(result) -> list[tuple]:
    t = result.table()
    return list(zip(t.column("sequenceNumber").to_pylist(), t.column("subSequenceNumber").to_pylist(),
                    t.column("data").to_pylist(), strict=True))


def all_rows(results) -> list[tuple]:
    return [r for res in results for r in rows(res)]


def read_in_chunks(kinesis, stream, start, chunk, **kw) -> list:
    """Batch after batch, each starting at the previous end, until caught up (or the shard ended)."""
    results = []
    pos = start
    for _ in range(10_000):
        res = read_shard(kinesis, stream, SHARD0, pos, task=TASK, max_records=chunk, **FAST, **kw)
        results.append(res)
        assert res.records <= chunk
        pos = res.end
        if res.stop in (STOP_CAUGHT_UP, STOP_SHARD_END):
            return results
    raise AssertionError("never caught up")


def inject(kinesis, operation: str, code: str, calls: set[int]):
    """Make the n-th calls (1-based) of ``operation`` fail with ``code`` before they are sent."""
    seen = {"n": 0}

    def handler(**kwargs):
        seen["n"] += 1
        if seen["n"] in calls:
            raise ClientError({"Error": {"Code": code, "Message": "injected"}}, operation)

    kinesis.meta.events.register(f"before-call.kinesis.{operation}", handler)
    return lambda: kinesis.meta.events.unregister(f"before-call.kinesis.{operation}", handler)


def count_calls(kinesis, operation: str) -> dict:
    seen = {"n": 0, "times": []}

    def handler(**kwargs):
        seen["n"] += 1
        seen["times"].append(time.monotonic())

    kinesis.meta.events.register(f"before-call.kinesis.{operation}", handler)
    return seen


# ---- plain reads ----------------------------------------------------------------------------------------------------
def test_reads_5000_records_exactly_with_the_exact_arrow_schema(kinesis, stream5000):
    stream, puts = stream5000
    res = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_records=100_000, **FAST)
    assert res.records == res.kinesis_records == 5000
    assert res.stop == STOP_CAUGHT_UP
    assert res.end == ShardPosition.after_sequence(puts[-1].sequence)
    assert all(b.schema.equals(kinesis_arrow_schema()) for b in res.batches)
    t = res.table()
    assert t.column("data").to_pylist() == [p.data for p in puts]
    assert t.column("sequenceNumber").to_pylist() == [p.sequence for p in puts]
    assert t.column("partitionKey").to_pylist() == [p.partition_key for p in puts]
    assert set(t.column("subSequenceNumber").to_pylist()) == {0}
    assert set(t.column("streamName").to_pylist()) == {stream}
    assert set(t.column("shardId").to_pylist()) == {SHARD0}
    assert set(t.column("task").to_pylist()) == {TASK}
    arrivals = t.column("approximateArrivalTimestamp")
    assert arrivals.null_count == 0 and str(arrivals.type) == "timestamp[us, tz=UTC]"
    assert abs(arrivals[0].as_py().timestamp() - time.time()) < 600


def test_batches_are_bounded_by_max_records_and_chain_without_loss_or_repeat(kinesis, stream5000):
    stream, puts = stream5000
    results = read_in_chunks(kinesis, stream, ShardPosition.trim_horizon(), 777, max_rows_per_batch=300)
    assert [r.records for r in results[:-1]] == [777] * 6 and results[-1].records == 5000 - 6 * 777
    assert [r.stop for r in results[:-1]] == [STOP_MAX_RECORDS] * 6
    assert all(b.num_rows <= 300 for r in results for b in r.batches)
    assert [s for s, _, _ in all_rows(results)] == [p.sequence for p in puts]
    for prev, nxt in zip(results, results[1:], strict=False):
        assert nxt.start == prev.end == ShardPosition.after_sequence(rows(prev)[-1][0])
    # nothing new: a read from the last end returns nothing and keeps the position
    again = read_shard(kinesis, stream, SHARD0, results[-1].end, task=TASK, **FAST)
    assert again.records == 0 and again.end == results[-1].end and again.stop == STOP_CAUGHT_UP


def test_a_resumed_full_page_read_costs_one_call_and_stops_one_row_short(kinesis, stream5000):
    """Resuming re-reads the last record (to notice trimming) and skips it; when max_records fills a whole page
    the reader stops one row short instead of calling GetRecords again for the last row."""
    stream, puts = stream5000
    results = read_in_chunks(kinesis, stream, ShardPosition.trim_horizon(), 500, records_per_call=500)
    assert results[0].records == 500 and results[0].calls == 1  # a fresh start skips nothing: a whole page
    assert {r.records for r in results[1:-1]} == {499} and {r.calls for r in results[1:-1]} == {1}
    assert [r.stop for r in results[:-1]] == [STOP_MAX_RECORDS] * (len(results) - 1)
    assert [s for s, _, _ in all_rows(results)] == [p.sequence for p in puts]  # nothing lost or repeated


def test_one_record_pages_still_make_progress(kinesis, make_stream):
    """With a page of one record there is no row to give up: the reader asks for the next page instead."""
    stream = make_stream(1)
    puts = kh.put_records(kinesis, stream, [b"a", b"b", b"c"])
    results = read_in_chunks(kinesis, stream, ShardPosition.trim_horizon(), 1, records_per_call=1)
    assert [r.records for r in results[:3]] == [1, 1, 1]
    assert [s for s, _, _ in all_rows(results)] == [p.sequence for p in puts]


def test_reads_from_every_start_position_type(kinesis, stream5000):
    stream, puts = stream5000
    at = read_shard(kinesis, stream, SHARD0, ShardPosition.at_sequence(puts[10].sequence), task=TASK,
                    max_records=3, **FAST)
    assert [s for s, _, _ in rows(at)] == [p.sequence for p in puts[10:13]]
    after = read_shard(kinesis, stream, SHARD0, ShardPosition.after_sequence(puts[10].sequence), task=TASK,
                       max_records=3, **FAST)
    assert [s for s, _, _ in rows(after)] == [p.sequence for p in puts[11:14]]
    time.sleep(0.05)
    mark = int(time.time() * 1000)
    time.sleep(0.05)
    late = kh.put_records(kinesis, stream, [b"late-1", b"late-2"])
    ts = read_shard(kinesis, stream, SHARD0, ShardPosition.at_timestamp(mark), task=TASK, **FAST)
    assert [d for _, _, d in rows(ts)] == [b"late-1", b"late-2"] and ts.end.sequence == late[-1].sequence
    assert read_shard(kinesis, stream, SHARD0, ShardPosition.shard_end(), task=TASK, **FAST).stop == STOP_SHARD_END


def test_max_fetch_time_bounds_a_read(kinesis, stream5000):
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    res = read_shard(kinesis, stream, SHARD0, start, task=TASK, max_fetch_time_ms=0, **FAST)
    assert res.records == 0 and res.end == start and res.stop == STOP_MAX_FETCH_TIME and res.calls == 0
    slow = read_shard(kinesis, stream, SHARD0, start, task=TASK, max_fetch_time_ms=500, records_per_call=100,
                      min_call_interval_ms=200)
    assert slow.stop == STOP_MAX_FETCH_TIME and 100 <= slow.records <= 400


def test_calls_are_paced_to_five_per_second(kinesis, stream5000):
    stream, _ = stream5000
    seen = count_calls(kinesis, "GetRecords")
    res = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, records_per_call=1000)
    assert res.records == 5000 and seen["n"] >= 5
    gaps = [b - a for a, b in zip(seen["times"], seen["times"][1:], strict=False)]
    assert min(gaps) >= 0.19


# ---- exact re-reads -------------------------------------------------------------------------------------------------
def test_exact_read_to_a_recorded_end_ignores_newer_data_and_limits(kinesis, stream5000):
    stream, puts = stream5000
    start = ShardPosition.after_sequence(puts[99].sequence)
    first = read_shard(kinesis, stream, SHARD0, start, task=TASK, max_records=1000, **FAST)
    assert first.end == ShardPosition.after_sequence(puts[1099].sequence)
    kh.put_records(kinesis, stream, [f"more-{i}".encode() for i in range(500)])  # more data arrived
    again = read_shard(kinesis, stream, SHARD0, start, task=TASK, recorded_end=first.end, max_records=5, **FAST)
    assert again.stop == STOP_RECORDED_END and again.end == first.end
    assert again.table().equals(first.table())
    # recorded "nothing read": nothing is read, not even with data there
    none = read_shard(kinesis, stream, SHARD0, start, task=TASK, recorded_end=start, **FAST)
    assert none.records == 0 and none.calls == 0 and none.end == start


def test_exact_read_fails_clearly_when_the_recorded_end_cannot_be_reached(kinesis, stream5000):
    stream, puts = stream5000
    start = ShardPosition.after_sequence(puts[10].sequence)
    with pytest.raises(KinesisDataLossError, match=r"lies before the start"):
        read_shard(kinesis, stream, SHARD0, start, task=TASK,
                   recorded_end=ShardPosition.after_sequence(puts[5].sequence), **FAST)
    beyond = ShardPosition.after_sequence("99999999")
    with pytest.raises(KinesisDataLossError, match=rf"{SHARD0}.*after 99999999.*caught up"):
        read_shard(kinesis, stream, SHARD0, start, task=TASK, recorded_end=beyond, **FAST)
    with pytest.raises(KinesisDataLossError, match="exact_timeout_ms"):
        read_shard(kinesis, stream, SHARD0, start, task=TASK, recorded_end=beyond, exact_timeout_ms=0, **FAST)


# ---- closed shards --------------------------------------------------------------------------------------------------
def test_closed_shard_ends_at_its_ending_sequence_number(kinesis, make_stream):
    stream = make_stream(1)
    puts = kh.put_records(kinesis, stream, [f"p{i}".encode() for i in range(300)])
    kh.split_shard(kinesis, stream, SHARD0)
    (parent,) = [s for s in kh.list_shards(kinesis, stream) if s["ShardId"] == SHARD0]
    ending = parent["SequenceNumberRange"]["EndingSequenceNumber"]
    assert ending == puts[-1].sequence  # moto: the last record's sequence number
    full = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, ending_sequence=ending,
                      **FAST)
    assert full.records == 300 and full.end == ShardPosition.shard_end() and full.stop == STOP_SHARD_END
    # a batch that stops exactly on the last record knows the shard is drained
    cut = read_shard(kinesis, stream, SHARD0, ShardPosition.after_sequence(puts[199].sequence), task=TASK,
                     ending_sequence=ending, max_records=100, **FAST)
    assert cut.records == 100 and cut.end.is_shard_end
    # the position right after the ending sequence number is SHARD_END without any call
    seen = count_calls(kinesis, "GetRecords")
    done = read_shard(kinesis, stream, SHARD0, ShardPosition.after_sequence(ending), task=TASK,
                      ending_sequence=ending, **FAST)
    assert done.end.is_shard_end and seen["n"] == 0
    # exact re-read to SHARD_END
    exact = read_shard(kinesis, stream, SHARD0, ShardPosition.after_sequence(puts[249].sequence), task=TASK,
                       ending_sequence=ending, recorded_end=ShardPosition.shard_end(), **FAST)
    assert exact.records == 50 and exact.end.is_shard_end
    # a closed shard without records (moto: ending sequence "0") drains at once
    kh.split_shard(kinesis, stream, "shardId-000000000002")
    (empty,) = [s for s in kh.list_shards(kinesis, stream) if s["ShardId"] == "shardId-000000000002"]
    res = read_shard(kinesis, stream, "shardId-000000000002", ShardPosition.trim_horizon(), task=TASK,
                     ending_sequence=empty["SequenceNumberRange"]["EndingSequenceNumber"], **FAST)
    assert res.records == 0 and res.end.is_shard_end


def test_a_null_next_iterator_means_shard_end(kinesis, stream5000):
    """Real Kinesis ends a closed shard with a null NextShardIterator (moto never does): simulated here."""
    stream, puts = stream5000

    def drop_iterator(parsed, **kwargs):
        parsed.pop("NextShardIterator", None)

    kinesis.meta.events.register("after-call.kinesis.GetRecords", drop_iterator)
    try:
        res = read_shard(kinesis, stream, SHARD0, ShardPosition.after_sequence(puts[4989].sequence), task=TASK,
                         records_per_call=3, **FAST)
    finally:
        kinesis.meta.events.unregister("after-call.kinesis.GetRecords", drop_iterator)
    # resuming after S fetches S itself (to notice trimming) and skips it: 3 fetched, 2 rows
    assert res.records == 2 and res.kinesis_records == 3 and res.calls == 1
    assert res.end.is_shard_end and res.stop == STOP_SHARD_END


@pytest.mark.both_emulators
def test_a_closed_shard_read_as_if_open_drains_on_the_null_iterator(kinesis, make_stream, emulator):
    """The plan listed the shard open (no ending sequence), then it was split: the reader learns the end only from
    GetRecords. moto (patched as AWS documents) returns the null NextShardIterator with the last records; kinesalite
    returns them with an iterator and null one call later. Both orders end in SHARD_END without loss or repeat.

    Backs docs/guarantees.md: "Kinesis children are read only after every parent is drained ... real Kinesis ends a
    closed shard with a null NextShardIterator".
    """
    stream = make_stream(1)
    puts = kh.put_records(kinesis, stream, [f"p{i}".encode() for i in range(30)])
    first = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_records=20, **FAST)
    assert first.records == 20 and not first.end.is_shard_end
    kh.split_shard(kinesis, stream, SHARD0)
    calls = count_calls(kinesis, "GetRecords")
    rest = read_shard(kinesis, stream, SHARD0, first.end, task=TASK, **FAST)  # the last 10 records
    assert rest.table().column("data").to_pylist() == [p.data for p in puts[20:]]
    if emulator == "moto":  # null together with the last records: drained in this read, one call
        assert rest.end.is_shard_end and rest.stop == STOP_SHARD_END and calls["n"] == 1
        # a read starting after the last record: no records and the null iterator
        done = read_shard(kinesis, stream, SHARD0, ShardPosition.after_sequence(puts[-1].sequence), task=TASK,
                          **FAST)
        assert done.records == 0 and done.end.is_shard_end
    else:  # caught up with an iterator (the batch ends there, the shard not yet drained) ...
        assert not rest.end.is_shard_end and rest.stop == STOP_CAUGHT_UP
        # ... and a resumed read re-fetches the last record (to notice trimming), again with an iterator; the next
        # plan lists the shard closed, and a caught-up read of a closed shard is its end
        (parent,) = [s for s in kh.list_shards(kinesis, stream) if s["ShardId"] == SHARD0]
        ending = parent["SequenceNumberRange"]["EndingSequenceNumber"]
        after = read_shard(kinesis, stream, SHARD0, rest.end, task=TASK, ending_sequence=ending, **FAST)
        assert after.records == 0 and after.end.is_shard_end and after.stop == STOP_SHARD_END


# ---- KPL aggregation ------------------------------------------------------------------------------------------------
@pytest.fixture
def aggregated(kinesis, make_stream):
    """40 Kinesis records: aggregates of 1..7 user records, every fifth one a plain record."""
    stream = make_stream(1)
    expected = []  # (sequence, sub, data)
    for i in range(40):
        if i % 5 == 4:
            (put,) = kh.put_records(kinesis, stream, [(f"plain-{i}", f"plain-{i}".encode())])
            expected.append((put.sequence, 0, put.data))
        else:
            users = [UserRecord(f"k{i}-{j}", f"agg-{i}-{j}".encode()) for j in range(1 + i % 7)]
            (put,) = kh.put_aggregated(kinesis, stream, [users])
            expected.extend((put.sequence, j, u.data) for j, u in enumerate(users))
    return stream, expected


def test_kpl_aggregates_are_deaggregated_with_sub_sequence_numbers(kinesis, aggregated):
    stream, expected = aggregated
    res = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, **FAST)
    assert rows(res) == expected
    assert res.kinesis_records == 40 and res.records == len(expected)
    assert res.table().column("partitionKey").to_pylist()[:3] == ["k0-0", "k1-0", "k1-1"]


@pytest.mark.parametrize("chunk", [1, 3, 4, 10])
def test_batches_ending_inside_an_aggregate_resume_at_the_next_sub_record(kinesis, aggregated, chunk):
    stream, expected = aggregated
    results = read_in_chunks(kinesis, stream, ShardPosition.trim_horizon(), chunk)
    assert all_rows(results) == expected
    inside = [r.end for r in results if r.end.sub >= 0]
    assert inside, "some batch must end inside an aggregate"
    for res in results[:-1]:
        last_seq, last_sub, _ = rows(res)[-1]
        whole = last_sub == max(sub for seq, sub, _ in expected if seq == last_seq)
        assert res.end == ShardPosition.after_sequence(last_seq, -1 if whole else last_sub)


def test_exact_read_to_an_end_inside_an_aggregate(kinesis, aggregated):
    stream, expected = aggregated
    first = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_records=8, **FAST)
    assert first.end.sub >= 0
    kh.put_aggregated(kinesis, stream, [[("late", b"late")]])
    again = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, recorded_end=first.end,
                       max_records=1000, **FAST)
    assert rows(again) == rows(first) == expected[:8] and again.end == first.end
    rest = read_shard(kinesis, stream, SHARD0, first.end, task=TASK, **FAST)
    assert rows(rest)[: len(expected) - 8] == expected[8:]


def test_aggregates_with_user_records_outside_the_shard_are_dropped_as_the_kcl_does(kinesis, make_stream):
    stream = make_stream(2)
    shards = {s["ShardId"]: s for s in kh.list_shards(kinesis, stream)}
    lo = int(shards[SHARD0]["HashKeyRange"]["StartingHashKey"])
    hi = int(shards[SHARD0]["HashKeyRange"]["EndingHashKey"])
    inside = [UserRecord("a", b"in-1", str(lo)), UserRecord("b", b"in-2", str(lo + 1))]
    stray = [UserRecord("c", b"in-3", str(lo)), UserRecord("d", b"out", str(hi + 1))]  # 2nd belongs to shard 1
    kh.put_aggregated(kinesis, stream, [inside, stray], explicit_hash_key=lo)
    kh.put_records(kinesis, stream, [("e", b"plain")], explicit_hash_key=lo)
    filtered = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, hash_range=(lo, hi),
                          **FAST)
    assert [d for _, _, d in rows(filtered)] == [b"in-1", b"in-2", b"plain"]
    unfiltered = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, **FAST)
    assert [d for _, _, d in rows(unfiltered)] == [b"in-1", b"in-2", b"in-3", b"out", b"plain"]


# ---- throttling, expired iterators, lost data -----------------------------------------------------------------------
@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "LimitExceededException"])
def test_throttling_slows_down_but_loses_and_repeats_nothing(kinesis, stream5000, code):
    stream, puts = stream5000
    undo = inject(kinesis, "GetRecords", code, {1, 2, 4, 7, 8, 9})
    try:
        results = read_in_chunks(kinesis, stream, ShardPosition.trim_horizon(), 1500, records_per_call=400)
    finally:
        undo()
    assert [s for s, _, _ in all_rows(results)] == [p.sequence for p in puts]
    assert sum(r.retries for r in results) == 6


def test_expired_iterators_are_renewed_from_the_position_reached(kinesis, stream5000):
    stream, puts = stream5000
    iterators = count_calls(kinesis, "GetShardIterator")
    undo = inject(kinesis, "GetRecords", "ExpiredIteratorException", {2, 3, 6})
    try:
        res = read_shard(kinesis, stream, SHARD0, ShardPosition.after_sequence(puts[99].sequence), task=TASK,
                         max_records=3000, records_per_call=500, **FAST)
    finally:
        undo()
    assert [s for s, _, _ in rows(res)] == [p.sequence for p in puts[100:3100]]
    assert res.retries == 3 and iterators["n"] == 1 + 3


def test_endless_throttling_fails_clearly_or_ends_the_batch_at_max_fetch_time(kinesis, stream5000):
    stream, _ = stream5000
    undo = inject(kinesis, "GetRecords", "ProvisionedThroughputExceededException", set(range(1, 1000)))
    try:
        with pytest.raises(KinesisThrottledError, match=rf"{SHARD0}.*{stream}.*ProvisionedThroughputExceeded"):
            read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_retries=2,
                       max_fetch_time_ms=60_000, **FAST)
        res = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_retries=50,
                         max_fetch_time_ms=300, **FAST)
        assert res.records == 0 and res.stop == STOP_MAX_FETCH_TIME and res.end == ShardPosition.trim_horizon()
    finally:
        undo()


def trim_before(kinesis, first_kept: int):
    """Simulate retention: GetRecords no longer returns records below ``first_kept``."""

    def trim(parsed, **kwargs):
        if "Records" in parsed:
            parsed["Records"] = [r for r in parsed["Records"] if int(r["SequenceNumber"]) >= first_kept]

    kinesis.meta.events.register("after-call.kinesis.GetRecords", trim)
    return lambda: kinesis.meta.events.unregister("after-call.kinesis.GetRecords", trim)


def test_trimmed_data_is_detected(kinesis, stream5000, caplog):
    stream, puts = stream5000
    undo = trim_before(kinesis, 150)
    try:
        start = ShardPosition.after_sequence(puts[99].sequence)  # record 100: gone, and 101..149 with it
        with pytest.raises(KinesisDataLossError, match=rf"{SHARD0}.*{stream}.*after sequence number 100 up to "
                                                       r"\(excluding\) 150.*failOnDataLoss"):
            read_shard(kinesis, stream, SHARD0, start, task=TASK, max_records=10, **FAST)
        with caplog.at_level(logging.WARNING):
            res = read_shard(kinesis, stream, SHARD0, start, task=TASK, max_records=10, fail_on_data_loss=False,
                             **FAST)
        assert [s for s, _, _ in rows(res)] == [str(i) for i in range(150, 160)]
        assert res.lost and "trimmed" in caplog.text
        # a start the user chose (TRIM_HORIZON) is never data loss. The trim here hides records page by page, so
        # TRIM_HORIZON meets empty pages up to 150 where Kinesis would start at the oldest record kept: the read gets
        # the time to pass them on a busy machine (it ends at its first record)
        th = read_shard(kinesis, stream, SHARD0, ShardPosition.trim_horizon(), task=TASK, max_records=1,
                        max_fetch_time_ms=round(scaled(60) * 1000), **FAST)
        assert rows(th)[0][0] == "150" and not th.lost
        # an exact re-read whose data is gone fails, naming shard and positions
        recorded = ShardPosition.after_sequence("120")
        with pytest.raises(KinesisDataLossError, match=rf"recorded \(after 120\).*{SHARD0}.*100 up to \(excl"):
            read_shard(kinesis, stream, SHARD0, start, task=TASK, recorded_end=recorded, **FAST)
        tolerant = read_shard(kinesis, stream, SHARD0, start, task=TASK, recorded_end=recorded,
                              fail_on_data_loss=False, **FAST)
        assert tolerant.records == 0 and tolerant.end == recorded and len(tolerant.lost) == 2
    finally:
        undo()


def test_a_shard_that_no_longer_exists(kinesis, stream5000):
    stream, _ = stream5000
    gone = "shardId-000000000042"
    with pytest.raises(KinesisDataLossError, match=rf"{gone} of stream '{stream}' no longer exists"):
        read_shard(kinesis, stream, gone, ShardPosition.after_sequence("7"), task=TASK, **FAST)
    res = read_shard(kinesis, stream, gone, ShardPosition.after_sequence("7"), task=TASK, fail_on_data_loss=False,
                     **FAST)
    assert res.end.is_shard_end and res.lost


# ---- batch ends: put-if-absent winners and exact re-reads -----------------------------------------------------------
@pytest.fixture(params=["file", "dynamodb", "s3"])
def ends(request, tmp_path):
    """Batch ends in each exact store: local files, DynamoDB and S3 (conditional writes), the last two on moto."""
    kind = request.param
    uri = f"file://{tmp_path}/meta" if kind == "file" else request.getfixturevalue(f"{kind}_store_uri")
    store = open_store(uri, "clicks-etl")
    assert store.atomic_conditionals is True  # for s3: moto's server honours If-None-Match / If-Match
    yield BatchEnds(store)
    store.close()


def test_batch_ends_record_get_list_and_cleanup(ends):
    a, b = ShardPosition.after_sequence("10"), ShardPosition.after_sequence("20", 3)
    assert ends.get(7, SHARD0) is None
    assert ends.record(7, SHARD0, a, task=TASK) == a
    assert ends.record(7, SHARD0, b) == a  # first one holds
    assert ends.get(7, SHARD0) == a
    ends.record(7, "shardId-000000000001", ShardPosition.shard_end())
    ends.record(8, SHARD0, b)
    ends.record(12, SHARD0, b)
    assert ends.ends_for(7) == {SHARD0: a, "shardId-000000000001": ShardPosition.shard_end()}
    assert ends.ends_for(9) == {}
    assert ends.cleanup_before(8) == 2
    assert ends.ends_for(7) == {} and ends.get(8, SHARD0) == b and ends.get(12, SHARD0) == b
    scoped = BatchEnds(ends.store, stream="other")
    per_query = BatchEnds(ends.store, stream="other/query-1")  # how the coordinator scopes them
    scoped.record(12, SHARD0, a)
    per_query.record(12, SHARD0, ShardPosition.shard_end())
    assert scoped.get(12, SHARD0) == a and ends.get(12, SHARD0) == b
    assert ends.ends_for(12) == {SHARD0: b} and scoped.ends_for(12) == {SHARD0: a}
    assert per_query.ends_for(12) == {SHARD0: ShardPosition.shard_end()}
    assert scoped.cleanup_before(13) == 1 and ends.get(12, SHARD0) == b  # neither the unscoped nor the nested
    assert per_query.get(12, SHARD0) == ShardPosition.shard_end()
    assert per_query.cleanup_before(13) == 1 and per_query.get(12, SHARD0) is None and ends.get(12, SHARD0) == b
    ends.store.put("kinesis-batch-ends", ends.key(20, SHARD0), {"end": {"type": "BOGUS"}})
    with pytest.raises(MetadataStoreError, match="not valid"):
        ends.get(20, SHARD0)


def test_a_retried_attempt_reads_exactly_what_the_first_one_recorded(kinesis, stream5000, ends):
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    first = read_and_record(ends, 3, kinesis,
                            *shard_read_args(stream, SHARD0, start, task=TASK, max_records=700, **FAST))
    assert ends.get(3, SHARD0) == first.end and first.records == 700
    kh.put_records(kinesis, stream, [b"late"] * 100)
    retry = read_and_record(ends, 3, kinesis,
                            *shard_read_args(stream, SHARD0, start, task=TASK, max_records=4000, **FAST))
    assert retry.table().equals(first.table()) and retry.end == first.end


def test_the_loser_of_a_race_re_reads_exactly_to_the_winners_end(kinesis, stream5000, ends):
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    winner = read_and_record(ends, 5, kinesis,
                             *shard_read_args(stream, SHARD0, start, task=TASK, max_records=300, **FAST))

    class LateChecker(BatchEnds):  # looked before the winner recorded: sees no end, reads further, loses
        def get(self, batch, shard_id):
            return None

    loser = read_and_record(LateChecker(ends.store), 5, kinesis,
                            *shard_read_args(stream, SHARD0, start, task=TASK, max_records=2000, **FAST))
    assert loser.end == winner.end and loser.stop == STOP_RECORDED_END
    assert loser.table().equals(winner.table())


def test_concurrent_attempts_agree(kinesis, stream5000, ends):
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    barrier = threading.Barrier(3)
    results: dict[int, object] = {}

    def attempt(i: int, limit: int) -> None:
        barrier.wait()
        results[i] = read_and_record(ends, 9, kinesis,
                                     *shard_read_args(stream, SHARD0, start, task=TASK, max_records=limit, **FAST))

    threads = [threading.Thread(target=attempt, args=(i, lim)) for i, lim in enumerate((500, 1500, 2500))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    recorded = ends.get(9, SHARD0)
    assert len(results) == 3 and {r.end for r in results.values()} == {recorded}
    tables = [r.table() for r in results.values()]
    assert all(t.equals(tables[0]) for t in tables) and tables[0].num_rows in (500, 1500, 2500)
    assert pa.Table.from_batches(results[0].batches).schema.equals(kinesis_arrow_schema())


# -- stream_and_record: rows handed out while reading ------------------------------------------------------------

def _drain(generator) -> tuple[pa.Table, object]:
    """Every batch a stream_and_record generator yields, and its return value."""
    batches = []
    try:
        while True:
            batches.append(next(generator))
    except StopIteration as done:
        return pa.Table.from_batches(batches, schema=kinesis_arrow_schema()), done.value


def test_streamed_rows_arrive_before_the_read_ends_and_equal_a_retry(kinesis, stream5000, ends):
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    reading = stream_and_record(ends, 4, kinesis,
                                *shard_read_args(stream, SHARD0, start, task=TASK, max_records=3000,
                                                 records_per_call=500, **FAST))
    first = next(reading)
    assert first.num_rows == 500 and ends.get(4, SHARD0) is None  # handed out while the end is still undecided
    rest, result = _drain(reading)
    streamed = pa.concat_tables([pa.Table.from_batches([first], schema=kinesis_arrow_schema()), rest])
    assert streamed.num_rows == 3000 == result.records and ends.get(4, SHARD0) == result.end
    kh.put_records(kinesis, stream, [b"late"] * 10)
    again_read = shard_read_args(stream, SHARD0, start, task=TASK, max_records=9000, **FAST)
    retried, again = _drain(stream_and_record(ends, 4, kinesis, *again_read))
    assert retried.equals(streamed) and again.end == result.end and again.stop == STOP_RECORDED_END


class _LateChecker(BatchEnds):
    """An attempt that looked before the other one recorded: it sees no end, reads by its own limits, records."""

    def get(self, batch, shard_id):
        return None


def test_an_attempt_short_of_the_winners_end_reads_on_to_it(kinesis, stream5000, ends):
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    winner, won = _drain(stream_and_record(
        ends, 6, kinesis, *shard_read_args(stream, SHARD0, start, task=TASK, max_records=2000, **FAST)))
    short, result = _drain(stream_and_record(_LateChecker(ends.store), 6, kinesis,
                                             *shard_read_args(stream, SHARD0, start, task=TASK, max_records=700,
                                                              **FAST)))
    assert short.equals(winner) and result.end == won.end and result.records == 2000


def test_an_attempt_past_the_winners_end_fails_and_its_retry_is_exact(kinesis, stream5000, ends):
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    winner, won = _drain(stream_and_record(ends, 7, kinesis,
                                           *shard_read_args(stream, SHARD0, start, task=TASK, max_records=300, **FAST)))
    passed_end = r"batch 7 recorded the end .* for shard shardId-0+ "
    with pytest.raises(AttemptPassedRecordedEndError, match=passed_end) as info:
        _drain(stream_and_record(_LateChecker(ends.store), 7, kinesis,
                                 *shard_read_args(stream, SHARD0, start, task=TASK, max_records=2000, **FAST)))
    assert info.value.winner == won.end and "retry reads exactly" in str(info.value)
    again_read = shard_read_args(stream, SHARD0, start, task=TASK, max_records=2000, **FAST)
    retried, again = _drain(stream_and_record(ends, 7, kinesis, *again_read))
    assert retried.equals(winner) and again.end == won.end


def test_concurrent_streaming_attempts_yield_the_recorded_range_or_fail(kinesis, stream5000, ends):
    """Backs docs/guarantees.md: concurrent (speculative) attempts of one Kinesis batch each yield exactly the range
    the first recorded, or fail; on file:, dynamodb:// and s3:// stores."""
    stream, _ = stream5000
    start = ShardPosition.trim_horizon()
    barrier = threading.Barrier(3)
    outcomes: dict[int, object] = {}

    def attempt(i: int, limit: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = _drain(stream_and_record(ends, 11, kinesis,
                                                   *shard_read_args(stream, SHARD0, start, task=TASK, max_records=limit,
                                                                    records_per_call=250, **FAST)))[0]
        except AttemptPassedRecordedEndError as passed:
            outcomes[i] = passed

    threads = [threading.Thread(target=attempt, args=(i, lim)) for i, lim in enumerate((500, 1500, 2500))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    recorded = ends.get(11, SHARD0)
    exact = read_shard(kinesis, stream, SHARD0, start, task=TASK, recorded_end=recorded, **FAST).table()
    assert len(outcomes) == 3 and exact.num_rows in (500, 1500, 2500)
    succeeded = [o for o in outcomes.values() if isinstance(o, pa.Table)]
    assert succeeded and all(t.equals(exact) for t in succeeded)
    assert all(o.winner == recorded for o in outcomes.values() if not isinstance(o, pa.Table))
