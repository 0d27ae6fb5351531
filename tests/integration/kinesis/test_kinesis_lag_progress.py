"""samza-kinesis lag where operators look: ``query.lastProgress``, the SamzaLagListener and a Prometheus scrape.

A live query on moto reads a 2-shard stream 20 records per shard per batch: shard 0 holds two chunks of records put
1.5 s apart (so the reads of its first chunk are seconds behind the tip), shard 1 a few records (caught up after
one batch). Each batch's progress must report, per shard, the ``MillisBehindLatest`` Kinesis answered where the
previous batch's read of that shard ended. The oracle asks moto itself: a ``GetRecords`` of one record at the
last sequence number the previous batch delivered for the shard (taken from the rows the sink received) answers
the same ``MillisBehindLatest`` as the reader's last call there; a shard the previous batch delivered nothing from
was caught up (0). Then the exporter is scraped over HTTP and must publish the listener's per-shard, per-SSP and
per-task figures.

moto only: kinesalite (3.3.3) answers ``MillisBehindLatest: 0`` to every call except an empty one at a closed
shard's end, so a read behind the tip cannot be produced there.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.ops.metrics import SamzaLagListener
from spark_samza_source.ops.prometheus import serve_lag_metrics

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GAP_S = 1.5  # between shard 0's two chunks: its first chunk's reads are at least this far behind the tip


def millis_behind_at(client, stream: str, shard: str, sequence: str) -> int:
    """What Kinesis (moto) answers for a GetRecords that ends with the record ``sequence``."""
    iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="AT_SEQUENCE_NUMBER",
                                         StartingSequenceNumber=sequence)["ShardIterator"]
    resp = client.get_records(ShardIterator=iterator, Limit=1)
    assert [r["SequenceNumber"] for r in resp["Records"]] == [sequence]
    return resp["MillisBehindLatest"]


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """{(metric name, sorted labels): value} of http://127.0.0.1:<port>/metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def reported_lag(progress: list[dict]) -> dict[int, dict]:
    """{batch id: the lag report in its source's latestOffset} of the batches whose progress carries one."""
    reported = {}
    for p in progress:
        latest_offset = p["sources"][0]["latestOffset"]
        report = json.loads(latest_offset) if isinstance(latest_offset, str) else latest_offset
        if isinstance(report, dict) and "millisBehindLatest" in report:
            reported[p["batchId"]] = report
    return reported


