"""Records removed under a running query by Kafka's retention and by DeleteRecords.

The topic rolls a segment for every produce call (``segment.ms=1``: Kafka rolls by record timestamps) and the
broker checks retention every second. Records written with timestamps 30 and 20 minutes old sit in segments of
their own; once the query has read its first batch, ``retention.ms`` is lowered to 15 minutes and Kafka deletes
those segments, moving the log start past the query's position. DeleteRecords moves another partition's log start
at once. A removal of records the query has already read is no loss.

Backs docs/guarantees.md: "Records gone before they were read stop the query naming the partition and range
(failOnDataLoss=true), or are skipped and counted (false)".
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from samza_devkit.kafka_helpers import TIMEOUT_S, create_topic, delete_records_before, produce, unique_topic
from samza_devkit.query_harness import failure_of
from samza_devkit.waits import deadline_after

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MINUTE_MS = 60_000


def produce_at(bootstrap: str, topic: str, partition: int, offsets: range, age_ms: int = 0) -> None:
    """Records whose values are their offsets, written ``age_ms`` ago (CreateTime), in one produce call."""
    at = int(time.time() * 1000) - age_ms
    acks = produce(bootstrap, topic, [(b"k", b"%d" % o, None, partition, at) for o in offsets])
    assert [a.offset for a in acks] == list(offsets)


def set_retention(bootstrap: str, topic: str, retention_ms: int) -> None:
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", str(retention_ms), incremental_operation=AlterConfigOpType.SET)])
    client = AdminClient({"bootstrap.servers": bootstrap})
    client.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)


def wait_for_log_starts(bootstrap: str, topic: str, wanted: dict[int, int], timeout: float = 60) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "log-start-probe"})
    try:
        deadline = deadline_after(timeout)
        while True:
            starts = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S, cached=False)[0]
                      for p in wanted}
            if starts == wanted:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"log starts of {topic} are {starts}, not {wanted}, after {timeout:.0f} s")
            time.sleep(0.2)
    finally:
        consumer.close()


def start_with_removal(kq, name: str, topic: str, remove, **options: str):
    """A query over ``topic`` that, after its first batch (every record written so far), calls ``remove()`` before
    the next batch is planned."""
    removed: list[int] = []

    def after_batch(batch_id: int, rows: list) -> None:
        if rows and not removed:
            remove()
            removed.append(batch_id)

    return kq.start_collecting(name, subscribe=topic, on_batch=after_batch, **options)


def read(kq, name: str) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in kq.collected(name))


def test_records_removed_by_retention_fail_the_query_naming_the_partition_and_range(kq):
    topic = create_topic(kq.bootstrap, unique_topic("retained"), 2, {"segment.ms": "1"})
    produce_at(kq.bootstrap, topic, 0, range(0, 10))
    produce_at(kq.bootstrap, topic, 1, range(0, 10), age_ms=30 * MINUTE_MS)

    def remove() -> None:
        produce_at(kq.bootstrap, topic, 0, range(10, 30))
        produce_at(kq.bootstrap, topic, 1, range(10, 20), age_ms=20 * MINUTE_MS)
        produce_at(kq.bootstrap, topic, 1, range(20, 30))
        delete_records_before(kq.bootstrap, topic, 0, 10)  # records the query has read: no loss
        set_retention(kq.bootstrap, topic, 15 * MINUTE_MS)  # the segments of 1[0..19]
        wait_for_log_starts(kq.bootstrap, topic, {0: 10, 1: 20})

    message = failure_of(start_with_removal(kq, "strict", topic, remove))
    assert f"SystemStreamPartition [kafka, {topic}, 1]" in message and "offsets 10..19" in message, message
    assert f"SystemStreamPartition [kafka, {topic}, 0]" not in message, message
    assert "failOnDataLoss=false" in message
    assert read(kq, "strict") == [(p, o) for p in (0, 1) for o in range(10)]


def test_records_removed_by_retention_and_delete_records_are_counted_and_skipped(kq):
    topic = create_topic(kq.bootstrap, unique_topic("retained"), 2, {"segment.ms": "1"})
    produce_at(kq.bootstrap, topic, 0, range(0, 10), age_ms=30 * MINUTE_MS)
    produce_at(kq.bootstrap, topic, 1, range(0, 10))

    def remove() -> None:
        produce_at(kq.bootstrap, topic, 0, range(10, 20), age_ms=20 * MINUTE_MS)
        produce_at(kq.bootstrap, topic, 0, range(20, 30))
        produce_at(kq.bootstrap, topic, 1, range(10, 30))
        set_retention(kq.bootstrap, topic, 15 * MINUTE_MS)  # the segments of 0[0..19]
        delete_records_before(kq.bootstrap, topic, 1, 25)
        wait_for_log_starts(kq.bootstrap, topic, {0: 20, 1: 25})

    query = start_with_removal(kq, "lenient", topic, remove, failOnDataLoss="false")
    wanted = [(0, o) for o in [*range(10), *range(20, 30)]] + [(1, o) for o in [*range(10), *range(25, 30)]]
    kq.wait_for(lambda: len(kq.collected("lenient")) >= len(wanted), what="the records left after the removal")
    query.processAllAvailable()
    query.stop()
    assert query.exception() is None
    assert read(kq, "lenient") == wanted  # exactly once: nothing read twice, nothing left behind
    reported = [json.loads(p["sources"][0]["latestOffset"]) for p in query.recentProgress
                if p["batchId"] >= 1 and p["sources"][0]["latestOffset"]]
    # only the records not yet read count: 0[10..19] and 1[10..24]
    assert reported and all(r.get("dataLoss") == {f"kafka.{topic}.0": 10, f"kafka.{topic}.1": 15}
                            for r in reported), reported
