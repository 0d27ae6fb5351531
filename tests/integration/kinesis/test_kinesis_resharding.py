"""Resharding on a live samza-kinesis query: parents before children, key affinity, per-key order."""

import pytest

from samza_devkit import kinesis_helpers as kh

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = [f"user-{i}" for i in range(24)]


def put_keyed(ks, stream, seq_start, per_key):
    records = [(k, f"{k}:{seq_start + n}".encode()) for n in range(per_key) for k in KEYS]
    return kh.put_records(ks.client, stream, records)


def by_shard_batches(batches):
    out = {}
    for batch_id, rows in batches:
        for r in rows:
            out.setdefault(r.shardId, []).append(batch_id)
    return out


def check_per_key_order(batches, expected_per_key):
    per_key = {}
    for batch_id, rows in batches:
        for r in rows:
            key, seq = r.data.decode().rsplit(":", 1)
            per_key.setdefault(key, []).append((batch_id, r.shardId, int(r.sequenceNumber), int(seq)))
    assert sorted(per_key) == sorted(KEYS)
    for key, items in per_key.items():
        shards_per_batch = {}
        for batch_id, shard, _, _ in items:
            shards_per_batch.setdefault(batch_id, set()).add(shard)
        assert all(len(s) == 1 for s in shards_per_batch.values()), f"{key} read from two shards in one batch"
        ordered = [seq for _, _, _, seq in sorted(items, key=lambda t: (t[0], t[2]))]
        assert ordered == list(range(expected_per_key)), f"{key} out of put order: {ordered[:20]}"


def test_split_keeps_children_after_parent_in_the_parents_task(ks):
    stream = ks.create_stream(2, "split")
    put_keyed(ks, stream, 0, 20)
    query = ks.start_collecting("split", stream)
    ks.wait_for(lambda: len(ks.collected("split")) >= 20 * len(KEYS), what="first records")
    kh.split_shard(ks.client, stream, "shardId-000000000000")
    put_keyed(ks, stream, 20, 20)
    ks.wait_for(lambda: len(ks.collected("split")) >= 40 * len(KEYS), timeout=180, what="records after the split")
    query.stop()
    batches = ks.batches["split"]
    rows = ks.collected("split")
    assert len(rows) == 40 * len(KEYS)
    shard_batches = by_shard_batches(batches)
    parent, children = "shardId-000000000000", ["shardId-000000000002", "shardId-000000000003"]
    assert all(c in shard_batches for c in children), f"children got no records: {sorted(shard_batches)}"
    for child in children:
        assert min(shard_batches[child]) > max(shard_batches[parent]), "a child was read before its parent drained"
    tasks = {r.shardId: r.task for r in rows}
    assert tasks[children[0]] == tasks[children[1]] == tasks[parent]  # lineage: key affinity
    check_per_key_order(batches, 40)


def test_merge_reads_the_child_after_both_parents(ks):
    stream = ks.create_stream(3, "merge")
    put_keyed(ks, stream, 0, 15)
    query = ks.start_collecting("merge", stream)
    ks.wait_for(lambda: len(ks.collected("merge")) >= 15 * len(KEYS), what="first records")
    kh.merge_shards(ks.client, stream, "shardId-000000000000", "shardId-000000000001")
    put_keyed(ks, stream, 15, 15)
    ks.wait_for(lambda: len(ks.collected("merge")) >= 30 * len(KEYS), timeout=180, what="records after the merge")
    query.stop()
    batches = ks.batches["merge"]
    shard_batches = by_shard_batches(batches)
    child = "shardId-000000000003"
    assert child in shard_batches
    for parent in ("shardId-000000000000", "shardId-000000000001"):
        assert min(shard_batches[child]) > max(shard_batches[parent])
    check_per_key_order(batches, 30)


def test_repeated_splits_overload_a_slot_and_a_restart_maps_one_to_one(ks):
    stream = ks.create_stream(1, "overload")
    put_keyed(ks, stream, 0, 5)
    ks.run_available_now("ov", stream)
    kh.split_shard(ks.client, stream, "shardId-000000000000")  # -> 1, 2: one free slot only (1 slot per task)
    put_keyed(ks, stream, 5, 5)
    ks.run_available_now("ov", stream)
    ks.run_available_now("ov", stream)  # restart: children drained from the parent's slot, then read
    rows = ks.collected("ov")
    assert sorted(r.data for r in rows) == sorted(f"{k}:{n}".encode() for n in range(10) for k in KEYS)
    offsets = spark_offsets(ks.checkpoint("ov"))
    # While the first job model ran, the two children shared the only slot: a per-shard position map.
    overloaded = [o for o in offsets if o.generation == 1 and o.mapper.overloaded_slots()]
    assert overloaded, "the split never overloaded a slot"
    assert set(overloaded[-1].mapper.shards_in(0)) == {"shardId-000000000001", "shardId-000000000002"}
    positions = overloaded[-1].ssp_positions()
    assert any(isinstance(p, dict) and len(p) == 2 for p in positions.values())
    # The restart made a new job model that maps every live shard to its own slot.
    last = offsets[-1]
    assert last.generation == 2 and not last.mapper.overloaded_slots() and last.slots_per_task == 2


def spark_offsets(checkpoint: str):
    """Every samza-kinesis offset in a query's offset log, in batch order."""
    import json
    from pathlib import Path

    from spark_samza_source.kinesis.offset import KinesisOffset

    folder = Path(checkpoint) / "offsets"
    files = sorted((f for f in folder.iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
    return [KinesisOffset.from_json(json.loads(f.read_text().strip().splitlines()[-1])) for f in files]
