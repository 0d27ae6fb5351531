"""A harness for real samza-kafka queries on the local SparkSession against a Kafka broker (the development broker
unless ``SAMZA_TEST_KAFKA_BOOTSTRAP`` names another); the ``kq`` fixture hands one out per test."""

from __future__ import annotations

from pathlib import Path

from samza_devkit.query_harness import QueryHarness, await_available_now


class KafkaQueryHarness(QueryHarness):
    """samza-kafka queries on ``bootstrap``, from the earliest offsets unless told otherwise."""

    def __init__(self, spark, bootstrap: str, root: Path) -> None:
        super().__init__(spark, root)
        self.bootstrap = bootstrap

    def options(self, **extra: str) -> dict[str, str]:
        # The tests' producers are made per call, after any growth: no stale metadata to wait for (a test that
        # has a stale producer sets expansion.settleTime itself).
        return self.job_options({"kafka.bootstrap.servers": self.bootstrap, "startingOffsets": "earliest",
                                 "expansion.settleTime": "0"}, extra)

    def stream(self, **extra: str):
        return self.spark.readStream.format("samza-kafka").options(**self.options(**extra)).load()

    def start_parquet(self, name: str, trigger: dict | None = None, **extra: str):
        return self.write_parquet(name, self.stream(**extra), trigger)

    def run_available_now_parquet(self, name: str, timeout: float = 180, **extra: str) -> None:
        await_available_now(self.start_parquet(name, trigger={"availableNow": True}, **extra), name, timeout)

    def sink_rows(self, name: str) -> list:
        path = Path(self.sink_path(name))
        if not path.exists() or not any(path.glob("*.parquet")):
            return []
        return self.spark.read.parquet(str(path)).collect()

    def start_collecting(self, name: str, trigger: dict | None = None, on_batch=None, **extra: str):
        """foreachBatch sink keeping (batch_id, rows) in memory, in the order batches ran."""
        return self.collect_batches(name, self.stream(**extra), trigger, on_batch)
