"""samza-kafka over compacted topics (``cleanup.policy=compact``), streaming and batch, compacted by Kafka's own log
cleaner (the latest record of each key at its original offset, the active segment never cleaned).  What the
docs/guarantees.md states for them:

- exactly the surviving records, at their offsets; a range that ends inside a gap (or lies wholly in one)
  finishes as soon as a record at or past its end arrives, without waiting out the stall timeout;
- a start inside a gap (``startingOffsets``, ``StartpointSpecific``) reads from the next surviving record, a
  timestamp start from the first surviving record at or after that time;
- gaps are not data loss; records deleted (DeleteRecords, retention) before they were read still are, counted in
  offsets;
- lag and the consumer-group mirror are offsets (the next offset to read, the high watermark), not record counts.

The stall timeout is set far above the query timeouts here, so a reader that waited at a gap fails the test.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.errors import PySparkException

from samza_devkit.compaction_helpers import (
    GAPPED_BASE_TS,
    GAPPED_SURVIVORS,
    compact,
    compacted_partition,
    produce_batches,
)
from samza_devkit.kafka_helpers import delete_records_before
from samza_devkit.waits import scaled
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointSpecific, StartpointTimestamp
from spark_samza_source.ops.metrics import lag_from_progress

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NO_STALL = {"kafkaConsumer.pollTimeoutMs": "600000"}
BASE_TS, SURVIVORS = GAPPED_BASE_TS, GAPPED_SURVIVORS


@pytest.fixture(scope="module")
def compacted(kafka_broker):
    """One compacted partition with gaps at 0..3 and 5, shared by the tests that only read it."""
    return compacted_partition(kafka_broker, "compacted")


def offsets(rows):
    return [r.offset for r in sorted(rows, key=lambda r: r.offset)]


def group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    result = admin.list_consumer_group_offsets([request], request_timeout=30)[group].result(30)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def run_available_now(kq, name: str, **options: str):
    query = kq.start_parquet(name, trigger={"availableNow": True}, **NO_STALL, **options)
    assert query.awaitTermination(scaled(180)), f"{name} did not finish: a reader waiting at a gap?"
    assert query.exception() is None, query.exception()
    return query


def test_streaming_reads_the_survivors_through_ranges_ending_in_gaps_with_offset_lag(kq, compacted):
    """maxOffsetsPerTrigger=3 plans [0,3) (wholly a gap), [3,6) (ends in the gap at 5), [6,9), [9,11)."""
    query = run_available_now(kq, "gaps", subscribe=compacted, maxOffsetsPerTrigger="3")
    rows = kq.sink_rows("gaps")
    assert offsets(rows) == SURVIVORS
    assert {r.offset: (r.key, r.value) for r in rows}[7] == (b"e", None)  # a tombstone is a row with a null value
    assert len(query.recentProgress) == 4  # one batch per planned range
    lags = [lag for p in query.recentProgress for lag in lag_from_progress(p)]
    assert lags[-1].behind == {f"kafka.{compacted}.0": 0}
    # after [0,3): 8 offsets behind, though only 6 records remain to read -- lag counts offsets
    assert lags[0].behind == {f"kafka.{compacted}.0": 8}
    # the mirror holds the end of the last committed range, [6, 9) (Spark commits a batch when the next one
    # starts): an offset, not the 4 records read by then
    assert group_offsets(kq.bootstrap, f"samza-{kq.job}", compacted) == {0: 9}


def test_starts_inside_a_gap_read_from_the_next_surviving_record(kq, compacted):
    run_available_now(kq, "inside", subscribe=compacted, startingOffsets=json.dumps({compacted: {"0": 5}}))
    assert offsets(kq.sink_rows("inside")) == [6, 7, 8, 9, 10]
    kq.startpoints().write(SystemStreamPartition("kafka", compacted, 0), StartpointSpecific("1"))
    run_available_now(kq, "inside", subscribe=compacted)
    assert offsets(kq.sink_rows("inside")) == sorted([6, 7, 8, 9, 10] + SURVIVORS)
    # a timestamp start: the first surviving record at or after it (offset 3, at BASE_TS + 30, was removed)
    kq.startpoints().write(SystemStreamPartition("kafka", compacted, 0), StartpointTimestamp(BASE_TS + 25))
    run_available_now(kq, "inside", subscribe=compacted)
    assert offsets(kq.sink_rows("inside")) == sorted([6, 7, 8, 9, 10] + SURVIVORS * 2)


def test_batch_reads_end_inside_gaps(spark, kafka_broker, compacted):
    def read(**options):
        df = spark.read.format("samza-kafka").options(**{"kafka.bootstrap.servers": kafka_broker.bootstrap_servers,
                                                          "subscribe": compacted, **NO_STALL, **options}).load()
        return offsets(df.collect())

    assert read() == SURVIVORS
    assert read(endingOffsets=json.dumps({compacted: {"0": 5}})) == [4]  # ends in the gap at 5
    assert read(endingOffsets=json.dumps({compacted: {"0": 3}})) == []  # wholly inside the gap 0..3
    assert read(startingOffsets=json.dumps({compacted: {"0": 5}}), endingOffsets=json.dumps({compacted: {"0": 6}})) \
        == []
    assert read(startingTimestamp=str(BASE_TS + 55)) == [6, 7, 8, 9, 10]  # d5, at BASE_TS + 50, was removed


def test_records_deleted_before_they_were_read_are_loss_and_gaps_are_not(kq, kafka_broker):
    topic = compacted_partition(kafka_broker, "compacted-loss", "compact,delete")
    run_available_now(kq, "loss", subscribe=topic)  # failOnDataLoss=true (the default) over the gaps: no loss
    # offsets 11..20; 11 is compacted away (key x again at 12), then DeleteRecords removes 11..15 unread
    produce_batches(kq.bootstrap, topic, [[(b"x", b"11"), (b"x", b"12"), (b"y", b"13")],
                                          [(b"z", b"14"), (b"w", b"15"), (b"v", b"16")],
                                          [(b"u", b"17"), (b"t", b"18"), (b"s", b"19"), (b"r", b"20")]])
    compact(kafka_broker, topic, gone=[11])
    delete_records_before(kq.bootstrap, topic, 0, 16)
    strict = kq.start_parquet("loss", trigger={"availableNow": True}, **NO_STALL, subscribe=topic)
    with pytest.raises(PySparkException, match="failOnDataLoss"):
        strict.awaitTermination(scaled(180))
    lenient = run_available_now(kq, "loss", subscribe=topic, failOnDataLoss="false")
    assert offsets(kq.sink_rows("loss")) == SURVIVORS + [16, 17, 18, 19, 20]
    reported = [json.loads(p["sources"][0]["latestOffset"]) for p in lenient.recentProgress
                if p["sources"][0]["latestOffset"]]
    # offsets 11..15 were lost: 5 offsets, of which 4 held records (11 was a gap) -- loss is counted in offsets
    assert reported and all(r.get("dataLoss") == {f"kafka.{topic}.0": 5} for r in reported), reported
