"""samza-kinesis over a stream of 1,000 shards, end to end (issue #46): a split and a merge mid-query, every record
exactly once, parents before children; the KCL lease-table mirror of that size read back; a real KCL worker
resuming a few of the shards from such a mirror.

Which emulator serves 1,000 shards: both accept them (the devkit starts each with a shard limit of 1,000), but
kinesis-mock 0.6.2 answers a stream that size slowly: a GetShardIterator and a GetRecords of one shard took 125 ms
directly (160 ms behind the devkit's bridge) against kinesalite's 32 ms on the same loaded two-core machine, so
one pass over 1,000 shards is two minutes there against half a minute, and it refused a split after a merge at
1,000 shards (``LimitExceededException``: it seems to count the closed parents against its limit; AWS counts open
shards).
So the query of the split and the merge runs on kinesalite. A KCL worker needs kinesis-mock (KCL's client speaks
HTTP/2 only, and needs ``ChildShards`` at a shard's end: docs/kinesis-emulators.md), so the KCL case runs there,
on a stream of 1,000 shards the query mirrors in two AvailableNow runs.

``tasks`` 50: by default a job has a task per open shard (1,000 Spark tasks a micro-batch, 10 ms of scheduling
and a Python worker round each on two cores); a user with 1,000 shards sizes its tasks to its cores, 20 shards a
task here. DynamoDB (the lease tables) is moto's. The per-batch figures are printed (``pytest -s``) and written
to ``build/scale-kinesis.json``. Run by ``make test-scale``, not ``make test``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.checkpoint_log import batch_figures
from samza_devkit.kcl_daemon import KclNotAvailable, KclWorker, ensure_kcl_jars
from samza_devkit.kinesis_query_harness import KinesisQueryHarness
from spark_samza_source.kinesis.driver.lease_table import KclLeaseTable

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1800)]

SHARDS = 1000
TASKS = 50
FIGURES = Path(__file__).resolve().parents[3] / "build" / "scale-kinesis.json"


def open_shards(client, stream: str) -> list[dict]:
    return [s for s in kh.list_shards(client, stream) if "EndingSequenceNumber" not in s["SequenceNumberRange"]]


def put_into(client, stream: str, shards: list[dict], tag: str, per_shard: int) -> list[kh.Put]:
    """``per_shard`` records into each of ``shards``, routed by its starting hash key."""
    records = [(f"{tag}-{s['ShardId'][-4:]}-{i}", f"{tag}-{s['ShardId']}-{i}".encode(),
                s["HashKeyRange"]["StartingHashKey"]) for s in shards for i in range(per_shard)]
    acks = kh.put_records(client, stream, records)
    assert len(acks) == len(records)
    return acks


def key_of(row) -> tuple[str, str]:
    return row.shardId, row.sequenceNumber


def batches_by_shard(batches) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for batch_id, rows in batches:
        for row in rows:
            out[row.shardId].append(batch_id)
    return out


def lease_items(ks: KinesisQueryHarness, table: str) -> dict[str, dict]:
    return KclLeaseTable(kh.dynamodb_client(ks.dynamodb_endpoint), table).read_items()


def report(name: str, figures: list[dict], **extra) -> None:
    FIGURES.parent.mkdir(exist_ok=True)
    kept = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    kept[name] = {"batches": figures, **extra}
    FIGURES.write_text(json.dumps(kept, indent=1))
    print(f"\n{name}: {'batch':>5} {'rows':>6} {'trigger':>8} {'latestOffset':>12} {'getBatch':>8} "
          f"{'addBatch':>8} {'commit':>7} {'offsetLog':>10}")
    for f in figures:
        d = f["durationMs"]
        print(f"{name}: {f['batch']:>5} {f['rows']:>6} {d.get('triggerExecution', 0):>8} "
              f"{d.get('latestOffset', 0):>12} {d.get('getBatch', 0):>8} {d.get('addBatch', 0):>8} "
              f"{d.get('commitOffsets', 0):>7} {f['offsetLogBytes'] or 0:>10}")
    print(f"{name}: {json.dumps(extra)}")


@pytest.fixture
def kinesalite_ks(spark, kinesalite_server, moto_server, tmp_path):
    return KinesisQueryHarness(spark, kinesalite_server, tmp_path, dynamodb_endpoint=moto_server)


def test_1000_shards_split_and_merge_exactly_once_parents_first_and_the_lease_table_of_that_size(kinesalite_ks):
    ks = kinesalite_ks
    stream = ks.create_stream(SHARDS, "scale")
    table = f"kcl-scale-{stream}"
    acks = put_into(ks.client, stream, open_shards(ks.client, stream), "a", 2)
    query = ks.start_collecting("big", stream, trigger={"processingTime": "1 second"}, tasks=TASKS,
                                **{"kcl.leaseTable": table})
    ks.wait_for(lambda: len(ks.collected("big")) >= len(acks), timeout=900, interval=2,
                what="the first 2,000 records", seen=lambda: len(ks.collected("big")))

    # merge first (999 open shards), then split (1,000 again): the emulator's limit counts open shards
    merged = ("shardId-000000000000", "shardId-000000000001")
    kh.merge_shards(ks.client, stream, *merged)
    split = "shardId-000000000500"
    kh.split_shard(ks.client, stream, split)
    parents = {*merged, split}
    now_open = open_shards(ks.client, stream)
    children = {s["ShardId"] for s in now_open if int(s["ShardId"].rsplit("-", 1)[1]) >= SHARDS}
    merge_child = next(s["ShardId"] for s in now_open if s.get("AdjacentParentShardId"))
    assert len(children) == 3, children
    assert len(now_open) == SHARDS
    acks += put_into(ks.client, stream, [s for s in now_open if s["ShardId"] in children or
                                         s["ShardId"].endswith(("7", "3"))], "b", 2)
    ks.wait_for(lambda: len(ks.collected("big")) >= len(acks), timeout=900, interval=2,
                what="the records put after the split and the merge", seen=lambda: len(ks.collected("big")))
    figures = batch_figures(query, ks.checkpoint("big"))
    query.stop()

    rows = ks.collected("big")
    assert sorted(map(key_of, rows)) == sorted((a.shard_id, a.sequence) for a in acks), "not exactly once"
    by_shard = batches_by_shard(ks.batches["big"])
    for child in children:
        child_parents = merged if child == merge_child else (split,)
        assert min(by_shard[child]) > max(max(by_shard[p]) for p in child_parents), \
            f"{child} read before its parents {child_parents} were drained"
    tasks = {r.shardId: r.task for r in rows}
    assert len(set(tasks.values())) == TASKS
    for child in children:  # lineage: a child joins a parent's task
        assert tasks[child] in {tasks[p] for p in parents}, (child, tasks[child])

    # the lease-table mirror of 1,003 shards: Spark commits the last batch when the next run plans, so one
    # AvailableNow run from the checkpoint writes where the query stopped
    ks.run_available_now("big", stream, timeout=900, tasks=TASKS, **{"kcl.leaseTable": table})
    items = lease_items(ks, table)
    assert len(items) == SHARDS + 3
    last_read: dict[str, int] = {}
    for shard, sequence in map(key_of, rows):
        last_read[shard] = max(last_read.get(shard, 0), int(sequence))
    for parent in parents:
        assert items[parent]["checkpoint"] == {"S": "SHARD_END"}, items[parent]
    wrong = {shard: items[shard]["checkpoint"] for shard, last in last_read.items()
             if shard not in parents and items[shard]["checkpoint"] != {"S": str(last)}}
    assert not wrong, f"{len(wrong)} lease checkpoints are not the last record read, e.g. {list(wrong.items())[:3]}"
    assert all(set(items[c]["parentShardId"]["SS"]) <= parents for c in children)
    log_sizes = [p.stat().st_size for p in (Path(ks.checkpoint("big")) / "offsets").iterdir() if p.name.isdigit()]
    report("split-merge-1000-shards-kinesalite", figures, shards=SHARDS + 3, records=len(acks),
           leaseItems=len(items), largestOffsetLogEntryBytes=max(log_sizes))



@pytest.fixture
def kcl_worker(tmp_path, kinesis_mock_bridge, moto_server):
    """``kcl_worker(stream, application, **properties)`` -> a started :class:`KclWorker` on kinesis-mock (directly:
    HTTP/2), stopped after the test; its log's path is printed (pytest shows it when the test fails)."""
    try:
        jars = ensure_kcl_jars()
    except KclNotAvailable as err:  # a failure, never a skip: the mirror's reader is what is tested
        pytest.fail(f"the KCL MultiLangDaemon cannot be fetched: {err}")
    started: list[KclWorker] = []

    def start(stream: str, application: str, **properties: str) -> KclWorker:
        worker = KclWorker(tmp_path / "kcl", stream=stream, application=application,
                           kinesis_endpoint=kinesis_mock_bridge.upstream, dynamodb_endpoint=moto_server,
                           worker_id="kcl-scale-worker", properties=properties, jars=jars)
        started.append(worker)
        print(f"KCL daemon log: {worker.log_path}")
        return worker.start(timeout_s=300)

    yield start
    for worker in started:
        worker.stop()


