"""samza-kafka end to end on local Spark and Apache Kafka: exact reads and exactly-once restarts."""

import pytest

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.query_harness import failure_of
from samza_devkit.waits import scaled
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointOldest
from spark_samza_source.source.pyspark_compat import has_admission_control

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: PySpark 4.2+: Trigger.AvailableNow reads in batches bounded by the source's limit; 4.0 / 4.1 run it as one batch
BOUNDED_AVAILABLE_NOW = has_admission_control()


def records_for(partitions: int, per_partition: int, start: int = 0, big_every: int = 0):
    out = []
    for p in range(partitions):
        for i in range(start, start + per_partition):
            key = None if i % 7 == 0 else f"k{p}-{i % 50}".encode()
            value = None if i % 11 == 0 else f"v{p}-{i}".encode()
            if big_every and i % big_every == 0:
                value = bytes([i % 251]) * (1024 * 1024)
            headers = [("h", f"{i}".encode()), ("null", None)] if i % 3 == 0 else None
            out.append((key, value, headers, p))
    return out


def _bytes(value):
    """PySpark 4.0 collects BINARY as bytearray, later versions as bytes."""
    return None if value is None else bytes(value)


def as_set(rows):
    return {
        (r.partition, r.offset, _bytes(r.key), _bytes(r.value),
         tuple((h.key, _bytes(h.value)) for h in (r.headers or [])))
        for r in rows
    }


def produced_set(acks):
    return {(a.partition, a.offset, a.key, a.value, tuple(a.headers)) for a in acks}


def test_reads_every_record_exactly_across_restarts(kq):
    """Backs docs/guarantees.md: every record reaches an idempotent sink (Parquet) exactly once across query stops and
    restarts.
    """
    # 1 MiB values plus key and headers exceed Kafka's default max.message.bytes (1 MiB + 12), as on a real cluster.
    topic = create_topic(kq.bootstrap, unique_topic("exact"), 3, config={"max.message.bytes": str(8 * 1024 * 1024)})
    acks = produce(kq.bootstrap, topic, records_for(3, 10_000, big_every=4000))
    kq.run_available_now_parquet("exact", subscribe=topic, includeHeaders="true")
    rows = kq.sink_rows("exact")
    assert len(rows) == 30_000
    assert as_set(rows) == produced_set(acks)
    assert {r.task for r in rows} == {"Partition 0", "Partition 1", "Partition 2"}
    assert all(r.task == f"Partition {r.partition}" and r.topic == topic for r in rows)

    # Stop and restart from the checkpoint several times, producing in between.
    for round_ in range(1, 4):
        acks += produce(kq.bootstrap, topic, records_for(3, 500, start=10_000 * round_))
        query = kq.start_parquet("exact", subscribe=topic, includeHeaders="true")
        query.processAllAvailable()
        query.stop()
        rows = kq.sink_rows("exact")
        assert len(rows) == len(acks), f"round {round_}: duplicates or losses"
        assert as_set(rows) == produced_set(acks)


def test_schema_matches_sparks_kafka_source_plus_task(kq):
    topic = create_topic(kq.bootstrap, unique_topic("schema"), 1)
    without = kq.stream(subscribe=topic).schema.simpleString()
    with_headers = kq.stream(subscribe=topic, includeHeaders="true").schema.simpleString()
    assert without == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,task:string>"
    )
    assert "headers:array<struct<key:string,value:binary>>" in with_headers


def test_max_offsets_per_trigger_bounds_every_batch_and_available_now_stops(kq):
    """Backs docs/deployment.md, Compatibility: Trigger.AvailableNow reads the backlog in batches of at most
    maxOffsetsPerTrigger on PySpark 4.2+, and runs one batch of at most that many on 4.0 / 4.1."""
    topic = create_topic(kq.bootstrap, unique_topic("limit"), 4)
    acks = produce(kq.bootstrap, topic, [(f"k{i}".encode(), f"{i}".encode()) for i in range(10_000)])
    query = kq.start_collecting("limit", trigger={"availableNow": True}, subscribe=topic, maxOffsetsPerTrigger="1000")
    assert query.awaitTermination(scaled(240))
    sizes = [len(rows) for _, rows in kq.batches["limit"]]
    read = {(r.partition, r.offset) for r in kq.collected("limit")}
    if not BOUNDED_AVAILABLE_NOW:
        assert sizes == [1000] and read < {(a.partition, a.offset) for a in acks}
        return
    assert sizes and max(sizes) <= 1000 and sum(sizes) == 10_000
    assert len([s for s in sizes if s > 0]) >= 10
    assert read == {(a.partition, a.offset) for a in acks}


