"""A real KCL worker (the KCL 3.x MultiLangDaemon with an amazon-kclpy record processor, ``samza_devkit.kcl_daemon``)
on both sides of the lease table: handing over to a samza-kinesis query and back (docs/migration.md, "From a KCL
application").

Kinesis is kinesis-mock, the one emulator that ends a closed shard's GetRecords with ``ChildShards`` as KCL requires;
the query talks to it through the devkit's bridge, KCL directly (KCL's client speaks HTTP/2 only, the bridge
HTTP/1.1: docs/kinesis-emulators.md). DynamoDB is moto's. Every record is identified by (shard, sequence number,
sub-sequence number, data); a failing test prints where the daemon's log is."""

from __future__ import annotations

import itertools
import json

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.kcl_daemon import KclNotAvailable, KclWorker, ensure_kcl_jars
from samza_devkit.query_harness import failure_of
from spark_samza_source.kinesis.driver.lease_table import KclLeaseTable

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.emulators("kinesis-mock")]


@pytest.fixture
def kcl(tmp_path, kinesis_mock_bridge, moto_server):
    """``kcl(stream, application, **properties)`` -> a started :class:`KclWorker`; every one is stopped after the
    test, and its log's path printed (pytest shows it when the test fails)."""
    try:
        jars = ensure_kcl_jars()  # once per machine and version; the other xdist workers wait for it
    except KclNotAvailable as err:  # a failure, never a skip: these are the only tests of a real KCL
        pytest.fail(f"the KCL MultiLangDaemon cannot be fetched: {err}")
    started: list[KclWorker] = []
    counter = itertools.count(1)

    def start(stream: str, application: str, **properties: str) -> KclWorker:
        n = next(counter)
        worker = KclWorker(tmp_path / f"kcl-{n}", stream=stream, application=application,
                           kinesis_endpoint=kinesis_mock_bridge.upstream, dynamodb_endpoint=moto_server,
                           worker_id=f"kcl-worker-{n}", properties=properties, jars=jars)
        started.append(worker)
        print(f"KCL daemon log: {worker.log_path}")
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


def open_shards(client, stream):
    return [s for s in kh.list_shards(client, stream) if "EndingSequenceNumber" not in s["SequenceNumberRange"]]


def produce(client, stream, tag, per_shard=3, aggregate_in=None):
    """``per_shard`` records into every open shard (routed by explicit hash key), plus one KPL aggregate of four user
    records into shard ``aggregate_in``; returns their (shard, sequence, sub, data) keys."""
    out = []
    for shard in open_shards(client, stream):
        sid, key = shard["ShardId"], shard["HashKeyRange"]["StartingHashKey"]
        puts = kh.put_records(client, stream, [(f"{tag}-{i}", f"{tag}-{sid[-2:]}-{i}".encode(), key)
                                               for i in range(per_shard)])
        out += [(p.shard_id, p.sequence, 0, p.data.decode()) for p in puts]
        if sid == aggregate_in:
            group = [(f"{tag}-agg-{i}", f"{tag}-{sid[-2:]}-agg-{i}".encode(), key) for i in range(4)]
            (agg,) = kh.put_aggregated(client, stream, [group], explicit_hash_key=key)
            out += [(agg.shard_id, agg.sequence, i, u.data.decode()) for i, u in enumerate(agg.users)]
    return out


def kcl_keys(worker):
    return [(e["shard"], e["sequence"], e["sub"], e["data"]) for e in worker.records()]


def row_keys(rows):
    return [(r.shardId, r.sequenceNumber, r.subSequenceNumber or 0, r.data.decode()) for r in rows]


def after(records, checkpoints):
    """The records that follow each shard's checkpoint (shard -> (sequence, sub); SHARD_END: none)."""
    out = []
    for shard, seq, sub, data in records:
        cp = checkpoints.get(shard)
        if cp == "SHARD_END" or (cp is not None and (int(seq), sub) <= (int(cp[0]), cp[1])):
            continue
        out.append((shard, seq, sub, data))
    return out


def planned_shards(query):
    progress = query.lastProgress
    if not progress:
        return set()
    end = progress["sources"][0]["endOffset"]
    return set((json.loads(end) if isinstance(end, str) else end).get("shards", {}))


def lease_items(ks, table):
    return KclLeaseTable(kh.dynamodb_client(ks.dynamodb_endpoint), table).read_items()


def mirror(ks, name, stream, table, **extra):
    """Two AvailableNow runs: the second commits the first one's last batch (Spark commits a batch when it plans
    the next), so the lease table holds where the query stopped."""
    ks.run_available_now(name, stream, **{"kcl.leaseTable": table}, **extra)
    ks.run_available_now(name, stream, **{"kcl.leaseTable": table})


def assert_read_once_in_shard_order(worker, expected):
    got = kcl_keys(worker)
    assert sorted(got) == sorted(expected), f"KCL read {len(got)} records, expected {len(expected)}"
    for shard in {k[0] for k in got}:
        in_shard = [(int(s), sub) for sh, s, sub, _ in got if sh == shard]
        assert in_shard == sorted(in_shard), f"KCL delivered {shard} out of order"


