"""Soak (benchmark, not CI): both sources under continuous production, resharding, startpoints and driver kills.

    .venv/bin/python benchmarks/soak.py --minutes 20            # the issue's run
    .venv/bin/python benchmarks/soak.py --minutes 3 --kill-every 60
    .venv/bin/python benchmarks/soak.py --replicated --minutes 20   # Kafka on three replicated nodes, nodes lost

What runs (all on this machine):

* a Kafka development broker (child process) with the keyed topic ``soak-orders`` (2 partitions), and a moto
  server (child process, with the Kinesis resharding fixes) with the stream ``soak-clicks`` (2 shards);
* two producer threads (``--rate`` records/s each, ``--keys`` keys): every record is ``<key>:<seq>`` with a
  per-key sequence number 0, 1, 2, ... Kafka records go to partition ``crc32(key) % partitions`` (explicitly, so
  the producer switches to the new partition count at the very moment of the expansion; librdkafka's own
  partitioner would switch at its next metadata refresh, minutes later); Kinesis records are routed by
  partition key (moto: md5, only to open shards);
* the Spark driver (``benchmarks/soak_driver.py``) in a process group of its own: one ``samza-kafka`` and one
  ``samza-kinesis`` query on local Spark, each writing Parquet through the file sink (exactly once);
* the schedule: at 1/3 of the run the topic grows 2 -> 4 and the shard ``shardId-000000000000`` is split; at 2/3
  the topic grows 4 -> 8 and two adjacent open shards with different parents are merged (the split's upper
  child and ``shardId-000000000001``, so keys move between tasks); every ``--startpoint-every`` seconds a
  startpoint (Timestamp in the last 30 s, Upcoming, Oldest, Kafka also Specific near the end of the log) is
  written for a random Kafka partition or Kinesis slot; every ``--kill-every`` seconds (+-25 %) the whole driver
  is SIGKILLed and started again from the same checkpoints.

At the end the producers stop, the driver is killed one last time and run with ``Trigger.AvailableNow`` to catch
up, and the checker reads the ground truth (the whole topic with a plain consumer, every shard with a plain
GetRecords loop), both sinks (each Parquet file mapped to its micro-batch through ``_spark_metadata``) and both
offset logs (the startpoints each batch applied: ``rebases`` of samza-kafka, ``startpoints`` of samza-kinesis).

Definitions the verdict uses (per source):

* **exactly once, modulo startpoints**: per partition / shard, walk the committed micro-batches in order with a
  cursor starting at the first record. A startpoint applied in a batch moves the cursor to the position it
  resolved to (recorded in the offset log): backwards is a *replay* window, forwards a *skip* window. The rows of
  the partition / shard in each batch must then be exactly the next records from the cursor, contiguous, in log
  order. After the last batch the cursor must be at the end of the log. So every produced record is delivered
  (or lies in a skip window a startpoint asked for), and every redelivery lies in a replay window a startpoint
  asked for. Every delivered row's key and value must also equal the log's record at that position.
* **per-key order**: for each key, its *fresh* deliveries (those at or beyond the furthest position the cursor
  of their partition / shard had passed: not a startpoint replay) in delivery order -- micro-batch, then the
  row order inside the task's output file -- must have strictly increasing sequence numbers. The same key in two
  tasks' files of one batch cannot be ordered and counts as a violation. This is what crosses expansions and
  reshards: a key moving from partition 1 to 3, or from a parent shard to a child, must not be seen out of order.
* **startpoints**: each one written is matched with the batches that applied it (by SSP and creation
  timestamp): applied at most once; its resolved position checked against the log (Oldest: the first record;
  Timestamp: Kafka the first offset whose timestamp is >= it, Kinesis AT_TIMESTAMP of it; Specific: that offset;
  Upcoming: Kafka any position, Kinesis AT_TIMESTAMP not before it was written); one never applied must have
  been superseded by a newer startpoint on the same SSP (or still be in the store when the run ends).

With ``--replicated`` the Kafka half runs on three replicated Apache Kafka nodes instead of the development broker
(``samza_devkit.kafka_cluster``: KRaft, the topic at replication factor 3, ``min.insync.replicas=2``, the producer
at ``acks=all``, idempotent), and a thread of its own (``BrokerFaults``) adds broker faults to the driver kills:
every ``--broker-fault-every`` seconds (+-25 %), in turn, a random node SIGKILLed (started again once its
leaderships have moved) and a rolling restart (each node stopped with a controlled shutdown and started, waiting
for every replica to be back in sync before the next). A fault and an expansion never overlap (an expansion needs
every node up to place its replicas): the expansion waits for the fault in progress. The verdict is the same, so
nothing acknowledged may be lost or read twice across them.

Prints the counts and exits 1 on any violation (details of the first ones printed). The work directory (broker
data, checkpoints, sinks, driver logs) is kept and printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "benchmarks" / "soak_driver.py"
sys.path.insert(0, str(REPO))

TOPIC = "soak-orders"
STREAM = "soak-clicks"
KAFKA_JOB = "soak-kafka"
KINESIS_JOB = "soak-kinesis"
MAX_EXAMPLES = 12


def log(text: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {text}", flush=True)


# ---- producers ----------------------------------------------------------------------------------------------------
class Producer(threading.Thread):
    """Writes ``rate`` records/s of ``<key>:<seq>`` with per-key sequence numbers, in ticks; ``pause`` (a lock held
    around every tick) lets a reshard happen between two ticks."""

    tick_s = 0.25

    def __init__(self, name: str, keys: list[str], rate: float, seed: int) -> None:
        super().__init__(name=name, daemon=True)
        self.keys = keys
        self.rate = rate
        self.rng = random.Random(seed)
        self.seq: dict[str, int] = defaultdict(int)
        self.pause = threading.Lock()
        self.stop_event = threading.Event()
        self.produced = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        carry = 0.0
        next_tick = time.monotonic()
        try:
            while not self.stop_event.is_set():
                carry += self.rate * self.tick_s
                n, carry = int(carry), carry - int(carry)
                with self.pause:
                    records = []
                    for _ in range(n):
                        key = self.rng.choice(self.keys)
                        records.append((key, self.seq[key]))
                        self.seq[key] += 1
                    if records:
                        self.send(records)
                        self.produced += len(records)
                next_tick += self.tick_s
                delay = next_tick - time.monotonic()
                if delay > 0:
                    self.stop_event.wait(delay)
                else:
                    next_tick = time.monotonic()  # behind (a reshard held the lock): do not burst
        except BaseException as exc:  # noqa: BLE001 - reported by the orchestrator
            self.error = exc
            log(f"{self.name} FAILED: {exc!r}")

    def send(self, records: list[tuple[str, int]]) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stop_event.set()
        self.join(120)


class KafkaProducer(Producer):
    def __init__(self, bootstrap: str, keys: list[str], rate: float, seed: int, partitions: int) -> None:
        super().__init__("kafka-producer", keys, rate, seed)
        from confluent_kafka import Producer as RdProducer

        self.partitions = partitions
        self.producer = RdProducer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                                    "enable.idempotence": True, "log.connection.close": False})
        self.errors: list[str] = []
        self.high: dict[int, int] = {}  # partition -> next offset, from the delivery reports

    def expand(self, bootstrap: str, total: int) -> None:
        """Add partitions (call with ``pause`` held) and wait until this producer's metadata shows them."""
        from samza_devkit.kafka_helpers import add_partitions

        add_partitions(bootstrap, TOPIC, total)
        deadline = time.monotonic() + 60
        while len(self.producer.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions) < total:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the producer never saw {total} partitions")
            time.sleep(0.2)
        self.partitions = total

    def send(self, records: list[tuple[str, int]]) -> None:
        def on_delivery(err, msg):
            if err is not None:
                self.errors.append(str(err))
            else:
                self.high[msg.partition()] = max(self.high.get(msg.partition(), 0), msg.offset() + 1)

        from confluent_kafka import KafkaError, KafkaException

        for key, seq in records:
            partition = zlib.crc32(key.encode()) % self.partitions
            for attempt in range(300):
                try:
                    self.producer.produce(TOPIC, key=key.encode(), value=f"{key}:{seq}".encode(),
                                          partition=partition, on_delivery=on_delivery)
                    break
                except BufferError:
                    self.producer.poll(0.1)
                except KafkaException as exc:  # a new partition not in the client's topic state yet
                    if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION or attempt == 299:
                        raise
                    self.producer.poll(0.1)
        if self.producer.flush(60) or self.errors:
            raise RuntimeError(f"produce failed: {self.errors[:3]}")


