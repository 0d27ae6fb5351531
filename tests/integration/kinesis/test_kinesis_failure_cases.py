"""What AWS connector users report (issue #15), on a running samza-kinesis query, local Spark and moto:
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


def recreate(ks, stream: str, shards: int) -> None:
    """Delete ``stream`` and create it again under the same name (a creation time of its own)."""
    created = ks.client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"][
        "StreamCreationTimestamp"]
    kh.delete_stream(ks.client, stream)
    ks.wait_for(lambda: int(time.time()) > int(created.timestamp()), timeout=10, interval=0.05,
                what="the next second")

    def create() -> bool:
        try:
            kh.create_stream(ks.client, stream, shards)
            return True
        except ks.client.exceptions.ResourceInUseException:  # still being deleted
            return False

    ks.wait_for(create, timeout=60, what="the stream to be created again")


def run_until_recreated(ks, name: str, stream: str, **extra: str):
    """A query that reads ``stream``'s first records, during whose first batch (the driver waits in foreachBatch,
    so no trigger can fall between) the stream is deleted, re-created and given new records."""
    old = put(ks, stream, shard_keys(ks, stream)["shardId-000000000000"], "old", 5)
    new: list[bytes] = []

    def on_batch(batch_id, rows):
        if rows and not new:
            recreate(ks, stream, 1)
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
    ks.wait_for(lambda: len(ks.collected("tolerant")) >= len(old) + len(new), timeout=120,
                what="the new stream's records")
    query.stop()
    assert query.exception() is None
    assert sorted(r.data for r in ks.collected("tolerant")) == sorted(old + new)  # each once, none skipped