def test_kcl_hands_over_to_a_query_started_from_its_checkpoints(ks, kcl):
    """Case 1: KCL reads, checkpoints inside a KPL aggregate in one shard and at a plain record in the other, and
    stops; a query with startingPosition=kcl reads exactly what follows: none lost, none read again."""
    stream = ks.create_stream(2, "kcl1")
    table = f"kcl-app-{stream}"
    records = produce(ks.client, stream, "a", per_shard=3, aggregate_in="shardId-000000000000")
    worker = kcl(stream, table)
    worker.wait_for(lambda: len(worker.records()) >= len(records), what="KCL to read every record")
    assert_read_once_in_shard_order(worker, records)
    agg = [r for r in records if r[2] == 2][0]  # third user record of the aggregate: a checkpoint inside it
    plain = [r for r in records if r[0] == "shardId-000000000001"][1]
    checkpoints = {agg[0]: (agg[1], agg[2]), plain[0]: (plain[1], plain[2])}
    worker.command({shard: list(cp) for shard, cp in checkpoints.items()})
    worker.wait_for(lambda: len(worker.events("checkpoint")) == 2, what="KCL's two checkpoints")
    worker.stop()
    later = produce(ks.client, stream, "b", per_shard=2)

    items = lease_items(ks, table)
    assert items[agg[0]]["checkpoint"] == {"S": agg[1]}
    assert items[agg[0]]["checkpointSubSequenceNumber"] == {"N": "2"}
    rows = ks.run_available_now("kcl1", stream, startingPosition="kcl", **{"kcl.leaseTable": table})
    assert sorted(row_keys(rows)) == sorted(after(records, checkpoints) + later)


def test_a_kcl_worker_resumes_right_after_the_query(ks, kcl):
    """Case 2: a query reads (a KPL aggregate included) and mirrors into the table; a KCL worker started on that
    table reads exactly the records put after the query stopped."""
    stream = ks.create_stream(2, "kcl2")
    table = f"kcl-app-{stream}"
    first = produce(ks.client, stream, "a", per_shard=3, aggregate_in="shardId-000000000001")
    mirror(ks, "kcl2", stream, table)
    assert sorted(row_keys(ks.collected("kcl2"))) == sorted(first)
    later = produce(ks.client, stream, "b", per_shard=3, aggregate_in="shardId-000000000000")
    worker = kcl(stream, table)
    worker.wait_for(lambda: len(worker.records()) >= len(later), what="KCL to read what followed the query")
    assert_read_once_in_shard_order(worker, later)


def test_a_kcl_worker_resumes_after_a_query_that_went_through_a_split_and_a_merge(ks, kcl):
    """Case 3: a shard split and two shards merged while the query ran; the query drained the parents and
    mirrored their SHARD_END and its children's rows; KCL reads no parent again, reads every child from its start,
    and no child waits for ever on a row we wrote."""
    stream = ks.create_stream(3, "kcl3")
    table = f"kcl-app-{stream}"
    first = produce(ks.client, stream, "a", per_shard=3)
    query = ks.start_collecting("kcl3", stream, **{"kcl.leaseTable": table})
    ks.wait_for(lambda: len(ks.collected("kcl3")) >= len(first), what="the query to read the parents")
    kh.split_shard(ks.client, stream, "shardId-000000000000")
    kh.merge_shards(ks.client, stream, "shardId-000000000001", "shardId-000000000002")
    children = {s["ShardId"] for s in open_shards(ks.client, stream)}
    assert len(children) == 3
    ks.wait_for(lambda: children <= planned_shards(query), what="the query to plan the children")
    query.stop()
    mirror(ks, "kcl3", stream, table)
    items = lease_items(ks, table)
    for parent in ("shardId-000000000000", "shardId-000000000001", "shardId-000000000002"):
        assert items[parent]["checkpoint"] == {"S": "SHARD_END"}
    for child in children:
        assert items[child]["checkpoint"] == {"S": "TRIM_HORIZON"} and items[child]["parentShardId"]["SS"]
    assert sorted(row_keys(ks.collected("kcl3"))) == sorted(first)

    later = produce(ks.client, stream, "b", per_shard=3)
    assert {r[0] for r in later} == children
    worker = kcl(stream, table)
    worker.wait_for(lambda: len(worker.records()) >= len(later), what="KCL to read the children")
    assert_read_once_in_shard_order(worker, later)
    assert {e["shard"] for e in worker.events("initialize")} == children  # no processor for a finished parent


