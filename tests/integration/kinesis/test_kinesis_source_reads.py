"""samza-kinesis end to end on local Spark and moto: exact reads, exactly-once restarts, tasks."""

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.waits import scaled
from spark_samza_source.source.pyspark_compat import has_admission_control

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.both_emulators]

#: PySpark 4.2+: Trigger.AvailableNow reads in batches bounded by the source's limits; 4.0 / 4.1 run it as one batch
BOUNDED_AVAILABLE_NOW = has_admission_control()


def rows_key(rows):
    return sorted((r.shardId, r.sequenceNumber, r.subSequenceNumber) for r in rows)


def acks_key(acks):
    return sorted((a.shard_id, a.sequence, 0) for a in acks)


def run_available_now_until_read(ks, name, stream, acks, **options):
    """AvailableNow runs of ``name`` until its sink holds ``acks``: one run on PySpark 4.2+; on 4.0 / 4.1 every run is
    one batch (at most ``maxRecordsPerShard`` per shard), so as many runs as the backlog takes."""
    for _ in range(1 if BOUNDED_AVAILABLE_NOW else 4):
        ks.run_available_now_parquet(name, stream, **options)
        if ks.sink_keys(name) == acks_key(acks):
            return
    assert ks.sink_keys(name) == acks_key(acks)


@pytest.mark.kinesis_mock_too
def test_reads_4_shards_exactly_across_restarts(ks):
    """Backs docs/guarantees.md: every record reaches an idempotent sink (Parquet) exactly once across query stops and
    restarts.

    AvailableNow runs from one checkpoint into a Parquet sink, with records put between them; the sink is
    compared with the acknowledged puts on (shard id, sequence number, subsequence number): a record read twice, or
    a record of another shard with the same data, fails.
    """
    stream = ks.create_stream(4, "exact")
    acks = kh.put_round(ks.client, stream, 1500, "r0")
    run_available_now_until_read(ks, "exact", stream, acks, maxRecordsPerShard="250")
    tasks = {(r.shardId, r.task) for r in ks.spark.read.parquet(ks.sink_path("exact")).select("shardId", "task")
             .distinct().collect()}
    assert {task for _, task in tasks} == {"Task-0", "Task-1", "Task-2", "Task-3"}
    assert len(tasks) == 4  # each shard in one task
    for round_ in range(1, 3):
        acks += kh.put_round(ks.client, stream, 300, f"r{round_}")
        ks.run_available_now_parquet("exact", stream, maxRecordsPerShard="250")
        assert ks.sink_keys("exact") == acks_key(acks), f"round {round_}: duplicates or losses"
    data = sorted(r.data for r in ks.spark.read.parquet(ks.sink_path("exact")).select("data").collect())
    assert data == sorted(a.data for a in acks)


def test_schema(ks):
    stream = ks.create_stream(1, "schema")
    assert ks.stream(stream).schema.simpleString() == (
        "struct<data:binary,streamName:string,partitionKey:string,sequenceNumber:string,subSequenceNumber:bigint,"
        "approximateArrivalTimestamp:timestamp,shardId:string,task:string>"
    )


def test_bad_option_fails_with_our_message(ks):
    with pytest.raises(Exception) as err:
        ks.stream("x", startingPosition="sideways")
    assert "option 'startingPosition' must be LATEST, TRIM_HORIZON" in str(err.value)


def test_a_task_failing_after_recording_its_end_is_retried_with_exactly_that_range(ks, tmp_path):
    """Backs docs/guarantees.md: "a Kinesis task that fails after recording its end is retried with exactly that
    range".

    The first attempt reads every shard to its end (caught up: 100 records, the limit 1000), records that end and
    fails; before its retry runs, 60 more records land in every shard. A retry that ignored the recorded end would
    read them too (duplicates: the next batch starts after the recorded end) or fail again reading past it; the
    retry must read exactly the recorded range, and the next batch the new records. Compared on (shard id,
    sequence number), batch by batch.
    """
    import json

    stream = ks.create_stream(2, "retry")
    acks = kh.put_round(ks.client, stream, 100, "a")
    marker, release = tmp_path / "failed-once", tmp_path / "retry-may-run"
    query = ks.start_collecting("retry", stream, maxRecordsPerShard="1000",
                                **{"testing.faultHooks": "samza_devkit.fault_hooks",
                                   "testing.failAfterRecord": str(marker),
                                   "testing.failAfterRecordHold": str(release)})
    ks.wait_for(marker.exists, timeout=120, what="the injected failure")
    later = kh.put_round(ks.client, stream, 60, "b")  # lands between the failed attempt and its retry
    release.touch()
    ks.wait_for(lambda: len(ks.collected("retry")) >= len(acks) + len(later), timeout=120, what="every record")
    query.stop()
    assert query.exception() is None
    rows = ks.collected("retry")
    assert rows_key(rows) == acks_key(acks + later)  # no duplicate, no gap: (shard, sequence) exactly
    first_attempt = marker.read_text().strip()
    shard, end = first_attempt.split(" ", 1)
    end = json.loads(end)
    # The failure happened and was retried: the retry recorded the very end the failed attempt recorded.
    assert first_attempt in (tmp_path / "failed-once.after").read_text().splitlines()
    assert end["sequence"] == max((a for a in acks if a.shard_id == shard), key=lambda a: int(a.sequence)).sequence
    # The failed batch was emitted once, exactly to the end its first attempt recorded; the new records came later.
    failed_batch = next(rows for _, rows in ks.batches["retry"] if any(r.shardId == shard for r in rows))
    assert sorted(int(r.sequenceNumber) for r in failed_batch if r.shardId == shard) == \
        sorted(int(a.sequence) for a in acks if a.shard_id == shard)