def test_max_offsets_per_trigger_bounds_every_batch_after_a_restart_a_failed_batch_and_a_startpoint(kq):
    """Backs docs/deployment.md, Compatibility: every batch holds at most maxOffsetsPerTrigger records on every
    supported PySpark (on 4.0 / 4.1 Spark passes no read limit and the source applies its own), including the
    first batch after a restart from the checkpoint, a batch that failed and ran again, and the batches that
    read again from a startpoint; every record is read, and no batch reads one another batch read."""
    topic = create_topic(kq.bootstrap, unique_topic("cap"), 3)
    acks = produce(kq.bootstrap, topic, [(f"k{i}".encode(), f"{i}".encode()) for i in range(1500)])
    produced = {(a.partition, a.offset) for a in acks}

    def read_by_batch():
        out: dict[int, list] = {}
        for batch_id, rows in kq.batches["cap"]:
            out[batch_id] = sorted((r.partition, r.offset) for r in rows)  # a batch run again replaces itself
        return out

    def all_read(expected):
        return lambda: {key for rows in read_by_batch().values() for key in rows} >= expected

    query = kq.start_collecting("cap", subscribe=topic, maxOffsetsPerTrigger="400")
    kq.wait_for(all_read(produced), what="the first 1500 records")
    query.stop()

    acks = produce(kq.bootstrap, topic, [(f"k{i}".encode(), f"{i}".encode()) for i in range(1500, 2200)])
    produced |= {(a.partition, a.offset) for a in acks}
    failed: list[tuple[int, list]] = []

    def fail_once(batch_id, rows):
        if not failed:
            failed.append((batch_id, sorted((r.partition, r.offset) for r in rows)))
            raise RuntimeError("this batch fails once")

    assert "this batch fails once" in failure_of(kq.start_collecting("cap", on_batch=fail_once, subscribe=topic,
                                                                     maxOffsetsPerTrigger="400"))
    query = kq.start_collecting("cap", subscribe=topic, maxOffsetsPerTrigger="400")
    kq.wait_for(all_read(produced), what="the 700 records produced while stopped")
    batches = read_by_batch()
    failed_id, failed_rows = failed[0]
    assert batches[failed_id] == failed_rows and 0 < len(failed_rows) <= 400  # run again with its logged ends

    before_startpoint = max(batches)
    for p in range(3):
        kq.startpoints().write(SystemStreamPartition("kafka", topic, p), StartpointOldest())
    kq.wait_for(lambda: {key for b, rows in read_by_batch().items() if b > before_startpoint for key in rows}
                >= produced, what="everything read again from the startpoint")
    query.stop()

    batches = read_by_batch()
    assert max(len(rows) for rows in batches.values()) <= 400
    first_run = [rows for b, rows in batches.items() if b <= before_startpoint]
    keys = [key for rows in first_run for key in rows]
    assert len(keys) == len(set(keys)) and set(keys) == produced
    again = [key for b, rows in batches.items() if b > before_startpoint for key in rows]
    assert len(again) == len(set(again)) and set(again) == produced


def test_available_now_reads_only_the_backlog_present_at_its_start(kq):
    topic = create_topic(kq.bootstrap, unique_topic("an"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(300)])
    late = []

    def produce_more(batch_id, rows):
        if batch_id == 0:
            late.extend(produce(kq.bootstrap, topic, [(b"k", b"late") for _ in range(50)]))

    query = kq.start_collecting("an", trigger={"availableNow": True}, on_batch=produce_more, subscribe=topic,
                                maxOffsetsPerTrigger="100")
    assert query.awaitTermination(scaled(240))
    values = [_bytes(r.value) for r in kq.collected("an")]
    assert len(late) == 50 and b"late" not in values
    assert len(values) == (300 if BOUNDED_AVAILABLE_NOW else 100)  # 4.0 / 4.1: one batch, bounded by the limit


def test_committed_positions_are_mirrored_to_the_store_and_the_consumer_group(kq):
    from spark_samza_source.core.checkpoint import CheckpointMirror
    from spark_samza_source.kafka.driver.admin import KafkaAdmin
    from spark_samza_source.metadata import open_store

    topic = create_topic(kq.bootstrap, unique_topic("mirror"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode(), None, i % 2) for i in range(40)])
    kq.run_available_now_parquet("mirror", subscribe=topic)
    # Spark commits a batch to the source one batch late: run 1's last batch when run 2 plans its first.
    produce(kq.bootstrap, topic, [(b"k", b"late", None, p) for p in range(2)])
    kq.run_available_now_parquet("mirror", subscribe=topic)
    checkpoint = CheckpointMirror(open_store(kq.store_uri, kq.job)).read()
    assert checkpoint is not None
    positions = {(str(task), ssp.partition): pos for task, ssps in checkpoint.positions.items()
                 for ssp, pos in ssps.items()}
    assert positions == {("Partition 0", 0): 20, ("Partition 1", 1): 20}
    with KafkaAdmin({"bootstrap.servers": kq.bootstrap}) as admin:
        group = admin.group_offsets(f"samza-{kq.job}", [(topic, 0), (topic, 1)])
    assert group == {(topic, 0): 20, (topic, 1): 20}


def test_available_now_with_sparks_wrapper_setting(kq):
    """Backs docs/deployment.md, Compatibility: with spark.sql.streaming.triggerAvailableNowWrapper.enabled=true,
    PySpark 4.0 / 4.1 ask the source for its latest offset before saying where the checkpoint stands; a new
    checkpoint reads one batch, and a restart from it fails naming the setting, having read nothing. 4.2+ never
    wraps the source (it supports Trigger.AvailableNow itself): the restart reads on."""
    wrapper = "spark.sql.streaming.triggerAvailableNowWrapper.enabled"
    topic = create_topic(kq.bootstrap, unique_topic("wrap"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(40)])
    kq.spark.conf.set(wrapper, "true")
    try:
        first = kq.start_collecting("wrap", trigger={"availableNow": True}, subscribe=topic)
        assert first.awaitTermination(scaled(120)) and first.exception() is None
        assert len(kq.collected("wrap")) == 40
        produce(kq.bootstrap, topic, [(b"k", b"more") for _ in range(10)])
        again = kq.start_collecting("wrap", trigger={"availableNow": True}, subscribe=topic)
        if BOUNDED_AVAILABLE_NOW:
            assert again.awaitTermination(scaled(120)) and again.exception() is None
            assert len(kq.collected("wrap")) == 50
        else:
            failure = failure_of(again)
            assert wrapper in failure and "samza-kafka planned the first batch of this run" in failure
            assert len(kq.collected("wrap")) == 40
    finally:
        kq.spark.conf.unset(wrapper)
