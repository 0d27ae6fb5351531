"""Checkpoint record (JSON round trip, format version) and its per-task mirror in the metadata store."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.checkpoint import (
    CHECKPOINT_FORMAT_VERSION,
    NAMESPACE,
    Checkpoint,
    CheckpointMirror,
)
from spark_samza_source.core.errors import (
    CheckpointFormatError,
    FormatVersionError,
    SamzaSourceError,
)
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.core.startpoint import use_clock
from spark_samza_source.metadata.memory import MemoryMetadataStore

_ids = itertools.count()
T = 1_700_000_000_000
K0 = SystemStreamPartition("kafka", "orders", 0)
K1 = SystemStreamPartition("kafka", "orders", 1)
KIN = SystemStreamPartition("kinesis", "clicks.v2", 0)
P0, P1 = TaskName("Partition 0"), TaskName("Partition 1")


def new_store() -> MemoryMetadataStore:
    return MemoryMetadataStore("job", name=f"checkpoint-{next(_ids)}")


def sample() -> Checkpoint:
    return Checkpoint(
        {
            P1: {K1: 7},
            P0: {K0: 42, KIN: {"shardId-000000000001": "4959", "shardId-000000000002": "SHARD_END"}},
            "Partition 2": {},
        },
        batch_id=12,
        timestamp_ms=T,
    )


def test_json_shape_is_sorted_and_self_describing():
    assert sample().to_json() == {
        "batchId": 12,
        "tasks": {
            "Partition 0": [
                {"partition": 0, "position": 42, "stream": "orders", "system": "kafka"},
                {"partition": 0, "position": {"shardId-000000000001": "4959", "shardId-000000000002": "SHARD_END"},
                 "stream": "clicks.v2", "system": "kinesis"},
            ],
            "Partition 1": [{"partition": 1, "position": 7, "stream": "orders", "system": "kafka"}],
            "Partition 2": [],
        },
        "timestamp": T,
        "version": CHECKPOINT_FORMAT_VERSION,
    }
    assert list(sample().positions) == [P0, P1, TaskName("Partition 2")]


def test_round_trip_and_queries():
    cp = sample()
    assert Checkpoint.from_json_str(cp.to_json_str()) == cp
    assert Checkpoint.from_json(json.loads(cp.to_json_str())) == cp
    assert cp.position(P0, K0) == 42
    assert cp.position("Partition 0", KIN)["shardId-000000000002"] == "SHARD_END"
    assert cp.position(P1, K0) is None
    assert cp != Checkpoint(cp.positions, batch_id=13, timestamp_ms=T)


def test_from_pairs_takes_the_offset_logs_shape_and_timestamp_defaults_to_the_clock():
    with use_clock(lambda: 99):
        cp = Checkpoint.from_pairs({(P0, K0): 5, (P1, K1): 6})
    assert cp == Checkpoint({P0: {K0: 5}, P1: {K1: 6}}, None, 99)
    assert Checkpoint.from_pairs({(P0, K0): 5}, batch_id=3, timestamp_ms=4).batch_id == 3


def test_caller_dicts_do_not_leak_into_a_checkpoint():
    shard_map = {"shard-1": "10"}
    cp = Checkpoint({P0: {KIN: shard_map}}, timestamp_ms=T)
    shard_map["shard-1"] = "99"
    assert cp.position(P0, KIN) == {"shard-1": "10"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"positions": {P0: {K0: object()}}}, "must be a JSON value"),
        ({"positions": {P0: {K0: float("nan")}}}, "non-finite"),
        ({"positions": {P0: {K0: {1: "x"}}}}, "keys must be strings"),
        ({"positions": {P0: {"kafka.orders.0": 1}}}, "not a SystemStreamPartition"),
        ({"positions": {"": {K0: 1}}}, "TaskName"),
        ({"positions": [P0]}, "must be a mapping"),
        ({"positions": {P0: {K0: 1}}, "batch_id": -1}, "batchId"),
        ({"positions": {P0: {K0: 1}}, "batch_id": True}, "batchId"),
        ({"positions": {P0: {K0: 1}}, "timestamp_ms": "now"}, "timestamp"),
    ],
)
def test_invalid_checkpoints_are_refused(kwargs, match):
    with pytest.raises(CheckpointFormatError, match=match):
        Checkpoint(**kwargs)


def test_a_newer_format_version_raises_format_version_error():
    value = {**sample().to_json(), "version": CHECKPOINT_FORMAT_VERSION + 1}
    with pytest.raises(FormatVersionError, match="upgrade"):
        Checkpoint.from_json(value)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda v: v.pop("version"), "version"),
        (lambda v: v.update(version="1"), "version"),
        (lambda v: v.pop("timestamp"), "timestamp"),
        (lambda v: v.pop("tasks"), "tasks"),
        (lambda v: v.update(extra=1), "unknown properties"),
        (lambda v: v["tasks"].update({"Partition 0": {"kafka.orders.0": 1}}), "must be a list"),
        (lambda v: v["tasks"]["Partition 1"].append(dict(v["tasks"]["Partition 1"][0])), "appears twice"),
        (lambda v: v["tasks"]["Partition 1"][0].pop("position"), "position"),
        (lambda v: v["tasks"]["Partition 1"][0].update(partition=-1), "partition"),
        (lambda v: v["tasks"]["Partition 1"][0].update(offset=1), "unknown properties"),
    ],
)
def test_malformed_checkpoint_json_raises_format_error(change, match):
    value = json.loads(sample().to_json_str())
    change(value)
    with pytest.raises(CheckpointFormatError, match=match):
        Checkpoint.from_json(value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(), c, max_size=3),
    max_leaves=10,
)
ssps = st.builds(SystemStreamPartition, st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8),
                 st.integers(min_value=0, max_value=1000))
# Category "No" (e.g. superscript two) is left out: TaskName ordering in core/model.py crashes on a name chunk
# such as "²" ("²".isdigit() but int("²") fails); reported to the owner of model.py.
task_names = st.text(st.characters(exclude_categories=("No", "Cs")), min_size=1, max_size=10).map(TaskName)
checkpoints = st.builds(
    Checkpoint,
    st.dictionaries(task_names, st.dictionaries(ssps, json_values, max_size=3),
                    max_size=3),
    st.none() | st.integers(min_value=0, max_value=2**63 - 1),
    st.integers(min_value=0, max_value=2**63 - 1),
)


@given(checkpoints)
def test_any_checkpoint_round_trips(cp):
    assert Checkpoint.from_json_str(cp.to_json_str()) == cp


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(), c, max_size=4),
        max_leaves=20,
    )
    | checkpoints.map(lambda cp: cp.to_json()).flatmap(
        lambda v: st.sampled_from(["version", "tasks", "timestamp", "batchId"]).map(lambda k: {**v, k: "x"})
    )
)
def test_arbitrary_json_raises_only_our_errors(value):
    try:
        Checkpoint.from_json(value)
    except SamzaSourceError:
        pass


# ---- mirror ----------------------------------------------------------------------------------------------


def test_mirror_writes_one_readable_key_per_task_and_reads_it_back():
    store = new_store()
    mirror = CheckpointMirror(store)
    assert mirror.read() is None
    mirror.write(sample())
    records = store.list(NAMESPACE)
    assert sorted(records) == ["Partition 0", "Partition 1", "Partition 2"]
    assert records["Partition 1"] == {
        "batchId": 12, "positions": [{"partition": 1, "position": 7, "stream": "orders", "system": "kafka"}],
        "task": "Partition 1", "timestamp": T, "version": CHECKPOINT_FORMAT_VERSION,
    }
    # another client of the same store sees the same checkpoint
    assert CheckpointMirror(MemoryMetadataStore("job", name=store.uri.removeprefix("memory:"))).read() == sample()


def test_mirror_drops_tasks_that_left_the_checkpoint():
    store = new_store()
    mirror = CheckpointMirror(store)
    mirror.write(sample())
    smaller = Checkpoint({P0: {K0: 50}}, batch_id=13, timestamp_ms=T + 1)
    mirror.write(smaller)
    assert list(store.list(NAMESPACE)) == ["Partition 0"]
    assert mirror.read() == smaller


def test_mirror_read_after_a_partial_write_reports_the_oldest_batch():
    store = new_store()
    mirror = CheckpointMirror(store)
    mirror.write(Checkpoint({P0: {K0: 1}, P1: {K1: 1}}, batch_id=4, timestamp_ms=T))
    newer = Checkpoint({P0: {K0: 9}, P1: {K1: 9}}, batch_id=5, timestamp_ms=T + 10)
    record = dict(store.get(NAMESPACE, "Partition 0"))  # simulate a crash after the first task's put
    record.update(batchId=5, timestamp=T + 10, positions=newer.to_json()["tasks"]["Partition 0"])
    store.put(NAMESPACE, "Partition 0", record)
    cp = mirror.read()
    assert (cp.batch_id, cp.timestamp_ms) == (4, T)
    assert cp.position(P0, K0) == 9 and cp.position(P1, K1) == 1


def _read_skipping(store) -> tuple[Checkpoint | None, str]:
    """The mirror's read, and what it says of the one record it left out (the rule for mirrors: skip)."""
    mirror = CheckpointMirror(store)
    checkpoint = mirror.read()
    assert len(mirror.skipped) == 1, mirror.skipped
    return checkpoint, str(mirror.skipped[0].error)


