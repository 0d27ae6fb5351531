"""samza-kafka on a real Spark standalone cluster: workers on hosts of their own, executors lost, links cut.

One cluster for the module (``spark_cluster``: a master, two two-core workers each in a network namespace of
its own; Apache Kafka on an address of its own on the cluster's bridge). Every query is a driver process
(``samza_devkit.fault_driver --master spark://...``) writing Spark's Parquet sink, an idempotent sink (exactly once
through its ``_spark_metadata`` log); each test checks that sink, read through that log, against every write the
broker acknowledged: each record exactly once.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from samza_devkit.checkpoint_log import committed_batches, offset_log, startpoint_rebases
from samza_devkit.cluster_tasks import kafka_clients_per_process, kill_the_executor_of_a_task_in_flight, marked
from samza_devkit.fault_harness import exactly_once, startpoints_left, wait_for
from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from samza_devkit.key_order import ahead_of_key_order, keyed_rounds
from samza_devkit.spark_cluster import CutUnsupported, committed_parquet_rows, committed_parquet_rows_by_batch
from spark_samza_source.core.jobmodel import JobModel
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointSpecific
from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.metadata import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]


class Job:
    """One job's paths (store, checkpoint, sink, markers) under ``root``, and the driver arguments naming them."""

    def __init__(self, root: Path, bootstrap: str, topic: str) -> None:
        self.root, self.bootstrap, self.topic = root, bootstrap, topic
        self.name = f"cl-{uuid.uuid4().hex[:6]}"
        self.store = f"file://{root}/metadata"
        self.checkpoint, self.sink = root / "ck", root / "sink"

    def args(self, run: str, *extra: str, checkpoint: Path | None = None, sink: Path | None = None) -> list[str]:
        return ["--bootstrap", self.bootstrap, "--topic", self.topic, "--job", self.name, "--store", self.store,
                "--checkpoint", str(checkpoint or self.checkpoint), "--sink", str(sink or self.sink),
                "--markers", str(self.markers(run)), *extra]

    def markers(self, run: str) -> Path:
        return self.root / f"inflight-{run}"

    def sink_counts(self) -> Counter:
        return Counter(committed_parquet_rows(self.sink, ["partition", "offset"]))


def _topic(bootstrap: str, prefix: str, partitions: int, per_partition: int):
    topic = create_topic(bootstrap, unique_topic(prefix), partitions)
    acks = produce(bootstrap, topic, [(f"k{i % 5}".encode(), f"{p}-{i}".encode(), None, p)
                                      for i in range(per_partition) for p in range(partitions)])
    return topic, acks


def test_executor_sigkilled_mid_read_task_retried_on_another_worker_exactly_once(spark_cluster, tmp_path):
    """An executor JVM is SIGKILLed (as its host dying) while its task is in the middle of a read; Spark retries
    the task and the query ends with every acknowledged record in the sink exactly once.

    Where the retry runs is the scheduler's to choose: the other worker, or the executor the lost one's Worker
    starts in its place (standalone mode replaces a lost executor at once; with one core per executor, whichever
    is free first takes the retry, so asserting a host would assert a race).

    The slow stage between source and sink holds each task attempt 3 s after its first rows, with the source's
    read generator suspended mid-partition (``maxRowsPerArrowBatch`` 50 of 200 rows); the kill comes then.
    """
    cluster = spark_cluster.cluster
    topic, acks = _topic(spark_cluster.bootstrap, "exkill", 2, 400)
    job = Job(tmp_path, spark_cluster.bootstrap, topic)
    driver = cluster.driver("exkill", None, *job.args("1", "--max-offsets", "400", "--slow-ms", "2000"))

    mark = kill_the_executor_of_a_task_in_flight(cluster, job.markers("1"))
    assert driver.wait(240) == 0, driver.log_tail()
    assert driver.has("done")
    assert exactly_once(job.sink_counts(), [(a.partition, a.offset) for a in acks]) == []
    stage, partition, _ = mark["task"]
    retries = [m for m in marked(job.markers("1")) if m["task"][:2] == [stage, partition] and m["task"][2] > 0]
    assert retries, f"task {partition} of stage {stage} was not retried: {marked(job.markers('1'))}"
    log = offset_log(job.checkpoint)
    assert len(log) == 2 and committed_batches(job.checkpoint) == set(log)  # 800 records, 400 a batch


