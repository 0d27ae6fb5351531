"""Data loss: records gone before they were read.

Already proven elsewhere, not repeated here:

- failOnDataLoss=true stops the query with an error naming the SSP and the lost range, and failOnDataLoss=false
  skips the lost records: ``tests/integration/kafka/test_source_failures.py``
  (test_deleted_records_fail_the_query_naming_the_ssp_and_range, test_deleted_records_are_skipped_with_...);
  the same at the reader (records deleted between planning and reading): ``tests/integration/kafka/test_reader.py``.
- Kinesis: moto never trims a stream (it has no retention clock), so expired data is simulated at the reader,
  which is where it is detected (a resumed ``AT_SEQUENCE_NUMBER`` iterator whose first record is not the one
  resumed from): ``tests/integration/kinesis/test_kinesis_reader.py::test_trimmed_data_is_detected`` covers
  failOnDataLoss both ways, the exact re-read of a recorded end whose data is gone, and a vanished shard. Here
  the same detection runs end to end: a proxy in front of moto drops records from GetRecords answers, as
  retention would, while a samza-kinesis query runs.

New here: the loss is *counted* (failOnDataLoss=false), and a replayed first batch reads the range it planned.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from samza_devkit import kinesis_helpers as kh
from samza_devkit.checkpoint_log import offset_log
from samza_devkit.fault_harness import exactly_once, wait_for
from samza_devkit.kafka_helpers import create_topic, delete_records_before, produce, unique_topic
from samza_devkit.waits import scaled
from spark_samza_source.kafka.errors import KafkaDataLossError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.source import SamzaKafkaStreamReader
from spark_samza_source.ops.metrics import lag_from_progress

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_fail_on_data_loss_false_goes_on_and_counts_the_skipped_records(kafka_broker, fault_queries):
    """Records deleted while the query was down: with failOnDataLoss=false the next run skips them, the batch
    records a ``data-loss`` rebase, and ``progress.sources[0].latestOffset["dataLoss"]`` counts exactly the records
    skipped per SSP (the lag metrics keep working beside it)."""
    q = fault_queries(kafka_broker.bootstrap_servers)
    topic = create_topic(q.bootstrap, unique_topic("lossc"), 2)
    produce(q.bootstrap, topic, [(b"k", f"{p}-{i}".encode(), None, p) for i in range(30) for p in (0, 1)])
    first = q.start_parquet("lossc", trigger={"availableNow": True}, subscribe=topic, failOnDataLoss="false")
    assert first.awaitTermination(scaled(120)) and first.exception() is None
    produce(q.bootstrap, topic, [(b"k", f"{p}-{i}".encode(), None, p) for i in range(30, 100) for p in (0, 1)])
    delete_records_before(q.bootstrap, topic, 0, 75)  # p0: 30..74 never read, gone
    second = q.start_parquet("lossc", trigger={"availableNow": True}, subscribe=topic, failOnDataLoss="false",
                             maxOffsetsPerTrigger="40")
    assert second.awaitTermination(scaled(120)) and second.exception() is None

    wanted = [(0, o) for o in [*range(30), *range(75, 100)]] + [(1, o) for o in range(100)]
    assert exactly_once(q.sink_offsets("lossc"), wanted) == []
    progress = second.recentProgress
    reported = [json.loads(p["sources"][0]["latestOffset"]) for p in progress if p["sources"][0]["latestOffset"]]
    assert reported and all(r.get("dataLoss") == {f"kafka.{topic}.0": 45} for r in reported), reported
    assert all(r[f"kafka.{topic}.0"] == 100 and r[f"kafka.{topic}.1"] == 100 for r in reported)
    lags = [lag for p in progress for lag in lag_from_progress(p)]
    assert lags and set(lags[-1].behind) == {f"kafka.{topic}.0", f"kafka.{topic}.1"}
    log = offset_log(q.checkpoint("lossc"))
    loss_rebases = [(b, key, r["position"]) for b, o in log.items() for t, by in o["rebases"].items()
                    for key, r in by.items() if r["reason"] == "data-loss"]
    assert loss_rebases == [(min(b for b in log if b > 0), f"kafka.{topic}.0", 75)]


def _released(reader: SamzaKafkaStreamReader) -> None:
    """The driver of ``reader`` 'dies': give up its job lease (a dead process's lease is taken over at once)."""
    lease = getattr(reader.coordinator, "_lease", None)
    if lease is not None:
        lease.release()


def test_a_replayed_first_batch_reads_the_range_it_planned(kafka_broker, tmp_path):
    """Spark keeps only end offsets; when it replays an uncommitted batch 0 it asks ``initialOffset()`` again and
    that answer has moved on (``latest``: more records; ``earliest``: records deleted). Driven here exactly as
    Spark's runner calls the reader. A replay read from that *new* start would silently lose the records of batch 0
    (latest), or skip them without a data-loss error even with failOnDataLoss=true (earliest).

    Backs docs/guarantees.md: "A replay of an uncommitted first batch reads the range it planned".
    """
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("replay0"), 1)
    produce(bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(50)])

    def reader(**extra):
        return SamzaKafkaStreamReader(KafkaSourceOptions.parse({
            "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": "replay0",
            "metadata.store": f"file://{tmp_path}/meta", "startpoint.pollInterval": "0", **extra}), None)

    # latest: batch 0 = the records that arrived between initialOffset and the first latestOffset
    first = reader(startingOffsets="latest")
    initial = first.initialOffset()
    produce(bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(50, 60)])
    end0 = first.latestOffset(initial, ReadAllAvailable())
    _released(first)
    produce(bootstrap, topic, [(b"k", f"{i}".encode()) for i in range(60, 70)])  # while the driver is down
    again = reader(startingOffsets="latest")
    (part,) = again.partitions(again.initialOffset(), end0)  # Spark's replay of batch 0
    assert [(r.start, r.end) for r in part.reads] == [(50, 60)]
    assert [int(b) for batch in again.read(part) for b in batch.column("value").to_pylist()] == list(range(50, 60))
    _released(again)

    # earliest: batch 0's first records are deleted before the replay
    first = reader(startingOffsets="earliest", failOnDataLoss="true")
    initial = first.initialOffset()
    end0 = first.latestOffset(initial, ReadAllAvailable())
    _released(first)
    delete_records_before(bootstrap, topic, 0, 20)
    strict = reader(startingOffsets="earliest", failOnDataLoss="true")
    (part,) = strict.partitions(strict.initialOffset(), end0)
    assert [(r.start, r.end) for r in part.reads] == [(0, 70)]
    for path in ("native", "python"):  # both executor read paths (option readPath)
        with pytest.raises(KafkaDataLossError, match=rf"{topic}\[0\] offsets 0..19 \(20 records\)"):
            list(reader(startingOffsets="earliest", failOnDataLoss="true", readPath=path).read(part))
        lenient = reader(startingOffsets="earliest", failOnDataLoss="false", readPath=path)
        offsets = [o for batch in lenient.read(part) for o in batch.column("offset").to_pylist()]
        assert offsets == list(range(20, 70))
    _released(strict)


