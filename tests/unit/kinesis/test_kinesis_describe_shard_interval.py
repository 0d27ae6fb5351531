"""describeShardInterval (the AWS connector's kinesis.describeShardInterval): the least time between two ListShards
calls of the driver's plans; 0 (the default) lists at every plan."""

from __future__ import annotations

from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.shards import ShardInfo


class CountingAdmin:
    """Answers ListShards with one shard and counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def list_shards(self, stream):
        self.calls += 1
        return [ShardInfo(f"shardId-{self.calls:012d}")]


def coordinator(tmp_path, **extra):
    options = KinesisSourceOptions.parse({"streamname": "s", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": f"file://{tmp_path}", **extra})
    now = [100.0]
    coord = KinesisCoordinator(options, clock=lambda: now[0])
    coord._admin = CountingAdmin()
    return coord, now


def test_every_plan_lists_the_shards_by_default(tmp_path):
    coord, _ = coordinator(tmp_path)
    for _ in range(3):
        coord._shards_for_plan()
    assert coord.admin.calls == 3


def test_plans_within_the_interval_reuse_the_last_list(tmp_path):
    coord, now = coordinator(tmp_path, **{"kinesis.describeshardinterval": "10s"})
    first = coord._shards_for_plan()
    now[0] += 9.9
    assert coord._shards_for_plan() == first and coord.admin.calls == 1
    now[0] += 0.1
    assert coord._shards_for_plan() != first and coord.admin.calls == 2
