"""What lag reporting costs: the listener's work per progress event, and one Prometheus scrape.

    .venv/bin/python benchmarks/lag_exporter.py                 # 1,000 Kafka partitions, 1,000 Kinesis shards
    .venv/bin/python benchmarks/lag_exporter.py --partitions 10000 --shards 4000

Prints, for a samza-kafka progress over ``--partitions`` partitions (one task each) and a samza-kinesis progress
over ``--shards`` shards (one task per shard): the time ``lag_from_progress`` takes on the event's JSON (what
``SamzaLagListener.onQueryProgress`` does on Spark's listener thread), the size of the progress entries the
Kinesis driver adds to ``latestOffset``, and the time and size of a ``/metrics`` scrape over HTTP with both
sources in the listener. Best of ``--repeat`` runs. No Spark, no servers besides the exporter.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request

from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition, TaskName
from spark_samza_source.kafka.driver.offset import KafkaOffset
from spark_samza_source.kinesis.driver.planner import initial_offset, plan_next
from spark_samza_source.kinesis.driver.progress import millis_behind_report
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.ops.metrics import SamzaLagListener, lag_from_progress

H = 2**128
RUN_ID = "5d3b7a0e-8f65-4c55-9d6a-0e4f4b1f2a10"


def progress(query_id: str, name: str, end: dict, latest: dict) -> dict:
    source = {"description": "PythonMicroBatchStream@1", "startOffset": None, "endOffset": json.dumps(end),
              "latestOffset": json.dumps(latest), "numInputRows": 1, "inputRowsPerSecond": 1.0,
              "processedRowsPerSecond": 1.0, "metrics": {}}
    return {"id": query_id, "runId": RUN_ID, "name": name, "timestamp": "2024-01-01T00:00:00.000Z", "batchId": 7,
            "batchDuration": 1, "stateOperators": [], "sources": [source],
            "sink": {"description": "x", "numOutputRows": -1}}


def kafka_progress(partitions: int) -> dict:
    ssps = [SystemStreamPartition("kafka", "orders", p) for p in range(partitions)]
    model = JobModel({TaskName(f"Partition {s.partition}"): {s} for s in ssps})
    end = KafkaOffset(model, {(TaskName(f"Partition {s.partition}"), s): 1000 for s in ssps})
    latest = {s.key: 1000 + s.partition for s in ssps}
    return progress("3f0c6a8e-1d2b-4c5d-8e9f-0a1b2c3d4e5f", "orders_etl", end.to_json(), latest)


def kinesis_progress(shards: int) -> tuple[dict, int]:
    width = H // shards
    infos = [ShardInfo(f"shardId-{i:012d}", (), i * width, (H if i == shards - 1 else (i + 1) * width) - 1,
                       str(i * 1000), None) for i in range(shards)]
    end = plan_next(initial_offset(infos, stream="clicks"), infos, {}).offset
    report = millis_behind_report({s.shard_id: 17 * i for i, s in enumerate(infos)}, 6)
    return progress("9a8b7c6d-1d2b-4c5d-8e9f-0a1b2c3d4e5f", "clicks_etl", end.to_json(), report), \
        len(json.dumps(report))


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from pyspark.sql.streaming.listener import QueryProgressEvent

    from spark_samza_source.ops.prometheus import serve_lag_metrics

    kafka = json.dumps(kafka_progress(args.partitions))
    kinesis_dict, report_bytes = kinesis_progress(args.shards)
    kinesis = json.dumps(kinesis_dict)
    kafka_s = best(lambda: lag_from_progress(kafka), args.repeat)
    kinesis_s = best(lambda: lag_from_progress(kinesis), args.repeat)

    listener = SamzaLagListener(level=0)
    for text in (kafka, kinesis):
        listener.onQueryProgress(QueryProgressEvent.fromJson({"progress": json.loads(text)}))
    exporter = serve_lag_metrics(listener=listener, port=0, addr="127.0.0.1")
    body = b""

    def scrape() -> None:
        nonlocal body
        with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=60) as resp:
            body = resp.read()

    try:
        scrape_s = best(scrape, args.repeat)
    finally:
        exporter.stop()
    series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
    print(f"lag_from_progress, samza-kafka, {args.partitions} partitions:   {kafka_s * 1000:8.1f} ms per event")
    print(f"lag_from_progress, samza-kinesis, {args.shards} shards:       {kinesis_s * 1000:8.1f} ms per event")
    print(f"samza-kinesis latestOffset lag entries, {args.shards} shards: {report_bytes / 1024:8.1f} KiB")
    print(f"/metrics scrape over HTTP, both sources:          {scrape_s * 1000:8.1f} ms, "
          f"{len(body) / 1024:.0f} KiB, {series} series")


if __name__ == "__main__":
    main()
