"""samza-kinesis options: defaults, every bad value's message, and credentials kept out of text."""

import pickle

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.kinesis.starting import AtTimestamp, KclCheckpoints, Latest, PerShard, TrimHorizon

BASE = {"streamname": "clicks", "job.name": "clicks-etl", "region": "eu-west-1"}


def parse(**extra):
    raw = dict(BASE)
    for key, value in extra.items():
        key = key.replace("__", ".").lower()
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return KinesisSourceOptions.parse(raw)


def error_of(**extra) -> str:
    with pytest.raises(ConfigError) as err:
        parse(**extra)
    return str(err.value)


def test_defaults():
    opts = parse()
    assert opts.stream == "clicks" and opts.region == "eu-west-1"
    assert opts.tasks is None and opts.assignment == "lineage"
    assert opts.starting == Latest()
    assert opts.fail_on_data_loss is True
    assert opts.max_records_per_shard == 100_000 and opts.max_fetch_time_ms == 10_000
    assert opts.kcl_lease_table is None


def test_required_options():
    assert "'streamName' is required" in error_of(streamName=None)
    assert "'job.name' is required" in error_of(job__name=None)
    assert "not a valid Kinesis stream name" in error_of(streamName="bad name!")


def test_starting_positions():
    assert parse(startingPosition=" latest ").starting == Latest()
    assert parse(startingPosition="trim_horizon").starting == TrimHorizon()
    assert parse(startingPosition="EARLIEST").starting == TrimHorizon()
    assert parse(startingPosition="kcl").starting == KclCheckpoints()
    at = parse(startingPosition="AT_TIMESTAMP:2026-11-22T08:00:00Z").starting
    assert at == AtTimestamp(1795334400000, option="startingPosition")
    per = parse(startingPosition='{"shardId-0": "TRIM_HORIZON"}').starting
    assert per == PerShard({"shardId-0": ShardPosition.trim_horizon()}, option="startingPosition")
    assert "AT_TIMESTAMP needs an ISO-8601 time with a zone" in error_of(startingPosition="AT_TIMESTAMP:yesterday")
    assert "per-shard JSON is invalid" in error_of(startingPosition='{"shardId-0": "SIDEWAYS"}')
    assert "must be LATEST, TRIM_HORIZON" in error_of(startingPosition="beginning")


def test_bad_values():
    assert "'tasks' must be at least 1, got 0" in error_of(tasks="0")
    assert "'assignment' must be one of lineage, balanced" in error_of(assignment="random")
    assert "'maxRecordsPerShard' must be a whole number" in error_of(maxRecordsPerShard="many")
    assert "'endpointUrl' must start with http" in error_of(endpointUrl="localhost:4566")
    assert "go together" in error_of(awsAccessKeyId="AKIAEXAMPLE")


def test_credentials_never_appear_in_text_or_repr():
    opts = parse(awsAccessKeyId="AKIAEXAMPLE", awsSecretKey="s3cr3t-value", sessionToken="tok-value")
    text = repr(opts) + opts.describe() + str(opts)
    assert "s3cr3t-value" not in text and "tok-value" not in text
    assert pickle.loads(pickle.dumps(opts)).secret_key == "s3cr3t-value"  # executors still get it
