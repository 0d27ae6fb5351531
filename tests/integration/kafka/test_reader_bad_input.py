"""The executor read under bad input and misuse, each case on both read paths where both have it: librdkafka log
lines cut inside a character, header bytes in the batch cut, a column past Arrow's limit (the limit lowered so a
few KiB reach it), timestamps outside Spark's range, ranges on partitions or topics that do not exist, and the
native consumer object used from two threads or initialised twice."""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from samza_devkit.kafka_helpers import produce
from samza_devkit.raw_header_producer import produce_raw_headers
from spark_samza_source.kafka.errors import KafkaDataLossError, KafkaSourceError
from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache, consumer_config
from spark_samza_source.kafka.executor.native_reader import native_consumer_class
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange

TASK = "Partition 0"
LIBRDKAFKA_LOG = "spark_samza_source.kafka.executor.consumer_cache"  # where both paths put librdkafka's lines
READER_LOG = "spark_samza_source.kafka.executor.reader"


def read(path: str, bootstrap: str, ranges, *, conf=None, headers=True, **settings) -> list[pa.RecordBatch]:
    cache = ConsumerCache.native(1) if path == "native" else ConsumerCache(1)
    try:
        return list(read_ranges({"bootstrap.servers": bootstrap, **(conf or {})}, TASK, ranges,
                                include_headers=headers, fail_on_data_loss=True, cache=cache, read_path=path,
                                **settings))
    finally:
        cache.close_all()


def column(batches, name: str) -> list:
    return [v for b in batches for v in b.column(name).to_pylist()]


# ---- librdkafka's log lines ------------------------------------------------------------------------------------

def test_log_lines_cut_inside_a_character_never_fail_the_read(read_path, kafka_broker, kafka_topic, caplog):
    """librdkafka cuts a client's name (client.id#consumer-n) to 127 bytes: with this client.id inside an 'é'. The
    native path hands the line over with U+FFFD for the cut byte; the Python path (confluent-kafka decodes strictly,
    which failed the consume call and then hung in close()) routes such a consumer's lines to librdkafka's own
    printer, saying so."""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    produce(bs, topic, [(None, b"v")])
    client_id = "é" * 300 + uuid.uuid4().hex  # unique: the Python path warns once per client.id
    with caplog.at_level(logging.DEBUG, logger=LIBRDKAFKA_LOG):
        batches = read(read_path, bs, [KafkaRange(topic, 0, 0, 1)], conf={"client.id": client_id, "debug": "generic"})
    assert column(batches, "value") == [b"v"]
    lines = [r.getMessage() for r in caplog.records if r.name == LIBRDKAFKA_LOG]
    if read_path == "native":
        assert any("é" * 20 + "\ufffd" in line for line in lines), lines[:5]
    else:
        assert any("go to stderr" in line and "kafka.client.id" in line for line in lines), lines[:5]


# ---- batch cuts ----------------------------------------------------------------------------------------------

def test_header_bytes_count_toward_the_batch_cut(read_path, kafka_broker, kafka_topic):
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    produce(bs, topic, [(None, b"v", [("h", b"x" * 1000)]) for _ in range(6)])
    rng = [KafkaRange(topic, 0, 0, 6)]
    with_headers = read(read_path, bs, rng, max_bytes_per_batch=2500)
    assert [b.num_rows for b in with_headers] == [3, 3]  # 1,001 bytes a record: the third reaches 2,500
    without = read(read_path, bs, rng, headers=False, max_bytes_per_batch=2500)
    assert [b.num_rows for b in without] == [6]  # the headers column is not read: 1 byte a record


def test_rows_that_fit_read_whatever_their_header_sizes(read_path, kafka_broker, kafka_topic):
    """No batch takes a column past the Arrow limit (lowered to 4,000 bytes here): records of 3,000 header value
    bytes and 2,500 header key bytes never share a batch, small ones join them, and every row is read."""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    big = [("k" * 2500, b"y" * 3000)]
    records = [(b"%d" % i, b"v", big if i in (1, 2, 5) else [("s", b"z")]) for i in range(7)]
    produce(bs, topic, records)
    batches = read(read_path, bs, [KafkaRange(topic, 0, 0, 7)], max_column_bytes=4000)
    assert column(batches, "key") == [r[0] for r in records]
    assert [b.num_rows for b in batches] == [2, 3, 2]  # a big record starts a batch after a big one
    for b in batches:
        entries = b.column("headers").flatten()
        assert sum(len(k.encode()) for k in entries.field("key").to_pylist()) <= 4000
        assert sum(len(v) for v in entries.field("value").to_pylist() if v is not None) <= 4000


def test_a_record_too_large_for_any_batch_fails_naming_it_and_the_fix(read_path, kafka_broker, kafka_topic):
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    produce(bs, topic, [(None, b"a" * 100), (None, b"b" * 5000), (None, b"c")])
    with pytest.raises(KafkaSourceError) as info:
        read(read_path, bs, [KafkaRange(topic, 0, 0, 3)], max_column_bytes=4000)
    msg = str(info.value)
    assert f"record at offset 1 of {topic}[0]" in msg and "it has 5000 bytes in the value column" in msg, msg
    assert "(4000 bytes, Arrow's 32-bit offsets)" in msg and f"startpoint at offset 2 for {topic}[0]" in msg, msg


