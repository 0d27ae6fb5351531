"""What the garbage collection after every task costs a reused Python worker, and what freezing saves.

PySpark's worker daemon runs ``gc.collect()`` after each task of a reused worker; a full collection traverses every
object the collector tracks. Each case runs in an interpreter of its own, built as a worker is:

- ``floor``: what any Python data source's worker holds (PySpark's worker modules and pyarrow): the anchor;
- ``kafka``: the same with samza-kafka's read path imported;
- ``kinesis``: the same with samza-kinesis's read path, a Kinesis client and the clients of an S3 and a DynamoDB
  store (endpoints on a closed port: nothing is sent).

For each: the objects the collector tracks, the median ms of ``gc.collect()`` over ``--repeat`` calls, and the
same after ``worker_heap.freeze_long_lived_objects()`` (what samza-kafka's and samza-kinesis's reads do once a read
has ended). Then the CPU of opening an ``s3://`` store: the first open in a process, and later opens of the same
settings (one shared client) against making a client from a new session each time.

    .venv/bin/python benchmarks/worker_collection.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

CASES = {
    "floor": "",
    "kafka": """
        import spark_samza_source.kafka.source, spark_samza_source.kafka.executor.reader
    """,
    "kinesis": """
        import spark_samza_source.kinesis.source, spark_samza_source.kinesis.executor.task
        from spark_samza_source.kinesis.client import kinesis_client
        from spark_samza_source.metadata import open_store
        kinesis_client({"region": "us-east-1", "endpoint_url": "http://127.0.0.1:9", "access_key_id": "a",
                        "secret_key": "b"})
        open_store("s3://a:b@bucket/p?endpoint=http://127.0.0.1:9&region=us-east-1", "job")
        open_store("dynamodb://tbl?endpoint=http://127.0.0.1:9&region=us-east-1&access_key=a&secret_key=b", "job")
    """,
}

MEASURE = """
import gc, json, statistics, time
import pyspark.worker, pyspark.sql.worker.plan_data_source_read, pyarrow
{setup}
from spark_samza_source.source.worker_heap import freeze_long_lived_objects

def collection_ms():
    runs = []
    for _ in range({repeat}):
        started = time.perf_counter()
        gc.collect()
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs)

before = (len(gc.get_objects()), collection_ms())
freeze_long_lived_objects()
after = (len(gc.get_objects()), collection_ms())
print(json.dumps({{"tracked": before[0], "ms": before[1], "tracked_frozen": after[0], "ms_frozen": after[1]}}))
"""

STORE_OPENS = """
import json, time
import boto3
from spark_samza_source.metadata import open_store
URI = "s3://a:b@bucket/p?endpoint=http://127.0.0.1:9&region=us-east-1"

def cpu_ms(action, times):
    started = time.process_time()
    for _ in range(times):
        action()
    return (time.process_time() - started) * 1000 / times

first = cpu_ms(lambda: open_store(URI, "job"), 1)
shared = cpu_ms(lambda: open_store(URI, "job"), {repeat})
own = cpu_ms(lambda: boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b",
                                           region_name="us-east-1").client("s3", endpoint_url="http://127.0.0.1:9"),
             {repeat})
print(json.dumps({{"first": first, "shared": shared, "own_session": own}}))
"""


def _run(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    floor_ms = None
    for case, setup in CASES.items():
        got = _run(MEASURE.format(setup=textwrap.dedent(setup), repeat=args.repeat))
        floor_ms = got["ms"] if case == "floor" else floor_ms
        print(f"{case:8s} {got['tracked']:>7,} objects tracked: gc.collect() {got['ms']:6.1f} ms "
              f"({got['ms'] / floor_ms:.2f}x the floor's); after freezing: {got['tracked_frozen']:,} objects, "
              f"{got['ms_frozen']:.2f} ms")
    opens = _run(STORE_OPENS.format(repeat=args.repeat))
    print(f"s3:// store open, CPU: first in the process {opens['first']:.0f} ms; later opens of the same settings "
          f"{opens['shared']:.2f} ms (shared client); a client from a new session each time "
          f"{opens['own_session']:.0f} ms")


if __name__ == "__main__":
    main()
