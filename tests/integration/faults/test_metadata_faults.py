"""Metadata store faults: a store that vanishes or cannot be written mid-run, corrupt values, newer formats.

The tests run as root, so ``chmod`` would not stop a write: a store "vanishes" by having its directory replaced
with a regular file (every read and write under it then fails with NotADirectoryError), or replaced by an empty
directory. Atomicity of each write under SIGKILL is proven at store level in
``tests/integration/metadata/test_metadata_fs_concurrency.py``
(test_sigkilled_writers_never_leave_a_torn_value_or_a_stuck_lock) and not repeated here.
"""

from __future__ import annotations

import json
import shutil
import urllib.parse
from pathlib import Path

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.checkpoint_log import offset_log
from samza_devkit.fault_harness import wait_for
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.waits import scaled
from spark_samza_source.core.errors import SamzaSourceError
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointOldest
from spark_samza_source.kafka.driver.coordinator import KafkaCoordinator
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.filesystem import encode_key

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _vanish(store_dir: Path) -> Path:
    """Move the store away and put a regular file where its directory was; returns where the data went."""
    kept = store_dir.with_name(store_dir.name + ".kept")
    store_dir.rename(kept)
    store_dir.write_text("not a directory\n")
    return kept


def _restore(store_dir: Path, kept: Path) -> None:
    if store_dir.is_dir():
        shutil.rmtree(store_dir)
    else:
        store_dir.unlink()
    kept.rename(store_dir)


def _store_named(text: str, store_dir: Path) -> bool:
    return f"metadata store file://{urllib.parse.quote(str(store_dir))}" in text


def test_kafka_store_replaced_by_a_file_mid_run_stops_the_query_then_resumes_exactly_once(
        kafka_broker, fault_queries):
    """The store vanishes under a running samza-kafka query: the next trigger fails the query with an error that
    names the store and what it was doing there; no batch is planned or delivered after it. With the store back,
    a restart from the checkpoint delivers every record exactly once."""
    q = fault_queries(kafka_broker.bootstrap_servers)
    topic = create_topic(q.bootstrap, unique_topic("mvan"), 2)
    produce(q.bootstrap, topic, [(b"k", f"{p}-{i}".encode(), None, p) for i in range(200) for p in (0, 1)])
    query = q.start_collecting("mvan", subscribe=topic, maxOffsetsPerTrigger="100")
    wait_for(lambda: len(q.collected("mvan")) >= 100, timeout=120, what="the first batch")
    kept = _vanish(q.store_dir)
    with pytest.raises(Exception) as err:
        query.awaitTermination(scaled(120))
    text = str(err.value)
    assert "MetadataStoreError" in text and _store_named(text, q.store_dir), text[-3000:]
    assert "NotADirectoryError" in text and "namespace" in text
    delivered = len(q.collected("mvan"))
    log = offset_log(q.checkpoint("mvan"))
    assert delivered < 400 and max(log) <= max(b for b, _ in q.batches["mvan"]) + 1
    _restore(q.store_dir, kept)
    again = q.start_collecting("mvan", subscribe=topic, maxOffsetsPerTrigger="100")
    wait_for(lambda: len(q.collected("mvan")) >= 400, timeout=120, what="the rest after the restart")
    again.stop()
    rows = [(r.partition, r.offset) for r in q.collected("mvan")]
    assert sorted(rows) == [(p, o) for p in (0, 1) for o in range(200)]