# ---- header keys -----------------------------------------------------------------------------------------------

def test_header_keys_are_read_whole_and_as_valid_utf8(read_path, kafka_broker, kafka_topic):
    """Kafka header keys are any bytes. The native path kept them up to a NUL and put invalid UTF-8 in a string
    column; it now keeps them whole with U+FFFD for invalid bytes. confluent-kafka (the Python path) cannot decode an
    invalid key (it raised SystemError): the read fails naming the record and the way out. (It also cuts a key at a
    NUL, which cannot be seen from Python: docs/architecture.md, the native read path.)"""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    records = [(b"whole", [(b"a\x00b", b"1"), (b"\x00", None)]),
               (b"invalid", [(b"\xff\xfeok", None), (b"caf\xc3", b"")]),
               (b"after", [(b"ok", b"2")])]
    produce_raw_headers(bs, topic, 0, records)
    if read_path == "python":
        with pytest.raises(KafkaSourceError) as info:
            read(read_path, bs, [KafkaRange(topic, 0, 1, 3)])
        msg = str(info.value)
        assert f"record at offset 1 of {topic}[0] has a header key that is not valid UTF-8" in msg, msg
        assert "'readPath'" in msg and "'includeHeaders' false" in msg, msg
        return
    batches = read(read_path, bs, [KafkaRange(topic, 0, 0, 3)])
    assert column(batches, "headers") == [
        [{"key": k.decode("utf-8", "replace"), "value": v} for k, v in headers] for _, headers in records]


# ---- timestamps ------------------------------------------------------------------------------------------------

def test_timestamps_outside_sparks_range_are_clamped_and_named(read_path, kafka_broker, kafka_topic, caplog):
    """A CreateTime near 2^62 ms overflowed the conversion to microseconds (signed overflow; read as garbage): it is
    read as the end of Spark's range, with a warning naming the partition and the offset."""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1, config={"message.timestamp.after.max.ms": str(2**63 - 1)})
    produce(bs, topic, [(None, b"now", None, 0, 1_700_000_000_000), (None, b"far", None, 0, 2**62)])
    with caplog.at_level(logging.WARNING, logger=READER_LOG):
        batches = read(read_path, bs, [KafkaRange(topic, 0, 0, 2)])
    stamps = column(batches, "timestamp")
    assert stamps[0] == datetime.fromtimestamp(1_700_000_000, UTC)
    assert stamps[1] == datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"1 record(s) of {topic}[0]" in warnings[0], warnings
    assert "outside Spark's range" in warnings[0] and warnings[0].endswith("offsets 1"), warnings


# ---- ranges on partitions that do not exist --------------------------------------------------------------------

@pytest.mark.parametrize("missing", ["partition", "topic"])
def test_a_range_on_a_partition_that_does_not_exist_fails_saying_so(read_path, missing, kafka_broker, kafka_topic):
    """Not a stall blamed on the network after the poll timeout (two minutes here): an error naming the partition."""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    produce(bs, topic, [(None, b"v")])
    if missing == "partition":
        rng = KafkaRange(topic, 3, 0, 5)
    else:
        rng = KafkaRange(f"no-such-topic-{uuid.uuid4().hex[:8]}", 0, 0, 5)
    with pytest.raises(KafkaDataLossError) as info:
        read(read_path, bs, [KafkaRange(topic, 0, 0, 1), rng], poll_timeout_ms=120_000)
    msg = str(info.value)
    assert f"topic {rng.topic!r} has no partition {rng.partition}" in msg, msg
    assert "reachable" not in msg and "failOnDataLoss" in msg, msg


# ---- the native consumer object --------------------------------------------------------------------------------

def test_the_native_consumer_refuses_a_second_caller_and_a_second_init(kafka_broker, kafka_topic):
    """The consumer cache lends a consumer to one reader; the type is importable, so it refuses what would corrupt
    it: close() while a fetch waits in another thread (it destroyed the queue in use), any call meanwhile, and a
    second __init__ (it leaked the handle)."""
    bs = kafka_broker.bootstrap_servers
    topic = kafka_topic(1)
    conf = sorted(consumer_config({"bootstrap.servers": bs}).items())
    consumer = native_consumer_class()(conf)
    try:
        with pytest.raises(RuntimeError, match="already initialised"):
            consumer.__init__(conf)
        consumer.set_ranges(TASK, False, [(topic, 0, 0, 1)])
        consumer.assign()
        fetched = []
        fetching = threading.Thread(target=lambda: fetched.append(consumer.fetch(1, 60_000)))
        fetching.start()
        refused = None
        for _ in range(10_000):  # until the fetch holds the consumer (waiting for a record)
            try:
                consumer.state(0)
            except RuntimeError as err:
                refused = err
                break
        assert refused is not None and "in use by another call" in str(refused)
        with pytest.raises(RuntimeError, match="in use by another call"):
            consumer.close()
        produce(bs, topic, [(None, b"v")])  # the waiting fetch returns with it
        fetching.join()
        assert fetched and fetched[0][0] == 1
        assert consumer.state(0)[1] == 1  # one record buffered: nothing was torn down under the fetch
    finally:
        consumer.close()
    with pytest.raises(RuntimeError, match="closed"):
        consumer.state(0)