def test_worker_cut_off_from_the_broker_past_the_poll_timeout_then_healed_exactly_once(spark_cluster, tmp_path):
    """One worker loses the broker (its packets to the broker's address silently dropped: connections time out,
    nothing is refused) before the query starts, for longer than ``kafkaConsumer.pollTimeoutMs``: a read there
    fails within that timeout (never hangs) and Spark retries it; once a read has failed there the link is healed,
    and the worker's executor, with its cached consumer, reads again. Every acknowledged record reaches the sink
    exactly once."""
    cluster = spark_cluster.cluster
    topic, acks = _topic(spark_cluster.bootstrap, "cut", 3, 200)
    job = Job(tmp_path, spark_cluster.bootstrap, topic)
    cut_host = cluster.worker_hosts[0]
    try:
        cluster.cut(cut_host, spark_cluster.broker_address)
    except CutUnsupported as exc:
        pytest.skip(str(exc))
    cut_address = cluster.address(cut_host)
    try:
        driver = cluster.driver("cut", None, *job.args("1", "--max-offsets", "300", "--slow-ms", "1", "--source-option",
                                                       "kafkaConsumer.pollTimeoutMs=4000"))

        def a_read_failed_on_the_cut_host():
            text = driver.log_path.read_text(errors="replace")
            return [line for line in text.splitlines() if "Lost task" in line and f"({cut_address}" in line]

        wait_for(a_read_failed_on_the_cut_host, timeout=180, interval=0.5,
                 what=f"a task on {cut_host} failing while cut off")
        assert "no Kafka record received for 4 s (option 'kafkaConsumer.pollTimeoutMs')" in \
            driver.log_path.read_text(errors="replace"), driver.log_tail(60)
    finally:
        cluster.heal(cut_host, spark_cluster.broker_address)
        healed_at = len(marked(job.markers("1")))
    assert driver.wait(240) == 0, driver.log_tail()
    # the slow stage (1 ms) marks every task attempt that got rows: the healed worker read again
    assert cut_host in {m["host"] for m in marked(job.markers("1"))[healed_at:]}, marked(job.markers("1"))
    assert exactly_once(job.sink_counts(), [(a.partition, a.offset) for a in acks]) == []
    log = offset_log(job.checkpoint)
    assert len(log) == 2 and committed_batches(job.checkpoint) == set(log)  # 600 records, 300 a batch