def test_kinesis_batch_end_that_cannot_be_recorded_fails_the_task_before_it_yields(ks_proxy):
    """The store vanishes while an executor is inside GetRecords of batch 1: recording the batch end fails, so the
    task fails before yielding a row (and every retry fails at its first store read); the query stops with an
    error naming the batch-end key and the store. Nothing of batch 1 reached the sink; with the store back, the
    restarted query replays batch 1 and reads every record exactly once."""
    ks = ks_proxy
    stream = ks.create_stream(1, "mend")
    acks = kh.put_records(ks.client, stream, [(f"pk{i}", f"r{i}".encode()) for i in range(300)])
    state: dict = {"armed": False, "kept": None, "get_records_after": 0}

    def vanish_during_get_records(target):
        if state["kept"] is not None and target.endswith(".GetRecords"):
            state["get_records_after"] += 1
        if state["armed"] and target.endswith(".GetRecords"):
            state["armed"] = False
            state["kept"] = _vanish(ks.store_dir)
            state["get_records_after"] += 1

    def after_batch(batch_id, rows):
        if batch_id == 0:
            state["armed"] = True

    ks.proxy.before = vanish_during_get_records
    query = ks.start_collecting("mend", stream, on_batch=after_batch, maxRecordsPerShard="100")
    with pytest.raises(Exception) as err:
        query.awaitTermination(scaled(120))
    assert state["kept"] is not None, "the store never vanished"
    text = str(err.value)
    assert "MetadataStoreError" in text and _store_named(text, ks.store_dir), text[-3000:]
    # the first attempt failed recording its end (put_if_absent), its retries at their first read (get): Spark
    # reports the last one; either way the key is the end of Spark's batch 1, which is Kinesis offset batch 2
    # (the initial offset is batch 0 and is never read)
    assert "namespace 'kinesis-batch-ends'" in text and "failed for key '00000000000000000002/" in text
    assert [r.data for r in ks.collected("mend")] == [a.data for a in acks[:100]]  # batch 0 only
    assert state["get_records_after"] > 0  # batch 1's records were fetched, yet none was yielded

    ks.proxy.before = None
    _restore(ks.store_dir, state["kept"])
    again = ks.start_collecting("mend", stream, maxRecordsPerShard="100")
    wait_for(lambda: len(ks.collected("mend")) >= 300, timeout=120, what="the rest after the restart")
    again.stop()
    assert sorted(r.data for r in ks.collected("mend")) == sorted(a.data for a in acks)


def test_kinesis_store_emptied_between_batches_stops_instead_of_re_reading(ks_proxy):
    """The store is swapped for an empty one (wiped, or 'metadata.store' pointed elsewhere) under a running
    samza-kinesis query: the recorded end of the last batch is gone, so the next plan fails naming the batch
    (Spark's batch 1 ends at Kinesis offset batch 2), the shard and the lost batch ends, instead of re-reading that
    batch (duplicates) or guessing."""
    ks = ks_proxy
    stream = ks.create_stream(1, "mwipe")
    kh.put_records(ks.client, stream, [(f"pk{i}", f"r{i}".encode()) for i in range(300)])
    swapped: dict = {}

    def after_batch(batch_id, rows):
        if batch_id == 1 and not swapped:
            kept = ks.store_dir.with_name("metadata.kept")
            ks.store_dir.rename(kept)
            ks.store_dir.mkdir()
            swapped["kept"] = kept

    query = ks.start_collecting("mwipe", stream, on_batch=after_batch, maxRecordsPerShard="100")
    with pytest.raises(Exception) as err:
        query.awaitTermination(scaled(120))
    text = str(err.value)
    assert "batch 2 of stream" in text and "shardId-000000000000" in text and "kinesis-batch-ends" in text, text[-3000:]
    assert len(ks.collected("mwipe")) == 200  # batches 0 and 1, nothing twice
    assert len({r.sequenceNumber for r in ks.collected("mwipe")}) == 200


# ---- corrupt values and newer formats, at the driver: no Spark needed to see what Spark would get ---------------
def _coordinator(bootstrap: str, store_uri: str, job: str, topic: str) -> KafkaCoordinator:
    return KafkaCoordinator(KafkaSourceOptions.parse({
        "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": job, "metadata.store": store_uri,
        "startingOffsets": "earliest", "startpoint.pollInterval": "0"}))


def _file_of(store_dir: Path, job: str, namespace: str, key: str) -> Path:
    return store_dir / job / namespace / f"{encode_key(key)}.json"


