"""Both sources work from a Spark Connect client: ``SparkSession.builder.remote("local[2]")``.

``remote("local[2]")`` starts a local Spark Connect server (the JVM, with this virtualenv as its Python) and
connects a Connect client to it, as a user trying Connect on a laptop would. The sources run on the server side:
Spark finds ``samza-kafka`` and ``samza-kinesis`` there through the installed package; the client only sends the
plan. Each query reads with ``Trigger.AvailableNow`` into a Parquet sink, and the client reads the Parquet back.

The pytest process already holds a classic SparkSession (and PySpark allows one kind per process), so the Connect
session runs in a fresh Python process: ``CLIENT`` below, which prints one ``RESULT`` JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.frames import assert_same_rows
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.waits import scaled

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
PARTITIONS, PER_PARTITION, SHARDS, KINESIS_RECORDS = 2, 30, 2, 40

CLIENT = textwrap.dedent('''
    import json, sys
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    args = json.loads(sys.argv[1])
    log4j = "-Dlog4j.configurationFile=file:" + args["log4j"]
    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", log4j)
             .getOrCreate())
    assert isinstance(spark, ConnectSession), type(spark)

    def run(name, fmt, options):
        out, chk = args["root"] + "/" + name, args["root"] + "/" + name + "-checkpoint"
        query = (spark.readStream.format(fmt).options(**options).load()
                 .writeStream.format("parquet").option("path", out).option("checkpointLocation", chk)
                 .trigger(availableNow=True).start())
        query.awaitTermination(args["timeout"])
        assert not query.isActive, name + " did not finish"
        return spark.read.parquet(out)

    kafka = run("kafka", "samza-kafka", {
        "kafka.bootstrap.servers": args["bootstrap"], "subscribe": args["topic"], "job.name": "connect-kafka",
        "metadata.store": "file://" + args["root"] + "/meta-kafka", "startingOffsets": "earliest"})
    kafka_rows = kafka.select("task", "partition", "offset", "value").collect()
    result = {"client": type(spark).__module__,
              "kafka": {"rows": len(kafka_rows),
                        "distinct": len({(r.partition, r.offset) for r in kafka_rows}),
                        "values": sorted(r.value.decode() for r in kafka_rows),
                        "tasks": sorted({(r.task, r.partition) for r in kafka_rows})}}
    if args.get("stream"):
        kinesis = run("kinesis", "samza-kinesis", {
            "streamName": args["stream"], "endpointUrl": args["endpoint"], "region": "us-east-1",
            "awsAccessKeyId": "testing", "awsSecretKey": "testing", "startingPosition": "TRIM_HORIZON",
            "maxFetchTimePerShard": "2s", "job.name": "connect-kinesis",
            "metadata.store": "file://" + args["root"] + "/meta-kinesis"})
        kinesis_rows = kinesis.select("shardId", "task", "data").collect()
        result["kinesis"] = {"rows": len(kinesis_rows),
                             "data": sorted(r.data.decode() for r in kinesis_rows),
                             "shards": len({r.shardId for r in kinesis_rows})}
    spark.stop()
    print("RESULT " + json.dumps(result), flush=True)
''')


@pytest.fixture(scope="module")
def connect_run(kafka_broker, moto_server, tmp_path_factory) -> Iterator[dict]:
    """One Connect client process reads a Kafka topic and a Kinesis stream (one server start for both)."""
    root = tmp_path_factory.mktemp("connect")
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("connect"), PARTITIONS)
    produce(bootstrap, topic, [(f"k{i}".encode(), f"kafka-{p}-{i}".encode(), None, p)
                               for p in range(PARTITIONS) for i in range(PER_PARTITION)])
    client = kh.kinesis_client(moto_server)
    stream = kh.create_stream(client, kh.unique_stream_name("connect"), SHARDS)
    kh.put_records(client, stream, [f"kinesis-{i}".encode() for i in range(KINESIS_RECORDS)])
    args = {"root": str(root), "bootstrap": bootstrap, "topic": topic, "stream": stream, "endpoint": moto_server,
            "log4j": str(REPO / "conf" / "log4j2.properties"), "timeout": scaled(240)}
    unset = {"PYSPARK_SUBMIT_ARGS", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED"}
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    try:
        proc = subprocess.run([sys.executable, "-c", CLIENT, json.dumps(args)], cwd=root, env=env,
                              capture_output=True, text=True, timeout=scaled(600))
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and len(lines) == 1, \
            f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-8000:]}"
        yield {**json.loads(lines[0][len("RESULT "):]), "args": args}  # the stream stays for a classic read
    finally:
        kh.delete_stream(client, stream)


def test_a_samza_kafka_query_with_a_parquet_sink_runs_from_a_spark_connect_client(connect_run):
    assert connect_run["client"] == "pyspark.sql.connect.session"
    kafka = connect_run["kafka"]
    assert kafka["rows"] == kafka["distinct"] == PARTITIONS * PER_PARTITION
    assert kafka["values"] == sorted(f"kafka-{p}-{i}" for p in range(PARTITIONS) for i in range(PER_PARTITION))
    assert kafka["tasks"] == [[f"Partition {p}", p] for p in range(PARTITIONS)]


def test_a_samza_kinesis_query_with_a_parquet_sink_runs_from_a_spark_connect_client(connect_run):
    kinesis = connect_run["kinesis"]
    assert kinesis["rows"] == KINESIS_RECORDS
    assert kinesis["data"] == sorted(f"kinesis-{i}" for i in range(KINESIS_RECORDS))
    assert kinesis["shards"] == SHARDS


def test_what_the_connect_client_read_is_what_a_classic_batch_read_gives(connect_run, spark):
    """Connect against classic: the rows each Connect query wrote are those a classic session's batch read of the
    same topic and stream gives (same columns, same tasks), compared whole."""
    args = connect_run["args"]
    kafka = spark.read.format("samza-kafka").options(**{
        "kafka.bootstrap.servers": args["bootstrap"], "subscribe": args["topic"]}).load()
    assert_same_rows(spark.read.parquet(args["root"] + "/kafka"), kafka, key=["partition", "offset"])
    kinesis = spark.read.format("samza-kinesis").options(**{
        "streamName": args["stream"], "endpointUrl": args["endpoint"], "region": "us-east-1",
        "awsAccessKeyId": "testing", "awsSecretKey": "testing"}).load()
    assert_same_rows(spark.read.parquet(args["root"] + "/kinesis"), kinesis, key=["shardId", "sequenceNumber"])
