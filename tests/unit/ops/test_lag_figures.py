"""Lag figures from fabricated progress (``ops.metrics``), per partition, SSP and task, for both systems; and the
driver's Kinesis progress entries (``kinesis.progress``).

samza-kinesis: a job model where one SSP slot holds two shards (a split with no free slot) and a drained shard
still reported: per SSP and per task the most-behind shard counts, the drained one has no place.
samza-kafka: per task, the sum over its SSPs at the task's own position (a broadcast SSP differs per task).
"""

from __future__ import annotations

import json

import pytest

from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kinesis.driver.planner import initial_offset, plan_next
from spark_samza_source.kinesis.driver.progress import millis_behind_report
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.ops.metrics import SamzaLagListener, lag_from_progress, source_lag

H = 2**128
QUERY_ID = "3f0c6a8e-1d2b-4c5d-8e9f-0a1b2c3d4e5f"
RUN_ID = "5d3b7a0e-8f65-4c55-9d6a-0e4f4b1f2a10"


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


def shard(n, lo, hi, parents=(), closed=False) -> ShardInfo:
    return ShardInfo(sid(n), tuple(sid(p) for p in parents), int(lo), int(hi) - 1, str(1000 * n),
                     str(1000 * n + 999) if closed else None)


def close(info: ShardInfo) -> ShardInfo:
    return ShardInfo(info.shard_id, info.parent_ids, info.hash_start, info.hash_end, info.starting_sequence,
                     str(int(info.starting_sequence) + 999))


