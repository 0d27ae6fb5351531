"""Offsets behind latest from streaming progress (``spark_samza_source.ops.metrics``) and the SamzaLagListener.

The pure computation on fabricated progress (both shapes PySpark hands out: ``SourceProgress`` with JSON strings
and the parsed JSON dict), then a live samza-kafka query whose listener figures must equal the broker's high
watermarks minus the batch end positions in Spark's offset log.
"""

from __future__ import annotations

import json
import logging

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql.streaming.listener import QueryProgressEvent, SourceProgress, StreamingQueryProgress

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.ops.metrics import SamzaLagListener, lag_from_progress, source_lag


def S(topic: str, p: int) -> SystemStreamPartition:
    return SystemStreamPartition("kafka", topic, p)


def end_offset() -> KafkaOffset:
    t0, t1 = TaskName("Partition 0"), TaskName("Partition 1")
    model = JobModel({t0: {S("orders", 0), S("conf", 0)}, t1: {S("orders", 1), S("conf", 0)}},
                     broadcast=frozenset({S("conf", 0)}))
    return KafkaOffset(model, {(t0, S("orders", 0)): 40, (t1, S("orders", 1)): 55,
                             (t0, S("conf", 0)): 7, (t1, S("conf", 0)): 3})


QUERY_ID = "3f0c6a8e-1d2b-4c5d-8e9f-0a1b2c3d4e5f"
LATEST = {"kafka.orders.0": 100, "kafka.orders.1": 55, "kafka.conf.0": 9}


def progress_json(latest=LATEST, end=None, extra_sources=()) -> dict:
    source = {"description": "PythonMicroBatchStream@1", "startOffset": None,
              "endOffset": (end or end_offset()).to_json(), "latestOffset": latest, "numInputRows": 10,
              "inputRowsPerSecond": 1.0, "processedRowsPerSecond": 2.0, "metrics": {}}
    return {"id": QUERY_ID, "runId": "5d3b7a0e-8f65-4c55-9d6a-0e4f4b1f2a10", "name": "orders_etl",
            "timestamp": "2024-01-01T00:00:00.000Z", "batchId": 12, "batchDuration": 250, "stateOperators": [],
            "sources": [*extra_sources, source], "sink": {"description": "ForeachBatchSink", "numOutputRows": -1}}


def test_offsets_behind_latest_per_ssp_with_broadcast_min():
    [lag] = lag_from_progress(progress_json())
    assert dict(lag.behind) == {"kafka.conf.0": 6, "kafka.orders.0": 60, "kafka.orders.1": 0}  # conf: 9 - min(7, 3)
    assert (lag.min_offsets_behind_latest, lag.max_offsets_behind_latest) == (0, 60)
    assert lag.avg_offsets_behind_latest == pytest.approx(22.0)
    assert lag.metrics() == {"avgOffsetsBehindLatest": "22.0", "maxOffsetsBehindLatest": "60",
                             "minOffsetsBehindLatest": "0"}
    assert (lag.batch_id, lag.query_name, lag.query_id, lag.source_index) == (12, "orders_etl", QUERY_ID, 0)


def test_every_progress_shape_gives_the_same_figures_and_other_sources_are_skipped():
    kinesis_like = {"description": "x", "startOffset": None, "endOffset": {"batch": 3, "shards": {}},
                    "latestOffset": None, "numInputRows": 0, "inputRowsPerSecond": 0.0,
                    "processedRowsPerSecond": 0.0}
    raw = progress_json(extra_sources=[kinesis_like])
    as_object = StreamingQueryProgress.fromJson(raw)  # what event.progress / query.lastProgress are
    assert isinstance(as_object.sources[1], SourceProgress) and isinstance(as_object.sources[1].endOffset, str)
    figures = [lag_from_progress(p) for p in (raw, as_object, json.dumps(raw))]
    assert all(len(f) == 1 and f[0].source_index == 1 for f in figures)
    assert figures[0][0].behind == figures[1][0].behind == figures[2][0].behind
    assert lag_from_progress(None) == []
    assert source_lag(kinesis_like) is None  # no latestOffset reported
    assert source_lag({"latestOffset": LATEST, "endOffset": {"jobModel": {}, "positions": 3}}) is None  # not ours


