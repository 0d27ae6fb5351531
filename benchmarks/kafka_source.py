"""End-to-end figures of the ``samza-kafka`` source against the targets of the performance issue.

    .venv/bin/python benchmarks/kafka_source.py [--records 1000000] [--skip-mock]
        [--only native|spark|planning|grouping|memory] [--repeat 3] [--batches 5] [--source-option KEY=VALUE]
        [--memory-shapes 1000000x1024,10000x102400] [--memory-kafka-conf KEY=VALUE] [--profile]

Five parts (all by default, or one with ``--only``), then a summary table (figure, target, MET/MISSED):

0. ``native``: the native anchor (``kafka_native.py``): kcat, a bare confluent-kafka loop and ``read_ranges``
   read the same ``--records`` x 100 B single-partition topic of the development broker, alternately
   ``--repeat`` times.  Targets: ``read_ranges`` wall rate >= 0.6x kcat's, CPU per record <= 2x kcat's.  The
   Spark part also runs kcat over its 4-partition topic right after every Spark run (Spark / kcat >= 0.45).
   Skipped with a message when kcat is not installed (``apt-get install kcat``).

1. ``spark``: ``--records`` records of 100 B over 4 partitions, read by a Spark query (``samza-kafka`` source,
   ``noop`` sink, ``local[2]``, ``Trigger.AvailableNow``, ``maxOffsetsPerTrigger`` = records / ``--batches``).
   Steady state = rows of batches 1..n divided by the wall time from the end of batch 0 to the end of batch n
   (end = progress ``timestamp`` + ``durationMs.triggerExecution``), so session start, Python worker start and
   the first consumer connections are excluded.  Baseline: 2 processes (= ``local[2]``), each reading 2 of the
   4 partitions with ``spark_samza_source.kafka.reader.read_ranges`` (one call per partition, as one Spark task
   per Samza task; same Arrow batches, discarded), timed after a warm-up read that opens the cached consumer.
   Each side runs ``--repeat`` times (alternately), the best kept.  Target: Spark / raw >= 0.7.  Run against
   the development broker (``KafkaDevBroker``, its own process), then librdkafka's mock cluster
   (``RdkafkaMockCluster``, in this process on librdkafka's threads), which keeps only ~5 MB per partition: the
   mock run uses the largest record count it was seen to retain in full (probed, then checked with watermarks:
   low = 0 and high = produced on every partition).
2. ``planning``: one warm ``latestOffset`` + ``partitions`` of ``SamzaKafkaStreamReader`` (no Spark) over a
   1,000-partition topic of the development broker (10 records per partition).  Target < 1 s.  Also printed,
   without target: the offset JSON size and one ``commit`` (Spark calls it at every batch, in ``walCommit``).
3. ``grouping``: ``GroupByPartitionFixedTasks`` over 100,000 SSPs: first model, expansion 50,000 -> 100,000,
   and the unchanged regroup every trigger does.  Target < 2 s.
4. ``memory``: peak RSS (``ru_maxrss``) of a fresh child process that reads ~1 GB (1,000,000 x 1 KiB, then
   10,000 x 100 KiB) from the development broker with ``read_ranges`` (one task holding all 4 partitions),
   dropping every batch.  Target < 512 MB.

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
SPARK_NATIVE_TARGET = 0.45  # Spark steady state (4 partitions, local[2]) / kcat reading the same topic














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
    from spark_samza_source.kafka.input_partition import KafkaRange
    from spark_samza_source.kafka.reader import read_ranges

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






def spark_query(spark, bootstrap: str, topic: str, records: int, batches: int, work: Path,
                options: dict[str, str]) -> dict:
    per_trigger = math.ceil(records / batches)
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
    total_s = time.monotonic() - started
    progress = [p for p in progress_dicts(query) if p.get("numInputRows", 0) > 0]
    rows = sum(p["numInputRows"] for p in progress)
    if rows != records:
        raise RuntimeError(f"the Spark query read {rows:,} rows, expected {records:,}")
    if len(progress) < 2:
        raise RuntimeError("need at least 2 batches to exclude the first: lower maxOffsetsPerTrigger")
    ends = [iso_ts(p["timestamp"]) + p["durationMs"]["triggerExecution"] / 1000 for p in progress]
    steady_rows = sum(p["numInputRows"] for p in progress[1:])
    steady_s = ends[-1] - ends[0]
    return {"per_trigger": per_trigger, "progress": progress, "steady_rows": steady_rows, "steady_s": steady_s,
            "rate": steady_rows / steady_s, "total_s": total_s}


def _floor_source_class(rows_per_task: int, batches: int):
    """A Python streaming data source with the samza-kafka schema that reads no Kafka at all: 4 input partitions
    per batch, each yielding ``rows_per_task`` prebuilt rows, for ``batches`` batches.  Defined in a function so
    cloudpickle ships it by value (Spark's workers need not import this script) and the spawned benchmark
    children do not import pyspark."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    class FloorPartition(InputPartition):
        def __init__(self, rows: int) -> None:
            self.rows = rows

    class FloorReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def initialOffset(self):
            return {"batch": 0}

        def prepareForTriggerAvailableNow(self) -> None:
            pass

        def latestOffset(self, start, limit):
            return {"batch": min(batches, start["batch"] + 1)}

        def partitions(self, start, end):
            return [] if start == end else [FloorPartition(rows_per_task) for _ in range(PARTITIONS)]

        def commit(self, end) -> None:
            pass

        def read(self, partition):
            import pyarrow as pa

            from spark_samza_source.kafka.schema import kafka_arrow_schema

            schema, n = kafka_arrow_schema(False), partition.rows
            zeros = pa.array([0] * n, pa.int64())
            yield pa.RecordBatch.from_arrays([
                pa.nulls(n, pa.binary()), pa.array([b"x" * VALUE_SIZE] * n, pa.binary()), pa.array(["t"] * n),
                pa.array([0] * n, pa.int32()), zeros, zeros.cast(schema.field("timestamp").type),
                pa.array([0] * n, pa.int32()), pa.array(["Partition 0"] * n)], schema=schema)

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "samza-kafka-benchmark-floor"

        def schema(self):
            from spark_samza_source.kafka.schema import kafka_schema

            return kafka_schema(False)

        def streamReader(self, schema):
            return FloorReader()

    return FloorSource


def spark_floor(spark, records: int, batches: int, work: Path) -> dict:
    """Steady state of the same Spark pipeline over a source that does no I/O: Spark's own per-batch cost."""
    rows_per_task = math.ceil(records / batches) // PARTITIONS
    source = _floor_source_class(rows_per_task, batches)
    spark.dataSource.register(source)
    name = f"floor-{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format(source.name()).load().writeStream.format("noop")
             .option("checkpointLocation", str(work / name)).trigger(availableNow=True).start())
    if not query.awaitTermination(600):
        query.stop()
        raise RuntimeError("the floor query did not finish within 10 minutes")
    progress = [p for p in progress_dicts(query) if p.get("numInputRows", 0) > 0]
    ends = [iso_ts(p["timestamp"]) + p["durationMs"]["triggerExecution"] / 1000 for p in progress]
    steady_rows = sum(p["numInputRows"] for p in progress[1:])
    return {"progress": progress, "steady_rows": steady_rows, "steady_s": ends[-1] - ends[0],
            "rate": steady_rows / (ends[-1] - ends[0])}






