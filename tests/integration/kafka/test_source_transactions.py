"""samza-kafka over transactional topics: commit and abort markers, aborted records, open transactions and
producers that die inside one, written by confluent-kafka's transactional producer into Apache Kafka.

Backs docs/guarantees.md, "Transactional topics": at ``read_uncommitted`` (the default) aborted records are read,
markers never come back as rows and a range ending on markers finishes at once; at ``read_committed`` no aborted
record is returned and the planned end never passes the last stable offset, so an open transaction holds only its
partition (other partitions go on), until it commits, aborts or times out.

The stall timeout (``kafkaConsumer.pollTimeoutMs``) of the streaming queries is ten minutes and the tests wait far
less: a reader that waited for a record at the end of a range (there is none, only a marker) would hang, not fail
with a stall error, and the test would fail on its own wait. Batch reads, which have no wait of their own, get one
minute: such a reader fails them with its stall error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from samza_devkit.kafka_helpers import (
    TIMEOUT_S,
    add_partitions,
    create_topic,
    produce,
    produce_in_transaction,
    stable_offsets,
    transactional_producer,
    unique_topic,
)
from spark_samza_source.core.model import parse_ssp_key

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(240)]

NO_STALL = {"kafkaConsumer.pollTimeoutMs": "600000"}
# batch reads have no wait of their own to fail on: a reader waiting for a record that never comes fails them with
# its stall error after a minute instead (none is due: they finish in about a second)
STALL_FAILS_BATCH = {"kafkaConsumer.pollTimeoutMs": "60000"}
COMMITTED = {"kafka.isolation.level": "read_committed"}
LONG_TXN_MS = 600_000


@pytest.fixture(scope="module")
def marked(kafka_broker) -> str:
    """A topic whose partitions end on markers.

    Partition 0: c0 c1 c2 (0-2) COMMIT (3) x0 x1 (4-5, aborted) ABORT (6); high watermark 7.
    Partition 1: y0 (0, committed) z0 (1, aborted) COMMIT (2) ABORT (3), two transactions interleaved, so the
    partition ends on a run of two markers; high watermark 4.
    """
    bs = kafka_broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("marked"), 2)
    one, two = transactional_producer(bs), transactional_producer(bs)
    assert produce_in_transaction(one, topic, [(None, b"c%d" % i, 0) for i in range(3)]) == [0, 1, 2]
    assert produce_in_transaction(one, topic, [(None, b"x%d" % i, 0) for i in range(2)], end="abort") == [4, 5]
    assert produce_in_transaction(one, topic, [(None, b"y0", 1)], end="open") == [0]
    assert produce_in_transaction(two, topic, [(None, b"z0", 1)], end="open") == [1]
    one.commit_transaction(TIMEOUT_S)
    two.abort_transaction(TIMEOUT_S)
    assert stable_offsets(bs, topic, 2) == [(7, 7), (4, 4)]
    return topic


UNCOMMITTED_ROWS = [(0, 0, b"c0"), (0, 1, b"c1"), (0, 2, b"c2"), (0, 4, b"x0"), (0, 5, b"x1"), (1, 0, b"y0"),
                    (1, 1, b"z0")]
COMMITTED_ROWS = [(0, 0, b"c0"), (0, 1, b"c1"), (0, 2, b"c2"), (1, 0, b"y0")]


def rows_of(rows) -> list[tuple]:
    return sorted((r.partition, r.offset, r.value) for r in rows)


def test_streaming_ranges_ending_on_markers_finish_at_both_isolation_levels(kq, marked):
    kq.run_available_now_parquet("uncommitted", subscribe=marked, **NO_STALL)
    assert rows_of(kq.sink_rows("uncommitted")) == UNCOMMITTED_ROWS  # aborted read, markers never rows
    kq.run_available_now_parquet("committed", subscribe=marked, **NO_STALL, **COMMITTED,
                                 **{"job.name": kq.job + "-committed"})
    assert rows_of(kq.sink_rows("committed")) == COMMITTED_ROWS


def test_a_start_on_a_marker_is_no_data_loss(kq, marked):
    # failOnDataLoss is on (the default): the offsets of markers hold no record, and that is no loss
    start = json.dumps({marked: {"0": 3, "1": 2}})
    kq.run_available_now_parquet("from-marker", subscribe=marked, startingOffsets=start, **NO_STALL)
    assert rows_of(kq.sink_rows("from-marker")) == [(0, 4, b"x0"), (0, 5, b"x1")]


@pytest.mark.parametrize(("isolation", "ends", "expected"), [
    ("read_uncommitted", {"0": 4, "1": 3}, [(0, 0, b"c0"), (0, 1, b"c1"), (0, 2, b"c2"), (1, 0, b"y0"),
                                            (1, 1, b"z0")]),
    ("read_uncommitted", {"0": 7, "1": 4}, UNCOMMITTED_ROWS),
    ("read_committed", {"0": 6, "1": 3}, COMMITTED_ROWS),  # ends inside aborted records / on a marker
    ("read_committed", {"0": -1, "1": -1}, COMMITTED_ROWS),  # latest: the last stable offset
])
def test_batch_reads_ending_at_markers(spark, kafka_broker, marked, isolation, ends, expected):
    df = (spark.read.format("samza-kafka")
          .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers).option("subscribe", marked)
          .option("kafka.isolation.level", isolation).options(**STALL_FAILS_BATCH)
          .option("endingOffsets", json.dumps({marked: ends})).load())
    assert rows_of(df.collect()) == expected


def planned_ends(kq, name: str, topic: str, partition: int) -> list[int]:
    """The end offset the query planned for ``topic``/``partition`` in each batch of its checkpoint."""
    ends = []
    folder = Path(kq.checkpoint(name)) / "offsets"
    for path in sorted((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        ends.append(_offset_of(json.loads(path.read_text().splitlines()[-1]), topic, partition))
    return ends


def _offset_of(offset_json: dict, topic: str, partition: int) -> int:
    found = [pos for positions in offset_json["positions"].values() for key, pos in positions.items()
             if parse_ssp_key(key).stream == topic and parse_ssp_key(key).partition == partition]
    assert found, f"{topic}[{partition}] not in {offset_json['positions']}"
    return min(found)


def test_read_committed_is_held_by_an_open_transaction_only_in_its_partition(kq, kafka_broker):
    bs = kafka_broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("held"), 2)
    writer = transactional_producer(bs)
    produce_in_transaction(writer, topic, [(None, b"c0", 0), (None, b"d0", 1)])  # p0: 0, C1; p1: 0, C1
    produce_in_transaction(writer, topic, [(None, b"x0", 0)], end="abort")  # p0: 2, A3
    # a transaction the broker must not time out while the test runs (librdkafka's default timeout is one minute)
    holder = transactional_producer(bs, transaction_timeout_ms=LONG_TXN_MS)
    produce_in_transaction(holder, topic, [(None, b"h0", 0)], end="open")  # p0: 4, open: LSO 4
    query = kq.start_collecting("held", subscribe=topic, **COMMITTED, **NO_STALL)
    values = lambda: {r.value for r in kq.collected("held")}  # noqa: E731
    kq.wait_for(lambda: {b"c0", b"d0"} <= values(), what="the committed records")

    for round_ in range(3):  # partition 1 goes on while partition 0 is held
        produce(bs, topic, [(None, b"p1-%d" % round_, None, 1)])
        kq.wait_for(lambda r=round_: b"p1-%d" % r in values(), what=f"partition 1 round {round_}")
    assert b"h0" not in values() and b"x0" not in values()
    assert max(planned_ends(kq, "held", topic, 0)) == 4  # never past the last stable offset

    dying = transactional_producer(bs, transaction_timeout_ms=1000)
    produce_in_transaction(dying, topic, [(None, b"dead", 0)], end="open")  # p0: 5, never ended
    holder.commit_transaction(TIMEOUT_S)  # p0: C6; the LSO moves to 5 (the dying producer's transaction)
    kq.wait_for(lambda: b"h0" in values(), what="the committed transaction to be released")
    # the broker aborts the silent producer (its transaction timeout) and the query goes on past it
    produce_in_transaction(writer, topic, [(None, b"after", 0)])
    kq.wait_for(lambda: b"after" in values(), timeout=60, what="the records after the timed-out transaction")
    assert query.isActive and query.exception() is None
    query.stop()
    rows = [(r.partition, r.value) for r in kq.collected("held")]
    assert sorted(rows) == sorted([(0, b"c0"), (0, b"h0"), (0, b"after"), (1, b"d0"), (1, b"p1-0"),
                                   (1, b"p1-1"), (1, b"p1-2")])  # exactly once, no aborted record


KEYS = [f"key-{i}".encode() for i in range(12)]


def keyed_transaction(producer, topic: str, seq: int, end: str = "commit") -> None:
    produce_in_transaction(producer, topic, [(k, b"%s:%d" % (k, seq)) for k in KEYS], end=end)


def sink_rows_by_batch(kq, name: str) -> list[tuple[int, int, int, bytes, bytes]]:
    """(batch id, partition, offset, key, value) of every row the file sink committed, from its metadata log."""
    meta = Path(kq.sink_path(name)) / "_spark_metadata"
    out = []
    for log in sorted((p for p in meta.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        for line in log.read_text().splitlines()[1:]:
            path = json.loads(line)["path"].removeprefix("file://")
            for r in pq.read_table(path, columns=["partition", "offset", "key", "value"]).to_pylist():
                out.append((int(log.name), r["partition"], r["offset"], r["key"], r["value"]))
    return out


def test_exactly_once_into_parquet_and_per_key_order_across_growth_read_committed(kq, kafka_broker):
    bs = kafka_broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("grow-txn"), 2)
    producer = transactional_producer(bs)
    keyed_transaction(producer, topic, 0)
    keyed_transaction(producer, topic, -1, end="abort")
    keyed_transaction(producer, topic, 1)
    options = {**COMMITTED, **NO_STALL, "maxOffsetsPerTrigger": "20"}
    first = kq.start_parquet("grow-txn", subscribe=topic, **options)
    kq.wait_for(lambda: (Path(kq.sink_path("grow-txn")) / "_spark_metadata" / "0").exists(), what="the first batch")
    first.stop()

    add_partitions(bs, topic, 4)
    producer = transactional_producer(bs)  # a producer that knows the 4 partitions (no stale metadata)
    keyed_transaction(producer, topic, 2)
    keyed_transaction(producer, topic, -1, end="abort")
    keyed_transaction(producer, topic, 3)
    kq.run_available_now_parquet("grow-txn", subscribe=topic, **options)

    rows = sink_rows_by_batch(kq, "grow-txn")
    values = sorted(v for _b, _p, _o, _k, v in rows)
    assert values == sorted(b"%s:%d" % (k, s) for k in KEYS for s in range(4))  # exactly once, none aborted
    assert {p for _b, p, _o, _k, _v in rows} == {0, 1, 2, 3}
    moved = {k for k in KEYS if len({p for _b, p, _o, kk, _v in rows if kk == k}) > 1}
    assert moved, "no key changed partition: the order check proves nothing"
    for key in KEYS:
        by_batch: dict[int, set[int]] = {}
        for b, p, _o, k, _v in rows:
            if k == key:
                by_batch.setdefault(b, set()).add(p)
        assert all(len(p) == 1 for p in by_batch.values()), f"{key!r} read from two partitions in one batch"
        ordered = [int(v.rsplit(b":", 1)[1]) for _b, _p, _o, k, v in sorted(rows, key=lambda r: (r[0], r[2]))
                   if k == key]
        assert ordered == [0, 1, 2, 3], f"{key!r} out of produce order: {ordered}"


def test_batch_reads_under_read_committed_never_plan_past_an_open_transaction(spark, kafka_broker):
    bs = kafka_broker.bootstrap_servers
    topic = create_topic(bs, unique_topic("open-batch"), 1)
    produce_in_transaction(transactional_producer(bs), topic, [(None, b"c0", 0)])  # 0, COMMIT 1
    holder = transactional_producer(bs, transaction_timeout_ms=LONG_TXN_MS)
    produce_in_transaction(holder, topic, [(None, b"h0", 0)], end="open")  # 2: last stable offset 2

    def read(isolation: str, ends: str | None = None):
        reader = (spark.read.format("samza-kafka").option("kafka.bootstrap.servers", bs)
                  .option("subscribe", topic).option("kafka.isolation.level", isolation)
                  .options(**STALL_FAILS_BATCH))
        if ends is not None:
            reader = reader.option("endingOffsets", json.dumps({topic: {"0": ends}}))
        return rows_of(reader.load().collect())

    assert read("read_committed") == [(0, 0, b"c0")]  # latest: the last stable offset
    assert read("read_uncommitted") == [(0, 0, b"c0"), (0, 2, b"h0")]
    with pytest.raises(Exception) as err:  # an explicit end past it is refused when planned, not waited for
        read("read_committed", 3)
    assert "endingOffsets" in str(err.value) and "offset 3 (log end 2)" in str(err.value)
    holder.commit_transaction(TIMEOUT_S)
    assert read("read_committed", 3) == [(0, 0, b"c0"), (0, 2, b"h0")]
