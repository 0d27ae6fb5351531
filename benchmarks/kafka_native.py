"""The native anchor of the Kafka benchmarks: ``kcat`` (librdkafka's own consumer, no Python) on the same broker
and topic in the same run, so that every Python figure can be printed as a ratio against it.

Why an anchor: comparing the Spark query with our own Python loop hides the handicaps both share (librdkafka
waiting out ``fetch.queue.backoff.ms``, per-record Python work); kcat shows what the broker and librdkafka can do
on this machine at this moment, so the ratio is far less sensitive to the load other processes put on it.

Used by ``kafka_source.py`` (``--only native`` and the Spark part); runnable alone::

    .venv/bin/python benchmarks/kafka_native.py [--records 1000000] [--kafka-conf KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time

from bench_report import cpu_seconds, load, say

__all__ = ["KCAT", "kcat_missing_reason", "run_kcat", "bare_consume", "run_read_ranges", "measure_single_partition"]

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
NATIVE_CPU_TARGET = 1.5  # the native reader's CPU per record / kcat's, one partition


def kcat_missing_reason() -> str | None:
    """None when kcat is installed, else the message that explains the skipped anchor."""
    if KCAT:
        return None
    return "kcat is not installed (apt-get install kcat): the native anchor and every ratio to it are skipped"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_kcat(bootstrap: str, topic: str, count: int, partition: int | None = None) -> dict:
    """kcat reads ``count`` records of ``topic`` (one partition or all) from the beginning and exits; wall time
    and kcat's CPU (its own rusage as a waited-for child)."""
    if not KCAT:
        raise RuntimeError(kcat_missing_reason())
    cmd = [KCAT, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(count), "-e", "-q"]
    if partition is not None:
        cmd += ["-p", str(partition)]
    cpu = _children_cpu()
    started = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=600)
    seconds = time.monotonic() - started
    return {"rows": count, "seconds": seconds, "cpu": _children_cpu() - cpu, "rate": count / seconds}


