"""A metadata.store URI that cannot name a store is refused when the query is defined (``load()``), with no I/O:
left to pyarrow, ``s3://`` without a bucket would take the job name for the bucket."""

from __future__ import annotations

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.metadata import check_store_uri, open_store


@pytest.mark.parametrize("uri,expected", [
    ("s3://", "the bucket is missing; write s3://BUCKET/PREFIX"),
    ("s3:///samza", "the bucket is missing"),
    ("s3://?region=eu-west-1", "the bucket is missing"),
    ("s3://AKIAXX:s3cr3tvalue@/samza", "the bucket is missing"),
    ("gs://", "the bucket is missing; write gs://BUCKET/PREFIX"),
    ("dynamodb://", "the table is missing; write dynamodb://TABLE"),
    ("dynamodb://?region=eu-west-1", "the table is missing"),
    ("dynamodb:///samza", "the table is missing"),
])
def test_a_store_uri_without_bucket_or_table_is_refused_naming_the_option(uri, expected):
    with pytest.raises(ConfigError) as err:
        check_store_uri(uri)
    message = str(err.value)
    assert message.startswith("[SAMZA_INVALID_OPTION] metadata.store ") and expected in message
    assert "s3cr3tvalue" not in message
    with pytest.raises(ConfigError, match="is missing"):
        open_store(uri, "orders-enricher")


@pytest.mark.parametrize("uri", ["s3://bucket/samza", "gs://bucket", "dynamodb://samza-meta?region=eu-west-1",
                                 "abfs://container@account.dfs.core.windows.net/p", "file:///tmp/x", "rel/dir",
                                 "memory:"])
def test_well_formed_store_uris_pass_the_check(uri):
    check_store_uri(uri)


@pytest.mark.parametrize("uri", ["s3://", "dynamodb://?region=x"])
def test_kafka_options_refuse_it_at_load(uri):
    with pytest.raises(ConfigError, match="metadata.store"):
        KafkaSourceOptions.parse({"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "job.name": "j",
                                  "metadata.store": uri})


@pytest.mark.parametrize("uri", ["s3://", "dynamodb://?region=x"])
def test_kinesis_options_refuse_it_at_load(uri):
    with pytest.raises(ConfigError, match="metadata.store"):
        KinesisSourceOptions.parse({"streamName": "clicks", "region": "us-east-1", "job.name": "j",
                                    "metadata.store": uri})
