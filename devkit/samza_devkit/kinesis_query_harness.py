"""A harness for real samza-kinesis queries on the local SparkSession against a Kinesis emulator (moto,
kinesalite or kinesis-mock; DynamoDB on moto); the ``ks`` fixture hands one out per test."""

from __future__ import annotations

from pathlib import Path

from samza_devkit import kinesis_helpers as kh
from samza_devkit.query_harness import QueryHarness, await_available_now


class KinesisQueryHarness(QueryHarness):
    """samza-kinesis queries on the Kinesis at ``endpoint`` (moto, kinesalite or kinesis-mock; DynamoDB on moto at
    ``dynamodb_endpoint``), from TRIM_HORIZON unless told otherwise."""

    def __init__(self, spark, endpoint: str, root: Path, dynamodb_endpoint: str | None = None) -> None:
        super().__init__(spark, root)
        self.endpoint = endpoint
        self.dynamodb_endpoint = dynamodb_endpoint or endpoint
        self.client = kh.kinesis_client(endpoint)

    def create_stream(self, shards: int, prefix: str = "s") -> str:
        return kh.create_stream(self.client, kh.unique_stream_name(prefix), shards)

    def options(self, stream: str, **extra: str) -> dict[str, str]:
        return self.job_options({
            "streamName": stream,
            "endpointUrl": self.endpoint,
            "dynamodbEndpointUrl": self.dynamodb_endpoint,
            "region": "us-east-1",
            "awsAccessKeyId": "testing",
            "awsSecretKey": "testing",
            "startingPosition": "TRIM_HORIZON",
            "maxFetchTimePerShard": "2s",
        }, extra)

    def stream(self, stream: str, **extra: str):
        return self.spark.readStream.format("samza-kinesis").options(**self.options(stream, **extra)).load()

    def start_collecting(self, name: str, stream: str, trigger: dict | None = None, on_batch=None, **extra: str):
        return self.collect_batches(name, self.stream(stream, **extra), trigger, on_batch)

    def run_available_now_parquet(self, name: str, stream: str, timeout: float = 240, **extra: str) -> None:
        """An AvailableNow run of ``name`` into its Parquet sink (``sink_path(name)``, exactly once through Spark's
        ``_spark_metadata`` log), from its checkpoint."""
        query = self.write_parquet(name, self.stream(stream, **extra), trigger={"availableNow": True})
        await_available_now(query, name, timeout)

    def sink_keys(self, name: str) -> list[tuple[str, str, int]]:
        """(shardId, sequenceNumber, subSequenceNumber) of every row in ``name``'s Parquet sink, sorted; a
        duplicate stays in the list twice."""
        rows = (self.spark.read.parquet(self.sink_path(name))
                .select("shardId", "sequenceNumber", "subSequenceNumber").collect())
        return sorted((r.shardId, r.sequenceNumber, r.subSequenceNumber) for r in rows)

    def run_available_now(self, name: str, stream: str, timeout: float = 240, **extra: str) -> list:
        """The rows an AvailableNow run of ``name`` collected (earlier runs' rows left out)."""
        before = len(self.collected(name))
        await_available_now(self.start_collecting(name, stream, trigger={"availableNow": True}, **extra),
                            name, timeout)
        return self.collected(name)[before:]