def measure_broker(label: str, spark, bootstrap: str, topic: str, records: int, args, work: Path) -> None:
    """Raw baseline then Spark query, each ``--repeat`` times alternately (best kept: the machine is shared)."""
    ranges = full_ranges(bootstrap, topic, PARTITIONS, records)
    options = dict(kv.split("=", 1) for kv in args.source_option)
    raws, runs, floors, kcats = [], [], [], []
    native = label == "dev broker" and KCAT is not None  # kcat on the mock cluster would measure the mock
    if label == "dev broker" and KCAT is None:
        say(f"  {kcat_missing_reason()}")
    for i in range(args.repeat):
        say(f"  [{label}] run {i + 1}/{args.repeat}: raw baseline, 2 spawned processes, read_ranges one partition "
            f"at a time; {load()}")
        raw = raw_baseline(bootstrap, ranges)
        raws.append(raw)
        say(f"    raw read_ranges x2: {raw['rate']:>10,.0f} rec/s ({raw['rows']:,} rows in {raw['seconds']:.2f} s "
            f"wall, {raw['cpu']:.1f} CPU-s; partitions per process {raw['shares']})")
        say(f"  [{label}] run {i + 1}/{args.repeat}: Spark query, local[2], noop sink, AvailableNow, "
            f"maxOffsetsPerTrigger {math.ceil(records / args.batches):,}"
            f"{', options ' + str(options) if options else ''}; {load()}")
        res = spark_query(spark, bootstrap, topic, records, args.batches, work, options)
        runs.append(res)
        print_batches(res["progress"])
        say(f"    Spark steady state: {res['rate']:>10,.0f} rec/s ({res['steady_rows']:,} rows of batches 1..n in "
            f"{res['steady_s']:.2f} s, end of batch 0 -> end of last batch; whole query {res['total_s']:.1f} s "
            "incl. start)")
        if native:
            anchor = run_kcat(bootstrap, topic, records)
            res["kcat"] = anchor
            kcats.append(anchor)
            say(f"    kcat, same topic (all {PARTITIONS} partitions), right after: {anchor['rate']:>10,.0f} rec/s "
                f"({anchor['seconds']:.2f} s wall, {anchor['cpu']:.2f} CPU-s): Spark / kcat "
                f"{res['rate'] / anchor['rate']:.2f}, raw / kcat {raw['rate'] / anchor['rate']:.2f}; {load()}")
        if not args.skip_floor:
            say(f"  [{label}] run {i + 1}/{args.repeat}: Spark floor, same pipeline and batch sizes over a Python "
                f"source that reads no Kafka (prebuilt rows); {load()}")
            fl = spark_floor(spark, records, args.batches, work)
            floors.append(fl)
            print_batches(fl["progress"])
            say(f"    Spark floor steady state: {fl['rate']:>10,.0f} rec/s (no source can make this query faster)")
    raw = max(raws, key=lambda r: r["rate"])
    res = max(runs, key=lambda r: r["rate"])
    ratio = res["rate"] / raw["rate"]
    say(f"  [{label}] best of {args.repeat}: Spark {res['rate']:,.0f} rec/s / raw {raw['rate']:,.0f} rec/s = "
        f"{ratio:.2f} (target >= {SPARK_TARGET})")
    record(f"{label}: raw read_ranges x2, {records:,} rec", f"{raw['rate']:,.0f} rec/s", "-", None)
    record(f"{label}: Spark steady state", f"{res['rate']:,.0f} rec/s", "-", None)
    record(f"{label}: Spark / raw", f"{ratio:.2f}", f">= {SPARK_TARGET}", ratio >= SPARK_TARGET)
    if kcats:
        per_run = [r["rate"] / r["kcat"]["rate"] for r in runs]
        best = max(per_run)
        say(f"  [{label}] Spark / kcat per run (each against the kcat read right after it): "
            + ", ".join(f"{x:.2f}" for x in per_run))
        best_kcat = max(k["rate"] for k in kcats)
        record(f"{label}: kcat, {records:,} rec, {PARTITIONS} partitions", f"{best_kcat:,.0f} rec/s", "-", None)
        record(f"{label}: Spark steady state / kcat (best run)", f"{best:.2f}", f">= {SPARK_NATIVE_TARGET}",
               best >= SPARK_NATIVE_TARGET)
    if floors:
        floor = max(floors, key=lambda r: r["rate"])
        per_batch = res["steady_rows"] / (len(res["progress"]) - 1)
        spark_ms, floor_ms = 1000 * per_batch / res["rate"], 1000 * per_batch / floor["rate"]
        say(f"  [{label}] Spark floor {floor['rate']:,.0f} rec/s = {floor['rate'] / raw['rate']:.2f} of raw, an upper "
            f"bound for any source at {per_batch:,.0f} rows per batch.  Per batch the samza-kafka query takes "
            f"{spark_ms:.0f} ms, the floor {floor_ms:.0f} ms: {spark_ms - floor_ms:.0f} ms are the source's own "
            f"(reading the rows from Kafka, which takes the raw loop {1000 * per_batch / raw['rate']:.0f} ms, and "
            "its driver calls; compare the walCommit columns, where Spark calls commit)")
        record(f"{label}: Spark floor (no-I/O source) / raw", f"{floor['rate'] / raw['rate']:.2f}", "-", None)


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


