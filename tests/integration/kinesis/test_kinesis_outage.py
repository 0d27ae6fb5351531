"""An AWS endpoint that does not answer, through a real TCP endpoint in front of moto (``FaultyEndpoint``):
samza-kinesis retries for up to ``endpoint.retryTimeout``, then fails naming the endpoint. Attempts are counted
as connections, not timed."""

from __future__ import annotations

import time

import pytest

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.kinesis.client import AwsClientSettings, kinesis_client
from spark_samza_source.kinesis.driver.admin import KinesisAdmin
from spark_samza_source.kinesis.errors import KinesisSourceError
from spark_samza_source.kinesis.executor.shard_reads import read_shard
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.positions import ShardPosition

SECRET = "outage-secret-key-1234"
RESETS = 5


def admin_for(endpoint: str, retry_timeout: str) -> KinesisAdmin:
    options = KinesisSourceOptions.parse({
        "streamName": "any", "endpointUrl": endpoint, "region": "us-east-1", "awsAccessKeyId": "outage-key-id",
        "awsSecretKey": SECRET, "job.name": "outage", "metadata.store": "memory:",
        "endpoint.retryTimeout": retry_timeout,
    })
    settings = AwsClientSettings.from_settings(options.client_settings())
    return KinesisAdmin(kinesis_client(settings), settings=settings)


def test_an_endpoint_resetting_connections_for_a_while_is_ridden_out(kinesis, make_stream, moto_server):
    stream = make_stream(2)
    kh.put_records(kinesis, stream, [b"a", b"b", b"c"], explicit_hash_key=0)
    # Kinesis clients make one attempt per call (botocore's retries are off), so every reset is one of our retries:
    # 5 resets in a row are 5 backed-off retries (0.2 s doubling), well within the retry timeout
    with kh.FaultyEndpoint(moto_server, drop_first=RESETS) as faulty:
        admin = admin_for(faulty.url, "60s")
        assert [s.shard_id for s in admin.list_shards(stream)] == ["shardId-000000000000", "shardId-000000000001"]
        assert faulty.accepted >= RESETS + 1
    with kh.FaultyEndpoint(moto_server, drop_first=RESETS) as faulty:  # the executors' reader, through its iterator
        admin = admin_for(faulty.url, "60s")
        result = read_shard(admin.client, stream, "shardId-000000000000", ShardPosition.trim_horizon(),
                            task="Task-0", max_fetch_time_ms=30_000)
        assert result.table().column("data").to_pylist() == [b"a", b"b", b"c"]
        assert faulty.accepted >= RESETS + 1


def test_an_endpoint_that_never_answers_fails_after_the_retry_timeout_naming_it():
    with kh.FaultyEndpoint(None, hang=True) as faulty:
        admin = admin_for(faulty.url, "3s")
        began = time.monotonic()
        with pytest.raises(KinesisSourceError) as err:
            admin.list_shards("clicks")
        took = time.monotonic() - began
    text = str(err.value)
    assert f"endpoint {faulty.url}" in text and "ListShards of stream 'clicks'" in text
    assert "option 'endpoint.retryTimeout' is 3 s" in text
    assert SECRET not in text and "outage-key-id" not in text
    assert faulty.accepted >= 2  # tried again within the timeout, not once
    # Generous on purpose (a loaded 2-core machine): the bound is the 3 s retry timeout plus one read timeout of at
    # most 3 s; stacked botocore retries made this 192 s before.
    assert took < 60


def test_an_endpoint_refusing_connections_fails_after_the_retry_timeout_naming_it():
    with kh.FaultyEndpoint(None) as faulty:  # resets every connection: nothing ever answers
        admin = admin_for(faulty.url, "2s")
        with pytest.raises(KinesisSourceError) as err:
            admin.list_shards("clicks")
    text = str(err.value)
    assert f"endpoint {faulty.url}" in text and "no answer from the Kinesis endpoint" in text
    assert "option 'endpoint.retryTimeout' is 2 s" in text and SECRET not in text
    assert faulty.accepted >= 3  # retried with backoff for the whole timeout, not given up at the first refusal
