"""A samza-kinesis query configured only with the names of AWS's spark-sql-kinesis-connector (``kinesis.*``) reads
what the same query configured with ours reads, batch for batch (README "Migrating from aws-kinesis").

The per-shard limit is set below the backlog on purpose: if an alias were dropped on the way (read with its default
instead), the batches would differ even where the rows do not."""

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.kinesis_query_harness import KinesisQueryHarness
from samza_devkit.query_harness import await_available_now, stop_active_queries

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PER_SHARD = 250
LIMIT = 100  # records per shard per batch: three batches for each shard's backlog


def _put(client, stream):
    acks = []
    for shard in kh.list_shards(client, stream):
        key = shard["HashKeyRange"]["StartingHashKey"]
        acks += kh.put_records(client, stream, [(f"pk-{i % 7}", f"{shard['ShardId']}-{i}".encode(), key)
                                                for i in range(PER_SHARD)])
    return acks


def _run(harness, name, options):
    df = harness.spark.readStream.format("samza-kinesis").options(**options).load()
    query = harness.collect_batches(name, df, {"availableNow": True},
                                    columns=["shardId", "sequenceNumber", "subSequenceNumber", "data", "task"])
    await_available_now(query, name, 240)
    return [sorted((r.shardId, r.sequenceNumber, r.subSequenceNumber, bytes(r.data), r.task) for r in rows)
            for _, rows in harness.batches[name] if rows]


def test_kinesis_names_read_the_same_rows_as_ours(spark, kinesis_endpoint, moto_server, tmp_path):
    ours_h = KinesisQueryHarness(spark, kinesis_endpoint, tmp_path / "ours", dynamodb_endpoint=moto_server)
    aws_h = KinesisQueryHarness(spark, kinesis_endpoint, tmp_path / "aws", dynamodb_endpoint=moto_server)
    try:
        stream = ours_h.create_stream(2, "aliases")
        acks = _put(ours_h.client, stream)
        ours = _run(ours_h, "ours", ours_h.options(stream, maxRecordsPerShard=str(LIMIT)))
        aws = _run(aws_h, "aws", aws_h.job_options({
            "kinesis.streamName": stream,
            "kinesis.endpointUrl": kinesis_endpoint,
            "kinesis.region": "us-east-1",
            "kinesis.awsAccessKeyId": "testing",
            "kinesis.awsSecretKey": "testing",
            "kinesis.startingPosition": "EARLIEST",
            "kinesis.maxFetchRecordsPerShard": str(LIMIT),
            "kinesis.maxFetchTimePerShardSec": "2",
            "kinesis.consumerType": "GetRecords",
            "kinesis.failOnDataLoss": "true",
        }, {}))
    finally:
        stop_active_queries(spark)
    assert sorted(row[:3] for batch in ours for row in batch) == sorted((a.shard_id, a.sequence, 0) for a in acks)
    assert len(ours) == PER_SHARD // LIMIT + 1  # the limit held: 100 + 100 + 50 records of each shard
    assert aws == ours


def test_a_misspelt_option_fails_load_naming_the_option_meant(ks):
    with pytest.raises(Exception) as err:
        ks.stream("any-stream", maxRecordPerShard="10")
    assert "unknown option 'maxrecordpershard' for samza-kinesis" in str(err.value)
    assert "did you mean 'maxRecordsPerShard'" in str(err.value)


def test_enhanced_fan_out_without_a_consumer_name_fails_load_naming_the_option(ks):
    with pytest.raises(Exception) as err:
        ks.stream("any-stream", **{"kinesis.consumerType": "SubscribeToShard"})
    assert "option 'consumerName' is required with consumerType=SubscribeToShard" in str(err.value)
