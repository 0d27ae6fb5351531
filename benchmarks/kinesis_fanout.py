"""Enhanced fan-out against polling on kinesis-mock behind the devkit's bridge (``kinesis_source.py --only fanout``).

Both strategies run the source's own shard reader (``open_shard_reader``) the way a task runs it batch after batch:
each read starts where the previous one ended and stops at the polling rules (caught up, limits). Figures only,
no targets: the emulator is not AWS (one event a second, no 2 MB/s budgets), so they show the cost of the
protocol as this source drives it, not AWS's figures.

1. latency at a steady low rate: one record every ``--fanout-interval-ms`` (200) on one shard for
   ``--fanout-seconds`` (20); put time to the time the reader handed the row out, p50 / p99.
2. throughput: a backlog of ``--fanout-records`` (2,000) records of 1 KB in each of 8 shards, drained by 2 "tasks"
   (4 shards each, read concurrently, as ``kinesis/executor/task.py`` does); records/s until every shard is caught up.
3. live query: a fan-out Spark query (local[2], a 500 ms processing-time trigger, 2 shards) for
   ``--fanout-live-seconds`` (40) while a record is put every 100 ms: micro-batches, the shard reads that went on
   with a subscription parked by the previous read in the same Python worker (reads minus the subscriptions the
   bridge admitted and the calls it refused: a micro-batch read refused by AWS's 5-second rule gives way), and
   the batch durations p50 / p99.

``--fanout-parts`` picks among ``latency,throughput,live``.
"""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_report import load, record, say

SHARD = "shardId-000000000000"


def _reader(client, stream: str, shard: str, start, consumer_arn, **settings):
    from spark_samza_source.kinesis.executor.reader import ShardRead, ShardReadSettings
    from spark_samza_source.kinesis.executor.shard_reads import open_shard_reader
    request = ShardRead(stream, shard, start, "Task-0", consumer_arn=consumer_arn)
    return open_shard_reader(client, request, ShardReadSettings(**settings))


def _latency(client, stream: str, consumer_arn, seconds: float, interval_s: float) -> list[float]:
    """Put one record every ``interval_s`` while reading batch after batch; the latencies in ms."""
    from spark_samza_source.kinesis.positions import ShardPosition

    put_at: dict[bytes, float] = {}
    done = threading.Event()

    def produce() -> None:
        n = 0
        while not done.is_set():
            data = f"r{n}".encode()
            put_at[data] = time.monotonic()
            client.put_record(StreamName=stream, Data=data, PartitionKey="k")
            n += 1
            done.wait(interval_s)

    start = ShardPosition.at_timestamp(int(time.time() * 1000))
    latencies: list[float] = []
    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        reading = _reader(client, stream, SHARD, start, consumer_arn, max_fetch_time_ms=8_000)
        for batch in reading:
            now = time.monotonic()
            latencies += [(now - put_at[d]) * 1000 for d in batch.column("data").to_pylist() if d in put_at]
        start = reading.result.end
    done.set()
    producer.join()
    return latencies


def _throughput(client, stream: str, consumer_arn, shards: list[str]) -> tuple[int, float]:
    """Drain every shard from TRIM_HORIZON, 2 tasks of 4 shards read concurrently; (records, seconds)."""
    from spark_samza_source.kinesis.positions import ShardPosition

    def drain(shard: str) -> int:
        start, total = ShardPosition.trim_horizon(), 0
        while True:
            result = _reader(client, stream, shard, start, consumer_arn, max_fetch_time_ms=30_000).run()
            total += result.records
            if result.stop in ("caught_up", "shard_end"):
                return total
            start = result.end

    def task(part: list[str]) -> int:
        with ThreadPoolExecutor(len(part)) as pool:
            return sum(pool.map(drain, part))

    began = time.monotonic()
    with ThreadPoolExecutor(2) as tasks:
        records = sum(tasks.map(task, [shards[:4], shards[4:]]))
    return records, time.monotonic() - began


def _register(client, stream: str, name: str) -> str:
    from spark_samza_source.kinesis.calls import KinesisCalls
    from spark_samza_source.kinesis.driver.consumers import StreamConsumers
    arn = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    return StreamConsumers(KinesisCalls(client), stream, arn).ensure_active(name).arn


def _fill(client, stream: str, shards: list[dict], per_shard: int) -> None:
    from samza_devkit import kinesis_helpers as kh

    for shard in shards:
        kh.put_records(client, stream, [(f"pk-{i}", b"x" * 1000) for i in range(per_shard)],
                       explicit_hash_key=shard["HashKeyRange"]["StartingHashKey"])


