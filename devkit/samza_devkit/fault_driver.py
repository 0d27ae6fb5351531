"""A standalone Spark driver for fault-injection tests: TEST INFRASTRUCTURE ONLY.

A test runs it in a subprocess of its own process group, so that it can kill the whole driver -- the Python
process, its JVM and every Python worker -- with SIGKILL at a chosen moment, exactly like a machine dying, and then
run it again from the same checkpoint::

    python -m samza_devkit.fault_driver --bootstrap HOST:PORT --topic orders --job orders-etl \\
        --store file:///tmp/meta --checkpoint /tmp/ck --sink /tmp/sink --markers /tmp/inflight \\
        [--startpoint 0:specific:100] [--starting-offsets earliest] [--max-offsets 150] [--slow-ms 2000] \\
        [--slow-host w0] [--fail-on-data-loss false] [--trigger available-now | --trigger processing:500] \\
        [--master spark://HOST:PORT --conf KEY=VALUE ...] [--start-file PATH] [--stop-file PATH]

With ``--kinesis-endpoint URL --stream NAME`` (instead of ``--bootstrap`` and ``--topic``) it reads a Kinesis stream
with samza-kinesis from TRIM_HORIZON (``--max-offsets`` is then ``maxRecordsPerShard``; DynamoDB and the
credentials are the emulator's).

It runs a samza-kafka (or samza-kinesis) query that writes Parquet files (Spark's file sink, exactly once through its
``_spark_metadata`` log). Between the source and the sink sits a deliberately slow filter (a Python UDF keeping
every row): the first row of each task attempt creates a file in ``--markers`` (the test's sign that a batch is in
flight) and sleeps ``--slow-ms`` (with ``--slow-host``, only on that cluster host: a straggler).

``--startpoint PARTITION:TYPE[:VALUE]`` writes a Startpoint for that partition of the topic (SSP-only key) into the
metadata store *before* the query starts (TYPE: ``specific`` with an offset, ``oldest``, ``upcoming``, ``timestamp``
with epoch ms).

``python -m samza_devkit.fault_driver startpoint-writer ...`` is the other process of the startpoint
concurrency test: it writes and deletes startpoints in a loop and logs each step (see :func:`startpoint_writer`).

Progress goes to stdout as JSON lines: ``{"event": "startpoint", "key": ..., "creationTimestamp": ...}``,
``{"event": "started", "id": ...}``, ``{"event": "progress", "batchId": ..., "rows": ...}`` and finally
``{"event": "done"}`` (exit 0) or ``{"event": "failed", "error": ...}`` (exit 1). With a processing-time trigger it
runs until killed, until ``--timeout`` seconds have passed (exit 2), or until ``--stop-file`` exists (the query is
stopped: ``{"event": "stopped"}``, exit 0). ``--master`` runs the driver of a cluster (``samza_devkit.spark_cluster``)
instead of ``local[2,4]``, with ``--conf`` settings. ``--start-file``: the driver starts its JVM (and a cluster
driver its executors), emits ``{"event": "ready"}`` and starts the query only once that file exists, so a test can
have a driver warm before the moment its query must start.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from functools import partial

__all__ = ["main", "slow_stage", "startpoint_writer"]


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, "at": round(time.time(), 3), **fields}, sort_keys=True), flush=True)


_IN_FLIGHT: set[tuple[int, int, int]] = set()


def slow_stage(markers: str, slow_ms: int, slow_host: str | None, _value) -> bool:
    """A row filter keeping every row; the first row of each task attempt marks the task as in flight and sleeps
    (only on ``slow_host`` when one is named: a straggling machine)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    key = (ctx.stageId(), ctx.partitionId(), ctx.attemptNumber()) if ctx is not None else (0, 0, 0)
    if key not in _IN_FLIGHT:
        _IN_FLIGHT.add(key)
        with open(os.path.join(markers, f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"), "w") as f:
            # the host: on a cluster (samza_devkit.spark_cluster) each worker's processes carry their host's name
            f.write(json.dumps({"task": list(key), "host": os.environ.get("SAMZA_DEVKIT_HOST")}))
        if slow_host is None or os.environ.get("SAMZA_DEVKIT_HOST") == slow_host:
            time.sleep(slow_ms / 1000)
    return True


def parse_startpoint(text: str):
    from spark_samza_source.core.startpoint import (
        StartpointOldest,
        StartpointSpecific,
        StartpointTimestamp,
        StartpointUpcoming,
    )

    partition, _, rest = text.partition(":")
    kind, _, value = rest.partition(":")
    kind = kind.lower()
    if kind == "specific":
        return int(partition), StartpointSpecific(value)
    if kind == "oldest":
        return int(partition), StartpointOldest()
    if kind == "upcoming":
        return int(partition), StartpointUpcoming()
    if kind == "timestamp":
        return int(partition), StartpointTimestamp(int(value))
    raise SystemExit(f"--startpoint {text!r}: expected PARTITION:specific:OFFSET, PARTITION:oldest, ...")


def startpoint_writer(argv: list[str]) -> int:
    """``fault_driver startpoint-writer``: write and delete startpoints of one SSP in a tight loop, logging each step.

    Each round writes a new startpoint (``StartpointOldest`` or ``StartpointSpecific`` at a random offset below
    ``--max-offset``; under the SSP-only key or the SSP + ``--task`` key, at random; creation timestamps strictly
    increasing), waits a random 10-200 ms (a ``--long-wait-share`` of rounds: 0.8-2.5 s), then either deletes
    it -- ``delete_if_equal`` on both keys, so only its own value -- or looks where it is now. JSON lines to
    ``--log``::

        {"op": "write", "ts": <creationTimestamp>, "key": "ssp" | "task", "value": {...}, "at": <epoch s>}
        {"op": "delete", "ts": ..., "ssp": <deleted from the SSP key?>, "task": <... from the task key?>, "at": ...}
        {"op": "observe", "ts": ..., "ssp": <creationTimestamp under the SSP key or null>, "task": ..., "at": ...}
    """
    import random

    from spark_samza_source.core.model import SystemStreamPartition
    from spark_samza_source.core.startpoint import StartpointOldest, StartpointSpecific
    from spark_samza_source.core.startpoint_manager import NAMESPACE, StartpointManager, startpoint_key
    from spark_samza_source.metadata import open_store

    parser = argparse.ArgumentParser(prog="fault_driver startpoint-writer")
    parser.add_argument("--store", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--task", required=True)
    parser.add_argument("--max-offset", type=int, required=True)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--log", required=True)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--long-wait-share", type=float, default=0.25)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    store = open_store(args.store, args.job)
    manager = StartpointManager(store)
    ssp = SystemStreamPartition("kafka", args.topic, args.partition)
    keys = {"ssp": startpoint_key(ssp), "task": startpoint_key(ssp, args.task)}

    def ts_of(value):
        return value.get("creationTimestamp") if isinstance(value, dict) else None

    last = 0
    deadline = time.monotonic() + args.duration
    with open(args.log, "w") as out:
        def log(op: str, **fields) -> None:
            out.write(json.dumps({"op": op, "at": time.time(), **fields}, sort_keys=True) + "\n")
            out.flush()

        while time.monotonic() < deadline:
            while True:
                offset = str(rng.randrange(args.max_offset))
                sp = StartpointOldest() if rng.random() < 0.5 else StartpointSpecific(offset)
                if sp.creation_timestamp > last:
                    break
                time.sleep(0.001)
            last = sp.creation_timestamp
            where = "ssp" if rng.random() < 0.5 else "task"
            manager.write(ssp, sp, args.task if where == "task" else None)
            value = sp.to_json()
            log("write", ts=last, key=where, value=value)
            # mostly a quick turn (races with fan-out and planning), sometimes long enough for the source to apply
            # the startpoint, commit that batch and delete it
            time.sleep(rng.uniform(0.01, 0.2) if rng.random() >= args.long_wait_share else rng.uniform(0.8, 2.5))
            if rng.random() < 0.3:
                log("delete", ts=last, **{k: store.delete_if_equal(NAMESPACE, key, value) for k, key in keys.items()})
            else:
                log("observe", ts=last, **{k: ts_of(store.get(NAMESPACE, key)) for k, key in keys.items()})
        log("observe", ts=last, final=True, **{k: ts_of(store.get(NAMESPACE, key)) for k, key in keys.items()})
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["startpoint-writer"]:
        return startpoint_writer(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap")
    parser.add_argument("--topic")
    parser.add_argument("--kinesis-endpoint")
    parser.add_argument("--stream")
    parser.add_argument("--job", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--markers", required=True)
    parser.add_argument("--startpoint", action="append", default=[])
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--max-offsets", type=int, default=None)
    parser.add_argument("--slow-ms", type=int, default=0)
    parser.add_argument("--slow-host", default=None,
                        help="sleep --slow-ms only in tasks on this cluster host (the others only mark)")
    parser.add_argument("--fail-on-data-loss", default="true", choices=("true", "false"))
    parser.add_argument("--trigger", default="available-now")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--master", default="local[2,4]")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    parser.add_argument("--stop-file", default=None)
    parser.add_argument("--start-file", default=None)
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra option of the source (over the ones above), e.g. consumerType=SubscribeToShard")
    args = parser.parse_args(argv)
    kinesis = args.kinesis_endpoint is not None
    if kinesis != (args.stream is not None) or kinesis == (args.bootstrap is not None and args.topic is not None):
        raise SystemExit("give --bootstrap and --topic (samza-kafka), or --kinesis-endpoint and --stream")
    if kinesis and args.startpoint:
        raise SystemExit("--startpoint is for samza-kafka only")
    os.makedirs(args.markers, exist_ok=True)

    if args.startpoint:
        from spark_samza_source.core.model import SystemStreamPartition
        from spark_samza_source.core.startpoint_manager import StartpointManager
        from spark_samza_source.metadata import open_store

        manager = StartpointManager(open_store(args.store, args.job))
        for text in args.startpoint:
            partition, startpoint = parse_startpoint(text)
            key = manager.write(SystemStreamPartition("kafka", args.topic, partition), startpoint)
            emit("startpoint", key=key, creationTimestamp=startpoint.creation_timestamp, json=startpoint.to_json())

    from .spark_fixtures import make_local_spark

    conf = {"spark.driver.memory": "1g", **dict(item.split("=", 1) for item in args.conf)}
    spark = make_local_spark("samza-fault-driver", conf, master=args.master)
    if args.start_file:
        emit("ready")
        while not os.path.exists(args.start_file):
            time.sleep(0.05)
    if kinesis:
        options = {
            "streamName": args.stream, "endpointUrl": args.kinesis_endpoint,
            "dynamodbEndpointUrl": args.kinesis_endpoint, "region": "us-east-1", "awsAccessKeyId": "testing",
            "awsSecretKey": "testing", "startingPosition": "TRIM_HORIZON", "maxFetchTimePerShard": "2s",
            "job.name": args.job, "metadata.store": args.store, "startpoint.pollInterval": "0",
            "failOnDataLoss": args.fail_on_data_loss,
        }
        if args.max_offsets:
            options["maxRecordsPerShard"] = str(args.max_offsets)
    else:
        options = kafka_options(args)
    options.update(dict(item.split("=", 1) for item in args.source_option))
    source = "samza-kinesis" if kinesis else "samza-kafka"
    df = spark.readStream.format(source).options(**options).load()
    if args.slow_ms:
        from pyspark.sql.functions import udf

        # a plain (pickled-rows) Python UDF: needs no pandas; nondeterministic, so it stays where it is
        slow = udf(partial(slow_stage, args.markers, args.slow_ms, args.slow_host), "boolean").asNondeterministic()
        df = df.filter(slow(df["sequenceNumber" if kinesis else "offset"]))
    return run_parquet(args, df)


def kafka_options(args) -> dict[str, str]:
    options = {
        "kafka.bootstrap.servers": args.bootstrap,
        "subscribe": args.topic,
        "job.name": args.job,
        "metadata.store": args.store,
        "startingOffsets": args.starting_offsets,
        "startpoint.pollInterval": "0",
        "maxRowsPerArrowBatch": "50",
        "failOnDataLoss": args.fail_on_data_loss,
    }
    if args.max_offsets:
        options["maxOffsetsPerTrigger"] = str(args.max_offsets)
    return options


def run_parquet(args, df) -> int:
    spark = df.sparkSession
    writer = (df.writeStream.format("parquet").option("path", args.sink)
              .option("checkpointLocation", args.checkpoint).queryName(f"fault_driver_{uuid.uuid4().hex[:6]}"))
    if args.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    elif args.trigger.startswith("processing:"):
        writer = writer.trigger(processingTime=f"{int(args.trigger.split(':', 1)[1])} milliseconds")
    else:
        raise SystemExit(f"--trigger {args.trigger!r}: use available-now or processing:<ms>")
    query = writer.start()
    emit("started", id=str(query.id))
    from .waits import deadline_after

    deadline = deadline_after(args.timeout)  # a quiet machine's seconds, as every test wait (waits)
    last = None
    code = 2
    while time.monotonic() < deadline:
        if args.stop_file and os.path.exists(args.stop_file):
            query.stop()
            emit("stopped")
            spark.stop()
            return 0
        try:
            if query.awaitTermination(0.2):
                code = 0
                break
        except Exception:  # noqa: BLE001 - a failed query raises here; reported below from query.exception()
            code = 1
            break
        progress = query.lastProgress
        if progress is not None and progress.get("batchId") != last:
            last = progress.get("batchId")
            emit("progress", batchId=last, rows=progress.get("numInputRows"))
    error = query.exception() if code != 2 else None
    if error is not None:
        emit("failed", error=str(error)[:4000])
        code = 1
    elif code == 0:
        emit("done")
    else:
        emit("timeout")
        query.stop()
    spark.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