def part_spark(args, work: Path) -> None:
    say(f"== 1. Spark query vs raw read_ranges loop ({PARTITIONS} partitions, {VALUE_SIZE} B values); {load()}")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic
    from samza_devkit.spark_fixtures import make_local_spark
    from spark_samza_source import register

    started = time.monotonic()
    spark = make_local_spark("samza-kafka-benchmark", {"spark.ui.showConsoleProgress": "false"})
    register(spark)
    say(f"  Spark session {spark.version} started in {time.monotonic() - started:.1f} s (not measured), "
        f"PYSPARK_PYTHON={sys.executable}")
    try:
        with KafkaDevBroker() as broker:
            bootstrap = broker.bootstrap_servers
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, PARTITIONS)
            secs = produce(bootstrap, topic, PARTITIONS, args.records, VALUE_SIZE)
            say(f"  [dev broker] {bootstrap}: produced {args.records:,} x {VALUE_SIZE} B in {secs:.1f} s")
            measure_broker("dev broker", spark, bootstrap, topic, args.records, args, work)
        if not args.skip_mock:
            from broker_throughput import RdkafkaMockCluster

            with RdkafkaMockCluster() as mock:
                bootstrap = mock.bootstrap_servers
                count = mock_retained_count(mock, args.records)
                for _attempt in range(5):
                    topic = f"bench-{uuid.uuid4().hex[:8]}"
                    mock.create_topic(topic, PARTITIONS)
                    produce(bootstrap, topic, PARTITIONS, count, VALUE_SIZE)
                    marks = watermarks(bootstrap, topic, PARTITIONS)
                    if all(low == 0 for low, _ in marks) and sum(h for _, h in marks) == count:
                        break
                    say(f"    {count:,} not fully retained (watermarks {marks}); trying 5% fewer")
                    count = int(count * 0.95) // 4_000 * 4_000
                else:
                    raise RuntimeError("could not find a record count the mock cluster retains in full")
                say(f"  [mock] {bootstrap}: librdkafka's mock cluster retains only ~5 MB per partition, so this run "
                    f"uses {count:,} records (not {args.records:,}): the largest count seen fully retained; "
                    f"watermarks {marks} (low 0, every record kept)")
                measure_broker(f"mock ({count:,} rec)", spark, bootstrap, topic, count, args, work)
    finally:
        spark.stop()


