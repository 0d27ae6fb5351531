"""A harness for running real samza-kafka queries on the local SparkSession against the development broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_devkit.query_harness import QueryHarness, await_available_now, stop_active_queries


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


@pytest.fixture
def kq(spark, kafka_broker, tmp_path):
    harness = KafkaQueryHarness(spark, kafka_broker.bootstrap_servers, tmp_path)
    yield harness
    stop_active_queries(spark)


@pytest.fixture(params=["python", "native"])
def read_path(request) -> str:
    """Both executor read paths (kafka/reader.py, kafka/native_reader.py): a reader test runs against each.
    ``native`` fails (never skips) where the extension is not built: ``make setup`` builds it."""
    return request.param


@pytest.fixture
def new_reader_cache(read_path):
    """``new_reader_cache(capacity=2, factory=None)``: a private consumer cache holding ``read_path``'s consumers
    (confluent-kafka's or the native reader's), ``factory`` making them when given."""
    from spark_samza_source.kafka.consumer_cache import ConsumerCache

    def make(capacity: int = 2, factory=None) -> ConsumerCache:
        native = read_path == "native"
        if factory is None:
            return ConsumerCache.native(capacity) if native else ConsumerCache(capacity)
        return ConsumerCache(capacity, factory, is_native=native)

    return make
