"""read_ranges and the consumer cache against the Kafka dev broker (or SAMZA_TEST_KAFKA_BOOTSTRAP), each test on
both read paths (the ``read_path`` fixture: Python and native)."""

from __future__ import annotations

import logging
import time

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from samza_devkit.kafka_helpers import produce
from spark_samza_source.kafka.errors import KafkaDataLossError, KafkaSourceError
from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange
from spark_samza_source.kafka.schema import kafka_arrow_schema

TASK = "Partition 7"
MIB = 1024 * 1024


def delete_records_before(bootstrap: str, topic: str, partition: int, offset: int) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})  # must outlive its futures
    for future in client.delete_records([TopicPartition(topic, partition, offset)], request_timeout=30).values():
        future.result(30)


def read(path, bootstrap, ranges, *, cache=None, headers=True, fail=True, conf=None, **kw) -> list[pa.RecordBatch]:
    own = cache is None
    cache = (ConsumerCache.native(2) if path == "native" else ConsumerCache(2)) if own else cache
    try:
        return list(read_ranges({"bootstrap.servers": bootstrap, **(conf or {})}, TASK, ranges,
                                include_headers=headers, fail_on_data_loss=fail, cache=cache, read_path=path,
                                **kw))
    finally:
        if own:
            cache.close_all()


@pytest.fixture
def path(read_path):
    return read_path


@pytest.fixture
def cache(new_reader_cache):
    """A private consumer cache of the path's consumers, closed after the test (idle consumers would outlive the
    broker)."""
    c = new_reader_cache(2)
    yield c
    c.close_all()


def rows(batches) -> list[dict]:
    return pa.Table.from_batches(batches, schema=batches[0].schema).to_pylist() if batches else []


@pytest.fixture
def three(kafka_broker, kafka_topic):
    """A 3-partition topic with headers, null keys/values and a few 1 MiB values; returns (topic, produced)."""
    topic = kafka_topic(3, config={"max.message.bytes": str(4 * MIB)})  # Kafka's default (1 MiB + 12) is too small
    records = []
    for i in range(60):
        key = None if i % 7 == 0 else f"k{i}".encode()
        value = None if i % 11 == 0 else (b"x" * MIB if i in (5, 32) else f"v{i}".encode())
        headers = [("h1", b"a"), ("h2", None)] if i % 4 == 0 else None
        records.append((key, value, headers, i % 3))
    produced = produce(kafka_broker.bootstrap_servers, topic, records)
    # Delivery reports carry no headers: take them from what was sent.
    return topic, [(rec, sent[2]) for rec, sent in zip(produced, records, strict=True)]


def test_exact_rows_across_three_partitions(path, kafka_broker, three):
    topic, produced = three
    by_part = {p: [r for r in produced if r[0].partition == p] for p in range(3)}
    assert [len(v) for v in by_part.values()] == [20, 20, 20]
    ranges = [KafkaRange(topic, 2, 0, 17), KafkaRange(topic, 0, 3, 20), KafkaRange(topic, 1, 5, 6)]
    batches = read(path, kafka_broker.bootstrap_servers, ranges)
    assert all(b.schema.equals(kafka_arrow_schema(True)) for b in batches)
    expected = []
    for r in ranges:  # partitions in range order, offsets ascending, nothing outside [start, end)
        for rec, headers in by_part[r.partition][r.start:r.end]:
            assert rec.offset in range(r.start, r.end)
            expected.append({
                "key": rec.key, "value": rec.value, "topic": topic, "partition": rec.partition,
                "offset": rec.offset, "timestamp_ms": rec.timestamp_ms, "timestampType": 0,
                "headers": [{"key": k, "value": v} for k, v in headers] if headers else None, "task": TASK,
            })
    got = rows(batches)
    for row in got:
        row["timestamp_ms"] = round(row.pop("timestamp").timestamp() * 1000)
    assert got == expected
    assert any(r["key"] is None for r in got) and any(r["value"] is None for r in got)
    assert any(r["value"] is not None and len(r["value"]) == MIB for r in got)


def test_without_headers_column(path, kafka_broker, three):
    topic, _ = three
    batches = read(path, kafka_broker.bootstrap_servers, [KafkaRange(topic, 0, 0, 20)], headers=False)
    assert all(b.schema.equals(kafka_arrow_schema(False)) for b in batches)
    assert sum(b.num_rows for b in batches) == 20 and "headers" not in batches[0].schema.names


