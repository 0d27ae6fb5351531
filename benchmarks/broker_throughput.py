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
wheel (``rd_kafka_mock_cluster_new`` via ctypes); ``RdkafkaMockCluster`` is also used by the differential
test in ``tests/integration/broker``.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import confluent_kafka as ck

__all__ = ["RdkafkaMockCluster", "run_benchmark", "start_dev_broker_process", "main"]


def _librdkafka() -> ctypes.CDLL:
    """The librdkafka that confluent-kafka itself loaded (bundled in the wheel), or the system one."""
    pkg_dir = Path(ck.__file__).resolve().parent
    candidates = sorted(glob.glob(str(pkg_dir.parent / "confluent_kafka.libs" / "librdkafka*.so*")))
    candidates += sorted(glob.glob(str(pkg_dir / ".dylibs" / "librdkafka*.dylib")))
    candidates += ["librdkafka.so.1", "librdkafka.dylib"]
    last_error: OSError | None = None
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            last_error = exc
            continue
        if hasattr(lib, "rd_kafka_mock_cluster_new"):
            return lib
    raise RuntimeError(f"no librdkafka with the mock cluster API found ({last_error})")


class RdkafkaMockCluster:
    """librdkafka's mock Kafka cluster (``rd_kafka_mock_cluster_new``), reachable at ``bootstrap_servers``.

    The mock cluster runs on librdkafka's own threads (no GIL).  Its topics must be created with
    :meth:`create_topic` (the mock does not implement the CreateTopics API); it has no timestamp index
    (``offsets_for_times`` answers -1) and cannot add partitions.
    """

    def __init__(self, num_brokers: int = 1):
        lib = _librdkafka()
        vp = ctypes.c_void_p
        lib.rd_kafka_conf_new.restype = vp
        lib.rd_kafka_conf_set.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_new.restype = vp
        lib.rd_kafka_new.argtypes = [ctypes.c_int, vp, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_destroy.argtypes = [vp]
        lib.rd_kafka_mock_cluster_new.restype = vp
        lib.rd_kafka_mock_cluster_new.argtypes = [vp, ctypes.c_int]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
        lib.rd_kafka_mock_topic_create.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.rd_kafka_mock_set_controller_id.argtypes = [vp, ctypes.c_int32]
        self._lib = lib
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        # The handle only owns the cluster: keep it quiet (it has no bootstrap servers of its own).
        lib.rd_kafka_conf_set(conf, b"log_level", b"0", errstr, len(errstr))
        self._rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))  # RD_KAFKA_PRODUCER
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, num_brokers)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        # Brokers are numbered from 1 but the mock reports controller id 0 (no such broker) unless told.
        lib.rd_kafka_mock_set_controller_id(self._mc, 1)
        self.bootstrap_servers = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, replication_factor)
        if err != 0:
            raise RuntimeError(f"rd_kafka_mock_topic_create({name!r}) failed: {ck.KafkaError(err)}")

    def close(self) -> None:
        if self._mc:
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> RdkafkaMockCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
