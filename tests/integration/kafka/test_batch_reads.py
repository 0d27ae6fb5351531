"""samza-kafka batch reads (``spark.read``) on local Spark and Apache Kafka.

Every read here runs with ``spark.sql.python.filterPushdown.enabled`` unset (Spark's default: off) unless a test
says otherwise; the pushdown tests compare each pushed filter's rows with the rows of the same query with
pushdown off and with the rows Python picks from everything, and count the records the broker served.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.errors import PySparkException

from samza_devkit.frames import assert_same_rows
from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_helpers import add_partitions, create_topic, delete_records_before, produce, unique_topic
from samza_devkit.waits import scaled
from spark_samza_source.source.pyspark_compat import has_filter_pushdown

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: PySpark 4.0 has no filter pushdown for Python data sources (4.1+): Spark never calls pushFilters there, and the
#: setting below does not exist
needs_filter_pushdown = pytest.mark.skipif(not has_filter_pushdown(),
                                           reason="PySpark 4.0 pushes no filters to Python data sources (4.1+)")

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
BASE_TS = 1_700_000_000_000  # records get BASE_TS + 1000 * i (i = offset within the partition)
ONE_PER_BATCH = {"linger.ms": "0", "batch.num.messages": "1"}  # so the broker serves record by record


@pytest.fixture(scope="module")
def broker(kafka_broker):
    return kafka_broker


@pytest.fixture(scope="module")
def counting_broker(tmp_path_factory):
    """The development broker, in this process: it counts the records its Fetch responses served, which is how the
    pushdown tests see that a pushed filter fetched fewer records (Kafka's own metrics count bytes, not records)."""
    with KafkaDevBroker(data_dir=tmp_path_factory.mktemp("batch-broker"), in_process=True) as b:
        yield b


def _served(broker) -> int:
    return sum(broker.fetched_records.values()) if isinstance(broker, KafkaDevBroker) else 0


def timed_records(partitions: int, per_partition: int):
    return [(f"k{i}".encode(), f"v{p}-{i}".encode(), None, p, BASE_TS + 1000 * i)
            for p in range(partitions) for i in range(per_partition)]


def make_topic(broker, partitions=3, per_partition=20, prefix="batch"):
    topic = create_topic(broker.bootstrap_servers, unique_topic(prefix), partitions)
    produce(broker.bootstrap_servers, topic, timed_records(partitions, per_partition), extra_conf=ONE_PER_BATCH)
    return topic


def batch(spark, broker, *, pushdown: bool | None = None, where: str | None = None, **options):
    """The rows (topic, partition, offset, timestamp ms, task) of a batch read, and the records the broker served
    (counted by the development broker only)."""
    if pushdown is None:
        spark.conf.unset(PUSHDOWN_CONF)
    else:
        spark.conf.set(PUSHDOWN_CONF, str(pushdown).lower())
    try:
        before = _served(broker)
        df = spark.read.format("samza-kafka").options(**{"kafka.bootstrap.servers": broker.bootstrap_servers,
                                                          **options}).load()
        if where is not None:
            df = df.where(where)
        rows = sorted((r.topic, r.partition, r.offset, int(r.timestamp.timestamp() * 1000), r.task)
                      for r in df.collect())
        return rows, _served(broker) - before
    finally:
        spark.conf.unset(PUSHDOWN_CONF)


def expected(topic, partitions, per_partition, keep=lambda p, o: True):
    return sorted((topic, p, o, BASE_TS + 1000 * o, f"Partition {p}")
                  for p in range(partitions) for o in range(per_partition) if keep(p, o))


# ---- the read itself ----------------------------------------------------------------------------------------
def test_earliest_to_latest_reads_every_record_with_its_task(spark, broker):
    topic = make_topic(broker)
    rows, _ = batch(spark, broker, subscribe=topic)
    assert rows == expected(topic, 3, 20)
    df = spark.read.format("samza-kafka").options(**{"kafka.bootstrap.servers": broker.bootstrap_servers,
                                                      "subscribe": topic, "includeHeaders": "true"}).load()
    stream_schema = spark.readStream.format("samza-kafka").options(
        **{"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic, "includeHeaders": "true",
           "job.name": "schema-check"}).load().schema
    assert df.schema == stream_schema


def test_min_partitions_spreads_a_tasks_partitions_over_spark_partitions(spark, broker):
    """Two topics of two partitions grouped by partition: tasks ``Partition 0`` and ``Partition 1`` hold two
    partitions each. ``minPartitions=4`` reads them with 4 Spark partitions (one per Kafka partition, the task
    column unchanged), without it with 2 (one per task)."""
    from pyspark.sql.functions import spark_partition_id

    topics = [make_topic(broker, partitions=2, per_partition=5, prefix=f"spread{i}") for i in range(2)]
    base = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": ",".join(topics)}
    for min_partitions, count in ((None, 2), ("4", 4)):
        options = base if min_partitions is None else {**base, "minPartitions": min_partitions}
        df = spark.read.format("samza-kafka").options(**options).load()
        assert df.rdd.getNumPartitions() == count
        rows = df.withColumn("sparkPartition", spark_partition_id()).collect()
        assert sorted((r.topic, r.partition, r.offset) for r in rows) == sorted(
            (t, p, o) for t in topics for p in range(2) for o in range(5))
        assert all(r.task == f"Partition {r.partition}" for r in rows)
        by_spark = {(r.topic, r.partition): r.sparkPartition for r in rows}
        assert len(set(by_spark.values())) == count


def test_per_partition_json_starts_and_ends(spark, broker):
    topic = make_topic(broker)
    rows, _ = batch(spark, broker, subscribe=topic,
                    startingOffsets=f'{{"{topic}":{{"0":2,"1":-2,"2":5}}}}',
                    endingOffsets=f'{{"{topic}":{{"0":5,"1":-1,"2":6}}}}')
    ends = {0: (2, 5), 1: (0, 20), 2: (5, 6)}
    assert rows == expected(topic, 3, 20, lambda p, o: ends[p][0] <= o < ends[p][1])


def test_timestamp_bounds(spark, broker):
    topic = make_topic(broker)
    rows, _ = batch(spark, broker, subscribe=topic, startingTimestamp=str(BASE_TS + 5000),
                    endingTimestamp=str(BASE_TS + 8000))
    assert rows == expected(topic, 3, 20, lambda p, o: 5 <= o < 8)
    per = f'{{"{topic}":{{"0":{BASE_TS + 3000},"1":{BASE_TS + 1500}}}}}'
    ends = f'{{"{topic}":{{"0":{BASE_TS + 4000}}}}}'
    rows, _ = batch(spark, broker, subscribe=topic, startingOffsetsByTimestamp=per, endingOffsetsByTimestamp=ends)
    # partition 2 is not named in the starts (starts at latest: nothing); partition 1 ends at latest
    assert rows == expected(topic, 3, 20, lambda p, o: (p == 0 and 3 <= o < 4) or (p == 1 and o >= 2))


def test_starting_timestamp_strategies(spark, broker):
    topic = make_topic(broker, partitions=2)
    produce(broker.bootstrap_servers, topic, [(b"late", b"late", None, 1, BASE_TS + 100_000)])
    late = str(BASE_TS + 50_000)  # only partition 1 has a record at or after it
    with pytest.raises(Exception, match="no record at or after timestamp"):
        batch(spark, broker, subscribe=topic, startingTimestamp=late)
    rows, _ = batch(spark, broker, subscribe=topic, startingTimestamp=late,
                    startingOffsetsByTimestampStrategy="latest")
    assert [(r[1], r[2]) for r in rows] == [(1, 20)]


def test_subscribe_pattern(spark, broker):
    prefix = unique_topic("pat")
    a = create_topic(broker.bootstrap_servers, prefix + "-a", 2)
    b = create_topic(broker.bootstrap_servers, prefix + "-b", 1)
    produce(broker.bootstrap_servers, a, timed_records(2, 3))
    produce(broker.bootstrap_servers, b, timed_records(1, 4))
    rows, _ = batch(spark, broker, subscribePattern=prefix + "-.*")
    assert {(r[0], r[1], r[2]) for r in rows} == (
        {(a, p, o) for p in range(2) for o in range(3)} | {(b, 0, o) for o in range(4)})
    # the grouper's tasks over both topics: one per partition number, as the streaming query's
    assert {(r[0], r[1], r[4]) for r in rows} == {(t, p, f"Partition {p}") for t, p in [(a, 0), (a, 1), (b, 0)]}


def test_assign_and_include_headers(spark, broker):
    topic = create_topic(broker.bootstrap_servers, unique_topic("assign"), 3)
    produce(broker.bootstrap_servers, topic, [(b"k", f"v{p}".encode(), [("h", f"{p}".encode())], p) for p in range(3)])
    df = spark.read.format("samza-kafka").options(**{
        "kafka.bootstrap.servers": broker.bootstrap_servers, "assign": f'{{"{topic}":[0,2]}}',
        "includeHeaders": "true"}).load()
    rows = sorted((r.partition, r.value, [(h.key, h.value) for h in r.headers], r.task) for r in df.collect())
    assert rows == [(p, f"v{p}".encode(), [("h", f"{p}".encode())], f"Partition {p}") for p in (0, 2)]


def test_deleted_records_with_fail_on_data_loss(spark, broker):
    topic = make_topic(broker, partitions=1, per_partition=10)
    delete_records_before(broker.bootstrap_servers, topic, 0, 4)
    starts = f'{{"{topic}":{{"0":1}}}}'
    with pytest.raises(Exception, match="below its log start"):
        batch(spark, broker, subscribe=topic, startingOffsets=starts)
    rows, _ = batch(spark, broker, subscribe=topic, startingOffsets=starts, failOnDataLoss="false")
    assert [r[2] for r in rows] == list(range(4, 10))
    rows, _ = batch(spark, broker, subscribe=topic)  # earliest is the log start: nothing is lost
    assert [r[2] for r in rows] == list(range(4, 10))


def test_task_column_follows_the_stored_job_model_after_an_expansion(spark, broker, tmp_path):
    """A backfill with the streaming query's job.name and store gets the streaming query's tasks, partitions added
    by an expansion included; without them the grouper groups the partitions afresh."""
    from pathlib import Path

    from samza_devkit.query_harness import await_available_now

    bootstrap = broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("grow"), 2)
    produce(bootstrap, topic, [(f"a{i}".encode(), b"v", None, i % 2) for i in range(10)])
    store = f"file://{tmp_path / 'store'}"
    job = {"job.name": "backfill-" + topic[-6:], "metadata.store": store}
    streaming = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest",
                 "expansion.settleTime": "0", **job}

    def run_stream():
        df = spark.readStream.format("samza-kafka").options(**streaming).load()
        q = (df.writeStream.format("parquet").option("path", str(tmp_path / "sink"))
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
        await_available_now(q, "grow", 180)

    run_stream()
    add_partitions(bootstrap, topic, 4)
    produce(bootstrap, topic, [(f"b{i}".encode(), b"v", None, i % 4) for i in range(20)])
    run_stream()
    run_stream()  # the drain-first barrier releases the new partitions in a later plan
    streamed = spark.read.parquet(str(tmp_path / "sink"))
    assert streamed.count() == 30 and Path(tmp_path / "store").exists()
    backfill = spark.read.format("samza-kafka").options(**{"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                                            **job}).load()
    # the backfill and the streaming query's output: the same rows, every column, each in the same task
    assert_same_rows(backfill, streamed, key=["partition", "offset"])
    tasks = {r.task for r in backfill.select("task").distinct().collect()}
    assert tasks == {"Partition 0", "Partition 1"}  # fixed tasks: 2 and 3 join 0 and 1
    fresh, _ = batch(spark, broker, subscribe=topic)
    assert {r[4] for r in fresh} == {f"Partition {p}" for p in range(4)}


# ---- options ------------------------------------------------------------------------------------------------
def test_streaming_refuses_batch_only_options(spark, broker):
    for name, value in [("endingOffsets", "latest"), ("endingTimestamp", "1"), ("endingOffsetsByTimestamp", "{}")]:
        df = spark.readStream.format("samza-kafka").options(**{
            "kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": "x", "job.name": "j", name: value,
        }).load()
        with pytest.raises(Exception, match=f"option '{name}' is not valid in streaming queries"):
            df.writeStream.format("noop").start().awaitTermination(scaled(60))


def test_batch_refuses_latest_start_and_earliest_end(spark, broker):
    with pytest.raises(PySparkException, match="not valid for batch queries"):
        batch(spark, broker, subscribe="x", startingOffsets="latest")
    with pytest.raises(PySparkException, match="not valid for batch queries"):
        batch(spark, broker, subscribe="x", endingOffsets="earliest")


# ---- filter pushdown ----------------------------------------------------------------------------------------
def _ts(offset: int, micros: int = 0) -> str:
    t = dt.datetime.fromtimestamp((BASE_TS + 1000 * offset) / 1000, tz=dt.UTC)
    t += dt.timedelta(microseconds=micros)
    return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"


PUSHED = [
    # (where, keep(partition, offset, topic, task)) ; boundaries are values that exist
    (f"timestamp >= {_ts(15)}", lambda p, o: o >= 15),
    (f"timestamp > {_ts(15)}", lambda p, o: o > 15),
    (f"timestamp > {_ts(14, 999)}", lambda p, o: o >= 15),  # a bound inside a millisecond
    (f"timestamp = {_ts(15)}", lambda p, o: o == 15),
    ("partition = 1", lambda p, o: p == 1),
    ("partition IN (0, 2)", lambda p, o: p in (0, 2)),
    ("task = 'Partition 2'", lambda p, o: p == 2),
    ("task IN ('Partition 0', 'Partition 1')", lambda p, o: p in (0, 1)),
    ("offset >= 15", lambda p, o: o >= 15),
    ("offset > 15", lambda p, o: o > 15),
    ("offset = 15", lambda p, o: o == 15),
    ("offset >= 5 AND offset <= 6 AND partition = 0", lambda p, o: p == 0 and 5 <= o <= 6),
    ("offset IN (12, 17)", lambda p, o: o in (12, 17)),
]


@needs_filter_pushdown
@pytest.mark.parametrize("where,keep", PUSHED, ids=[w for w, _ in PUSHED])
def test_pushed_filter_returns_the_same_rows_and_fetches_fewer(spark, counting_broker, where, keep):
    topic = make_topic(counting_broker, partitions=3, per_partition=20, prefix="push")
    off, fetched_off = batch(spark, counting_broker, pushdown=False, where=where, subscribe=topic)
    unset, _ = batch(spark, counting_broker, where=where, subscribe=topic)
    on, fetched_on = batch(spark, counting_broker, pushdown=True, where=where, subscribe=topic)
    assert off == unset == on == expected(topic, 3, 20, keep)
    assert fetched_off >= 60
    assert fetched_on < fetched_off


#: a consumer that fetches little at a time and keeps only a few records queued ahead of the position it reads, so
#: what the broker serves follows where the reads end (the reader's defaults fetch up to 4 MiB per partition ahead)
SMALL_FETCHES = {"kafka.max.partition.fetch.bytes": "1024", "kafka.queued.min.messages": "10"}


@needs_filter_pushdown
@pytest.mark.parametrize("where,last", [("offset < 5", 4), ("offset <= 5", 5)])
def test_pushed_offset_upper_bound_ends_the_ranges_and_fetches_fewer(spark, counting_broker, where, last):
    """An upper offset bound ends each range there: same rows, and each task stops fetching at it. With the
    reader's defaults a 20-record partition comes in one fetch either way, so the partitions here are long (2,000
    records each) and the consumer fetches little ahead (``SMALL_FETCHES``): without pushdown every record is
    served; with it, the bound plus what the consumer had queued ahead when its range ended."""
    per_partition = 2000
    topic = make_topic(counting_broker, partitions=3, per_partition=per_partition, prefix="upper")
    off, fetched_off = batch(spark, counting_broker, pushdown=False, where=where, subscribe=topic, **SMALL_FETCHES)
    on, fetched_on = batch(spark, counting_broker, pushdown=True, where=where, subscribe=topic, **SMALL_FETCHES)
    assert off == on == expected(topic, 3, per_partition, lambda p, o: o <= last)
    assert fetched_off >= 3 * per_partition
    assert fetched_on < fetched_off / 10, (fetched_on, fetched_off)


@needs_filter_pushdown
def test_pushed_topic_filters(spark, counting_broker):
    prefix = unique_topic("ptopic")
    a = create_topic(counting_broker.bootstrap_servers, prefix + "-a", 2)
    b = create_topic(counting_broker.bootstrap_servers, prefix + "-b", 2)
    produce(counting_broker.bootstrap_servers, a, timed_records(2, 10), extra_conf=ONE_PER_BATCH)
    produce(counting_broker.bootstrap_servers, b, timed_records(2, 10), extra_conf=ONE_PER_BATCH)
    for where, topics, n in [(f"topic = '{b}'", {b}, 20), (f"topic IN ('{a}', 'nope')", {a}, 20),
                             (f"topic = '{a}' AND partition = 1", {a}, 10)]:
        off, fetched_off = batch(spark, counting_broker, pushdown=False, where=where, subscribePattern=prefix + "-.*")
        on, fetched_on = batch(spark, counting_broker, pushdown=True, where=where, subscribePattern=prefix + "-.*")
        assert off == on and {r[0] for r in on} == topics and len(on) == n, where
        assert fetched_on < fetched_off, where


@needs_filter_pushdown
def test_unpushable_filters_still_apply(spark, broker):
    """Upper timestamp bounds and other predicates are left to Spark: same rows with pushdown on."""
    topic = make_topic(broker, partitions=2, per_partition=10, prefix="rest")
    where = f"timestamp < {_ts(3)} OR value = 'v1-7'"
    off, _ = batch(spark, broker, pushdown=False, where=where, subscribe=topic)
    on, _ = batch(spark, broker, pushdown=True, where=where, subscribe=topic)
    assert off == on == expected(topic, 2, 10, lambda p, o: o < 3 or (p, o) == (1, 7))


@needs_filter_pushdown
def test_batch_read_never_shows_the_sasl_password(spark, broker, caplog):
    """The password given as an option is in no log line of the batch reader's driver and executor cycle (run here,
    in-process, with pushdown), not in the reader's repr, not in explain() and not in a batch option's error."""
    import contextlib
    import io
    import logging
    import uuid

    from pyspark.sql.datasource import GreaterThanOrEqual

    from spark_samza_source.kafka.schema import kafka_schema
    from spark_samza_source.kafka.source import SamzaKafkaPushdownBoundedReader
    from spark_samza_source.source.bounded_reader import bounded_raw_options

    caplog.set_level(logging.DEBUG, logger="spark_samza_source")
    secret = f"SASL-PW-{uuid.uuid4().hex}"
    topic = make_topic(broker, partitions=2, per_partition=5, prefix="secret")
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic,
               "kafka.security.protocol": "PLAINTEXT", "kafka.sasl.username": "samza", "kafka.sasl.password": secret}
    raw, uses_store = bounded_raw_options({k.lower(): v for k, v in options.items()})
    reader = SamzaKafkaPushdownBoundedReader(SamzaKafkaPushdownBoundedReader.parse_options(raw, uses_store),
                                           kafka_schema(False))
    since = dt.datetime.fromtimestamp((BASE_TS + 3000) / 1000, tz=dt.UTC)
    reader.pushFilters([GreaterThanOrEqual(("timestamp",), since)])
    rows = [r for part in reader.partitions() for b in reader.read(part) for r in b.to_pylist()]
    assert sorted((r["partition"], r["offset"]) for r in rows) == [(p, o) for p in range(2) for o in (3, 4)]
    texts = {"logs": caplog.text, "repr": repr(reader.options)}
    df = spark.read.format("samza-kafka").options(**options).load().where("partition = 1")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain(True)
    texts["explain"] = buf.getvalue()
    with pytest.raises(Exception) as err:
        spark.read.format("samza-kafka").options(**options, endingOffsets="earliest").load().collect()
    texts["error"] = str(err.value)
    assert "not valid for batch queries" in texts["error"]
    for where, text in texts.items():
        assert secret not in text, where