def test_kinesis_records_trimmed_while_the_query_runs_fail_it_or_are_skipped(ks_proxy):
    """Retention trims a shard under a running samza-kinesis query (a proxy drops the oldest records from
    GetRecords answers): failOnDataLoss=true stops the query naming shard, stream and positions;
    failOnDataLoss=false goes on from the oldest record still there, nothing read twice."""
    ks = ks_proxy
    stream = ks.create_stream(1, "trim")
    acks = kh.put_records(ks.client, stream, [(f"pk{i}", f"r{i}".encode()) for i in range(300)])
    seqs = [int(a.sequence) for a in acks]
    trim = {"below": None}

    def retention(target, request, response):
        if target.endswith(".GetRecords") and trim["below"] is not None:
            kept = [r for r in response["Records"] if int(r["SequenceNumber"]) >= trim["below"]]
            if len(kept) < len(response["Records"]):
                # Kinesis would answer with the records after the trimmed ones; this page is what is left of
                # moto's, so say the shard is behind (moto puts the 300 records within a millisecond or two and
                # reports 0, which with an emptied page reads as "caught up")
                response["MillisBehindLatest"] = max(response.get("MillisBehindLatest", 0), 1000)
            response["Records"] = kept
            return response
        return None

    ks.proxy.transform = retention

    def run(name: str, fail: bool):
        trim["below"] = None
        read: list = []

        def after_batch(batch_id, rows):
            read.extend(rows)
            if trim["below"] is None:  # the first batch is done: now the next 100 records "expire"
                last = max(int(r.sequenceNumber) for r in rows)
                trim["below"] = seqs[seqs.index(last) + 101]

        query = ks.start_collecting(name, stream, on_batch=after_batch, maxRecordsPerShard="100",
                                    failOnDataLoss=str(fail).lower())
        return query, read

    query, read = run("strict", True)
    with pytest.raises(Exception) as err:
        query.awaitTermination(scaled(120))
    message = str(err.value)
    assert "shardId-000000000000" in message and stream in message and "failOnDataLoss" in message, message[-2000:]
    assert [int(r.sequenceNumber) for r in read] == seqs[:100]

    query, read = run("lenient", False)
    wait_for(lambda: len(read) >= 200, timeout=120, what="reads after the trimmed range")
    query.stop()
    assert query.exception() is None
    assert trim["below"] == seqs[200]
    assert sorted(int(r.sequenceNumber) for r in read) == seqs[:100] + seqs[200:]