def test_a_query_resumes_after_a_kcl_worker_that_went_through_a_split(ks, kcl):
    """Case 4: KCL reads a shard to its end through a split (SHARD_END, children leases with their parent) and
    checkpoints inside both children; a query with startingPosition=kcl reads exactly what follows."""
    stream = ks.create_stream(2, "kcl4")
    table = f"kcl-app-{stream}"
    first = produce(ks.client, stream, "a", per_shard=3)
    worker = kcl(stream, table)
    worker.wait_for(lambda: len(worker.records()) >= len(first), what="KCL to read the parents")
    kh.split_shard(ks.client, stream, "shardId-000000000000")
    children = sorted({s["ShardId"] for s in open_shards(ks.client, stream)} - {"shardId-000000000001"})
    second = produce(ks.client, stream, "b", per_shard=3, aggregate_in=children[1])
    worker.wait_for(lambda: len(worker.records()) >= len(first) + len(second), what="KCL to read the children")
    assert_read_once_in_shard_order(worker, first + second)
    assert worker.events("shard_ended")[0]["shard"] == "shardId-000000000000"
    parent_last = max(i for i, e in enumerate(worker.records()) if e["shard"] == "shardId-000000000000")
    child_first = min(i for i, e in enumerate(worker.records()) if e["shard"] in children)
    assert parent_last < child_first, "KCL read a child before its parent's end"
    in_children = {c: [r for r in second if r[0] == c] for c in children}
    checkpoints = {children[0]: in_children[children[0]][0][1:3], children[1]: in_children[children[1]][4][1:3],
                   "shardId-000000000001": [r for r in second if r[0] == "shardId-000000000001"][-1][1:3]}
    worker.command({s: list(cp) for s, cp in checkpoints.items()})
    worker.wait_for(lambda: len(worker.events("checkpoint")) == 3, what="KCL's three checkpoints")
    worker.stop()
    items = lease_items(ks, table)
    assert items["shardId-000000000000"]["checkpoint"] == {"S": "SHARD_END"}
    assert all(items[c]["parentShardId"] == {"SS": ["shardId-000000000000"]} for c in children)

    rows = ks.run_available_now("kcl4", stream, startingPosition="kcl", **{"kcl.leaseTable": table})
    checkpoints["shardId-000000000000"] = "SHARD_END"
    assert sorted(row_keys(rows)) == sorted(after(first + second, checkpoints))


def kcl_reading(worker):
    """The shards a KCL record processor is reading: initialised, and not told since that it lost its lease, that
    the shard ended or that the worker shuts down."""
    reading = set()
    for event in worker.events():
        if event["event"] == "initialize":
            reading.add(event["shard"])
        elif event["event"] in ("lease_lost", "shard_ended", "shutdown_requested"):
            reading.discard(event["shard"])
    return reading


def lease_owners(ks, table):
    return {shard: item.get("leaseOwner", {}).get("S") for shard, item in lease_items(ks, table).items()}


def test_a_query_started_beside_a_live_kcl_worker_fails_naming_it(ks, kcl):
    """Case 5: a KCL worker and a query started on the same table at once. Either the query's first commit meets
    KCL renewing a lease and the query fails naming the worker, or it takes the leases over: every lease is the
    query's and no KCL record processor reads (those KCL had started are told they lost their lease; KCL starts
    none for a lease it lost before its first scheduling round). KCL takes them back once the query leaves them
    unrenewed for KCL's failoverTimeMillis (no new batch, so no commit), and the query's next commit fails naming
    the worker before it reads what KCL reads (docs/migration.md). Never do both read the same records
    unnoticed."""
    stream = ks.create_stream(2, "kcl5")
    table = f"kcl-app-{stream}"
    shards = {"shardId-000000000000", "shardId-000000000001"}
    ours = f"samza-{ks.job}"
    produce(ks.client, stream, "a", per_shard=2)
    worker = kcl(stream, table)  # returns once KCL has made its table and leases: the query reads them at start
    query = ks.start_collecting("kcl5", stream, **{"kcl.leaseTable": table, "startingPosition": "kcl"})

    def failed_or_taken_over():
        if not query.isActive:
            return True
        owners = lease_owners(ks, table)
        if set(owners) == shards and set(owners.values()) == {ours} and not kcl_reading(worker):
            return True
        produce(ks.client, stream, "b", per_shard=1)  # records keep coming, so batches (and commits) do
        return False

    ks.wait_for(failed_or_taken_over, timeout=180, interval=0.5, what="the query to fail or to take the leases")
    if query.isActive:  # taken over, KCL reads nothing; the stream now idles, so no batch renews the leases
        worker.wait_for(lambda: set(lease_owners(ks, table).values()) == {worker.worker_id}
                        and kcl_reading(worker) == shards, what="KCL to take its leases back and read them")
        later = produce(ks.client, stream, "c", per_shard=1)
        worker.wait_for(lambda: set(later) <= set(kcl_keys(worker)), what="KCL to read what followed")
    message = failure_of(query, timeout=60)
    print(f"the query failed with: {message[:2000]}")
    assert "KclLeaseConflictError" in message and worker.worker_id in message, message
    assert not [r for r in row_keys(ks.collected("kcl5")) if r[3].startswith("c-")], "read beside KCL"
