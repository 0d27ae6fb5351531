"""What users of AWS's Kinesis connector report, on a running samza-kinesis query, local Spark and moto:
a query started at ``LATEST`` whose shard stays idle for several batches, and a stream deleted and re-created
under a running query."""

from __future__ import annotations

import time

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.query_harness import failure_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def shard_keys(ks, stream) -> dict[str, str]:
    """shard id -> an explicit hash key routed to it."""
    return {s["ShardId"]: s["HashKeyRange"]["StartingHashKey"] for s in kh.list_shards(ks.client, stream)}


def spark_store_uri(dynamodb_store_uri: str) -> str:
    """The store URI with the harness's dummy keys: Spark's Python workers do not see the test's environment."""
    return dynamodb_store_uri + "&aws_access_key_id=testing&aws_secret_access_key=testing"


def table_of(dynamodb_store_uri: str) -> str:
    return dynamodb_store_uri.split("://", 1)[1].split("?", 1)[0]


def put(ks, stream, key: str, tag: str, n: int = 1) -> list[bytes]:
    data = [f"{tag}-{i}".encode() for i in range(n)]
    kh.put_records(ks.client, stream, [(f"pk-{i}", d, key) for i, d in enumerate(data)])
    return data


def test_latest_on_a_shard_idle_for_several_batches_reads_what_arrives_later(ks):
    stream = ks.create_stream(2, "idle")
    keys = shard_keys(ks, stream)
    idle, busy = sorted(keys)
    before = put(ks, stream, keys[idle], "before", 5) + put(ks, stream, keys[busy], "before-busy", 5)
    query = ks.start_collecting("idle", stream, startingPosition="LATEST")

    def data() -> list[bytes]:
        return [r.data for r in ks.collected("idle")]

    # LATEST is fixed at the query's first trigger: a record put to the busy shard is read once it is after it
    probes: list[bytes] = []

    def probe_read() -> bool:
        probes.extend(put(ks, stream, keys[busy], f"probe{len(probes)}"))
        time.sleep(0.5)
        return any(p in data() for p in probes)

    ks.wait_for(probe_read, timeout=120, interval=0.1, what="a first batch after LATEST")
    # several batches in which only the busy shard has records; the idle one stays idle throughout
    batches_before = len(ks.batches["idle"])
    for round_ in range(3):
        sent = put(ks, stream, keys[busy], f"busy{round_}", 3)
        ks.wait_for(lambda sent=sent: all(d in data() for d in sent), timeout=120, what=f"busy round {round_}")
    assert len(ks.batches["idle"]) >= batches_before + 3
    assert not any(r.shardId == idle for r in ks.collected("idle"))
    # now the idle shard receives records: they are read, every one, once
    late = put(ks, stream, keys[idle], "late", 7)
    ks.wait_for(lambda: all(d in data() for d in late), timeout=120, what="the idle shard's new records")
    query.stop()
    assert query.exception() is None
    idle_rows = sorted(r.data for r in ks.collected("idle") if r.shardId == idle)
    assert idle_rows == sorted(late)
    assert not set(before) & set(data())  # nothing from before LATEST


def run_until_recreated(ks, name: str, stream: str, **extra: str):
    """A query that reads ``stream``'s first records, during whose first batch (the driver waits in foreachBatch,
    so no trigger can fall between) the stream is deleted, re-created and given new records."""
    old = put(ks, stream, shard_keys(ks, stream)["shardId-000000000000"], "old", 5)
    new: list[bytes] = []

    def on_batch(batch_id, rows):
        if rows and not new:
            kh.recreate_stream(ks.client, stream, 1)
            new.extend(put(ks, stream, shard_keys(ks, stream)["shardId-000000000000"], "new", 8))

    query = ks.start_collecting(name, stream, on_batch=on_batch, **extra)
    return query, old, new


def test_a_stream_recreated_under_a_running_query_stops_it_naming_the_stream(ks):
    stream = ks.create_stream(1, "recreated-live")
    query, old, new = run_until_recreated(ks, "live", stream)
    message = failure_of(query)
    assert f"stream {stream!r} was deleted and re-created" in message and "failOnDataLoss=false" in message
    assert "testing" not in message  # the harness's AWS keys
    assert new and sorted(r.data for r in ks.collected("live")) == sorted(old)  # nothing of the new stream


def test_a_stream_recreated_under_a_running_query_is_read_from_its_start_without_fail_on_data_loss(ks):
    stream = ks.create_stream(1, "recreated-tolerant")
    query, old, new = run_until_recreated(ks, "tolerant", stream, failOnDataLoss="false")
    ks.wait_for(lambda: new and len(ks.collected("tolerant")) >= len(old) + len(new), timeout=120,
                what="the new stream's records")
    query.stop()
    assert query.exception() is None
    assert sorted(r.data for r in ks.collected("tolerant")) == sorted(old + new)  # each once, none skipped


