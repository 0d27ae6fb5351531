"""The native and the Python read paths over the same broker inputs give identical batches: same schema, same
columns, same batch cuts, same data-loss errors and warnings.

The inputs hold the hard cases on purpose: null keys, tombstones (null values), empty values, headers with null
values and records without headers, 1-5 KiB values beside tiny ones (byte cuts), compressed batches (records
before a range start inside one fetched batch), a LogAppendTime topic beside a CreateTime one, records deleted
below a range start (data loss, both failOnDataLoss settings), and partitions added after the first records.
Ranges, row and byte limits, the Arrow column limit (lowered to a few KiB in some scenarios, so batches are cut by
it and a 5 KiB value can be too large for any batch) and the header column are drawn from a seeded random generator;
each read reuses the path's cached consumer, so state left behind by an earlier read would show up as a
difference. (test_reader_fill_property.py holds the Arrow fill equal over generated records.)
"""

from __future__ import annotations

import logging
import random

import pyarrow as pa
import pytest

from samza_devkit.kafka_helpers import add_partitions, create_topic, delete_records_before, produce, unique_topic
from spark_samza_source.kafka.errors import KafkaSourceError
from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache
from spark_samza_source.kafka.executor.read_settings import ARROW_COLUMN_BYTES_MAX
from spark_samza_source.kafka.executor.reader import KafkaReadSettings, read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange

SEED = 2023
SCENARIOS = 14
PER_PARTITION = 60
LOST_BELOW = 15  # records of topic A partition 2 deleted below this offset


def _records(rng: random.Random, partitions: range, count: int) -> list[tuple]:
    out = []
    for i in range(count * len(partitions)):
        key = None if rng.random() < 0.2 else b"k%d" % i
        value = (None if rng.random() < 0.15 else b"" if rng.random() < 0.05
                 else bytes([65 + i % 26]) * (rng.choice((3, 40, 1200, 5000))))
        headers = rng.choice((None, [("a", b"1"), ("n", None)], [("only", b"")], [("x", None)]))
        out.append((key, value, headers, partitions[i % len(partitions)]))
    return out


@pytest.fixture(scope="module")
def inputs(kafka_broker):
    """Topic A (3 partitions, CreateTime, lz4 and plain batches, records deleted below LOST_BELOW on partition 2)
    and topic B (LogAppendTime, 2 partitions grown to 4 after its first records). Returns {(topic, p): count}."""
    bs = kafka_broker.bootstrap_servers
    rng = random.Random(SEED)
    a, b = unique_topic("diff-a"), unique_topic("diff-b")
    create_topic(bs, a, 3)
    create_topic(bs, b, 2, {"message.timestamp.type": "LogAppendTime"})
    half = PER_PARTITION // 2
    produce(bs, a, _records(rng, range(3), half), extra_conf={"compression.type": "lz4", "linger.ms": "50"})
    produce(bs, a, _records(rng, range(3), half))
    produce(bs, b, _records(rng, range(2), half))
    add_partitions(bs, b, 4)
    produce(bs, b, _records(rng, range(4), half))
    delete_records_before(bs, a, 2, LOST_BELOW)
    counts = {(a, p): PER_PARTITION for p in range(3)}
    counts.update({(b, 0): PER_PARTITION, (b, 1): PER_PARTITION, (b, 2): half, (b, 3): half})
    return counts


@pytest.fixture(scope="module")
def caches():
    pools = {"python": ConsumerCache(2), "native": ConsumerCache.native(2)}
    yield pools
    for pool in pools.values():
        pool.close_all()


def _scenario(rng: random.Random, counts: dict, lossy: bool,
              limits: random.Random) -> tuple[list[KafkaRange], KafkaReadSettings]:
    """Random ranges of random partitions; ``lossy``: one of them starts below the deleted records' end. The Arrow
    column limit comes from ``limits`` (a generator of its own: the draws of the other scenarios stay as they
    were)."""
    chosen = rng.sample(sorted(counts), rng.randint(1, len(counts)))
    lost = sorted(counts)[2]  # topic A partition 2
    if lossy and lost not in chosen:
        chosen.insert(rng.randint(0, len(chosen)), lost)
    ranges = []
    for topic, partition in chosen:
        below_loss = lossy and (topic, partition) == lost
        start = rng.randint(0, LOST_BELOW - 1) if below_loss else rng.randint(0, counts[(topic, partition)])
        ranges.append(KafkaRange(topic, partition, start, rng.randint(start, counts[(topic, partition)])))
    fail = rng.random() < (0.5 if lossy else 0.2)
    settings = KafkaReadSettings(include_headers=rng.random() < 0.6, fail_on_data_loss=fail,
                                 max_rows_per_batch=rng.randint(1, 40), max_bytes_per_batch=rng.randint(200, 20_000),
                                 max_column_bytes=limits.choice((ARROW_COLUMN_BYTES_MAX, limits.randint(4000, 12_000))))
    return ranges, settings


def _read(bootstrap: str, path: str, ranges, settings, cache, caplog) -> tuple[list[pa.RecordBatch], str | None, list]:
    caplog.clear()
    batches, error = [], None
    settings = KafkaReadSettings(**{**settings.__dict__, "read_path": path})
    with caplog.at_level(logging.WARNING, logger="spark_samza_source.kafka.executor.reader"):
        try:
            for batch in read_ranges({"bootstrap.servers": bootstrap}, "Partition 3", ranges, settings, cache=cache):
                batches.append(batch)
        except KafkaSourceError as err:
            error = f"{type(err).__name__}: {err}"
    return batches, error, [r.getMessage() for r in caplog.records]


def test_native_and_python_paths_give_identical_batches(kafka_broker, inputs, caches, caplog):
    rng, limits = random.Random(SEED), random.Random(SEED + 1)
    seen_loss = seen_error = seen_cut_by_bytes = seen_column_limit = 0
    for i in range(SCENARIOS):
        ranges, settings = _scenario(rng, inputs, lossy=i % 3 == 0, limits=limits)
        py = _read(kafka_broker.bootstrap_servers, "python", ranges, settings, caches["python"], caplog)
        native = _read(kafka_broker.bootstrap_servers, "native", ranges, settings, caches["native"], caplog)
        what = f"ranges {ranges}, {settings}"
        assert native[1] == py[1], what  # the same error (data loss, failOnDataLoss=true), or none
        assert native[2] == py[2], what  # the same warnings (skipped records)
        if py[1] is not None:  # how many batches came before the error depends on when it arrived, in both paths
            seen_error += 1
            continue
        seen_column_limit += settings.max_column_bytes < ARROW_COLUMN_BYTES_MAX
        assert [b.num_rows for b in native[0]] == [b.num_rows for b in py[0]], what  # the same batch cuts
        for got, want in zip(native[0], py[0], strict=True):
            assert got.schema.equals(want.schema) and got.equals(want), what
        seen_loss += bool(py[2])
        seen_cut_by_bytes += any(b.num_rows < settings.max_rows_per_batch for b in py[0][:-1])
    # the scenarios drawn did cover the cases the test is about
    assert seen_loss and seen_error and seen_cut_by_bytes and seen_column_limit, (
        seen_loss, seen_error, seen_cut_by_bytes, seen_column_limit)