def test_driver_sigkilled_restarted_on_another_host_with_a_startpoint_and_an_intruder_refused(
        spark_cluster, tmp_path):
    """The driver (host d0) is SIGKILLed while batch 0 is in flight; while it is down a Startpoint moves partition
    0 forward; the driver restarts from its checkpoint on another host (d1). It replays batch 0 exactly, applies
    the Startpoint once in the next batch, and deletes it. While it runs, a second query with the same
    ``job.name`` (its own checkpoint) started from a third host (the root namespace) is refused by the job lease,
    and the first reads on unharmed: the sink holds batch 0's records, partition 0 from the Startpoint on, and all
    of partition 1, each exactly once, including records produced after the refusal.

    The restarted driver and the intruder start their JVMs while the first runs (``--start-file``): their queries
    start only when the test says, after the kill and after the restarted query's first batch respectively. The first
    and the restarted driver each have an executor on each worker.
    """
    cluster = spark_cluster.cluster
    topic, acks = _topic(spark_cluster.bootstrap, "drv", 2, 300)
    job = Job(tmp_path, spark_cluster.bootstrap, topic)
    go_second, go_intruder, stop = tmp_path / "start-2", tmp_path / "start-x", tmp_path / "stop-2"
    first = cluster.driver("drv-1", "d0", *job.args("1", "--max-offsets", "200", "--slow-ms", "2000",
                                                    "--trigger", "processing:200"))
    # the others once the first has its executors (one core on each worker): they take the other two cores
    wait_for(lambda: first.has("started"), timeout=180, what="the first driver's query")
    second = cluster.driver("drv-2", "d1", *job.args("2", "--max-offsets", "200", "--trigger", "processing:300",
                                                     "--start-file", str(go_second), "--stop-file", str(stop),
                                                     "--timeout", "400"))
    intruder = cluster.driver("drv-intruder", None, *job.args("x", "--start-file", str(go_intruder),
                                                              checkpoint=tmp_path / "ck-x", sink=tmp_path / "sink-x"),
                              conf={"spark.cores.max": "1"})
    try:
        try:
            wait_for(lambda: (0 in offset_log(job.checkpoint) and 0 not in committed_batches(job.checkpoint)
                              and marked(job.markers("1"))), timeout=180, interval=0.05, what="batch 0 in flight")
        finally:
            first.kill()
        assert 0 not in committed_batches(job.checkpoint), "the kill came too late: batch 0 had committed"
        ends = {int(k.rsplit(".", 1)[1]): v for by_ssp in offset_log(job.checkpoint)[0]["positions"].values()
                for k, v in by_ssp.items()}
        assert 0 < ends[0] < 250

        startpoint = StartpointSpecific("250")
        StartpointManager(open_store(job.store, job.name)).write(SystemStreamPartition("kafka", topic, 0),
                                                                 startpoint)
        go_second.touch()
        wait_for(lambda: second.has("progress"), timeout=180, what="the restarted driver's first batch")
        go_intruder.touch()
        assert intruder.wait(180) == 1, intruder.log_tail()
        failed = [e["error"] for e in intruder.events() if e["event"] == "failed"]
        assert failed and "JobLeaseError" in failed[0] and job.name in failed[0], failed
        assert committed_parquet_rows(tmp_path / "sink-x", ["offset"]) == []

        more = produce(spark_cluster.bootstrap, topic, [(b"late", f"late-{p}-{i}".encode(), None, p)
                                                        for i in range(50) for p in (0, 1)])
        wanted = ([(0, o) for o in range(ends[0])] + [(0, o) for o in range(250, 350)]
                  + [(a.partition, a.offset) for a in acks + more if a.partition == 1])
        wait_for(lambda: set(job.sink_counts()) >= set(wanted), timeout=180, interval=0.5,
                 what="every wanted record in the sink")
        stop.touch()
        assert second.wait(120) == 0, second.log_tail()
        assert second.has("stopped") and not second.has("failed")
    finally:
        second.kill()
        intruder.kill()
    assert exactly_once(job.sink_counts(), wanted) == []
    log = offset_log(job.checkpoint)
    assert startpoint_rebases(log) == [(1, "Partition 0", f"kafka.{topic}.0", 250, startpoint.creation_timestamp)]
    assert startpoints_left(tmp_path / "metadata", job.name) == []