def test_throttled_writes_at_commit_are_retried_and_no_checkpoint_is_lost(ks, aws_faults, dynamodb_store_uri):
    """The KCL lease table and the DynamoDB metadata store both answer writes with
    ProvisionedThroughputExceededException (from the moto server, over HTTP) while the query commits: botocore's
    retries (the one policy of DynamoDB calls) carry every write through; the checkpoint lands in both, exactly
    where the batches ended, and every record is read once."""
    from spark_samza_source.core.checkpoint import CheckpointMirror
    from spark_samza_source.kinesis.driver.lease_table import WHOLE_RECORD_SUB, KclLeaseTable
    from spark_samza_source.metadata import open_store

    stream = ks.create_stream(1, "commit-throttled")
    lease_table = f"kcl-{ks.job}"
    store_table = table_of(dynamodb_store_uri)
    options = {"kcl.leaseTable": lease_table, "metadata.store": spark_store_uri(dynamodb_store_uri),
               "maxRecordsPerShard": "4"}
    first = put(ks, stream, shard_keys(ks, stream)["shardId-000000000000"], "a", 10)
    lease_writes = aws_faults.add("UpdateItem", match=lease_table, times=3)
    store_writes = aws_faults.add("PutItem", match=store_table, times=3)
    # the clean-up of committed batch ends deletes them in bulk (BatchWriteItem), not one DeleteItem each
    store_deletes = aws_faults.add("BatchWriteItem", match=store_table, times=2)
    assert sorted(r.data for r in ks.run_available_now("c", stream, **options)) == sorted(first)
    later = put(ks, stream, shard_keys(ks, stream)["shardId-000000000000"], "b", 3)
    assert sorted(r.data for r in ks.run_available_now("c", stream, **options)) == sorted(later)
    # a run commits the batches the run before it left uncommitted (Spark commits a run's last batch at the next)
    assert ks.run_available_now("c", stream, **options) == []
    for rule in (lease_writes, store_writes, store_deletes):
        counts = aws_faults.counts(rule)
        assert counts["failed"] == (2 if rule == store_deletes else 3) and counts["seen"] > counts["failed"]
    last = max(kh.read_shard_raw(ks.client, stream, "shardId-000000000000"), key=lambda r: int(r["SequenceNumber"]))
    items = KclLeaseTable(kh.dynamodb_client(ks.dynamodb_endpoint), lease_table).read_items()
    checkpoint = items["shardId-000000000000"]
    assert checkpoint["checkpoint"] == {"S": last["SequenceNumber"]}
    assert checkpoint["checkpointSubSequenceNumber"] == {"N": str(WHOLE_RECORD_SUB)}
    mirrored = CheckpointMirror(open_store(dynamodb_store_uri, ks.job)).read()
    assert mirrored is not None
    assert last["SequenceNumber"] in str(mirrored.positions)


def test_a_store_unreachable_for_longer_than_the_ttl_stops_the_driver_with_a_clear_error(ks, aws_faults,
                                                                                          dynamodb_store_uri):
    """The DynamoDB metadata store stops answering (HTTP 503 from the server, to every request for its table) for
    longer than ``job.lease.ttl`` while the driver waits in a batch: the heartbeat cannot renew the lease, which
    expires. When the store answers again the driver does not carry on as if it still owned the job (another query
    may have taken it over meanwhile): its next call, the batch's commit, stops the query naming the job, the
    store, the TTL and what to do."""
    stream = ks.create_stream(1, "store-down")
    store_table = table_of(dynamodb_store_uri)
    store = spark_store_uri(dynamodb_store_uri) + "&max_attempts=2"  # a failing store call gives up within ~1 s
    put(ks, stream, shard_keys(ks, stream)["shardId-000000000000"], "a", 3)
    ttl_s = 3
    outage: dict = {}

    def on_batch(batch_id, rows):
        if outage:
            return
        outage["rule"] = aws_faults.add("", code="ServiceUnavailable", status=503, match=store_table)
        started = time.monotonic()
        # the heartbeat (every ttl/3) keeps trying and failing; wait past the TTL and a few failed attempts
        ks.wait_for(lambda: time.monotonic() - started > ttl_s + 2
                    and aws_faults.counts(outage["rule"])["failed"] >= 4, timeout=120, what="renewals failing")
        outage["failed"] = aws_faults.counts(outage["rule"])["failed"]
        aws_faults.clear()  # the store answers again

    query = ks.start_collecting("down", stream, on_batch=on_batch,
                                **{"metadata.store": store, "job.lease.ttl": f"{ttl_s}s"})
    message = failure_of(query)
    assert outage["failed"] >= 4
    assert f"job.name '{ks.job}'" in message and store_table in message
    assert "could not renew its lease on the job" in message and f"job.lease.ttl = {ttl_s} s" in message
    assert "stops rather than run on without its lease" in message
    assert "testing" not in message  # the harness's AWS keys
