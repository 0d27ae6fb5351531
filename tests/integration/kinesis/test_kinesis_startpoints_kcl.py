"""samza-kinesis Startpoints, the KCL lease-table mirror and seeding, and KPL aggregates, on live queries."""

import pytest

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import (
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from spark_samza_source.kinesis.driver.lease_table import KclLeaseTable

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def put_to_shard(ks, stream, shard_id, tag, count):
    key = next(s["HashKeyRange"]["StartingHashKey"] for s in kh.list_shards(ks.client, stream)
               if s["ShardId"] == shard_id)
    return kh.put_records(ks.client, stream, [(f"pk-{i}", f"{tag}-{i}".encode(), key) for i in range(count)])


def slot_of(stream, n=0):
    return SystemStreamPartition("kinesis", stream, n)


# moto and kinesis-mock: on kinesalite the AT_TIMESTAMP step's GetShardIterator times out in the reader (not
# diagnosed; kinesalite refuses AT_TIMESTAMP later than its clock with InvalidArgumentException)
@pytest.mark.kinesis_mock_too
def test_startpoints_of_every_type_on_a_stopped_query(ks):
    """Each type applies where it says: Oldest replays the shard, Specific starts at its sequence number, Upcoming
    skips what is in the shard when applied and reads what comes after, Timestamp starts after its instant; each is
    applied once and deleted (docs/guarantees.md: "A startpoint is applied once, recorded in the offset, and deleted
    only if unchanged")."""
    stream = ks.create_stream(1, "sp")
    first = put_to_shard(ks, stream, "shardId-000000000000", "a", 30)
    assert len(ks.run_available_now("sp", stream)) == 30
    manager = ks.startpoints()

    manager.write(slot_of(stream), StartpointOldest())
    assert len(ks.run_available_now("sp", stream)) == 30  # replayed from the start of the shard

    manager.write(slot_of(stream), StartpointSpecific(first[10].sequence))
    replay = ks.run_available_now("sp", stream)
    assert [r.data for r in replay] == [a.data for a in first[10:]]
    assert manager.list() == []  # the Oldest one was deleted when this run started

    # Upcoming: what is in the shard when it is applied (this run's first plan) is skipped -- an ignored startpoint
    # would read these 5 -- and what arrives after it is read, once (a re-applied one would skip it again).
    skipped = put_to_shard(ks, stream, "shardId-000000000000", "s", 5)
    manager.write(slot_of(stream), StartpointUpcoming())
    assert ks.run_available_now("sp", stream) == []
    later = put_to_shard(ks, stream, "shardId-000000000000", "b", 5)
    upcoming = ks.run_available_now("sp", stream)
    assert [r.data for r in upcoming] == [a.data for a in later]
    assert not any(r.data.startswith(b"s-") for r in ks.collected("sp")), skipped

    rows = ks.collected("sp")
    stamp = max(r.approximateArrivalTimestamp for r in rows)
    manager.write(slot_of(stream), StartpointTimestamp(int(stamp.timestamp() * 1000) + 1))
    newest = put_to_shard(ks, stream, "shardId-000000000000", "c", 4)
    by_time = ks.run_available_now("sp", stream)
    assert [r.data for r in by_time][-4:] == [a.data for a in newest]
    assert not any(r.data.startswith(b"a-") for r in by_time)
    ks.run_available_now("sp", stream)  # one more start: every applied startpoint is gone, none re-applied
    assert manager.list() == []
    assert len(ks.collected("sp")) == len(rows) + len(by_time)


@pytest.mark.both_emulators
def test_oldest_startpoint_written_while_running(ks):
    stream = ks.create_stream(2, "sprun")
    put_to_shard(ks, stream, "shardId-000000000000", "a", 20)
    put_to_shard(ks, stream, "shardId-000000000001", "b", 20)
    query = ks.start_collecting("sprun", stream, **{"startpoint.pollInterval": "1s"})
    ks.wait_for(lambda: len(ks.collected("sprun")) == 40, what="the backlog")
    # 2 tasks x 2 slots, numbered globally: Task-1 owns slots 2 and 3, and shard 1 took slot 2.
    ks.startpoints().write(slot_of(stream, 2), StartpointOldest())
    ks.wait_for(lambda: len(ks.collected("sprun")) == 60, timeout=60, what="shard 1 replayed")
    ks.wait_for(lambda: ks.startpoints().list() == [], timeout=30, what="startpoint deleted after commit")
    query.stop()
    rows = ks.collected("sprun")
    assert sorted(r.data for r in rows if r.shardId.endswith("1")) == sorted([f"b-{i}".encode() for i in range(20)] * 2)
    assert len([r for r in rows if r.shardId.endswith("0")]) == 20


@pytest.mark.both_emulators
def test_lease_table_mirror_and_resuming_from_kcl_checkpoints(ks):
    stream = ks.create_stream(2, "kcl")
    table_name = f"kcl-{ks.job}"
    put_to_shard(ks, stream, "shardId-000000000000", "a", 10)
    put_to_shard(ks, stream, "shardId-000000000001", "b", 10)
    ks.run_available_now("kcl", stream, **{"kcl.leaseTable": table_name})
    kh.split_shard(ks.client, stream, "shardId-000000000000")
    put_to_shard(ks, stream, "shardId-000000000002", "c", 3)
    ks.run_available_now("kcl", stream, **{"kcl.leaseTable": table_name})
    ks.run_available_now("kcl", stream, **{"kcl.leaseTable": table_name})  # commits the previous run's batches
    table = KclLeaseTable(kh.dynamodb_client(ks.dynamodb_endpoint), table_name)
    items = table.read_items()
    assert {"shardId-000000000000", "shardId-000000000001"} <= set(items)
    assert items["shardId-000000000000"]["checkpoint"] == {"S": "SHARD_END"} or \
        items["shardId-000000000000"].get("checkpoint") == "SHARD_END"
    for item in items.values():
        assert {"leaseKey", "checkpoint", "checkpointSubSequenceNumber", "leaseCounter", "leaseOwner"} <= set(item)

    # A table written the way a KCL worker writes it: resume right after its checkpoints.
    stream2 = ks.create_stream(1, "kclseed")
    acks = put_to_shard(ks, stream2, "shardId-000000000000", "k", 12)
    kcl_table = f"kclapp-{ks.job}"
    dynamo = kh.dynamodb_client(ks.dynamodb_endpoint)
    dynamo.create_table(TableName=kcl_table, KeySchema=[{"AttributeName": "leaseKey", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "leaseKey", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
    dynamo.put_item(TableName=kcl_table, Item={
        "leaseKey": {"S": "shardId-000000000000"}, "checkpoint": {"S": acks[4].sequence},
        "checkpointSubSequenceNumber": {"N": "0"}, "leaseCounter": {"N": "7"}, "leaseOwner": {"S": "kcl-worker-1"},
        "ownerSwitchesSinceCheckpoint": {"N": "0"},
    })
    seeded = ks.run_available_now("kclseed", stream2, startingPosition="kcl", **{"kcl.leaseTable": kcl_table})
    assert [r.data for r in seeded] == [a.data for a in acks[5:]]


@pytest.mark.both_emulators
def test_kpl_aggregates_are_deaggregated_and_a_restart_inside_one_loses_and_repeats_nothing(ks):
    stream = ks.create_stream(1, "kpl")
    key = next(s["HashKeyRange"]["StartingHashKey"] for s in kh.list_shards(ks.client, stream))
    aggregates = [[(f"pk-{a}-{i}", f"agg{a}-{i}".encode()) for i in range(7)] for a in range(6)]
    kh.put_aggregated(ks.client, stream, aggregates, explicit_hash_key=key)
    expected = [u[1] for group in aggregates for u in group]
    got = []
    for _ in range(12):  # 5 user records per run: runs end inside aggregates
        got += [r.data for r in ks.run_available_now("kpl", stream, maxRecordsPerShard="5")]
        if len(got) >= len(expected):
            break
    assert got == expected
    rows = ks.collected("kpl")
    assert sorted({r.subSequenceNumber for r in rows}) == list(range(7))
