"""Broker faults under running queries: the Kafka broker restarted / killed mid-batch, the Kinesis endpoint gone.

Both tests accept either outcome the source promises -- the query rides the outage out (librdkafka / botocore
retries, Spark task retries) or fails with a clear error -- and then demand exactly-once output, restarting the
query from its checkpoint when it had failed.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from functools import partial

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.checkpoint_log import committed_batches, offset_log
from samza_devkit.fault_driver import slow_stage
from samza_devkit.fault_harness import exactly_once, wait_for
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.waits import scaled
from spark_samza_source.kinesis.client import AwsClientSettings, kinesis_client
from spark_samza_source.kinesis.driver.admin import KinesisAdmin
from spark_samza_source.kinesis.errors import KinesisSourceError
from spark_samza_source.kinesis.executor.shard_reads import read_shard
from spark_samza_source.kinesis.positions import ShardPosition

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _slow(markers, ms):
    """A filter keeping every row whose first row per task attempt marks the task in flight and sleeps ``ms``."""
    from pyspark.sql.functions import udf

    markers.mkdir(parents=True, exist_ok=True)
    slow = udf(partial(slow_stage, str(markers), ms, None), "boolean").asNondeterministic()
    return lambda df: df.filter(slow(df["offset"]))


def test_kafka_broker_restarted_and_killed_mid_batch(kafka_broker_fresh, fault_queries, tmp_path):
    """A dedicated dev broker is restarted (same port, same data) while batch 0's tasks are reading, and killed
    (SIGKILL) then started again while a later batch reads. The consumer's prefetch is kept small so the tasks
    really fetch across the outage. Within bounded time the query finishes (or fails clearly and is restarted
    from its checkpoint); the Parquet sink holds every record exactly once."""
    broker = kafka_broker_fresh
    q = fault_queries(broker.bootstrap_servers)
    topic = create_topic(q.bootstrap, unique_topic("brk"), 2)
    payload = b"x" * 200
    produce(q.bootstrap, topic, [(b"k", payload + f"{p}-{i}".encode(), None, p) for i in range(3000) for p in (0, 1)])
    markers = tmp_path / "inflight"
    small_prefetch = {"kafka.queued.max.messages.kbytes": "64",
                      "kafka.max.partition.fetch.bytes": "32768", "maxRowsPerArrowBatch": "100"}
    faults: list[tuple[str, float]] = []

    def inject():
        def in_flight(n):
            return lambda: markers.is_dir() and len(list(markers.iterdir())) >= n

        wait_for(in_flight(1), timeout=120, interval=0.02, what="batch 0 in flight")
        t = time.monotonic()
        broker.restart()
        faults.append(("restart", time.monotonic() - t))
        wait_for(in_flight(5), timeout=120, interval=0.02, what="a later batch in flight")
        t = time.monotonic()
        broker.kill()
        time.sleep(2.0)
        broker.start()
        faults.append(("kill+start", time.monotonic() - t))

    injector = threading.Thread(target=inject, daemon=True)
    injector.start()
    began = time.monotonic()
    query = q.start_parquet("brk", trigger={"availableNow": True}, transform=_slow(markers, 1500), subscribe=topic,
                            maxOffsetsPerTrigger="2000", **small_prefetch)
    try:
        finished = query.awaitTermination(scaled(150))
    except Exception:  # noqa: BLE001 - it failed: judged below from query.exception()
        finished = True
    injector.join(60)
    assert finished, "the query neither finished nor failed within 150 s of the broker faults"
    assert [name for name, _ in faults] == ["restart", "kill+start"]
    failure = query.exception()
    if failure is not None:  # allowed: a clear error, then a restart from the checkpoint completes the job
        text = str(failure)
        assert q.bootstrap in text or "broker" in text.lower(), text[-2000:]
        again = q.start_parquet("brk", trigger={"availableNow": True}, subscribe=topic, maxOffsetsPerTrigger="2000")
        assert again.awaitTermination(scaled(120)) and again.exception() is None
    took = time.monotonic() - began
    assert exactly_once(q.sink_offsets("brk"), [(p, o) for p in (0, 1) for o in range(3000)]) == []
    log = offset_log(q.checkpoint("brk"))
    assert len(log) == 3 and committed_batches(q.checkpoint("brk")) == {0, 1, 2}
    print("batches", [(p["batchId"], p["durationMs"].get("triggerExecution"), p["durationMs"].get("addBatch"))
                      for p in query.recentProgress])
    print(f"faults {faults}; query {'failed and was restarted' if failure else 'rode them out'}; {took:.1f}s")


def test_kinesis_endpoint_cut_mid_get_records_and_restored(ks_proxy):
    """The AWS endpoint goes away in the middle of a GetRecords call of a running samza-kinesis query (the proxy
    in front of moto drops that request and closes its port and every connection) and comes back 4 s later on
    the same port with its data; records keep arriving meanwhile. The query retries (botocore, then Spark's
    task retries) or fails with a clear error and is restarted from its checkpoint; every record is read
    exactly once."""
    ks = ks_proxy
    proxy = ks.proxy
    stream = ks.create_stream(2, "cut")
    acks = kh.put_records(ks.client, stream, [(f"pk{i % 23}", f"a{i}".encode()) for i in range(600)])
    cut_at: list[float] = []

    def watch():
        wait_for(lambda: len(ks.collected("cut")) >= 200, timeout=120, what="first batches")
        proxy.cut_on("Kinesis_20131202.GetRecords")
        wait_for(lambda: proxy.cut_happened, timeout=60, interval=0.02, what="the cut")
        cut_at.append(time.monotonic())
        acks.extend(kh.put_records(ks.client, stream, [(f"pk{i % 23}", f"b{i}".encode()) for i in range(100)]))
        time.sleep(4)
        proxy.restore()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    query = ks.start_collecting("cut", stream, maxRecordsPerShard="100")
    watcher.join(150)
    assert cut_at, "the proxy never cut a GetRecords call"

    def done():
        return query.exception() is not None or len(ks.collected("cut")) >= len(acks)

    wait_for(done, timeout=120, what="recovery after the endpoint came back")
    failure = query.exception()
    if failure is not None:  # allowed: a clear error, then a restart from the checkpoint
        text = str(failure)
        assert proxy.endpoint in text and "no answer from the Kinesis endpoint" in text and stream in text, text[-2000:]
        query = ks.start_collecting("cut", stream, maxRecordsPerShard="100")
        wait_for(lambda: len(ks.collected("cut")) >= len(acks), timeout=120, what="reads after a restart")
    took = time.monotonic() - cut_at[0]
    query.stop()
    rows = ks.collected("cut")
    keys = Counter((r.shardId, r.sequenceNumber) for r in rows)
    assert [k for k, n in keys.items() if n > 1] == []
    assert sorted(r.data for r in rows) == sorted(a.data for a in acks)
    assert proxy.requests["Kinesis_20131202.GetRecords"] > 0

    # An endpoint that stays away: once endpoint.retryTimeout is spent, the driver's and the executors' calls fail
    # with our error naming the call, the stream (and shard) and the endpoint -- no bare botocore exception.
    proxy.cut()
    settings = AwsClientSettings(region="us-east-1", endpoint_url=proxy.endpoint, access_key_id="testing",
                                 secret_key="testing", max_attempts=2, connect_timeout_s=1, retry_timeout_s=2)
    client = kinesis_client(settings)
    with pytest.raises(KinesisSourceError, match=rf"ListShards of stream '{stream}': no answer from the Kinesis "
                                                 rf"endpoint \(region us-east-1, endpoint {proxy.endpoint}\)"):
        KinesisAdmin(client, settings=settings).list_shards(stream)
    with pytest.raises(KinesisSourceError, match=rf"GetShardIterator for shard shardId-000000000000 of stream "
                                                 rf"'{stream}'.*no answer from the Kinesis endpoint.*{proxy.endpoint}"):
        read_shard(client, stream, "shardId-000000000000", ShardPosition.trim_horizon(), task="Task-0",
                   aws_settings=settings)
    print(f"recovered {took:.1f}s after the cut; query {'failed and was restarted' if failure else 'rode it out'}")
