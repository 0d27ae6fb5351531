"""ShardPartitionMapper: the proposal's seven-step example replayed, slot rules, build, JSON."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.errors import SamzaSourceError
from spark_samza_source.core.model import TaskName
from spark_samza_source.kinesis.driver.mapper import (
    BALANCED,
    ShardPartitionMapper,
    task_index,
    task_name,
)
from spark_samza_source.kinesis.errors import JobModelTooLargeError, MapperError
from spark_samza_source.kinesis.shards import ShardInfo, lineage_order

H = 2**128


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


def shard(n, lo, hi, parents=(), closed=False) -> ShardInfo:
    """Shard ``n`` owning hash keys [lo, hi)."""
    return ShardInfo(sid(n), tuple(sid(p) for p in parents), int(lo), int(hi) - 1, str(1000 * n),
                     str(1000 * n + 999) if closed else None)


def closed(info: ShardInfo) -> ShardInfo:
    return ShardInfo(info.shard_id, info.parent_ids, info.hash_start, info.hash_end, info.starting_sequence,
                     str(int(info.starting_sequence) + 999))


def slots(mapper: ShardPartitionMapper) -> dict[int, list[int]]:
    """slot -> shard numbers, for compact assertions."""
    return {slot: [int(s[-12:]) for s in members] for slot, members in mapper.used_slots().items()}


# The proposal's layout: each split halves a range; the children of 0 are 3 (low) and 2 (high), of 1 are 5 (low)
# and 4 (high), of 2 are 7 (low) and 6 (high), so 6 and 5 are adjacent and can merge into 8 (step 7).
S0, S1 = shard(0, 0, H // 2), shard(1, H // 2, H)
S3, S2 = shard(3, 0, H // 4, [0]), shard(2, H // 4, H // 2, [0])
S5, S4 = shard(5, H // 2, 3 * H // 4, [1]), shard(4, 3 * H // 4, H, [1])
S7, S6 = shard(7, H // 4, 3 * H // 8, [2]), shard(6, 3 * H // 8, H // 2, [2])
S8 = shard(8, 3 * H // 8, 3 * H // 4, [6, 5])


def info_of(*shards: ShardInfo) -> dict[str, ShardInfo]:
    return {s.shard_id: s for s in shards}


def test_seven_step_example_of_the_proposal():
    # 1. Two shards, two tasks; every task has as many slots as the stream has shards (2): 1:1.
    m = ShardPartitionMapper.build(2, [S0, S1])
    assert (m.num_tasks, m.slots_per_task) == (2, 2)
    assert m.task_names() == [TaskName("Task-0"), TaskName("Task-1")]
    assert slots(m) == {0: [0], 2: [1]}  # Task-0 owns slots 0-1, Task-1 slots 2-3

    # 2. Shard 0 splits into 3 and 2: both stay in Task-0. 3 takes the free slot; 2 succeeds its parent in slot 0
    #    (0 is closed, still being drained; they are never read in the same batch). 0 drained -> unmapped.
    info = info_of(closed(S0), S1, S2, S3)
    for child in lineage_order([S2, S3]):
        m.place(child, info)
    assert slots(m) == {0: [0, 2], 1: [3], 2: [1]}
    m.release(sid(0))
    assert slots(m) == {0: [2], 1: [3], 2: [1]}

    # 3. Shard 1 splits into 5 and 4, same in Task-1.
    info = info_of(S2, S3, closed(S1), S4, S5)
    for child in lineage_order([S4, S5]):
        m.place(child, info)
    m.release(sid(1))
    assert slots(m) == {0: [2], 1: [3], 2: [4], 3: [5]}

    # 4. Shard 2 splits into 7 and 6: Task-0 has no free slot. 7 succeeds 2 in slot 0; 6 overloads the slot with
    #    the fewest open shards, slot 1 (shard 3): that SSP now holds two shards (a per-shard position map).
    info = info_of(closed(S2), S3, S4, S5, S6, S7)
    for child in lineage_order([S6, S7]):
        m.place(child, info)
    assert slots(m) == {0: [2, 7], 1: [3, 6], 2: [4], 3: [5]}
    m.release(sid(2))
    assert slots(m) == {0: [7], 1: [3, 6], 2: [4], 3: [5]}
    assert m.overloaded_slots() == [1]
    assert [m.task_of(sid(n)) for n in (3, 4, 5, 6, 7)] == [0, 1, 1, 0, 0]  # children stayed with their parents

    # 5. Restart with a new job model: slots per task = open shards (5), mapping 1:1 again, contiguous hash ranges.
    live = [S3, S4, S5, S6, S7]
    m = ShardPartitionMapper.build(2, live)
    assert m.slots_per_task == 5
    assert slots(m) == {0: [3], 1: [7], 2: [6], 5: [5], 6: [4]}
    assert m.overloaded_slots() == []

    # 6. One more task (tasks=3): a new job model, still 1:1, hash ranges [3,7] [6,5] [4].
    m = ShardPartitionMapper.build(3, live)
    assert (m.num_tasks, m.slots_per_task) == (3, 5)
    assert slots(m) == {0: [3], 1: [7], 5: [6], 6: [5], 10: [4]}
    assert [m.task_of(sid(n)) for n in (3, 7, 6, 5, 4)] == [0, 0, 1, 1, 2]

    # 7. 6 and 5 (both Task-1) merge into 8: it goes to the task of the parent with the lower hash key (6) and a
    #    free slot; once both parents are drained the merge has freed a slot.
    info = info_of(S3, S7, closed(S6), closed(S5), S4, S8)
    assert m.place(S8, info) == 7
    m.release(sid(5))
    m.release(sid(6))
    assert slots(m) == {0: [3], 1: [7], 7: [8], 10: [4]}
    assert m.shards_of_task(1) == [sid(8)] and len(m.free_slots(1)) == 4


def test_merge_across_tasks_goes_to_the_lower_hash_parent():
    a, b = shard(0, 0, H // 2), shard(1, H // 2, H)
    m = ShardPartitionMapper.build(2, [a, b])
    merged = shard(2, 0, H, [1, 0])  # ParentShardId may name either parent first
    m.place(merged, info_of(closed(a), closed(b), merged))
    assert m.task_of(sid(2)) == 0


def test_merge_with_only_one_parent_still_mapped():
    a, b = shard(0, 0, H // 2), shard(1, H // 2, H)
    m = ShardPartitionMapper.build(2, [a, b])
    m.release(sid(0))
    merged = shard(2, 0, H, [0, 1])
    m.place(merged, info_of(closed(b), merged))
    assert m.task_of(sid(2)) == 1


def test_balanced_assignment_goes_to_the_least_loaded_task():
    shards = [shard(i, i * H // 4, (i + 1) * H // 4) for i in range(4)]
    m = ShardPartitionMapper.build(2, shards, BALANCED)
    assert [m.task_of(s.shard_id) for s in shards] == [0, 0, 1, 1]
    # shard 0 (Task-0) splits: with balanced, its children still spread by load
    c1, c2 = shard(4, 0, H // 8, [0]), shard(5, H // 8, H // 4, [0])
    info = info_of(closed(shards[0]), *shards[1:], c1, c2)
    m.place(c1, info, BALANCED)  # Task-0 has 1 open shard (1), Task-1 2 -> Task-0
    assert m.task_of(c1.shard_id) == 0
    m.place(c2, info, BALANCED)  # now 2 and 2 open; Task-0 holds 3 shards in total, Task-1 2 -> Task-1
    assert m.task_of(c2.shard_id) == 1


def test_lineage_child_without_a_mapped_parent_goes_to_the_least_loaded_task():
    shards = [shard(i, i * H // 3, (i + 1) * H // 3) for i in range(3)]
    m = ShardPartitionMapper.build(2, shards)
    orphan = shard(9, 0, H // 3, [42])
    m.place(orphan, info_of(*shards, orphan))
    assert m.task_of(orphan.shard_id) == 1  # Task-0 has shards 0,1 (k*2//3 -> 0,0,1)


def test_build_is_contiguous_and_one_to_one():
    shards = [shard(i, i * H // 10, (i + 1) * H // 10) for i in range(10)]
    m = ShardPartitionMapper.build(3, list(reversed(shards)))
    tasks = [m.task_of(s.shard_id) for s in shards]
    assert tasks == sorted(tasks) and tasks == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert m.slots_per_task == 10 and m.overloaded_slots() == []


def test_build_places_blocked_children_with_their_parent_in_their_own_slot():
    parent = closed(shard(0, 0, H))
    a, b = shard(1, 0, H // 2, [0]), shard(2, H // 2, H, [0])
    m = ShardPartitionMapper.build(1, [parent, a, b])
    # one task: 2 open shards but 3 live ones -> 3 slots, 1:1
    assert m.slots_per_task == 3 and slots(m) == {0: [0], 1: [1], 2: [2]}


def test_build_with_fewer_roots_than_tasks_spreads_them():
    shards = [shard(0, 0, H // 2), shard(1, H // 2, H)]
    m = ShardPartitionMapper.build(4, shards)
    assert [m.task_of(s.shard_id) for s in shards] == [0, 2]


def test_explicit_slots_per_task_may_overload():
    shards = [shard(i, i * H // 3, (i + 1) * H // 3) for i in range(3)]
    m = ShardPartitionMapper.build(1, shards, slots_per_task=2)
    assert slots(m) == {0: [0, 2], 1: [1]}


def test_json_round_trip_and_errors():
    m = ShardPartitionMapper.build(2, [S0, S1])
    text = json.dumps(m.to_json())
    again = ShardPartitionMapper.from_json(json.loads(text))
    assert again == m and json.dumps(again.to_json()) == text
    with pytest.raises(MapperError, match="out of range"):
        ShardPartitionMapper(2, 2, {"a": 4})
    with pytest.raises(MapperError, match="already mapped"):
        m.assign(sid(0), 1)
    with pytest.raises(MapperError, match="positive int"):
        ShardPartitionMapper(0, 1)
    with pytest.raises(MapperError, match="assignment"):
        ShardPartitionMapper.build(1, [S0], "random")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12))
def test_mapper_from_arbitrary_json_raises_only_our_errors(value):
    try:
        ShardPartitionMapper.from_json(value)
    except SamzaSourceError:
        pass


def test_task_names_round_trip():
    assert task_index(task_name(12)) == 12
    assert task_index("Task-012") is None and task_index("Partition 1") is None and task_index("Task-") is None


def test_lineage_order_puts_parents_first_regardless_of_input_order():
    ordered = lineage_order([S8, S6, S5, S2, S0, S1, S7, S3, S4])
    position = {s.shard_id: i for i, s in enumerate(ordered)}
    for s in ordered:
        for p in s.parent_ids:
            assert position[p] < position[s.shard_id]
    assert ordered == lineage_order(reversed(ordered))


def test_absurd_sizes_are_refused():
    with pytest.raises(JobModelTooLargeError, match="too large"):
        ShardPartitionMapper(10**9, 1)
    with pytest.raises(JobModelTooLargeError, match="too large"):
        ShardPartitionMapper(2, 2**31)
