"""samza-kinesis with enhanced fan-out (``consumerType=SubscribeToShard``) on kinesis-mock behind the devkit's bridge
(which makes it behave as AWS documents ``SubscribeToShard``): live queries into a Parquet sink, compared with the
acknowledged puts on (shard id, sequence number, subsequence number).

kinesis-mock sends one event a second, and AWS (so the bridge) refuses a subscription to a shard within 5 seconds
of the previous one by the same consumer (reads keep theirs open across micro-batches where they can, but a
restart or a retry subscribes anew): the cases share few queries.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.query_harness import QueryHarness, await_available_now, stop_active_queries
from samza_devkit.waits import scaled

pytestmark = [pytest.mark.spark, pytest.mark.slow]

def _two_keys_per_quarter() -> list[str]:
    """Partition keys, two in each quarter of the hash-key space (Kinesis: MD5 of the key), so both children of
    a split of shard 0 (of 2) and their merge get records."""
    quarters: dict[int, list[str]] = {0: [], 1: [], 2: [], 3: []}
    i = 0
    while any(len(keys) < 2 for keys in quarters.values()):
        key = f"user-{i}"
        keys = quarters[int(hashlib.md5(key.encode()).hexdigest(), 16) >> 126]
        if len(keys) < 2:
            keys.append(key)
        i += 1
    return [key for keys in quarters.values() for key in keys]


KEYS = _two_keys_per_quarter()
FAN_OUT = {"consumerType": "SubscribeToShard", "maxFetchTimePerShard": "8s"}


class FanOutHarness(QueryHarness):
    def __init__(self, spark, endpoint: str, root: Path) -> None:
        super().__init__(spark, root)
        self.endpoint = endpoint
        self.client = kh.kinesis_client(endpoint)

    def options(self, stream: str, **extra) -> dict[str, str]:
        return self.job_options({
            "streamName": stream, "endpointUrl": self.endpoint, "region": "us-east-1",
            "awsAccessKeyId": "testing", "awsSecretKey": "testing", "startingPosition": "TRIM_HORIZON",
            "consumerName": f"{self.job}-efo", **FAN_OUT}, extra)

    def parquet(self, name: str, stream: str, trigger: dict | None = None, **extra):
        df = self.spark.readStream.format("samza-kinesis").options(**self.options(stream, **extra)).load()
        return self.write_parquet(name, df, trigger)

    def sink_rows(self, name: str) -> list:
        """Every sink row with the micro-batch that wrote it (from the file sink's ``_spark_metadata`` log)."""
        batch_of = {}
        log = Path(self.sink_path(name)) / "_spark_metadata"
        for entry in log.iterdir():
            if entry.name.isdigit():
                for line in entry.read_text().splitlines()[1:]:
                    batch_of[json.loads(line)["path"].rsplit("/", 1)[-1]] = int(entry.name)
        from pyspark.sql import functions as F

        rows = (self.spark.read.parquet(self.sink_path(name)).withColumn("file", F.input_file_name()).collect())
        return [(batch_of[r.file.rsplit("/", 1)[-1]], r) for r in rows]


#: the file sink's log names each batch's files until it compacts them (every 10 batches by default): kept apart
#: here so that every row's batch is known
_COMPACT_INTERVAL = "spark.sql.streaming.fileSink.log.compactInterval"


@pytest.fixture(scope="module")
def fo(spark, kinesis_mock_endpoint, tmp_path_factory):
    harness = FanOutHarness(spark, kinesis_mock_endpoint, tmp_path_factory.mktemp("fanout"))
    before = spark.conf.get(_COMPACT_INTERVAL, None)
    spark.conf.set(_COMPACT_INTERVAL, "100000")
    yield harness
    stop_active_queries(spark)
    if before is None:
        spark.conf.unset(_COMPACT_INTERVAL)
    else:
        spark.conf.set(_COMPACT_INTERVAL, before)
    harness.client.close()


def put_keyed(client, stream: str, tag: str, per_key: int) -> list:
    """``per_key`` records for every key (data ``<key>:<tag>:<n>``), routed by partition key as an application
    would; the acks."""
    return kh.put_records(client, stream, [(k, f"{k}:{tag}:{n}".encode()) for n in range(per_key) for k in KEYS])


def acks_key(acks) -> list[tuple[str, str, int]]:
    out = []
    for a in acks:
        subs = len(a.users) or 1
        out += [(a.shard_id, a.sequence, i) for i in range(subs)]
    return sorted(out)


def check_per_key_order(batched_rows, tags: list[str]) -> None:
    """Every key's records in put order, and never from two shards in one batch (a child read only after its
    parent drained)."""
    per_key: dict[str, list] = {}
    for batch, r in batched_rows:
        if ":" not in r.data.decode():
            continue
        key, tag, n = r.data.decode().split(":")
        per_key.setdefault(key, []).append((batch, int(r.sequenceNumber), tags.index(tag), int(n), r.shardId))
    for key, items in per_key.items():
        shards_in_batch: dict[int, set] = {}
        for batch, *_, shard in items:
            shards_in_batch.setdefault(batch, set()).add(shard)
        assert all(len(s) == 1 for s in shards_in_batch.values()), f"{key} read from two shards in one batch"
        order = [(t, n) for _, _, t, n, _ in sorted(items)]
        assert order == sorted(order), f"{key} out of put order"


#: shardId-000000000000 ... : the stream starts with 0 and 1; kinesis-mock numbers every child after the last shard
S = [f"shardId-{n:012d}" for n in range(8)]
TAGS = ["a", "b", "c", "d", "e", "f", "g"]  # the put order of the first test's rounds of records
#: the restarted live query reads at most this many records of a shard per batch, so a backlog takes batches
BEHIND_BATCH = 10


def test_fan_out_reads_exactly_once_across_reshards_restarts_and_a_switch_to_polling(fo, kinesis_mock_bridge):
    """Guarantees (fan-out keeps every polling guarantee): one stream, four runs from one checkpoint into one
    Parquet sink; the lineage cases on a live query, caught up and behind:

    1. fan-out, live, caught up: records, KPL aggregates, a split of shard 0 (children 2, 3) with the bridge cutting
       the open subscriptions now and then (each renewed from where it stood), then, every record read, a merge of
       2 and 3 into 4;
    2. fan-out, live, behind: while the query is stopped, records in 4 and 1 and their merge into 5 (4 is the lower
       parent), then a backlog in 5 that takes several batches (``maxRecordsPerShard``); 5 is split (6, 7) while
       the restarted query is still draining it;
    3. polling (the same checkpoint, ``consumerType=GetRecords``): keeps the positions and tasks;
    4. fan-out again, AvailableNow: reads no duplicate.

    Children are read only after their parents drained, in their parent's task (a merge: the lower parent's), each
    key in put order and never from two shards in one batch.
    """
    stream = kh.create_stream(fo.client, kh.unique_stream_name("efo"), 2)
    acks = put_keyed(fo.client, stream, "a", 5)
    acks += kh.put_aggregated(fo.client, stream, [[("user-agg", b"agg-0"), ("user-agg", b"agg-1"),
                                                   ("user-agg", b"agg-2")]])
    caught_up_at, progress = _live_split_then_merge_caught_up(fo, kinesis_mock_bridge, stream, acks)
    _live_merge_and_split_behind(fo, stream, acks)
    acks += put_keyed(fo.client, stream, "g", 3)
    await_available_now(fo.parquet("main", stream, trigger={"availableNow": True}, consumerType="GetRecords",
                                   consumerName=""), "main", 240)
    await_available_now(fo.parquet("main", stream, trigger={"availableNow": True}), "main", 240)

    rows = fo.sink_rows("main")
    assert sorted((r.shardId, r.sequenceNumber, r.subSequenceNumber) for _, r in rows) == acks_key(acks)
    check_per_key_order(rows, TAGS)
    _check_lineage(rows, kh.offset_log(fo.checkpoint("main")), caught_up_at)
    consumer = json.dumps(progress["sources"][0])
    assert f"{fo.job}-efo" in consumer and "/consumer/" in consumer  # the progress names the consumer and its ARN


def _live_split_then_merge_caught_up(fo, bridge, stream: str, acks: list) -> tuple[int, dict]:
    """Run 1 (see the test); ``acks`` grows with the puts. The last batch that wrote rows before the merge, and the
    query's last progress."""
    query = fo.parquet("main", stream, trigger={"processingTime": "1 second"})
    _await_sink(fo, acks, "the first records")
    kh.split_shard(fo.client, stream, S[0])
    # one cut for sure before the next records (a caught-up query holds a subscription open between batches), then
    # more while they are read: however fast the query reads them, records land after a cut
    fo.wait_for(bridge.cut, timeout=60, what="an open subscription to cut")
    stop_cutting = threading.Event()

    def cut_now_and_then():
        while not stop_cutting.wait(2.5):
            bridge.cut()

    cutter = threading.Thread(target=cut_now_and_then, daemon=True)
    cutter.start()
    try:
        acks += put_keyed(fo.client, stream, "b", 5)
        _await_sink(fo, acks, "records after the split")
    finally:
        stop_cutting.set()
        cutter.join()
    assert _sink_count(fo, "main") == len(acks_key(acks)), "not caught up before the merge"  # every record, once
    caught_up_at = max(int(f.name) for f in (Path(fo.sink_path("main")) / "_spark_metadata").iterdir()
                       if f.name.isdigit())  # the last batch the sink wrote: every record read by then
    kh.merge_shards(fo.client, stream, S[2], S[3])
    acks += put_keyed(fo.client, stream, "c", 2)
    _await_sink(fo, acks, "records after the merge")
    progress = query.lastProgress
    query.stop()
    assert query.exception() is None
    return caught_up_at, progress


def _live_merge_and_split_behind(fo, stream: str, acks: list) -> None:
    """Run 2 (see the test); ``acks`` grows with the puts."""
    acks += put_keyed(fo.client, stream, "d", 1)  # unread in both parents when they merge
    kh.merge_shards(fo.client, stream, S[4], S[1])
    acks += put_keyed(fo.client, stream, "e", 3)  # 24 records in 5: three batches of BEHIND_BATCH
    query = fo.parquet("main", stream, trigger={"processingTime": "1 second"}, maxRecordsPerShard=str(BEHIND_BATCH))
    fo.wait_for(lambda: _planned_to_read(fo, S[5]), timeout=180, what="the first batch that reads 5")
    kh.split_shard(fo.client, stream, S[5])  # while that batch reads 5 (or the next one does: 5 is not drained)
    acks += put_keyed(fo.client, stream, "f", 1)
    _await_sink(fo, acks, "records after the split of 5")
    query.stop()
    assert query.exception() is None


def _check_lineage(rows, offsets: dict, caught_up_at: int) -> None:
    """Each shard in one task, children in their parent's, read after it drained; and the reshards of the first
    test happened as meant: the merge of 2 and 3 after both were read to their tip, the split of 5 while it still
    had records to read (when the planner first listed its children)."""
    from spark_samza_source.kinesis.driver.offset import BLOCKED, READABLE
    tasks: dict[str, set] = {}
    batches: dict[str, list[int]] = {}
    for batch, r in rows:
        tasks.setdefault(r.shardId, set()).add(r.task)
        batches.setdefault(r.shardId, []).append(batch)
    assert all(len(t) == 1 for t in tasks.values()), f"a shard read in two tasks: {tasks}"
    task_of = {shard: next(iter(t)) for shard, t in tasks.items()}
    assert task_of[S[2]] == task_of[S[3]] == task_of[S[0]] != task_of[S[1]]
    assert task_of[S[4]] == task_of[S[2]]  # a merge: the lower parent's task ...
    assert task_of[S[5]] == task_of[S[4]]  # ... even when the parents were in two tasks
    assert task_of[S[6]] == task_of[S[7]] == task_of[S[5]]
    for parents, child in (([S[0]], S[2]), ([S[0]], S[3]), ([S[2], S[3]], S[4]), ([S[4], S[1]], S[5]),
                           ([S[5]], S[6]), ([S[5]], S[7])):
        assert min(batches[child]) > max(b for p in parents for b in batches[p]), f"{child} read before its parents"
    assert max(batches[S[2]] + batches[S[3]]) <= caught_up_at < min(batches[S[4]])  # caught up at the merge
    listed = min(b for b, o in offsets.items() if S[6] in o.shards)  # the first plan after the split of 5
    assert offsets[listed].shards[S[5]].status == READABLE and offsets[listed].shards[S[6]].status == BLOCKED
    assert min(batches[S[5]]) < listed <= max(batches[S[5]]), (  # 5 had rows before the split and after it
        f"the split of 5 was not made while the query drained it: rows in {sorted(set(batches[S[5]]))}, "
        f"children first planned in batch {listed}")


def _planned_to_read(fo, shard: str) -> bool:
    """Whether the query's offset log has a batch that reads ``shard`` (its parents drained)."""
    from spark_samza_source.kinesis.driver.offset import READABLE
    return any(shard in o.shards and o.shards[shard].status == READABLE
               for o in kh.offset_log(fo.checkpoint("main")).values())


def _await_sink(fo, acks: list, what: str) -> None:
    fo.wait_for(lambda: _sink_count(fo, "main") >= len(acks_key(acks)), timeout=240, what=what)


def _sink_count(fo, name: str) -> int:
    path = Path(fo.sink_path(name))
    from pyspark.errors import AnalysisException

    try:
        return fo.spark.read.parquet(str(path)).count()
    except AnalysisException:  # no committed file yet (the file sink lists only committed ones)
        return 0


def put_to_shard(client, stream: str, tag: str, count: int) -> list:
    return kh.put_records(client, stream, [(f"pk-{i}", f"{tag}-{i}".encode()) for i in range(count)])


def test_a_retry_meeting_the_open_subscription_reads_exactly_its_recorded_range_then_startpoints_apply(
        fo, kinesis_mock_bridge, tmp_path):
    """Guarantees (retries stay exact on fan-out): the first attempt of a task reads the shard through fan-out,
    parks its subscription (still open) when its read ends, records its end and fails; while its retry is held
    back, more records land. The retry meets the failed attempt's subscription (AWS refuses a new one within 5 s of
    it: ``ResourceInUseException``, held here until the test has seen a refusal), waits it out, and reads exactly
    the recorded range; the new records come in the next batch. Then startpoints of every type on the stopped
    query, each applied once through fan-out runs."""
    from spark_samza_source.core.model import SystemStreamPartition
    from spark_samza_source.core.startpoint import (
        StartpointOldest,
        StartpointSpecific,
        StartpointTimestamp,
        StartpointUpcoming,
    )

    stream = kh.create_stream(fo.client, kh.unique_stream_name("efor"), 1)
    arn = fo.client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    first = put_to_shard(fo.client, stream, "a", 20)
    marker, release = tmp_path / "failed-once", tmp_path / "retry-may-run"
    query = fo.collect_batches("retry", fo.spark.readStream.format("samza-kinesis").options(**fo.options(
        stream, **{"testing.faultHooks": "samza_devkit.fault_hooks", "testing.failAfterRecord": str(marker),
                   "testing.failAfterRecordHold": str(release)})).load())
    fo.wait_for(marker.exists, timeout=120, what="the injected failure")
    later = put_to_shard(fo.client, stream, "b", 7)
    consumer = fo.client.describe_stream_consumer(StreamARN=arn, ConsumerName=f"{fo.job}-efo")
    counts = _subscription_counts(kinesis_mock_bridge, consumer["ConsumerDescription"]["ConsumerARN"])
    # the failed attempt's read made the only call, and its subscription is still open, parked, while the attempt
    # fails after recording its end
    assert counts().admitted == 1
    assert len(kinesis_mock_bridge.open_subscriptions(consumer["ConsumerDescription"]["ConsumerARN"], SHARD0)) == 1
    refused = counts().refused
    kinesis_mock_bridge.takeover_after_s = 600  # the retry must meet the refusal however late it comes
    try:
        release.touch()
        fo.wait_for(lambda: counts().refused > refused, timeout=120, what="the retry meeting the subscription")
    finally:
        kinesis_mock_bridge.reset()
    fo.wait_for(lambda: len(fo.collected("retry")) >= len(first) + len(later), timeout=120, what="every record")
    # the rows reach the sink before Spark commits their batch: a stop in between leaves it to be run again by the
    # next query (as planned, before any startpoint), which the startpoint runs below do not expect
    query.processAllAvailable()
    query.stop()
    assert query.exception() is None
    assert counts().admitted >= 2  # the retry subscribed anew once allowed
    rows = fo.collected("retry")
    assert sorted(r.sequenceNumber for r in rows) == sorted(a.sequence for a in first + later)  # exactly once
    shard, end = marker.read_text().strip().split(" ", 1)
    assert json.loads(end)["sequence"] == first[-1].sequence  # the failed attempt's recorded end ...
    assert marker.read_text().strip() in (tmp_path / "failed-once.after").read_text().splitlines()  # ... retried
    failed_batch = next(batch for _, batch in fo.batches["retry"] if batch)
    assert [r.data for r in failed_batch] == [a.data for a in first]  # exactly the recorded range, not `later`

    manager = fo.startpoints()
    slot = SystemStreamPartition("kinesis", stream, 0)

    def run() -> list:
        before = len(fo.collected("retry"))
        q = fo.collect_batches("retry", fo.spark.readStream.format("samza-kinesis").options(
            **fo.options(stream)).load(), trigger={"availableNow": True})
        await_available_now(q, "retry", 240)
        return fo.collected("retry")[before:]

    manager.write(slot, StartpointSpecific(first[10].sequence))
    assert [r.data for r in run()] == [a.data for a in first[10:] + later]
    skipped = put_to_shard(fo.client, stream, "s", 3)
    manager.write(slot, StartpointUpcoming())
    assert run() == []
    stamp = max(r.approximateArrivalTimestamp for r in fo.collected("retry"))
    newest = put_to_shard(fo.client, stream, "c", 4)
    manager.write(slot, StartpointTimestamp(int(stamp.timestamp() * 1000) + 1))
    by_time = [r.data for r in run()]
    assert by_time[-4:] == [a.data for a in newest] and not any(d.startswith(b"a-") for d in by_time)
    manager.write(slot, StartpointOldest())
    assert len(run()) == len(first) + len(later) + len(skipped) + len(newest)  # replayed from the shard's start
    assert manager.list() == []


def _subscription_counts(bridge, consumer_arn: str):
    """What the bridge counted for the consumer's calls on the stream's shard, as a function to call again."""
    return lambda: bridge.subscription_counts(consumer_arn, SHARD0)


SHARD0 = "shardId-000000000000"


def test_a_fan_out_driver_sigkilled_mid_batch_resumes_exactly_once(fo, tmp_path):
    """Guarantees (exactly once after a driver crash, on fan-out): SIGKILL of a whole fan-out driver (Python, JVM,
    workers) while batch 0 is in flight, then a restart from the same checkpoint into the same Parquet sink, with
    more records put in between (as the polling twin in ``faults/test_process_faults.py``)."""
    import os
    import signal
    import subprocess
    import sys
    import uuid

    stream = kh.create_stream(fo.client, kh.unique_stream_name("efok"), 2)
    acks = put_keyed(fo.client, stream, "a", 10)
    job, store = f"efokill-{uuid.uuid4().hex[:6]}", f"file://{tmp_path}/metadata"
    ck, sink, markers = tmp_path / "ck", tmp_path / "sink", tmp_path / "inflight"
    fan_out = [f"consumerType={FAN_OUT['consumerType']}", f"consumerName={job}-efo",
               f"maxFetchTimePerShard={FAN_OUT['maxFetchTimePerShard']}"]
    cmd = [sys.executable, "-m", "samza_devkit.fault_driver", "--kinesis-endpoint", fo.endpoint, "--stream", stream,
           "--job", job, "--store", store, "--checkpoint", str(ck), "--sink", str(sink), "--markers", str(markers),
           "--slow-ms", "3000", "--trigger", "processing:200",
           *[arg for option in fan_out for arg in ("--source-option", option)]]
    with open(tmp_path / "driver.log", "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path)
    try:
        fo.wait_for(lambda: (ck / "offsets" / "0").exists() and not (ck / "commits" / "0").exists()
                    and markers.is_dir() and any(markers.iterdir()), timeout=180, what="batch 0 in flight")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert not (ck / "commits" / "0").exists(), "the kill came too late: batch 0 had committed"
    acks += put_keyed(fo.client, stream, "b", 5)
    options = {**fo.options(stream), "job.name": job, "metadata.store": store, "consumerName": f"{job}-efo"}
    rerun = (fo.spark.readStream.format("samza-kinesis").options(**options).load()
             .writeStream.format("parquet").option("path", str(sink)).option("checkpointLocation", str(ck))
             .trigger(availableNow=True).start())
    assert rerun.awaitTermination(scaled(240)), "the restarted query did not finish"
    assert rerun.exception() is None
    got = sorted((r.shardId, r.sequenceNumber, r.subSequenceNumber)
                 for r in fo.spark.read.parquet(str(sink)).select("shardId", "sequenceNumber", "subSequenceNumber")
                 .collect())
    assert got == acks_key(acks)
