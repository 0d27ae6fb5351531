"""A Kinesis data loss skipped with failOnDataLoss=false is logged and counted once per loss: the planner returns
it in the plan and says nothing; the coordinator reports it, and a plan held back and planned again at the next
trigger (from the same start, so with the same loss) does not report it again (as samza-kafka does)."""

from __future__ import annotations

import logging

from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.driver.planner import ShardLoss
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition

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