def test_speculative_copy_of_a_straggler_commits_once_and_leaks_no_consumer(spark_cluster, tmp_path):
    """Speculative execution on, one worker straggling (the slow stage sleeps 60 s there only): Spark starts a
    copy of the straggling task on the other worker, which reads the same offset range with its own consumer; the
    copy's output is committed, the straggler is killed, and the sink holds every acknowledged record exactly once
    (a killed attempt's files stay out of the sink's log; a copy reading past or short of the planned range would
    repeat or lose records).

    Leak check, with the query still running and idle after the kill: a Python process reads one task at a time
    with one consumer, which goes back to the process's consumer cache when the read ends (or its generator is
    closed), so no process on either worker holds more than one Kafka client; a killed attempt whose consumer
    was never given back would leave its process with one more at its next read."""
    cluster = spark_cluster.cluster
    if cluster.fallback:
        pytest.skip(f"Spark never runs a speculative copy on the host of the attempt it copies: {cluster.fallback}")
    topic, acks = _topic(spark_cluster.bootstrap, "spec", 2, 300)
    job = Job(tmp_path, spark_cluster.bootstrap, topic)
    straggler = cluster.worker_hosts[0]
    speculation = {"spark.speculation": "true", "spark.speculation.interval": "200ms",
                   "spark.speculation.quantile": "0.5", "spark.speculation.multiplier": "2",
                   "spark.speculation.minTaskRuntime": "2s",
                   # the batch starts once both executors are there: a task on each worker, one of them the straggler
                   "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                   "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}
    stop = tmp_path / "stop"
    driver = cluster.driver("spec", None, *job.args("1", "--max-offsets", "300", "--slow-ms", "60000",
                                                    "--slow-host", straggler, "--trigger", "processing:300",
                                                    "--stop-file", str(stop), "--timeout", "300"), conf=speculation)
    try:
        wanted = [(a.partition, a.offset) for a in acks]
        wait_for(lambda: set(job.sink_counts()) >= set(wanted), timeout=240, interval=0.5,
                 what="every acknowledged record in the sink")
        clients = {host: kafka_clients_per_process(cluster, host) for host in cluster.worker_hosts}
        stop.touch()
        assert driver.wait(120) == 0, driver.log_tail()
    finally:
        driver.kill()
    assert exactly_once(job.sink_counts(), wanted) == []
    attempts = marked(job.markers("1"))
    slow = [m for m in attempts if m["host"] == straggler]
    copies = [m for m in attempts if m["host"] != straggler and m["task"][2] > 0
              and any(m["task"][:2] == s["task"][:2] for s in slow)]
    assert copies, f"no copy of a task straggling on {straggler}: {attempts}"
    log = driver.log_path.read_text(errors="replace")
    assert "as speculatable" in log and "Killing attempt 0 for task" in log, driver.log_tail(60)
    assert any(clients.values()) and all(n <= 1 for per_host in clients.values() for n in per_host.values()), clients


def test_partitions_added_while_a_worker_is_lost_keep_key_order_exactly_once(spark_cluster, tmp_path):
    """A worker host is lost (its Worker and executor SIGKILLed) while a batch is in flight there; while it is down
    the topic grows 2 -> 4 and a keyed producer writes a second round of the same keys, some of which now hash to
    the new partitions. The query, behind (``maxOffsetsPerTrigger``), runs on the one worker left: the lost task is
    retried, the new partitions are found and held back until the old ones are read up to the growth, so the sink
    holds every acknowledged record exactly once and no key's record came in a batch before an earlier write of
    that key. The worker comes back at the end (the module's later tests want two)."""
    cluster = spark_cluster.cluster
    bootstrap = spark_cluster.bootstrap
    keys = [f"user-{i}".encode() for i in range(20)]
    topic = create_topic(bootstrap, unique_topic("grow"), 2)
    acks = produce(bootstrap, topic, keyed_rounds(keys, 0, 20))
    job = Job(tmp_path, bootstrap, topic)
    lost = cluster.worker_hosts[1]
    stop = tmp_path / "stop"
    driver = cluster.driver("grow", None, *job.args("1", "--max-offsets", "100", "--slow-ms", "1500", "--trigger",
                                                    "processing:300", "--stop-file", str(stop), "--timeout", "400",
                                                    # this producer has the new count at once: no settling
                                                    "--source-option", "expansion.settleTime=0"),
                            conf={"spark.sql.streaming.fileSink.log.compactInterval": "1000"})
    try:
        wait_for(lambda: any(m["host"] == lost and cluster.executor_of(m["pid"]) for m in marked(job.markers("1"))),
                 timeout=180, interval=0.1, what=f"a task in flight on {lost}")
        cluster.kill_worker(lost)
        add_partitions(bootstrap, topic, 4)
        more = produce(bootstrap, topic, keyed_rounds(keys, 20, 10))
        assert {a.partition for a in more} == {0, 1, 2, 3}, "no key moved to a new partition"
        acks += more
        wanted = [(a.partition, a.offset) for a in acks]
        wait_for(lambda: set(job.sink_counts()) >= set(wanted), timeout=240, interval=0.5,
                 what="every acknowledged record in the sink, on the one worker left")
        assert cluster.executors(cluster.worker_hosts[0]), "the query ran on no executor?"
        stop.touch()
        assert driver.wait(120) == 0, driver.log_tail()
    finally:
        driver.kill()
        cluster.start_worker(lost)
    assert exactly_once(job.sink_counts(), wanted) == []
    lost_task = [m for m in marked(job.markers("1")) if m["host"] == lost][0]["task"]
    assert [m for m in marked(job.markers("1")) if m["task"][:2] == lost_task[:2] and m["task"][2] > 0], \
        f"the task lost with {lost} ({lost_task}) was not retried"
    batches = [(batch, [SimpleNamespace(key=k, value=v) for k, v in rows])
               for batch, rows in sorted(committed_parquet_rows_by_batch(job.sink, ["key", "value"]).items())]
    assert ahead_of_key_order(batches) == {}


