"""The driver's per-batch work at scale (issue #46): samza-kafka's ``latestOffset`` + ``partitions`` + ``commit`` over
1,000 and 10,000 partitions, on the file, S3 (moto) and DynamoDB (moto) stores, called directly as Spark calls them
(no Spark query); what each batch costs in driver time, in calls to Kafka and to the store, in the driver Python
process's memory, and in the size of the offset Spark writes to its log.

    .venv/bin/python benchmarks/scale.py                         # Kafka, ~10 minutes on 2 cores
    .venv/bin/python benchmarks/scale.py --partitions 1000 --stores file --batches 3

One Apache Kafka broker (the devkit's, from Maven Central's jars; small index files so 10,000 partitions fit in its
file handles and mappings) holds 100 topics x 100 partitions with ``--records`` records each, written by an
idempotent producer. One moto server holds the S3 bucket and the DynamoDB tables. Each (partition count, store) is
measured in a process of its own, so its peak RSS is that configuration's alone: a new job (``job.name``) over the
first ``partitions / 100`` topics, ``GroupByPartitionFixedTasks`` (the grouper that keeps tasks when topics grow),
``initialOffset``, then ``--batches`` micro-batches; before each, ``--new-per-batch`` records go to partitions spread
over every topic, so each batch has work. Per batch:

* **driver time**: wall time of ``latestOffset(start)`` + ``partitions(start, end)`` + ``commit(end)``, and of the
  writes behind the commit (checkpoint mirror, consumer group), which the next ``latestOffset`` waits for; the
  median of the batches after the first (the first writes every task's mirror record);
* **calls**: to Kafka, counted on the librdkafka clients the source's ``KafkaAdmin`` uses (its ``AdminClient``, its
  offset lookups, the group mirror's commit; each call is one request per broker: one broker here), and to the
  store, counted on ``MetadataStore`` API calls (``samza_devkit.store_wrappers.CountingStore``; a listing counts
  once, whatever pages it takes); the job lease's background renewals are store calls too;
* **peak RSS** (``ru_maxrss``) of the driver process, PySpark and the source imported as in a driver;
* **offset JSON**: ``json.dumps`` of ``latestOffset``'s dict, what Spark's offset log stores per batch.

Targets (issue #46): a micro-batch over 10,000 partitions planned and committed in under 1 s of driver time on
each store, peak RSS under 512 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from bench_report import load, say

TOPICS, PARTITIONS_PER_TOPIC = 100, 100
TOPIC_PREFIX = "scale"
TARGET_S, TARGET_RSS_MB = 1.0, 512
STORES = ("file", "s3", "dynamodb")
REGION = "us-east-1"
DUMMY_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
             "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}
#: 10,000 partitions, each with its segment's file open and two index files mapped, on the devkit broker
BROKER_CONFIG = {"log.index.size.max.bytes": "65536", "log.segment.bytes": str(1 << 20),
                 "num.recovery.threads.per.data.dir": "2"}


def topic_name(index: int) -> str:
    return f"{TOPIC_PREFIX}-{index:03d}"


# ---- the measured process ----------------------------------------------------------------------------------------

class CountingClient:
    """A librdkafka client the source uses (the ``AdminClient``, the consumer-group mirror's handle), counting each
    method call (one request per broker)."""

    def __init__(self, inner: Any, calls: Counter) -> None:
        self._inner, self._calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._calls[name] += 1
            return attr(*args, **kwargs)

        return counted


def store_uri(kind: str, work: Path, moto: str, bucket: str, job: str) -> str:
    if kind == "file":
        return (work / f"store-{job}").as_uri()
    if kind == "s3":
        return f"s3://{bucket}/{job}?region={REGION}&endpoint={moto}&access_key=testing&secret_key=testing"
    return f"dynamodb://scale-{job}?region={REGION}&endpoint={moto}"


def produce_spread(bootstrap: str, topics: int, count: int, seed: int) -> None:
    """``count`` small records to partitions spread over the first ``topics`` topics (idempotent producer)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": "true", "linger.ms": "20"})
    partitions = topics * PARTITIONS_PER_TOPIC
    for i in range(count):
        p = (seed * 7919 + i * (partitions // max(count, 1) or 1)) % partitions
        producer.produce(topic_name(p // PARTITIONS_PER_TOPIC), value=b"x" * 50, partition=p % PARTITIONS_PER_TOPIC)
    if producer.flush(120) != 0:
        raise RuntimeError("records still unsent after 120 s")


def summarise(batches: list[dict], system: str, **head: Any) -> dict:
    """One configuration's figures: the medians of the batches after the first (the first writes every task's
    mirror record), the last batch's calls (to ``system`` and the store), the process's peak RSS."""
    steady = batches[1:] or batches
    return {
        **head,
        "driver_s": statistics.median(b["driver"] for b in steady),
        "with_behind_s": statistics.median(b["with_behind"] for b in steady),
        "cpu_s": statistics.median(b["cpu"] for b in steady),
        "first_with_behind_s": batches[0]["with_behind"],
        "parts": {k: statistics.median(b[k] for b in steady) for k in ("latest", "partitions", "commit", "behind")},
        f"{system}_calls": steady[-1][system], f"{system}_by": steady[-1][f"{system}_by"],
        "store_calls": steady[-1]["store"], "store_by": steady[-1]["store_by"],
        "first_store_calls": batches[0]["store"],
        "tasks": steady[-1]["tasks"], "offset_bytes": steady[-1]["offset_bytes"],
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One configuration, in this process: the figures as a dict."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from samza_devkit.store_wrappers import CountingStore
    from spark_samza_source.kafka.driver import admin as admin_module
    from spark_samza_source.kafka.options import KafkaSourceOptions
    from spark_samza_source.kafka.schema import kafka_schema
    from spark_samza_source.kafka.source import SamzaKafkaStreamReader
    from spark_samza_source.metadata import open_store

    topics = args.partitions // PARTITIONS_PER_TOPIC
    job = f"scale-{uuid.uuid4().hex[:8]}"
    uri = store_uri(args.store, Path(args.work), args.moto, args.bucket, job)
    options = KafkaSourceOptions.parse({
        "kafka.bootstrap.servers": args.bootstrap, "subscribe": ",".join(topic_name(t) for t in range(topics)),
        "job.name": job, "metadata.store": uri, "startingOffsets": "earliest",
        "grouper": "GroupByPartitionFixedTasks", "expansion.settleTime": "0",
    })
    reader = SamzaKafkaStreamReader(options, kafka_schema(False))
    coordinator = reader.coordinator
    store = CountingStore(open_store(uri, job))
    coordinator._store = store
    kafka_calls: Counter = Counter()
    admin = coordinator.admin
    client_of = admin._client
    admin._client = lambda use: CountingClient(client_of(use), kafka_calls)
    group_client_of = admin._group_client
    admin._group_client = lambda group: CountingClient(group_client_of(group), kafka_calls)
    # ListOffsets goes through the offset consumer, one lookup per call (admin._look_up_offsets): counted here
    look_up_offsets = admin_module._look_up_offsets

    def counted_look_up_offsets(*args: Any) -> Any:
        kafka_calls["list_offsets"] += 1
        return look_up_offsets(*args)

    admin_module._look_up_offsets = counted_look_up_offsets

    t = time.perf_counter()
    start = reader.initialOffset()
    coordinator.settle_writes()
    initial_s = time.perf_counter() - t
    batches = []
    for b in range(args.batches):
        produce_spread(args.bootstrap, topics, args.new_per_batch, seed=b)
        store.calls.clear()
        kafka_calls.clear()
        c0, t0 = time.process_time(), time.perf_counter()
        end = reader.latestOffset(start, ReadAllAvailable())
        t1 = time.perf_counter()
        parts = reader.partitions(start, end)
        t2 = time.perf_counter()
        reader.commit(end)
        t3 = time.perf_counter()
        coordinator.settle_writes()
        t4, c4 = time.perf_counter(), time.process_time()
        batches.append({"latest": t1 - t0, "partitions": t2 - t1, "commit": t3 - t2, "behind": t4 - t3,
                        "driver": t3 - t0, "with_behind": t4 - t0, "cpu": c4 - c0, "kafka": sum(kafka_calls.values()),
                        "kafka_by": dict(kafka_calls), "store": store.total(),
                        "store_by": {f"{op} {ns}": n for (op, ns), n in sorted(store.calls.items())},
                        "tasks": len(parts), "offset_bytes": len(json.dumps(end))})
        start = end
    return summarise(batches, "kafka", partitions=args.partitions, store=args.store, initial_s=initial_s)


def _emulated_reads(parts: list[Any], put: dict[str, str], executor_store: Any, stream: str) -> None:
    """Record, for every shard read of the batch, the end a task's read would have recorded: after the last record
    put into the shard since its start (``put``: shard -> sequence number), else where the read started. The tasks
    themselves are not run: what the driver does next depends only on these records."""
    from spark_samza_source.kinesis.microbatch_ends import batch_ends_for
    from spark_samza_source.kinesis.positions import ShardPosition

    for part in parts:
        for read in part.reads:
            ends = batch_ends_for(executor_store, stream, read.query_id)
            sequence = put.get(read.shard_id)
            end = ShardPosition.after_sequence(sequence) if sequence else read.start
            ends.record(read.batch, read.shard_id, end, task=part.task)


def put_one_per_shard(client: Any, stream: str, shards: list[dict[str, Any]]) -> dict[str, str]:
    """One small record into each of ``shards`` (by its starting hash key); shard id -> its sequence number."""
    sequences: dict[str, str] = {}
    for first in range(0, len(shards), 500):
        batch = shards[first:first + 500]
        answer = client.put_records(StreamName=stream, Records=[
            {"Data": b"k" * 50, "PartitionKey": "k", "ExplicitHashKey": s["HashKeyRange"]["StartingHashKey"]}
            for s in batch])
        for record in answer["Records"]:
            if "SequenceNumber" in record:
                sequences[record["ShardId"]] = record["SequenceNumber"]
    return sequences


def measure_kinesis(args: argparse.Namespace) -> dict[str, Any]:
    """One Kinesis configuration, in this process: a stream of ``args.shards`` open shards with lineage (its
    ``args.shards`` first shards, two split and two pairs merged), ``--batches`` batches."""
    import boto3
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from samza_devkit.store_wrappers import CountingStore
    from spark_samza_source.kinesis.options import KinesisSourceOptions
    from spark_samza_source.kinesis.schema import kinesis_schema
    from spark_samza_source.kinesis.source import SamzaKinesisStreamReader
    from spark_samza_source.metadata import open_store

    job = f"scale-{uuid.uuid4().hex[:8]}"
    stream = args.stream
    uri = store_uri(args.store, Path(args.work), args.moto, args.bucket, job)
    options = KinesisSourceOptions.parse({"streamName": stream, "endpointUrl": args.kinesis, "region": REGION,
                                          "job.name": job, "metadata.store": uri,
                                          "startingPosition": "TRIM_HORIZON"})
    reader = SamzaKinesisStreamReader(options, kinesis_schema())
    coordinator = reader.coordinator
    store = CountingStore(open_store(uri, job))
    coordinator._store = store
    kinesis_calls: Counter = Counter()
    coordinator.admin.client.meta.events.register(
        "before-call.kinesis", lambda model, **_: kinesis_calls.__setitem__(model.name, kinesis_calls[model.name] + 1))
    producer = boto3.client("kinesis", endpoint_url=args.kinesis, region_name=REGION)
    executor_store = open_store(uri, job)  # the tasks' own client: not the driver's calls

    t = time.perf_counter()
    start = reader.initialOffset()
    coordinator.settle_writes()
    initial_s = time.perf_counter() - t
    open_shards = [s for s in _all_shards(producer, stream) if "EndingSequenceNumber" not in
                   s.get("SequenceNumberRange", {})]
    batches = []
    for b in range(args.batches):
        chosen = open_shards if b == 0 else open_shards[b::10]
        put = put_one_per_shard(producer, stream, chosen)
        store.calls.clear()
        kinesis_calls.clear()
        c0, t0 = time.process_time(), time.perf_counter()
        end = reader.latestOffset(start, ReadAllAvailable())
        t1 = time.perf_counter()
        parts = reader.partitions(start, end)
        t2, c2 = time.perf_counter(), time.process_time()
        _emulated_reads(parts, put, executor_store, stream)
        c3, t3 = time.process_time(), time.perf_counter()
        reader.commit(end)
        t4 = time.perf_counter()
        coordinator.settle_writes()
        t5, c5 = time.perf_counter(), time.process_time()
        batches.append({"latest": t1 - t0, "partitions": t2 - t1, "commit": t4 - t3, "behind": t5 - t4,
                        "driver": (t2 - t0) + (t4 - t3), "with_behind": (t2 - t0) + (t5 - t3),
                        "cpu": (c2 - c0) + (c5 - c3),
                        "kinesis": sum(kinesis_calls.values()), "kinesis_by": dict(kinesis_calls),
                        "store": store.total(),
                        "store_by": {f"{op} {ns}": n for (op, ns), n in sorted(store.calls.items())},
                        "tasks": len(parts), "offset_bytes": len(json.dumps(end))})
        start = end
    return summarise(batches, "kinesis", shards=args.shards, store=args.store, initial_s=initial_s)


def _all_shards(client: Any, stream: str) -> list[dict[str, Any]]:
    shards, request = [], {"StreamName": stream}
    while True:
        page = client.list_shards(**request)
        shards.extend(page["Shards"])
        if not page.get("NextToken"):
            return shards
        request = {"NextToken": page["NextToken"]}


def create_stream_with_lineage(endpoint: str, shards: int) -> str:
    """A stream of ``shards`` shards, then two splits and two merges (closed parents and their children)."""
    import boto3

    client = boto3.client("kinesis", endpoint_url=endpoint, region_name=REGION)
    stream = f"scale-{shards}-{uuid.uuid4().hex[:6]}"
    client.create_stream(StreamName=stream, ShardCount=shards)
    _active(client, stream)
    listed = sorted(_all_shards(client, stream), key=lambda s: int(s["HashKeyRange"]["StartingHashKey"]))
    # merges first: the emulators count open shards against the account's limit (1,000), which the splits of a
    # 1,000-shard stream would pass before the merges gave two back
    for left, right in (listed[2:4], listed[4:6]):
        client.merge_shards(StreamName=stream, ShardToMerge=left["ShardId"], AdjacentShardToMerge=right["ShardId"])
        _active(client, stream)
    for shard in listed[:2]:
        low, high = int(shard["HashKeyRange"]["StartingHashKey"]), int(shard["HashKeyRange"]["EndingHashKey"])
        client.split_shard(StreamName=stream, ShardToSplit=shard["ShardId"], NewStartingHashKey=str((low + high) // 2))
        _active(client, stream)
    return stream


def delete_stream(endpoint: str, stream: str) -> None:
    """Give the stream's shards back to the account's limit before the next, larger one is created."""
    import boto3

    client = boto3.client("kinesis", endpoint_url=endpoint, region_name=REGION)
    client.delete_stream(StreamName=stream, EnforceConsumerDeletion=True)
    deadline = time.monotonic() + 300
    while stream in client.list_streams()["StreamNames"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"stream {stream} still listed 300 s after its deletion")
        time.sleep(0.2)


def _active(client: Any, stream: str) -> None:
    deadline = time.monotonic() + 300
    while client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
        if time.monotonic() > deadline:
            raise RuntimeError(f"stream {stream} not ACTIVE after 300 s")
        time.sleep(0.2)


# ---- the orchestrating process -----------------------------------------------------------------------------------

def create_topics(bootstrap: str, records: int) -> float:
    """100 topics x 100 partitions, ``records`` records in each partition, and the group coordinator serving; the
    seconds it took. On a busy 2-core machine the broker creates the partitions' logs minutes after the controller
    accepted the topics (some tens per second), so the records are written until every one is acknowledged, and
    the group coordinator (``__consumer_offsets``, queued behind them) is asked until it answers."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    t = time.perf_counter()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for first in range(0, TOPICS, 10):  # ten topics per request: the controller creates 1,000 partitions at once
        futures = admin.create_topics([NewTopic(topic_name(i), PARTITIONS_PER_TOPIC, 1)
                                       for i in range(first, first + 10)], request_timeout=300)
        for future in futures.values():
            future.result(300)
    pending = [(topic_name(t), p) for t in range(TOPICS) for p in range(PARTITIONS_PER_TOPIC)]
    deadline = time.monotonic() + 1800
    while pending:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} partitions still refuse records after 30 minutes")
        failed: list[tuple[str, int]] = []

        def report(err: Any, msg: Any, failed: list[tuple[str, int]] = failed) -> None:
            if err is not None:
                failed.append((msg.topic(), msg.partition()))

        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": "true", "linger.ms": "50",
                             "message.timeout.ms": "120000"})
        for topic, partition in pending:
            for _ in range(records):
                producer.produce(topic, value=b"r" * 50, partition=partition, on_delivery=report)
            producer.poll(0)
        producer.flush(300)
        pending = sorted(set(failed))
    _wait_for_group_coordinator(admin, deadline)
    return time.perf_counter() - t


def _wait_for_group_coordinator(admin: Any, deadline: float) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

    while True:
        try:
            request = ConsumerGroupTopicPartitions("scale-probe", [TopicPartition(topic_name(0), 0, 0)])
            admin.alter_consumer_group_offsets([request], request_timeout=30)["scale-probe"].result(60)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise


def run_child(args: argparse.Namespace, what: list[str], store: str, moto: str, bucket: str,
              work: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", *what, "--stores", store, "--moto", moto, "--bucket", bucket,
               "--work", str(work), "--batches", str(args.batches), "--new-per-batch", str(args.new_per_batch)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, env={**os.environ, **DUMMY_AWS})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(what)} on {store} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def show(res: dict[str, Any]) -> None:
    parts = res["parts"]
    say(f"  {res['partitions']:>6,} partitions  {res['store']:<8} driver {res['driver_s']:.3f} s "
        f"(latestOffset {parts['latest']:.3f}, partitions {parts['partitions']:.3f}, commit {parts['commit']:.3f}; "
        f"writes behind {parts['behind']:.3f}; driver CPU with writes behind {res['cpu_s']:.3f} s) "
        f"| first batch with writes behind {res['first_with_behind_s']:.3f} s | "
        f"initialOffset {res['initial_s']:.3f} s | calls per batch: Kafka {res['kafka_calls']} {res['kafka_by']}, "
        f"store {res['store_calls']} (first batch {res['first_store_calls']}) {res['store_by']} | tasks "
        f"{res['tasks']} | offset JSON {res['offset_bytes']:,} B | peak RSS {res['rss_mb']:.0f} MB")


def kafka_runs(args: argparse.Namespace, stack: contextlib.ExitStack, moto: str, bucket: str,
               work: Path) -> list[dict[str, Any]]:
    from samza_devkit.apache_kafka import ApacheKafkaBroker

    bootstrap = args.broker
    if bootstrap is None:
        bootstrap = stack.enter_context(ApacheKafkaBroker(heap_mb=1536, config=BROKER_CONFIG)).bootstrap_servers
        say(f"  created {TOPICS * PARTITIONS_PER_TOPIC:,} partitions and their records in "
            f"{create_topics(bootstrap, args.records):.1f} s; {load()}")
    results = []
    for partitions in args.partitions:
        for store in args.stores:
            res = run_child(args, ["--partitions", str(partitions), "--bootstrap", bootstrap], store, moto, bucket,
                            work)
            show(res)
            results.append(res)
    return results


def kinesis_runs(args: argparse.Namespace, stack: contextlib.ExitStack, moto: str, bucket: str,
                 work: Path) -> list[dict[str, Any]]:
    from samza_devkit.kinesalite import KinesaliteProcess

    endpoint = stack.enter_context(KinesaliteProcess())
    results = []
    for shards in args.shards:
        t = time.perf_counter()
        stream = create_stream_with_lineage(endpoint, shards)
        say(f"  kinesalite: stream of {shards:,} shards, 2 split and 2 pairs merged, in "
            f"{time.perf_counter() - t:.1f} s")
        for store in args.stores:
            res = run_child(args, ["--shards", str(shards), "--kinesis", endpoint, "--stream", stream], store, moto,
                            bucket, work)
            show_kinesis(res)
            results.append(res)
        delete_stream(endpoint, stream)
    return results


def show_kinesis(res: dict[str, Any]) -> None:
    parts = res["parts"]
    say(f"  {res['shards']:>6,} shards  {res['store']:<8} driver {res['driver_s']:.3f} s "
        f"(latestOffset {parts['latest']:.3f}, partitions {parts['partitions']:.3f}, commit {parts['commit']:.3f}; "
        f"writes behind {parts['behind']:.3f}; driver CPU with writes behind {res['cpu_s']:.3f} s) "
        f"| first batch with writes behind {res['first_with_behind_s']:.3f} s | "
        f"initialOffset {res['initial_s']:.3f} s | calls per batch: Kinesis {res['kinesis_calls']} "
        f"{res['kinesis_by']}, store {res['store_calls']} (first batch {res['first_store_calls']}) {res['store_by']} "
        f"| tasks {res['tasks']} | offset JSON {res['offset_bytes']:,} B | peak RSS {res['rss_mb']:.0f} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, nargs="*", default=[1_000, 10_000])
    parser.add_argument("--shards", type=int, nargs="*", default=[100, 1_000])
    parser.add_argument("--systems", nargs="*", default=["kafka", "kinesis"], choices=["kafka", "kinesis"])
    parser.add_argument("--stores", nargs="*", default=list(STORES), choices=STORES)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--records", type=int, default=3, help="records per partition before the first batch")
    parser.add_argument("--new-per-batch", type=int, default=500)
    parser.add_argument("--broker", help="a running broker that already holds the topics (scale-000..099, as this "
                        "script creates them): skips the broker's start and the topics' creation")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--moto", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--bucket", help=argparse.SUPPRESS)
    parser.add_argument("--kinesis", help=argparse.SUPPRESS)
    parser.add_argument("--stream", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.partitions, args.shards, args.store = args.partitions[0], args.shards[0], args.stores[0]
        print(json.dumps(measure_kinesis(args) if args.stream else measure(args)))
        return 0

    from samza_devkit.moto_server import MotoServerProcess
    from samza_devkit.s3_fixtures import make_s3_bucket

    os.environ.update(DUMMY_AWS)
    say(f"per-batch driver work at scale ({', '.join(args.systems)}): Kafka {TOPICS} topics x "
        f"{PARTITIONS_PER_TOPIC} partitions, {args.records} records each, {args.new_per_batch} new records per batch; "
        f"Kinesis one record per open shard, then one in every tenth; {args.batches} batches; {load()}")
    results = []
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-scale-")))
        moto = stack.enter_context(MotoServerProcess())
        bucket = make_s3_bucket(moto, REGION)
        if "kafka" in args.systems:
            results += kafka_runs(args, stack, moto, bucket, work)
        if "kinesis" in args.systems:
            results += kinesis_runs(args, stack, moto, bucket, work)
    say(f"done; {load()}")
    failed = [r for r in results if r.get("partitions", 0) >= 10_000 and (r["driver_s"] >= TARGET_S
                                                                    or r["rss_mb"] >= TARGET_RSS_MB)]
    for r in failed:
        say(f"  MISSED: {r['partitions']:,} partitions on {r['store']}: {r['driver_s']:.3f} s, {r['rss_mb']:.0f} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