def test_empty_ranges_yield_nothing_and_borrow_no_consumer(path, kafka_broker, three, cache):
    topic, _ = three
    assert read(path, kafka_broker.bootstrap_servers, [], cache=cache) == []
    assert read(path, kafka_broker.bootstrap_servers, [KafkaRange(topic, 0, 4, 4), KafkaRange(topic, 1, 20, 20)],
                cache=cache) == []
    assert cache.created == 0


def test_batches_bounded_by_rows_and_bytes_and_deterministic(path, kafka_broker, three):
    topic, _ = three
    ranges = [KafkaRange(topic, 1, 0, 20), KafkaRange(topic, 2, 0, 20)]
    by_rows = read(path, kafka_broker.bootstrap_servers, ranges, max_rows_per_batch=6)
    # One batch per partition per turn, in range order: a fixed interleaving, whatever the fetch timing.
    assert [(b.column("partition")[0].as_py(), b.num_rows) for b in by_rows] == [(1, 6), (2, 6)] * 3 + [(1, 2), (2, 2)]
    assert [b.column("offset")[0].as_py() for b in by_rows] == [0, 0, 6, 6, 12, 12, 18, 18]
    # Partition 2 holds a 1 MiB value at offset 1 (record 5) and 10 (record 32): a batch ends where bytes reach 1 MiB.
    by_bytes = read(path, kafka_broker.bootstrap_servers, [KafkaRange(topic, 2, 0, 20)], max_bytes_per_batch=MIB)
    assert [b.column("offset").to_pylist()[-1] for b in by_bytes] == [1, 10, 19]
    assert all(b.nbytes < 3 * MIB for b in by_bytes)
    again = read(path, kafka_broker.bootstrap_servers, ranges, max_rows_per_batch=6)
    assert [b.to_pylist() for b in again] == [b.to_pylist() for b in by_rows]


def test_range_ending_mid_log_stops_at_end(path, kafka_broker, kafka_topic):
    topic = kafka_topic(1)
    produce(kafka_broker.bootstrap_servers, topic, [(None, b"%d" % i) for i in range(500)])
    got = rows(read(path, kafka_broker.bootstrap_servers, [KafkaRange(topic, 0, 100, 250)], max_rows_per_batch=64))
    assert [r["offset"] for r in got] == list(range(100, 250))


def test_data_loss_fails_with_topic_partition_range_and_option(path, kafka_broker, kafka_topic, cache):
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(2)
    produce(bs, topic, [(None, b"v", None, p) for p in (0, 1) for _ in range(30)])
    delete_records_before(bs, topic, 1, 12)
    with pytest.raises(KafkaDataLossError) as info:
        read(path, bs, [KafkaRange(topic, 0, 0, 30), KafkaRange(topic, 1, 5, 30)], cache=cache)
    msg = str(info.value)
    assert f"{topic}[1]" in msg and "offsets 5..11 (7 records)" in msg and "failOnDataLoss" in msg
    assert len(cache) == 0  # the consumer that raised is closed, not pooled


def test_data_loss_skipped_with_a_warning(path, kafka_broker, kafka_topic, caplog):
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(2)
    produce(bs, topic, [(None, b"v", None, p) for p in (0, 1) for _ in range(30)])
    delete_records_before(bs, topic, 1, 12)
    delete_records_before(bs, topic, 0, 25)
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.kafka.executor.reader"):
        got = rows(read(path, bs, [KafkaRange(topic, 0, 0, 20), KafkaRange(topic, 1, 5, 30)], fail=False))
    # partition 0: the whole range [0, 20) is gone; partition 1 continues from the new log start 12.
    assert [(r["partition"], r["offset"]) for r in got] == [(1, o) for o in range(12, 30)]
    assert f"{topic}[1] offsets 5..11" in caplog.text and f"{topic}[0] offsets 0..19" in caplog.text


def test_consumer_is_reused_and_evicted(path, kafka_broker, three, cache):
    topic, _ = three
    bs = kafka_broker.bootstrap_servers
    cache.set_capacity(1)
    read(path, bs, [KafkaRange(topic, 0, 0, 10)], cache=cache)
    key, first = cache.acquire({"bootstrap.servers": bs})
    assert cache.created == 1 and first.assignment() == []  # handed back unassigned
    cache.release(key, first, healthy=True)
    assert rows(read(path, bs, [KafkaRange(topic, 0, 10, 20)], cache=cache))[-1]["offset"] == 19
    key, again = cache.acquire({"bootstrap.servers": bs})
    assert again is first and cache.created == 1
    cache.release(key, again, healthy=True)
    # A different client configuration gets its own consumer; capacity 1 evicts (closes) the older one.
    read_ranges({"bootstrap.servers": bs, "client.id": "other"}, TASK, [KafkaRange(topic, 1, 0, 5)],
                include_headers=False, fail_on_data_loss=True, cache=cache, read_path=path).__next__()
    assert cache.created == 2 and len(cache) == 1
    with pytest.raises(RuntimeError):
        first.assignment()  # closed