class KinesisProducer(Producer):
    tick_s = 0.5

    def __init__(self, client, keys: list[str], rate: float, seed: int) -> None:
        super().__init__("kinesis-producer", keys, rate, seed)
        self.client = client

    def send(self, records: list[tuple[str, int]]) -> None:
        from samza_devkit.kinesis_helpers import put_records

        put_records(self.client, STREAM, [(key, f"{key}:{seq}".encode()) for key, seq in records])


# ---- broker faults (--replicated) ----------------------------------------------------------------------------------
class BrokerFaults(threading.Thread):
    """SIGKILLs of one node and rolling restarts of all, in turn, every ``every`` seconds (+-25 %) on a
    :class:`samza_devkit.kafka_cluster.KafkaCluster`; ``lock`` is held for the whole of each fault (an expansion
    takes it to wait for every node to be up and in sync)."""

    def __init__(self, cluster, every: float, rng: random.Random, note) -> None:
        super().__init__(name="broker-faults", daemon=True)
        self.cluster = cluster
        self.every = every
        self.rng = rng
        self.note = note
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.done: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        faults = [self.kill_one, self.rolling_restart]
        try:
            for n in range(1_000_000):
                if self.stop_event.wait(self.every * self.rng.uniform(0.75, 1.25)):
                    return
                with self.lock:
                    faults[n % len(faults)]()
        except BaseException as exc:  # noqa: BLE001 - reported by the orchestrator
            self.error = exc
            log(f"broker faults FAILED: {exc!r}")

    def kill_one(self) -> None:
        node = self.rng.choice(sorted(self.cluster.nodes))
        led = [p for p, d in self.cluster.partitions(TOPIC).items() if d["leader"] == node]
        began = time.monotonic()
        self.cluster.kill(node)
        for partition in led:  # started again only once the survivors lead what it led (it was really lost)
            self.cluster.wait_for_leader(TOPIC, partition, not_on=[node])
        self.cluster.start_node(node)
        self.cluster.wait_until_in_sync([TOPIC])
        self.record(f"SIGKILL of Kafka node {node} (leader of {TOPIC} partitions {led}); back in sync "
                    f"{time.monotonic() - began:.1f} s later")

    def rolling_restart(self) -> None:
        began = time.monotonic()
        for node in sorted(self.cluster.nodes):
            self.cluster.stop(node)
            self.cluster.start_node(node)
            self.cluster.wait_until_in_sync([TOPIC])
        self.record(f"rolling restart of Kafka nodes {sorted(self.cluster.nodes)} in "
                    f"{time.monotonic() - began:.1f} s")

    def record(self, text: str) -> None:
        self.done.append(text)
        self.note(text)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(600)


