"""SEP-18 Startpoints on real queries: applied once, recorded in the offset, deleted only if unchanged."""


import pytest
from confluent_kafka import Consumer, TopicPartition

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.core.startpoint import StartpointOldest, StartpointTimestamp, StartpointUpcoming

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BASE_TS = 1_700_000_000_000


def offsets_for_times(bootstrap, topic, partition, ts):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        found = consumer.offsets_for_times([TopicPartition(topic, partition, ts)], timeout=30)
        return found[0].offset
    finally:
        consumer.close()


def test_timestamp_startpoint_repositions_a_checkpointed_query_once(kq):
    topic = create_topic(kq.bootstrap, unique_topic("sp-ts"), 2)
    acks = produce(kq.bootstrap, topic, [(b"k", f"{i}".encode(), None, i % 2, BASE_TS + i * 10) for i in range(200)])
    kq.run_available_now_parquet("ts", subscribe=topic)
    assert len(kq.sink_rows("ts")) == 200

    ssp = SystemStreamPartition("kafka", topic, 1)
    target_ts = BASE_TS + 1005  # between two records of partition 1
    kq.startpoints().write(ssp, StartpointTimestamp(target_ts))
    expected_start = offsets_for_times(kq.bootstrap, topic, 1, target_ts)
    assert 0 < expected_start < 100

    kq.run_available_now_parquet("ts", subscribe=topic)
    rows = kq.sink_rows("ts")
    replayed = [r for r in rows if r.partition == 1 and r.offset >= expected_start]
    assert len(rows) == 200 + (100 - expected_start)
    assert sorted(r.offset for r in replayed) == sorted(
        [o for o in range(expected_start, 100)] * 2
    )
    # Spark never commits the last batch of a run: the restart path deletes the applied startpoint ...
    produce(kq.bootstrap, topic, [(b"k", b"more", None, 0)])
    kq.run_available_now_parquet("ts", subscribe=topic)
    assert kq.startpoints().read(ssp) is None
    assert kq.startpoints().list() == []
    # ... and it is not applied again: only the one new record arrived.
    assert len(kq.sink_rows("ts")) == 200 + (100 - expected_start) + 1
    kq.run_available_now_parquet("ts", subscribe=topic)
    assert len(kq.sink_rows("ts")) == 200 + (100 - expected_start) + 1
    assert len(acks) == 200


def test_oldest_startpoint_written_while_running_replays_the_ssp(kq):
    topic = create_topic(kq.bootstrap, unique_topic("sp-old"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode(), None, i % 2) for i in range(100)])
    query = kq.start_collecting("old", subscribe=topic, **{"startpoint.pollInterval": "1s"})
    kq.wait_for(lambda: len(kq.collected("old")) == 100, what="the backlog")
    kq.startpoints().write(SystemStreamPartition("kafka", topic, 0), StartpointOldest())
    kq.wait_for(lambda: len(kq.collected("old")) == 150, timeout=60, what="partition 0 replayed")
    kq.wait_for(lambda: kq.startpoints().list() == [], timeout=60, what="startpoint deleted after commit")
    # an observable later batch (not a sleep): a sentinel produced now is read by a batch planned after the
    # deletion; had the startpoint been applied again, partition 0 would have been replayed once more by then
    produce(kq.bootstrap, topic, [(b"k", b"sentinel", None, 1)])
    kq.wait_for(lambda: any(r.value == b"sentinel" for r in kq.collected("old")), timeout=60, what="the sentinel")
    query.stop()
    rows = kq.collected("old")
    assert len(rows) == 151
    assert sorted(r.offset for r in rows if r.partition == 0) == sorted(list(range(50)) * 2)


def test_ssp_only_startpoint_on_broadcast_topic_applies_in_both_tasks(kq):
    data = create_topic(kq.bootstrap, unique_topic("bc-data"), 2)
    config = create_topic(kq.bootstrap, unique_topic("bc-conf"), 1)
    produce(kq.bootstrap, data, [(b"k", b"d", None, i % 2) for i in range(10)])
    produce(kq.bootstrap, config, [(b"c", f"c{i}".encode()) for i in range(5)])
    opts = {"subscribe": data, "task.broadcast.inputs": f"kafka.{config}#0"}
    kq.run_available_now_parquet("bc", **opts)
    rows = kq.sink_rows("bc")
    conf_rows = [r for r in rows if r.topic == config]
    assert sorted((r.task, r.offset) for r in conf_rows) == sorted(
        (t, o) for t in ("Partition 0", "Partition 1") for o in range(5)
    )
    kq.startpoints().write(SystemStreamPartition("kafka", config, 0), StartpointOldest())
    kq.run_available_now_parquet("bc", **opts)
    again = [r for r in kq.sink_rows("bc") if r.topic == config]
    # Both tasks replayed the broadcast partition from its start: every (task, offset) pair twice.
    assert sorted((r.task, r.offset) for r in again) == sorted(
        (t, o) for t in ("Partition 0", "Partition 1") for o in range(5) for _ in range(2)
    )


def test_newer_startpoint_written_during_the_applying_batch_survives_and_applies_next(kq):
    topic = create_topic(kq.bootstrap, unique_topic("sp-race"), 1)
    produce(kq.bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(20)])
    ssp = SystemStreamPartition("kafka", topic, 0)
    manager = kq.startpoints()
    state = {"phase": 0}

    def on_batch(batch_id, rows):
        # While the batch that applied the older (Upcoming) startpoint runs, its fanned-out copy is still
        # stored (it is deleted when the next batch is planned): write a newer one for the same SSP and task.
        if state["phase"] == 1 and isinstance(manager.read(ssp, TaskName("Partition 0")), StartpointUpcoming):
            manager.write(ssp, StartpointOldest(), task=TaskName("Partition 0"))
            state["phase"] = 2

    query = kq.start_collecting("race", on_batch=on_batch, subscribe=topic, **{"startpoint.pollInterval": "0"})
    kq.wait_for(lambda: len(kq.collected("race")) == 20, what="backlog")
    produce(kq.bootstrap, topic, [(b"k", b"x")])
    state["phase"] = 1
    manager.write(ssp, StartpointUpcoming())
    kq.wait_for(lambda: state["phase"] == 2, what="older startpoint's batch")
    kq.wait_for(lambda: len(kq.collected("race")) >= 20 + 21, timeout=60, what="newer startpoint applied")
    kq.wait_for(lambda: manager.list() == [], timeout=20, what="newer startpoint deleted after its own commit")
    query.stop()
    offsets = sorted(r.offset for r in kq.collected("race"))
    # The newer (Oldest) startpoint replayed everything once; nothing was replayed twice.
    assert all(offsets.count(o) == 2 for o in range(20)), offsets
    assert 1 <= offsets.count(20) <= 2