def test_a_python_worker_killed_inside_read_is_retried_exactly_once(ks, tmp_path):
    """Backs docs/guarantees.md: exactly once "when a Python worker dies inside read() (the task is retried)", for
    samza-kinesis as for samza-kafka (``tests/integration/faults/test_process_faults.py``).

    The first task attempt with shards to read kills its own Python worker right after handing Spark its first
    batch, before its shard's end is recorded; the retry reads the shard again and records the end. The sink is
    compared with the acknowledged puts on (shard id, sequence number, subsequence number).
    """
    import os

    stream = ks.create_stream(2, "wdie")
    acks = kh.put_round(ks.client, stream, 300, "a")
    marker = tmp_path / "worker-died"
    run_available_now_until_read(ks, "wdie", stream, acks, maxRecordsPerShard="1000",
                                 **{"testing.faultHooks": "samza_devkit.fault_hooks",
                                    "testing.failInReadOnce": str(marker)})
    assert marker.exists(), "the fault hook never fired"
    task, pid = marker.read_text().split("\t")
    assert task.startswith("Task-")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # that worker process is really gone


def test_available_now_reads_what_arrived_before_it_started_and_stops(ks):
    stream = ks.create_stream(2, "an")
    before = kh.put_round(ks.client, stream, 200, "before")
    late = []

    def put_late(batch_id, rows):
        if not late:
            late.extend(kh.put_round(ks.client, stream, 30, "late"))

    query = ks.start_collecting("an", stream, trigger={"availableNow": True}, on_batch=put_late,
                                maxRecordsPerShard="50")
    assert query.awaitTermination(scaled(240))
    assert query.exception() is None
    rows = ks.collected("an")
    if not BOUNDED_AVAILABLE_NOW:  # 4.0 / 4.1: one batch, at most maxRecordsPerShard per shard, none of the late
        assert late and len(ks.batches["an"]) == 1 and len(rows) == 100
        assert {bytes(r.data) for r in rows} < {a.data for a in before}
        return
    assert late and sorted(r.data for r in rows) == sorted(a.data for a in before)
    assert len(ks.batches["an"]) >= 4  # bounded by maxRecordsPerShard



def test_min_partitions_spreads_one_tasks_shards_over_spark_partitions_exactly_once(ks):
    """Backs docs/guarantees.md, "Guarantees": with ``minPartitions`` a task's shards are read by several Spark
    partitions, each shard by one of them in sequence order, the ``task`` column still the one task.

    One task (``tasks=1``) over 4 shards, ``minPartitions=4``, AvailableNow into a foreachBatch sink whose rows carry
    ``spark_partition_id()``: every batch with records on all 4 shards has 4 Spark partitions, each shard's rows
    come from one of them in sequence order, and every acknowledged put is read exactly once."""
    from pyspark.sql.functions import spark_partition_id

    from samza_devkit.query_harness import await_available_now

    stream = ks.create_stream(4, "split")
    acks = kh.put_round(ks.client, stream, 400, "r0")
    df = ks.stream(stream, tasks="1", minPartitions="4").withColumn("sparkPartition", spark_partition_id())
    await_available_now(ks.collect_batches("split", df, trigger={"availableNow": True}), "split", 240)
    rows = ks.collected("split")
    assert rows_key(rows) == acks_key(acks), "duplicates or losses"
    assert {r.task for r in rows} == {"Task-0"}
    for batch_id, batch_rows in ks.batches["split"]:
        spark_of: dict[str, set[int]] = {}
        sequences: dict[str, list[int]] = {}
        for r in batch_rows:
            spark_of.setdefault(r.shardId, set()).add(r.sparkPartition)
            sequences.setdefault(r.shardId, []).append(int(r.sequenceNumber))
        assert all(len(s) == 1 for s in spark_of.values()), f"batch {batch_id}: a shard split: {spark_of}"
        assert all(s == sorted(s) for s in sequences.values()), f"batch {batch_id}: a shard out of order"
        assert len({r.sparkPartition for r in batch_rows}) == len(spark_of), f"batch {batch_id}: not spread"
    assert max(len({r.shardId for r in b}) for _, b in ks.batches["split"]) == 4