# ---- the driver subprocess ----------------------------------------------------------------------------------------
class Driver:
    def __init__(self, work: Path, args: argparse.Namespace, bootstrap: str, endpoint: str, store: str) -> None:
        self.work = work
        self.args = args
        self.common = ["--work", str(work), "--store", store, "--bootstrap", bootstrap, "--topic", TOPIC,
                       "--kafka-job", KAFKA_JOB, "--endpoint", endpoint, "--stream", STREAM,
                       "--kinesis-job", KINESIS_JOB, "--max-offsets", str(args.max_offsets),
                       "--max-records-per-shard", str(args.max_records_per_shard), "--poll", args.poll]
        self.proc: subprocess.Popen | None = None
        self.runs = 0
        self.log_path: Path | None = None
        self._log_pos = 0
        self.events: list[dict] = []
        self.last_batch: dict[str, int] = {}
        self.failures: list[str] = []

    def start(self, trigger: str) -> None:
        self.runs += 1
        self.log_path = self.work / f"driver-{self.runs:03d}.events"  # JSON lines on stdout; Spark's log: .log
        self._log_pos = 0
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        with open(self.log_path, "wb") as out, open(self.work / f"driver-{self.runs:03d}.log", "wb") as err:
            self.proc = subprocess.Popen([sys.executable, str(DRIVER), *self.common, "--trigger", trigger],
                                         stdout=out, stderr=err, cwd=str(self.work), start_new_session=True,
                                         env=env)

    def progressed(self) -> bool:
        """Whether the current run has finished a micro-batch (kills wait for it, so every run makes progress)."""
        return any(e["event"] == "progress" and e.get("run") == self.runs for e in self.events)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the Python driver, its JVM and every Python worker
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.poll_events()
        self.proc = None

    def poll_events(self) -> list[dict]:
        """New JSON events of the current run (``failed`` ones are also kept in ``failures``)."""
        if self.log_path is None or not self.log_path.exists():
            return []
        new = []
        with open(self.log_path, "rb") as f:
            f.seek(self._log_pos)
            data = f.read()
        cut = data.rfind(b"\n") + 1
        self._log_pos += cut
        for line in data[:cut].decode(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                event["run"] = self.runs
                new.append(event)
                if event["event"] == "progress" and event.get("batchId") is not None:
                    self.last_batch[event["query"]] = event["batchId"]
                if event["event"] == "failed":
                    self.failures.append(f"run {self.runs} ({self.log_path.name}): {event['query']}: "
                                         f"{event['error'][:1500]}")
        self.events.extend(new)
        return new


# ---- startpoints ----------------------------------------------------------------------------------------------------
@dataclass
class WrittenStartpoint:
    source: str  # kafka | kinesis
    partition: int  # Kafka partition or Kinesis slot
    kind: str
    creation_ts: int
    value: int | None
    at_s: float
    applied: list[tuple[int, str, object]] = field(default_factory=list)  # (batch, task, resolved)


def latest_offset_json(checkpoint: Path) -> dict | None:
    offsets = checkpoint / "offsets"
    if not offsets.is_dir():
        return None
    for n in sorted((int(p.name) for p in offsets.iterdir() if p.name.isdigit()), reverse=True):
        lines = (offsets / str(n)).read_text().splitlines()
        if len(lines) >= 3:
            try:
                return json.loads(lines[2])
            except ValueError:
                continue
    return None


def write_startpoint(rng: random.Random, source: str, work: Path, store: str, kafka: KafkaProducer,
                     kafka_hw: dict[int, int], start: float) -> WrittenStartpoint | None:
    from spark_samza_source.core.model import SystemStreamPartition
    from spark_samza_source.core.startpoint import (
        StartpointOldest,
        StartpointSpecific,
        StartpointTimestamp,
        StartpointUpcoming,
    )
    from spark_samza_source.core.startpoint_manager import StartpointManager
    from spark_samza_source.metadata import open_store

    now_ms = int(time.time() * 1000)
    if source == "kafka":
        partition = rng.randrange(kafka.partitions)
        kind = rng.choices(["timestamp", "upcoming", "oldest", "specific"], [45, 20, 10, 25])[0]
        ssp = SystemStreamPartition("kafka", TOPIC, partition)
        job = KAFKA_JOB
    else:
        offset = latest_offset_json(work / "checkpoints" / "kinesis")
        if offset is None:
            return None
        slots = sorted({s["slot"] for s in offset["shards"].values() if s.get("status") != "drained" and "slot" in s})
        if not slots:
            return None
        partition = rng.choice(slots)
        kind = rng.choices(["timestamp", "upcoming", "oldest"], [55, 25, 20])[0]
        ssp = SystemStreamPartition("kinesis", STREAM, partition)
        job = KINESIS_JOB
    value: int | None = None
    if kind == "timestamp":
        value = now_ms - rng.randrange(30_000)
        startpoint = StartpointTimestamp(value, creation_timestamp=now_ms)
    elif kind == "upcoming":
        startpoint = StartpointUpcoming(creation_timestamp=now_ms)
    elif kind == "oldest":
        startpoint = StartpointOldest(creation_timestamp=now_ms)
    else:
        value = max(0, kafka_hw.get(partition, 0) - rng.randrange(600))
        startpoint = StartpointSpecific(str(value), creation_timestamp=now_ms)
    StartpointManager(open_store(store, job)).write(ssp, startpoint)
    return WrittenStartpoint(source, partition, kind, now_ms, value, time.monotonic() - start)


# ---- ground truth, sinks, offset logs ---------------------------------------------------------------------------
@dataclass
class Rec:
    key: str
    value: str
    ts_us: int  # Kafka: record timestamp (ms) * 1000; Kinesis: approximate arrival, microseconds


def kafka_truth(bootstrap: str) -> dict[int, list[Rec]]:
    from confluent_kafka import Consumer, TopicPartition

    from samza_devkit.kafka_helpers import partition_count

    count = partition_count(bootstrap, TOPIC)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-checker", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    out: dict[int, list[Rec]] = {}
    try:
        for p in range(count):
            low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)
            if low != 0:
                raise RuntimeError(f"partition {p} starts at {low}, not 0")
            records: list[Rec] = []
            consumer.assign([TopicPartition(TOPIC, p, 0)])
            while len(records) < high:
                for msg in consumer.consume(10_000, 5.0):
                    if msg.error():
                        continue
                    if msg.offset() != len(records):
                        raise RuntimeError(f"partition {p}: offset {msg.offset()} after {len(records)} records")
                    records.append(Rec(msg.key().decode(), msg.value().decode(), msg.timestamp()[1] * 1000))
            out[p] = records[:high]
    finally:
        consumer.close()
    return out


def kinesis_truth(client) -> tuple[dict[str, list[Rec]], dict[str, dict[str, int]], dict[str, list[str]]]:
    """Per shard: its records in order, sequence number -> index, and its parents."""
    from samza_devkit.kinesis_helpers import list_shards, read_shard_raw

    records: dict[str, list[Rec]] = {}
    index: dict[str, dict[str, int]] = {}
    parents: dict[str, list[str]] = {}
    for shard in list_shards(client, STREAM):
        sid = shard["ShardId"]
        parents[sid] = [p for p in (shard.get("ParentShardId"), shard.get("AdjacentParentShardId")) if p]
        raw = read_shard_raw(client, STREAM, sid)
        records[sid] = [Rec(r["PartitionKey"], r["Data"].decode(),
                            int(r["ApproximateArrivalTimestamp"].timestamp() * 1_000_000)) for r in raw]
        index[sid] = {r["SequenceNumber"]: i for i, r in enumerate(raw)}
    return records, index, parents