def test_kinesis_lag_in_last_progress_the_listener_and_prometheus(ks):
    stream = ks.create_stream(2, "lag")
    shards = [s["ShardId"] for s in kh.list_shards(ks.client, stream)]
    keys = {sid: kh.hash_key_of(ks.client, stream, sid) for sid in shards}
    s0, s1 = shards
    kh.put_records(ks.client, stream, [(f"a{i}", b"first", keys[s0]) for i in range(30)])
    kh.put_records(ks.client, stream, [(f"b{i}", b"small", keys[s1]) for i in range(5)])
    time.sleep(GAP_S)
    kh.put_records(ks.client, stream, [(f"c{i}", b"second", keys[s0]) for i in range(30)])

    listener = SamzaLagListener()
    ks.spark.streams.addListener(listener)
    exporter = serve_lag_metrics(listener=listener, port=0, addr="127.0.0.1")
    try:
        query = ks.start_collecting("lag", stream, maxRecordsPerShard="20")
        qid = str(query.id)
        # caught up: every record delivered, and a later batch reported the reads that reached the tip (all 0)
        ks.wait_for(lambda: len(ks.collected("lag")) == 65
                    and any(f.max_behind_latest == 0 and f.query_id == qid for f in listener.history),
                    timeout=180, what="the query to catch up and report it")
        last = query.lastProgress
        ks.wait_for(lambda: listener.for_batch(last["batchId"], qid), timeout=30, what="the last event")
        # the query keeps running (a batch may end between two reads), so scrape until the listener's latest
        # figures are the same before and after the scrape: the published ones are then exactly those
        for _ in range(20):
            latest = listener.latest_by_source[(qid, 0)]
            scraped = scrape(exporter.port)
            if listener.latest_by_source[(qid, 0)] is latest:
                break
        else:
            pytest.fail("the listener's latest figures changed during every scrape")
        query.stop()
        # stopped: recentProgress is final; the listener hears of every batch in it (its events are asynchronous)
        progress = query.recentProgress
        reported = reported_lag(progress)
        ks.wait_for(lambda: set(reported) <= {f.batch_id for f in listener.history if f.query_id == qid},
                    timeout=30, what="the listener to hear of every reported batch")
    finally:
        exporter.stop()
        ks.spark.streams.removeListener(listener)

    # ---- the oracle: moto's answer where each batch's rows ended, per shard ----------------------------------
    batches = dict(ks.batches["lag"])
    expected_after: dict[int, dict[str, int]] = {}
    for batch_id, rows in sorted(batches.items()):
        ends: dict[str, str] = {}
        for row in rows:
            if row.shardId not in ends or int(row.sequenceNumber) > int(ends[row.shardId]):
                ends[row.shardId] = row.sequenceNumber
        expected_after[batch_id] = {sid: (millis_behind_at(ks.client, stream, sid, ends[sid]) if sid in ends else 0)
                                    for sid in shards}

    # ---- query.lastProgress / recentProgress: sources[0].latestOffset ----------------------------------------
    assert reported, "no progress reported MillisBehindLatest"
    assert last["batchId"] in reported  # query.lastProgress itself carries the figures
    behind_seen = False
    for batch_id, report in sorted(reported.items()):
        expected = expected_after[batch_id - 1]
        assert report["millisBehindLatest"] == expected, f"batch {batch_id}"
        values = list(expected.values())
        assert (report["minMsBehindLatest"], report["maxMsBehindLatest"]) == (min(values), max(values))
        assert report["avgMsBehindLatest"] == pytest.approx(sum(values) / len(values))
        behind_seen = behind_seen or expected[s0] >= GAP_S * 1000 * 0.9
    assert behind_seen, f"shard 0 was never reported behind by the gap: {reported}"  # the unkind case happened
    assert reported[last["batchId"]]["maxMsBehindLatest"] == 0  # then caught up

    # ---- the listener: the same figures, per shard, SSP slot and task ----------------------------------------
    figures = {f.batch_id: f for f in listener.history if f.query_id == qid}
    assert set(figures) == set(reported)
    for batch_id, lag in figures.items():
        assert dict(lag.behind) == reported[batch_id]["millisBehindLatest"]
        assert lag.system == "kinesis" and lag.unit == "millis"
        assert lag.metrics()["maxMsBehindLatest"] == str(reported[batch_id]["maxMsBehindLatest"])
    behind_batch = max(figures, key=lambda b: figures[b].behind[s0])
    lag = figures[behind_batch]
    # the task of each shard is the one that read it (the rows' task column); its SSP is one of that task's slots
    # (a job model made with 2 open shards gives each task 2 slots: Task-i owns slots 2i and 2i + 1)
    read_by = {(r.shardId, r.task) for rows in batches.values() for r in rows}
    assert {(sid, task) for sid, (_ssp, task) in lag.shard_places.items()} == read_by
    for ssp, task in lag.shard_places.values():
        assert ssp.startswith(f"kinesis.{stream}.") and int(ssp.rsplit(".", 1)[1]) // 2 == int(task[len("Task-"):])
    assert dict(lag.by_task) == {lag.shard_places[sid][1]: lag.behind[sid] for sid in shards}
    assert dict(lag.by_ssp) == {lag.shard_places[sid][0]: lag.behind[sid] for sid in shards}

    # ---- Prometheus, scraped over HTTP while the query ran: the listener's latest figures at that moment -------
    source = {"query": query.name, "query_id": qid, "source": "0", "system": "kinesis"}

    def value(name: str, **labels: str) -> float:
        return scraped[(name, tuple(sorted({**source, **labels}.items())))]

    for sid in shards:
        ssp, task = latest.shard_places[sid]
        assert value("spark_samza_shard_lag_seconds", shard=sid, ssp=ssp, task=task) == latest.behind[sid] / 1000
    for ssp, ms in latest.by_ssp.items():
        assert value("spark_samza_ssp_lag_seconds", ssp=ssp, stream=stream, partition=ssp.rsplit(".", 1)[1]) \
            == ms / 1000
    for task, ms in latest.by_task.items():
        assert value("spark_samza_task_lag_seconds", task=task) == ms / 1000
    assert value("spark_samza_lag_batch") == latest.batch_id
    assert not [k for k in scraped if k[0].endswith("_records")]  # no Kafka series from a Kinesis source
