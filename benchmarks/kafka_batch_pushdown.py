"""A samza-kafka batch read with a ``timestamp >=`` filter selecting the last 1% of a topic, with and without
filter pushdown (``spark.sql.python.filterPushdown.enabled``).

    .venv/bin/python benchmarks/kafka_batch_pushdown.py [--records 1000000] [--partitions 4] [--repeat 2]

``--records`` records of 100 B over ``--partitions`` partitions of the development broker (its own process), record
``i`` of a partition stamped ``BASE + i`` ms, so ``timestamp >= BASE + 0.99 * per_partition`` keeps the last 1% of
every partition. Each side counts the matching rows (``where(...).count()``) on a ``local[2]`` session; sides run
alternately ``--repeat`` times and the best wall time of each is kept. Without pushdown every record is fetched,
converted and filtered by Spark; with it each partition starts at ``offsetsForTimes`` (Spark still applies the
filter). The machine is shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "devkit"))
sys.path.insert(0, str(ROOT))

BASE_TS = 1_700_000_000_000
CONF = "spark.sql.python.filterPushdown.enabled"


def produce_topic(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000,
                         "queue.buffering.max.messages": 2_000_000, "acks": "1"})
    per = records // partitions
    value = b"x" * 100
    for i in range(per):
        for p in range(partitions):
            while True:
                try:
                    producer.produce(topic, value=value, partition=p, timestamp=BASE_TS + i)
                    break
                except BufferError:
                    producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    left = producer.flush(300)
    if left:
        raise SystemExit(f"{left} records unacknowledged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic
    from samza_devkit.spark_fixtures import make_local_spark

    print(f"load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, KafkaDevBroker(data_dir=Path(tmp) / "broker") as broker:
        bootstrap = broker.bootstrap_servers
        topic = create_topic(bootstrap, "pushdown-bench", args.partitions)
        t0 = time.perf_counter()
        produce_topic(bootstrap, topic, args.records, args.partitions)
        print(f"produced {args.records:,} records in {time.perf_counter() - t0:.1f} s", flush=True)
        per = args.records // args.partitions
        cut = BASE_TS + int(per * 0.99)
        expected = (per - int(per * 0.99)) * args.partitions
        spark = make_local_spark("pushdown-bench")
        where = f"timestamp >= TIMESTAMP_MILLIS({cut})"
        options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
        best: dict[str, float] = {}
        for rnd in range(args.repeat):
            for side in ("off", "on"):
                spark.conf.set(CONF, "true" if side == "on" else "false")
                started = time.perf_counter()
                n = spark.read.format("samza-kafka").options(**options).load().where(where).count()
                took = time.perf_counter() - started
                if n != expected:
                    raise SystemExit(f"pushdown {side}: {n} rows, expected {expected}")
                best[side] = min(best.get(side, took), took)
                print(f"round {rnd + 1} pushdown {side:3}: {n:,} rows in {took:6.2f} s  (load {os.getloadavg()})",
                      flush=True)
        spark.stop()
    print()
    print("| records | selected | pushdown off (best) | pushdown on (best) | speed-up | load average at end |")
    print("|---|---|---|---|---|---|")
    print(f"| {args.records:,} | {expected:,} | {best['off']:.2f} s | {best['on']:.2f} s | "
          f"{best['off'] / best['on']:.1f}x | {', '.join(f'{x:.2f}' for x in os.getloadavg())} |")


if __name__ == "__main__":
    main()