@dataclass
class Delivery:
    batch: int
    file_rank: int  # the task's output file within the batch (part-NNNNN)
    row: int
    ssp: object  # Kafka partition (int) or Kinesis shard id (str)
    pos: object  # Kafka offset or Kinesis sequence number (str)
    key: str
    value: str
    task: str


def read_sink(sink: Path, source: str) -> tuple[list[Delivery], set[int], int]:
    """Every committed row, with its batch (``_spark_metadata/<batch>``); also the committed batch ids and the
    number of Parquet files in the directory that no committed batch lists (left by killed attempts)."""
    import pyarrow.parquet as pq

    meta = sink / "_spark_metadata"
    listed: set[str] = set()
    deliveries: list[Delivery] = []
    batches: set[int] = set()
    for entry in sorted((p for p in meta.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        batch = int(entry.name)
        batches.add(batch)
        lines = entry.read_text().splitlines()
        files = [json.loads(line) for line in lines[1:] if line.strip()]
        # the file sink writes its files straight into the sink directory: resolve them there (the work directory
        # may have been moved since)
        paths = sorted(sink / Path(unquote(urlparse(f["path"]).path)).name for f in files
                       if f.get("action", "add") == "add")
        for rank, path in enumerate(paths):
            listed.add(path.name)
            table = pq.read_table(path)
            cols = table.to_pydict()
            n = table.num_rows
            if source == "kafka":
                for i in range(n):
                    deliveries.append(Delivery(batch, rank, i, cols["partition"][i], cols["offset"][i],
                                               cols["key"][i], cols["value"][i], cols["task"][i]))
            else:
                for i in range(n):
                    deliveries.append(Delivery(batch, rank, i, cols["shardId"][i], cols["sequenceNumber"][i],
                                               cols["partitionKey"][i], cols["data"][i], cols["task"][i]))
    orphans = sum(1 for p in sink.glob("*.parquet") if p.name not in listed)
    return deliveries, batches, orphans


def offset_log(checkpoint: Path) -> dict[int, dict]:
    out = {}
    for path in (checkpoint / "offsets").iterdir():
        if path.name.isdigit():
            lines = path.read_text().splitlines()
            if len(lines) >= 3:
                out[int(path.name)] = json.loads(lines[2])
    return dict(sorted(out.items()))


# ---- the checker ------------------------------------------------------------------------------------------------
@dataclass
class Rebase:
    ssp: object
    target: int  # index in the log of that partition / shard
    reason: str
    startpoint: tuple[int, int] | None = None  # (Kafka partition or Kinesis slot, creation timestamp)
    task: str = ""
    resolved: object = None


@dataclass
class SourceReport:
    name: str
    produced_acked: int = 0
    in_log: int = 0
    ssps: int = 0
    batches: int = 0
    deliveries: int = 0
    unique: int = 0
    redelivered: int = 0
    replay_windows: int = 0
    replay_records: int = 0
    skip_windows: int = 0
    skipped: int = 0
    lost: int = 0
    orphan_files: int = 0
    keys: int = 0
    order_pairs: int = 0
    violations: list[str] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)

    def violate(self, kind: str, detail: str) -> None:
        self.counts[kind] += 1
        if self.counts[kind] <= MAX_EXAMPLES:
            self.violations.append(f"{kind}: {detail}")


def check_source(report: SourceReport, truth: dict, index_of, deliveries: list[Delivery], committed: set[int],
                 rebases: dict[int, list[Rebase]], task_of_ssp=None) -> None:
    """The cursor walk (exactly once modulo startpoints) and per-key order; see the module documentation."""
    report.in_log = sum(len(v) for v in truth.values())
    report.ssps = len(truth)
    report.batches = len(committed)
    report.deliveries = len(deliveries)
    by_batch: dict[int, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        by_batch[d.batch].append(d)
    for batch in sorted(set(rebases) - committed):
        report.violate("batch in the offset log but not in the sink", f"batch {batch}")
    cursor: dict[object, int] = defaultdict(int)
    passed: dict[object, int] = defaultdict(int)  # furthest position the cursor has passed (fresh frontier)
    seen: dict[object, Counter] = defaultdict(Counter)
    skip_windows: dict[object, list[tuple[int, int]]] = defaultdict(list)
    fresh: list[tuple[tuple[int, int, int], str, int, int]] = []  # (order, key, seq, batch)
    for batch in sorted(committed | set(rebases)):
        for rb in rebases.get(batch, []):
            if rb.ssp is None:
                continue
            here = cursor[rb.ssp]
            if rb.reason != "startpoint":
                if rb.target != here:
                    report.violate(f"rebase {rb.reason} moved the position",
                                   f"batch {batch} {rb.ssp}: from {here} to {rb.target}")
            elif rb.target < here:
                report.replay_windows += 1
                report.replay_records += here - rb.target
            elif rb.target > here:
                report.skip_windows += 1
                skip_windows[rb.ssp].append((here, rb.target))
            cursor[rb.ssp] = rb.target
            passed[rb.ssp] = max(passed[rb.ssp], rb.target)
        rows: dict[object, list[Delivery]] = defaultdict(list)
        for d in by_batch.get(batch, []):
            rows[d.ssp].append(d)
        for ssp, items in rows.items():
            items.sort(key=lambda d: (d.file_rank, d.row))
            log_records = truth.get(ssp)
            if log_records is None:
                report.violate("rows of an unknown partition/shard", f"batch {batch} {ssp}")
                continue
            if task_of_ssp is not None and any(d.task != task_of_ssp(ssp) for d in items):
                report.violate("row in the wrong task", f"batch {batch} {ssp}: {sorted({d.task for d in items})}")
            positions = []
            for d in items:
                idx = index_of(ssp, d.pos)
                if idx is None or idx >= len(log_records):
                    report.violate("row not in the log", f"batch {batch} {ssp} position {d.pos}")
                    continue
                rec = log_records[idx]
                if (rec.key, rec.value) != (d.key, d.value):
                    report.violate("row differs from the log",
                                   f"batch {batch} {ssp}@{d.pos}: {d.key}/{d.value} vs {rec.key}/{rec.value}")
                positions.append(idx)
                seen[ssp][idx] += 1
                if idx >= passed[ssp]:
                    key, _, seq = d.value.rpartition(":")
                    fresh.append(((batch, d.file_rank, d.row), key, int(seq), batch))
                passed[ssp] = max(passed[ssp], idx + 1)
            if not positions:
                continue
            expected = list(range(cursor[ssp], cursor[ssp] + len(positions)))
            if positions != expected:
                first = next((i for i, (a, b) in enumerate(zip(positions, expected, strict=True)) if a != b), 0)
                report.violate("batch does not continue the cursor contiguously",
                               f"batch {batch} {ssp}: cursor {cursor[ssp]}, read {positions[0]}..{positions[-1]} "
                               f"({len(positions)} rows; first difference at row {first}: {positions[first]} "
                               f"instead of {expected[first]})")
            cursor[ssp] = positions[-1] + 1
    for ssp, records in sorted(truth.items(), key=lambda kv: str(kv[0])):
        if cursor[ssp] != len(records):
            report.violate("not read to the end of the log", f"{ssp}: cursor {cursor[ssp]} of {len(records)}")
        counts = seen[ssp]
        for idx in range(len(records)):
            if counts[idx] == 0:
                if any(lo <= idx < hi for lo, hi in skip_windows[ssp]):
                    report.skipped += 1
                else:
                    report.lost += 1
                    report.violate("record never delivered", f"{ssp} position {idx}: {records[idx].value}")
        report.unique += len(counts)
    report.redelivered = report.deliveries - report.unique

    # per-key order over fresh deliveries
    fresh.sort()
    last: dict[str, tuple[int, int, int]] = {}  # key -> (seq, batch, file_rank)
    for order, key, seq, batch in fresh:
        prev = last.get(key)
        if prev is not None:
            report.order_pairs += 1
            if seq <= prev[0]:
                report.violate("per-key order", f"key {key}: seq {seq} (batch {batch}) after seq {prev[0]} "
                                                f"(batch {prev[1]})")
            elif prev[1] == batch and prev[2] != order[1]:
                report.violate("key in two tasks of one batch", f"key {key} batch {batch}")
        last[key] = (seq, batch, order[1])
    report.keys = len(last)


def kafka_rebases(offsets: dict[int, dict], truth: dict[int, list[Rec]],
                  report: SourceReport) -> dict[int, list[Rebase]]:
    out: dict[int, list[Rebase]] = defaultdict(list)
    for batch, offset in offsets.items():
        for task, by_ssp in offset.get("rebases", {}).items():
            for key, rebase in by_ssp.items():
                partition = int(key.rsplit(".", 1)[1])
                sp = None
                if rebase["reason"] == "startpoint":
                    sp = (partition, rebase["creationTimestamp"])
                elif rebase["reason"] == "data-loss":
                    report.violate("data-loss rebase", f"batch {batch} {key}: {rebase}")
                target = rebase["position"]
                if not 0 <= target <= len(truth.get(partition, ())):
                    report.violate("rebase outside the log", f"batch {batch} {key}: {rebase}")
                out[batch].append(Rebase(partition, target, rebase["reason"], sp, task, target))
    return out


def kinesis_rebases(offsets: dict[int, dict], truth: dict[str, list[Rec]], index: dict[str, dict[str, int]],
                    report: SourceReport) -> dict[int, list[Rebase]]:
    out: dict[int, list[Rebase]] = defaultdict(list)
    for batch, offset in offsets.items():
        for task, by_ssp in offset.get("startpoints", {}).items():
            for key, applied in by_ssp.items():
                slot = int(key.rsplit(".", 1)[1])
                if not applied["shards"]:  # a slot without shards: applied to nothing
                    out[batch].append(Rebase(None, 0, "startpoint", (slot, applied["creationTimestamp"]), task))
                for sid, pos in applied["shards"].items():
                    records = truth.get(sid, [])
                    kind = pos["type"]
                    if kind == "TRIM_HORIZON":
                        target = 0
                    elif kind == "AT_TIMESTAMP":
                        ts_us = pos["timestampMs"] * 1000
                        target = next((i for i, r in enumerate(records) if r.ts_us >= ts_us), len(records))
                    elif kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
                        target = index.get(sid, {}).get(pos["sequence"])
                        if target is None:
                            report.violate("startpoint at an unknown sequence number", f"batch {batch} {sid} {pos}")
                            continue
                        target += kind == "AFTER_SEQUENCE_NUMBER"
                    else:
                        report.violate("startpoint position of an unexpected type", f"batch {batch} {sid} {pos}")
                        continue
                    out[batch].append(Rebase(sid, target, "startpoint", (slot, applied["creationTimestamp"]), task,
                                             pos))
    return out


def check_startpoints(report: SourceReport, written: list[WrittenStartpoint], rebases: dict[int, list[Rebase]],
                      truth: dict, remaining: set[tuple[int, int]]) -> Counter:
    stats: Counter = Counter()
    by_id = {(w.partition, w.creation_ts): w for w in written}
    applied_in: dict[tuple[int, int], set[tuple[int, str]]] = defaultdict(set)
    for batch, items in rebases.items():
        for rb in items:
            if rb.startpoint is None:
                continue
            w = by_id.get(rb.startpoint)
            if w is None:
                report.violate("applied startpoint nobody wrote", f"batch {batch}: {rb}")
                continue
            applied_in[rb.startpoint].add((batch, rb.task))
            w.applied.append((batch, rb.task, rb.resolved))
            if rb.ssp is None:
                stats["applied to a slot without shards"] += 1
                continue
            records = truth.get(rb.ssp, [])
            ok = True
            if report.name == "kafka":
                if w.kind == "oldest":
                    ok = rb.target == 0
                elif w.kind == "specific":
                    ok = rb.target == min(w.value, len(records)) or rb.target == w.value
                elif w.kind == "timestamp":
                    first = next((i for i, r in enumerate(records) if r.ts_us >= w.value * 1000), len(records))
                    ok = rb.target == first or (first == len(records) and rb.target <= len(records))
            else:
                pos = rb.resolved
                if w.kind == "oldest":
                    ok = pos["type"] == "TRIM_HORIZON"
                elif w.kind == "timestamp":
                    ok = pos == {"type": "AT_TIMESTAMP", "timestampMs": w.value}
                elif w.kind == "upcoming":
                    ok = pos["type"] == "AT_TIMESTAMP" and pos["timestampMs"] >= w.creation_ts
            if not ok:
                report.violate("startpoint resolved wrongly", f"{w.kind} {w.value} on {w.partition} "
                                                               f"(created {w.creation_ts}) -> {rb.resolved} in "
                                                               f"batch {batch} for {rb.ssp}")
    for sp_id, places in applied_in.items():
        tasks = Counter(task for _, task in places)  # a Kinesis slot holding several shards: one entry per shard
        if any(n > 1 for n in tasks.values()):
            report.violate("startpoint applied twice", f"{sp_id}: batches {sorted(places)}")
    for w in written:
        stats["written"] += 1
        stats[f"written {w.kind}"] += 1
        if w.applied:
            stats["applied"] += 1
            if (w.partition, w.creation_ts) not in remaining:
                stats["applied, then deleted"] += 1
            continue
        newer = [o for o in written if o.partition == w.partition and o.creation_ts > w.creation_ts]
        if (w.partition, w.creation_ts) in remaining:
            stats["still in the store"] += 1
        elif newer:
            stats["superseded by a newer one"] += 1
        else:
            stats["never applied"] += 1
            report.violate("startpoint never applied", f"{w.kind} on {w.partition} created {w.creation_ts}")
    stats["left in the store"] = len(remaining)
    return stats


def remaining_startpoints(store: str, job: str) -> set[tuple[int, int]]:
    from spark_samza_source.core.startpoint_manager import StartpointManager
    from spark_samza_source.metadata import open_store

    return {(e.ssp.partition, e.startpoint.creation_timestamp)
            for e in StartpointManager(open_store(store, job)).list()}


def verify(work: Path) -> int:
    """Check a finished run's work directory (``state.json``, sinks, checkpoints, store); print the summary."""
    log("verifying ...")
    state = json.loads((work / "state.json").read_text())
    store = f"file://{work}/metadata"
    written = [WrittenStartpoint(**{**w, "applied": []}) for w in state["written"]]
    k_truth = {int(p): [Rec(*r) for r in recs] for p, recs in state["kafka_truth"].items()}
    s_truth = {sid: [Rec(*r[1:]) for r in recs] for sid, recs in state["kinesis_truth"].items()}
    s_index = {sid: {r[0]: i for i, r in enumerate(recs)} for sid, recs in state["kinesis_truth"].items()}
    s_parents = state["kinesis_parents"]
    unexpected_exits, failures = state["unexpected_exits"], state["failures"]
    reports = []

    kr = SourceReport("kafka", produced_acked=state["produced"]["kafka"])
    k_written = [w for w in written if w.source == "kafka"]
    k_deliveries, k_committed, kr.orphan_files = read_sink(work / "sink" / "kafka", "kafka")
    k_rebases = kafka_rebases(offset_log(work / "checkpoints" / "kafka"), k_truth, kr)
    check_source(kr, k_truth, lambda ssp, pos: pos, k_deliveries, k_committed, k_rebases,
                 task_of_ssp=lambda p: f"Partition {p % 2}")
    k_sp = check_startpoints(kr, k_written, k_rebases, k_truth, remaining_startpoints(store, KAFKA_JOB))
    reports.append((kr, k_sp))

    sr = SourceReport("kinesis", produced_acked=state["produced"]["kinesis"])
    s_written = [w for w in written if w.source == "kinesis"]
    s_deliveries, s_committed, sr.orphan_files = read_sink(work / "sink" / "kinesis", "kinesis")
    s_rebases = kinesis_rebases(offset_log(work / "checkpoints" / "kinesis"), s_truth, s_index, sr)
    check_source(sr, s_truth, lambda sid, seq: s_index.get(sid, {}).get(seq), s_deliveries, s_committed, s_rebases)
    s_sp = check_startpoints(sr, s_written, s_rebases, s_truth, remaining_startpoints(store, KINESIS_JOB))
    # parents before children (explicitly, besides per-key order): a child's first row comes in a later batch
    # than the first delivery of its parent's last record
    drained_in: dict[str, int] = {}
    first_batch: dict[str, int] = {}
    for d in sorted(s_deliveries, key=lambda d: d.batch):
        first_batch.setdefault(d.ssp, d.batch)
        if s_index[d.ssp].get(d.pos) == len(s_truth[d.ssp]) - 1:
            drained_in.setdefault(d.ssp, d.batch)
    for sid, parents in s_parents.items():
        for parent in parents:
            if sid in first_batch and parent in drained_in and first_batch[sid] <= drained_in[parent]:
                sr.violate("child read before its parent was drained",
                           f"{sid} first read in batch {first_batch[sid]}, parent {parent} drained in batch "
                           f"{drained_in[parent]}")
    shard_tasks = defaultdict(set)
    for d in s_deliveries:
        shard_tasks[d.ssp].add(d.task)
    reports.append((sr, s_sp))

    violations = 0
    print()
    print("=" * 100)
    print(f"SOAK SUMMARY  ({state['minutes']:g} min of production, seed {state['seed']}, work dir {work})")
    print("=" * 100)
    print(f"driver runs: {state['runs']} ({state['kills']} SIGKILLs during the run + 1 before the AvailableNow "
          f"catch-up); unexpected exits: {len(unexpected_exits)}; query failures: {len(failures)}")
    print("reshards: Kafka expansions 2 -> 4 -> 8 (2), Kinesis splits 1, merges 1")
    if state.get("broker_faults") is not None:
        print(f"Kafka on 3 replicated nodes; broker faults {len(state['broker_faults'])}: "
              + "; ".join(state["broker_faults"]))
    lineage = ", ".join(f"{sid[-3:]}<-{'+'.join(p[-3:] for p in ps)}" if ps else sid[-3:]
                        for sid, ps in s_parents.items())
    print(f"final partitions/shards: Kafka {len(k_truth)} partitions; Kinesis {len(s_truth)} shards ({lineage})")
    print("Kinesis shard -> tasks that read it: "
          + ", ".join(f"{sid[-3:]}: {sorted(t)}" for sid, t in sorted(shard_tasks.items())))
    for rep, sp in reports:
        print("-" * 100)
        print(f"[{rep.name}] produced (acknowledged) {rep.produced_acked}, in the log {rep.in_log} "
              f"({rep.ssps} {'partitions' if rep.name == 'kafka' else 'shards'}), committed batches "
              f"{rep.batches}, orphan Parquet files of killed attempts {rep.orphan_files}")
        print(f"[{rep.name}] rows in the sink {rep.deliveries}: distinct records {rep.unique}, redelivered "
              f"{rep.redelivered}; startpoint replay windows {rep.replay_windows} ({rep.replay_records} "
              f"records), skip windows {rep.skip_windows} ({rep.skipped} records never delivered, as asked)")
        print(f"[{rep.name}] lost (never delivered, in no skip window): {rep.lost}; per-key order: "
              f"{rep.keys} keys, {rep.order_pairs} consecutive fresh pairs checked")
        print(f"[{rep.name}] startpoints: " + ", ".join(f"{k} {v}" for k, v in sorted(sp.items())))
        if rep.produced_acked != rep.in_log:
            rep.violate("log differs from what was acknowledged",
                        f"acknowledged {rep.produced_acked}, log holds {rep.in_log}")
        status = "OK" if not rep.counts else "VIOLATIONS " + ", ".join(f"{k}: {v}" for k, v in rep.counts.items())
        print(f"[{rep.name}] {status}")
        for v in rep.violations:
            print(f"    {v}")
        violations += sum(rep.counts.values())
    for text in unexpected_exits + failures:
        print(f"[driver] {text}")
    violations += len(unexpected_exits) + len(failures)
    print("-" * 100)
    print("timeline:")
    for line in state["timeline"]:
        print(f"    {line}")
    print("=" * 100)
    print(f"VERDICT: {'PASS' if violations == 0 else f'FAIL ({violations} violations)'}")
    return 0 if violations == 0 else 1


# ---- the run ---------------------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="production and chaos phase (default 20)")
    parser.add_argument("--kill-every", type=float, default=150.0, help="seconds between driver kills (+-25%%)")
    parser.add_argument("--startpoint-every", type=float, default=5.0, help="seconds between startpoints")
    parser.add_argument("--rate", type=float, default=80.0, help="records/s per source (default 80)")
    parser.add_argument("--keys", type=int, default=64, help="distinct keys per source")
    parser.add_argument("--trigger-ms", type=int, default=2000, help="processing-time trigger of both queries")
    parser.add_argument("--max-offsets", type=int, default=3000, help="samza-kafka maxOffsetsPerTrigger")
    parser.add_argument("--max-records-per-shard", type=int, default=2000, help="samza-kinesis maxRecordsPerShard")
    parser.add_argument("--poll", default="2s", help="startpoint.pollInterval of both queries")
    parser.add_argument("--final-timeout", type=float, default=1200.0, help="seconds for the AvailableNow catch-up")
    parser.add_argument("--replicated", action="store_true",
                        help="Kafka on three replicated nodes, with broker kills and rolling restarts")
    parser.add_argument("--broker-fault-every", type=float, default=120.0,
                        help="--replicated: seconds between broker faults (+-25%%)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--work-dir", default=None, help="default: a new temporary directory (kept)")
    parser.add_argument("--verify-only", metavar="WORK_DIR", default=None,
                        help="only check the work directory of a finished run again (its state.json)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.verify_only:
        return verify(Path(args.verify_only))
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    rng = random.Random(seed)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    import spark_samza_source
    from samza_devkit import kinesis_helpers as kh
    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_cluster import KafkaCluster
    from samza_devkit.kafka_helpers import create_topic
    from samza_devkit.moto_server import MotoServerProcess

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="samza-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    store = f"file://{work}/metadata"
    duration = args.minutes * 60
    log(f"product code {os.path.dirname(spark_samza_source.__file__)}")
    log(f"work dir {work}; seed {seed}; {args.minutes:g} min, kill every ~{args.kill_every:g}s, startpoint every "
        f"{args.startpoint_every:g}s, {args.rate:g} records/s per source, load average {os.getloadavg()[0]:.1f}")

    broker = KafkaCluster(work / "cluster") if args.replicated else KafkaDevBroker(data_dir=work / "broker")
    faults: BrokerFaults | None = None
    moto = MotoServerProcess()
    driver: Driver | None = None
    producers: list[Producer] = []
    timeline: list[str] = []
    written: list[WrittenStartpoint] = []
    kills = 0
    unexpected_exits: list[str] = []
    started = time.monotonic()

    def note(text: str) -> None:
        line = f"t={time.monotonic() - started:7.1f}s {text}"
        timeline.append(line)
        log(text)

    try:
        broker.start()
        endpoint = moto.start()
        bootstrap = broker.bootstrap_servers
        client = kh.kinesis_client(endpoint)
        if args.replicated:
            broker.create_topic(TOPIC, 2)  # replication factor 3, min.insync.replicas=2
        else:
            create_topic(bootstrap, TOPIC, 2)
        kh.create_stream(client, STREAM, 2)
        note(f"{'3 replicated Kafka nodes' if args.replicated else 'broker'} {bootstrap}, topic {TOPIC} "
             f"(2 partitions); moto {endpoint}, stream {STREAM} (2 shards)")

        keys = [f"k{i:03d}" for i in range(args.keys)]
        kafka = KafkaProducer(bootstrap, keys, args.rate, rng.randrange(2**31), 2)
        kinesis = KinesisProducer(kh.kinesis_client(endpoint), keys, args.rate, rng.randrange(2**31))
        producers = [kafka, kinesis]
        for p in producers:
            p.start()

        if args.replicated:
            faults = BrokerFaults(broker, args.broker_fault_every, random.Random(rng.randrange(2**31)), note)
            faults.start()
        no_fault = faults.lock if faults is not None else contextlib.nullcontext()
        driver = Driver(work, args, bootstrap, endpoint, store)
        trigger = f"processing:{args.trigger_ms}"
        driver.start(trigger)
        note(f"driver run {driver.runs} started (pid {driver.proc.pid})")
        phase_start = time.monotonic()
        schedule = {"expand-1": duration / 3, "split": duration / 3 + 5, "expand-2": 2 * duration / 3,
                    "merge": 2 * duration / 3 + 5}
        next_kill = args.kill_every * rng.uniform(0.75, 1.25)
        next_sp = args.startpoint_every
        next_status = 30.0
        sp_sources = ["kafka", "kinesis"]
        while True:
            elapsed = time.monotonic() - phase_start
            if elapsed >= duration:
                break
            for p in producers:
                if p.error is not None:
                    raise RuntimeError(f"{p.name} failed: {p.error!r}")
            if faults is not None and faults.error is not None:
                raise RuntimeError(f"a broker fault failed: {faults.error!r}")
            # reshards
            if "expand-1" in schedule and elapsed >= schedule["expand-1"]:
                del schedule["expand-1"]
                with no_fault, kafka.pause:
                    kafka.expand(bootstrap, 4)
                note("Kafka expansion 2 -> 4 partitions")
            if "split" in schedule and elapsed >= schedule["split"]:
                del schedule["split"]
                with kinesis.pause:
                    kh.split_shard(client, STREAM, "shardId-000000000000")
                note("Kinesis split of shardId-000000000000 -> shardId-000000000002 + shardId-000000000003")
            if "expand-2" in schedule and elapsed >= schedule["expand-2"]:
                del schedule["expand-2"]
                with no_fault, kafka.pause:
                    kafka.expand(bootstrap, 8)
                note("Kafka expansion 4 -> 8 partitions")
            if "merge" in schedule and elapsed >= schedule["merge"]:
                del schedule["merge"]
                with kinesis.pause:
                    shards = [s for s in kh.list_shards(client, STREAM)
                              if "EndingSequenceNumber" not in s["SequenceNumberRange"]]
                    shards.sort(key=lambda s: int(s["HashKeyRange"]["StartingHashKey"]))
                    pairs = [(a, b) for a, b in zip(shards, shards[1:], strict=False)
                             if a.get("ParentShardId") != b.get("ParentShardId")] or list(zip(shards, shards[1:],
                                                                                              strict=False))
                    a, b = pairs[0]
                    kh.merge_shards(client, STREAM, a["ShardId"], b["ShardId"])
                note(f"Kinesis merge of {a['ShardId']} + {b['ShardId']}")
            # startpoints
            if elapsed >= next_sp:
                next_sp += args.startpoint_every
                w = write_startpoint(rng, rng.choice(sp_sources), work, store, kafka, dict(kafka.high), phase_start)
                if w is not None:
                    written.append(w)
            # driver kills
            if elapsed >= next_kill and driver.progressed():
                driver.kill()
                kills += 1
                note(f"SIGKILL driver run {driver.runs} (batches reached: {dict(driver.last_batch)})")
                driver.start(trigger)
                next_kill = elapsed + args.kill_every * rng.uniform(0.75, 1.25)
            elif not driver.alive():
                driver.poll_events()
                unexpected_exits.append(f"run {driver.runs} exited by itself with code {driver.proc.returncode} "
                                        f"({driver.log_path.name})")
                note(f"driver run {driver.runs} EXITED by itself (code {driver.proc.returncode}): restarting")
                driver.start(trigger)
            driver.poll_events()
            if elapsed >= next_status:
                next_status += 60
                log(f"t={elapsed:6.0f}s produced kafka {kafka.produced} kinesis {kinesis.produced}; driver run "
                    f"{driver.runs}, last batches {dict(driver.last_batch)}; startpoints {len(written)}; "
                    f"kills {kills}; load {os.getloadavg()[0]:.1f}")
            time.sleep(0.25)

        # ---- the end: stop producing, catch up -----------------------------------------------------------
        if faults is not None:
            faults.stop()  # the fault in progress finishes: every node up and in sync
            if faults.error is not None:
                raise RuntimeError(f"a broker fault failed: {faults.error!r}")
        for p in producers:
            p.stop()
        if any(p.error for p in producers):
            raise RuntimeError(f"producer failed: {[repr(p.error) for p in producers if p.error]}")
        note(f"producers stopped: kafka {kafka.produced}, kinesis {kinesis.produced} records")
        driver.kill()
        note(f"final SIGKILL of driver run {driver.runs} (batches reached: {dict(driver.last_batch)})")
        driver.start("available-now")
        note(f"driver run {driver.runs}: Trigger.AvailableNow catch-up")
        deadline = time.monotonic() + args.final_timeout
        while driver.alive() and time.monotonic() < deadline:
            driver.poll_events()
            time.sleep(1)
        driver.poll_events()
        if driver.alive():
            driver.kill()
            unexpected_exits.append(f"AvailableNow run did not finish within {args.final_timeout:.0f}s")
        elif driver.proc.returncode != 0:
            unexpected_exits.append(f"AvailableNow run exited with code {driver.proc.returncode}")
        note(f"catch-up finished (exit {driver.proc.returncode if driver.proc else 'killed'}); last batches "
             f"{dict(driver.last_batch)}")

        # ---- ground truth, saved with the run's facts so that --verify-only can check the work dir again ------
        log("reading the ground truth ...")
        state = {
            "seed": seed, "minutes": args.minutes, "runs": driver.runs, "kills": kills,
            "broker_faults": faults.done if faults is not None else None,
            "unexpected_exits": unexpected_exits, "failures": driver.failures, "timeline": timeline,
            "produced": {"kafka": kafka.produced, "kinesis": kinesis.produced},
            "written": [asdict(w) for w in written],
            "kafka_truth": {str(p): [[r.key, r.value, r.ts_us] for r in recs]
                            for p, recs in kafka_truth(bootstrap).items()},
        }
        s_truth, s_index, s_parents = kinesis_truth(client)
        state["kinesis_truth"] = {sid: [[seq, r.key, r.value, r.ts_us] for seq, r in
                                        zip(sorted(s_index[sid], key=s_index[sid].get), recs, strict=True)]
                                  for sid, recs in s_truth.items()}
        state["kinesis_parents"] = s_parents
        (work / "state.json").write_text(json.dumps(state))
    finally:
        for p in producers:
            p.stop_event.set()
        if faults is not None:
            faults.stop_event.set()
        if driver is not None and driver.alive():
            driver.kill()
        moto.stop()
        broker.close() if args.replicated else broker.stop()
    return verify(work)


if __name__ == "__main__":
    sys.exit(main())
