"""A harness for running real samza-kafka queries on the local SparkSession against the development broker."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.metadata import open_store


class KafkaQueryHarness:
    def __init__(self, spark, bootstrap: str, root: Path) -> None:
        self.spark = spark
        self.bootstrap = bootstrap
        self.root = root
        self.job = f"job-{uuid.uuid4().hex[:8]}"
        self.store_uri = f"file://{root}/metadata"
        self.batches: dict[str, list[tuple[int, list]]] = {}
        self._lock = threading.Lock()

    def options(self, **extra: str) -> dict[str, str]:
        opts = {
            "kafka.bootstrap.servers": self.bootstrap,
            "job.name": self.job,
            "metadata.store": self.store_uri,
            "startingOffsets": "earliest",
            "startpoint.pollInterval": "0",
        }
        opts.update({k: str(v) for k, v in extra.items()})
        return opts

    def stream(self, **extra: str):
        return self.spark.readStream.format("samza-kafka").options(**self.options(**extra)).load()

    def checkpoint(self, name: str) -> str:
        return str(self.root / "checkpoints" / name)

    def sink_path(self, name: str) -> str:
        return str(self.root / "sink" / name)

    def start_parquet(self, name: str, trigger: dict | None = None, **extra: str):
        writer = (
            self.stream(**extra).writeStream.format("parquet")
            .option("path", self.sink_path(name))
            .option("checkpointLocation", self.checkpoint(name))
            .queryName(f"{name}_{uuid.uuid4().hex[:6]}")
        )
        writer = writer.trigger(**(trigger or {"processingTime": "500 milliseconds"}))
        return writer.start()

    def run_available_now_parquet(self, name: str, timeout: float = 180, **extra: str) -> None:
        query = self.start_parquet(name, trigger={"availableNow": True}, **extra)
        finished = query.awaitTermination(timeout)
        if not finished:
            query.stop()
            raise AssertionError(f"AvailableNow query {name} did not finish within {timeout}s")
        if query.exception() is not None:
            raise query.exception()

    def sink_rows(self, name: str) -> list:
        path = Path(self.sink_path(name))
        if not path.exists() or not any(path.glob("*.parquet")):
            return []
        return self.spark.read.parquet(str(path)).collect()

    def start_collecting(self, name: str, trigger: dict | None = None, on_batch=None, **extra: str):
        """foreachBatch sink keeping (batch_id, rows) in memory, in the order batches ran."""
        self.batches.setdefault(name, [])

        def collect(df, batch_id):
            rows = df.collect()
            with self._lock:
                self.batches[name].append((batch_id, rows))
            if on_batch is not None:
                on_batch(batch_id, rows)

        writer = (
            self.stream(**extra).writeStream.foreachBatch(collect)
            .option("checkpointLocation", self.checkpoint(name))
            .queryName(f"{name}_{uuid.uuid4().hex[:6]}")
        )
        writer = writer.trigger(**(trigger or {"processingTime": "500 milliseconds"}))
        return writer.start()

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
def kq(spark, kafka_broker, tmp_path):
    harness = KafkaQueryHarness(spark, kafka_broker.bootstrap_servers, tmp_path)
    yield harness
    for query in spark.streams.active:
        try:
            query.stop()
        except Exception:  # noqa: BLE001 - best-effort cleanup of a failed test's queries
            pass
