"""The shard -> task record a streaming samza-kinesis query stores for its batch reads
(``kinesis/driver/shard_tasks.py``)
and how a batch read resolves tasks from it (``kinesis/driver/bounded_read.py``). Pure: a memory store, no servers."""

from __future__ import annotations

import pytest

from spark_samza_source.core.errors import FormatVersionError, SamzaSourceError
from spark_samza_source.core.model import TaskName
from spark_samza_source.kinesis.driver.bounded_read import _stored_tasks_first
from spark_samza_source.kinesis.driver.offset import StreamIdentity
from spark_samza_source.kinesis.driver.planner import initial_offset
from spark_samza_source.kinesis.driver.shard_tasks import NAMESPACE, ShardTasks, ShardTasksMirror
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.metadata import open_store

H = 2**128
IDENTITY = StreamIdentity("arn:aws:kinesis:us-east-1:000000000000:stream/clicks", 1_700_000_000_000)


def sid(n: int) -> str:
    return f"shardId-{n:012d}"


def shard(n, lo, hi, parents=(), closed=False) -> ShardInfo:
    return ShardInfo(sid(n), tuple(sid(p) for p in parents), int(lo), int(hi) - 1, str(1000 * n),
                     str(1000 * n + 999) if closed else None)


def two_shards_split():
    """Shards 0 and 1 (two tasks), then both split: 2, 3 children of 0; 4, 5 children of 1."""
    return [shard(0, 0, H // 2, closed=True), shard(1, H // 2, H, closed=True),
            shard(2, 0, H // 4, (0,)), shard(3, H // 4, H // 2, (0,)),
            shard(4, H // 2, 3 * H // 4, (1,)), shard(5, 3 * H // 4, H, (1,))]


def test_the_record_round_trips_and_is_rewritten_only_when_the_map_changes():
    store = open_store("memory:shard-tasks-rt", "job")
    offset = initial_offset([shard(0, 0, H // 2), shard(1, H // 2, H)], 2, stream="clicks",
                            stream_identity=IDENTITY)
    mirror = ShardTasksMirror(store, "clicks")
    mirror.write(offset)
    stored = store.get(NAMESPACE, "clicks")
    assert stored["shards"] == {sid(0): "Task-0", sid(1): "Task-1"} and stored["numTasks"] == 2
    assert ShardTasksMirror(store, "clicks").read() == ShardTasks("clicks", IDENTITY, 2, 0, stored["shards"])
    store.put(NAMESPACE, "clicks", {**stored, "batch": -1})  # so a rewrite would show
    mirror.write(offset)  # same map: not written again
    assert store.get(NAMESPACE, "clicks")["batch"] == -1


@pytest.mark.parametrize(("bad", "what"), [
    ("text", "str, not a shard-task record"),
    ({"format": 1}, "numTasks null"),
    ({"format": 1, "stream": "s", "numTasks": 0, "batch": 1, "shards": {}}, "numTasks 0"),
    ({"format": 1, "stream": "s", "numTasks": 2, "batch": 1, "shards": {sid(0): "Task-2"}}, "not one of its 2"),
    ({"format": 1, "stream": "s", "numTasks": 2, "batch": 1, "shards": {sid(0): "Partition 0"}}, "not one of"),
    ({"format": 1, "stream": "s", "numTasks": 2, "batch": 1, "shards": {}, "streamIdentity": {"arn": ""}},
     "streamIdentity"),
    ({"format": 0, "stream": "s", "numTasks": 2, "batch": 1, "shards": {}}, "format 0"),  # an older format
    ({"format": 1, "stream": "other", "numTasks": 1, "batch": 1, "shards": {}}, "record of stream"),
])
def test_a_damaged_record_fails_naming_it_what_is_wrong_and_the_repair(bad, what):
    with pytest.raises(SamzaSourceError, match="SHARD_TASKS_INVALID") as caught:
        ShardTasks.from_json(bad, "the record", "s")
    assert "the record (kind: shard tasks) is damaged" in str(caught.value)
    assert what in str(caught.value)
    assert "run the streaming query for one batch" in str(caught.value)


def test_a_record_of_a_newer_format_fails_naming_it():
    with pytest.raises(FormatVersionError, match="the record has format 2.*upgrade"):
        ShardTasks.from_json({"format": 2}, "the record")


def test_stored_tasks_come_first_then_a_parents_then_this_reads_own():
    shards = two_shards_split() + [shard(6, 0, H // 4, (2,))]  # 6: a child of 2 the query has not planned yet
    offset = initial_offset(shards, 2, stream="clicks")
    # the query placed 0 (and its children) in Task-1 and 1 (and its children) in Task-0
    stored = ShardTasks("clicks", None, 2, 9, {sid(0): "Task-1", sid(2): "Task-1", sid(3): "Task-1",
                                               sid(1): "Task-0", sid(4): "Task-0"})
    task_of = _stored_tasks_first(stored, offset, shards)
    assert [task_of(sid(n)) for n in range(7)] == [
        TaskName("Task-1"), TaskName("Task-0"), TaskName("Task-1"), TaskName("Task-1"),
        TaskName("Task-0"),
        TaskName("Task-0"),  # 5: not stored, its parent 1's task
        TaskName("Task-1"),  # 6: not stored, its parent 2's task
    ]
    unrelated = ShardTasks("clicks", None, 2, 9, {})
    assert _stored_tasks_first(unrelated, offset, shards)(sid(5)) == offset.task_of(sid(5))
