"""Raw throughput of ``read_ranges`` (one process, no Spark): how fast one Samza task turns Kafka into Arrow.

    .venv/bin/python benchmarks/kafka_reader_raw.py [--bootstrap HOST:PORT] [--records 1000000] [--size 100]

Without ``--bootstrap`` a development broker is started in a subprocess (so it does not share this process's
GIL).  Reports, for the same ranges:

* ``consume only``: librdkafka -> Python ``Message`` objects, nothing else (the ceiling for any Python reader);
* ``read_ranges``: the real reader (routing, range checks, columnar Arrow batches with the exact schema), one
  task with every partition, then the same with headers; through the native path and the Python path;
* ``small reads``: the per-batch cost at low rates, what a micro-batch of a few hundred records costs an
  executor: consecutive ranges of ``--small-size`` records of a small one-partition topic (so librdkafka's
  prefetch reaches the log end, as when a query keeps up with a low-rate stream) read one after another through
  a warm consumer cache (borrow, assign, first fetch, one batch), median and 90th percentile per read, each path,
  with the reader's defaults and with ``fetch.wait.max.ms`` 10 and 100 beside them.

Figures are records/s and value MB/s of wall time (the broker, a Python process, shares the machine and is
usually the limit), and records per CPU-second of this process (the reader's own cost, librdkafka included).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache, consumer_config
from spark_samza_source.kafka.executor.reader import read_ranges
from spark_samza_source.kafka.input_partition import KafkaRange


def produce(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "batch.num.messages": 10_000, "acks": 1, "enable.idempotence": False,
                         "queue.buffering.max.messages": 500_000})
    value = b"x" * size
    started = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, key=b"%08d" % i, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300):
        raise RuntimeError("produce did not complete")
    print(f"produced {records:,} x {size} B in {time.monotonic() - started:.1f}s", flush=True)


def cpu_seconds() -> float:
    """CPU time of this process (all threads, librdkafka's included): the reader's own cost, unlike wall time."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def consume_only(bootstrap: str, ranges: list[KafkaRange]) -> tuple[float, float]:
    consumer = Consumer(consumer_config({"bootstrap.servers": bootstrap}))
    consumer.assign([TopicPartition(r.topic, r.partition, r.start) for r in ranges])
    want = sum(r.size for r in ranges)
    got = 0
    started, cpu = time.monotonic(), cpu_seconds()
    while got < want:
        for m in consumer.consume(10_000, 1.0):
            if m.error() is None:
                got += 1
    elapsed, cpu = time.monotonic() - started, cpu_seconds() - cpu
    consumer.close()
    return elapsed, cpu


def run_reader(bootstrap: str, ranges: list[KafkaRange], headers: bool,
               cache: ConsumerCache, conf: dict | None = None) -> tuple[float, float, int]:
    started, cpu = time.monotonic(), cpu_seconds()
    rows = batches = 0
    for batch in read_ranges({"bootstrap.servers": bootstrap, **(conf or {})}, "Partition 0", ranges,
                             include_headers=headers,
                             fail_on_data_loss=True, cache=cache, read_path=_path(cache)):
        rows += batch.num_rows
        batches += 1
    elapsed, cpu = time.monotonic() - started, cpu_seconds() - cpu
    assert rows == sum(r.size for r in ranges), rows
    return elapsed, cpu, batches


def _path(cache: ConsumerCache) -> str:
    return "native" if cache.is_native else "python"


def small_reads(bootstrap: str, topic: str, size: int, count: int, cache: ConsumerCache,
                conf: dict) -> list[float]:
    """Milliseconds per read of ``count`` consecutive ``size``-record ranges of partition 0 (after a warm-up)."""
    run_reader(bootstrap, [KafkaRange(topic, 0, 0, 1)], False, cache, conf)
    took = []
    for i in range(count):
        started = time.monotonic()
        run_reader(bootstrap, [KafkaRange(topic, 0, 1 + i * size, 1 + (i + 1) * size)], False, cache, conf)
        took.append(1000 * (time.monotonic() - started))
    return sorted(took)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--small-size", type=int, default=200, help="records per small read")
    parser.add_argument("--small-reads", type=int, default=50)
    args = parser.parse_args()

    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from samza_devkit.kafka_broker import KafkaDevBroker

        broker = KafkaDevBroker().start()
        bootstrap = broker.bootstrap_servers
    try:
        topic = f"bench-{os.getpid()}-{int(time.time())}"
        produce(bootstrap, topic, args.partitions, args.records, args.size)
        per = args.records // args.partitions
        ranges = [KafkaRange(topic, p, 0, per + (1 if p < args.records % args.partitions else 0))
                  for p in range(args.partitions)]
        mb = args.records * args.size / 1e6
        caches = [ConsumerCache.native(2), ConsumerCache(2)]
        for cache in caches:
            run_reader(bootstrap, ranges[:1], False, cache)  # warm-up: connection, metadata
        n = args.records
        print(f"load average {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} CPUs", flush=True)
        for i in range(args.repeat):
            t, c = consume_only(bootstrap, ranges)
            print(f"[{i}] consume only              : {n / t:>10,.0f} rec/s  {mb / t:6.1f} MB/s  ({t:.2f}s wall, "
                  f"{n / c:,.0f} rec per CPU-s)")
            for cache in caches:
                for headers in (False, True):
                    t, c, b = run_reader(bootstrap, ranges, headers, cache)
                    label = f"read_ranges{'+headers' if headers else ''} {_path(cache)}"
                    print(f"[{i}] {label:<27}: {n / t:>10,.0f} rec/s  {mb / t:6.1f} MB/s  ({t:.2f}s wall, "
                          f"{n / c:,.0f} rec per CPU-s, {b} batches)", flush=True)
        small = topic + "-small"
        produce(bootstrap, small, 1, 1 + args.small_reads * args.small_size, args.size)
        for conf in ({}, {"fetch.wait.max.ms": "10"}, {"fetch.wait.max.ms": "100"}):
            for cache in caches:
                took = small_reads(bootstrap, small, args.small_size, args.small_reads, cache, conf)
                print(f"small reads, {_path(cache):<6} {conf or 'defaults'}: {args.small_reads} x {args.small_size} "
                      f"records, median {took[len(took) // 2]:.1f} ms, p90 {took[int(len(took) * 0.9)]:.1f} ms "
                      "per read", flush=True)
        for cache in caches:
            cache.close_all()
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