def test_behind_is_never_negative_and_unknown_ssps_are_left_out():
    [lag] = lag_from_progress(progress_json(latest={"kafka.orders.0": 10, "kafka.other.0": 5}))
    assert dict(lag.behind) == {"kafka.orders.0": 0}


def test_listener_keeps_and_logs_figures(caplog):
    listener = SamzaLagListener()
    event = QueryProgressEvent.fromJson({"progress": progress_json()})
    with caplog.at_level(logging.INFO, logger="spark_samza_source.ops.metrics"):
        listener.onQueryProgress(event)
    assert listener.last.max_offsets_behind_latest == 60 and listener.errors == 0
    assert listener.last_by_query[QUERY_ID].batch_id == 12 and len(listener.for_batch(12)) == 1
    assert "samza-kafka lag: query orders_etl batch 12 source 0: min 0 avg 22 max 60" in caplog.text
    assert "kafka.orders.0=60" in caplog.text

    other = SamzaLagListener(query_name="someone_else")
    other.onQueryProgress(event)
    assert other.last is None

    broken = SamzaLagListener()
    broken.onQueryProgress(object())  # no .progress: counted, logged, never raised into Spark's listener bus
    assert broken.errors == 1 and broken.last is None


# ---- a live query ----------------------------------------------------------------------------------------------


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[str, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lag-metrics-probe"})
    try:
        return {f"kafka.{topic}.{p}": consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def delivered_ends(batches: list[tuple[int, list]], topic: str, partitions: int) -> dict[int, dict[str, int]]:
    """{batch id: end position per SSP key} from a cursor walk over the rows each batch delivered (from offset 0,
    each batch continuing every partition contiguously): an oracle independent of the source's offset code."""
    cursor = {p: 0 for p in range(partitions)}
    out = {}
    for batch_id, rows in batches:
        got: dict[int, list[int]] = {}
        for r in rows:
            got.setdefault(r.partition, []).append(r.offset)
        for p, offsets in got.items():
            assert sorted(offsets) == list(range(cursor[p], cursor[p] + len(offsets))), f"batch {batch_id} p{p}"
            cursor[p] += len(offsets)
        out[batch_id] = {f"kafka.{topic}.{p}": c for p, c in cursor.items()}
    return out


@pytest.mark.spark
@pytest.mark.slow
def test_listener_figures_match_the_broker_minus_the_batch_ends(kq):
    topic = create_topic(kq.bootstrap, unique_topic("lagm"), 3)
    produce(kq.bootstrap, topic, [(b"k", f"v{i}".encode(), None, i % 3) for i in range(3 * 90)])
    highs = high_watermarks(kq.bootstrap, topic, 3)
    assert set(highs.values()) == {90}

    listener = SamzaLagListener()
    kq.spark.streams.addListener(listener)
    try:
        query = kq.start_collecting("lagm", subscribe=topic, maxOffsetsPerTrigger="45")
        kq.wait_for(lambda: len({f.batch_id for f in listener.history if f.query_id == str(query.id)}) >= 3,
                    timeout=120, what="three progress events")
        query.stop()
        last = query.lastProgress
        # events reach Python listeners asynchronously: wait for the one of the last batch
        kq.wait_for(lambda: listener.for_batch(last.batchId, query.id), timeout=30, what="the last event")
    finally:
        kq.spark.streams.removeListener(listener)

    figures = [f for f in listener.history if f.query_id == str(query.id)]
    assert len(figures) >= 3
    assert any(f.total_offsets_behind_latest > 0 for f in figures)  # the limit kept the query behind
    ends_after = delivered_ends(kq.batches["lagm"], topic, 3)
    for lag in figures:
        ends = ends_after[lag.batch_id]
        expected = {key: highs[key] - ends[key] for key in highs}
        assert dict(lag.behind) == expected, f"batch {lag.batch_id}"
        assert lag.max_offsets_behind_latest == max(expected.values())
        assert lag.min_offsets_behind_latest == min(expected.values())
        assert lag.avg_offsets_behind_latest == pytest.approx(sum(expected.values()) / 3)
    # the listener saw what query.lastProgress says about the same batch
    [on_demand] = lag_from_progress(last)
    assert dict(listener.for_batch(last.batchId, query.id)[-1].behind) == dict(on_demand.behind)