# ---- part 0: read_ranges against kcat on one partition ----------------------------------------------------------

def part_native(args, work: Path) -> None:
    """kcat, a bare consume loop and read_ranges over one partition of the development broker, same topic, same
    run (kafka_native.py); ratios of wall rate and CPU per record against kcat."""
    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic

    say(f"== 0. read_ranges vs kcat (native librdkafka) on 1 partition, {args.records:,} x {VALUE_SIZE} B; {load()}")
    if KCAT is None:
        say(f"  {kcat_missing_reason()}")
        return
    conf = dict(kv.split("=", 1) for kv in args.memory_kafka_conf)
    with KafkaDevBroker() as broker:
        bootstrap = broker.bootstrap_servers
        topic = f"bench-native-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, 1)
        secs = produce(bootstrap, topic, 1, args.records, VALUE_SIZE)
        say(f"  [dev broker] {bootstrap}: produced {args.records:,} x {VALUE_SIZE} B to 1 partition in {secs:.1f} s")
        best = measure_single_partition(bootstrap, topic, args.records, args.repeat, conf)
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
    record(f"planning latestOffset+partitions, {PLANNING_PARTITIONS:,} partitions", f"{total:.3f} s",
           f"< {PLANNING_TARGET_S:g} s", met)
    record("offset JSON size (1,000 partitions)", f"{size / 1024:.1f} KiB", "-", None)
    record("commit, 1,000 partitions (every batch)", f"{commit_s:.3f} s", "-", None)


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

    from spark_samza_source.kafka.reader import read_ranges

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


# ---- main ------------------------------------------------------------------------------------------------------

def _version(v) -> str:
    return v[0] if isinstance(v, tuple) else str(v)




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records for the Spark part (100 B each)")
    parser.add_argument("--batches", type=int, default=5,
                        help="Spark batches: maxOffsetsPerTrigger = records / batches (batch 0 is excluded)")
    parser.add_argument("--skip-mock", action="store_true", help="Spark part: development broker only")
    parser.add_argument("--repeat", type=int, default=3, help="Spark part: raw and Spark runs per broker, best kept")
    parser.add_argument("--skip-floor", action="store_true",
                        help="Spark part: skip the no-I/O floor query (Spark's own per-batch cost)")
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark part: extra samza-kafka option, e.g. commitOffsetsToKafka=false")
    parser.add_argument("--only", choices=["native", "spark", "planning", "grouping", "memory"])
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
    parts = {"native": part_native, "spark": part_spark, "planning": part_planning, "grouping": part_grouping,
             "memory": part_memory}
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
