"""KinesisOffset: deterministic, self-contained JSON; string-identical round trips; only our errors on bad input."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_samza_source.core.errors import FormatVersionError, OffsetFormatError, SamzaSourceError
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kinesis.driver.mapper import ShardPartitionMapper
from spark_samza_source.kinesis.driver.offset import (
    BLOCKED,
    DRAINED,
    READABLE,
    AppliedStartpoint,
    KinesisOffset,
    ShardState,
)
from spark_samza_source.kinesis.positions import ShardPosition as P


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


def ssp(p: int) -> SystemStreamPartition:
    return SystemStreamPartition("kinesis", "clicks", p)


T0, T1 = TaskName("Task-0"), TaskName("Task-1")


def sample() -> KinesisOffset:
    mapper = ShardPartitionMapper(2, 2, {sid(2): 0, sid(3): 1, sid(6): 1, sid(4): 2})
    shards = {
        sid(0): ShardState(P.shard_end(), DRAINED, "999", last_task=1),
        sid(1): ShardState(P.shard_end(), DRAINED, "1999"),
        sid(2): ShardState(P.after_sequence("4961", 3), READABLE, "2999"),
        sid(3): ShardState(P.at_timestamp(1_700_000_000_000), READABLE),
        sid(6): ShardState(P.trim_horizon(), BLOCKED),
        sid(4): ShardState(P.at_sequence("12"), READABLE),
    }
    return KinesisOffset(
        batch=7, stream="clicks", mapper=mapper, shards=shards, generation=2,
        startpoints={(T0, ssp(1)): AppliedStartpoint(1_700_000_000_123, {sid(3): P.at_timestamp(1_700_000_000_000)})},
        applied={(T0, ssp(1)): 1_700_000_000_123, (T1, ssp(2)): 5},
        latest_timestamp_ms=1_699_999_999_000,
    )


def test_json_layout():
    out = sample().to_json()
    assert out["batch"] == 7 and out["version"] == 2
    assert out["jobModel"] == {"generation": 2, "numTasks": 2, "slotsPerTask": 2, "stream": "clicks",
                               "system": "kinesis"}
    assert out["shards"][sid(0)] == {"endingSequence": "999", "lastTask": "Task-1", "start": {"type": "SHARD_END"},
                                     "status": "drained"}
    assert out["shards"][sid(1)] == {"endingSequence": "1999", "start": {"type": "SHARD_END"}, "status": "drained"}
    assert out["shards"][sid(2)] == {
        "endingSequence": "2999", "slot": 0, "start": {"sequence": "4961", "sub": 3, "type": "AFTER_SEQUENCE_NUMBER"},
        "status": "readable", "task": "Task-0",
    }
    assert out["startpoints"] == {"Task-0": {"kinesis.clicks.1": {
        "creationTimestamp": 1_700_000_000_123, "shards": {sid(3): {"timestampMs": 1_700_000_000_000,
                                                                   "type": "AT_TIMESTAMP"}}}}}
    assert out["applied"] == {"Task-0": {"kinesis.clicks.1": 1_700_000_000_123}, "Task-1": {"kinesis.clicks.2": 5}}
    assert out["latestTimestampMs"] == 1_699_999_999_000


def test_dicts_are_built_in_sorted_order_so_spark_json_dumps_is_stable():
    # Spark serialises with plain json.dumps (no sort_keys): insertion order must already be sorted everywhere.
    out = sample().to_json()
    assert json.dumps(out) == json.dumps(out, sort_keys=True)


def test_round_trip_is_string_identical():
    text = sample().to_json_str()
    again = KinesisOffset.from_json(json.loads(text))
    assert again.to_json_str() == text and again == sample()
    spark_form = json.dumps(sample().to_json())  # what Spark stores
    assert json.dumps(KinesisOffset.from_json(json.loads(spark_form)).to_json()) == spark_form


def test_derived_views():
    off = sample()
    assert off.task_of(sid(6)) == T0 and off.slot_ssp(sid(4)) == ssp(2) and off.task_of(sid(0)) is None
    assert off.last_task_of(sid(0)) == T1 and off.last_task_of(sid(1)) is None and off.last_task_of(sid(6)) is None
    assert off.shards_in_slot(T0, ssp(1)) == [sid(3), sid(6)]
    assert off.shards_in_slot(T1, ssp(1)) == []  # slot 1 is Task-0's
    positions = off.ssp_positions()
    assert positions[(T0, ssp(0))] == P.after_sequence("4961", 3)
    assert positions[(T0, ssp(1))] == {sid(3): P.at_timestamp(1_700_000_000_000), sid(6): P.trim_horizon()}
    model = off.job_model
    assert model.tasks == {T0: frozenset({ssp(0), ssp(1)}), T1: frozenset({ssp(2), ssp(3)})}
    assert model.ssp_to_task()[ssp(3)] == T1
    assert off.shards_with(READABLE) == [sid(2), sid(3), sid(4)]


def test_invariants_are_checked():
    mapper = ShardPartitionMapper(1, 2, {sid(1): 0})
    with pytest.raises(OffsetFormatError, match="not mapped"):
        KinesisOffset(1, "s", mapper, {sid(1): ShardState(P.trim_horizon(), READABLE),
                                       sid(2): ShardState(P.trim_horizon(), BLOCKED)})
    with pytest.raises(OffsetFormatError, match="mapped to a slot"):
        KinesisOffset(1, "s", mapper, {sid(1): ShardState(P.shard_end(), DRAINED)})
    with pytest.raises(OffsetFormatError, match="SHARD_END"):
        ShardState(P.shard_end(), READABLE)
    with pytest.raises(OffsetFormatError, match="lastTask"):
        ShardState(P.trim_horizon(), READABLE, last_task=0)  # only a drained shard has one
    with pytest.raises(OffsetFormatError, match="lastTask"):
        KinesisOffset(1, "s", mapper, {sid(1): ShardState(P.trim_horizon(), READABLE),
                                       sid(2): ShardState(P.shard_end(), DRAINED, last_task=1)})  # 1 task only


def test_version_1_offsets_without_last_task_are_still_read():
    value = sample().to_json()
    value["version"] = 1
    del value["shards"][sid(0)]["lastTask"]
    off = KinesisOffset.from_json(value)
    assert off.last_task_of(sid(0)) is None and off.shards[sid(2)] == sample().shards[sid(2)]


def test_newer_version_is_a_format_version_error():
    value = sample().to_json()
    value["version"] = 3
    with pytest.raises(FormatVersionError, match="newer"):
        KinesisOffset.from_json(value)


@pytest.mark.parametrize("damage", [
    lambda v: v.pop("jobModel"),
    lambda v: v["jobModel"].pop("numTasks"),
    lambda v: v["shards"][sid(2)].pop("start"),
    lambda v: v["shards"][sid(2)].update(task="Task-1"),
    lambda v: v["shards"][sid(2)].update(slot=9),
    lambda v: v["shards"][sid(2)].pop("slot"),
    lambda v: v["shards"][sid(2)].update(status="sleeping"),
    lambda v: v["shards"][sid(0)].update(endingSequence="x"),
    lambda v: v["shards"][sid(0)].update(lastTask="Task-2"),  # no such task
    lambda v: v["shards"][sid(0)].update(lastTask="task two"),
    lambda v: v["shards"][sid(2)].update(lastTask="Task-0"),  # not drained
    lambda v: v.update(batch=-1),
    lambda v: v.update(batch=True),
    lambda v: v.update(extra=1),
    lambda v: v["applied"].update({"Task-0": {"nope": 1}}),
    lambda v: v["startpoints"]["Task-0"]["kinesis.clicks.1"].pop("creationTimestamp"),
    lambda v: v.update(version="1"),
])
def test_damaged_offsets_raise_offset_format_error(damage):
    value = sample().to_json()
    damage(value)
    with pytest.raises(OffsetFormatError):
        KinesisOffset.from_json(value)


def test_from_json_str_errors():
    with pytest.raises(OffsetFormatError, match="not valid JSON"):
        KinesisOffset.from_json_str("{")
    with pytest.raises(OffsetFormatError, match="samza-kinesis"):
        KinesisOffset.from_json_str('{"version": 1}')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300)
@given(json_values)
def test_arbitrary_json_raises_only_our_errors(value):
    try:
        KinesisOffset.from_json(value)
    except SamzaSourceError:
        pass


def _mutate(value, path_choice, replacement):
    """Replace one node of ``value`` (a JSON tree) chosen by ``path_choice`` with ``replacement``."""
    nodes = []

    def walk(node, parent, key):
        nodes.append((parent, key))
        if isinstance(node, dict):
            for k in list(node):
                walk(node[k], node, k)
        elif isinstance(node, list):
            for i in range(len(node)):
                walk(node[i], node, i)

    walk(value, None, None)
    parent, key = nodes[path_choice % len(nodes)]
    if parent is None:
        return replacement
    parent[key] = replacement
    return value


@settings(max_examples=300)
@given(st.integers(min_value=0), json_values)
def test_mutated_real_offsets_raise_only_our_errors(path_choice, replacement):
    value = _mutate(sample().to_json(), path_choice, replacement)
    try:
        KinesisOffset.from_json(value)
    except SamzaSourceError:
        pass