def test_generator_closed_early_returns_the_consumer(path, kafka_broker, three, cache):
    topic, _ = three
    gen = read_ranges({"bootstrap.servers": kafka_broker.bootstrap_servers}, TASK, [KafkaRange(topic, 0, 0, 20)],
                      include_headers=True, fail_on_data_loss=True, max_rows_per_batch=5, cache=cache,
                      read_path=path)
    assert next(gen).num_rows == 5
    gen.close()
    assert len(cache) == 1
    assert sum(b.num_rows for b in read(path, kafka_broker.bootstrap_servers, [KafkaRange(topic, 0, 0, 20)],
                                        cache=cache)) == 20
    assert cache.created == 1


def test_dead_broker_fails_the_read_clearly(path, kafka_broker_fresh, kafka_topic_factory, caplog):
    topic = kafka_topic_factory(kafka_broker_fresh)(1)
    bs = kafka_broker_fresh.bootstrap_servers
    produce(bs, topic, [(None, b"v")] * 10)
    kafka_broker_fresh.stop()
    started = time.monotonic()
    with pytest.raises(KafkaSourceError) as info, caplog.at_level(logging.INFO,
                                                                  logger="spark_samza_source.kafka.executor.consumer_cache"):
        read(path, bs, [KafkaRange(topic, 0, 0, 10)], poll_timeout_ms=2000)
    # bounded-ness is the behaviour (a dead broker fails the read after pollTimeoutMs, 2 s, instead of hanging);
    # 60 s is generous for a loaded machine
    assert time.monotonic() - started < 60
    assert "kafkaConsumer.pollTimeoutMs" in str(info.value) and f"{topic}[0] at offset 0 of [0, 10)" in str(info.value)
    # librdkafka's own complaints reach Python logging on both paths (the native one forwards them from C)
    assert any(r.levelno >= logging.ERROR and "Connect to" in r.getMessage() for r in caplog.records), caplog.text


class CountingConsumer(Consumer):
    """A real consumer that counts pause() calls, to prove the pause/refetch path ran."""

    pauses = 0

    def pause(self, partitions):
        CountingConsumer.pauses += 1
        return super().pause(partitions)


def counting_native_consumer(conf):
    """A real native consumer that counts the reader's pause_range(..., True) calls (a range finishing pauses
    inside C and is not counted)."""
    from spark_samza_source.kafka.executor.native_reader import native_consumer_class
    class Counting(native_consumer_class()):
        def pause_range(self, i, pause):
            CountingConsumer.pauses += bool(pause)
            return super().pause_range(i, pause)

    return Counting(sorted(conf.items()))


def test_pausing_partitions_that_run_ahead_keeps_rows_exact(path, kafka_broker, kafka_topic, new_reader_cache):
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(3)
    produce(bs, topic, [(None, b"%d" % i, None, i % 3) for i in range(45_000)])
    CountingConsumer.pauses = 0
    factory = counting_native_consumer if path == "native" else (
        lambda conf: CountingConsumer({**conf, "logger": logging.getLogger("t")}))
    cache = new_reader_cache(1, factory)
    ranges = [KafkaRange(topic, p, 0, 15_000) for p in range(3)]
    # More than one consume() call's worth: partitions 1 and 2 run ahead of their turn and get paused.
    try:
        batches = read(path, bs, ranges, cache=cache, headers=False, max_rows_per_batch=500,
                       conf={"max.partition.fetch.bytes": "8192"})
    finally:
        cache.close_all()
    # more than the three "partition finished" pauses (Python path; the native path counts only the others)
    assert CountingConsumer.pauses > (3 if path == "python" else 0)
    assert [b.column("partition")[0].as_py() for b in batches] == [0, 1, 2] * 30
    got = rows(batches)
    for p in range(3):
        assert [r["offset"] for r in got if r["partition"] == p] == list(range(15_000))