def test_corrupt_and_newer_format_values_land_on_the_damaged_record_rule(kafka_broker, tmp_path):
    """The damaged-record rule (docs/guarantees.md) at a Kafka driver: garbage in the job model file makes planning
    fail with an error naming the key, namespace, store, kind and repair -- before any offset is returned, so Spark
    cannot advance; garbage in a startpoint file, a startpoint file in a newer envelope format and a startpoint type
    a newer release added are skipped with a warning and counted in the progress: the query keeps its checkpoint
    position and the files are left as they are."""
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("corrupt"), 1)
    produce(bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(10)])
    store_dir = tmp_path / "meta"
    uri = f"file://{store_dir}"
    ssp = SystemStreamPartition("kafka", topic, 0)
    made: list[KafkaCoordinator] = []
    try:
        _corrupt_and_newer(bootstrap, topic, store_dir, uri, ssp, made)
    finally:
        for coordinator in made:  # these drivers are done: give their job leases up
            lease = getattr(coordinator, "_lease", None)
            if lease is not None:
                lease.release()


def _corrupt_and_newer(bootstrap, topic, store_dir, uri, ssp, made):
    # 1. the job model mirror of a new query is garbage
    job = "corrupt-jobmodel"
    jm = _file_of(store_dir, job, "jobmodel", "current")
    jm.parent.mkdir(parents=True)
    jm.write_text('{"format": 1, "key": "current", "value": {"tasks": ')
    first = _coordinator(bootstrap, uri, job, topic)
    made.append(first)
    with pytest.raises(SamzaSourceError) as err:
        first.initial_offset()
    assert err.value.condition == "SAMZA_KAFKA_STORED_JOB_MODEL_UNREADABLE"
    assert "key 'current' in namespace 'jobmodel'" in str(err.value) and _store_named(str(err.value), store_dir)
    assert "not valid JSON" in str(err.value) and str(jm) in str(err.value)
    assert "kind: job model" in str(err.value) and "jobModel.reset=true" in str(err.value)

    # 2. a running query meets a garbage startpoint file, then one in a newer envelope format
    job = "corrupt-startpoint"
    coordinator = _coordinator(bootstrap, uri, job, topic)
    made.append(coordinator)
    start = coordinator.initial_offset()
    key = f"kafka.{topic}.0"
    sp = _file_of(store_dir, job, "startpoint", key)
    sp.parent.mkdir(parents=True, exist_ok=True)
    sp.write_bytes(b"\x00\x01garbage")
    planned = coordinator.latest_offset(start, max_rows=None)  # skipped (the rule for startpoints), never fatal
    assert planned.positions == {k: 10 for k in start.positions}
    [(where, why)] = coordinator.malformed_startpoints.items()
    assert str(sp) in where and f"key '{key}' in namespace 'startpoint'" in why and _store_named(why, store_dir)
    assert coordinator.progress_report()["malformedStartpoints"] == 1
    sp.write_text(json.dumps({"format": 2, "key": key, "value": StartpointOldest().to_json()}))
    planned = coordinator.latest_offset(start, max_rows=None)
    [why] = coordinator.malformed_startpoints.values()
    assert "format 2" in why and "newer spark-samza-source" in why and _store_named(why, store_dir)
    assert sp.read_text().startswith('{"format": 2')  # left as it is

    # 3. a startpoint type this release does not know: skipped, the checkpoint position holds
    sp.write_text(json.dumps({"format": 1, "key": key, "value": {"@type": "StartpointFromTheFuture",
                                                                 "creationTimestamp": 1, "x": 1}}))
    planned = coordinator.latest_offset(start, max_rows=None)
    assert isinstance(planned, KafkaOffset) and all(r.reason != "startpoint" for r in planned.rebases.values())
    assert planned.positions == {k: 10 for k in start.positions}
    assert open_store(uri, job).get("startpoint", key)["@type"] == "StartpointFromTheFuture"  # left untouched
    assert ssp in {s for _, s in planned.positions}
