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

import pytest

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

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
        kafka_broker, spark, tmp_path, fh):
    """SIGKILL of the whole driver while batch 0 -- the batch applying a Startpoint -- is being written.

    Run 1 writes a Startpoint (p0 -> offset 100) before it starts, reads with maxOffsetsPerTrigger=200 through a
    slow stage and is SIGKILLed once batch 0 is in the offset log, in flight, and not committed (no Parquet
    commit either). Run 2, from the same checkpoint, replays batch 0 from the offset log (Spark asks
    ``initialOffset()`` afresh for its start: the starts recorded in batch 0 make that replay exact; the job's
    lease passes over as its owner process is gone) and reads on to the end. The Parquet
    sink then holds every record exactly once and the Startpoint's effect exactly once (p0 from 100, nothing of p0
    twice); the Startpoint is recorded as applied in batch 0 only and is gone from the store.

    Backs README Guarantees: exactly once "when the Spark driver is SIGKILLed mid-batch and restarted from its
    checkpoint, with a startpoint applied exactly once and deleted".
    """
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("kill"), 2)
    produce(bootstrap, topic, [(b"k", f"v{p}-{i}".encode(), None, p) for i in range(300) for p in (0, 1)])
    job = f"kill-{uuid.uuid4().hex[:6]}"
    ck = tmp_path / "ck"

    started = time.monotonic()
    proc, out = _driver(tmp_path, bootstrap, topic, job, 1, "--startpoint", "0:specific:100",
                        "--max-offsets", "200", "--slow-ms", "2500", "--trigger", "processing:200")
    try:
        markers = tmp_path / "inflight-1"

        def batch0_in_flight():
            return (0 in fh.offset_log(ck) and 0 not in fh.committed_batches(ck)
                    and markers.is_dir() and any(markers.iterdir()))

        fh.wait_for(batch0_in_flight, timeout=120, interval=0.05, what="batch 0 in flight")
        time.sleep(0.5)  # the slow stage holds the batch for 2.5 s: well inside it
    finally:
        fh.kill_process_group(proc)
    killed_at = time.monotonic() - started
    assert 0 not in fh.committed_batches(ck), "the kill came too late: batch 0 had committed"
    assert not (tmp_path / "sink" / "_spark_metadata" / "0").exists()
    startpoint_ts = next(e["creationTimestamp"] for e in _events(out) if e["event"] == "startpoint")
    logged = fh.offset_log(ck)
    assert fh.startpoint_rebases(logged) == [(0, "Partition 0", f"kafka.{topic}.0", 100, startpoint_ts)]

    # Run 2: the same query on this test's own Spark session (a new driver-side runner, as after a reboot; one
    # JVM start less than a second fault_driver run), from the same checkpoint, to the end of the data.
    rerun = (spark.readStream.format("samza-kafka")
             .options(**{"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": job,
                         "metadata.store": f"file://{tmp_path}/metadata", "startingOffsets": "earliest",
                         "startpoint.pollInterval": "0", "maxRowsPerArrowBatch": "50"}).load()
             .writeStream.format("parquet").option("path", str(tmp_path / "sink"))
             .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
    assert rerun.awaitTermination(180), "the restarted query did not finish"
    assert rerun.exception() is None

    sink = Counter((r.partition, r.offset) for r in spark.read.parquet(str(tmp_path / "sink"))
                   .select("partition", "offset").collect())
    wanted = [(0, o) for o in range(100, 300)] + [(1, o) for o in range(300)]
    assert fh.exactly_once(sink, wanted) == []
    log = fh.offset_log(ck)
    assert len(log) >= 2 and fh.committed_batches(ck) == set(log)
    # the startpoint: applied in batch 0 only (the replays re-read it from the log, nothing applied it again) ...
    assert fh.startpoint_rebases(log) == [(0, "Partition 0", f"kafka.{topic}.0", 100, startpoint_ts)]
    # ... and deleted once a later batch was planned from batch 0's end
    assert fh.startpoints_left(tmp_path / "metadata", job) == []
    print(f"killed {killed_at:.1f}s after start; {len(log)} batches")


def test_python_worker_killed_inside_read_is_retried_exactly_once(kafka_broker, fault_queries, tmp_path, fh):
    """A Python worker dies (``os._exit``) inside ``read()`` after handing Spark its first Arrow batch: Spark fails
    that attempt, retries the task, and the Parquet sink holds every record exactly once.

    Backs README Guarantees: exactly once "when a Python worker dies inside read() (the task is retried)".
    """
    q = fault_queries(kafka_broker.bootstrap_servers)
    topic = create_topic(q.bootstrap, unique_topic("wdie"), 2)
    produce(q.bootstrap, topic, [(b"k", f"{p}-{i}".encode(), None, p) for i in range(1500) for p in (0, 1)])
    marker = tmp_path / "worker-died"
    query = q.start_parquet("wdie", trigger={"availableNow": True}, subscribe=topic, maxOffsetsPerTrigger="1000",
                            maxRowsPerArrowBatch="100", **{"testing.failInReadOnce": str(marker)})
    assert query.awaitTermination(180), "query did not finish"
    assert query.exception() is None
    assert marker.exists(), "the fault hook never fired"
    task, pid = marker.read_text().split("\t")
    assert task.startswith("Partition ")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # that worker process is really gone
    counts = q.sink_offsets("wdie")
    assert fh.exactly_once(counts, [(p, o) for p in (0, 1) for o in range(1500)]) == []
    assert len(fh.offset_log(q.checkpoint("wdie"))) == 3  # 3000 records, 1000 a batch
