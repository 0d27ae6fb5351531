"""A Kinesis data loss skipped with failOnDataLoss=false is logged and counted once per loss: the planner returns
it in the plan and says nothing; the coordinator reports it, and a plan held back and planned again at the next
trigger (from the same start, so with the same loss) does not report it again (as samza-kafka does); nor does a
stream re-creation found by a replayed batch and again by the plan after it."""

from __future__ import annotations

import logging

import pytest

from spark_samza_source.kinesis.driver.childless import CHILDLESS_GRACE_MS
from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.driver.offset import StreamIdentity
from spark_samza_source.kinesis.driver.planner import ShardLoss, initial_offset
from spark_samza_source.kinesis.errors import DataLossError
from spark_samza_source.kinesis.microbatch_ends import BatchEnds, RecordedEnd
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.metadata.memory import MemoryMetadataStore

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


class ListingAdmin:
    """ListShards as a proxy in front of Kinesis could bend it: whatever ``shards`` holds now."""

    def __init__(self, identity: StreamIdentity, shards: list[ShardInfo]) -> None:
        self.identity, self.shards = identity, shards

    def stream_identity(self, stream):
        return self.identity.arn, self.identity.created_ms

    def list_shards(self, stream):
        return list(self.shards)


def _drained_parent_query(tmp_path, fail_on_data_loss: bool):
    """A coordinator whose offset has shard 0 closed and read to its end, and a listing without its children."""
    arn = "arn:aws:kinesis:us-east-1:123456789012:stream/clicks"
    identity = StreamIdentity(arn, 1_700_000_000_000)
    parent = ShardInfo(LOST, ending_sequence="4900")
    start = initial_offset([parent], 1, ShardPosition.shard_end(), stream="clicks", query_id="q",
                           stream_identity=identity)
    now = [1_000_000]
    options = KinesisSourceOptions.parse({"streamname": "clicks", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": f"file://{tmp_path}",
                                          "failOnDataLoss": str(fail_on_data_loss).lower()})
    coordinator = KinesisCoordinator(options, wall_ms=lambda: now[0])
    coordinator._admin = ListingAdmin(identity, [parent])
    return coordinator, start, now


def test_a_closed_shard_listed_without_children_past_the_grace_is_data_loss(tmp_path):
    """Backs docs/guarantees.md: "a shard that is closed without children" under "Answers that contradict each
    other are named, not trusted"."""
    coordinator, start, now = _drained_parent_query(tmp_path, fail_on_data_loss=True)
    coordinator.plan_batch(start, max_rows=None)  # a listing may lag a reshard for a moment: not yet
    now[0] += CHILDLESS_GRACE_MS - 1
    coordinator.plan_batch(start, max_rows=None)
    now[0] += 1
    with pytest.raises(DataLossError, match=rf"shard {LOST} is closed \(ending sequence number 4900\).*named no "
                                            rf"child of it for 120 s.*failOnDataLoss=false") as err:
        coordinator.plan_batch(start, max_rows=None)
    assert err.value.condition == "SAMZA_KINESIS_DATA_LOSS"


def test_children_listed_within_the_grace_end_the_watch(tmp_path):
    coordinator, start, now = _drained_parent_query(tmp_path, fail_on_data_loss=True)
    coordinator.plan_batch(start, max_rows=None)
    now[0] += CHILDLESS_GRACE_MS // 2
    coordinator._admin.shards.append(ShardInfo("shardId-000000000001", parent_ids=(LOST,)))
    coordinator.plan_batch(start, max_rows=None)
    coordinator._admin.shards.pop()  # a later listing without the child starts the grace again
    now[0] += CHILDLESS_GRACE_MS // 2 + 1
    coordinator.plan_batch(start, max_rows=None)
    assert "dataLoss" not in coordinator.system_progress()


def test_with_fail_on_data_loss_false_a_childless_shard_is_reported_once_and_counted(tmp_path, caplog):
    coordinator, start, now = _drained_parent_query(tmp_path, fail_on_data_loss=False)
    coordinator.plan_batch(start, max_rows=None)
    now[0] += CHILDLESS_GRACE_MS
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            coordinator.plan_batch(start, max_rows=None)
            now[0] += 1000
    assert len(_losses(caplog)) == 1 and "named no child" in _losses(caplog)[0]
    assert coordinator.system_progress()["dataLoss"] == {"shardsClosedWithoutChildren": [LOST]}


def test_what_an_executors_read_skipped_reaches_the_drivers_progress_once(tmp_path, caplog):
    """A read with failOnDataLoss=false records what it skipped beside its batch end (the first attempt's words
    hold, like its end); the driver that plans from that end reports it in the progress and logs it, once.

    Backs docs/guarantees.md: what a Kinesis read skips with failOnDataLoss=false "is recorded beside its batch end
    and reported by the driver in the progress"."""
    store = MemoryMetadataStore("j")
    ends = BatchEnds(store, stream="clicks")
    skipped = "shard shardId-000000000000: the records after sequence number 7 are no longer available"
    ends.record(3, LOST, ShardPosition.after_sequence("9"), data_loss=(skipped,))
    ends.record(3, LOST, ShardPosition.after_sequence("9"), data_loss=("a retry's own words",))
    ends.record(3, "shardId-000000000001", ShardPosition.after_sequence("5"))
    found = ends.recorded_for(3)
    assert found[LOST].data_loss == (skipped,) and found["shardId-000000000001"].data_loss == ()

    options = KinesisSourceOptions.parse({"streamname": "clicks", "region": "us-east-1", "job.name": "j",
                                          "metadata.store": f"file://{tmp_path}", "failOnDataLoss": "false"})
    coordinator = KinesisCoordinator(options)
    with caplog.at_level(logging.WARNING):
        for _ in range(2):  # a plan held back is planned again from the same ends
            coordinator._report_read_losses(3, found)
    assert len(_losses(caplog)) == 1 and skipped in _losses(caplog)[0]
    assert coordinator.system_progress()["dataLoss"] == {"readsSkipped": [f"{LOST} in batch 3"]}


def test_a_recorded_end_with_a_malformed_loss_report_still_reads():
    store = MemoryMetadataStore("j")
    ends = BatchEnds(store)
    ends.record(1, LOST, ShardPosition.after_sequence("9"))
    key = ends.key(1, LOST)
    store.put("kinesis-batch-ends", key, {**store.get("kinesis-batch-ends", key), "dataLoss": "not a list"})
    assert ends.recorded_for(1)[LOST] == RecordedEnd(ShardPosition.after_sequence("9"), None, ())
