"""A samza-kinesis task holding several shards reads them concurrently, each shard paced on its own: counted on
the moto server (its GetRecords log, ``samza_devkit.moto_request_log``), not timed on the client.

The task's reads ask for pages of 50 records (the task's real read settings with ``records_per_call=50``) and
each shard holds 230, so every shard needs exactly five calls, each answered in milliseconds: the 200 ms pacing,
not the server, spaces one shard's calls.  A task reading its shards one after the other sends shard 0's five
calls before shard 1's first; a task reading them concurrently sends every shard's first call before any second
one, and spreads each shard's five calls over at least its four pacing intervals (less the server's scheduling
jitter, which moves single arrival times by up to ~0.1 s on a loaded machine: without pacing the five calls
arrive within ~0.15 s)."""

from __future__ import annotations

import dataclasses
import threading

import pyarrow as pa
import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit import moto_request_log
from spark_samza_source.kinesis.errors import KinesisDataLossError
from spark_samza_source.kinesis.executor import task as kinesis_task
from spark_samza_source.kinesis.executor.task import read_task
from spark_samza_source.kinesis.input_partition import KinesisTaskPartition, PlannedShardRead
from spark_samza_source.kinesis.microbatch_ends import batch_ends_for
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.lease import JobLease

SHARDS = 3
PAGE = 50
PER_SHARD = 230  # pages of 50, 50, 50, 50, 30: five calls per shard
CALLS_PER_SHARD = 5
PACING_S = 0.2  # 5 GetRecords per second per shard
# server-side arrival times of calls the client started >= 200 ms apart: allow the server's scheduling jitter
PACING_SLACK_S = 0.3


def _store_of_a_driver(store_uri: str) -> str:
    """``store_uri`` holding a driver's job lease, as a store does while a query runs: a task checks it is there
    before reading (``executor/store_reach.py``)."""
    JobLease(open_store(store_uri, "concurrency"), heartbeat=False).hold("q")
    return store_uri


def _pages_of(records: int, monkeypatch) -> None:
    """The task reads with its own settings, but asks GetRecords for ``records`` at a time."""
    real = kinesis_task.read_settings
    monkeypatch.setattr(kinesis_task, "read_settings",
                        lambda options, aws: dataclasses.replace(real(options, aws), records_per_call=records))


def test_a_task_reads_its_shards_interleaved_each_paced(kinesis, make_stream, moto_server, tmp_path, monkeypatch):
    _pages_of(PAGE, monkeypatch)
    stream = make_stream(SHARDS)
    shards = [s["ShardId"] for s in kh.list_shards(kinesis, stream)]
    for shard in shards:
        key = kh.hash_key_of(kinesis, stream, shard)
        kh.put_records(kinesis, stream, [b"%s-%05d" % (shard.encode(), i) for i in range(PER_SHARD)],
                       explicit_hash_key=key)
    store_uri = _store_of_a_driver(f"file://{tmp_path}/store")
    options = KinesisSourceOptions.parse({
        "streamName": stream, "endpointUrl": moto_server, "region": "us-east-1", "job.name": "concurrency",
        "metadata.store": store_uri, "maxRecordsPerShard": "1000",
    })
    partition = KinesisTaskPartition("Task-0", tuple(
        PlannedShardRead(batch=0, query_id="q", shard_id=s, start=ShardPosition.trim_horizon()) for s in shards))

    moto_request_log.clear(moto_server)
    batches = list(read_task(options, partition))
    calls = moto_request_log.get_records_calls(moto_server, stream)

    table = pa.Table.from_batches(batches)
    for shard in shards:  # every row once; one shard's rows in sequence order
        rows = table.filter(pa.compute.equal(table["shardId"], shard))
        assert rows["data"].to_pylist() == [b"%s-%05d" % (shard.encode(), i) for i in range(PER_SHARD)]
        seqs = [int(s) for s in rows["sequenceNumber"].to_pylist()]
        assert seqs == sorted(seqs)
    assert table.num_rows == SHARDS * PER_SHARD
    ends = batch_ends_for(open_store(store_uri, "concurrency"), stream, "q").ends_for(0)
    assert sorted(ends) == shards  # the batch-end protocol ran for every shard

    by_shard = {s: [c for c in calls if c["shard"] == s] for s in shards}
    assert {s: len(c) for s, c in by_shard.items()} == {s: CALLS_PER_SHARD for s in shards}, calls
    # interleaved: every shard's first call arrives before any shard's second call
    assert {c["shard"] for c in calls[:SHARDS]} == set(shards), [c["shard"] for c in calls]
    assert all(c["limit"] == PAGE for c in calls)
    for shard, own in by_shard.items():  # each shard still paced at 5 GetRecords/s
        span = own[-1]["t"] - own[0]["t"]
        assert span >= (CALLS_PER_SHARD - 1) * PACING_S - PACING_SLACK_S, (shard, span, own)


def _reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kinesis-Task-0")]


def _filled_task(kinesis, make_stream, moto_server, tmp_path, shards: int = SHARDS):
    stream = make_stream(shards)
    ids = [s["ShardId"] for s in kh.list_shards(kinesis, stream)]
    for shard in ids:
        kh.put_records(kinesis, stream, [b"%s-%05d" % (shard.encode(), i) for i in range(PER_SHARD)],
                       explicit_hash_key=kh.hash_key_of(kinesis, stream, shard))
    options = KinesisSourceOptions.parse({
        "streamName": stream, "endpointUrl": moto_server, "region": "us-east-1", "job.name": "concurrency",
        "metadata.store": _store_of_a_driver(f"file://{tmp_path}/store"), "maxRecordsPerShard": "1000",
    })
    return options, ids


def test_a_task_closed_early_stops_its_reader_threads(kinesis, make_stream, moto_server, tmp_path, monkeypatch):
    _pages_of(PAGE, monkeypatch)
    options, ids = _filled_task(kinesis, make_stream, moto_server, tmp_path)
    partition = KinesisTaskPartition("Task-0", tuple(
        PlannedShardRead(batch=0, query_id="q", shard_id=s, start=ShardPosition.trim_horizon()) for s in ids))
    reading = read_task(options, partition)
    first = next(reading)
    assert first.num_rows > 0 and _reader_threads()
    reading.close()  # Spark stops consuming a task (e.g. a limit reached, the task cancelled)
    assert _reader_threads() == []


def test_one_shard_failing_fails_the_task_and_stops_the_others(kinesis, make_stream, moto_server, tmp_path,
                                                               monkeypatch):
    _pages_of(PAGE, monkeypatch)
    options, ids = _filled_task(kinesis, make_stream, moto_server, tmp_path)
    missing = "shardId-000000000099"  # not in the stream: its read fails with data loss (failOnDataLoss default)
    partition = KinesisTaskPartition("Task-0", tuple(
        PlannedShardRead(batch=0, query_id="q", shard_id=s, start=ShardPosition.trim_horizon())
        for s in [*ids, missing]))
    with pytest.raises(KinesisDataLossError, match=missing):
        for _ in read_task(options, partition):
            pass
    assert _reader_threads() == []