def test_mirror_read_of_a_malformed_record_skips_it_naming_store_and_key():
    store = new_store()
    CheckpointMirror(store).write(sample())
    store.put(NAMESPACE, "Partition 1", {"version": 1, "task": "Partition 1", "timestamp": T, "positions": "7"})
    checkpoint, said = _read_skipping(store)
    assert store.uri in said and "'Partition 1'" in said
    assert P1 not in checkpoint.positions and P0 in checkpoint.positions  # the damaged record hides nothing


def test_mirror_read_of_a_record_under_the_wrong_key_is_left_out():
    store = new_store()
    CheckpointMirror(store).write(sample())
    store.put(NAMESPACE, "Partition 9", store.get(NAMESPACE, "Partition 1"))
    checkpoint, said = _read_skipping(store)
    assert "'Partition 9'" in said and "'task' is \"Partition 1\"" in said
    assert P0 in checkpoint.positions and P1 in checkpoint.positions and TaskName("Partition 9") not in \
        checkpoint.positions


def test_mirror_read_of_a_newer_version_is_left_out_naming_the_key():
    store = new_store()
    CheckpointMirror(store).write(sample())
    record = {**store.get(NAMESPACE, "Partition 0"), "version": CHECKPOINT_FORMAT_VERSION + 1}
    store.put(NAMESPACE, "Partition 0", record)
    checkpoint, said = _read_skipping(store)
    assert "'Partition 0'" in said and "upgrade" in said.lower()
    assert P0 not in checkpoint.positions and P1 in checkpoint.positions
