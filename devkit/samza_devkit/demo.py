"""``make demo``: the main example job, end to end, on this machine alone.

1. starts Apache Kafka on 127.0.0.1 (one KRaft node from jars fetched once from Maven Central, a temp data dir:
   ``samza_devkit.apache_kafka``; a few seconds, next to the half minute Spark and the job take);
2. produces a keyed stream of orders into a 2-partition topic;
3. runs a samza-kafka query on local Spark with the default fixed-task grouper;
4. expands the topic 2 -> 4 while the query runs: still 2 tasks, partitions {0, 2} and {1, 3};
5. writes an Oldest Startpoint for partition 1 mid-run: that partition is replayed once, and the
   startpoint is deleted after the batch that applied it commits;
6. prints what happened at each step, then checks every record arrived (and the replay exactly once).

Only the demo's own lines reach the terminal: Spark's JVM, its Python workers (librdkafka's log lines among them),
the broker and this package's log all write to standard error, which the demo sends to a file it names first.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from .waits import deadline_after

TOPIC = "orders"
KEYS = [f"customer-{i}" for i in range(20)]


def say(text: str) -> None:
    print(f"[demo] {text}", flush=True)


def wait_for(condition, timeout: float, what: str):
    deadline = deadline_after(timeout)
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise SystemExit(f"[demo] FAILED: timed out waiting for {what}")


def produce_round(bootstrap: str, round_no: int, per_key: int) -> int:
    from .kafka_helpers import produce

    records = [(k.encode(), f"{k}:order-{round_no}-{n}".encode()) for n in range(per_key) for k in KEYS]
    return len(produce(bootstrap, TOPIC, records))


def send_logs_to(path: Path) -> None:
    """Point this process's standard error (file descriptor 2, so the JVM and every child inherit it) at ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="samza-demo-"))
    log_file = work / "demo.log"
    say(f"logs of Spark, librdkafka, the broker and the sources go to {log_file}")
    send_logs_to(log_file)
    try:
        return run(work)
    except BaseException as exc:
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            raise
        logging.getLogger(__name__).exception("the demo failed")
        say(f"FAILED: {type(exc).__name__}: {exc}; the log is {log_file}")
        return 1


def run(work: Path) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("spark_samza_source").setLevel(logging.INFO)

    from spark_samza_source.core.model import SystemStreamPartition
    from spark_samza_source.core.startpoint import StartpointOldest
    from spark_samza_source.core.startpoint_manager import StartpointManager
    from spark_samza_source.metadata import open_store

    from .apache_kafka import ApacheKafkaBroker
    from .kafka_helpers import add_partitions, create_topic
    from .spark_fixtures import make_local_spark

    store_uri = f"file://{work}/metadata"
    job = "orders-enricher"
    lock = threading.Lock()
    batches: list[tuple[int, list]] = []

    with ApacheKafkaBroker() as broker:
        bootstrap = broker.bootstrap_servers
        say(f"1. Apache Kafka {broker.version} listening on {bootstrap} (its log: {broker.log_path})")
        create_topic(bootstrap, TOPIC, 2)
        produced = produce_round(bootstrap, 1, 25)
        say(f"2. produced {produced} keyed orders into '{TOPIC}' (2 partitions)")

        spark = make_local_spark("samza-kafka-demo")  # finds samza-kafka by itself: no register() to warn about

        def on_batch(df, batch_id):
            rows = df.select("task", "partition", "offset", "key").collect()
            with lock:
                batches.append((batch_id, rows))
            if rows:
                per_task: dict[str, dict[int, int]] = {}
                for r in rows:
                    per_task.setdefault(r.task, {}).setdefault(r.partition, 0)
                    per_task[r.task][r.partition] += 1
                summary = "; ".join(
                    f"{task}: " + ", ".join(f"p{p}={n}" for p, n in sorted(parts.items()))
                    for task, parts in sorted(per_task.items())
                )
                say(f"   batch {batch_id}: {len(rows)} records ({summary})")

        def total() -> int:
            with lock:
                return sum(len(rows) for _, rows in batches)

        query = (
            spark.readStream.format("samza-kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", TOPIC)
            .option("job.name", job)
            .option("metadata.store", store_uri)
            .option("startingOffsets", "earliest")
            .option("startpoint.pollInterval", "1s")
            .option("maxOffsetsPerTrigger", "200")
            # the demo produces after the growth with a new producer: no stale producer metadata to wait for
            .option("expansion.settleTime", "0")
            .load()
            .writeStream.foreachBatch(on_batch)
            .option("checkpointLocation", str(work / "checkpoint"))
            .trigger(processingTime="1 second")
            .start()
        )
        say("3. samza-kafka query started (grouper GroupByPartitionFixedTasks)")
        wait_for(lambda: total() >= produced, 180, "the first records")

        add_partitions(bootstrap, TOPIC, 4)
        say("4. expanded the topic to 4 partitions while the query runs")
        produced += produce_round(bootstrap, 2, 25)
        wait_for(lambda: total() >= produced, 180, "records after the expansion")

        startpoints = StartpointManager(open_store(store_uri, job))
        ssp = SystemStreamPartition("kafka", TOPIC, 1)
        replay = len([1 for _, rows in batches for r in rows if r.partition == 1])
        startpoints.write(ssp, StartpointOldest())
        say(f"5. wrote StartpointOldest for {ssp}: expect {replay} records of partition 1 again")
        wait_for(lambda: total() >= produced + replay, 120, "the startpoint replay")
        wait_for(lambda: startpoints.list() == [], 60, "the applied startpoint to be deleted")
        say("   startpoint applied, then deleted once its batch committed")
        query.stop()
        spark.stop()

    rows = [r for _, rows in batches for r in rows]
    tasks: dict[str, set[int]] = {}
    for r in rows:
        tasks.setdefault(r.task, set()).add(r.partition)
    say("6. summary")
    for task, parts in sorted(tasks.items()):
        say(f"   {task}: partitions {sorted(parts)}")
    seen = [(r.partition, r.offset) for r in rows]
    unique = set(seen)
    replayed = len(seen) - len(unique)
    ok = len(unique) == produced and replayed == replay and tasks == {"Partition 0": {0, 2}, "Partition 1": {1, 3}}
    say(f"   {len(unique)} distinct records of {produced} produced; {replayed} replayed by the startpoint")
    say("OK: fixed tasks across expansion, startpoint applied once" if ok else "FAILED: see the numbers above")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