def overloaded_offset():
    """Task-0: shard 0 split into 3 and 2, then 2 into 7 and 6 with no free slot: slot 1 holds 3 and 6; shard 0
    and shard 2 drained. Task-1: shard 1 in slot 2."""
    s0, s1 = shard(0, 0, H // 2), shard(1, H // 2, H)
    s3, s2 = shard(3, 0, H // 4, [0]), shard(2, H // 4, H // 2, [0])
    s7, s6 = shard(7, H // 4, 3 * H // 8, [2]), shard(6, 3 * H // 8, H // 2, [2])

    def ends(offset, drained=()):
        return {s: (ShardPosition.shard_end() if s in drained else ShardPosition.after_sequence("1"))
                for s, st in offset.shards.items() if st.status == "readable"}

    b = plan_next(initial_offset([s0, s1], stream="clicks"), [s0, s1], {}).offset
    b = plan_next(b, [close(s0), s1, s2, s3], ends(b)).offset
    b = plan_next(b, [close(s0), s1, s2, s3], ends(b, {sid(0)})).offset
    b = plan_next(b, [close(s2), s1, s3, s6, s7], ends(b)).offset
    b = plan_next(b, [close(s2), s1, s3, s6, s7], ends(b, {sid(2)})).offset
    assert b.mapper.shards_in(1) == [sid(3), sid(6)] and b.task_of(sid(2)) is None  # the shape this test needs
    return b


def progress(source: dict, batch_id: int = 9) -> dict:
    return {"id": QUERY_ID, "runId": RUN_ID, "name": "clicks_etl", "timestamp": "2024-01-01T00:00:00.000Z",
            "batchId": batch_id, "batchDuration": 1, "stateOperators": [], "sources": [source],
            "sink": {"description": "x", "numOutputRows": -1}}


def kinesis_source(end, millis: dict[str, int], measured: int) -> dict:
    return {"description": "PythonMicroBatchStream@1", "startOffset": None, "endOffset": json.dumps(end.to_json()),
            "latestOffset": json.dumps(millis_behind_report(millis, measured)), "numInputRows": 0,
            "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 0.0, "metrics": {}}


def test_driver_report_names_min_avg_max_and_the_measuring_batch():
    assert millis_behind_report({}, 3) == {}
    report = millis_behind_report({sid(1): 40, sid(0): 1000, sid(2): 0}, 3)
    assert report == {"avgMsBehindLatest": pytest.approx(1040 / 3), "maxMsBehindLatest": 1000,
                      "millisBehindLatest": {sid(0): 1000, sid(1): 40, sid(2): 0}, "millisBehindLatestBatch": 3,
                      "minMsBehindLatest": 0}
    assert list(report["millisBehindLatest"]) == sorted(report["millisBehindLatest"])


def test_kinesis_lag_per_shard_slot_and_task_takes_the_most_behind_shard():
    end = overloaded_offset()
    millis = {sid(1): 250, sid(2): 0, sid(3): 40, sid(6): 900, sid(7): 10}
    [lag] = lag_from_progress(progress(kinesis_source(end, millis, end.batch - 1)))
    assert lag.system == "kinesis" and lag.unit == "millis" and lag.measured_in_batch == end.batch - 1
    assert dict(lag.behind) == millis
    slot = {s: end.slot_ssp(s).key for s in (sid(1), sid(3), sid(6), sid(7))}
    assert slot[sid(3)] == slot[sid(6)] == "kinesis.clicks.1"
    assert dict(lag.by_ssp) == {slot[sid(7)]: 10, "kinesis.clicks.1": 900, slot[sid(1)]: 250}
    assert dict(lag.by_task) == {"Task-0": 900, "Task-1": 250}
    assert lag.shard_places[sid(2)] == ("", "")  # drained: no slot, no task, still reported (0)
    assert lag.shard_places[sid(6)] == ("kinesis.clicks.1", "Task-0")
    assert (lag.min_behind_latest, lag.max_behind_latest, lag.avg_behind_latest) == (0, 900, 240.0)
    assert lag.metrics() == {"avgMsBehindLatest": "240.0", "maxMsBehindLatest": "900", "minMsBehindLatest": "0"}
    assert lag.min_offsets_behind_latest is None and lag.total_offsets_behind_latest == 0  # Kafka names: Kafka only


def test_kinesis_progress_without_figures_or_not_ours_gives_nothing():
    end = overloaded_offset()
    no_figures = {**kinesis_source(end, {}, 0), "latestOffset": "null"}
    assert source_lag(no_figures) is None
    damaged = {**kinesis_source(end, {sid(1): 5}, 0), "endOffset": json.dumps({"jobModel": {}, "shards": 3})}
    assert source_lag(damaged) is None
    odd = {**kinesis_source(end, {}, 0),
           "latestOffset": json.dumps({"millisBehindLatest": {sid(1): -1, sid(3): "7", sid(6): 12}})}
    assert dict(source_lag(odd).behind) == {sid(6): 12}


def S(topic: str, p: int) -> SystemStreamPartition:
    return SystemStreamPartition("kafka", topic, p)


def test_kafka_lag_per_task_sums_its_ssps_at_its_own_positions():
    t0, t1 = TaskName("Partition 0"), TaskName("Partition 1")
    model = JobModel({t0: {S("orders", 0), S("conf", 0)}, t1: {S("orders", 1), S("conf", 0)}},
                     broadcast=frozenset({S("conf", 0)}))
    end = KafkaOffset(model, {(t0, S("orders", 0)): 40, (t1, S("orders", 1)): 55,
                            (t0, S("conf", 0)): 7, (t1, S("conf", 0)): 3})
    source = {"endOffset": end.to_json(), "latestOffset": {"kafka.orders.0": 100, "kafka.orders.1": 55,
                                                           "kafka.conf.0": 9}}
    lag = source_lag(source)
    assert lag.system == "kafka" and lag.unit == "offsets"
    assert dict(lag.by_ssp) == dict(lag.behind) == {"kafka.conf.0": 6, "kafka.orders.0": 60, "kafka.orders.1": 0}
    assert dict(lag.by_task) == {"Partition 0": 60 + 2, "Partition 1": 0 + 6}


def test_without_a_lag_report_no_lag_is_made_up():
    """PySpark 4.0 / 4.1 never call reportLatestOffset and report the batch's end offset as ``latestOffset``: no
    figures (rather than zeros), for either source."""
    model = JobModel({TaskName("Partition 0"): {S("orders", 0)}})
    kafka_end = KafkaOffset(model, {(TaskName("Partition 0"), S("orders", 0)): 40}).to_json()
    assert source_lag({"endOffset": kafka_end, "latestOffset": kafka_end}) is None
    kinesis_end = overloaded_offset().to_json()
    assert source_lag({"endOffset": kinesis_end, "latestOffset": json.dumps(kinesis_end)}) is None


def test_listener_keeps_the_latest_per_source_until_the_query_terminates(caplog):
    from pyspark.sql.streaming.listener import QueryProgressEvent, QueryTerminatedEvent

    end = overloaded_offset()
    listener = SamzaLagListener()
    for batch, ms in ((5, 900), (6, 30)):
        event = QueryProgressEvent.fromJson({"progress": progress(kinesis_source(end, {sid(6): ms}, batch - 1),
                                                                  batch)})
        with caplog.at_level("INFO", logger="spark_samza_source.ops.metrics"):
            listener.onQueryProgress(event)
    assert "samza-kinesis lag: query clicks_etl batch 6 source 0: min 30 avg 30 max 30 ms behind latest" in caplog.text
    assert listener.latest_by_source[(QUERY_ID, 0)].batch_id == 6 and len(listener.history) == 2
    listener.onQueryTerminated(QueryTerminatedEvent.fromJson({"id": QUERY_ID, "runId": RUN_ID, "exception": None,
                                                              "errorClassOnException": None}))
    assert listener.latest_by_source == {} and listener.last.batch_id == 6  # history and last stay