def kcl_initialised(worker) -> set[str]:
    return {e["shard"] for e in worker.events("initialize")}


def test_a_kcl_worker_resumes_a_few_shards_of_a_1000_shard_mirror(spark, kinesis_mock_endpoint, moto_server,
                                                                  tmp_path, kcl_worker):
    """The query reads a 1,000-shard stream on kinesis-mock once (two AvailableNow runs: the second commits the
    first one's batch into the lease table); a KCL worker limited to a few leases (``maxLeasesForWorker``) takes
    expired ones from that table of 1,000 leases and reads, in each shard it took, exactly the records put after
    the query stopped."""
    ks = KinesisQueryHarness(spark, kinesis_mock_endpoint, tmp_path, dynamodb_endpoint=moto_server)
    stream = ks.create_stream(SHARDS, "kclscale")
    table = f"kcl-scale-{stream}"
    shards = open_shards(ks.client, stream)
    first = put_into(ks.client, stream, shards, "a", 1)
    ks.run_available_now("mirror", stream, timeout=1200, tasks=TASKS, **{"kcl.leaseTable": table})
    ks.run_available_now("mirror", stream, timeout=1200, tasks=TASKS, **{"kcl.leaseTable": table})
    assert sorted(map(key_of, ks.collected("mirror"))) == sorted((a.shard_id, a.sequence) for a in first)
    items = lease_items(ks, table)
    assert len(items) == SHARDS
    assert {shard: item["checkpoint"]["S"] for shard, item in items.items()} == \
        {a.shard_id: a.sequence for a in first}

    later = put_into(ks.client, stream, shards, "b", 2)
    worker = kcl_worker(stream, table, maxLeasesForWorker="3")
    worker.wait_for(lambda: len(kcl_initialised(worker)) >= 3 and {e["shard"] for e in worker.records()}
                    >= kcl_initialised(worker), timeout_s=300, what="KCL to take three leases and read their shards")
    taken = kcl_initialised(worker)
    assert len(taken) == 3, f"KCL took {sorted(taken)} with maxLeasesForWorker 3"
    expected = {(a.shard_id, a.sequence) for a in later if a.shard_id in taken}
    worker.wait_for(lambda: {(e["shard"], e["sequence"]) for e in worker.records()} >= expected, timeout_s=120,
                    what="KCL to read what followed the query in its shards")
    got = [(e["shard"], e["sequence"]) for e in worker.records()]
    assert sorted(got) == sorted(expected), "KCL read records other than those after the query's checkpoints"
