"""Throughput of the Kafka development broker against librdkafka's in-process mock cluster.

Produces ``--messages`` messages of ``--size`` bytes (default 1,000,000 x 100 B) to a ``--partitions``-partition
topic (default 4) with one confluent-kafka ``Producer``, then consumes them all back with one ``Consumer``
(``assign``, never ``subscribe``), first against the development broker (started as its own process with the
CLI, as ``make demo`` runs it) and then against librdkafka's mock cluster.  Prints messages/s and MB/s for
each phase and the ratios dev broker / mock.

    .venv/bin/python benchmarks/broker_throughput.py [--messages N] [--partitions P] [--size B]
        [--only devbroker|mock] [--bootstrap HOST:PORT]

Reading the figures: the mock cluster keeps only about 5 MB per partition (it drops its oldest batches), so
with the default 1,000,000 x 100 B it retains ~190,000 messages, and reading such a truncated mock log was
observed to be several times slower than reading a complete one; ``--messages 150000`` (all retained) is the
like-for-like comparison.  Producing is bound by the Python ``produce()`` loop for both.  ``--repeat`` keeps
the best of several runs (the machines are small and shared).

``--bootstrap`` measures an already running broker (for example a real Kafka) instead of starting the dev
broker.  The mock cluster is reached through the librdkafka shared library bundled in the confluent-kafka
wheel (``rd_kafka_mock_cluster_new`` via ctypes: ``samza_devkit.rdkafka_mock_cluster``, which the differential tests in
``tests/integration/broker`` use too).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid

import confluent_kafka as ck

from samza_devkit.rdkafka_mock_cluster import RdkafkaMockCluster

__all__ = ["run_benchmark", "start_dev_broker_process", "main"]


def start_dev_broker_process(data_dir: str, timeout: float = 60.0) -> tuple[subprocess.Popen, str]:
    """Start ``python -m samza_devkit.kafka_broker`` and wait for its ``listening on`` line."""
    # stderr goes to a file: a pipe nobody reads would block the broker once it fills (~64 KiB).
    log = open(os.path.join(data_dir, "broker.stderr.log"), "w")  # noqa: SIM115 - lives as long as the broker
    proc = subprocess.Popen(
        [sys.executable, "-m", "samza_devkit.kafka_broker", "--port", "0", "--data-dir", data_dir],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(r"listening on (\S+:\d+)", line)
        if match:
            return proc, match.group(1)
    proc.kill()
    raise RuntimeError("development broker did not start:\n" + "".join(seen))


def _create_topic_admin(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=30).values():
        fut.result(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} not visible in metadata")


def _produce(bootstrap: str, topic: str, partitions: int, messages: int, size: int) -> float:
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "batch.num.messages": 100_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "acks": "all",
        }
    )
    payload = os.urandom(size)
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)

    start = time.perf_counter()
    produce = producer.produce
    for i in range(messages):
        while True:
            try:
                produce(topic, payload, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(300)
    elapsed = time.perf_counter() - start
    if remaining or failures:
        raise RuntimeError(f"produce failed: {remaining} undelivered, errors {failures[:3]}")
    return elapsed


def _consume(bootstrap: str, topic: str, partitions: int, size: int) -> tuple[float, int]:
    """Read every partition from its low to its high watermark; return (seconds, messages read)."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
            # When a partition's pre-fetch queue is full (queued.min.messages, 100,000 messages) librdkafka
            # stops fetching it for fetch.queue.backoff.ms (1 s by default): that, not the broker, would be
            # measured on any log of more than a few hundred thousand small messages.
            "fetch.queue.backoff.ms": 5,
        }
    )
    try:
        # librdkafka's mock cluster keeps only ~5 MB per partition (it drops the oldest batches), so the
        # expected count is what the log retains, not what was produced.
        marks = [
            consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=30, cached=False)
            for p in range(partitions)
        ]
        expected = sum(high - low for low, high in marks)
        start = time.perf_counter()
        consumer.assign([ck.TopicPartition(topic, p, low) for p, (low, _high) in enumerate(marks)])
        count = nbytes = 0
        deadline = time.monotonic() + 600
        while count < expected:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consume timed out after {count} of {expected} messages")
            batch = consumer.consume(num_messages=10_000, timeout=1.0)
            for msg in batch:
                if msg.error() is not None:
                    raise RuntimeError(f"consume error: {msg.error()}")
                count += 1
                nbytes += len(msg.value())
        elapsed = time.perf_counter() - start
        if count != expected or nbytes != expected * size:
            raise RuntimeError(f"consumed {count} messages / {nbytes} bytes, expected {expected} x {size}")
        return elapsed, count
    finally:
        consumer.close()


