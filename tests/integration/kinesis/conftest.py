"""A harness for real samza-kinesis queries on the local SparkSession against moto in server mode."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.metadata import open_store
from spark_samza_source.testing import kinesis_helpers as kh


class KinesisQueryHarness:
    def __init__(self, spark, endpoint: str, root: Path) -> None:
        self.spark = spark
        self.endpoint = endpoint
        self.root = root
        self.client = kh.kinesis_client(endpoint)
        self.job = f"job-{uuid.uuid4().hex[:8]}"
        self.store_uri = f"file://{root}/metadata"
        self.batches: dict[str, list[tuple[int, list]]] = {}
        self._lock = threading.Lock()

    def create_stream(self, shards: int, prefix: str = "s") -> str:
        return kh.create_stream(self.client, kh.unique_stream_name(prefix), shards)

    def options(self, stream: str, **extra: str) -> dict[str, str]:
        opts = {
            "streamName": stream,
            "endpointUrl": self.endpoint,
            "region": "us-east-1",
            "awsAccessKeyId": "testing",
            "awsSecretKey": "testing",
            "job.name": self.job,
            "metadata.store": self.store_uri,
            "startingPosition": "TRIM_HORIZON",
            "startpoint.pollInterval": "0",
            "maxFetchTimePerShard": "2s",
        }
        opts.update({k: str(v) for k, v in extra.items()})
        return opts

    def stream(self, stream: str, **extra: str):
        return self.spark.readStream.format("samza-kinesis").options(**self.options(stream, **extra)).load()

    def checkpoint(self, name: str) -> str:
        return str(self.root / "checkpoints" / name)

    def start_collecting(self, name: str, stream: str, trigger: dict | None = None, on_batch=None, **extra: str):
        self.batches.setdefault(name, [])

        def collect(df, batch_id):
            rows = df.collect()
            with self._lock:
                self.batches[name].append((batch_id, rows))
            if on_batch is not None:
                on_batch(batch_id, rows)

        writer = (
            self.stream(stream, **extra).writeStream.foreachBatch(collect)
            .option("checkpointLocation", self.checkpoint(name))
            .queryName(f"{name}_{uuid.uuid4().hex[:6]}")
            .trigger(**(trigger or {"processingTime": "500 milliseconds"}))
        )
        return writer.start()

    def run_available_now(self, name: str, stream: str, timeout: float = 240, **extra: str) -> list:
        before = len(self.collected(name))
        query = self.start_collecting(name, stream, trigger={"availableNow": True}, **extra)
        if not query.awaitTermination(timeout):
            query.stop()
            raise AssertionError(f"AvailableNow query {name} did not finish within {timeout}s")
        if query.exception() is not None:
            raise query.exception()
        return self.collected(name)[before:]

    def collected(self, name: str) -> list:
        with self._lock:
            return [row for _, rows in self.batches.get(name, []) for row in rows]

    def startpoints(self) -> StartpointManager:
        return StartpointManager(open_store(self.store_uri, self.job))

    @staticmethod
    def wait_for(condition, timeout: float = 120, interval: float = 0.25, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def ks(spark, moto_server, tmp_path):
    harness = KinesisQueryHarness(spark, moto_server, tmp_path)
    yield harness
    for query in spark.streams.active:
        try:
            query.stop()
        except Exception:  # noqa: BLE001 - best-effort cleanup of a failed test's queries
            pass
