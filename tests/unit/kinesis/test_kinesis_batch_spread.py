"""``minPartitions`` on a samza-kinesis batch read: a lineage family (a shard, its ancestors and descendants among
the listed shards) is the unit the split never cuts, so each Spark partition still reads a parent before its
children; unrelated families spread."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_samza_source.core.model import TaskName
from spark_samza_source.kinesis.driver.planner import spread_families
from spark_samza_source.kinesis.input_partition import PlannedShardRead
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.shards import ShardInfo, lineage_families, lineage_order


def shard(name: str, *parents: str) -> ShardInfo:
    return ShardInfo(name, tuple(parents))


def test_a_split_and_a_merge_join_their_shards_into_one_family():
    shards = [shard("a"), shard("b"), shard("c"), shard("a1", "a"), shard("a2", "a"), shard("bc", "b", "c"),
              shard("d")]
    families = lineage_families(shards)
    assert families == {"a": "a", "a1": "a", "a2": "a", "b": "b", "c": "b", "bc": "b", "d": "d"}


def test_a_parent_outside_the_listing_leaves_its_child_a_family_of_its_own():
    # a parent past the stream's retention is no longer listed: nothing to keep it before
    assert lineage_families([shard("x1", "x"), shard("y")]) == {"x1": "x1", "y": "y"}


@st.composite
def lineages(draw):
    """A stream's history: open shards split or merge a few times; every shard with its parents."""
    open_shards = [f"s{i}" for i in range(draw(st.integers(1, 5)))]
    shards = [shard(s) for s in open_shards]
    for step in range(draw(st.integers(0, 6))):
        if len(open_shards) >= 2 and draw(st.booleans()):
            i = draw(st.integers(0, len(open_shards) - 2))
            a, b = open_shards[i], open_shards[i + 1]
            child = f"m{step}"
            shards.append(shard(child, a, b))
            open_shards[i:i + 2] = [child]
        else:
            i = draw(st.integers(0, len(open_shards) - 1))
            parent = open_shards[i]
            kids = [f"p{step}a", f"p{step}b"]
            shards += [shard(k, parent) for k in kids]
            open_shards[i:i + 1] = kids
    return shards


@settings(max_examples=150, deadline=None)
@given(lineages(), st.integers(1, 12), st.integers(1, 3))
def test_every_family_lands_whole_in_one_spark_partition_parents_first(shards, target, tasks):
    families = lineage_families(shards)
    ordered = [s.shard_id for s in lineage_order(shards)]
    task_of = {sid: TaskName(f"Task-{hash(families[sid]) % tasks}") for sid in ordered}
    plan = [(task, [PlannedShardRead(0, None, sid, ShardPosition.trim_horizon()) for sid in ordered
                    if task_of[sid] == task]) for task in sorted(set(task_of.values()))]
    splits = spread_families(plan, target, families)
    seen = [r.shard_id for _, reads in splits for r in reads]
    assert sorted(seen) == sorted(ordered)  # every shard once
    split_of = {r.shard_id: i for i, (_, reads) in enumerate(splits) for r in reads}
    for sid in ordered:
        assert split_of[sid] == split_of[families[sid]], "a family was cut"
    parents = {s.shard_id: s.parent_ids for s in shards}
    for task, reads in splits:
        position = {r.shard_id: i for i, r in enumerate(reads)}
        for r in reads:
            assert task_of[r.shard_id] == task
            assert all(position[p] < position[r.shard_id] for p in parents[r.shard_id] if p in position)
    assert len(splits) <= max(target, len(plan))
