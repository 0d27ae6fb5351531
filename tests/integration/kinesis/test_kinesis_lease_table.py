"""KclLeaseTable against DynamoDB in moto server mode: KCL's schema, round trips, KCL-written tables, conflicts."""

from __future__ import annotations

import re

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.aws_fixtures import unique_aws_name
from spark_samza_source.kinesis.driver.lease_table import WHOLE_RECORD_SUB, KclLeaseTable, from_kcl_checkpoint
from spark_samza_source.kinesis.errors import KclLeaseConflictError, KinesisSourceError
from spark_samza_source.kinesis.executor.shard_reads import read_shard
from spark_samza_source.kinesis.kpl import UserRecord
from spark_samza_source.kinesis.positions import ShardPosition

SEQ = "49590338271490256608559692538361571095921575989136588898"
OWNER = "samza-clicks-etl"


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


@pytest.fixture
def dynamodb(moto_server, aws_region):
    client = kh.dynamodb_client(moto_server, aws_region)
    yield client
    client.close()


@pytest.fixture
def table(dynamodb):
    name = unique_aws_name("kcl-app")
    yield name
    try:
        dynamodb.delete_table(TableName=name)
    except dynamodb.exceptions.ResourceNotFoundException:
        pass


def item(dynamodb, table, key):
    return dynamodb.get_item(TableName=table, Key={"leaseKey": {"S": key}}, ConsistentRead=True)["Item"]


