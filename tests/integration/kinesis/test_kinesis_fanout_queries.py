"""samza-kinesis with enhanced fan-out (``consumerType=SubscribeToShard``) on kinesis-mock behind the devkit's bridge
(which makes it behave as AWS documents ``SubscribeToShard``): live queries into a Parquet sink, compared with the
acknowledged puts on (shard id, sequence number, subsequence number).

kinesis-mock sends one event a second, and AWS (so the bridge) refuses a subscription to a shard within 5 seconds
of the previous one by the same consumer, so each micro-batch of a shard costs ~5 s: the cases share few queries.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.query_harness import QueryHarness, await_available_now, stop_active_queries

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = [f"user-{i}" for i in range(6)]
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


@pytest.fixture(scope="module")
def fo(spark, kinesis_mock_endpoint, tmp_path_factory):
    harness = FanOutHarness(spark, kinesis_mock_endpoint, tmp_path_factory.mktemp("fanout"))
    yield harness
    stop_active_queries(spark)
    harness.client.close()


def put_keyed(client, stream: str, tag: str, per_key: int) -> list:
    """``per_key`` records for every key (data ``<key>:<tag>:<n>``), routed by partition key as an application
    would; the acks."""
    return kh.put_records(client, stream, [(k, f"{k}:{tag}:{n}".encode()) for n in range(per_key) for k in KEYS])


def acks_key(acks) -> list[tuple[str, str, int]]:
    out = []
    for a in acks:
        subs = len(a.user_records) if getattr(a, "user_records", None) else 1
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


def test_fan_out_reads_exactly_once_across_reshards_restarts_and_a_switch_to_polling(fo, kinesis_mock_bridge):
    """One stream, four runs from one checkpoint into one Parquet sink:

    1. fan-out, caught up: records, KPL aggregates, then a split of shard 0 while the query runs (its children
       must follow their parent, in its task), with the bridge cutting the open subscriptions now and then (each
       renewed from where it stood);
    2. fan-out, behind: records and a merge of the two children while the query is stopped, then AvailableNow;
    3. polling (the same checkpoint, ``consumerType=GetRecords``): keeps the positions and tasks;
    4. fan-out again, AvailableNow.
    """
    stream = kh.create_stream(fo.client, kh.unique_stream_name("efo"), 2)
    tags = ["a", "b", "c", "d", "e"]
    acks = put_keyed(fo.client, stream, "a", 5)
    acks += kh.put_aggregated(fo.client, stream, [[("user-agg", b"agg-0"), ("user-agg", b"agg-1"),
                                                   ("user-agg", b"agg-2")]])
    query = fo.parquet("main", stream, trigger={"processingTime": "1 second"})
    fo.wait_for(lambda: _sink_count(fo, "main") >= len(acks_key(acks)), timeout=180, what="the first records")
    kh.split_shard(fo.client, stream, "shardId-000000000000")
    cuts = []
    stop_cutting = threading.Event()

    def cut_now_and_then():
        while not stop_cutting.wait(2.5):
            cuts.append(kinesis_mock_bridge.cut())

    cutter = threading.Thread(target=cut_now_and_then, daemon=True)
    cutter.start()
    try:
        acks += put_keyed(fo.client, stream, "b", 5)
        fo.wait_for(lambda: _sink_count(fo, "main") >= len(acks_key(acks)), timeout=240, what="records after the split")
    finally:
        stop_cutting.set()
        cutter.join()
    progress = query.lastProgress
    query.stop()
    assert query.exception() is None
    assert sum(cuts) > 0, "the bridge never cut an open subscription"

    acks += put_keyed(fo.client, stream, "c", 4)
    kh.merge_shards(fo.client, stream, "shardId-000000000002", "shardId-000000000003")
    acks += put_keyed(fo.client, stream, "d", 4)
    await_available_now(fo.parquet("main", stream, trigger={"availableNow": True}), "main", 240)
    acks += put_keyed(fo.client, stream, "e", 3)
    await_available_now(fo.parquet("main", stream, trigger={"availableNow": True}, consumerType="GetRecords",
                                   consumerName=""), "main", 240)
    acks += put_keyed(fo.client, stream, "e", 0)  # nothing: the switch back reads no duplicate
    await_available_now(fo.parquet("main", stream, trigger={"availableNow": True}), "main", 240)

    rows = fo.sink_rows("main")
    assert sorted((r.shardId, r.sequenceNumber, r.subSequenceNumber) for _, r in rows) == acks_key(acks)
    check_per_key_order(rows, tags)
    task_of = {r.shardId: r.task for _, r in rows}
    assert task_of["shardId-000000000002"] == task_of["shardId-000000000003"] == task_of["shardId-000000000000"]
    assert task_of["shardId-000000000004"] == task_of["shardId-000000000002"]  # the merge: the lower parent's task
    consumer = json.dumps(progress["sources"][0])
    assert f"{fo.job}-efo" in consumer and ":consumer/" in consumer  # the progress names the consumer and its ARN


def _sink_count(fo, name: str) -> int:
    path = Path(fo.sink_path(name))
    from pyspark.errors import AnalysisException

    try:
        return fo.spark.read.parquet(str(path)).count()
    except AnalysisException:  # no committed file yet (the file sink lists only committed ones)
        return 0
