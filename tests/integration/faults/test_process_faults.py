"""Process faults: the whole Spark driver SIGKILLed mid-batch, a Python worker dying inside ``read()``.

The driver test runs ``samza_devkit.fault_driver`` in a process group of its own and kills the group
(Python driver, JVM, every Python worker) with SIGKILL, as a machine dying would; then runs it again from the same
checkpoint. Atomicity of the metadata store's own writes under SIGKILL is proven at store level in
``tests/integration/metadata/test_metadata_fs_concurrency.py`` (test_sigkilled_writers_never_leave_a_torn_value...).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from samza_devkit.checkpoint_log import committed_batches, offset_log, startpoint_rebases
from samza_devkit.fault_harness import exactly_once, kill_process_group, startpoints_left, wait_for
from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from samza_devkit.waits import scaled

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _driver(tmp_path, bootstrap, topic, job, run, *extra):
    out = tmp_path / f"driver-{run}.jsonl"
    cmd = [sys.executable, "-m", "samza_devkit.fault_driver", "--bootstrap", bootstrap,
           "--topic", topic, "--job", job, "--store", f"file://{tmp_path}/metadata",
           "--checkpoint", str(tmp_path / "ck"), "--sink", str(tmp_path / "sink"),
           "--markers", str(tmp_path / f"inflight-{run}"), *extra]
    with open(out, "w") as stdout, open(tmp_path / f"driver-{run}.log", "w") as stderr:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, start_new_session=True, cwd=tmp_path)
    return proc, out


def _events(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def test_driver_sigkilled_mid_batch_resumes_exactly_once_and_applies_its_startpoint_once(
        kafka_broker, spark, tmp_path):
    """SIGKILL of the whole driver while batch 0 -- the batch applying a Startpoint -- is being written, with
    ``minPartitions`` on and the topic grown while the driver is down.

    Run 1 creates the job on a one-partition topic (one task), writes a Startpoint (p0 -> offset 100) before it
    starts, reads with maxOffsetsPerTrigger=100 through a slow stage and is SIGKILLed once batch 0 is in the offset
    log, in flight, and not committed (no Parquet commit either). While it is down the topic grows 1 -> 2 and
    partition 1 gets records. Run 2, from the same checkpoint, replays batch 0 from the offset log (Spark asks
    ``initialOffset()`` afresh for its start: the starts recorded in batch 0 make that replay exact; the job's
    lease passes over as its owner process is gone), drains partition 0 to the growth's cut and reads partition 1
    after it. Run 3 reads a round written to both partitions after the cut: one batch, one task, two Spark
    partitions (the split). The Parquet sink then holds every record exactly once and the Startpoint's effect
    exactly once (p0 from 100, nothing of p0 twice); the Startpoint is recorded as applied in batch 0 only and is
    gone from the store; no Parquet file (one per Spark partition) holds two Kafka partitions.

    Backs docs/guarantees.md: exactly once "when the Spark driver is SIGKILLed mid-batch and restarted from its
    checkpoint, with a startpoint applied exactly once and deleted".
    """
    from pyspark.sql.functions import input_file_name

    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("kill"), 1)
    produce(bootstrap, topic, [(b"k", f"v0-{i}".encode(), None, 0) for i in range(300)])
    job = f"kill-{uuid.uuid4().hex[:6]}"
    ck = tmp_path / "ck"
    split = ("--source-option", "minPartitions=4", "--source-option", "expansion.settleTime=0")

    started = time.monotonic()
    proc, out = _driver(tmp_path, bootstrap, topic, job, 1, "--startpoint", "0:specific:100",
                        "--max-offsets", "100", "--slow-ms", "2500", "--trigger", "processing:200", *split)
    try:
        markers = tmp_path / "inflight-1"

        def batch0_in_flight():
            return (0 in offset_log(ck) and 0 not in committed_batches(ck)
                    and markers.is_dir() and any(markers.iterdir()))

        # killed at once: a task of batch 0 is inside the slow stage, which holds it 2.5 s
        wait_for(batch0_in_flight, timeout=120, interval=0.05, what="batch 0 in flight")
    finally:
        kill_process_group(proc)
    killed_at = time.monotonic() - started
    assert 0 not in committed_batches(ck), "the kill came too late: batch 0 had committed"
    assert not (tmp_path / "sink" / "_spark_metadata" / "0").exists()
    startpoint_ts = next(e["creationTimestamp"] for e in _events(out) if e["event"] == "startpoint")
    logged = offset_log(ck)
    assert startpoint_rebases(logged) == [(0, "Partition 0", f"kafka.{topic}.0", 100, startpoint_ts)]
    add_partitions(bootstrap, topic, 2)
    produce(bootstrap, topic, [(b"k", f"v1-{i}".encode(), None, 1) for i in range(200)])

    # Runs 2 and 3: the same query on this test's own Spark session (a new driver-side runner, as after a reboot;
    # one JVM start less than a second fault_driver run), from the same checkpoint, to the end of the data.
    def run_to_the_end() -> None:
        rerun = (spark.readStream.format("samza-kafka")
                 .options(**{"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": job,
                             "metadata.store": f"file://{tmp_path}/metadata", "startingOffsets": "earliest",
                             "startpoint.pollInterval": "0", "maxRowsPerArrowBatch": "50", "minPartitions": "4",
                             "expansion.settleTime": "0"}).load()
                 .writeStream.format("parquet").option("path", str(tmp_path / "sink"))
                 .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
        assert rerun.awaitTermination(scaled(180)), "the restarted query did not finish"
        assert rerun.exception() is None

    run_to_the_end()
    produce(bootstrap, topic, [(b"k", f"v{p}-after-{i}".encode(), None, p) for i in range(50) for p in (0, 1)])
    run_to_the_end()

    rows = (spark.read.parquet(str(tmp_path / "sink")).select("partition", "offset", "task")
            .withColumn("file", input_file_name()).collect())
    sink = Counter((r.partition, r.offset) for r in rows)
    wanted = [(0, o) for o in range(100, 350)] + [(1, o) for o in range(250)]
    assert exactly_once(sink, wanted) == []
    assert {r.task for r in rows} == {"Partition 0"}  # the job kept its one task through the growth
    partitions_of_file: dict[str, set[int]] = {}
    for r in rows:
        partitions_of_file.setdefault(r.file, set()).add(r.partition)
    assert all(len(p) == 1 for p in partitions_of_file.values()), partitions_of_file
    log = offset_log(ck)
    assert len(log) >= 3 and committed_batches(ck) == set(log)
    # the last batch (run 3) read the round after the cut: both partitions of the one task in one batch, each
    # read by a Spark partition of its own (a file each)
    meta = tmp_path / "sink" / "_spark_metadata"
    last = max((e for e in meta.iterdir() if e.name.isdigit()), key=lambda e: int(e.name))
    last_files = {Path(json.loads(line)["path"]).name for line in last.read_text().splitlines()[1:]}
    assert sorted(sorted(p) for f, p in partitions_of_file.items() if Path(f).name in last_files) == [[0], [1]], \
        (last_files, partitions_of_file)
    # the startpoint: applied in batch 0 only (the replays re-read it from the log, nothing applied it again) ...
    assert startpoint_rebases(log) == [(0, "Partition 0", f"kafka.{topic}.0", 100, startpoint_ts)]
    # ... and deleted once a later batch was planned from batch 0's end
    assert startpoints_left(tmp_path / "metadata", job) == []
    print(f"killed {killed_at:.1f}s after start; {len(log)} batches")


def test_python_worker_killed_inside_read_is_retried_exactly_once(kafka_broker, fault_queries, tmp_path):
    """A Python worker dies (``os._exit``) inside ``read()`` after handing Spark its first Arrow batch: Spark fails
    that attempt, retries the task, and the Parquet sink holds every record exactly once.

    Backs docs/guarantees.md: exactly once "when a Python worker dies inside read() (the task is retried)".
    """
    q = fault_queries(kafka_broker.bootstrap_servers)
    topic = create_topic(q.bootstrap, unique_topic("wdie"), 2)
    produce(q.bootstrap, topic, [(b"k", f"{p}-{i}".encode(), None, p) for i in range(1500) for p in (0, 1)])
    marker = tmp_path / "worker-died"
    query = q.start_parquet("wdie", trigger={"availableNow": True}, subscribe=topic, maxOffsetsPerTrigger="1000",
                            maxRowsPerArrowBatch="100", **{"testing.faultHooks": "samza_devkit.fault_hooks",
                                                            "testing.failInReadOnce": str(marker)})
    assert query.awaitTermination(scaled(180)), "query did not finish"
    assert query.exception() is None
    assert marker.exists(), "the fault hook never fired"
    task, pid = marker.read_text().split("\t")
    assert task.startswith("Partition ")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # that worker process is really gone
    counts = q.sink_offsets("wdie")
    assert exactly_once(counts, [(p, o) for p in (0, 1) for o in range(1500)]) == []
    assert len(offset_log(q.checkpoint("wdie"))) == 3  # 3000 records, 1000 a batch


def _put_every_shard(client, stream, per_shard, tag):
    from samza_devkit import kinesis_helpers as kh

    acks = []
    for shard in kh.list_shards(client, stream):
        key = shard["HashKeyRange"]["StartingHashKey"]
        acks += kh.put_records(client, stream, [(f"pk-{i % 7}", f"{tag}-{shard['ShardId']}-{i}".encode(), key)
                                                for i in range(per_shard)])
    return acks


def test_kinesis_driver_sigkilled_mid_batch_resumes_exactly_once(moto_server, spark, tmp_path):
    """SIGKILL of the whole samza-kinesis driver (Python, JVM, workers) while batch 0 is in flight, then a restart
    from the same checkpoint into the same Parquet sink, with more records put between the kill and the restart.

    Backs docs/guarantees.md: "Every record reaches an idempotent sink (Parquet) exactly once across query stops and
    restarts" for Kinesis, with the stop a SIGKILL of the driver mid-batch (the graceful twin:
    ``kinesis/test_kinesis_source_reads.py::test_reads_4_shards_exactly_across_restarts``). The sink is compared
    with the acknowledged puts on (shard id, sequence number, subsequence number).
    """
    from samza_devkit import kinesis_helpers as kh

    client = kh.kinesis_client(moto_server)
    stream = kh.create_stream(client, kh.unique_stream_name("kill"), 2)
    acks = _put_every_shard(client, stream, 300, "a")
    job = f"kkill-{uuid.uuid4().hex[:6]}"
    ck, sink, markers = tmp_path / "ck", tmp_path / "sink", tmp_path / "inflight-1"
    cmd = [sys.executable, "-m", "samza_devkit.fault_driver", "--kinesis-endpoint", moto_server, "--stream", stream,
           "--job", job, "--store", f"file://{tmp_path}/metadata", "--checkpoint", str(ck), "--sink", str(sink),
           "--markers", str(markers), "--max-offsets", "100", "--slow-ms", "3000", "--trigger", "processing:200"]
    with open(tmp_path / "driver-1.jsonl", "w") as stdout, open(tmp_path / "driver-1.log", "w") as stderr:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, start_new_session=True, cwd=tmp_path)
    try:
        # the kill comes as soon as a task of batch 0 is inside the slow stage (it holds the task 3 s)
        wait_for(lambda: (0 in offset_log(ck) and 0 not in committed_batches(ck)
                          and markers.is_dir() and any(markers.iterdir())),
                 timeout=180, interval=0.05, what="batch 0 in flight")
    finally:
        kill_process_group(proc)
    assert 0 not in committed_batches(ck), "the kill came too late: batch 0 had committed"
    assert not (sink / "_spark_metadata" / "0").exists()
    more = _put_every_shard(client, stream, 50, "b")  # a replay that re-planned batch 0 would read these in it

    rerun = (spark.readStream.format("samza-kinesis")
             .options(**{"streamName": stream, "endpointUrl": moto_server, "dynamodbEndpointUrl": moto_server,
                         "region": "us-east-1", "awsAccessKeyId": "testing", "awsSecretKey": "testing",
                         "startingPosition": "TRIM_HORIZON", "maxFetchTimePerShard": "2s", "job.name": job,
                         "metadata.store": f"file://{tmp_path}/metadata", "startpoint.pollInterval": "0",
                         "maxRecordsPerShard": "100"}).load()
             .writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
    assert rerun.awaitTermination(scaled(240)), "the restarted query did not finish"
    assert rerun.exception() is None
    got = sorted((r.shardId, r.sequenceNumber, r.subSequenceNumber)
                 for r in spark.read.parquet(str(sink)).select("shardId", "sequenceNumber", "subSequenceNumber")
                 .collect())
    assert got == sorted((a.shard_id, a.sequence, 0) for a in acks + more)
    log = offset_log(ck)
    assert len(log) >= 4 and committed_batches(ck) == set(log)  # 350 a shard, 100 a batch