def test_ensure_table_creates_the_kcl_schema_once(dynamodb, table):
    leases = KclLeaseTable(dynamodb, table)
    leases.ensure_table()
    leases.ensure_table()  # idempotent
    desc = dynamodb.describe_table(TableName=table)["Table"]
    assert desc["KeySchema"] == [{"AttributeName": "leaseKey", "KeyType": "HASH"}]
    assert desc["AttributeDefinitions"] == [{"AttributeName": "leaseKey", "AttributeType": "S"}]
    assert desc["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"


def test_a_table_with_another_schema_is_refused(dynamodb, table):
    dynamodb.create_table(TableName=table, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                          BillingMode="PAY_PER_REQUEST")
    with pytest.raises(KinesisSourceError, match=rf"{table}.*not a KCL lease table"):
        KclLeaseTable(dynamodb, table).ensure_table()


def test_round_trip_of_every_position_type_with_kcl_attributes(dynamodb, table):
    leases = KclLeaseTable(dynamodb, table)
    leases.ensure_table()
    positions = {
        sid(0): (ShardPosition.shard_end(), []),
        sid(1): (ShardPosition.after_sequence(SEQ), []),
        sid(2): (ShardPosition.after_sequence(SEQ, 3), [sid(0)]),
        sid(3): (ShardPosition.at_sequence(SEQ), [sid(0)]),
        sid(4): (ShardPosition.trim_horizon(), [sid(1), sid(2)]),
        sid(5): (ShardPosition.at_timestamp(1_700_000_000_123), []),
    }
    assert leases.write_checkpoints(positions, OWNER, hash_ranges={sid(4): (0, 2**128 - 1)}) == 6
    assert leases.read_checkpoints() == {k: p for k, (p, _) in positions.items()}
    assert item(dynamodb, table, sid(2)) == {
        "leaseKey": {"S": sid(2)}, "checkpoint": {"S": SEQ}, "checkpointSubSequenceNumber": {"N": "3"},
        "leaseCounter": {"N": "1"}, "leaseOwner": {"S": OWNER}, "ownerSwitchesSinceCheckpoint": {"N": "0"},
        "parentShardId": {"SS": [sid(0)]},
    }
    assert item(dynamodb, table, sid(0))["checkpoint"] == {"S": "SHARD_END"}
    assert item(dynamodb, table, sid(1))["checkpointSubSequenceNumber"] == {"N": str(WHOLE_RECORD_SUB)}
    assert item(dynamodb, table, sid(3))["checkpointSubSequenceNumber"] == {"N": "-1"}
    four = item(dynamodb, table, sid(4))
    assert four["checkpoint"] == {"S": "TRIM_HORIZON"} and sorted(four["parentShardId"]["SS"]) == [sid(1), sid(2)]
    assert four["startingHashKey"] == {"S": "0"} and four["endingHashKey"] == {"S": str(2**128 - 1)}
    assert "parentShardId" not in item(dynamodb, table, sid(1))

    # the next commit bumps the counter of changed leases only
    moved = {sid(1): (ShardPosition.after_sequence(SEQ[:-1] + "9"), []), sid(0): positions[sid(0)]}
    assert leases.write_checkpoints(moved, OWNER) == 1
    assert item(dynamodb, table, sid(1))["leaseCounter"] == {"N": "2"}
    assert item(dynamodb, table, sid(0))["leaseCounter"] == {"N": "1"}
    # a moved timestamp position drops our timestamp attribute
    leases.write_checkpoints({sid(5): (ShardPosition.shard_end(), [])}, OWNER)
    assert "samzaAtTimestampMs" not in item(dynamodb, table, sid(5))


def test_a_table_written_by_a_kcl_worker_is_read_back(dynamodb, table):
    KclLeaseTable(dynamodb, table).ensure_table()

    def lease(key, checkpoint, sub=None, **extra):
        it = {"leaseKey": {"S": key}, "leaseCounter": {"N": "57"}, "leaseOwner": {"S": "worker-1a2b"},
              "ownerSwitchesSinceCheckpoint": {"N": "0"}, "checkpoint": {"S": checkpoint}}
        if sub is not None:
            it["checkpointSubSequenceNumber"] = {"N": str(sub)}
        it.update(extra)
        dynamodb.put_item(TableName=table, Item=it)

    lease(sid(0), "SHARD_END", 0, childShardIds={"SS": [sid(2), sid(3)]})
    lease(sid(1), SEQ, 0, startingHashKey={"S": "0"}, endingHashKey={"S": "99"})  # plain record: sub 0
    lease(sid(2), SEQ, 4, parentShardId={"SS": [sid(0)]},
          pendingCheckpoint={"S": SEQ[:-1] + "9"}, pendingCheckpointSubSequenceNumber={"N": "0"})
    lease(sid(3), "TRIM_HORIZON", 0, parentShardId={"SS": [sid(0)]})
    lease(sid(4), "LATEST", 0)
    lease(sid(5), SEQ)  # an old KCL: no sub-sequence attribute
    leases = KclLeaseTable(dynamodb, table)
    latest = ShardPosition.at_timestamp(42)
    assert leases.read_checkpoints(latest=latest) == {
        sid(0): ShardPosition.shard_end(),
        sid(1): ShardPosition.after_sequence(SEQ, 0),
        sid(2): ShardPosition.after_sequence(SEQ, 4),  # a pending (prepared) checkpoint is not a checkpoint
        sid(3): ShardPosition.trim_horizon(),
        sid(4): latest,
        sid(5): ShardPosition.after_sequence(SEQ),
    }
    lease(sid(6), "AT_TIMESTAMP", 0)
    with pytest.raises(KinesisSourceError, match=rf"{sid(6)} is checkpointed at AT_TIMESTAMP.*at_timestamp_ms"):
        leases.read_checkpoints()
    assert leases.read_checkpoints(at_timestamp_ms=7)[sid(6)] == ShardPosition.at_timestamp(7)
    lease(sid(7), "garbage")
    with pytest.raises(KinesisSourceError, match=rf"row '{sid(7)}' is damaged: checkpoint 'garbage' is neither"):
        leases.read_checkpoints(at_timestamp_ms=7)


@pytest.mark.parametrize(("attribute", "value", "what"), [
    ("checkpoint", {"N": "5"}, "attribute checkpoint is the number .5., not a string"),
    ("checkpointSubSequenceNumber", {"S": "four"}, "attribute checkpointSubSequenceNumber is of type S, not an "
                                                   "integer number"),
    ("checkpointSubSequenceNumber", {"N": "1.5"}, "is the number .1\\.5., not an integer number"),
    ("checkpoint", {"S": SEQ + "x"}, "is neither a sequence number nor one of"),
])
def test_a_damaged_lease_row_fails_a_start_from_the_table_and_is_left_alone_by_the_mirror(
        dynamodb, table, attribute, value, what):
    """The damaged-record rule for KCL lease rows (core/damage.py): a query starting from the table fails naming the
    row, what is wrong and the repair; the mirror leaves the row as it is, writes every other lease, says so once
    and counts it; once the row is repaired (deleted), the next mirror write puts the lease back.

    Backs docs/guarantees.md: the KCL lease row rows of "Damaged records in the metadata store: one rule"."""
    leases = KclLeaseTable(dynamodb, table)
    leases.ensure_table()
    good = ShardPosition.after_sequence(SEQ, 0)
    leases.write_checkpoints({sid(0): (good, ()), sid(1): (good, ())}, owner=OWNER)
    dynamodb.update_item(TableName=table, Key={"leaseKey": {"S": sid(1)}},
                         UpdateExpression="SET #a = :v", ExpressionAttributeNames={"#a": attribute},
                         ExpressionAttributeValues={":v": value})
    damaged = item(dynamodb, table, sid(1))

    with pytest.raises(KinesisSourceError, match=rf"row '{sid(1)}' is damaged: .*{what}.*Repair: correct") as err:
        KclLeaseTable(dynamodb, table).read_checkpoints()
    assert err.value.condition == "SAMZA_KINESIS_KCL_CHECKPOINT_UNREADABLE"

    later = ShardPosition.after_sequence(SEQ[:-1] + "9", 0)
    mirror = KclLeaseTable(dynamodb, table)
    assert mirror.write_checkpoints({sid(0): (later, ()), sid(1): (later, ())}, owner=OWNER) == 1
    assert item(dynamodb, table, sid(1)) == damaged  # never written over
    assert item(dynamodb, table, sid(0))["checkpoint"] == {"S": later.sequence}
    assert list(mirror.damaged) == [sid(1)] and re.search(what, mirror.damaged[sid(1)])

    dynamodb.delete_item(TableName=table, Key={"leaseKey": {"S": sid(1)}})  # the repair the rule names
    assert mirror.write_checkpoints({sid(0): (later, ()), sid(1): (later, ())}, owner=OWNER) == 1
    assert mirror.damaged == {}
    assert KclLeaseTable(dynamodb, table).read_checkpoints() == {sid(0): later, sid(1): later}


def test_multi_stream_tables(dynamodb, table):
    KclLeaseTable(dynamodb, table).ensure_table()
    for stream, checkpoint in (("orders", SEQ), ("clicks", "SHARD_END")):
        stream_id = f"123456789012:{stream}:1700000000"
        dynamodb.put_item(TableName=table, Item={
            "leaseKey": {"S": f"{stream_id}:{sid(0)}"}, "streamName": {"S": stream_id}, "shardId": {"S": sid(0)},
            "checkpoint": {"S": checkpoint}, "checkpointSubSequenceNumber": {"N": "0"},
            "leaseCounter": {"N": "3"}, "ownerSwitchesSinceCheckpoint": {"N": "0"}})
    leases = KclLeaseTable(dynamodb, table)
    assert leases.read_checkpoints(stream="orders") == {sid(0): ShardPosition.after_sequence(SEQ, 0)}
    assert leases.read_checkpoints(stream="clicks") == {sid(0): ShardPosition.shard_end()}
    with pytest.raises(KinesisSourceError, match=r"several streams \(\['clicks', 'orders'\]\)"):
        leases.read_checkpoints()


def test_a_live_kcl_worker_is_not_clobbered(dynamodb, table):
    leases = KclLeaseTable(dynamodb, table)
    leases.ensure_table()
    leases.write_checkpoints({sid(0): (ShardPosition.after_sequence("10"), []),
                              sid(1): (ShardPosition.after_sequence("20"), [])}, OWNER)
    # a KCL worker takes shard 0 and renews it (leaseCounter moves)
    dynamodb.update_item(TableName=table, Key={"leaseKey": {"S": sid(0)}},
                         UpdateExpression="SET leaseOwner = :o, leaseCounter = leaseCounter + :one",
                         ExpressionAttributeValues={":o": {"S": "kcl-worker-7"}, ":one": {"N": "1"}})
    with pytest.raises(KclLeaseConflictError, match=rf"{sid(0)} \(leaseCounter moved from 1 to 2, owner "
                                                    r"'kcl-worker-7'\).*Stop any KCL application"):
        # a new object per commit (as the coordinator does) still remembers this process's last write
        KclLeaseTable(dynamodb, table).write_checkpoints({sid(0): (ShardPosition.after_sequence("11"), []),
                                                          sid(1): (ShardPosition.after_sequence("21"), [])}, OWNER)
    assert item(dynamodb, table, sid(0))["checkpoint"] == {"S": "10"}  # untouched
    assert item(dynamodb, table, sid(1))["checkpoint"] == {"S": "21"}  # the others were written


def test_many_leases_are_written_from_a_pool_with_the_same_results(dynamodb, table):
    """More leases than the pool has threads (10), two of them renewed by a live KCL worker and one raced by another
    writer: every other lease is written with its counter; the conflicts are named in shard order, whichever
    thread met them; a commit that changes nothing writes nothing."""
    leases = KclLeaseTable(dynamodb, table)
    leases.ensure_table()
    first = {sid(n): (ShardPosition.after_sequence(str(100 + n)), [sid(1000 + n)] if n % 7 == 0 else [])
             for n in range(35)}
    assert leases.write_checkpoints(first, OWNER) == 35
    for n in (3, 29):
        dynamodb.update_item(TableName=table, Key={"leaseKey": {"S": sid(n)}},
                             UpdateExpression="SET leaseOwner = :o, leaseCounter = leaseCounter + :one",
                             ExpressionAttributeValues={":o": {"S": "kcl-worker-7"}, ":one": {"N": "1"}})
    stale = leases.read_items()
    dynamodb.update_item(TableName=table, Key={"leaseKey": {"S": sid(17)}},
                         UpdateExpression="SET leaseCounter = leaseCounter + :one",
                         ExpressionAttributeValues={":one": {"N": "1"}})
    raced = KclLeaseTable(dynamodb, table)
    raced._written.pop(sid(17))  # only the conditional write can tell that one
    raced.read_items = lambda: stale  # read just before the other writer wrote
    second = {sid(n): (ShardPosition.after_sequence(str(200 + n)), first[sid(n)][1]) for n in range(35)}
    with pytest.raises(KclLeaseConflictError, match=rf"{sid(3)} \(leaseCounter moved.*{sid(17)} \(changed by "
                                                    rf"someone else.*{sid(29)} \(leaseCounter moved"):
        raced.write_checkpoints(second, OWNER)
    for n in range(35):
        row = item(dynamodb, table, sid(n))
        if n in (3, 17, 29):
            assert row["checkpoint"] == {"S": str(100 + n)}  # untouched
        else:
            assert row["checkpoint"] == {"S": str(200 + n)} and row["leaseCounter"] == {"N": "2"}
            assert row.get("parentShardId") == ({"SS": [sid(1000 + n)]} if n % 7 == 0 else None)
    unchanged = {sid(n): second[sid(n)] for n in range(35) if n not in (3, 17, 29)}
    assert KclLeaseTable(dynamodb, table).write_checkpoints(unchanged, OWNER) == 0


def test_stale_foreign_leases_are_taken_over_unless_disabled(dynamodb, table):
    KclLeaseTable(dynamodb, table).ensure_table()
    dynamodb.put_item(TableName=table, Item={
        "leaseKey": {"S": sid(0)}, "checkpoint": {"S": "5"}, "checkpointSubSequenceNumber": {"N": "0"},
        "leaseCounter": {"N": "900"}, "leaseOwner": {"S": "stopped-kcl-worker"},
        "ownerSwitchesSinceCheckpoint": {"N": "2"}})
    with pytest.raises(KclLeaseConflictError, match=r"held by 'stopped-kcl-worker'"):
        KclLeaseTable(dynamodb, table, take_over=False).write_checkpoints(
            {sid(0): (ShardPosition.after_sequence("6"), [])}, OWNER)
    KclLeaseTable(dynamodb, table).write_checkpoints({sid(0): (ShardPosition.after_sequence("6"), [])}, OWNER)
    taken = item(dynamodb, table, sid(0))
    assert taken["leaseOwner"] == {"S": OWNER} and taken["leaseCounter"] == {"N": "901"}
    assert taken["ownerSwitchesSinceCheckpoint"] == {"N": "0"} and taken["checkpoint"] == {"S": "6"}


def test_a_write_racing_with_another_worker_is_a_conflict(dynamodb, table):
    leases = KclLeaseTable(dynamodb, table)
    leases.ensure_table()
    leases.write_checkpoints({sid(0): (ShardPosition.after_sequence("10"), [])}, OWNER)
    stale = leases.read_items()
    dynamodb.update_item(TableName=table, Key={"leaseKey": {"S": sid(0)}},
                         UpdateExpression="SET leaseCounter = leaseCounter + :one",
                         ExpressionAttributeValues={":one": {"N": "1"}})
    fresh = KclLeaseTable(dynamodb, table)
    fresh._written.clear()  # as after a driver restart: only the conditional write can tell
    fresh.read_items = lambda: stale  # it read the table just before the other worker wrote
    with pytest.raises(KclLeaseConflictError, match=rf"{sid(0)} \(changed by someone else while we wrote it, "
                                                  rf"owner '{OWNER}'\)"):
        fresh.write_checkpoints({sid(0): (ShardPosition.after_sequence("11"), [])}, OWNER)
    assert item(dynamodb, table, sid(0))["checkpoint"] == {"S": "10"}


def test_reading_resumes_right_after_kcl_checkpoints(dynamodb, table, moto_server, aws_region):
    """startingPosition=kcl: a plain record checkpointed (S, 0) resumes at the next record; an aggregate
    checkpointed at sub 1 resumes at its sub-record 2."""
    kinesis = kh.kinesis_client(moto_server, aws_region)
    stream = kh.create_stream(kinesis, kh.unique_stream_name("kcl"), 1)
    plain = kh.put_records(kinesis, stream, [b"p0", b"p1"])
    (agg,) = kh.put_aggregated(kinesis, stream, [[UserRecord("k", b"a0"), UserRecord("k", b"a1"),
                                                  UserRecord("k", b"a2")]])
    KclLeaseTable(dynamodb, table).ensure_table()
    for key, (seq, sub) in {sid(0): (plain[0].sequence, 0), sid(1): (agg.sequence, 1)}.items():
        dynamodb.put_item(TableName=table, Item={
            "leaseKey": {"S": key}, "checkpoint": {"S": seq}, "checkpointSubSequenceNumber": {"N": str(sub)},
            "leaseCounter": {"N": "1"}, "ownerSwitchesSinceCheckpoint": {"N": "0"}})
    positions = KclLeaseTable(dynamodb, table).read_checkpoints()

    def data_from(pos):
        res = read_shard(kinesis, stream, sid(0), pos, task="t", min_call_interval_ms=0)
        return res.table().column("data").to_pylist()

    assert data_from(positions[sid(0)]) == [b"p1", b"a0", b"a1", b"a2"]
    assert data_from(positions[sid(1)]) == [b"a2"]
    # and our own AT / AFTER(-1) encodings mean the same to a reader
    assert data_from(from_kcl_checkpoint(plain[1].sequence, -1)) == [b"p1", b"a0", b"a1", b"a2"]
    assert data_from(from_kcl_checkpoint(agg.sequence, WHOLE_RECORD_SUB)) == []
    kh.delete_stream(kinesis, stream)
    kinesis.close()


# ---- writes at commit under throttling and lost answers, answered by the moto server ------------------------------
@pytest.fixture
def product_dynamodb(moto_server, aws_region):
    """The product's own DynamoDB client (botocore standard retries: the one retry policy of DynamoDB calls)."""
    from spark_samza_source.kinesis.client import AwsClientSettings, clear_client_cache, dynamodb_client

    clear_client_cache()
    yield dynamodb_client(AwsClientSettings(region=aws_region, endpoint_url=moto_server))
    clear_client_cache()


def test_throttled_checkpoint_writes_are_retried_and_land(dynamodb, product_dynamodb, table, aws_faults):
    leases = KclLeaseTable(product_dynamodb, table)
    leases.ensure_table()
    rule = aws_faults.add("UpdateItem", code="ProvisionedThroughputExceededException", times=2, match=table)
    assert leases.write_checkpoints({sid(0): (ShardPosition.after_sequence("10"), [])}, OWNER) == 1
    assert aws_faults.counts(rule) == {"seen": 3, "failed": 2}  # botocore's retries, none of ours on top
    assert item(dynamodb, table, sid(0))["checkpoint"] == {"S": "10"}


def test_a_checkpoint_write_whose_answer_was_lost_is_not_a_conflict(dynamodb, product_dynamodb, table, aws_faults):
    """DynamoDB applied the write but its answer was lost (HTTP 500): botocore's retry fails its condition. That
    is our own write, not another worker's: no conflict, and the next commit writes on (never a lost checkpoint)."""
    leases = KclLeaseTable(product_dynamodb, table)
    leases.ensure_table()
    leases.write_checkpoints({sid(0): (ShardPosition.after_sequence("10"), [])}, OWNER)
    rule = aws_faults.add("UpdateItem", code="InternalServerError", status=500, times=1, applied=True, match=table)
    assert leases.write_checkpoints({sid(0): (ShardPosition.after_sequence("11"), [])}, OWNER) == 1
    assert aws_faults.counts(rule) == {"seen": 2, "failed": 1}
    assert item(dynamodb, table, sid(0))["checkpoint"] == {"S": "11"}
    aws_faults.clear()
    assert leases.write_checkpoints({sid(0): (ShardPosition.after_sequence("12"), [])}, OWNER) == 1
    assert item(dynamodb, table, sid(0))["checkpoint"] == {"S": "12"}
