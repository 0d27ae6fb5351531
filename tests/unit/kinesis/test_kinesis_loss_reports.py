"""A Kinesis data loss skipped with failOnDataLoss=false is logged and counted once per loss: the planner returns
it in the plan and says nothing; the coordinator reports it, and a plan held back and planned again at the next
trigger (from the same start, so with the same loss) does not report it again (as samza-kafka does); nor does a
stream re-creation found by a replayed batch and again by the plan after it."""

from __future__ import annotations

import logging

from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.driver.offset import StreamIdentity
from spark_samza_source.kinesis.driver.planner import ShardLoss, initial_offset
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.shards import ShardInfo

LOST = "shardId-000000000000"


def _losses(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("data loss")]


def test_a_loss_planned_again_is_reported_once(tmp_path, caplog):
    options = KinesisSourceOptions.parse({"streamname": "clicks", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": f"file://{tmp_path}", "failOnDataLoss": "false"})
    coordinator = KinesisCoordinator(options)
    loss = ShardLoss(LOST, ShardPosition.after_sequence("42"), "READABLE")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):  # a held-back plan is planned again at every trigger
            coordinator._report_shard_losses([loss])
    assert len(_losses(caplog)) == 1 and LOST in _losses(caplog)[0]
    assert coordinator.system_progress()["dataLoss"] == {"shardsExpired": [LOST]}


def test_no_loss_leaves_no_data_loss_entry(tmp_path):
    options = KinesisSourceOptions.parse({"streamname": "clicks", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": f"file://{tmp_path}"})
    coordinator = KinesisCoordinator(options)
    coordinator._report_shard_losses([])
    assert "dataLoss" not in coordinator.system_progress()


class RecreatedStreamAdmin:
    """A stream that was deleted and re-created: the identity Kinesis reports now differs from the offset's."""

    def __init__(self, identity: StreamIdentity) -> None:
        self.identity = identity

    def stream_identity(self, stream):
        return self.identity.arn, self.identity.created_ms

    def list_shards(self, stream):
        return [ShardInfo("shardId-000000000000")]


def test_a_stream_recreated_before_a_replayed_batch_is_reported_once(tmp_path, caplog):
    # A restart replays its last planned batch (batch_reads finds the new stream), then plans the next batch from
    # that batch's end, which still names the old stream: one loss, one report.
    arn = "arn:aws:kinesis:us-east-1:123456789012:stream/clicks"
    old, new = StreamIdentity(arn, 1_700_000_000_000), StreamIdentity(arn, 1_700_000_100_000)
    end = initial_offset([ShardInfo("shardId-000000000000")], 1, ShardPosition.trim_horizon(), stream="clicks",
                         query_id="q", stream_identity=old)
    options = KinesisSourceOptions.parse({"streamname": "clicks", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": f"file://{tmp_path}", "failOnDataLoss": "false"})
    coordinator = KinesisCoordinator(options)
    coordinator._admin = RecreatedStreamAdmin(new)
    with caplog.at_level(logging.WARNING):
        replayed = coordinator.batch_reads(end, end)  # the replay reads nothing of the old stream
        planned = coordinator.plan_batch(end, max_rows=None)
    assert [(str(task), reads) for task, reads in replayed] == [("Task-0", [])]
    assert planned.stream_identity == new
    assert len(_losses(caplog)) == 1 and "re-created" in _losses(caplog)[0]
    assert coordinator.system_progress()["dataLoss"] == {"streamRecreated": [f"{old.describe()} -> {new.describe()}"]}
