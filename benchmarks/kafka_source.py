"""End-to-end figures of the ``samza-kafka`` source against the targets of the performance issue.

    .venv/bin/python benchmarks/kafka_source.py [--records 3000000] [--rows-per-batch 200000,1000000] [--skip-mock]
        [--skip-raw] [--only native|spark|planning|grouping|memory|latency] [--repeat 2] [--batches 5]
        [--source-option KEY=VALUE] [--latency-rate 2000] [--latency-seconds 45] [--latency-warmup 15]
        [--memory-shapes 1000000x1024,10000x102400] [--memory-kafka-conf KEY=VALUE] [--profile]

Six parts (all by default, or one with ``--only``), then a summary table (figure, target, MET/MISSED):

0. ``native``: the native anchor (``kafka_native.py``): kcat, a bare confluent-kafka loop and ``read_ranges``
   read the same single-partition topic (``--records``, at most 1,000,000, x 100 B) of the development broker,
   alternately ``--repeat`` times.  Targets: ``read_ranges`` wall rate >= 0.6x kcat's, CPU per record <= 2x
   kcat's.  Skipped with a message when kcat is not installed (``apt-get install kcat``).

1. ``spark``: ``--records`` records of 100 B over 4 partitions, read by a Spark query (``samza-kafka`` source,
   ``noop`` sink, ``local[2]``, ``Trigger.AvailableNow``) at each ``--rows-per-batch`` (``maxOffsetsPerTrigger``),
   and beside each run the floor: the same pipeline and batch sizes over ``floor_source.FloorSource``, a Python
   source that does no I/O and re-yields prebuilt Arrow batches, so its cost is Spark's alone (no Python source
   can make this query faster).  kcat reads the whole topic right after every run (the native anchor of that
   moment).  Steady state = rows of batches 1..n divided by the wall time from the end of batch 0 to the end of
   batch n (end = progress ``timestamp`` + ``durationMs.triggerExecution``), so session start, Python worker
   start and the first consumer connections are excluded.  Targets (same run): samza-kafka / floor >= 0.95 at
   200,000 rows per batch, >= 0.75 at 1,000,000.  Also (``--skip-raw`` leaves it out): 2 processes (=
   ``local[2]``), each reading 2 of the 4 partitions with ``read_ranges``, timed after a warm-up read; target
   samza-kafka / raw >= 0.7.  Then librdkafka's mock cluster (``RdkafkaMockCluster``; ``--skip-mock``), which
   keeps only ~5 MB per partition: the largest record count it retains in full, ``--batches`` batches.
2. ``planning``: one warm ``latestOffset`` + ``partitions`` of ``SamzaKafkaStreamReader`` (no Spark) over a
   1,000-partition topic of the development broker (10 records per partition).  Target < 1 s.  Also printed,
   without target: the offset JSON size and one ``commit`` (Spark calls it at every batch, in ``walCommit``).
3. ``grouping``: ``GroupByPartitionFixedTasks`` over 100,000 SSPs: first model, expansion 50,000 -> 100,000,
   and the unchanged regroup every trigger does.  Target < 2 s.
4. ``memory``: peak RSS (``ru_maxrss``) of a fresh child process that reads ~1 GB (1,000,000 x 1 KiB, then
   10,000 x 100 KiB) from the development broker with ``read_ranges`` (one task holding all 4 partitions),
   dropping every batch.  Target < 512 MB.
5. ``latency``: ``--latency-rate`` (2,000) records/s of 100 B to 4 partitions from a spawned producer, read by a
   samza-kafka query with the default trigger and a ``foreachBatch`` collecting rows; latency = collection time -
   CreateTime (``latency.py``, shared with ``kinesis_source.py``).  p50, p99 and ms per batch by phase, beside the
   floor (``floor_source.RateFloorSource``: rows timestamped when they were due, no I/O) under the same producer
   load.  Targets: p50 <= 1.3x the floor's, p99 <= 1.6x.

The machines are small (2 cores) and shared: every part prints the load average it started under.  cProfile
output is printed for a missed planning or grouping target (always with ``--profile``).  Exit status 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench_report import (
    RESULTS,
    cpu_seconds,
    iso_ts,
    load,
    print_batches,
    print_summary,
    profile_text,
    progress_dicts,
    record,
    say,
)
from kafka_native import KCAT, kcat_missing_reason, measure_single_partition, run_kcat
from latency import compare_with_floor, floor_latency, local_session, measure_latency, steady_production

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # broker_throughput (RdkafkaMockCluster)

PARTITIONS = 4
VALUE_SIZE = 100
SPARK_TARGET = 0.7
PLANNING_PARTITIONS = 1_000
PLANNING_TARGET_S = 1.0
GROUPING_SSPS = 100_000
GROUPING_TARGET_S = 2.0
MEMORY_TARGET_MB = 512
# Against the native anchor (kcat, same broker and topic, same run): benchmarks/kafka_native.py
NATIVE_WALL_TARGET = 0.6  # read_ranges single-partition wall rate / kcat's
NATIVE_CPU_TARGET = 2.0  # read_ranges CPU per record / kcat's
NATIVE_RECORDS = 1_000_000  # at most, on one partition
# samza-kafka steady state / the floor's (same pipeline, batch size and run), by rows per batch
FLOOR_TARGETS = {200_000: 0.95, 1_000_000: 0.75}
LATENCY_RATE = 2_000  # records per second of the latency part
LATENCY_P50_TARGET = 1.3  # samza-kafka p50 / the floor's, same run
LATENCY_P99_TARGET = 1.6

# ---- Kafka helpers ---------------------------------------------------------------------------------------------

def produce(bootstrap: str, topic: str, partitions: int, count: int, size: int) -> float:
    """``count`` records (null key, ``size``-byte value) round robin over ``partitions``; returns seconds."""
    from confluent_kafka import Producer

    producer = Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 900_000, "batch.num.messages": 10_000,
        "acks": 1, "enable.idempotence": False, "queue.buffering.max.messages": 500_000,
        "queue.buffering.max.kbytes": 512 * 1024,
    })
    errors: list = []

    def on_delivery(err, _msg):
        if err is not None:
            errors.append(err)

    value = os.urandom(size)
    started = time.monotonic()
    send = producer.produce
    for i in range(count):
        while True:
            try:
                send(topic, value=value, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 20_000 == 0:
            producer.poll(0)
    if producer.flush(600) or errors:
        raise RuntimeError(f"produce to {topic} failed: {errors[:3]}")
    return time.monotonic() - started


def watermarks(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
                for p in range(partitions)]
    finally:
        consumer.close()


def full_ranges(bootstrap: str, topic: str, partitions: int, expected: int):
    """The ranges [low, high) of every partition; fails unless the log holds exactly ``expected`` records."""
    from spark_samza_source.kafka.input_partition import KafkaRange

    marks = watermarks(bootstrap, topic, partitions)
    held = sum(high - low for low, high in marks)
    if held != expected or any(low != 0 for low, _ in marks):
        raise RuntimeError(f"{topic}: watermarks {marks} hold {held:,} records, expected {expected:,} from offset 0")
    return [KafkaRange(topic, p, low, high) for p, (low, high) in enumerate(marks)]


# ---- part 1: Spark query vs raw read_ranges loop ---------------------------------------------------------------

def _raw_worker(bootstrap: str, ranges, barrier, results) -> None:
    """One of the 2 baseline processes: warm up, wait for the other, then read each range as one task."""
    from spark_samza_source.kafka.executor.reader import read_ranges
    from spark_samza_source.kafka.input_partition import KafkaRange
    conf = {"bootstrap.servers": bootstrap}
    first = ranges[0]
    warm = KafkaRange(first.topic, first.partition, first.start, min(first.end, first.start + 1_000))
    for _ in read_ranges(conf, "warm-up", [warm], include_headers=False, fail_on_data_loss=True):
        pass
    barrier.wait()
    started, cpu = time.monotonic(), cpu_seconds()
    rows = 0
    for rng in ranges:
        for batch in read_ranges(conf, f"Partition {rng.partition}", [rng], include_headers=False,
                                 fail_on_data_loss=True):
            rows += batch.num_rows
    results.put((started, time.monotonic(), rows, cpu_seconds() - cpu))


def raw_baseline(bootstrap: str, ranges, processes: int = 2) -> dict:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(processes + 1)
    results = ctx.Queue()
    shares = [ranges[i::processes] for i in range(processes)]
    procs = [ctx.Process(target=_raw_worker, args=(bootstrap, share, barrier, results)) for share in shares]
    for proc in procs:
        proc.start()
    barrier.wait(timeout=300)
    got = [results.get(timeout=900) for _ in procs]
    for proc in procs:
        proc.join(60)
    start = min(g[0] for g in got)
    end = max(g[1] for g in got)
    rows = sum(g[2] for g in got)
    expected = sum(r.size for r in ranges)
    if rows != expected:
        raise RuntimeError(f"raw baseline read {rows:,} rows, expected {expected:,}")
    return {"rows": rows, "seconds": end - start, "rate": rows / (end - start), "cpu": sum(g[3] for g in got),
            "shares": [[r.partition for r in share] for share in shares]}






def spark_query(spark, bootstrap: str, topic: str, records: int, per_trigger: int, work: Path,
                options: dict[str, str]) -> dict:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    query = (
        spark.readStream.format("samza-kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("job.name", name)
        .option("metadata.store", f"file://{work / name / 'metadata'}")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_trigger))
        .options(**options)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(work / name / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(1800):
        query.stop()
        raise RuntimeError("the Spark query did not finish within 30 minutes")
    res = steady_state(progress_dicts(query), records)
    res["total_s"] = time.monotonic() - started
    return res


def steady_state(events: list[dict], records: int) -> dict:
    """Rows of batches 1..n over the wall time from the end of batch 0 to the end of batch n (end = progress
    ``timestamp`` + ``durationMs.triggerExecution``): session start and the first connections are excluded."""
    progress = [p for p in events if p.get("numInputRows", 0) > 0]
    rows = sum(p["numInputRows"] for p in progress)
    if rows != records:
        raise RuntimeError(f"the query read {rows:,} rows, expected {records:,}")
    if len(progress) < 2:
        raise RuntimeError("need at least 2 batches to exclude the first: fewer rows per batch or more records")
    ends = [iso_ts(p["timestamp"]) + p["durationMs"]["triggerExecution"] / 1000 for p in progress]
    steady_rows = sum(p["numInputRows"] for p in progress[1:])
    steady_s = ends[-1] - ends[0]
    return {"progress": progress, "steady_rows": steady_rows, "steady_s": steady_s, "rate": steady_rows / steady_s,
            "ms_per_batch": 1000 * steady_s / (len(progress) - 1)}


def spark_floor(spark, records: int, per_batch: int, work: Path) -> dict:
    """The same pipeline and batch sizes over ``floor_source.FloorSource`` (no I/O, prebuilt rows): Spark's own
    cost per batch, an upper bound for any Python source."""
    from floor_source import FloorSource

    spark.dataSource.register(FloorSource)
    batches = math.ceil(records / per_batch)
    name = f"floor-{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format(FloorSource.name()).option("rowsPerTask", str(per_batch // PARTITIONS))
             .option("tasks", str(PARTITIONS)).option("batches", str(batches)).load()
             .writeStream.format("noop").option("checkpointLocation", str(work / name))
             .trigger(availableNow=True).start())
    if not query.awaitTermination(900):
        query.stop()
        raise RuntimeError("the floor query did not finish within 15 minutes")
    return steady_state(progress_dicts(query), batches * (per_batch // PARTITIONS) * PARTITIONS)


def kcat_beside(bootstrap: str, topic: str, records: int, what: dict) -> dict:
    """kcat reads the whole topic right after a Spark run: the native anchor of that moment."""
    anchor = run_kcat(bootstrap, topic, records)
    say(f"      kcat, same topic, right after: {anchor['rate']:>10,.0f} rec/s ({anchor['seconds']:.2f} s wall, "
        f"{anchor['cpu']:.2f} CPU-s); this run / kcat {what['rate'] / anchor['rate']:.2f}; {load()}")
    what["kcat"] = anchor
    return anchor


def _say_steady(label: str, res: dict) -> None:
    print_batches(res["progress"])
    say(f"    {label} steady state: {res['rate']:>10,.0f} rec/s, {res['ms_per_batch']:,.0f} ms per batch "
        f"({res['steady_rows']:,} rows of batches 1..n in {res['steady_s']:.2f} s); {load()}")


def spark_and_floor(ctx: dict, per_batch: int, run: str) -> tuple[dict, dict | None]:
    """One samza-kafka query and one floor query at ``per_batch`` rows per batch, kcat after each."""
    label, spark, args = ctx["label"], ctx["spark"], ctx["args"]
    bootstrap, topic, records, work = ctx["bootstrap"], ctx["topic"], ctx["records"], ctx["work"]
    say(f"  [{label}] {run}: samza-kafka, local[2], noop sink, AvailableNow, maxOffsetsPerTrigger {per_batch:,}"
        f"{', options ' + str(ctx['options']) if ctx['options'] else ''}; {load()}")
    res = spark_query(spark, bootstrap, topic, records, per_batch, work, ctx["options"])
    _say_steady("samza-kafka", res)
    if ctx["native"]:
        kcat_beside(bootstrap, topic, records, res)
    if args.skip_floor:
        return res, None
    say(f"  [{label}] {run}: floor, same pipeline and batch sizes over a Python source that does no I/O (prebuilt "
        f"Arrow batches); {load()}")
    floor = spark_floor(spark, records, per_batch, work)
    _say_steady("floor", floor)
    if ctx["native"]:
        kcat_beside(bootstrap, topic, records, floor)
    say(f"    this run: samza-kafka / floor {res['rate'] / floor['rate']:.2f} ({res['ms_per_batch']:,.0f} against "
        f"{floor['ms_per_batch']:,.0f} ms per batch)")
    return res, floor


def report_batch_size(label: str, per_batch: int, pairs: list[tuple[dict, dict | None]]) -> None:
    """Best of the runs at one batch size, and the ratios to the floor and kcat of each run."""
    runs = [r for r, _ in pairs]
    best = max(runs, key=lambda r: r["rate"])
    what = f"{label}, {per_batch:,} rows per batch"
    record(f"{what}: samza-kafka", f"{best['rate']:,.0f} rec/s", "-", None)
    if all("kcat" in r for r in runs):
        per_run = [r["rate"] / r["kcat"]["rate"] for r in runs]
        say(f"  [{what}] samza-kafka / kcat per run: " + ", ".join(f"{x:.2f}" for x in per_run))
        record(f"{what}: samza-kafka / kcat (best run)", f"{max(per_run):.2f}", "-", None)
    floors = [f for _, f in pairs if f is not None]
    if not floors:
        return
    ratios = [r["rate"] / f["rate"] for r, f in pairs]
    floor = max(floors, key=lambda f: f["rate"])
    say(f"  [{what}] samza-kafka / floor per run (same run): " + ", ".join(f"{x:.2f}" for x in ratios)
        + f"; best floor {floor['rate']:,.0f} rec/s ({floor['ms_per_batch']:,.0f} ms per batch)")
    record(f"{what}: floor (no-I/O source)", f"{floor['rate']:,.0f} rec/s", "-", None)
    if all("kcat" in f for f in floors):
        record(f"{what}: floor / kcat (best run)", f"{max(f['rate'] / f['kcat']['rate'] for f in floors):.2f}", "-",
               None)
    target = FLOOR_TARGETS.get(per_batch)
    record(f"{what}: samza-kafka / floor (best run)", f"{max(ratios):.2f}", "-" if target is None else f">= {target}",
           None if target is None else max(ratios) >= target)


def raw_run(label: str, bootstrap: str, ranges, run: str) -> dict:
    say(f"  [{label}] {run}: raw baseline, 2 spawned processes, read_ranges one partition at a time; {load()}")
    raw = raw_baseline(bootstrap, ranges)
    say(f"    raw read_ranges x2: {raw['rate']:>10,.0f} rec/s ({raw['rows']:,} rows in {raw['seconds']:.2f} s "
        f"wall, {raw['cpu']:.1f} CPU-s; partitions per process {raw['shares']})")
    return raw


def measure_broker(label: str, spark, bootstrap: str, topic: str, records: int, batch_sizes: list[int], args,
                   work: Path) -> None:
    """At each batch size, ``--repeat`` times: samza-kafka, then the floor (kcat right after each); the raw
    read_ranges loop once per repeat unless ``--skip-raw``."""
    native = label == "dev broker" and KCAT is not None  # kcat on the mock cluster would measure the mock
    if label == "dev broker" and KCAT is None:
        say(f"  {kcat_missing_reason()}")
    ctx = {"label": label, "spark": spark, "args": args, "bootstrap": bootstrap, "topic": topic, "records": records,
           "work": work, "native": native, "options": dict(kv.split("=", 1) for kv in args.source_option)}
    pairs: dict[int, list] = {size: [] for size in batch_sizes}
    raws = []
    for i in range(args.repeat):
        run = f"run {i + 1}/{args.repeat}"
        if not args.skip_raw:
            raws.append(raw_run(label, bootstrap, full_ranges(bootstrap, topic, PARTITIONS, records), run))
        for size in batch_sizes:
            pairs[size].append(spark_and_floor(ctx, size, run))
    for size in batch_sizes:
        report_batch_size(label, size, pairs[size])
    if raws:
        raw = max(raws, key=lambda r: r["rate"])
        best = max((r for size in batch_sizes for r, _ in pairs[size]), key=lambda r: r["rate"])
        ratio = best["rate"] / raw["rate"]
        record(f"{label}: raw read_ranges x2, {records:,} rec", f"{raw['rate']:,.0f} rec/s", "-", None)
        record(f"{label}: samza-kafka (best batch size) / raw", f"{ratio:.2f}", f">= {SPARK_TARGET}",
               ratio >= SPARK_TARGET)


def mock_retained_count(mock, wanted: int) -> int:
    """The largest record count (multiple of 4,000) the mock keeps in full: overflow a probe topic, read what it
    retained, then check a fresh topic of that size keeps everything (low = 0); shrink by 5% until it does."""
    bootstrap = mock.bootstrap_servers
    probe = f"bench-probe-{uuid.uuid4().hex[:8]}"
    mock.create_topic(probe, PARTITIONS)
    per_partition = 2 * 5 * 1024 * 1024 // VALUE_SIZE  # twice the ~5 MB it keeps: surely overflows
    produce(bootstrap, probe, PARTITIONS, per_partition * PARTITIONS, VALUE_SIZE)
    marks = watermarks(bootstrap, probe, PARTITIONS)
    kept = min(high - low for low, high in marks)
    say(f"    mock probe: {per_partition * PARTITIONS:,} records produced, watermarks {marks} "
        f"-> at most {kept:,} retained per partition")
    return min(wanted, kept * PARTITIONS // 4_000 * 4_000)


def mock_topic(mock, records: int) -> tuple[str, int]:
    """A fresh mock-cluster topic holding as many records as the mock retains in full (at most ``records``)."""
    bootstrap = mock.bootstrap_servers
    count = mock_retained_count(mock, records)
    for _attempt in range(5):
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        mock.create_topic(topic, PARTITIONS)
        produce(bootstrap, topic, PARTITIONS, count, VALUE_SIZE)
        marks = watermarks(bootstrap, topic, PARTITIONS)
        if all(low == 0 for low, _ in marks) and sum(h for _, h in marks) == count:
            say(f"  [mock] {bootstrap}: librdkafka's mock cluster retains only ~5 MB per partition, so this run uses "
                f"{count:,} records (not {records:,}): the largest count seen fully retained; watermarks {marks}")
            return topic, count
        say(f"    {count:,} not fully retained (watermarks {marks}); trying 5% fewer")
        count = int(count * 0.95) // 4_000 * 4_000
    raise RuntimeError("could not find a record count the mock cluster retains in full")


def part_spark(args, work: Path) -> None:
    sizes = [int(s.replace("_", "")) for s in args.rows_per_batch.split(",")]
    say(f"== 1. Spark query against the floor and kcat ({PARTITIONS} partitions, {VALUE_SIZE} B values, "
        f"{args.records:,} records, rows per batch {', '.join(f'{s:,}' for s in sizes)}); {load()}")
    if args.records < 2 * max(sizes):
        raise SystemExit(f"--records ({args.records:,}) must be at least twice the largest --rows-per-batch: the "
                         "first batch is excluded")
    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic

    spark = local_session("samza-kafka-benchmark")
    try:
        with KafkaDevBroker() as broker:
            bootstrap = broker.bootstrap_servers
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, PARTITIONS)
            secs = produce(bootstrap, topic, PARTITIONS, args.records, VALUE_SIZE)
            say(f"  [dev broker] {bootstrap}: produced {args.records:,} x {VALUE_SIZE} B in {secs:.1f} s")
            measure_broker("dev broker", spark, bootstrap, topic, args.records, sizes, args, work)
        if not args.skip_mock:
            from broker_throughput import RdkafkaMockCluster

            with RdkafkaMockCluster() as mock:
                topic, count = mock_topic(mock, args.records)
                measure_broker(f"mock ({count:,} rec)", spark, mock.bootstrap_servers, topic, count,
                               [math.ceil(count / args.batches)], args, work)
    finally:
        spark.stop()


# ---- part 0: read_ranges against kcat on one partition ----------------------------------------------------------

def part_native(args, work: Path) -> None:
    """kcat, a bare consume loop and read_ranges over one partition of the development broker, same topic, same
    run (kafka_native.py); ratios of wall rate and CPU per record against kcat."""
    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic

    count = min(args.records, NATIVE_RECORDS)
    say(f"== 0. read_ranges vs kcat (native librdkafka) on 1 partition, {count:,} x {VALUE_SIZE} B; {load()}")
    if KCAT is None:
        say(f"  {kcat_missing_reason()}")
        return
    conf = dict(kv.split("=", 1) for kv in args.memory_kafka_conf)
    with KafkaDevBroker() as broker:
        bootstrap = broker.bootstrap_servers
        topic = f"bench-native-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, 1)
        secs = produce(bootstrap, topic, 1, count, VALUE_SIZE)
        say(f"  [dev broker] {bootstrap}: produced {count:,} x {VALUE_SIZE} B to 1 partition in {secs:.1f} s")
        best = measure_single_partition(bootstrap, topic, count, args.repeat, conf)
    kcat, reader = best["kcat"], best["read_ranges"]
    wall = reader["rate"] / kcat["rate"]
    cpu = (reader["cpu"] / reader["rows"]) / (kcat["cpu"] / kcat["rows"])
    record("native: kcat, 1 partition", f"{kcat['rate']:,.0f} rec/s, {1e6 * kcat['cpu'] / kcat['rows']:.2f} "
           "CPU-s/M", "-", None)
    record("native: read_ranges, 1 partition", f"{reader['rate']:,.0f} rec/s, "
           f"{1e6 * reader['cpu'] / reader['rows']:.2f} CPU-s/M", "-", None)
    record("native: read_ranges / kcat wall rate (best of each)", f"{wall:.2f}", f">= {NATIVE_WALL_TARGET}",
           wall >= NATIVE_WALL_TARGET)
    record("native: read_ranges / kcat CPU per record (best of each)", f"{cpu:.2f}", f"<= {NATIVE_CPU_TARGET}",
           cpu <= NATIVE_CPU_TARGET)


# ---- part 2: planning ------------------------------------------------------------------------------------------

def part_planning(args, work: Path) -> None:
    say(f"== 2. planning: latestOffset + partitions over {PLANNING_PARTITIONS:,} partitions (no Spark); {load()}")
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic
    from spark_samza_source.kafka.options import KafkaSourceOptions
    from spark_samza_source.kafka.schema import kafka_schema
    from spark_samza_source.kafka.source import SamzaKafkaStreamReader

    with KafkaDevBroker() as broker:
        bootstrap = broker.bootstrap_servers
        topic = f"bench-wide-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, PLANNING_PARTITIONS)
        produce(bootstrap, topic, PLANNING_PARTITIONS, 10 * PLANNING_PARTITIONS, VALUE_SIZE)
        options = KafkaSourceOptions.parse({
            "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": "bench-planning",
            "metadata.store": f"file://{work / 'planning-metadata'}", "startingOffsets": "earliest",
        })
        reader = SamzaKafkaStreamReader(options, kafka_schema(False))

        t = time.perf_counter()
        start = reader.initialOffset()
        say(f"  initialOffset (opens the admin client, first job model): {time.perf_counter() - t:.3f} s")

        def plan():
            end = reader.latestOffset(start, ReadAllAvailable())
            return end, reader.partitions(start, end)

        t = time.perf_counter()
        end, parts = plan()
        say(f"  first latestOffset + partitions: {time.perf_counter() - t:.3f} s -> {len(parts):,} input partitions, "
            f"{sum(len(p.reads) for p in parts):,} ranges")
        timings = []
        for _ in range(args.planning_repeat):
            t0 = time.perf_counter()
            end_i = reader.latestOffset(start, ReadAllAvailable())
            t1 = time.perf_counter()
            reader.partitions(start, end_i)
            t2 = time.perf_counter()
            timings.append((t2 - t0, t1 - t0, t2 - t1))
        total = statistics.median(t[0] for t in timings)
        latest_s, parts_s = statistics.median(t[1] for t in timings), statistics.median(t[2] for t in timings)
        say(f"  warm latestOffset + partitions, {len(timings)} calls: median {total:.3f} s (medians of the parts: "
            f"latestOffset {latest_s:.3f} s, partitions {parts_s:.3f} s), min {min(t[0] for t in timings):.3f} s, "
            f"max {max(t[0] for t in timings):.3f} s")
        split_s = _split_cost(options, start, args.planning_repeat)
        size = len(json.dumps(end))
        say(f"  offset JSON (json.dumps of latestOffset's dict, as Spark's offset log stores it): {size:,} bytes "
            f"({size / PLANNING_PARTITIONS:.0f} B per partition)")
        met = total < PLANNING_TARGET_S
        if args.profile or not met:
            say("  cProfile of one warm latestOffset + partitions (cumulative):")
            say(profile_text(plan))
        # Not a target: Spark calls commit(previous end) at every batch, inside its walCommit phase.
        reader.commit(end)
        commits = []
        for _ in range(3):
            t = time.perf_counter()
            reader.commit(end)
            commits.append(time.perf_counter() - t)
        commit_s = statistics.median(commits)
        say(f"  warm commit (checkpoint mirror to {options.metadata_store.split(':')[0]}:// + consumer group "
            f"'{options.group_id}'), median of 3: {commit_s:.3f} s")
        if args.profile:
            say("  cProfile of one warm commit (internal time):")
            say(profile_text(lambda: reader.commit(end), sort="tottime"))
        # the commits' mirrors are written behind: wait for them, or the work directory is removed under them
        reader.coordinator.settle_writes()
    record(f"planning latestOffset+partitions, {PLANNING_PARTITIONS:,} partitions", f"{total:.3f} s",
           f"< {PLANNING_TARGET_S:g} s", met)
    record(f"partitions() with minPartitions={2 * PLANNING_PARTITIONS:,}, {PLANNING_PARTITIONS:,} partitions",
           f"{split_s:.3f} s", "-", None)
    record("offset JSON size (1,000 partitions)", f"{size / 1024:.1f} KiB", "-", None)
    record("commit, 1,000 partitions (every batch)", f"{commit_s:.3f} s", "-", None)


def _split_cost(options, start, repeat: int) -> float:
    """``partitions()`` of the same topic read with ``minPartitions`` (twice the partitions: every task spread as
    far as it goes), and the pure split at its worst (2 tasks of 500 ranges each into 1,000 input partitions)."""
    import dataclasses

    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from spark_samza_source.core.model import TaskName
    from spark_samza_source.kafka.driver.input_splits import spread_tasks
    from spark_samza_source.kafka.input_partition import KafkaRange
    from spark_samza_source.kafka.schema import kafka_schema
    from spark_samza_source.kafka.source import SamzaKafkaStreamReader

    wide = dataclasses.replace(options, min_partitions=2 * PLANNING_PARTITIONS)
    reader = SamzaKafkaStreamReader(wide, kafka_schema(False))
    end = reader.latestOffset(start, ReadAllAvailable())
    timings = []
    for _ in range(repeat):
        t = time.perf_counter()
        parts = reader.partitions(start, end)
        timings.append(time.perf_counter() - t)
    parts_s = statistics.median(timings)
    say(f"  partitions() with minPartitions={wide.min_partitions:,}, median of {repeat}: {parts_s:.3f} s -> "
        f"{len(parts):,} input partitions")
    half = PLANNING_PARTITIONS // 2
    plan = [(TaskName(f"Partition {t}"), [KafkaRange("bench", t + 2 * p, 0, 10 + p % 7) for p in range(half)])
            for t in range(2)]
    t = time.perf_counter()
    split = spread_tasks(plan, PLANNING_PARTITIONS)
    say(f"  the split alone, 2 tasks x {half} ranges into {len(split):,} input partitions: "
        f"{time.perf_counter() - t:.4f} s")
    return parts_s


# ---- part 3: grouping ------------------------------------------------------------------------------------------

def _time(fn, repeat: int) -> tuple[float, object]:
    best, result, timings = None, None, []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        timings.append(time.perf_counter() - t)
    best = statistics.median(timings)
    return best, result


def part_grouping(args, work: Path) -> None:
    say(f"== 3. grouping: GroupByPartitionFixedTasks, {GROUPING_SSPS:,} SSPs (median of {args.grouping_repeat}); "
        f"{load()}")
    from spark_samza_source.core.grouping import GroupByPartitionFixedTasks
    from spark_samza_source.core.model import SystemStreamPartition

    grouper = GroupByPartitionFixedTasks()
    half = GROUPING_SSPS // 2
    shapes = [("1 topic x 100,000 partitions", 1), ("100 topics x 1,000 partitions", 100)]
    for shape, topics in shapes:
        per_topic = GROUPING_SSPS // topics
        ssps = [SystemStreamPartition("kafka", f"topic-{t}", p) for t in range(topics) for p in range(per_topic)]
        before = [s for s in ssps if s.partition < per_topic // 2]
        first_s, model = _time(lambda ssps=ssps: grouper.group(None, ssps), args.grouping_repeat)
        previous = grouper.group(None, before)
        expand_s, expanded = _time(lambda ssps=ssps, previous=previous: grouper.group(previous, ssps),
                                   args.grouping_repeat)
        same_s, _ = _time(lambda ssps=ssps, model=model: grouper.group(model, ssps), args.grouping_repeat)
        if len(expanded.tasks) != len(previous.tasks):
            raise RuntimeError("expansion changed the task count: fixed tasks broken")
        say(f"  {shape}: first model {first_s:.3f} s ({len(model.tasks):,} tasks); expansion {len(before):,} -> "
            f"{len(ssps):,} SSPs {expand_s:.3f} s ({len(expanded.tasks):,} tasks kept); unchanged regroup "
            f"{same_s:.3f} s")
        for what, secs, fn in (("first model", first_s, lambda ssps=ssps: grouper.group(None, ssps)),
                               (f"expansion {half:,}->{GROUPING_SSPS:,}", expand_s,
                                lambda ssps=ssps, previous=previous: grouper.group(previous, ssps))):
            met = secs < GROUPING_TARGET_S
            record(f"grouping {what} ({shape})", f"{secs:.3f} s", f"< {GROUPING_TARGET_S:g} s", met)
            if args.profile or not met:
                say(f"  cProfile of {what} ({shape}):")
                say(profile_text(fn))
        record(f"grouping unchanged regroup ({shape})", f"{same_s:.3f} s", "-", None)


# ---- part 4: memory --------------------------------------------------------------------------------------------

def _proc_status_kib(field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of this process from /proc/self/status (KiB), 0 where there is no /proc."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _memory_child(bootstrap: str, ranges, extra_conf: dict) -> dict:
    """Runs in a fresh spawned process: read every range as one task, keep nothing, report ru_maxrss (KiB)."""
    import pyarrow.compute as pc

    from spark_samza_source.kafka.executor.reader import read_ranges
    base_kib = _proc_status_kib("VmRSS")
    started = time.monotonic()
    rows = nbytes = batches = 0
    largest = 0
    for batch in read_ranges({"bootstrap.servers": bootstrap, **extra_conf}, "Partition 0", ranges,
                             include_headers=False, fail_on_data_loss=True):
        rows += batch.num_rows
        nbytes += pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0
        largest = max(largest, batch.nbytes)
        batches += 1
        del batch
    return {"base_kib": base_kib, "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "hwm_kib": _proc_status_kib("VmHWM"), "rows": rows, "bytes": nbytes, "batches": batches,
            "largest": largest, "seconds": time.monotonic() - started}


def _memory_launcher(bootstrap: str, ranges, extra_conf: dict) -> dict:
    """A small spawned process that spawns the measured one.  Linux carries the RSS high-water mark of the
    process that forks into the child's ``ru_maxrss`` (kept across exec), so a child spawned straight from this
    benchmark (hundreds of MB after producing 1 GB, and with Spark's py4j) would report the parent's peak."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        res = pool.submit(_memory_child, bootstrap, ranges, extra_conf).result()
    res["launcher_hwm_kib"] = _proc_status_kib("VmHWM")
    return res


def _parse_shape(text: str) -> tuple[int, int]:
    count, _, size = text.lower().partition("x")
    return int(count.replace("_", "")), int(size.replace("_", ""))


def part_memory(args, work: Path) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic

    extra = dict(kv.split("=", 1) for kv in args.memory_kafka_conf)
    say(f"== 4. memory: peak RSS of a fresh Python process reading ~1 GB with read_ranges (one task holding all "
        f"{PARTITIONS} partitions, default options{', kafka conf ' + str(extra) if extra else ''}); {load()}")
    for shape in args.memory_shapes.split(","):
        count, size = _parse_shape(shape)
        with KafkaDevBroker() as broker:
            bootstrap = broker.bootstrap_servers
            topic = f"bench-big-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, PARTITIONS)
            secs = produce(bootstrap, topic, PARTITIONS, count, size)
            ranges = full_ranges(bootstrap, topic, PARTITIONS, count)
            say(f"  {count:,} x {size:,} B ({count * size / 1e9:.2f} GB) produced in {secs:.1f} s; {load()}")
            with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
                res = pool.submit(_memory_launcher, bootstrap, ranges, extra).result(timeout=1800)
        if res["rows"] != count or res["bytes"] != count * size:
            raise RuntimeError(f"memory child read {res['rows']:,} rows / {res['bytes']:,} B, "
                               f"expected {count:,} x {size}")
        peak_mb, base_mb, hwm_mb = res["peak_kib"] / 1024, res["base_kib"] / 1024, res["hwm_kib"] / 1024
        say(f"    read {res['rows']:,} rows, {res['bytes'] / 1e9:.2f} GB of values, {res['batches']:,} batches "
            f"(largest {res['largest'] / 2**20:.1f} MiB) in {res['seconds']:.1f} s "
            f"({res['bytes'] / 1e6 / res['seconds']:.0f} MB/s)")
        say(f"    peak RSS: ru_maxrss {peak_mb:.0f} MiB (VmHWM {hwm_mb:.0f} MiB); RSS after imports, before reading "
            f"{base_mb:.0f} MiB; spawned from a {res['launcher_hwm_kib'] / 1024:.0f} MiB launcher (Linux carries "
            "the forking process's high-water mark into ru_maxrss)")
        record(f"peak RSS reading {count * size / 1e9:.2f} GB as {count:,} x {size:,} B", f"{peak_mb:.0f} MiB",
               f"< {MEMORY_TARGET_MB} MB", peak_mb < MEMORY_TARGET_MB)


# ---- part 5: latency at a steady low rate ----------------------------------------------------------------------

def kafka_sender(bootstrap: str, topic: str):
    """``send(n)`` for ``latency.steady_production``: n records of ``VALUE_SIZE`` B (null key), CreateTime = now."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": 1})
    value = b"x" * VALUE_SIZE

    def send(n: int) -> None:
        for _ in range(n):
            producer.produce(topic, value=value)
        producer.poll(0)
        if n == 0:
            producer.flush(10)

    return send


def kafka_latency_stream(spark, bootstrap: str, topic: str, work: Path, options: dict[str, str]):
    name = f"latency-{uuid.uuid4().hex[:8]}"
    return (spark.readStream.format("samza-kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("job.name", name)
            .option("metadata.store", f"file://{work / name / 'metadata'}").option("startingOffsets", "latest")
            .options(**options).load())


def part_latency(args, work: Path) -> None:
    rate, timing = args.latency_rate, {"seconds": args.latency_seconds, "warmup_s": args.latency_warmup}
    say(f"== 5. latency: {rate:,} records/s of {VALUE_SIZE} B to {PARTITIONS} partitions, default trigger, "
        f"foreachBatch collecting rows; latency = collection time - CreateTime; the floor beside it; {load()}")
    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic

    options = dict(kv.split("=", 1) for kv in args.source_option)
    spark = local_session("samza-kafka-latency")
    try:
        with KafkaDevBroker() as broker:
            bootstrap = broker.bootstrap_servers
            topic = f"latency-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, PARTITIONS)
            with steady_production(kafka_sender, (bootstrap, topic), rate):
                for i in range(args.latency_repeat):
                    say(f"  run {i + 1}/{args.latency_repeat} (the producer runs through both queries)")
                    res = measure_latency("samza-kafka", kafka_latency_stream(spark, bootstrap, topic, work, options),
                                          "timestamp", work, **timing)
                    floor = floor_latency(spark, rate, work, **timing)
                    compare_with_floor(f"samza-kafka {rate:,} rec/s", res, floor, LATENCY_P50_TARGET,
                                       LATENCY_P99_TARGET)
    finally:
        spark.stop()


# ---- main ------------------------------------------------------------------------------------------------------

def _version(v) -> str:
    return v[0] if isinstance(v, tuple) else str(v)




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=3_000_000,
                        help="records of the Spark part's topic (100 B each); the native part reads at most 1,000,000")
    parser.add_argument("--rows-per-batch", default="200000,1000000",
                        help="Spark part: comma-separated maxOffsetsPerTrigger values, each run with the floor beside")
    parser.add_argument("--batches", type=int, default=5,
                        help="Spark part, mock cluster: maxOffsetsPerTrigger = records / batches")
    parser.add_argument("--skip-mock", action="store_true", help="Spark part: development broker only")
    parser.add_argument("--skip-raw", action="store_true", help="Spark part: no raw read_ranges baseline")
    parser.add_argument("--repeat", type=int, default=2, help="Spark part: runs of each query per batch size")
    parser.add_argument("--latency-rate", type=int, default=LATENCY_RATE, help="latency part: records per second")
    parser.add_argument("--latency-seconds", type=float, default=45, help="latency part: measured seconds per query")
    parser.add_argument("--latency-warmup", type=float, default=15, help="latency part: warm-up seconds per query")
    parser.add_argument("--latency-repeat", type=int, default=1, help="latency part: samza-kafka + floor pairs")
    parser.add_argument("--skip-floor", action="store_true",
                        help="Spark part: skip the no-I/O floor query (Spark's own per-batch cost)")
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark part: extra samza-kafka option, e.g. commitOffsetsToKafka=false")
    parser.add_argument("--only", choices=["native", "spark", "planning", "grouping", "memory", "latency"])
    parser.add_argument("--planning-repeat", type=int, default=5)
    parser.add_argument("--grouping-repeat", type=int, default=3)
    parser.add_argument("--memory-shapes", default="1000000x1024,10000x102400",
                        help="comma-separated RECORDSxVALUE_BYTES read by the memory part (~1 GB each)")
    parser.add_argument("--memory-kafka-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra librdkafka setting for the memory and native parts' reader, as a user's kafka.* "
                        "option")
    parser.add_argument("--profile", action="store_true", help="print cProfile output even when a target is met")
    args = parser.parse_args(argv)
    if args.batches < 2:
        parser.error("--batches must be >= 2 (the first batch is excluded)")

    import confluent_kafka
    import pyarrow
    import pyspark

    say(f"samza-kafka source benchmark: Python {sys.version.split()[0]}, pyspark {pyspark.__version__}, "
        f"pyarrow {pyarrow.__version__}, confluent-kafka {_version(confluent_kafka.version())} / "
        f"librdkafka {_version(confluent_kafka.libversion())}")
    say(f"  {load()}; shared machine: other processes may compete for the CPUs")
    import spark_samza_source

    say(f"  measuring spark_samza_source from {Path(spark_samza_source.__file__).parent}")
    parts = {"native": part_native, "spark": part_spark, "planning": part_planning, "grouping": part_grouping,
             "memory": part_memory, "latency": part_latency}
    with tempfile.TemporaryDirectory(prefix="bench-kafka-source-") as tmp:
        for name, fn in parts.items():
            if args.only in (None, name):
                started = time.monotonic()
                fn(args, Path(tmp))
                say(f"  ({name} part took {time.monotonic() - started:.0f} s)")
    print_summary()
    return 0 if all(r.met is not False for r in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