def bare_consume(bootstrap: str, topic: str, partition: int, count: int, extra: dict | None = None) -> dict:
    """A bare confluent-kafka ``consume`` loop (librdkafka's defaults, plus ``extra``): the Python ceiling."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-bare", "enable.auto.commit": False,
                         **(extra or {})})
    consumer.assign([TopicPartition(topic, partition, 0)])
    got = 0
    cpu, started = cpu_seconds(), time.monotonic()
    while got < count:
        got += sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)
    seconds, cpu = time.monotonic() - started, cpu_seconds() - cpu
    consumer.close()
    return {"rows": got, "seconds": seconds, "cpu": cpu, "rate": got / seconds}


def run_read_ranges(bootstrap: str, ranges, kafka_conf: dict | None = None, cache=None,
                    read_path: str = "auto") -> dict:
    """The executor path: ``read_ranges`` over ``ranges`` as one task (product defaults + ``kafka_conf``), through
    ``read_path`` (``auto``: the native reader where built, as executors do; ``python``: the fallback)."""
    from spark_samza_source.kafka.executor.reader import read_ranges
    conf = {"bootstrap.servers": bootstrap, **(kafka_conf or {})}
    rows = 0
    cpu, started = cpu_seconds(), time.monotonic()
    for batch in read_ranges(conf, "Partition 0", ranges, include_headers=False, fail_on_data_loss=True,
                             cache=cache, read_path=read_path):
        rows += batch.num_rows
    seconds, cpu = time.monotonic() - started, cpu_seconds() - cpu
    expected = sum(r.size for r in ranges)
    if rows != expected:
        raise RuntimeError(f"read_ranges returned {rows:,} rows, expected {expected:,}")
    return {"rows": rows, "seconds": seconds, "cpu": cpu, "rate": rows / seconds}


def _line(label: str, res: dict, anchor: dict | None) -> str:
    per_m = 1e6 * res["cpu"] / res["rows"]
    text = (f"{label:<38} {res['rate']:>11,.0f} rec/s ({res['seconds']:.2f} s wall, {per_m:.2f} CPU-s per "
            "million)")
    if anchor is not None:
        text += (f"  wall rate {res['rate'] / anchor['rate']:.2f}x kcat, CPU per record "
                 f"{(res['cpu'] / res['rows']) / (anchor['cpu'] / anchor['rows']):.2f}x kcat")
    return text


def measure_single_partition(bootstrap: str, topic: str, count: int, repeat: int,
                             kafka_conf: dict | None = None) -> dict:
    """kcat, a bare consume loop and ``read_ranges`` on partition 0 of ``topic`` (``count`` records), alternately
    ``repeat`` times; the best run of each is returned ({name: result}) and every run printed with its ratios.
    ``read_ranges`` is the executors' default path (the native reader where built), ``read_ranges_python`` the
    Python fallback (``readPath=python``), both in the same run."""
    from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache
    from spark_samza_source.kafka.executor.native_reader import native_unavailable_reason
    from spark_samza_source.kafka.input_partition import KafkaRange
    ranges = [KafkaRange(topic, 0, 0, count)]
    native_missing = native_unavailable_reason()
    if native_missing:
        say(f"  the native reader is not available ({native_missing}): 'read_ranges' is the Python path too")
    cache = ConsumerCache(1) if native_missing else ConsumerCache.native(1)
    py_cache = ConsumerCache(1)
    warm = [KafkaRange(topic, 0, 0, min(count, 1000))]
    run_read_ranges(bootstrap, warm, kafka_conf, cache)  # warm-up
    run_read_ranges(bootstrap, warm, kafka_conf, py_cache, "python")
    best: dict[str, dict] = {}

    def keep(name: str, res: dict) -> None:
        if name not in best or res["rate"] > best[name]["rate"]:
            best[name] = res

    for i in range(repeat):
        say(f"  run {i + 1}/{repeat}; {load()}")
        anchor = None
        if KCAT:
            anchor = run_kcat(bootstrap, topic, count, partition=0)
            keep("kcat", anchor)
            say("    " + _line("kcat (native)", anchor, None))
        for name, res in (
            ("bare", bare_consume(bootstrap, topic, 0, count)),
            ("bare+backoff", bare_consume(bootstrap, topic, 0, count, {"fetch.queue.backoff.ms": 10})),
            ("read_ranges", run_read_ranges(bootstrap, ranges, kafka_conf, cache)),
            ("read_ranges_python", run_read_ranges(bootstrap, ranges, kafka_conf, py_cache, "python")),
        ):
            keep(name, res)
            label = {"bare": "bare consume loop (librdkafka defaults)",
                     "bare+backoff": "bare loop, fetch.queue.backoff.ms=10",
                     "read_ranges": "read_ranges, native path" if not native_missing else "read_ranges",
                     "read_ranges_python": "read_ranges, Python path"}[name]
            say("    " + _line(label, res, anchor))
    cache.close_all()
    py_cache.close_all()
    if "kcat" in best:
        kcat = best["kcat"]
        for name in ("read_ranges", "read_ranges_python"):
            res = best[name]
            cpu = (res["cpu"] / res["rows"]) / (kcat["cpu"] / kcat["rows"])
            say(f"  best of each: {name}: CPU per record {cpu:.2f}x kcat (target for the native path <= "
                f"{NATIVE_CPU_TARGET}x), wall rate {res['rate'] / kcat['rate']:.2f}x kcat")
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kafka-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra librdkafka setting for read_ranges, as a user's kafka.* option")
    args = parser.parse_args(argv)
    from kafka_source import VALUE_SIZE, produce

    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic

    reason = kcat_missing_reason()
    if reason:
        say(reason)
    conf = dict(kv.split("=", 1) for kv in args.kafka_conf)
    with KafkaDevBroker() as broker:
        topic = f"bench-native-{int(time.time())}"
        create_topic(broker.bootstrap_servers, topic, 1)
        produce(broker.bootstrap_servers, topic, 1, args.records, VALUE_SIZE)
        measure_single_partition(broker.bootstrap_servers, topic, args.records, args.repeat, conf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
