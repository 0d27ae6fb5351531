"""The Spark driver of the soak (``benchmarks/soak.py``): BENCHMARK INFRASTRUCTURE, run in a subprocess.

``soak.py`` starts this script in a process group of its own and SIGKILLs the whole group (Python driver, JVM,
Python workers) every few minutes, then starts it again from the same checkpoints. It runs two queries on one
local SparkSession, each writing Parquet through Spark's file sink (exactly once, through ``_spark_metadata``):

* ``samza-kafka`` on the keyed topic -> ``<work>/sink/kafka`` (checkpoint ``<work>/checkpoints/kafka``);
* ``samza-kinesis`` on the stream -> ``<work>/sink/kinesis`` (checkpoint ``<work>/checkpoints/kinesis``).

The sink keeps only what the checks need (Kafka: key, value, partition, offset, task; Kinesis: partitionKey,
data, shardId, sequenceNumber, approximateArrivalTimestamp, task). The file sink log is never compacted and Spark
keeps every offset-log entry (``compactInterval`` / ``minBatchesToRetain`` set very high), so the checker can map
every Parquet file to its micro-batch and read the startpoints each batch applied.

``--trigger processing:<ms>`` runs until killed; ``--trigger available-now`` runs both queries to the end of what
is there and exits 0 (1 if a query failed). Progress goes to stdout as JSON lines (``started``, ``progress``,
``done``, ``failed``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, "t": round(time.time(), 3), **fields}, sort_keys=True), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, help="soak work directory (checkpoints/, sink/ below it)")
    parser.add_argument("--store", required=True, help="metadata store URI shared by both jobs")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--kafka-job", required=True)
    parser.add_argument("--endpoint", required=True, help="moto (Kinesis) endpoint URL")
    parser.add_argument("--stream", required=True)
    parser.add_argument("--kinesis-job", required=True)
    parser.add_argument("--trigger", default="processing:2000")
    parser.add_argument("--max-offsets", type=int, default=3000, help="samza-kafka maxOffsetsPerTrigger")
    parser.add_argument("--max-records-per-shard", type=int, default=2000, help="samza-kinesis maxRecordsPerShard")
    parser.add_argument("--poll", default="2s", help="startpoint.pollInterval of both queries")
    parser.add_argument("--timeout", type=float, default=3600.0, help="give up after this many seconds (exit 2)")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import spark_samza_source
    from samza_devkit.spark_fixtures import make_local_spark
    from spark_samza_source import register

    spark = make_local_spark("samza-soak-driver", {
        "spark.driver.memory": "1g",
        "spark.ui.showConsoleProgress": "false",
        # the checker maps each Parquet file to its batch through _spark_metadata/<batch>: never compact it
        "spark.sql.streaming.fileSink.log.compactInterval": "100000000",
        # ... and reads the startpoints every batch applied from offsets/<batch>: keep the whole offset log
        "spark.sql.streaming.minBatchesToRetain": "100000000",
    })
    register(spark)

    kafka = (
        spark.readStream.format("samza-kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("job.name", args.kafka_job)
        .option("metadata.store", args.store)
        .option("startingOffsets", "earliest")
        .option("startpoint.pollInterval", args.poll)
        .option("maxOffsetsPerTrigger", str(args.max_offsets))
        # the soak's producer switches to the new partition count at the very moment of the growth
        .option("expansion.settleTime", "0")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "partition", "offset", "task")
    )
    kinesis = (
        spark.readStream.format("samza-kinesis")
        .option("streamName", args.stream)
        .option("endpointUrl", args.endpoint)
        .option("region", "us-east-1")
        .option("awsAccessKeyId", "testing")
        .option("awsSecretKey", "testing")
        .option("job.name", args.kinesis_job)
        .option("metadata.store", args.store)
        .option("startingPosition", "TRIM_HORIZON")
        .option("startpoint.pollInterval", args.poll)
        .option("maxRecordsPerShard", str(args.max_records_per_shard))
        .option("maxFetchTimePerShard", "2s")
        .load()
        .selectExpr("partitionKey", "CAST(data AS STRING) AS data", "shardId", "sequenceNumber",
                    "approximateArrivalTimestamp", "task")
    )

    queries = {}
    for name, df in (("kafka", kafka), ("kinesis", kinesis)):
        writer = (df.writeStream.format("parquet")
                  .option("path", os.path.join(args.work, "sink", name))
                  .option("checkpointLocation", os.path.join(args.work, "checkpoints", name))
                  .queryName(f"soak_{name}"))
        if args.trigger == "available-now":
            writer = writer.trigger(availableNow=True)
        elif args.trigger.startswith("processing:"):
            writer = writer.trigger(processingTime=f"{int(args.trigger.split(':', 1)[1])} milliseconds")
        else:
            raise SystemExit(f"--trigger {args.trigger!r}: use available-now or processing:<ms>")
        queries[name] = writer.start()
        emit("started", query=name, id=str(queries[name].id), package=os.path.dirname(spark_samza_source.__file__))

    deadline = time.monotonic() + args.timeout
    last: dict[str, object] = {}
    running = dict(queries)
    failed = False
    while running and time.monotonic() < deadline:
        for name, query in list(running.items()):
            try:
                finished = query.awaitTermination(0.5)
            except Exception:  # noqa: BLE001 - a failed query raises here; reported from query.exception()
                finished = True
            progress = query.lastProgress
            if progress is not None and progress.get("batchId") != last.get(name):
                last[name] = progress.get("batchId")
                emit("progress", query=name, batchId=last[name], rows=progress.get("numInputRows"),
                     ms=progress.get("durationMs", {}).get("triggerExecution"))
            if finished:
                del running[name]
                error = query.exception()
                if error is not None:
                    failed = True
                    emit("failed", query=name, error=str(error)[:6000])
                else:
                    emit("done", query=name)
        if failed and args.trigger != "available-now":
            break  # a continuous run ends at the first failed query: soak.py records it and restarts the driver
    if running and not failed:
        emit("timeout", queries=sorted(running))
    for query in running.values():
        query.stop()
    if running and not failed:
        spark.stop()
        return 2
    spark.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
