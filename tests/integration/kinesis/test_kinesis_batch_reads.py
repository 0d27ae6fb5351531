"""samza-kinesis batch reads (``spark.read``) on moto and kinesalite: the whole lineage across a split and a merge,
``AT_TIMESTAMP`` bounds, pushed filters returning the same rows. Every read runs with
``spark.sql.python.filterPushdown.enabled`` unset (Spark's default: off) unless a test says otherwise."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.frames import assert_same_collected_rows
from samza_devkit.waits import scaled
from spark_samza_source.kinesis.schema import kinesis_schema

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.both_emulators]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
KEYS = [f"user-{i}" for i in range(24)]


def put(ks, stream, tag):
    return kh.put_records(ks.client, stream, [(k, f"{k}:{tag}".encode()) for k in KEYS])


def batch(ks, stream, *, pushdown=None, where=None, **extra):
    """The rows of a batch read, in the order Spark collected them (each task's rows in the order it read)."""
    if pushdown is None:
        ks.spark.conf.unset(PUSHDOWN_CONF)
    else:
        ks.spark.conf.set(PUSHDOWN_CONF, str(pushdown).lower())
    try:
        options = {k: v for k, v in ks.options(stream, **extra).items() if k not in ("job.name", "metadata.store")}
        if "startingPosition" not in extra:
            del options["startingPosition"]  # the batch default: TRIM_HORIZON
        df = ks.spark.read.format("samza-kinesis").options(**options).load()
        if where is not None:
            df = df.where(where)
        return df.collect()
    finally:
        ks.spark.conf.unset(PUSHDOWN_CONF)


def assert_same_rows(actual, expected):
    """Two Spark outputs (collected rows of the source's schema) hold the same rows, in any order, every column
    compared (``samza_devkit.frames``)."""
    assert_same_collected_rows(actual, expected, key=["shardId", "sequenceNumber", "subSequenceNumber"])


def keys_of(rows):
    return sorted((r.shardId, r.sequenceNumber) for r in rows)


def acked(puts):
    return sorted((p.shard_id, p.sequence) for p in puts)


def test_trim_horizon_to_latest_across_a_split_and_a_merge(ks):
    stream = ks.create_stream(3, "bsplit")
    puts = put(ks, stream, 0)
    kh.split_shard(ks.client, stream, "shardId-000000000000")
    puts += put(ks, stream, 1)
    kh.merge_shards(ks.client, stream, "shardId-000000000001", "shardId-000000000002")
    puts += put(ks, stream, 2)
    # LATEST is the planning time on the driver's clock. kinesalite stamps the records of a shard made by a
    # reshard at least 1 s after the reshard (its shard creation time + 1 s): records stamped after the planning
    # time are, by definition, not read (docs/guide.md, "Batch reads"). Plan after every stamp.
    time.sleep(1.5)
    rows = batch(ks, stream)
    assert keys_of(rows) == acked(puts)
    shards = {s["ShardId"]: s for s in kh.list_shards(ks.client, stream)}
    assert {r.shardId for r in rows} == set(shards)  # closed parents and open children alike
    # within a task, every parent's rows come before its children's
    seen: dict[str, list[str]] = {}
    for r in rows:
        order = seen.setdefault(r.task, [])
        if not order or order[-1] != r.shardId:
            assert r.shardId not in order, f"{r.task} read {r.shardId} twice apart"
            order.append(r.shardId)
    for task, order in seen.items():
        for i, sid in enumerate(order):
            parents = {shards[sid].get("ParentShardId"), shards[sid].get("AdjacentParentShardId")}
            assert not (parents & set(order[i + 1:])), f"{task}: {sid} read before its parent ({order})"
    # lineage assignment, as a streaming query: a split's children stay in their parent's task, a merge's child
    # goes to one of its parents' tasks
    task_of = {r.shardId: r.task for r in rows}
    for sid, info in shards.items():
        parents = [p for p in (info.get("ParentShardId"), info.get("AdjacentParentShardId")) if p]
        if parents:
            assert task_of[sid] in {task_of[p] for p in parents}, (sid, parents, task_of)
    stream_schema = ks.stream(stream).schema
    assert ks.spark.read.format("samza-kinesis").options(**{
        k: v for k, v in ks.options(stream).items() if k != "job.name"}).load().schema == stream_schema


def test_min_partitions_spreads_lineage_families_and_keeps_each_parent_before_its_children(ks):
    """``minPartitions`` on a batch read: one task over 4 shards, shard 0 split in two. The task's reads spread over
    Spark partitions by lineage family (shard 0 with its two children; shards 1, 2 and 3 each alone): four Spark
    partitions, each shard in exactly one, a family never cut, and within it the parent's rows before its
    children's (what a ``foreachPartition`` sink writes in). Every acknowledged record is read once and the
    ``task`` column stays the one task. Backs docs/guarantees.md, "Guarantees" (minPartitions)."""
    from pyspark.sql.functions import spark_partition_id

    stream = ks.create_stream(4, "bspread")
    puts = put(ks, stream, 0)
    kh.split_shard(ks.client, stream, "shardId-000000000000")
    puts += put(ks, stream, 1)
    time.sleep(1.5)  # kinesalite stamps a new shard's records up to 1 s ahead (see the split-and-merge test)
    options = {k: v for k, v in ks.options(stream, tasks="1", minPartitions="8").items()
               if k not in ("job.name", "metadata.store", "startingPosition")}
    rows = (ks.spark.read.format("samza-kinesis").options(**options).load()
            .withColumn("sparkPartition", spark_partition_id()).collect())
    assert keys_of(rows) == acked(puts)
    assert {r.task for r in rows} == {rows[0].task}
    shards = {s["ShardId"]: s for s in kh.list_shards(ks.client, stream)}
    children = sorted(sid for sid, info in shards.items() if info.get("ParentShardId") == "shardId-000000000000")
    assert len(children) == 2, shards
    partition_of: dict[str, set[int]] = {}
    for r in rows:
        partition_of.setdefault(r.shardId, set()).add(r.sparkPartition)
    assert all(len(p) == 1 for p in partition_of.values()), partition_of
    spark_partition = {sid: next(iter(p)) for sid, p in partition_of.items()}
    family = {spark_partition[sid] for sid in ["shardId-000000000000", *children]}
    assert len(family) == 1, spark_partition
    others = [spark_partition[f"shardId-00000000000{i}"] for i in (1, 2, 3)]
    assert len({*family, *others}) == 4, spark_partition
    family_rows = [r.shardId for r in rows if r.sparkPartition in family]
    last_parent_row = max(i for i, sid in enumerate(family_rows) if sid == "shardId-000000000000")
    first_child_row = min(i for i, sid in enumerate(family_rows) if sid in children)
    assert last_parent_row < first_child_row, family_rows


def test_with_job_name_a_backfill_takes_the_streaming_querys_tasks_after_resharding(ks):
    """A streaming query starts on 2 shards (2 tasks) and keeps them while both shards split (4 open shards). A
    batch read with its job.name puts every record in the task the streaming query did; one without makes a new
    job model for the 4 open shards, which (the case worth the stored map) puts some of them elsewhere."""
    stream = ks.create_stream(2, "btasks")
    roots = [s["ShardId"] for s in kh.list_shards(ks.client, stream)]
    puts = put(ks, stream, 0)
    streamed = ks.run_available_now("btasks", stream)
    for sid in roots:
        kh.split_shard(ks.client, stream, sid)
    puts += put(ks, stream, 1)
    time.sleep(1.5)  # kinesalite stamps a new shard's records up to 1 s ahead (see the split-and-merge test)
    streamed += ks.run_available_now("btasks", stream)
    puts += put(ks, stream, 2)  # a third run commits the second run's batches (Spark commits one batch late)
    time.sleep(1.5)
    streamed += ks.run_available_now("btasks", stream)
    streamed_task = {r.shardId: r.task for r in streamed}
    assert sorted((r.shardId, r.sequenceNumber) for r in streamed) == acked(puts)
    assert len(set(streamed_task.values())) == 2  # the query's 2 tasks, children in their parents'

    options = {k: v for k, v in ks.options(stream).items() if k != "startingPosition"}
    backfill = ks.spark.read.format("samza-kinesis").options(**options).load().collect()
    assert keys_of(backfill) == acked(puts)
    # the backfill and the streaming query's output: the same rows, each in the same task
    assert_same_rows(backfill, streamed)

    fresh = batch(ks, stream)  # no job.name: this read's own job model
    assert keys_of(fresh) == acked(puts)
    assert {(r.shardId, r.task) for r in fresh} != set(streamed_task.items())

    # the stream deleted and re-created (shard ids start again): the stored tasks belong to the old one, unused
    kh.recreate_stream(ks.client, stream, 4)
    again = put(ks, stream, "again")
    time.sleep(1.5)
    backfill = ks.spark.read.format("samza-kinesis").options(**options).load().collect()
    assert keys_of(backfill) == acked(again)
    assert {(r.shardId, r.task) for r in backfill} == {(r.shardId, r.task) for r in batch(ks, stream)}


def test_at_timestamp_bounds(ks):
    stream = ks.create_stream(2, "bts")
    put(ks, stream, "before")
    time.sleep(1.2)
    t1 = dt.datetime.now(dt.UTC)
    time.sleep(1.2)
    middle = put(ks, stream, "middle")
    time.sleep(1.2)
    t2 = dt.datetime.now(dt.UTC)
    time.sleep(1.2)
    put(ks, stream, "after")
    rows = batch(ks, stream, startingPosition=f"AT_TIMESTAMP:{t1.isoformat()}",
                 endingPosition=f"AT_TIMESTAMP:{t2.isoformat()}")
    assert keys_of(rows) == acked(middle)
    # LATEST is fixed when the read is planned: everything put before it
    assert len(batch(ks, stream)) == 3 * len(KEYS)


def test_per_shard_ending_sequence_numbers(ks):
    stream = ks.create_stream(2, "bseq")
    puts = put(ks, stream, "a") + put(ks, stream, "b")
    on_0 = sorted((p for p in puts if p.shard_id == "shardId-000000000000"), key=lambda p: int(p.sequence))
    last = on_0[4].sequence  # the 5th record of shard 0: read up to and including it
    rows = batch(ks, stream, endingPosition=f'{{"shardId-000000000000": "{last}", "shardId-000000000001": "LATEST"}}')
    want = [p for p in puts if p.shard_id != "shardId-000000000000"] + on_0[:5]
    assert keys_of(rows) == acked(want)


def test_pushed_filters_return_the_same_rows(ks):
    stream = ks.create_stream(2, "bpush")
    put(ks, stream, "a")
    time.sleep(1.2)
    first_late = put(ks, stream, "b")
    late = sorted(acked(first_late))
    rows = batch(ks, stream)
    boundary = min(r.approximateArrivalTimestamp for r in rows if (r.shardId, r.sequenceNumber) in set(late))
    stamp = boundary.replace(tzinfo=dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    some_task = sorted({r.task for r in rows})[0]
    for where in [f"approximateArrivalTimestamp >= TIMESTAMP '{stamp}+00:00'",
                  "shardId = 'shardId-000000000001'", "shardId IN ('shardId-000000000000', 'nope')",
                  f"task = '{some_task}'"]:
        off = batch(ks, stream, pushdown=False, where=where)
        on = batch(ks, stream, pushdown=True, where=where)
        assert off, where
        assert_same_rows(on, off)  # every column of every row, in any order


def test_pushed_filters_read_fewer_records(ks):
    """Without Spark: the pushdown reader's plan and its executor reads, counting the records the reads took from
    Kinesis (the reader keeps every record it gets), with and without the filters."""
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual

    from spark_samza_source.kinesis.source import SamzaKinesisPushdownBoundedReader
    from spark_samza_source.source.bounded_reader import bounded_raw_options

    stream = ks.create_stream(2, "bcount")
    put(ks, stream, "a")
    time.sleep(1.2)
    cut = dt.datetime.now(dt.UTC)
    time.sleep(1.2)
    late = put(ks, stream, "b")
    options = {k: v for k, v in ks.options(stream).items() if k not in ("job.name", "metadata.store")}
    del options["startingPosition"]
    raw, _ = bounded_raw_options(options)

    def read(*filters):
        reader = SamzaKinesisPushdownBoundedReader(SamzaKinesisPushdownBoundedReader.parse_options(raw, False),
                                                 kinesis_schema())
        left = list(reader.pushFilters(list(filters)))
        rows = [row for part in reader.partitions() for b in reader.read(part) for row in b.to_pylist()]
        return rows, left

    everything, _ = read()
    assert len(everything) == 2 * len(KEYS)
    since = GreaterThanOrEqual(("approximateArrivalTimestamp",), cut)
    rows, left = read(since)
    assert left == [since]  # Spark still applies it
    assert sorted((r["shardId"], r["sequenceNumber"]) for r in rows) == acked(late)
    one_shard = EqualTo(("shardId",), "shardId-000000000001")
    rows, left = read(one_shard)
    assert left == [] and rows and {r["shardId"] for r in rows} == {"shardId-000000000001"}
    assert len(rows) < len(everything)


def test_streaming_refuses_ending_position(ks):
    stream = ks.create_stream(1, "bref")
    df = ks.stream(stream, endingPosition="LATEST")
    with pytest.raises(Exception, match="option 'endingPosition' is not valid in streaming queries"):
        df.writeStream.format("noop").start().awaitTermination(scaled(60))