def _live_query(bridge, client, tmp: Path, seconds: float, shards: int = 2) -> None:
    """Part 3 (see the module doc): how often a live query's reads go on with a parked subscription."""
    import os
    import sys
    import uuid

    from samza_devkit import kinesis_helpers as kh
    from samza_devkit.spark_fixtures import make_local_spark
    from spark_samza_source import register

    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    stream = kh.create_stream(client, kh.unique_stream_name("live"), shards)
    spark = make_local_spark("fanout-live", {"spark.ui.showConsoleProgress": "false"})
    register(spark)
    job = f"live-{uuid.uuid4().hex[:6]}"
    done = threading.Event()

    def produce() -> None:
        n = 0
        while not done.wait(0.1):
            client.put_record(StreamName=stream, Data=f"r{n}".encode(), PartitionKey=f"k{n}")
            n += 1

    producer = threading.Thread(target=produce, daemon=True)
    query = (spark.readStream.format("samza-kinesis").options(
        streamName=stream, endpointUrl=bridge.endpoint, region="us-east-1", awsAccessKeyId="testing",
        awsSecretKey="testing", startingPosition="TRIM_HORIZON", consumerType="SubscribeToShard",
        consumerName=f"{job}-efo", maxFetchTimePerShard="8s", **{"job.name": job,
                                                                   "metadata.store": f"file://{tmp / job}"})
        .load().writeStream.format("noop").option("checkpointLocation", str(tmp / job / "ck"))
        .trigger(processingTime="500 milliseconds").start())
    try:
        producer.start()
        time.sleep(seconds)
    finally:
        done.set()
        query.stop()
        producer.join()
    _report_live(bridge, client, stream, f"{job}-efo", [p for p in query.recentProgress if p.get("batchId", 0) > 0],
                 seconds)
    spark.stop()


def _report_live(bridge, client, stream: str, consumer: str, progress: list[dict], seconds: float) -> None:
    """Part 3's figures: the bridge's subscription counts against the query's shard reads, batch durations."""
    from samza_devkit import kinesis_helpers as kh

    arn = client.describe_stream_consumer(
        StreamARN=client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"],
        ConsumerName=consumer)["ConsumerDescription"]["ConsumerARN"]
    counts = [bridge.subscription_counts(arn, s["ShardId"]) for s in kh.list_shards(client, stream)]
    reads = len(progress) * len(counts)  # every batch reads every shard (both open)
    admitted, refused = sum(c.admitted for c in counts), sum(c.refused for c in counts)
    # a read makes one call when it subscribes, none when it goes on with a parked subscription, and one refused
    # call when it gives way to a subscription made less than 5 s ago (another worker's): no read here waits
    reused = max(0, reads - admitted - refused)
    durations = sorted(p["durationMs"]["triggerExecution"] for p in progress) or [0]
    p99 = durations[min(len(durations) - 1, int(len(durations) * 0.99))]
    say(f"  live query, {len(counts)} shards, {seconds:g} s: {len(progress)} batches, {reads} shard reads, {admitted} "
        f"subscriptions, {refused} calls refused by the 5-second rule (reads that gave way), so {reused} reads "
        f"went on with a parked subscription ({reused / max(1, reads):.0%}); batch p50 "
        f"{statistics.median(durations):,.0f} ms, p99 {p99:,} ms, {sum(p['numInputRows'] for p in progress):,} rows "
        f"({load()})")
    record("kinesis-mock live fan-out query: reads on a parked subscription",
           f"{reused / max(1, reads):.0%} of {reads}", "figures only", None)
    record("kinesis-mock live fan-out query: batch p50 / p99",
           f"{statistics.median(durations):,.0f} / {p99:,} ms", "figures only", None)


def _throughputs(client, records_per_shard: int) -> None:
    """Part 2 (see the module doc), polling then fan-out."""
    from samza_devkit import kinesis_helpers as kh

    eight = kh.create_stream(client, kh.unique_stream_name("tput"), 8)
    shards = kh.list_shards(client, eight)
    _fill(client, eight, shards, records_per_shard)
    arn = _register(client, eight, "bench-throughput")
    ids = [s["ShardId"] for s in shards]
    for name, consumer in (("polling", None), ("fan-out", arn)):
        records, secs = _throughput(client, eight, consumer, ids)
        say(f"  throughput {name}, 8 shards in 2 tasks: {records:,} records of 1 KB in {secs:.1f} s = "
            f"{records / secs:,.0f} rec/s ({load()})")
        record(f"kinesis-mock throughput {name}, 8 shards / 2 tasks", f"{records / secs:,.0f} rec/s",
               "figures only", None)


def part_fanout(args, tmp: Path) -> None:
    """Fan-out vs polling: latency p50/p99 at a steady low rate, throughput of 8 shards in 2 tasks."""
    from samza_devkit import kinesis_helpers as kh
    from samza_devkit.kinesis_mock import KinesisMockProcess, ensure_kinesis_mock
    from samza_devkit.kinesis_mock_bridge import KinesisMockBridge

    say(f"fan-out vs polling on kinesis-mock (bridged), {load()}")
    with KinesisMockProcess(modules=ensure_kinesis_mock()) as upstream, KinesisMockBridge(upstream) as bridge:
        client = kh.kinesis_client(bridge.endpoint)
        parts = set(args.fanout_parts.split(","))
        one = kh.create_stream(client, kh.unique_stream_name("lat"), 1)
        arn = _register(client, one, "bench-latency")
        for name, consumer in (("polling", None), ("fan-out", arn)) if "latency" in parts else ():
            ms = sorted(_latency(client, one, consumer, args.fanout_seconds, args.fanout_interval_ms / 1000))
            if not ms:
                say(f"  latency {name}: no record read")
                continue
            p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
            say(f"  latency {name}: {len(ms)} records, p50 {statistics.median(ms):,.0f} ms, p99 {p99:,.0f} ms "
                f"({load()})")
            record(f"kinesis-mock latency {name} p50 / p99", f"{statistics.median(ms):,.0f} / {p99:,.0f} ms",
                   "figures only", None)
        if "live" in parts:
            _live_query(bridge, client, tmp, args.fanout_live_seconds)
        if "throughput" in parts:
            _throughputs(client, args.fanout_records)
        client.close()