def test_min_partitions_runs_the_splits_of_one_task_on_both_workers_in_key_order_exactly_once(
        spark_cluster, tmp_path):
    """A job created on a one-partition topic has one task; the topic grows 1 -> 4 under the running query, and a
    keyed producer writes a second round over the four partitions. With ``minPartitions=4`` the batches over the
    four partitions are read by up to four Spark tasks, which the slow stage keeps in flight together, so the
    splits of the one Samza task run on both workers (one one-core executor each). The sink holds every
    acknowledged record exactly once, every row's ``task`` is the one task, and no key's record came in a batch
    before an earlier write of that key (drain-first holds across the split). Backs docs/guarantees.md,
    "Guarantees" (minPartitions)."""
    cluster = spark_cluster.cluster
    bootstrap = spark_cluster.bootstrap
    keys = [f"user-{i}".encode() for i in range(40)]
    topic = create_topic(bootstrap, unique_topic("split"), 1)
    acks = produce(bootstrap, topic, keyed_rounds(keys, 0, 5))
    job = Job(tmp_path, bootstrap, topic)
    stop = tmp_path / "stop"
    both_executors = {"spark.scheduler.minRegisteredResourcesRatio": "1.0",
                      "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}
    driver = cluster.driver("split", None, *job.args("1", "--slow-ms", "1500", "--trigger", "processing:300",
                                                     "--stop-file", str(stop), "--timeout", "300",
                                                     "--source-option", "expansion.settleTime=0",
                                                     "--source-option", "minPartitions=4"),
                            conf={**both_executors, "spark.sql.streaming.fileSink.log.compactInterval": "1000"})

    def in_sink(records) -> bool:
        return set(job.sink_counts()) >= {(a.partition, a.offset) for a in records}

    def partitions_seen() -> int:
        value = open_store(job.store, job.name).get("jobmodel", "current")
        return 0 if value is None else len(JobModel.from_json(value).ssp_to_task())

    try:
        wait_for(lambda: in_sink(acks), timeout=180, interval=0.5, what="the first round in the sink")
        add_partitions(bootstrap, topic, 4)
        wait_for(lambda: partitions_seen() == 4, timeout=120, interval=0.2, what="the query to see 4 partitions")
        more = produce(bootstrap, topic, keyed_rounds(keys, 5, 5))
        assert {a.partition for a in more} == {0, 1, 2, 3}, "no key moved to a new partition"
        acks += more
        wait_for(lambda: in_sink(acks), timeout=240, interval=0.5, what="every acknowledged record in the sink")
        stop.touch()
        assert driver.wait(120) == 0, driver.log_tail()
    finally:
        driver.kill()
    assert exactly_once(job.sink_counts(), [(a.partition, a.offset) for a in acks]) == []
    by_batch = committed_parquet_rows_by_batch(job.sink, ["key", "value", "partition", "task"])
    assert {task for rows in by_batch.values() for *_, task in rows} == {"Partition 0"}
    batches = [(batch, [SimpleNamespace(key=k, value=v) for k, v, _, _ in rows])
               for batch, rows in sorted(by_batch.items())]
    assert ahead_of_key_order(batches) == {}
    stages: dict[int, list[dict]] = {}
    for mark in marked(job.markers("1")):
        stages.setdefault(mark["task"][0], []).append(mark)
    split_stages = [marks for marks in stages.values() if len({m["task"][1] for m in marks}) > 1]
    assert split_stages, f"no batch of the one task was split: {stages}"
    assert any({m["host"] for m in marks} == set(cluster.worker_hosts) for marks in split_stages), \
        f"the splits of the one task never ran on both workers: {split_stages}"
