"""The values a shard read is built from: ShardReadSettings (one per task) checks its limits, and
shard_read_args splits keyword options between the ShardRead and the settings, refusing unknown ones by name."""

import pytest

from spark_samza_source.core.errors import InternalError
from spark_samza_source.kinesis.executor.reader import ShardRead, ShardReadSettings, shard_read_args
from spark_samza_source.kinesis.positions import ShardPosition

START = ShardPosition.trim_horizon()


@pytest.mark.parametrize("bad", [{"max_records": 0}, {"records_per_call": 0}, {"max_rows_per_batch": 0},
                                 {"max_fetch_time_ms": -1}])
def test_settings_refuse_limits_that_read_nothing(bad):
    with pytest.raises(InternalError, match="max_records, records_per_call and max_rows_per_batch must be >= 1"):
        ShardReadSettings(**bad)


def test_settings_are_frozen_and_equal_by_value():
    settings = ShardReadSettings(max_records=5)
    assert settings == ShardReadSettings(max_records=5) != ShardReadSettings()
    with pytest.raises(AttributeError):
        settings.max_records = 6


def test_shard_read_splits_keywords_between_request_and_settings():
    end = ShardPosition.after_sequence("7")
    read, settings = shard_read_args("clicks", "shardId-1", START, task="Task-0", recorded_end=end, max_records=3,
                                     fail_on_data_loss=False, until_arrival_ms=9)
    assert read == ShardRead("clicks", "shardId-1", START, "Task-0", recorded_end=end, until_arrival_ms=9)
    assert (settings.max_records, settings.fail_on_data_loss) == (3, False)
    assert settings.min_call_interval_ms == ShardReadSettings().min_call_interval_ms


def test_shard_read_names_an_unknown_option():
    with pytest.raises(TypeError, match="unknown shard read option\\(s\\): max_record, stream_name"):
        shard_read_args("clicks", "shardId-1", START, task="Task-0", max_record=3, stream_name="x")
