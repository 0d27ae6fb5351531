"""Compaction as only Kafka's own log cleaner does it, on both executor read paths: what a pass keeps depends on
which segments it may clean, a tombstone outlives the pass that first sees it and goes in a later pass once
``delete.retention.ms`` has passed, and that leaves a record batch whose last record was cleaned (Kafka keeps the
batch's last offset, so a consumer's position jumps over the gap).

One partition, the first four batches of ``GAPPED_BATCHES`` (offsets 0..9, each a segment of its own) and then its
last batch, at offset 10:

- the first pass cleans the segments before the active one (offsets 0..7) with an offset map built from them
  alone: 0..2 go; a3 and d5 stay although a8 and d9 supersede them (those are in the active segment, which the
  cleaner neither cleans nor reads); the tombstone e at 7 stays and gets its delete horizon;
- the batch at 10 closes the segment of 8..9, the log is dirty again, and the next pass removes 3, 5 and the
  tombstone (``delete.retention.ms=0``: its horizon was the first pass). The batch of offsets 5..7 now holds only 6.

The stall timeout is far longer than the tests wait: a reader that waited for a record at a cleaned offset hangs
and fails the test on its own wait.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from samza_devkit.compaction_helpers import CLEANER_NOW, GAPPED_BATCHES, compact, consume_partition, produce_batches
from samza_devkit.kafka_helpers import create_topic, unique_topic
from samza_devkit.query_harness import await_available_now
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange

NO_STALL_MS = 600_000
TOMBSTONE = 7
AFTER_SECOND_PASS = [4, 6, 8, 9, 10]


@pytest.fixture(scope="module")
def cleaned_twice(kafka_broker) -> str:
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("cleaner"), 1, {**CLEANER_NOW, "delete.retention.ms": "0"})
    produce_batches(bootstrap, topic, GAPPED_BATCHES[:-1])
    compact(kafka_broker, topic, gone=[0, 1, 2])
    rows, _ = consume_partition(bootstrap, topic, 0, 0)
    # no pass runs again until the log is dirty again: this state holds until the next batch
    assert [(o, v) for o, _, v in rows] == [(3, b"a3"), (4, b"b4"), (5, b"d5"), (6, b"c6"), (TOMBSTONE, None),
                                            (8, b"a8"), (9, b"d9")]
    produce_batches(bootstrap, topic, GAPPED_BATCHES[-1:])  # f at 10
    compact(kafka_broker, topic, gone=[3, 5, TOMBSTONE])
    rows, end = consume_partition(bootstrap, topic, 0, 0)
    assert [o for o, _, _ in rows] == AFTER_SECOND_PASS and end == 11
    return topic


@pytest.fixture
def cache(new_reader_cache):
    c = new_reader_cache(2)
    yield c
    c.close_all()


@pytest.mark.parametrize(("start", "end", "expected"), [
    (0, 11, AFTER_SECOND_PASS),
    (5, 8, [6]),    # ends on the cleaned last record of the batch 5..7
    (7, 8, []),     # wholly that cleaned record
    (6, 7, [6]),
    (7, 9, [8]),    # starts on it
])
def test_ranges_around_a_batch_whose_last_record_was_cleaned(kafka_broker, cleaned_twice, cache, start, end,
                                                             expected):
    batches = list(read_ranges({"bootstrap.servers": kafka_broker.bootstrap_servers}, "Partition 0",
                               [KafkaRange(cleaned_twice, 0, start, end)], include_headers=False,
                               fail_on_data_loss=True, poll_timeout_ms=NO_STALL_MS, cache=cache))
    table = pa.Table.from_batches(batches) if batches else None
    assert (table.column("offset").to_pylist() if table else []) == expected
    if table is not None:
        assert None not in table.column("value").to_pylist()  # the tombstone is gone, not read


@pytest.mark.spark
def test_streaming_ranges_ending_in_cleaned_offsets_finish(kq, cleaned_twice, read_path):
    """maxOffsetsPerTrigger=2 plans [0,2) [2,4) (wholly gaps), [4,6) (ends in the gap at 5), [6,8) (ends on the
    cleaned tombstone), [8,10), [10,11)."""
    name = f"cleaned-{read_path}"
    query = kq.start_parquet(name, trigger={"availableNow": True}, subscribe=cleaned_twice, readPath=read_path,
                             maxOffsetsPerTrigger="2", **{"kafkaConsumer.pollTimeoutMs": str(NO_STALL_MS)})
    await_available_now(query, name, 180)
    rows = sorted(kq.sink_rows(name), key=lambda r: r.offset)
    assert [(r.offset, r.value) for r in rows] == [(4, b"b4"), (6, b"c6"), (8, b"a8"), (9, b"d9"), (10, b"f10")]
    assert len(query.recentProgress) == 6  # one batch per planned range, none waiting at a gap
