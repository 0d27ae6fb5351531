"""``minPartitions`` on ``local[2]`` or a two-worker standalone cluster: a job created on 2 partitions, its topic
grown to 8, read with and without the split, the runs alternating.

    .venv/bin/python benchmarks/kafka_split.py                     # 2 x 2 runs of 2,000,000 records, ~5 minutes
    .venv/bin/python benchmarks/kafka_split.py --records 500000 --repeat 1
    .venv/bin/python benchmarks/kafka_split.py --cluster           # the devkit's cluster: 2 workers, 2 cores each

``--cluster`` (root: network namespaces) starts the devkit's Spark standalone cluster (``samza_devkit.spark_cluster``:
each worker on a host of its own, executors of 2 cores each) with the broker on the cluster's bridge, and runs
this script as the driver in the root namespace; executors then read over the bridge, as on a real cluster.

One Apache Kafka broker (the devkit's), one ``local[2]`` session. A seed query creates the job on 2 partitions (its
stored job model has 2 tasks); the topic then grows to 8 and ``--records`` x 100 B are written round robin over
the 8. Every measured run starts a new checkpoint from a copy of the seed's store (same ``job.name``: the stored
job model, so the same 2 tasks; its job lease removed, so the runs do not wait for one another), reads everything
with ``Trigger.AvailableNow`` in batches of ``--rows-per-batch`` into a ``noop`` sink, and prints its steady
records per second (``kafka_source.steady_state``) and the Spark tasks of its batches (the stage's task count per
batch, from the status tracker). Without the split every batch is 2 Spark tasks; with ``minPartitions=8``, up to 8.
Two cores cannot run 8 tasks at once: what the split buys on a cluster is not what this shows (see the cluster
test), but it shows what it costs where there is no core to spare.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import uuid
from pathlib import Path

from bench_report import load, progress_dicts, say
from kafka_source import produce, steady_state
from latency import local_session

PARTITIONS_AT_CREATION, PARTITIONS = 2, 8
VALUE_SIZE = 100
JOB = "bench-split"


class TaskCounter:
    """The Spark task count of every stage that ran while it counted (the status tracker, polled)."""

    def __init__(self, spark) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.stages: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            for stage_id in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(stage_id)
                if info is not None:
                    self.stages[stage_id] = info.numTasks

    def close(self) -> list[int]:
        self._stop.set()
        self._thread.join()
        return [self.stages[s] for s in sorted(self.stages)]


def seed_job(spark, bootstrap: str, topic: str, store: Path, work: Path) -> None:
    """The job, created while its topic has 2 partitions: one AvailableNow batch of one record per partition."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS_AT_CREATION):
        producer.produce(topic, value=b"seed", partition=p)
    producer.flush(30)
    query = (spark.readStream.format("samza-kafka").options(**source_options(bootstrap, topic, store)).load()
             .writeStream.format("noop").option("checkpointLocation", str(work / "seed-ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(600)


def source_options(bootstrap: str, topic: str, store: Path, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": JOB,
            "metadata.store": f"file://{store}", "startingOffsets": "earliest", "expansion.settleTime": "0", **extra}


def run(spark, bootstrap: str, topic: str, seed: Path, work: Path, records: int, per_batch: int,
        split: bool) -> dict:
    from spark_samza_source.metadata import open_store
    from spark_samza_source.options.namespaces import LEASE, LEASE_KEY

    store = work / f"store-{uuid.uuid4().hex[:8]}"
    shutil.copytree(seed, store)
    open_store(f"file://{store}", JOB).delete(LEASE, LEASE_KEY)  # the seed's lease: this run is another query
    extra = {"maxOffsetsPerTrigger": str(per_batch)} | ({"minPartitions": str(PARTITIONS)} if split else {})
    counter = TaskCounter(spark)
    query = (spark.readStream.format("samza-kafka").options(**source_options(bootstrap, topic, store, **extra))
             .load().writeStream.format("noop").option("checkpointLocation", str(work / f"ckpt-{uuid.uuid4().hex}"))
             .trigger(availableNow=True).start())
    if not query.awaitTermination(1800) or query.exception() is not None:
        query.stop()
        raise RuntimeError(f"the run did not finish: {query.exception()}")
    tasks = counter.close()
    res = steady_state(progress_dicts(query), records + PARTITIONS_AT_CREATION)
    res["tasks"] = tasks
    label = f"minPartitions={PARTITIONS}" if split else "one per task"
    say(f"    {label:<16} {res['rate']:>10,.0f} rec/s steady, Spark tasks per stage {sorted(set(tasks))} "
        f"(max {max(tasks, default=0)}); {load()}")
    return res


@contextlib.contextmanager
def cluster_session(root: Path):
    """(session, broker bootstrap) on the devkit's two-worker standalone cluster, the broker on its bridge."""
    from samza_devkit.apache_kafka import ApacheKafkaBroker
    from samza_devkit.spark_cluster import BROKER, SparkCluster
    from samza_devkit.spark_fixtures import make_local_spark
    from spark_samza_source import register

    cluster = SparkCluster.start(root, workers=2)
    try:
        if cluster.fallback:
            say(f"  no network namespaces ({cluster.fallback}): workers on loopback")
        address = cluster.address(None)
        os.environ["SPARK_LOCAL_IP"] = address
        os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        conf = {"spark.driver.host": address, "spark.driver.bindAddress": address, "spark.executor.cores": "2",
                "spark.cores.max": "4", "spark.executor.memory": "1g", "spark.locality.wait": "0s",
                "spark.ui.showConsoleProgress": "false",
                # both executors registered before the first batch, so each run has the same four cores
                "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}
        spark = make_local_spark("samza-kafka-split-cluster", conf, master=cluster.master_url)
        register(spark)
        with ApacheKafkaBroker(host=cluster.service_address(BROKER), heap_mb=1024) as broker:
            try:
                yield spark, broker.bootstrap_servers
            finally:
                spark.stop()
    finally:
        cluster.close()


@contextlib.contextmanager
def local_session_and_broker():
    from samza_devkit.apache_kafka import ApacheKafkaBroker

    spark = local_session("samza-kafka-split")
    try:
        with ApacheKafkaBroker(heap_mb=1024) as broker:
            yield spark, broker.bootstrap_servers
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rows-per-batch", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cluster", action="store_true", help="the devkit's two-worker standalone cluster")
    args = parser.parse_args(argv)

    from samza_devkit.kafka_helpers import add_partitions, create_topic, unique_topic

    where = "a two-worker standalone cluster (2 cores each)" if args.cluster else "local[2]"
    say(f"minPartitions on {where}: job created on {PARTITIONS_AT_CREATION} partitions, topic grown to "
        f"{PARTITIONS}, {args.records:,} x {VALUE_SIZE} B, {args.rows_per_batch:,} rows per batch; {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-split-") as tmp:
        work = Path(tmp)
        session = cluster_session(work / "cluster") if args.cluster else local_session_and_broker()
        with session as (spark, bootstrap):
            topic = create_topic(bootstrap, unique_topic("split"), PARTITIONS_AT_CREATION)
            seed = work / "seed-store"
            seed_job(spark, bootstrap, topic, seed, work)
            add_partitions(bootstrap, topic, PARTITIONS)
            produce(bootstrap, topic, PARTITIONS, args.records, VALUE_SIZE)
            rates: dict[bool, list[float]] = {False: [], True: []}
            for i in range(args.repeat):
                for split in ((False, True) if i % 2 == 0 else (True, False)):
                    res = run(spark, bootstrap, topic, seed, work, args.records, args.rows_per_batch, split)
                    rates[split].append(res["rate"])
            without, with_split = statistics.median(rates[False]), statistics.median(rates[True])
            say(f"  median: one per task {without:,.0f} rec/s, minPartitions={PARTITIONS} {with_split:,.0f} rec/s "
                f"(ratio {with_split / without:.2f}); {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
