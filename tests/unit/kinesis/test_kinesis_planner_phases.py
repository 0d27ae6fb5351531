"""Each phase of the Kinesis planner on its own: positions after a batch, unlisted shards, new shards,
startpoints, released shards, the mapping. ``test_kinesis_planner.py`` checks them together through
``plan_next``."""

import pytest

from spark_samza_source.core.errors import DataLossError
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kinesis.driver.mapper import LINEAGE
from spark_samza_source.kinesis.driver.offset import BLOCKED, DRAINED, READABLE
from spark_samza_source.kinesis.driver.planner import (
    PlanInputs,
    ShardStartpoint,
    ShardStarts,
    apply_startpoints,
    drop_unlisted,
    initial_offset,
    next_mapping,
    plan_next,
    positions_after_batch,
    released_shards,
    with_new_shards,
)
from spark_samza_source.kinesis.errors import KinesisPlanError
from spark_samza_source.kinesis.positions import ShardPosition as P
from spark_samza_source.kinesis.shards import ShardInfo, index_shards

H = 2**128
END = P.shard_end()


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


def shard(n, lo, hi, parents=(), closed=False) -> ShardInfo:
    return ShardInfo(sid(n), tuple(sid(p) for p in parents), int(lo), int(hi) - 1, str(1000 * n),
                     str(1000 * n + 999) if closed else None)


def after(n: int, k: int = 1) -> P:
    return P.after_sequence(str(1000 * n + k))


S0, S1 = shard(0, 0, H // 2), shard(1, H // 2, H)
S2, S3 = shard(2, H // 4, H // 2, [0]), shard(3, 0, H // 4, [0])


def inputs(previous, listing, recorded=None, startpoints=None, fail=True):
    return PlanInputs(previous, index_shards(listing), recorded or {}, startpoints or {}, fail)


def batch_one():
    b0 = initial_offset([S0, S1], stream="clicks")
    return plan_next(b0, [S0, S1], {}).offset


def test_positions_after_batch_zero_ignore_recorded_ends():
    b0 = initial_offset([S0, S1], stream="clicks")
    got = positions_after_batch(inputs(b0, [S0, S1], {sid(0): after(0)}))
    assert got.starts == {sid(0): P.trim_horizon(), sid(1): P.trim_horizon()} and got.drained == ()


def test_positions_after_batch_take_the_recorded_ends_and_learn_the_drained_task():
    b1 = batch_one()
    got = positions_after_batch(inputs(b1, [S0, S1], {sid(0): END, sid(1): after(1)}))
    assert got.starts == {sid(0): END, sid(1): after(1)}
    assert got.drained == (sid(0),) and got.last_task == {sid(0): b1.mapper.task_of(sid(0))}
    with pytest.raises(KinesisPlanError, match="no end was recorded"):
        positions_after_batch(inputs(b1, [S0, S1], {sid(0): END}))


def test_drop_unlisted_expires_drained_shards_and_reports_lost_ones():
    b1 = batch_one()
    starts = {sid(0): END, sid(1): after(1)}
    assert drop_unlisted(inputs(b1, [S1]), starts).expired == (sid(0),)
    with pytest.raises(DataLossError, match=f"shard {sid(1)}"):
        drop_unlisted(inputs(b1, [S0]), starts)
    lenient = drop_unlisted(inputs(b1, [S0], fail=False), starts)
    assert lenient.expired == () and [(x.shard_id, x.position) for x in lenient.losses] == [(sid(1), after(1))]


def test_with_new_shards_start_children_at_trim_horizon():
    listed = index_shards([S0, S1, S2, S3])
    starts, new = with_new_shards(listed, {sid(0): END, sid(1): after(1)})
    assert sorted(new) == [sid(2), sid(3)]
    assert starts[sid(2)] == starts[sid(3)] == P.trim_horizon() and starts[sid(0)] == END


def test_apply_startpoints_once_and_never_on_a_drained_shard():
    b1 = batch_one()
    task, ssp = TaskName("Task-0"), SystemStreamPartition("kinesis", "clicks", 0)
    moved = ShardStartpoint(after(0, 5), 10, task, ssp)
    base = ShardStarts({sid(0): after(0), sid(1): after(1)})
    got = apply_startpoints(inputs(b1, [S0, S1], startpoints={sid(0): moved}), base)
    assert got.shards.starts[sid(0)] == after(0, 5) and got.applied[(task, ssp)] == 10
    assert got.taken[(task, ssp)].creation_timestamp == 10
    to_end = ShardStartpoint(END, 11, task, ssp)
    drained = apply_startpoints(inputs(b1, [S0, S1], startpoints={sid(0): to_end}), base)
    assert drained.shards.drained == (sid(0),) and sid(0) in drained.shards.last_task
    on_end = apply_startpoints(inputs(b1, [S0, S1], startpoints={sid(0): moved}), ShardStarts({sid(0): END}))
    assert on_end.shards.starts[sid(0)] == END and on_end.applied[(task, ssp)] == 10  # recorded, moves nothing
    b2 = plan_next(b1, [S0, S1], {sid(0): after(0), sid(1): after(1)}, startpoints={sid(0): moved}).offset
    again = apply_startpoints(inputs(b2, [S0, S1], startpoints={sid(0): moved}), base)
    assert again.taken == {} and again.shards.starts == base.starts
    with pytest.raises(KinesisPlanError, match="must be a ShardStartpoint"):
        apply_startpoints(inputs(b1, [S0, S1], startpoints={sid(0): "TRIM_HORIZON"}), base)


def test_released_shards_are_readable_now_and_blocked_or_unknown_before():
    b1 = batch_one()
    statuses = {sid(0): DRAINED, sid(1): READABLE, sid(2): READABLE, sid(3): BLOCKED}
    assert released_shards(b1, statuses) == [sid(2)]


def test_next_mapping_keeps_or_rebuilds_the_job_model():
    b1 = batch_one()
    statuses = {sid(0): DRAINED, sid(1): READABLE, sid(2): READABLE, sid(3): READABLE}
    ins = inputs(b1, [S0, S1, S2, S3])
    kept = next_mapping(ins, statuses, {sid(0): 0}, LINEAGE, None)
    assert not kept.rebuilt and kept.generation == b1.generation and kept.last_task == {sid(0): 0}
    assert sid(0) not in kept.mapper and {sid(1), sid(2), sid(3)} <= set(kept.mapper.assignments())
    rebuilt = next_mapping(ins, statuses, {sid(0): 0}, LINEAGE, 3)
    assert rebuilt.rebuilt and rebuilt.generation == b1.generation + 1 and rebuilt.last_task == {}
    assert rebuilt.mapper.num_tasks == 3
