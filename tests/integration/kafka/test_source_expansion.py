"""SEP-5 on a live query: partition expansion keeps the task set, and drain-first keeps per-key order."""

import pytest

from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEYS = [f"user-{i}".encode() for i in range(40)]


def keyed_round(seq_start: int, per_key: int):
    return [(k, f"{k.decode()}:{seq_start + n}".encode()) for n in range(per_key) for k in KEYS]


def test_expansion_2_4_8_keeps_two_tasks_and_per_key_order(kq):
    topic = create_topic(kq.bootstrap, unique_topic("grow"), 2)
    acks = produce(kq.bootstrap, topic, keyed_round(0, 30))
    query = kq.start_collecting("grow", subscribe=topic, maxOffsetsPerTrigger="500")
    kq.wait_for(lambda: len(kq.collected("grow")) >= 200, what="first batches")

    add_partitions(kq.bootstrap, topic, 4)
    acks += produce(kq.bootstrap, topic, keyed_round(30, 30))
    kq.wait_for(lambda: len(kq.collected("grow")) >= 2000, what="reads after 2 -> 4")

    add_partitions(kq.bootstrap, topic, 8)
    acks += produce(kq.bootstrap, topic, keyed_round(60, 30))
    kq.wait_for(lambda: len(kq.collected("grow")) >= len(acks), timeout=240, what="every record")
    query.processAllAvailable()
    query.stop()

    rows = kq.collected("grow")
    # Nothing lost or duplicated.
    assert sorted((r.partition, r.offset) for r in rows) == sorted((a.partition, a.offset) for a in acks)
    # Exactly two tasks, partitions grouped by p % 2 (SEP-5's fixed tasks).
    tasks = {}
    for r in rows:
        tasks.setdefault(r.task, set()).add(r.partition)
    assert tasks == {"Partition 0": {0, 2, 4, 6}, "Partition 1": {1, 3, 5, 7}}
    # Keys really moved to new partitions (otherwise the order check below proves nothing).
    assert {a.partition for a in acks} == set(range(8))

    # Per key: the batch sequence never goes backwards, within a batch a key comes from one partition.
    per_key: dict[bytes, list[tuple[int, int, int]]] = {}
    for batch_id, batch_rows in kq.batches["grow"]:
        for r in batch_rows:
            seq = int(r.value.decode().rsplit(":", 1)[1])
            per_key.setdefault(r.key, []).append((batch_id, r.partition, r.offset, seq))
    for key, items in per_key.items():
        by_batch: dict[int, set[int]] = {}
        for batch_id, partition, _, _ in items:
            by_batch.setdefault(batch_id, set()).add(partition)
        assert all(len(p) == 1 for p in by_batch.values()), f"{key!r} read from two partitions in one batch"
        ordered = [seq for _, _, _, seq in sorted(items, key=lambda t: (t[0], t[2]))]
        assert ordered == sorted(ordered) == list(range(90)), f"{key!r} out of produce order"