def run_benchmark(bootstrap: str, create_topic, messages: int, partitions: int, size: int, repeat: int = 1) -> dict:
    """Produce then consume ``messages`` on a fresh topic, ``repeat`` times; keep the best of each phase."""
    best: dict = {}
    for _ in range(repeat):
        topic = f"bench-{uuid.uuid4().hex[:12]}"
        create_topic(topic, partitions)
        produce_s = _produce(bootstrap, topic, partitions, messages, size)
        consume_s, consumed = _consume(bootstrap, topic, partitions, size)
        if not best or produce_s < best["produce_s"]:
            best.update(
                produce_s=produce_s, produce_msgs=messages / produce_s, produce_mbs=messages * size / 1e6 / produce_s
            )
        if "consume_s" not in best or consumed / consume_s > best["consume_msgs"]:
            best.update(
                consume_s=consume_s,
                consumed=consumed,
                consume_msgs=consumed / consume_s,
                consume_mbs=consumed * size / 1e6 / consume_s,
            )
    return best


def _print_row(name: str, r: dict) -> None:
    print(
        f"{name:<10} produce {r['produce_msgs']:>11,.0f} msg/s {r['produce_mbs']:>7.1f} MB/s ({r['produce_s']:.2f} s)"
        f" | consume {r['consume_msgs']:>11,.0f} msg/s {r['consume_mbs']:>7.1f} MB/s ({r['consume_s']:.2f} s,"
        f" {r['consumed']:,} retained)",
        flush=True,
    )


def _version(v) -> str:
    return v[0] if isinstance(v, tuple) else str(v)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--repeat", type=int, default=1, help="runs per broker (fresh topic each); best kept")
    parser.add_argument("--only", choices=["devbroker", "mock"], help="measure only one of the two")
    parser.add_argument("--bootstrap", help="measure this running broker instead of starting the dev broker")
    args = parser.parse_args(argv)

    print(
        f"{args.messages:,} messages x {args.size} B to {args.partitions} partitions, best of {args.repeat}, "
        f"confluent-kafka {_version(ck.version())} / librdkafka {_version(ck.libversion())}",
        flush=True,
    )
    shape = (args.messages, args.partitions, args.size, args.repeat)
    results = {}
    if args.only in (None, "devbroker"):
        if args.bootstrap:
            results["devbroker"] = run_benchmark(
                args.bootstrap, lambda t, p: _create_topic_admin(args.bootstrap, t, p), *shape
            )
        else:
            with tempfile.TemporaryDirectory(prefix="bench-broker-") as data_dir:
                proc, bootstrap = start_dev_broker_process(data_dir)
                try:
                    results["devbroker"] = run_benchmark(
                        bootstrap, lambda t, p: _create_topic_admin(bootstrap, t, p), *shape
                    )
                finally:
                    _stop(proc)
        _print_row("devbroker", results["devbroker"])
    if args.only in (None, "mock"):
        with RdkafkaMockCluster() as mock:
            results["mock"] = run_benchmark(mock.bootstrap_servers, mock.create_topic, *shape)
        _print_row("mock", results["mock"])
    if len(results) == 2:
        dev, mock = results["devbroker"], results["mock"]
        print(
            f"ratio dev/mock: produce {dev['produce_msgs'] / mock['produce_msgs']:.2f}, "
            f"consume {dev['consume_msgs'] / mock['consume_msgs']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
