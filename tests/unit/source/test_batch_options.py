"""Options of batch reads (``spark.read``) of both sources: Spark's batch defaults and refusals, the ending options,
no ``job.name`` needed, and streaming queries refusing the batch-only options. No Spark session, no broker."""

from __future__ import annotations

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.options import BOUNDED_ONLY_OPTIONS as KAFKA_BOUNDED_ONLY
from spark_samza_source.kafka.options import KafkaBoundedOptions
from spark_samza_source.kafka.starting import ByTimestamp, Earliest, Latest, SpecificOffsets
from spark_samza_source.kinesis.options import BOUNDED_ONLY_OPTIONS as KINESIS_BOUNDED_ONLY
from spark_samza_source.kinesis.options import KinesisBoundedOptions, KinesisEnding
from spark_samza_source.kinesis.starting import AtTimestamp, TrimHorizon
from spark_samza_source.source.bounded_reader import BOUNDED_JOB_NAME, bounded_raw_options, refuse_bounded_only_options

KAFKA = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"}
KINESIS = {"streamName": "clicks", "region": "us-east-1"}


def kafka(**extra) -> KafkaBoundedOptions:
    raw, uses_store = bounded_raw_options({**KAFKA, **extra})
    return KafkaBoundedOptions.parse({k.lower(): v for k, v in raw.items()}, uses_store)


def kinesis(**extra) -> KinesisBoundedOptions:
    raw, uses_store = bounded_raw_options({**KINESIS, **extra})
    return KinesisBoundedOptions.parse({k.lower(): v for k, v in raw.items()}, uses_store)


def test_kafka_defaults_earliest_to_latest_without_a_job():
    opts = kafka()
    assert opts.source.starting == Earliest() and opts.ending == Latest()
    assert opts.use_stored_job_model is False and opts.source.job_name == BOUNDED_JOB_NAME
    assert opts.source.metadata_store.startswith("memory:")


def test_kafka_job_name_means_the_stored_job_model():
    opts = kafka(**{"job.name": "orders-enricher", "metadata.store": "file:///tmp/x"})
    assert opts.use_stored_job_model is True and opts.source.job_name == "orders-enricher"


def test_store_without_job_name_is_refused():
    with pytest.raises(ConfigError, match="'metadata.store' is set without 'job.name'"):
        kafka(**{"metadata.store": "file:///tmp/x"})


def test_kafka_ending_options():
    assert kafka(endingOffsets="latest").ending == Latest()
    ends = kafka(endingOffsets='{"orders":{"0":5,"1":-1}}').ending
    assert ends == SpecificOffsets({"orders": {0: 5, 1: -1}}, option="endingOffsets") and ends.option == "endingOffsets"
    ts = kafka(endingTimestamp="1700000000000").ending
    assert ts == ByTimestamp(timestamp_ms=1700000000000, strategy="latest", option="endingTimestamp",
                             strategy_option="startingOffsetsByTimestampStrategy")
    per = kafka(endingOffsetsByTimestamp='{"orders":{"0":1700000000000}}').ending
    assert per == ByTimestamp(per_partition={"orders": {0: 1700000000000}}, strategy="latest",
                              option="endingOffsetsByTimestamp", strategy_option="startingOffsetsByTimestampStrategy")


@pytest.mark.parametrize("extra,message", [
    ({"startingOffsets": "latest"}, "'startingOffsets'='latest' is not valid for batch queries"),
    ({"startingOffsets": '{"orders":{"0":-1}}'}, "-1 (latest) is not valid for batch queries"),
    ({"endingOffsets": "earliest"}, "'endingOffsets'='earliest' is not valid for batch queries"),
    ({"endingOffsets": '{"orders":{"0":-2}}'}, "option 'endingOffsets' must be 'latest' or JSON"),
    ({"endingTimestamp": "soon"}, "option 'endingTimestamp' must be epoch milliseconds"),
    ({"endingOffsetsByTimestamp": '{"orders":[1]}'}, "option 'endingOffsetsByTimestamp' must be JSON"),
    ({"endingOffsets": "latest", "endingTimestamp": "1"}, "set only one of the options endingOffsets, endingTimestamp"),
])
def test_kafka_bad_batch_options(extra, message):
    with pytest.raises(ConfigError) as err:
        kafka(**extra)
    assert message in str(err.value)


def test_kinesis_defaults_trim_horizon_to_latest():
    opts = kinesis()
    assert opts.source.starting == TrimHorizon() and opts.ending == KinesisEnding()
    at = kinesis(startingPosition="AT_TIMESTAMP:2026-01-01T10:00:00Z",
                 endingPosition="AT_TIMESTAMP:2026-01-01T11:00:00Z")
    assert at.source.starting == AtTimestamp(1767261600000, option="startingPosition")
    assert at.ending.until_ms == 1767265200000
    per = kinesis(endingPosition='{"shardId-000000000000": "49650", "shardId-000000000001": "LATEST"}')
    assert per.ending.per_shard == {"shardId-000000000000": "49650"}


@pytest.mark.parametrize("value", ["AT_TIMESTAMP:yesterday", "AT_TIMESTAMP:2026-01-01T10:00:00", "EARLIEST",
                                   '{"shardId-000000000000": 12}'])
def test_kinesis_bad_ending_position(value):
    with pytest.raises(ConfigError, match="option 'endingPosition'"):
        kinesis(endingPosition=value)


@pytest.mark.parametrize("names,fmt", [(KAFKA_BOUNDED_ONLY, "samza-kafka"), (KINESIS_BOUNDED_ONLY, "samza-kinesis")])
def test_streaming_refuses_batch_only_options(names, fmt):
    for name in names:
        with pytest.raises(ConfigError, match=f"option '{name}' is not valid in streaming queries"):
            refuse_bounded_only_options({name.lower(): "x"}, names, fmt)  # Spark lower-cases option names
    refuse_bounded_only_options({"startingoffsets": "earliest"}, names, fmt)  # the rest pass
