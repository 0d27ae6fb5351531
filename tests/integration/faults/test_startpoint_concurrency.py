"""Startpoints written and deleted by another process in a tight loop while a samza-kafka query runs.

The writer (``fault_driver startpoint-writer``) runs for ``SAMZA_FAULT_STARTPOINT_SECONDS`` seconds (default 20,
to keep the suite fast; set 60 or more for a soak run) and logs every write, every delete of its own value and
what it then saw in the store. Afterwards everything is checked against Spark's offset log (the ``rebases`` and
``applied`` of each batch) and the rows each batch delivered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from samza_devkit.checkpoint_log import committed_batches, cursor_walk, offset_log, startpoint_rebases
from samza_devkit.fault_harness import wait_for
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from spark_samza_source.core.startpoint_manager import NAMESPACE, startpoint_key
from spark_samza_source.metadata import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WRITER_SECONDS = float(os.environ.get("SAMZA_FAULT_STARTPOINT_SECONDS", "20"))
RECORDS = 2000


@pytest.mark.parametrize("store", ["file", "s3"])
def test_startpoints_racing_a_running_query_apply_once_and_only_applied_ones_are_deleted(
        kafka_broker, fault_queries, tmp_path, store, request):
    """A writer process races a running query (Oldest / Specific startpoints, SSP-only and SSP+task keys, its own
    deletes). Proven from the offset log, the writer's log, the store and the delivered rows: every applied
    startpoint was written, applied at its position, exactly once and in creation order; ``applied`` carries the
    newest forward; whenever one of the writer's startpoints vanished without the writer deleting it, it had
    been applied in a completed batch (the source never deleted one it had not applied, nor let an older one
    replace a newer); at the end the store is empty and consistent with both logs; and every batch delivered
    exactly the ranges its offsets record, so each startpoint's effect is visible exactly once. On a file: store
    and on an s3:// store (moto's S3 server: delete_if_equal is DeleteObject with If-Match)."""
    q = fault_queries(kafka_broker.bootstrap_servers)
    if store == "s3":
        q.store_uri = request.getfixturevalue("s3_store_uri")
    topic = create_topic(q.bootstrap, unique_topic("sprace"), 2)
    produce(q.bootstrap, topic, [(b"k", f"{p}-{i}".encode(), None, p) for i in range(RECORDS) for p in (0, 1)])
    ssp_key = f"kafka.{topic}.0"
    task = "Partition 0"
    # Spark purges offset and commit log entries older than the last minBatchesToRetain (100) batches; a long run
    # has more, and every check below needs the whole log
    retain = q.spark.conf.get("spark.sql.streaming.minBatchesToRetain")
    q.spark.conf.set("spark.sql.streaming.minBatchesToRetain", "1000000")
    try:
        query = q.start_collecting("race", trigger={"processingTime": "200 milliseconds"}, subscribe=topic,
                                   maxOffsetsPerTrigger="500")
    finally:
        q.spark.conf.set("spark.sql.streaming.minBatchesToRetain", retain)
    wait_for(lambda: len(q.collected("race")) >= 500, timeout=120, what="the query running")

    log_path = tmp_path / "writer.jsonl"
    writer = subprocess.run(
        [sys.executable, "-m", "samza_devkit.fault_driver", "startpoint-writer", "--store", q.store_uri,
         "--job", q.job, "--topic", topic, "--partition", "0", "--task", task, "--max-offset", str(RECORDS),
         "--duration", str(WRITER_SECONDS), "--log", str(log_path), "--seed", "7"],
        capture_output=True, text=True, timeout=WRITER_SECONDS + 60)
    assert writer.returncode == 0, writer.stderr[-3000:]
    events = [json.loads(line) for line in log_path.read_text().splitlines()]
    writes = {e["ts"]: e for e in events if e["op"] == "write"}
    last_ts = max(writes)
    writer_deleted_last = any(e["op"] == "delete" and e["ts"] == last_ts and (e["ssp"] or e["task"]) for e in events)
    store = open_store(q.store_uri, q.job)
    keys = {"ssp": startpoint_key_of(topic), "task": startpoint_key_of(topic, task)}

    def left_in_store() -> set[int]:
        return {v["creationTimestamp"] for v in (store.get(NAMESPACE, k) for k in keys.values()) if v is not None}

    if not writer_deleted_last:  # the query applies the newest startpoint, and deletes it once that batch is done
        wait_for(lambda: last_ts in {ts for *_, ts in startpoint_rebases(offset_log(q.checkpoint("race")))},
                 timeout=60, what="the newest startpoint applied")
    # (even one the writer deleted may still be applied: a fan-out that read it just before the delete re-keys it)
    wait_for(lambda: not left_in_store(), timeout=60, what="no startpoint left once the newest was handled")
    query.stop()
    assert query.exception() is None
    log = offset_log(q.checkpoint("race"))
    committed = committed_batches(q.checkpoint("race"))
    applied = startpoint_rebases(log)
    assert sorted(log) == list(range(len(log))), "the offset log is not complete"
    assert len(writes) >= WRITER_SECONDS / 2, "the writer hardly wrote anything"
    assert applied, "no startpoint was ever applied"

    # 1. every applied startpoint is one the writer wrote, for this (task, SSP), at the position it asked for
    for batch, t, key, position, ts in applied:
        assert (t, key) == (task, ssp_key) and ts in writes, (batch, t, key, ts)
        value = writes[ts]["value"]
        assert position == (0 if value["@type"] == "StartpointOldest" else int(value["specificOffset"])), value
    # 2. none applied twice, and never an older one after a newer one
    stamps = [ts for *_, ts in applied]
    assert len(stamps) == len(set(stamps)), Counter(stamps).most_common(3)
    assert stamps == sorted(stamps)
    # 3. every offset carries the newest applied creation timestamp forward (what makes re-application impossible)
    newest = -1
    for batch, offset in sorted(log.items()):
        newest = max([newest] + [ts for b, *_, ts in applied if b == batch])
        assert offset["applied"].get(task, {}).get(ssp_key, -1) == newest, batch
    # 4. the source deleted only startpoints it had applied: whenever one of the writer's startpoints vanished
    #    from both keys without the writer deleting it, it had been applied (and its batch committed)
    applied_in = {ts: batch for batch, *_, ts in applied}
    # (an observation is always of the writer's newest startpoint, so nothing newer can have replaced it)
    # (the final observation follows the last round, which may have been the writer's own delete: not a vanishing)
    deleted_by_writer = {e["ts"] for e in events if e["op"] == "delete" and (e["ssp"] or e["task"])}
    vanished = [e["ts"] for e in events if e["op"] == "observe" and e["ssp"] != e["ts"] and e["task"] != e["ts"]
                and e["ts"] not in deleted_by_writer]
    # (the newest one, unless the writer deleted it, is always seen deleted by the source: check 5)
    assert vanished or not writer_deleted_last, "no deletion by the source was ever observed: nothing was checked"
    for ts in vanished:
        assert ts in applied_in and applied_in[ts] in committed, f"startpoint {ts} deleted without being applied"
    older_won = [e for e in events if e["op"] == "observe" and e["ssp"] != e["ts"]
                 and e["task"] is not None and e["task"] < e["ts"]]
    assert older_won == [], "an older startpoint replaced the writer's newest one"
    # 5. the store's final state agrees with the writer's log and the offset log: the newest startpoint was either
    #    deleted by the writer or applied in a completed batch and then deleted by the source; nothing is left
    assert left_in_store() == set()
    if not writer_deleted_last:
        assert last_ts in applied_in and applied_in[last_ts] in committed
    # 6. what each batch delivered continues a cursor over each partition's log, moved only by the startpoints the
    #    raw offset JSON records: each startpoint's effect visible exactly once (an oracle independent of the
    #    source's own offset code, as benchmarks/soak.py's checker)
    assert cursor_walk(log, q.batches["race"], topic) == []
    delivered = [b for b, _ in q.batches["race"]]
    assert delivered == sorted(set(delivered)) and committed <= set(delivered)
    print(f"{len(writes)} startpoints written, {len(applied)} applied, {len(vanished)} seen deleted by the source, "
          f"{len(log)} batches in {WRITER_SECONDS:.0f}s")


def startpoint_key_of(topic: str, task: str | None = None) -> str:
    from spark_samza_source.core.model import SystemStreamPartition

    return startpoint_key(SystemStreamPartition("kafka", topic, 0), task)

