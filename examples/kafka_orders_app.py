"""A samza-kafka application to run with ``spark-submit``: reads what a topic holds now, prints a summary.

There is no ``register()`` call and no import of ``spark_samza_source``: Spark finds ``samza-kafka`` by
itself because the wheel installs the top-level module ``pyspark_samza_kafka`` (with ``DefaultSource``) into
the driver's Python environment. Without it the query fails with ``[DATA_SOURCE_NOT_FOUND]``.

Ship the Python side as a packed environment (``make package``; docs/deployment.md, "Deploying with spark-submit")::

    mkdir environment && tar -xzf dist/spark-samza-source-env.tar.gz -C environment  # client mode: on the gateway
    export PYSPARK_PYTHON=./environment/bin/python       # and leave PYSPARK_DRIVER_PYTHON unset
    spark-submit --master yarn --archives dist/spark-samza-source-env.tar.gz#environment \\
        examples/kafka_orders_app.py --bootstrap broker1:9092 --topic orders --job orders-report \\
        --metadata-store s3://my-bucket/samza --checkpoint s3://my-bucket/checkpoints/orders-report

or run it with the ``spark-submit`` of a virtualenv where the wheel is pip-installed with its ``spark`` extra
(``make wheel``, then ``pip install "$(ls dist/spark_samza_source-*.whl)[spark]"`` puts PySpark and ``spark-submit``
there too; without ``[spark]`` PySpark is not installed).

Output: one line ``RESULT {json}`` with the rows read, per task the partitions and row count, and the number
of non-empty micro-batches (deterministic for a given topic content, checkpoint and ``--max-per-trigger``);
one line ``PYTHON {json}`` with the interpreters the driver and a Python worker ran and where each finds
``pyspark_samza_kafka`` (to see which environment was used).
"""

from __future__ import annotations

import argparse
import json
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bootstrap", required=True, help="kafka.bootstrap.servers")
    parser.add_argument("--topic", required=True, help="the topic to read (subscribe)")
    parser.add_argument("--job", required=True, help="job.name (names startpoints and the job model)")
    parser.add_argument("--metadata-store", required=True, help="metadata.store URI, e.g. file:///tmp/samza")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpointLocation")
    parser.add_argument("--max-per-trigger", type=int, default=None, help="maxOffsetsPerTrigger (default: none)")
    parser.add_argument("--read-path", choices=("auto", "native", "python"), default="auto",
                        help="readPath: 'native' fails the tasks where the wheel has no native reader for the "
                             "executors' platform (default: auto, the native reader where it can run)")
    parser.add_argument("--starting-offsets", default="earliest", help="startingOffsets for a new checkpoint")
    return parser.parse_args(argv)


def where_am_i() -> dict:
    """Diagnostics only: this interpreter and where it would import the auto-registration shim from."""
    from importlib.util import find_spec

    spec = find_spec("pyspark_samza_kafka")
    return {"python": sys.executable, "pyspark_samza_kafka": spec.origin if spec else None}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from pyspark.sql import SparkSession

    # Master, Python executables and archives come from spark-submit; nothing here is cluster-specific.
    spark = SparkSession.builder.appName(f"samza-kafka-orders-{args.job}").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

    per_batch: list[dict] = []

    def on_batch(df, batch_id: int) -> None:
        # Runs on the driver once per micro-batch; the aggregation itself runs in Spark's Python workers too
        # (the source's read() does), so this proves the workers can import the package.
        rows = df.groupBy("task", "partition").count().collect()
        if rows:
            per_batch.append({"batch": batch_id, "counts": [(r["task"], r["partition"], r["count"]) for r in rows]})

    reader = (
        spark.readStream.format("samza-kafka")  # no register(): found through pyspark_samza_kafka.DefaultSource
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("job.name", args.job)
        .option("metadata.store", args.metadata_store)
        .option("startingOffsets", args.starting_offsets)
        .option("readPath", args.read_path)
    )
    if args.max_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_per_trigger))
    query = (
        reader.load()
        .writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)  # read what the topic holds now, in batches, then stop
        .start()
    )
    query.awaitTermination()

    tasks: dict[str, dict] = {}
    for batch in per_batch:
        for task, partition, count in batch["counts"]:
            entry = tasks.setdefault(task, {"partitions": set(), "rows": 0})
            entry["partitions"].add(partition)
            entry["rows"] += count
    result = {
        "topic": args.topic,
        "rows": sum(t["rows"] for t in tasks.values()),
        "batches": len(per_batch),
        "tasks": {name: {"partitions": sorted(t["partitions"]), "rows": t["rows"]}
                  for name, t in sorted(tasks.items())},
    }
    print("PYTHON " + json.dumps({"driver": where_am_i(), "worker": spark.sparkContext.parallelize([0], 1)
                                  .map(lambda _: where_am_i()).collect()[0]}, sort_keys=True), flush=True)
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
